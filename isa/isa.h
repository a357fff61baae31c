// The instruction set, defined once. The assembler, disassembler, simulator dispatch, the
// generated docs and the viewer all read this table; nothing else lists mnemonics.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace flashsim::isa {

enum class Opcode : std::uint8_t {
  LOAD, STORE, MAC_Z, MAC, MAX, SUB, EXP, ADD, MUL, DIV, MOV,
  // Tile-only reductions ("element is tile"): on a 1x1 tile they are the identity.
  ROWMAX, ROWSUM,
  // Attention on tiles: masking, exp of a difference that survives fully masked rows,
  // logarithms for the logsumexp, and a division that maps an empty row to 0.
  MASK, EXPD, EXP2D, LOG, LOG2, SDIV,
  kCount
};
inline constexpr std::size_t kOpcodeCount = static_cast<std::size_t>(Opcode::kCount);

// What an operand slot accepts.
enum class OperandKind : std::uint8_t {
  SrcReg,  // register read
  DstReg,  // register written
  MemSrc,  // DRAM location read
  MemDst,  // DRAM location written
};

// How the simulator groups opcodes in its cost summary.
enum class OpClass : std::uint8_t { Load, Store, Mac, Alu };

struct OpInfo {
  Opcode opcode;
  std::string_view mnemonic;
  std::uint8_t operand_count;
  std::array<OperandKind, 4> operands;
  OpClass op_class;
  std::uint32_t default_cycles;
  std::string_view syntax;     // as the lesson writes it
  std::string_view semantics;  // one line, for docs and the viewer
};

using K = OperandKind;
// clang-format off
inline constexpr std::array<OpInfo, kOpcodeCount> kInstructionTable{{
  {Opcode::LOAD,   "LOAD",   2, {K::MemSrc, K::DstReg},                     OpClass::Load,  1, "LOAD src, Rd",        "Rd = DRAM[src]"},
  {Opcode::STORE,  "STORE",  2, {K::SrcReg, K::MemDst},                     OpClass::Store, 1, "STORE Rs, dst",       "DRAM[dst] = Rs"},
  {Opcode::MAC_Z,  "MAC_Z",  3, {K::SrcReg, K::SrcReg, K::DstReg},          OpClass::Mac,   1, "MAC_Z Ra, Rb, Rd",    "Rd = Ra x Rb"},
  {Opcode::MAC,    "MAC",    4, {K::SrcReg, K::SrcReg, K::SrcReg, K::DstReg}, OpClass::Mac, 1, "MAC Ra, Rb, Rc, Rd",  "Rd = Ra x Rb + Rc"},
  {Opcode::MAX,    "MAX",    3, {K::SrcReg, K::SrcReg, K::DstReg},          OpClass::Alu,   1, "MAX Ra, Rb, Rd",      "Rd = max(Ra, Rb)"},
  {Opcode::SUB,    "SUB",    3, {K::SrcReg, K::SrcReg, K::DstReg},          OpClass::Alu,   1, "SUB Ra, Rb, Rd",      "Rd = Ra - Rb"},
  {Opcode::EXP,    "EXP",    2, {K::SrcReg, K::DstReg},                     OpClass::Alu,   1, "EXP Ra, Rd",          "Rd = exp(Ra)"},
  {Opcode::ADD,    "ADD",    3, {K::SrcReg, K::SrcReg, K::DstReg},          OpClass::Alu,   1, "ADD Ra, Rb, Rd",      "Rd = Ra + Rb"},
  {Opcode::MUL,    "MUL",    3, {K::SrcReg, K::SrcReg, K::DstReg},          OpClass::Alu,   1, "MUL Ra, Rb, Rd",      "Rd = Ra x Rb (elementwise)"},
  {Opcode::DIV,    "DIV",    3, {K::SrcReg, K::SrcReg, K::DstReg},          OpClass::Alu,   1, "DIV Ra, Rb, Rd",      "Rd = Ra / Rb"},
  {Opcode::MOV,    "MOV",    2, {K::SrcReg, K::DstReg},                     OpClass::Alu,   1, "MOV Rs, Rd",          "Rd = Rs"},
  {Opcode::ROWMAX, "ROWMAX", 2, {K::SrcReg, K::DstReg},                     OpClass::Alu,   1, "ROWMAX Ra, Rd",       "Rd[i] = max_j Ra[i][j] (tile -> column)"},
  {Opcode::ROWSUM, "ROWSUM", 2, {K::SrcReg, K::DstReg},                     OpClass::Alu,   1, "ROWSUM Ra, Rd",       "Rd[i] = sum_j Ra[i][j] (tile -> column)"},
  {Opcode::MASK,   "MASK",   2, {K::SrcReg, K::DstReg},                     OpClass::Alu,   1, "MASK Ra, Rd",         "Rd = Ra with -inf at padded columns (j >= valid_cols) and, under .causal D, where global col > global row + D"},
  {Opcode::EXPD,   "EXPD",   3, {K::SrcReg, K::SrcReg, K::DstReg},          OpClass::Alu,   1, "EXPD Ra, Rb, Rd",     "Rd = exp(Ra - Rb), broadcast; 0 where Rb is -inf (a fully masked row has no weight)"},
  {Opcode::EXP2D,  "EXP2D",  3, {K::SrcReg, K::SrcReg, K::DstReg},          OpClass::Alu,   1, "EXP2D Ra, Rb, Rd",    "Rd = 2^(Ra - Rb), broadcast; 0 where Rb is -inf"},
  {Opcode::LOG,    "LOG",    2, {K::SrcReg, K::DstReg},                     OpClass::Alu,   1, "LOG Ra, Rd",          "Rd = ln(Ra); ln(0) = -inf"},
  {Opcode::LOG2,   "LOG2",   2, {K::SrcReg, K::DstReg},                     OpClass::Alu,   1, "LOG2 Ra, Rd",         "Rd = log2(Ra); log2(0) = -inf"},
  {Opcode::SDIV,   "SDIV",   3, {K::SrcReg, K::SrcReg, K::DstReg},          OpClass::Alu,   1, "SDIV Ra, Rb, Rd",     "Rd = Ra / Rb, broadcast; 0 where Rb is 0 (a fully masked row's output)"},
}};
// clang-format on

constexpr const OpInfo& info(Opcode op) { return kInstructionTable[static_cast<std::size_t>(op)]; }

// Case-insensitive lookup of a mnemonic.
std::optional<Opcode> find_mnemonic(std::string_view text);

// True when the table's order matches the enum (checked by a static_assert in isa.cpp).
constexpr bool table_is_ordered() {
  for (std::size_t i = 0; i < kOpcodeCount; ++i)
    if (static_cast<std::size_t>(kInstructionTable[i].opcode) != i) return false;
  return true;
}

}  // namespace flashsim::isa

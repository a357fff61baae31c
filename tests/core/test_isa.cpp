#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <set>

#include "isa/isa.h"

using namespace flashsim::isa;

TEST_CASE("the instruction table lists every opcode once, in enum order", "[isa]") {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kOpcodeCount; ++i) {
    CHECK(static_cast<std::size_t>(kInstructionTable[i].opcode) == i);
    CHECK(names.insert(kInstructionTable[i].mnemonic).second);
    CHECK(kInstructionTable[i].default_cycles == 1);
  }
}

TEST_CASE("operand order follows the lesson text", "[isa]") {
  CHECK(info(Opcode::LOAD).operands[0] == OperandKind::MemSrc);
  CHECK(info(Opcode::LOAD).operands[1] == OperandKind::DstReg);
  CHECK(info(Opcode::STORE).operands[0] == OperandKind::SrcReg);
  CHECK(info(Opcode::STORE).operands[1] == OperandKind::MemDst);
  CHECK(info(Opcode::MAC).operand_count == 4);
  CHECK(info(Opcode::MAC).operands[3] == OperandKind::DstReg);
  CHECK(info(Opcode::MAC_Z).operand_count == 3);
  CHECK(info(Opcode::EXP).operand_count == 2);
  CHECK(info(Opcode::MOV).operand_count == 2);
  for (Opcode op : {Opcode::MAX, Opcode::SUB, Opcode::ADD, Opcode::MUL, Opcode::DIV})
    CHECK(info(op).operand_count == 3);
}

TEST_CASE("mnemonics are found case-insensitively", "[isa]") {
  CHECK(find_mnemonic("mac_z") == Opcode::MAC_Z);
  CHECK(find_mnemonic("Load") == Opcode::LOAD);
  CHECK_FALSE(find_mnemonic("MACZ").has_value());
  CHECK_FALSE(find_mnemonic("").has_value());
}

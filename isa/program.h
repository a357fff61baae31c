// An assembled program: a straight-line trace of instructions over named DRAM arrays.
// Loops in the source are expanded at assembly time, so the machine only ever sees a trace.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "isa/isa.h"

namespace flashsim::isa {

struct SourceLoc {
  std::uint32_t line = 0;  // 1-based; 0 for generated code
  std::uint32_t col = 0;
};

struct Operand {
  enum class Kind : std::uint8_t { None, Reg, Mem };
  Kind kind = Kind::None;
  bool transposed = false;   // register operand written Rn^T (tile machine)
  std::uint16_t reg = 0;
  std::uint32_t array = 0;   // index into Program::arrays
  std::int64_t row = 0;      // tile row index
  std::int64_t col = 0;      // tile column index
  bool operator==(const Operand&) const = default;
};

struct Instruction {
  Opcode op = Opcode::MOV;
  std::array<Operand, 4> operands{};
  SourceLoc loc{};
  bool operator==(const Instruction& o) const { return op == o.op && operands == o.operands; }
};

// A DRAM array of rows x cols elements split into tiles of tile_rows x tile_cols.
// On the scalar machine every tile is 1x1, so a tile index is an element index.
struct ArrayDecl {
  std::string name;
  int rank = 1;                   // 1: x[i]; 2: a[i][j] (indices are tile indices)
  std::int64_t rows = 0, cols = 1;
  std::int64_t tile_rows = 1, tile_cols = 1;
  int elem_bytes = 0;             // 0: the machine's default element size
  bool declared = false;          // shape given by a directive rather than inferred from use
  std::vector<double> input;      // row-major initial values (empty: random inputs)
  std::optional<double> fill;     // every element starts at this value

  std::int64_t tile_grid_rows() const { return (rows + tile_rows - 1) / tile_rows; }
  std::int64_t tile_grid_cols() const { return (cols + tile_cols - 1) / tile_cols; }
  std::int64_t tile_count() const { return tile_grid_rows() * tile_grid_cols(); }
  std::int64_t elements() const { return rows * cols; }
  bool operator==(const ArrayDecl&) const = default;
};

// A last-level cache between the machine and DRAM (a GPU's L2): `.l2 BYTES [line=L] [sector=S]`.
// Hopper's geometry is the default: 128-byte lines of 32-byte sectors.
struct L2Geometry {
  std::uint64_t capacity_bytes = 0;  // 0: no cache
  std::uint32_t line_bytes = 128;
  std::uint32_t sector_bytes = 32;
  bool operator==(const L2Geometry&) const = default;
};
// Why the geometry cannot be modelled ("" when it can): line and sector powers of two, at most
// 32 sectors a line, a non-zero capacity of at least one line and below 2^31 lines.
std::string l2_geometry_error(const L2Geometry& g);

struct MachineConfig {
  std::optional<int> regs;                  // from a directive; else inferred
  int elem_bytes = 4;
  bool f64 = false;                         // registers hold float64 instead of float32
  std::optional<std::uint64_t> sram_bytes;  // register-file capacity (tile machine)
  std::optional<std::int64_t> causal_diag;  // .causal D: MASK also hides global col > global row + D
  std::optional<L2Geometry> l2;             // .l2: an L2 the run's traffic goes through (sim/l2_trace.h)
  std::array<std::uint32_t, kOpcodeCount> cycles = default_cycles();
  std::uint64_t seed = 1;

  static constexpr std::array<std::uint32_t, kOpcodeCount> default_cycles() {
    std::array<std::uint32_t, kOpcodeCount> c{};
    for (std::size_t i = 0; i < kOpcodeCount; ++i) c[i] = kInstructionTable[i].default_cycles;
    return c;
  }
  bool operator==(const MachineConfig&) const = default;
};

struct Program {
  std::string name = "<input>";            // file name, for messages
  std::vector<std::string> source_lines;   // the text it came from (may be empty)
  std::vector<Instruction> code;
  std::vector<ArrayDecl> arrays;
  MachineConfig config;
  int highest_reg = -1;

  std::optional<std::uint32_t> find_array(const std::string& name) const;
  // Register count: the directive's, else highest used + 1.
  int register_count() const { return config.regs.value_or(highest_reg + 1); }
  bool is_scalar() const;  // every array has 1x1 tiles and no operand is transposed
};

// Canonical text: directives that make the program self-contained, then one instruction a line.
std::string disassemble(const Program& p);
std::string format_instruction(const Program& p, const Instruction& in);
std::string format_operand(const Program& p, const Operand& o);

// Equality of what runs (code, arrays, machine), ignoring source text and locations.
bool same_program(const Program& a, const Program& b);

}  // namespace flashsim::isa

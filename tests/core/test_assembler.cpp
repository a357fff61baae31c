#include <catch2/catch.hpp>
#include <random>

#include "main_helpers.h"

using namespace flashsim;
using isa::assemble;

TEST_CASE("a trace copied from the lesson assembles with no header", "[assembler]") {
  auto p = assemble(
      "LOAD a[0][0], R0   # operand\n"
      "load b[0][0], r1   ; lower case\n"
      "\n"
      "MAC_Z R0, R1, R2   // product\n"
      "STORE R2, c[0][0]\n");
  REQUIRE(p.code.size() == 4);
  CHECK(p.code[1].op == isa::Opcode::LOAD);
  CHECK(p.code[1].operand(1).reg == 1);
  CHECK(p.register_count() == 3);
  REQUIRE(p.arrays.size() == 3);
  CHECK(p.arrays[0].name == "a");
  CHECK(p.arrays[0].rank == 2);
  CHECK(p.loc(3).line == 5);
  CHECK(p.loc(3).col == 1);
}

TEST_CASE("array shapes are inferred from the highest index used", "[assembler]") {
  auto p = assemble("LOAD x[3], R0\nLOAD y[1][4], R1\nSTORE R0, x[0]\n");
  auto x = p.arrays[*p.find_array("x")];
  auto y = p.arrays[*p.find_array("y")];
  CHECK(x.rows == 4);
  CHECK(x.cols == 1);
  CHECK(y.rows == 2);
  CHECK(y.cols == 5);
  CHECK_FALSE(x.declared);
}

TEST_CASE("directives declare the machine and the data", "[assembler]") {
  auto p = assemble(
      ".regs 4\n.elem 2\n.dtype f64\n.cost LOAD=100, STORE=50\n"
      ".array x[3]\n.input x 1, -2.5, inf\n.array m[2][2] tile[2][2]\n.fill m -inf\n"
      "LOAD x[2], R3\n");
  CHECK(p.config.regs == 4);
  CHECK(p.config.elem_bytes == 2);
  CHECK(p.config.f64);
  CHECK(p.config.cycles[static_cast<int>(isa::Opcode::LOAD)] == 100);
  CHECK(p.config.cycles[static_cast<int>(isa::Opcode::STORE)] == 50);
  auto x = p.arrays[*p.find_array("x")];
  REQUIRE(x.input.size() == 3);
  CHECK(std::isinf(x.input[2]));
  auto m = p.arrays[*p.find_array("m")];
  CHECK(m.tile_rows == 2);
  CHECK(m.fill.has_value());
}

TEST_CASE("loops expand at assembly time with index arithmetic", "[assembler]") {
  auto p = assemble(
      ".param n = 4\n"
      ".for i in 0..n\n"
      "  .for k in i..i+2 step 1\n"
      "    LOAD x[i+k], R{k-i}\n"
      "  .end\n"
      ".end\n"
      "STORE R1, y[n-1]\n");
  REQUIRE(p.code.size() == 9);
  CHECK(p.code[7].operand(0).row == 3 + 4);
  CHECK(p.code[7].operand(1).reg == 1);
  CHECK(p.loc(0).line == 4);  // expanded lines point at their source line
  isa::AssembleOptions o;
  o.params["n"] = 2;
  CHECK(assemble(".param n = 4\n.for i in 0..n\nLOAD x[i], R0\n.end\n", "f", o).code.size() == 2);
}

TEST_CASE("an empty loop range still needs a well-formed body", "[assembler]") {
  auto p = assemble(".for i in 0..0\nLOAD x[i], R0\n.end\nLOAD x[0], R0\n");
  CHECK(p.code.size() == 1);
}

namespace {
// A random but valid program over every opcode, to check the disassembler round trip.
std::string random_program(std::mt19937& rng) {
  std::string s = ".regs 6\n.array a[3][3]\n.array x[5]\n";
  std::uniform_int_distribution<int> reg(0, 5), idx(0, 2), op(0, static_cast<int>(isa::kOpcodeCount) - 1);
  s += "LOAD a[0][0], R0\nLOAD a[0][1], R1\nLOAD a[1][1], R2\nLOAD x[4], R3\nLOAD x[0], R4\nLOAD x[1], R5\n";
  for (int i = 0; i < 40; ++i) {
    const auto& info = isa::kInstructionTable[static_cast<std::size_t>(op(rng))];
    s += std::string(info.mnemonic);
    for (int k = 0; k < info.operand_count; ++k) {
      s += k ? ", " : " ";
      switch (info.operands[k]) {
        case isa::OperandKind::MemSrc:
        case isa::OperandKind::MemDst:
          s += (i % 2) ? "a[" + std::to_string(idx(rng)) + "][" + std::to_string(idx(rng)) + "]"
                       : "x[" + std::to_string(idx(rng) + 2) + "]";
          break;
        default: s += "R" + std::to_string(reg(rng));
      }
    }
    s += "\n";
  }
  return s;
}
}  // namespace

TEST_CASE("assemble -> disassemble -> assemble is the identity", "[assembler]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    auto p = assemble(random_program(rng), "random");
    auto text = isa::disassemble(p);
    auto q = assemble(text, "disassembled");
    INFO(text);
    CHECK(isa::same_program(p, q));
    CHECK(isa::disassemble(q) == text);
  }
  for (const char* f : {"lessons/01-dot-product/solution.fsa", "lessons/02-locality/solution.fsa",
                        "lessons/03-outer-product/solution.fsa", "lessons/05-safe-softmax/solution.fsa",
                        "lessons/06-online-softmax/solution.fsa"}) {
    auto p = test::load(f);
    CHECK(isa::same_program(p, assemble(isa::disassemble(p))));
  }
  auto tiled = assemble(
      ".sram 4096\n.array Q[10][4] tile[4][4] elem 2\n.array S[10][10] tile[4][4]\n.input Q " +
      [] { std::string v; for (int i = 0; i < 40; ++i) v += (i ? ", " : "") + std::to_string(i * 0.5); return v; }() +
      "\nLOAD Q[2], R0\nMAC_Z R0, R0^T, R1\nSTORE R1, S[2][2]\n");
  CHECK(isa::same_program(tiled, assemble(isa::disassemble(tiled))));
}

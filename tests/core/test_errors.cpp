// Every kind of bad input gets one clear message with its location, never a crash.
#include <catch2/catch.hpp>

#include "main_helpers.h"

using namespace flashsim;

namespace {
// Returns "LINE:COL: message" of the assembler error the text raises.
std::string asm_error(const std::string& text) {
  try {
    isa::assemble(text, "bad.fsa");
  } catch (const isa::AsmError& e) {
    REQUIRE(std::string(e.what()).rfind("bad.fsa:", 0) == 0);
    return std::to_string(e.line) + ":" + std::to_string(e.col) + ": " + e.message;
  }
  FAIL("no error for: " << text);
  return {};
}

std::string run_error(const std::string& text, sim::MachineOptions o = {}) {
  try {
    sim::Machine m(isa::assemble(text, "bad.fsa"), o);
    m.run();
  } catch (const sim::MachineFault& e) {
    return e.what();
  } catch (const isa::AsmError& e) {
    return e.what();
  }
  FAIL("no fault for: " << text);
  return {};
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("assembler errors carry FILE:LINE:COL", "[errors]") {
  CHECK(asm_error("LOAD x[0], R0\nFOO R1, R2\n") == "2:1: unknown instruction 'FOO'");
  CHECK(has(asm_error("MAC R0, R1, R2\n"), "1:1: MAC takes 4 operands, got 3"));
  CHECK(has(asm_error("ADD R0, R1, R2, R3\n"), "1:17: ADD takes 3 operands"));
  CHECK(has(asm_error("LOAD R0, R1\n"), "1:6: operand 1 of LOAD must be a memory location"));
  CHECK(has(asm_error("STORE x[0], y[0]\n"), "1:7: operand 1 of STORE must be a register"));
  CHECK(has(asm_error("LOAD x[0, R1\n"), "expected ']'"));
  CHECK(has(asm_error("LOAD x[], R1\n"), "1:8: expected a number"));
  CHECK(has(asm_error("LOAD x[-1], R0\n"), "1:8: index -1 is negative"));
  CHECK(has(asm_error("ADD R0, Rx, R2\n"), "1:9: malformed operand 'Rx'"));
  CHECK(has(asm_error("LOAD x[0], R0 R1\n"), "1:15: unexpected 'R1'"));
  CHECK(has(asm_error(".regs 3\nLOAD x[0], R3\n"), "2:12: R3 is outside the machine: it has 3 registers"));
  CHECK(has(asm_error(".array x[4]\nLOAD x[4], R0\n"), "2:8: index 4 is outside 'x', which has 4 rows"));
  CHECK(has(asm_error(".array a[2][2]\nLOAD a[1][2], R0\n"), "2:11: index 2 is outside 'a', which has 2 columns"));
  CHECK(has(asm_error("LOAD x[0], R0\nLOAD x[0][1], R0\n"), "2:6: 'x' has one dimension"));
  CHECK(has(asm_error("LOAD x[0], R0^T\n"), "1:14: only source registers can be transposed"));
  CHECK(has(asm_error(".bogus 3\nLOAD x[0], R0\n"), "1:1: unknown directive .bogus"));
  CHECK(has(asm_error(".array x[2]\n.input x 1, 2, 3\nLOAD x[0], R0\n"), "has 2 elements but 3 values"));
  CHECK(has(asm_error(".array x[2]\n.input x 1, zz\nLOAD x[0], R0\n"), "2:13: 'zz' is not a number"));
  CHECK(has(asm_error(".cost FOO=3\nLOAD x[0], R0\n"), "1:7: unknown opcode 'FOO'"));
}

TEST_CASE("an empty file, a comment-only file, a binary file and a huge line are rejected", "[errors]") {
  CHECK(has(asm_error(""), "empty program: no instructions"));
  CHECK(has(asm_error("# nothing here\n\n; still nothing\n"), "1:1: empty program"));
  CHECK(has(asm_error(std::string("LOAD x[0], R0\n\x7f" "ELF\x01\x02", 20)), "2:1: this looks like a binary file"));
  CHECK(has(asm_error(std::string("LOAD x[0], R0\0", 14)), "1:14: this looks like a binary file"));
  CHECK(has(asm_error("LOAD x[0], R0 # " + std::string(1 << 20, 'a') + "\n"), "1:65537: line is 1048592 bytes long"));
  CHECK(has(asm_error("LOAD x[0], R0\n\xc3\xa9\n"), "2:1: non-ASCII byte"));
}

TEST_CASE("loop syntax errors carry their location", "[errors]") {
  CHECK(has(asm_error(".for i in 0..3\nLOAD x[i], R0\n"), "1:1: .for without a matching .end"));
  CHECK(has(asm_error("LOAD x[0], R0\n.end\n"), "2:1: .end without a matching .for"));
  CHECK(has(asm_error(".for i 0..3\nLOAD x[i], R0\n.end\n"), "1:8: expected 'in'"));
  CHECK(has(asm_error(".for i in 0...3\nLOAD x[i], R0\n.end\n"), "expected a number, a name or '('"));
  CHECK(has(asm_error(".for i in 0..3 step 0\nLOAD x[i], R0\n.end\n"), "1:21: the loop step must be positive"));
  CHECK(has(asm_error(".for i in 0..2\nLOAD x[j], R0\n.end\n"), "2:8: unknown name 'j'"));
  CHECK(has(asm_error(".for i in 0..2\n.for i in 0..2\nLOAD x[i], R0\n.end\n.end\n"), "2:6: 'i' is already defined"));
  CHECK(has(asm_error(".for i in 0..2\n.regs 4\n.end\nLOAD x[0], R0\n"), "2:1: directive .regs is not allowed inside"));
  CHECK(has(asm_error("LOAD x[4/0], R0\n"), "1:9: division by zero in an index expression"));
  CHECK(has(asm_error("LOAD x[99999999999999999999], R0\n"), "integer is too large"));
  isa::AssembleOptions small;
  small.max_instructions = 10;
  try {
    isa::assemble(".for i in 0..1000000000\nLOAD x[0], R0\n.end\n", "big.fsa", small);
    FAIL("expected an error");
  } catch (const isa::AsmError& e) {
    CHECK(has(e.what(), "big.fsa:2:1: error: the expanded trace exceeds 10 instructions"));
  }
}

TEST_CASE("machine faults name the step and the line", "[errors]") {
  CHECK(run_error("LOAD x[0], R0\nADD R0, R1, R2\n") == "step 2 (line 2): error: R1 is read before anything was written to it");
  sim::MachineOptions zero;
  zero.inputs["x"] = {1, 0};
  CHECK(run_error("LOAD x[0], R0\nLOAD x[1], R1\nDIV R0, R1, R2\n", zero) == "step 3 (line 3): error: division by zero: R1 is 0");
  sim::MachineOptions three;
  three.regs = 3;
  CHECK(has(run_error("LOAD x[0], R5\n", three), "bad.fsa:1:1: error: R5 is outside the machine: it has 3 registers (--regs)"));
  CHECK(has(run_error(".array A[2][2] tile[2][2]\n.array B[3][3] tile[3][3]\nLOAD A[0][0], R0\nLOAD B[0][0], R1\nMAC_Z R0, R1, R2\n"),
            "step 3 (line 5): error: MAC_Z: cannot multiply a 2x2 tile by a 3x3 tile"));
  CHECK(has(run_error(".array A[2][2] tile[2][2]\nLOAD A[0][0], R0\nROWSUM R0, R1\nSTORE R1, A[0][0]\n"),
            "STORE of a 2x1 tile into 'A', whose tiles are 2x2"));
  sim::MachineOptions wrong;
  wrong.inputs["x"] = {1, 2, 3};
  CHECK(has(run_error("LOAD x[0], R0\n", wrong), "--input x gives 3 values; the array has 1"));
}

TEST_CASE("a fault in the fast path leaves the machine at the faulting step", "[errors]") {
  sim::MachineOptions o;
  o.inputs["x"] = {1, 0};
  sim::Machine m(isa::assemble("LOAD x[0], R0\nLOAD x[1], R1\nDIV R0, R1, R2\n"), o);
  CHECK_THROWS_AS(m.run(), sim::MachineFault);
  CHECK(m.pc() == 2);
  CHECK(m.counters().count(isa::Opcode::LOAD) == 2);
  CHECK(m.reg(1).v[0] == 0.0);
}

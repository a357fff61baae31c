// The assembler's loop construct: .for VAR in A..B [step S] ... .end, index arithmetic in
// memory operands and R{expr}, .param defaults and overrides, and every loop error with its
// exact FILE:LINE:COL.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "sim/machine.h"
#include "sim/report.h"

using namespace flashsim;

namespace {

isa::Program asm_text(const std::string& text, std::map<std::string, std::int64_t> params = {}) {
  isa::AssembleOptions o;
  o.params = std::move(params);
  return isa::assemble(text, "loops.fsa", o);
}

// The whole message, FILE:LINE:COL: error: text, or "" when the text assembles.
std::string error_of(const std::string& text, std::map<std::string, std::int64_t> params = {},
                     std::size_t max_instructions = 200'000'000) {
  isa::AssembleOptions o;
  o.params = std::move(params);
  o.max_instructions = max_instructions;
  try {
    isa::assemble(text, "loops.fsa", o);
  } catch (const isa::AsmError& e) {
    return e.what();
  }
  return "";
}

// Instructions as text, one per element.
std::vector<std::string> listing(const isa::Program& p) {
  std::vector<std::string> out;
  for (const auto& in : p.code) out.push_back(isa::format_instruction(p, in));
  return out;
}

}  // namespace

TEST_CASE("a loop expands to one instruction per iteration, end exclusive", "[loops]") {
  auto p = asm_text(".for i in 0..4\nLOAD x[i], R0\n.end\n");
  CHECK(listing(p) == std::vector<std::string>{"LOAD x[0], R0", "LOAD x[1], R0", "LOAD x[2], R0", "LOAD x[3], R0"});
  // Every expanded instruction points at the body's source line and column.
  for (std::size_t i = 0; i < p.code.size(); ++i) {
    CHECK(p.loc(i).line == 2);
    CHECK(p.loc(i).col == 1);
  }
  REQUIRE(p.arrays.size() == 1);
  CHECK(p.arrays[0].rows == 4);  // the inferred shape covers every iteration
}

TEST_CASE("step, negative starts and ranges that run once or never", "[loops]") {
  CHECK(listing(asm_text(".for i in 1..10 step 3\nLOAD x[i], R0\n.end\n")) ==
        std::vector<std::string>{"LOAD x[1], R0", "LOAD x[4], R0", "LOAD x[7], R0"});
  CHECK(listing(asm_text(".for i in -2..1\nLOAD x[i+2], R0\n.end\n")) ==
        std::vector<std::string>{"LOAD x[0], R0", "LOAD x[1], R0", "LOAD x[2], R0"});
  CHECK(asm_text(".for i in 0..5 step 100\nLOAD x[i], R0\n.end\n").code.size() == 1);
  // B <= A: the body is skipped entirely, nested loops included.
  auto p = asm_text(".for i in 3..3\n.for j in 0..4\nLOAD x[j], R0\n.end\n.end\nLOAD y[0], R1\n");
  CHECK(listing(p) == std::vector<std::string>{"LOAD y[0], R1"});
  CHECK(asm_text(".for i in 5..2\nLOAD x[i], R0\n.end\nLOAD x[0], R0\n").code.size() == 1);
  // Bounds near the int64 limit do not overflow the loop counter.
  CHECK(asm_text(".for i in 9223372036854775806..9223372036854775807\nLOAD x[0], R0\n.end\n").code.size() == 1);
  CHECK(asm_text(".for i in 0..2 step 9223372036854775807\nLOAD x[i], R0\n.end\n").code.size() == 1);
}

TEST_CASE("nested loops run the inner loop per outer iteration, bounds may use outer variables", "[loops]") {
  auto p = asm_text(
      ".for i in 0..3\n"
      "  .for j in i..3\n"
      "    LOAD a[i][j], R0\n"
      "  .end\n"
      "  STORE R0, b[i]\n"
      ".end\n");
  CHECK(listing(p) == std::vector<std::string>{"LOAD a[0][0], R0", "LOAD a[0][1], R0", "LOAD a[0][2], R0",
                                               "STORE R0, b[0]", "LOAD a[1][1], R0", "LOAD a[1][2], R0",
                                               "STORE R0, b[1]", "LOAD a[2][2], R0", "STORE R0, b[2]"});
  CHECK(p.loc(3).line == 5);
  CHECK(p.loc(3).col == 3);
  CHECK(p.loc(4).line == 3);
  CHECK(p.loc(4).col == 5);
  // Three levels, and a variable name reused by sibling loops.
  auto q = asm_text(
      ".for i in 0..2\n.for j in 0..2\n.for k in 0..2\nLOAD t[i*4+j*2+k], R0\n.end\n.end\n.end\n"
      ".for j in 0..2\nLOAD u[j], R1\n.end\n");
  REQUIRE(q.code.size() == 10);
  for (int n = 0; n < 8; ++n) CHECK(q.code[static_cast<std::size_t>(n)].operand(0).row == n);
  CHECK(q.code[9].operand(0).row == 1);
}

TEST_CASE("index arithmetic in memory operands and register numbers", "[loops]") {
  auto p = asm_text(
      ".param n = 4\n"
      ".regs 4\n"
      ".for i in 0..n\n"
      "  LOAD x[i+1], R{i}\n"
      "  LOAD x[2*i], R{i % 2}\n"
      "  LOAD x[n-1-i], R{(i+1) % n}\n"
      "  LOAD x[(i + 1) % n], R{n - 1 - i}\n"
      "  LOAD x[i / 2], R0\n"
      "  LOAD x[-(-i)], R0\n"
      "  LOAD q[i][n-1], R0\n"
      ".end\n");
  REQUIRE(p.code.size() == 28);
  auto row = [&](std::size_t k) { return p.code[k].operand(0).row; };
  auto reg = [&](std::size_t k) { return p.code[k].operand(1).reg; };
  for (std::int64_t i = 0; i < 4; ++i) {
    std::size_t b = static_cast<std::size_t>(i) * 7;
    CHECK(row(b) == i + 1);
    CHECK(reg(b) == i);
    CHECK(row(b + 1) == 2 * i);
    CHECK(reg(b + 1) == i % 2);
    CHECK(row(b + 2) == 3 - i);
    CHECK(reg(b + 2) == (i + 1) % 4);
    CHECK(row(b + 3) == (i + 1) % 4);
    CHECK(reg(b + 3) == 3 - i);
    CHECK(row(b + 4) == i / 2);
    CHECK(row(b + 5) == i);
    CHECK(row(b + 6) == i);
    CHECK(p.code[b + 6].operand(0).col == 3);
  }
  // The lesson's forms: a dot product q[i][k] K[j][k] with R{expr} registers.
  auto dot = asm_text(
      ".param d = 3\n"
      ".for k in 0..d\n  LOAD q[0][k], R{2+k}\n.end\n"
      "LOAD K[1][0], R1\nMAC_Z R2, R1, R0\n"
      ".for k in 1..d\n  LOAD K[1][k], R1\n  MAC R{2+k}, R1, R0, R0\n.end\n");
  CHECK(listing(dot) == std::vector<std::string>{"LOAD q[0][0], R2", "LOAD q[0][1], R3", "LOAD q[0][2], R4",
                                                 "LOAD K[1][0], R1", "MAC_Z R2, R1, R0", "LOAD K[1][1], R1",
                                                 "MAC R3, R1, R0, R0", "LOAD K[1][2], R1", "MAC R4, R1, R0, R0"});
}

TEST_CASE("a loop assembles to the same program as the hand-unrolled trace", "[loops]") {
  auto looped = asm_text(
      ".regs 3\n.array x[3]\n.array out[3]\n"
      "LOAD x[0], R1\n.for i in 1..3\nLOAD x[i], R0\nMAX R0, R1, R1\n.end\n"
      ".for i in 0..3\nLOAD x[i], R0\nSUB R0, R1, R0\nSTORE R0, out[i]\n.end\n");
  auto unrolled = asm_text(
      ".regs 3\n.array x[3]\n.array out[3]\n"
      "LOAD x[0], R1\nLOAD x[1], R0\nMAX R0, R1, R1\nLOAD x[2], R0\nMAX R0, R1, R1\n"
      "LOAD x[0], R0\nSUB R0, R1, R0\nSTORE R0, out[0]\nLOAD x[1], R0\nSUB R0, R1, R0\nSTORE R0, out[1]\n"
      "LOAD x[2], R0\nSUB R0, R1, R0\nSTORE R0, out[2]\n");
  CHECK(isa::same_program(looped, unrolled));
  // The disassembly is the expanded trace, and it assembles back to the same program.
  auto text = isa::disassemble(looped);
  CHECK(text.find(".for") == std::string::npos);
  CHECK(isa::same_program(looped, isa::assemble(text, "round-trip")));
}

TEST_CASE(".param gives defaults that callers override", "[loops]") {
  const std::string src =
      ".param n = 4\n"
      ".param half = n / 2\n"  // a parameter may use an earlier one
      ".regs half + 1\n"
      ".array x[n]\n"
      ".for i in 0..half\nLOAD x[2*i+1], R{i}\n.end\n";
  auto p = asm_text(src);
  CHECK(p.code.size() == 2);
  CHECK(p.register_count() == 3);
  CHECK(p.arrays[0].rows == 4);

  auto big = asm_text(src, {{"n", 10}});
  CHECK(big.code.size() == 5);
  CHECK(big.register_count() == 6);
  CHECK(big.arrays[0].rows == 10);
  CHECK(big.code.back().operand(0).row == 9);

  // Overriding the derived parameter wins over its expression.
  auto odd = asm_text(src, {{"half", 1}});
  CHECK(odd.code.size() == 1);
  CHECK(odd.register_count() == 2);

  // The override is used even where the default would be out of range.
  CHECK(error_of(src, {{"n", 3}, {"half", 2}}) == "loops.fsa:6:8: error: index 3 is outside 'x', which has 3 rows (at i = 1)");
}

TEST_CASE("loop keywords are case-insensitive like directives and mnemonics", "[loops]") {
  auto p = asm_text(".FOR i IN 0..6 STEP 2\nload x[i], r0\n.End\n");
  CHECK(p.code.size() == 3);
}

TEST_CASE("the machine runs the expansion; the step table shows expanded instructions", "[loops]") {
  auto p = asm_text(
      ".param n = 5\n.array x[n]\n.input x 1, 2, 3, 4, 5\n"
      "LOAD x[0], R1\n"
      ".for i in 1..n\n"
      "  LOAD x[i], R0\n"
      "  ADD R1, R0, R1\n"
      ".end\n"
      "STORE R1, s[0]\n");
  sim::Machine m(p);
  m.run();
  CHECK(m.array(*p.find_array("s")).values[0] == 15.0);
  CHECK(m.counters().elem_reads == 5);
  CHECK(m.counters().instructions == 10);
  // Breakpoints are source lines: the loop body line stops once per iteration.
  m.reset();
  int stops = 0;
  while (m.run_to_breakpoint({7})) ++stops;
  CHECK(stops == 4);

  std::ostringstream table;
  sim::print_step_table(m, table);
  CHECK(table.str().find("LOAD x[4], R0") != std::string::npos);
  CHECK(table.str().find(".for") == std::string::npos);
}

TEST_CASE("loop syntax errors give their exact FILE:LINE:COL", "[loops][errors]") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {".for\n.end\n", "loops.fsa:1:5: error: expected a loop variable after .for but the line ends"},
      {".for 3 in 0..2\n.end\n", "loops.fsa:1:6: error: expected a loop variable after .for but found '3'"},
      {".for i\n.end\n", "loops.fsa:1:7: error: expected 'in' after the loop variable but the line ends"},
      {".for i on 0..2\n.end\n", "loops.fsa:1:8: error: expected 'in' after the loop variable, as in .for i in 0..n"},
      {".for i in\n.end\n", "loops.fsa:1:10: error: expected a number, a name or '(' but the line ends"},
      {".for i in 0\n.end\n", "loops.fsa:1:12: error: expected '..' between the loop bounds but the line ends"},
      {".for i in 0 2\n.end\n", "loops.fsa:1:13: error: expected '..' between the loop bounds but found '2'"},
      {".for i in 0...3\n.end\n", "loops.fsa:1:14: error: expected a number, a name or '(' but found '.'"},
      {".for i in 0..\n.end\n", "loops.fsa:1:14: error: expected a number, a name or '(' but the line ends"},
      {".for i in 0..(2\n.end\n", "loops.fsa:1:16: error: expected ')' but the line ends"},
      {".for i in 0..m\n.end\n",
       "loops.fsa:1:14: error: unknown name 'm' (loop variables and .param names are allowed)"},
      {".for i in 0..2 stride 1\n.end\n", "loops.fsa:1:16: error: expected 'step' or the end of the line"},
      {".for i in 0..2 step\n.end\n", "loops.fsa:1:20: error: expected a number, a name or '(' but the line ends"},
      {".for i in 0..2 step 0\n.end\n", "loops.fsa:1:21: error: the loop step must be positive"},
      {".for i in 0..2 step 1-2\n.end\n", "loops.fsa:1:21: error: the loop step must be positive"},
      {".for i in 0..2 step 1 x\n.end\n", "loops.fsa:1:23: error: unexpected 'x' at the end of the line"},
      {".for i in 0..2\nLOAD x[i], R0\n.end extra\n",
       "loops.fsa:3:6: error: unexpected 'extra' at the end of the line (at i = 0)"},
      // A missing .end is reported at the .for that lacks it, at its column.
      {"LOAD x[0], R0\n  .for i in 0..2\n  LOAD x[i], R0\n", "loops.fsa:2:3: error: .for without a matching .end"},
      {".for i in 0..2\n  .for j in 0..2\n  LOAD x[j], R0\n.end\n", "loops.fsa:1:1: error: .for without a matching .end"},
      {".for i in 0..0\nLOAD x[i], R0\n", "loops.fsa:1:1: error: .for without a matching .end"},
      {".for i in 0..2\nBOGUS\n", "loops.fsa:1:1: error: .for without a matching .end"},
      {"LOAD x[0], R0\n  .end\n", "loops.fsa:2:3: error: .end without a matching .for"},
      {".for i in 0..2\nLOAD x[i], R0\n.end\n.end\n", "loops.fsa:4:1: error: .end without a matching .for"},
      // Names: loop variables are scoped to their loop and may not shadow.
      {".param n = 3\n.for n in 0..2\n.end\n",
       "loops.fsa:2:6: error: 'n' is already defined; pick another loop variable name"},
      {".for i in 0..2\n  .for i in 0..2\n  .end\n.end\n",
       "loops.fsa:2:8: error: 'i' is already defined; pick another loop variable name (at i = 0)"},
      {".for i in 0..2\nLOAD x[i], R0\n.end\nSTORE R0, y[i]\n",
       "loops.fsa:4:13: error: unknown name 'i' (loop variables and .param names are allowed)"},
      // Directives that shape the machine stay outside loops.
      {".for i in 0..2\n.param k = 3\n.end\n",
       "loops.fsa:2:1: error: directive .param is not allowed inside a .for loop (at i = 0)"},
      {".for i in 0..2\n  .array y[3]\n.end\n",
       "loops.fsa:2:3: error: directive .array is not allowed inside a .for loop (at i = 0)"},
      // Index expressions: the error names the iteration that went wrong.
      {".for i in 0..2\nLOAD x[i-1], R0\n.end\n", "loops.fsa:2:8: error: index -1 is negative (at i = 0)"},
      {".array x[2]\n.for i in 0..3\nLOAD x[i], R0\n.end\n",
       "loops.fsa:3:8: error: index 2 is outside 'x', which has 2 rows (at i = 2)"},
      {".array a[2][3]\n.for i in 0..2\n.for j in 0..4\nLOAD a[i][j], R0\n.end\n.end\n",
       "loops.fsa:4:11: error: index 3 is outside 'a', which has 3 columns (at i = 0, j = 3)"},
      {".for i in 0..2\nLOAD x[i/0], R0\n.end\n",
       "loops.fsa:2:9: error: division by zero in an index expression (at i = 0)"},
      {".for i in 0..2\nLOAD x[i % (i - i)], R0\n.end\n",
       "loops.fsa:2:10: error: modulo by zero in an index expression (at i = 0)"},
      {".for i in 0..2\nLOAD x[i+], R0\n.end\n",
       "loops.fsa:2:10: error: expected a number, a name or '(' but found ']' (at i = 0)"},
      {".for i in 0..2\nLOAD x[i, R0\n.end\n", "loops.fsa:2:9: error: expected ']' but found ',' (at i = 0)"},
      {".for i in 0..2\nLOAD x[9999999999*9999999999], R0\n.end\n",
       "loops.fsa:2:29: error: integer overflow in an index expression (at i = 0)"},
      // Computed registers.
      {".regs 2\n.for i in 0..3\nLOAD x[i], R{i}\n.end\n",
       "loops.fsa:3:12: error: R2 is outside the machine: it has 2 registers (R0..R1) (at i = 2)"},
      {".for i in 0..2\nLOAD x[i], R{i\n.end\n", "loops.fsa:2:15: error: expected '}' but the line ends (at i = 0)"},
      {".for i in 0..2\nLOAD x[i], R{}\n.end\n",
       "loops.fsa:2:14: error: expected a number, a name or '(' but found '}' (at i = 0)"},
      {".for i in 0..2\nLOAD x[i], R{-1-i}\n.end\n",
       "loops.fsa:2:12: error: register number -1 is out of range (at i = 0)"},
      {".for i in 0..2\nBOGUS x[i], R0\n.end\n", "loops.fsa:2:1: error: unknown instruction 'BOGUS' (at i = 0)"},
      {".for i in 0..2\n.\n.end\n", "loops.fsa:2:1: error: expected a directive name after '.'"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK(error_of(c.text) == c.error);
  }
}

TEST_CASE("loop expansion is bounded", "[loops][errors]") {
  CHECK(error_of(".for i in 0..1000\n.for j in 0..1000\nLOAD x[0], R0\n.end\n.end\n", {}, 5000) ==
        "loops.fsa:3:1: error: the expanded trace exceeds 5000 instructions (at i = 5, j = 0)");
  CHECK(error_of(".for i in 0..9223372036854775807\nLOAD x[0], R0\n.end\n", {}, 100) ==
        "loops.fsa:2:1: error: the expanded trace exceeds 100 instructions (at i = 100)");
}

TEST_CASE("a loop sure to overflow stops storing its trace but reports the same first error", "[loops][errors]") {
  // After the first iteration of a body without inner loops the overflow is certain and the rest
  // is counted, not stored; every line is still checked, so an earlier error still comes first.
  const std::string three = ".param n = 1\n.array x[1000]\nLOAD x[0], R0\n.for i in 0..n\nLOAD x[i], R1\nMAX R0, R1, R0\n.end\n";
  CHECK(error_of(three, {{"n", 1000}}, 101) == "loops.fsa:5:1: error: the expanded trace exceeds 101 instructions (at i = 50)");
  CHECK(error_of(three, {{"n", 1000}}, 2001) == "");  // just fits: nothing discarded
  // the index error at i = 1000 comes before the overflow the count predicts at i = 1499
  CHECK(error_of(three, {{"n", 5000}}, 3000) == "loops.fsa:5:8: error: index 1000 is outside 'x', which has 1000 rows (at i = 1000)");
  // the overflow first (i = 60), the index error never reached
  CHECK(error_of(three, {{"n", 5000}}, 121) == "loops.fsa:5:1: error: the expanded trace exceeds 121 instructions (at i = 60)");
  // an inner loop after straight-line code: the same error as if every instruction were stored
  CHECK(error_of(".for i in 0..3\nLOAD x[0], R0\n.for j in 0..1000000\nMOV R0, R1\n.end\n.end\n", {}, 500) ==
        "loops.fsa:4:1: error: the expanded trace exceeds 500 instructions (at i = 0, j = 499)");
}

TEST_CASE("a loop line parsed once reports later iterations' value errors where the parser would", "[loops][errors]") {
  // The first iteration parses the line; later ones evaluate it. Errors that only appear at a later
  // iteration still name the expression's column and the iteration.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {".array x[4]\n.for i in 0..5\nLOAD x[8 / (3 - i)], R{i}\n.end\n",
       "loops.fsa:3:8: error: index 4 is outside 'x', which has 4 rows (at i = 1)"},
      {".array x[9]\n.for i in 0..5\nLOAD x[8 / (3 - i)], R0\n.end\n",
       "loops.fsa:3:10: error: division by zero in an index expression (at i = 3)"},
      {".array x[9]\n.for i in 0..5\nLOAD x[8 % (3 - i)], R0\n.end\n",
       "loops.fsa:3:10: error: modulo by zero in an index expression (at i = 3)"},
      {".regs 3\n.array x[4]\n.for i in 0..5\nLOAD x[0], R{ i }\n.end\n",
       "loops.fsa:4:12: error: R3 is outside the machine: it has 3 registers (R0..R2) (at i = 3)"},
      {".array x[4]\n.for i in 0..5\nLOAD x[2 - i], R0\n.end\n",
       "loops.fsa:3:8: error: index -1 is negative (at i = 3)"},
      {".for i in 0..3\n.for j in 0..3\nMAC R{i}, R{j}^T, R{i * j - 3}, R4\n.end\n.end\n",
       "loops.fsa:3:19: error: register number -3 is out of range (at i = 0, j = 0)"},
      {".for i in 0..3\n.for j in 0..3\nMAC R0, R0, R{4 - i * j}, R{i * j - 1}\n.end\n.end\n",
       "loops.fsa:3:27: error: register number -1 is out of range (at i = 0, j = 0)"},
      {".for i in 0..3\n.for j in 0..3\nMAC R0, R0, R{3 - i * j}, R{i}\n.end\n.end\n",
       "loops.fsa:3:13: error: register number -1 is out of range (at i = 2, j = 2)"},
      {".for i in 0..4\nLOAD y[i][2 - i], R0\n.end\n", "loops.fsa:2:11: error: index -1 is negative (at i = 3)"},
  };
  for (const auto& [text, error] : cases) {
    INFO(text);
    CHECK(error_of(text) == error);
  }
  // The values of a later iteration are its own: loop variables, .param constants, nesting.
  auto p = asm_text(".param n = 2\n.for i in 0..n\n.for j in 0..i+1\nLOAD a[i][j - i + n], R{i + j}\n.end\n.end\n");
  CHECK(listing(p) == std::vector<std::string>{"LOAD a[0][2], R0", "LOAD a[1][1], R1", "LOAD a[1][2], R2"});
}

TEST_CASE("INT64_MIN / -1 and INT64_MIN % -1 in an index are an error or 0, never a trap", "[loops][errors]") {
  CHECK(error_of(".array x[4]\nLOAD x[0 * ((-9223372036854775807 - 1) / -1)], R0\n") ==
        "loops.fsa:2:40: error: integer overflow in an index expression");
  CHECK(error_of(".array x[4]\n.for i in 0..5\nLOAD x[0 * ((-9223372036854775807 - i) / -1)], R0\n.end\n") ==
        "loops.fsa:3:40: error: integer overflow in an index expression (at i = 1)");
  CHECK(listing(asm_text(".array x[4]\n.for i in 0..2\nLOAD x[(-9223372036854775807 - i) % -1], R0\n.end\n")) ==
        std::vector<std::string>{"LOAD x[0], R0", "LOAD x[0], R0"});
}

TEST_CASE("loops that emit nothing are bounded by their iteration count", "[loops][errors]") {
  auto with_cap = [](const std::string& text, std::size_t cap) {
    isa::AssembleOptions o;
    o.max_loop_iterations = cap;
    try {
      isa::assemble(text, "loops.fsa", o);
    } catch (const isa::AsmError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // The fuzzer's hang: a comment-only body over a billion iterations.
  CHECK(with_cap("# empty\n.for i in 1..999999999\n# nothing here\n.end\n", 1000) ==
        "loops.fsa:2:1: error: the loops run more than 1000 iterations (at i = 1001)");
  // Iterations are counted over every loop, nested ones included.
  CHECK(with_cap(".for i in 0..100\n  .for j in 0..100\n  .end\n.end\n", 1000) ==
        "loops.fsa:2:3: error: the loops run more than 1000 iterations (at i = 9, j = 90)");
  CHECK(with_cap(".for i in 0..100\n  .for j in 0..9\n  .end\n.end\nLOAD x[0], R0\n", 1000).empty());
  CHECK(with_cap(".for i in 0..100\n  .for j in 0..9\n  .end\n.end\nLOAD x[0], R0\n", 999) ==
        "loops.fsa:2:3: error: the loops run more than 999 iterations (at i = 99, j = 8)");
}

TEST_CASE("a zero-trip loop is skipped: its body is not assembled", "[loops]") {
  // Documented behaviour: with n = 1, `.for i in 1..n` must not complain about x[i] in its body.
  auto p = asm_text(".param n = 1\n.array x[n]\nLOAD x[0], R1\n.for i in 1..n\nLOAD x[i], R0\nMAX R0, R1, R1\n.end\n");
  CHECK(p.code.size() == 1);
}

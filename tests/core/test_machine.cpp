#include <catch2/catch.hpp>
#include <cmath>

#include "main_helpers.h"
#include "sim/report.h"

using namespace flashsim;
using Catch::Matchers::WithinRel;

namespace {
sim::Machine run_text(const std::string& text, sim::MachineOptions o = {}) {
  return test::run_program(isa::assemble(text, "t.fsa"), std::move(o));
}
double reg_value(const sim::Machine& m, int r) { return m.reg(r).v.at(0); }
}  // namespace

TEST_CASE("every opcode computes what the lesson says", "[machine]") {
  sim::MachineOptions o;
  o.inputs["x"] = {3, -2};
  o.f64 = true;
  auto m = run_text(
      "LOAD x[0], R0\nLOAD x[1], R1\n"
      "MAC_Z R0, R1, R2\n"      // -6
      "MAC R0, R1, R2, R3\n"    // -6 + -6 = -12
      "MAX R0, R1, R4\n"        // 3
      "SUB R0, R1, R5\n"        // 5
      "EXP R1, R6\n"            // e^-2
      "ADD R0, R1, R7\n"        // 1
      "MUL R0, R1, R8\n"        // -6
      "DIV R0, R1, R9\n"        // -1.5
      "MOV R5, R10\n"           // 5
      "STORE R9, y[0]\n",
      o);
  CHECK(reg_value(m, 2) == -6);
  CHECK(reg_value(m, 3) == -12);
  CHECK(reg_value(m, 4) == 3);
  CHECK(reg_value(m, 5) == 5);
  CHECK(reg_value(m, 6) == std::exp(-2.0));
  CHECK(reg_value(m, 7) == 1);
  CHECK(reg_value(m, 8) == -6);
  CHECK(reg_value(m, 9) == -1.5);
  CHECK(reg_value(m, 10) == 5);
  CHECK(test::values(m, "y")[0] == -1.5);
}

TEST_CASE("registers are float32 by default and float64 on request", "[machine]") {
  sim::MachineOptions o;
  o.inputs["x"] = {1.0 / 3.0};
  auto m32 = run_text("LOAD x[0], R0\nMOV R0, R1\n", o);
  CHECK(reg_value(m32, 1) == static_cast<double>(static_cast<float>(1.0 / 3.0)));
  o.f64 = true;
  auto m64 = run_text("LOAD x[0], R0\nMOV R0, R1\n", o);
  CHECK(reg_value(m64, 1) == 1.0 / 3.0);
}

TEST_CASE("symbolic shadows render the lesson's expressions", "[machine]") {
  sim::MachineOptions o;
  o.symbolic = true;
  auto m = run_text(
      "LOAD a[0][0], R0\nLOAD b[0][0], R1\nMAC_Z R0, R1, R2\nLOAD a[0][1], R0\n"
      "LOAD b[1][0], R1\nMAC R0, R1, R2, R2\nSTORE R2, c[0][0]\n"
      "LOAD x[0], R0\nLOAD x[1], R1\nMAX R0, R1, R1\nSUB R0, R1, R0\nEXP R0, R0\n"
      "DIV R0, R1, R0\n",
      o);
  CHECK(m.reg_symbol(2) == "a00*b00 + a01*b10");
  CHECK(m.reg_symbol(1) == "max(x0, x1)");
  CHECK(m.reg_symbol(0) == "exp(x0 - max(x0, x1))/max(x0, x1)");
  CHECK(m.value_symbol(*m.program().find_array("c"), 0) == "a00*b00 + a01*b10");
}

TEST_CASE("cycles, counts and traffic are counted per opcode and per cell", "[machine]") {
  sim::MachineOptions o;
  o.costs[isa::Opcode::LOAD] = 100;
  auto m = run_text(".elem 2\nLOAD x[0], R0\nLOAD x[0], R1\nADD R0, R1, R2\nSTORE R2, y[1]\n", o);
  const auto& c = m.counters();
  CHECK(c.cycles == 100 + 100 + 1 + 1);
  CHECK(c.count(isa::Opcode::LOAD) == 2);
  CHECK(c.elem_reads == 2);
  CHECK(c.bytes_read == 4);
  CHECK(c.elem_writes == 1);
  CHECK(c.bytes_written == 2);
  CHECK(m.array(*m.program().find_array("x")).tile_reads[0] == 2);
  CHECK(m.array(*m.program().find_array("y")).tile_writes[1] == 1);
  CHECK(m.is_input(*m.program().find_array("x")));
  CHECK(m.is_output(*m.program().find_array("y")));
}

TEST_CASE("unwritten inputs are random but reproducible from the seed", "[machine]") {
  auto prog = isa::assemble("LOAD x[0], R0\nSTORE R0, y[0]\n");
  sim::MachineOptions a, b;
  a.seed = 5;
  b.seed = 6;
  auto m1 = test::run_program(prog, a), m2 = test::run_program(prog, a), m3 = test::run_program(prog, b);
  CHECK(test::values(m1, "y")[0] == test::values(m2, "y")[0]);
  CHECK(test::values(m1, "y")[0] != test::values(m3, "y")[0]);
  CHECK(std::abs(test::values(m1, "y")[0]) <= 1.0);
}

TEST_CASE("stepping back restores registers, memory and counters exactly", "[machine]") {
  auto prog = test::load("lessons/06-online-softmax/solution.fsa");
  sim::MachineOptions o;
  o.symbolic = true;
  sim::Machine m(prog, o), ref(prog, o);
  std::vector<std::string> states;
  auto snapshot = [](const sim::Machine& x, bool with_symbols = true) {
    std::string s = std::to_string(x.pc()) + "|" + std::to_string(x.counters().cycles) + "|" +
                    std::to_string(x.counters().elem_reads) + "|" + std::to_string(x.counters().elem_writes);
    for (int r = 0; r < x.register_count(); ++r)
      s += "|" + (x.reg_written(r) ? sim::format_value(x.reg(r).v[0]) + (with_symbols ? x.reg_symbol(r) : "") : std::string("-"));
    for (std::uint32_t a = 0; a < x.program().arrays.size(); ++a) {
      for (double v : x.array(a).values) s += "," + sim::format_value(v);
      for (auto n : x.array(a).tile_reads) s += ";" + std::to_string(n);
      for (auto n : x.array(a).tile_writes) s += ":" + std::to_string(n);
    }
    return s;
  };
  states.push_back(snapshot(m));
  while (!m.done()) {
    m.step();
    states.push_back(snapshot(m));
  }
  for (std::size_t k = states.size() - 1; k > 0; --k) {
    REQUIRE(m.step_back());
    REQUIRE(snapshot(m) == states[k - 1]);
  }
  CHECK_FALSE(m.step_back());
  // Fast run (no symbols) and a replay with history agree with stepping.
  sim::MachineOptions fast;
  fast.history = false;
  auto f = test::run_program(prog, fast);
  auto s = test::run_program(prog, {});
  CHECK(test::values(f, "out") == test::values(s, "out"));
  CHECK(f.counters().cycles == s.counters().cycles);
  // A fast run with history can be stepped back too.
  sim::Machine h(prog);
  h.run();
  h.run_to(10);
  m.run_to(10);
  CHECK(h.pc() == 10);
  CHECK(snapshot(h, false) == snapshot(m, false));
}

TEST_CASE("run to a breakpoint stops before the instruction on that line", "[machine]") {
  sim::Machine m(isa::assemble("LOAD x[0], R0\nLOAD x[1], R1\nADD R0, R1, R2\nSTORE R2, y[0]\n"));
  CHECK(m.run_to_breakpoint({3}));
  CHECK(m.pc() == 2);
  CHECK_FALSE(m.run_to_breakpoint({3}));
  CHECK(m.done());
  m.reset();
  CHECK(m.pc() == 0);
  CHECK(m.counters().cycles == 0);
}

TEST_CASE("register count comes from --regs, else .regs, else the highest register used", "[machine]") {
  auto p = isa::assemble("LOAD x[0], R4\n");
  sim::Machine inferred(p);
  CHECK(inferred.register_count() == 5);
  CHECK(inferred.register_count_source().find("R4") != std::string::npos);
  sim::MachineOptions o;
  o.regs = 8;
  CHECK(sim::Machine(p, o).register_count() == 8);
  CHECK(sim::Machine(isa::assemble(".regs 6\nLOAD x[0], R4\n")).register_count() == 6);
}

TEST_CASE("tiles: matrix products, transposes, broadcasting and row reductions", "[machine][tile]") {
  sim::MachineOptions o;
  o.f64 = true;
  o.inputs["A"] = {1, 2, 3, 4, 5, 6};  // 2x3
  auto m = run_text(
      ".array A[2][3] tile[2][3]\n"
      "LOAD A[0][0], R0\n"
      "MAC_Z R0, R0^T, R1\n"  // A A^T
      "ROWMAX R0, R2\n"
      "ROWSUM R0, R3\n"
      "SUB R0, R2, R4\n"      // A - rowmax(A), the column broadcast across columns
      "MAC_Z R0^T, R0, R5\n"  // A^T A, 3x3
      "MAC R0, R0^T, R1, R6\n"
      "STORE R0, A[0][0]\n",
      o);
  const sim::Tile& aat = m.reg(1);
  REQUIRE(aat.rows == 2);
  REQUIRE(aat.cols == 2);
  CHECK(aat.v == std::vector<double>{14, 32, 32, 77});
  CHECK(m.reg(2).v == std::vector<double>{3, 6});
  CHECK(m.reg(3).v == std::vector<double>{6, 15});
  CHECK(m.reg(4).v == std::vector<double>{-2, -1, 0, -2, -1, 0});
  CHECK(m.reg(5).rows == 3);
  CHECK(m.reg(5).v[0] == 1 * 1 + 4 * 4);
  CHECK(m.reg(6).v == std::vector<double>{28, 64, 64, 154});
  CHECK(m.counters().elem_reads == 6);
  CHECK(m.counters().bytes_read == 24);
}

TEST_CASE("edge tiles are padded and only their real elements are counted", "[machine][tile]") {
  sim::MachineOptions o;
  o.f64 = true;
  auto m = run_text(".elem 2\n.array Q[5][4] tile[4][4]\n.array O[5][4] tile[4][4]\n"
                    "LOAD Q[1], R0\nSTORE R0, O[1]\n",
                    o);
  const sim::Tile& t = m.reg(0);
  CHECK(t.rows == 4);
  CHECK(t.valid_rows == 1);
  CHECK(t.row0 == 4);
  CHECK(t.v[4] == 0.0);  // padding
  CHECK(m.counters().elem_reads == 4);
  CHECK(m.counters().bytes_read == 8);
  CHECK(m.counters().bytes_written == 8);
  CHECK(test::values(m, "O")[16] == test::values(m, "Q")[16]);
}

TEST_CASE("holding more than the SRAM capacity is a fault", "[machine][tile]") {
  auto p = isa::assemble(".sram 100\n.array Q[8][4] tile[4][4]\nLOAD Q[0], R0\nLOAD Q[1], R1\n", "s.fsa");
  sim::Machine m(p);
  m.step();
  CHECK(m.sram_in_use() == 64);
  try {
    m.step();
    FAIL("expected a fault");
  } catch (const sim::MachineFault& f) {
    CHECK(f.step == 2);
    CHECK(std::string(f.what()).find("more than the SRAM's 100 bytes") != std::string::npos);
  }
  CHECK(m.pc() == 1);  // the faulting step left no trace
  CHECK(m.sram_in_use() == 64);
}

TEST_CASE("count-only mode counts the same traffic without values", "[machine][tile]") {
  auto p = isa::assemble(".array A[8][8] tile[4][4]\n.array C[8][8] tile[4][4]\n.for i in 0..2\n.for j in 0..2\n"
                         "LOAD A[i][j], R0\nMAC_Z R0, R0, R1\nSTORE R1, C[i][j]\n.end\n.end\n");
  sim::MachineOptions counting;
  counting.compute_values = false;
  auto a = test::run_program(p, counting);
  auto b = test::run_program(p, {});
  CHECK(a.counters().bytes_read == b.counters().bytes_read);
  CHECK(a.counters().bytes_written == b.counters().bytes_written);
  CHECK(a.counters().cycles == b.counters().cycles);
  CHECK(a.counters().bytes_read == 64 * 4);
}

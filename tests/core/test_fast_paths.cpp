// Machine::run() takes fast paths (the scalar loop over a decoded trace, the count-only loop
// over tile shapes); step() always takes the general path. These tests run the same programs
// both ways and require bit-identical machines: values, counters, per-cell counts, registers,
// SRAM figures, faults and the undo log.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "sim/machine.h"
#include "sim/tile/schedules.h"
#include "sim/traffic.h"

using namespace flashsim;
using isa::Opcode;

namespace {

// Bit patterns, except that every NaN reads "nan": which NaN an operation returns when both
// operands are NaN depends on the compiler's operand order, and IEEE 754 leaves it open.
std::string bits(double v) {
  if (std::isnan(v)) return "nan";
  std::uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return std::to_string(u);
}

// Everything observable about a machine, values as bit patterns (-0 and +0 differ).
std::string state(const sim::Machine& m, bool with_origins) {
  std::string s = "pc " + std::to_string(m.pc());
  const auto& c = m.counters();
  s += " cycles " + std::to_string(c.cycles) + " instrs " + std::to_string(c.instructions) + " reads " +
       std::to_string(c.elem_reads) + " writes " + std::to_string(c.elem_writes) + " bytes " +
       std::to_string(c.bytes_read) + "/" + std::to_string(c.bytes_written) + " ops";
  for (auto n : c.per_op) s += " " + std::to_string(n);
  s += " sram " + std::to_string(m.sram_in_use()) + "/" + std::to_string(m.sram_peak());
  for (int r = 0; r < m.register_count(); ++r) {
    s += "\nR" + std::to_string(r) + (m.reg_written(r) ? " w" : " -");
    if (!m.reg_written(r)) continue;
    const sim::Tile& t = m.reg(r);
    s += " " + std::to_string(t.rows) + "x" + std::to_string(t.cols) + " valid " + std::to_string(t.valid_rows) + "x" +
         std::to_string(t.valid_cols);
    if (with_origins) s += " at " + std::to_string(t.row0) + "," + std::to_string(t.col0);
    for (double v : t.v) s += " " + bits(v);
  }
  for (std::uint32_t a = 0; a < m.program().arrays.size(); ++a) {
    const auto& st = m.array(a);
    s += "\n" + m.program().arrays[a].name + " " + std::to_string(st.elem_reads) + " " + std::to_string(st.elem_writes) +
         " " + std::to_string(st.bytes_read) + " " + std::to_string(st.bytes_written) + " v";
    for (double v : st.values) s += " " + bits(v);
    s += " r";
    for (auto n : st.tile_reads) s += " " + std::to_string(n);
    s += " w";
    for (auto n : st.tile_writes) s += " " + std::to_string(n);
  }
  return s;
}

// Runs to the end (or the first fault) and returns the fault's text, if any.
std::optional<std::string> finish(sim::Machine& m, bool fast) {
  try {
    if (fast) m.run();
    else
      while (!m.done()) m.step();
  } catch (const sim::MachineFault& f) {
    return std::string(f.what());
  }
  return std::nullopt;
}

// A random scalar program over every scalar opcode. Registers are loaded first, so no read
// precedes a write; inputs include zeros of both signs, infinities, NaN and subnormals.
isa::Program random_scalar_program(std::uint32_t seed, bool f64, bool with_div) {
  std::mt19937 g(seed);
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> specials = {0.0, -0.0, 1.0, -1.0, 2.5, inf, -inf, std::numeric_limits<double>::quiet_NaN(),
                                        1e-40, -3e38, 3e38, 1e-30, 0.1, 100.0, -7.25, 0.5};
  isa::Program p;
  p.name = "random";
  p.config.f64 = f64;
  p.config.regs = 6;
  p.highest_reg = 5;
  p.config.cycles[static_cast<std::size_t>(Opcode::EXP)] = 7;
  p.config.cycles[static_cast<std::size_t>(Opcode::LOAD)] = 3;
  auto add_array = [&](const std::string& name, std::int64_t n, int elem) {
    isa::ArrayDecl a;
    a.name = name;
    a.rows = n;
    a.elem_bytes = elem;
    a.declared = true;
    for (std::int64_t k = 0; k < n; ++k) a.input.push_back(specials[g() % specials.size()]);
    p.arrays.push_back(a);
  };
  add_array("x", 16, 0);
  add_array("y", 7, 2);
  add_array("out", 9, 8);
  auto reg = [](std::uint16_t r) {
    isa::Operand o;
    o.kind = isa::Operand::Kind::Reg;
    o.reg = r;
    return o;
  };
  auto mem = [&](std::uint32_t a) {
    isa::Operand o;
    o.kind = isa::Operand::Kind::Mem;
    o.array = a;
    o.row = static_cast<std::int64_t>(g() % static_cast<std::uint32_t>(p.arrays[a].rows));
    return o;
  };
  for (std::uint16_t r = 0; r < 6; ++r) {
    isa::Instruction in;
    in.op = Opcode::LOAD;
    in.set_operand(0, mem(r % 2));
    in.set_operand(1, reg(r));
    p.code.push_back(in);
  }
  for (int k = 0; k < 400; ++k) {
    isa::Instruction in;
    Opcode op;
    do op = static_cast<Opcode>(g() % isa::kOpcodeCount);
    while (op == Opcode::MASK || (op == Opcode::DIV && !with_div));
    in.op = op;
    const auto& info = isa::info(op);
    for (int i = 0; i < info.operand_count; ++i) {
      switch (info.operands[i]) {
        case isa::OperandKind::MemSrc: in.set_operand(i, mem(g() % 3)); break;
        case isa::OperandKind::MemDst: in.set_operand(i, mem(1 + g() % 2)); break;
        default: in.set_operand(i, reg(static_cast<std::uint16_t>(g() % 6)));
      }
    }
    p.code.push_back(in);
  }
  return p;
}

}  // namespace

TEST_CASE("the scalar fast run equals stepping, bit for bit, with and without history", "[machine][fast]") {
  int faults = 0;
  for (std::uint32_t seed = 1; seed <= 60; ++seed)
    for (bool f64 : {false, true})
      for (bool history : {false, true}) {
        INFO("seed " << seed << (f64 ? " f64" : " f32") << (history ? " history" : ""));
        isa::Program prog = random_scalar_program(seed, f64, seed % 3 == 0);
        sim::MachineOptions o;
        o.history = history;
        for (std::uint64_t start : {std::uint64_t{0}, std::uint64_t{seed % 50}}) {
          sim::Machine fast(prog, o), slow(prog, o);
          for (std::uint64_t k = 0; k < start; ++k) {
            auto step = [](sim::Machine& m) -> std::optional<std::string> {
              try {
                m.step();
              } catch (const sim::MachineFault& f) {
                return std::string(f.what());
              }
              return std::nullopt;
            };
            auto ff = step(fast);
            REQUIRE(ff == step(slow));
            if (ff) break;
          }
          auto ff = finish(fast, true), fs = finish(slow, false);
          REQUIRE(ff == fs);
          if (ff) ++faults;
          REQUIRE(state(fast, false) == state(slow, false));
          REQUIRE(fast.history_bytes() == slow.history_bytes());
          if (!history) continue;
          // The fast run's undo log steps back through the same states.
          while (slow.pc() > 0) {
            REQUIRE(fast.step_back());
            REQUIRE(slow.step_back());
            REQUIRE(state(fast, false) == state(slow, false));
          }
          CHECK_FALSE(fast.step_back());
        }
      }
  CHECK(faults > 0);  // division by zero was exercised
}

TEST_CASE("stepping back after a fast run restores each earlier state exactly", "[machine][fast][history]") {
  // The scalar machine's history keeps one old value a step (a float on the f32 machine), and
  // says whether a register held a value from where it is first written: check against the
  // states recorded on the way forward, registers first written late included.
  const std::string late = "LOAD x[0], R0\nLOAD x[1], R1\nADD R0, R1, R2\nSTORE R2, y[0]\nMUL R2, R0, R3\n"
                           "STORE R3, y[0]\nMOV R3, R2\nEXP R1, R4\nSTORE R4, y[1]\n";
  for (bool f64 : {false, true})
    for (std::uint32_t seed = 0; seed <= 12; ++seed) {
      INFO((f64 ? "f64" : "f32") << " seed " << seed);
      isa::Program prog = seed == 0 ? isa::assemble(std::string(f64 ? ".dtype f64\n" : "") + late)
                                    : random_scalar_program(seed, f64, false);
      sim::Machine m(prog);
      std::vector<std::string> seen{state(m, false)};
      while (!m.done()) {
        m.step();
        seen.push_back(state(m, false));
      }
      sim::Machine fast(prog);
      fast.run();
      REQUIRE(state(fast, false) == seen.back());
      REQUIRE(fast.history_bytes() == m.history_bytes());
      for (std::size_t k = seen.size() - 1; k-- > 0;) {
        REQUIRE(fast.step_back());
        REQUIRE(state(fast, false) == seen[k]);
      }
      CHECK_FALSE(fast.step_back());
    }
}

TEST_CASE("the fast run keeps IEEE details of the general path: signed zeros and NaN", "[machine][fast]") {
  // 0 + a*b turns -0 into +0 (MAC_Z and MAC accumulate from +0); ROWMAX of NaN is -inf;
  // ROWSUM of -0 is +0; MAX of NaN is NaN; MAC_Z of -1e-30 and 1e-30 on the f32 machine is
  // -1e-60 in double, rounded to -0 (a float product would give -0, and 0 + -0 = +0).
  const char* text =
      ".regs 8\n.array x[6]\n.input x -1, 0, -0, nan, -1e-30, 1e-30\n"
      "LOAD x[0], R0\nLOAD x[1], R1\nLOAD x[2], R2\nLOAD x[3], R3\n"
      "MAC_Z R0, R1, R4\nSTORE R4, y[0]\nMUL R0, R1, R5\nSTORE R5, y[1]\nMAC R0, R1, R2, R6\nSTORE R6, y[2]\n"
      "ROWMAX R3, R7\nSTORE R7, y[3]\nROWSUM R2, R7\nSTORE R7, y[4]\nMAX R3, R0, R7\nSTORE R7, y[5]\n"
      "LOAD x[4], R0\nLOAD x[5], R1\nMAC_Z R0, R1, R4\nSTORE R4, y[6]\n";
  for (bool f64 : {false, true}) {
    isa::Program prog = isa::assemble(std::string(f64 ? ".dtype f64\n" : "") + text);
    sim::MachineOptions o;
    o.history = false;
    sim::Machine fast(prog, o), slow(prog, o);
    finish(fast, true);
    finish(slow, false);
    CHECK(state(fast, false) == state(slow, false));
    const auto& y = fast.array(*prog.find_array("y")).values;
    CHECK(!std::signbit(y[0]));
    CHECK(std::signbit(y[1]));
    CHECK(!std::signbit(y[2]));
    CHECK(y[3] == -std::numeric_limits<double>::infinity());
    CHECK(!std::signbit(y[4]));
    CHECK(std::isnan(y[5]));
    CHECK(std::signbit(y[6]));
    CHECK((y[6] == 0.0) == !f64);
  }
}

TEST_CASE("the count-only fast run equals stepping on generated tile schedules", "[machine][fast]") {
  using namespace flashsim::traffic;
  std::vector<isa::Program> programs;
  for (auto [n, n_kv, d, br, bc, causal] :
       {std::tuple<int, int, int, int, int, bool>{256, 0, 64, 64, 64, false}, {300, 0, 48, 64, 32, true},
        {130, 200, 32, 32, 64, true}, {200, 130, 40, 16, 48, false}}) {
    AttentionParams p;
    p.n = n;
    p.n_kv = n_kv;
    p.d = d;
    p.br = br;
    p.bc = bc;
    p.causal = causal;
    for (auto s : {AttentionForward::Naive, AttentionForward::FA1, AttentionForward::FA2})
      programs.push_back(tile::attention_forward_program(p, s));
    for (auto s : {AttentionBackward::TwoPass, AttentionBackward::AtomicDQ, AttentionBackward::RowWise,
                   AttentionBackward::RowWiseNoD})
      programs.push_back(tile::attention_backward_program(p, s));
  }
  MatmulParams mp;
  mp.m = 200;
  mp.n = 130;
  mp.k = 300;
  programs.push_back(tile::matmul_program(mp, MatmulSchedule::Inner));
  programs.push_back(tile::matmul_program(mp, MatmulSchedule::Outer));
  SoftmaxParams sp;
  sp.rows = 5;
  sp.cols = 3000;
  programs.push_back(tile::softmax_program(sp, SoftmaxSchedule::ThreePass));
  programs.push_back(tile::softmax_program(sp, SoftmaxSchedule::Online));
  for (const auto& prog : programs) {
    INFO(prog.name);
    // Unlimited SRAM, then an SRAM one byte short of the peak: the fault and the state it
    // leaves behind must match too.
    sim::MachineOptions o;
    o.compute_values = false;
    o.history = false;
    o.sram_bytes = std::uint64_t{1} << 40;
    sim::Machine fast(prog, o), slow(prog, o);
    REQUIRE(finish(fast, true) == finish(slow, false));
    REQUIRE(state(fast, true) == state(slow, true));
    REQUIRE(fast.sram_peak() > 0);
    o.sram_bytes = fast.sram_peak() - 1;
    sim::Machine fast2(prog, o), slow2(prog, o);
    auto f2 = finish(fast2, true);
    REQUIRE(f2.has_value());
    CHECK(f2 == finish(slow2, false));
    CHECK(state(fast2, true) == state(slow2, true));
  }
}

TEST_CASE("the count-only fast run hands faulting steps to the general path", "[machine][fast]") {
  const char* programs[] = {
      ".array a[4][4] tile[2][2]\n.array b[4][4] tile[2][4]\nLOAD a[0][0], R0\nSTORE R0, b[0][0]\n",
      ".array a[4][4] tile[2][2]\n.array b[4][4] tile[4][1]\nLOAD a[0][0], R0\nLOAD b[0][0], R1\nMAC_Z R0, R1, R2\n",
      ".array a[4][4] tile[2][2]\n.array b[4][4] tile[1][4]\nLOAD a[0][0], R0\nLOAD b[0][0], R1\nADD R0, R1, R2\n",
      ".array a[4][4] tile[2][2]\nLOAD a[0][0], R0\nMOV R0, R1\nADD R0, R3, R2\n",
      ".array a[4][4] tile[2][2]\n.array c[4][4] tile[2][4]\nLOAD a[0][0], R0\nLOAD a[0][0], R1\nLOAD c[0][0], R2\n"
      "MAC R0, R1, R2, R3\n",
  };
  for (const char* text : programs) {
    INFO(text);
    isa::Program prog = isa::assemble(text);
    sim::MachineOptions o;
    o.compute_values = false;
    o.history = false;
    sim::Machine fast(prog, o), slow(prog, o);
    auto f = finish(fast, true);
    REQUIRE(f.has_value());
    CHECK(f == finish(slow, false));
    CHECK(state(fast, true) == state(slow, true));
  }
}

TEST_CASE("counted traffic equals stepping the whole trace on the count-only machine", "[machine][fast]") {
  using namespace flashsim::traffic;
  for (auto [n, d, b, causal] : {std::tuple<int, int, int, bool>{512, 64, 64, false}, {1000, 128, 64, true},
                                 {2048, 64, 32, false}, {777, 96, 48, true}}) {
    AttentionParams p;
    p.n = n;
    p.d = d;
    p.br = p.bc = b;
    p.causal = causal;
    for (auto s : {AttentionForward::Naive, AttentionForward::FA1, AttentionForward::FA2}) {
      INFO("n " << n << " d " << d << " schedule " << static_cast<int>(s));
      sim::MachineOptions o;
      o.compute_values = false;
      o.history = false;
      sim::Machine slow(tile::attention_forward_program(p, s), o);
      REQUIRE_FALSE(finish(slow, false));
      Traffic t = count_attention_forward(p, s);
      CHECK(t.instructions == slow.counters().instructions);
      for (std::uint32_t a = 0; a < slow.program().arrays.size(); ++a) {
        const ArrayTraffic* at = t.find(slow.program().arrays[a].name);
        REQUIRE(at != nullptr);
        CHECK(at->bytes_read == slow.array(a).bytes_read);
        CHECK(at->bytes_written == slow.array(a).bytes_written);
      }
    }
    sim::MachineOptions o;
    o.compute_values = false;
    o.history = false;
    sim::Machine slow(tile::attention_backward_program(p, AttentionBackward::TwoPass), o);
    REQUIRE_FALSE(finish(slow, false));
    Traffic t = count_attention_backward(p, AttentionBackward::TwoPass);
    CHECK(t.bytes_read() == slow.counters().bytes_read);
    CHECK(t.bytes_written() == slow.counters().bytes_written);
  }
}

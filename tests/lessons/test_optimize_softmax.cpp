// `flashsim optimize softmax`: the exhaustive search over symbolic softmax programs. Every
// optimal trace is re-run on the machine against a float64 softmax; the minima asserted here
// are derived by hand in the comments (op counting), except where a comment says otherwise.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "isa/assembler.h"
#include "sim/machine.h"
#include "sim/optimize_softmax.h"
#include "run_command.h"

using namespace flashsim;

namespace {

sim::SoftmaxSchedule solve(int n, int regs, bool by_loads = false, bool spills = false, bool rescale = true) {
  sim::SoftmaxSearch p;
  p.n = n;
  p.regs = regs;
  p.allow_spills = spills;
  p.allow_rescale = rescale;
  if (by_loads) p.objective = sim::SoftmaxSearch::Objective::Loads;
  return sim::optimize_softmax(p);
}

// Re-runs the trace on the machine: outputs against float64 softmax (several inputs, large
// and tied ones included) and the machine's own count of DRAM reads against the search's.
void rerun(const sim::SoftmaxSchedule& r, int n) {
  INFO(r.trace);
  auto v = sim::verify_softmax_trace(r.program, n);
  CHECK(v.max_rel_error < 1e-12);
  CHECK(v.reads == r.loads);
  CHECK(v.writes == r.stores);
  // The text the CLI prints assembles to the same program.
  CHECK(isa::same_program(isa::assemble(r.trace, "again.fsa"), r.program));
}

int run_cli(const std::string& args, std::string& output) {
  auto [status, out] = run_command(std::string(FLASHSIM_EXE) + " optimize softmax " + args);
  output = std::move(out);
  return status;
}

}  // namespace

TEST_CASE("softmax search: n = 1 and n = 2 minima derived by hand", "[optimize][softmax]") {
  // n = 1: LOAD x0; SUB x0 - x0 = 0; EXP -> 1; DIV 1 / 1; STORE. Each of the five is needed
  // (the output is a quotient, its numerator an exponential of a difference of x0), and one
  // register holds every intermediate.
  auto one = solve(1, 1);
  CHECK(one.cycles == 5);
  CHECK(one.loads == 1);
  rerun(one, 1);

  // n = 2, every op counted: 2 LOADs (each x read once), 1 MAX (m), 2 SUBs (x_i - m), 2 EXPs,
  // 1 ADD (S), 2 DIVs, 2 STOREs = 12 cycles. Three registers suffice: x0, x1, m; then the
  // two terms overwrite x0 and x1 and S overwrites m. The start bound is already 12.
  for (int regs : {3, 5}) {
    auto r = solve(2, regs);
    CHECK(r.cycles == 12);
    CHECK(r.loads == 2);
    CHECK(r.start_bound_cycles == 12);
    CHECK(r.x_reads == std::vector<int>{1, 1});
    CHECK_FALSE(r.rescales);
    rerun(r, 2);
  }
}

TEST_CASE("softmax search: too few registers is proved infeasible", "[optimize][softmax]") {
  // Two registers, no spills: whichever term x_i - m is formed second needs x_i and m in
  // registers while the first term (or its difference) is still alive: three values.
  for (int n : {2, 3, 4}) {
    try {
      solve(n, 2);
      FAIL("a program was found on 2 registers for n = " << n);
    } catch (const sim::NoProgramError& e) {
      CHECK(std::string(e.what()).find("no program computes the softmax") != std::string::npos);
      CHECK(e.states > 0);
    }
  }
  CHECK_THROWS_AS(solve(3, 1), sim::NoProgramError);
  // Instances outside the search's limits are refused with a message, not a crash.
  CHECK_THROWS_AS(solve(5, 3), sim::SearchError);
  CHECK_THROWS_AS(solve(3, 9), sim::SearchError);

  std::string out;
  CHECK(run_cli("--n 2 --regs 2", out) == 2);
  CHECK(out.find("no program computes the softmax of n = 2 on 2 registers without spills") != std::string::npos);
  CHECK(run_cli("--n 3 --regs 3 --objective fastest", out) != 0);
  CHECK(out.find("--objective is cycles or loads") != std::string::npos);
}

TEST_CASE("softmax search: spills make two registers enough for n = 2", "[optimize][softmax]") {
  // By hand: with R0 = m, the first term e^(x_i - m) must leave the registers before x_j can be
  // loaded next to m, so it is spilled to an out cell (1 STORE) and loaded back for the ADD (1
  // LOAD); after S is formed one term is still in a register, the other is reloaded once more.
  // x is read 3 times (x0, x1, then the one MAX overwrote), spills twice: 5 LOADs, and the
  // 12 operations of the n = 2 bound plus 3 extra LOADs and 1 spill STORE = 16 cycles.
  auto r = solve(2, 2, false, true);
  CHECK(r.cycles == 16);
  CHECK(r.loads == 5);
  CHECK(r.spill_loads == 2);
  CHECK(r.spill_stores == 1);
  rerun(r, 2);
}

TEST_CASE("softmax search: 3 against 4 and 5 registers at n = 3 and 4", "[optimize][softmax]") {
  // R = n + 1 holds every x and m at once: each x read once, 7n - 2 operations (n LOADs, n-1
  // MAXes, n SUBs, n EXPs, n-1 ADDs, n DIVs, n STOREs), which is also the op-count bound.
  auto r34 = solve(3, 4, true);
  CHECK(r34.loads == 3);
  CHECK(r34.cycles == 19);
  rerun(r34, 3);
  auto r45 = solve(4, 5, true);
  CHECK(r45.loads == 4);
  CHECK(r45.cycles == 26);
  rerun(r45, 4);

  // Three registers: the lesson's three passes (max, sum, normalise) read 3n, minus what stays
  // in registers across a pass boundary. These minima are the search's own (no independent
  // derivation beyond the upper bound the trace itself is): n = 3 -> 6, n = 4 -> 9 = 3n - 3.
  auto r33 = solve(3, 3, true);
  CHECK(r33.loads == 6);
  rerun(r33, 3);
  auto r43 = solve(4, 3, true);
  CHECK(r43.loads == 9);
  CHECK(r43.cycles == 37);
  rerun(r43, 4);
  // Merging states under index permutations changes nothing but the work.
  sim::SoftmaxSearch plain;
  plain.n = 4;
  plain.regs = 3;
  plain.objective = sim::SoftmaxSearch::Objective::Loads;
  plain.use_symmetry = false;
  auto r43_plain = sim::optimize_softmax(plain);
  CHECK(r43_plain.loads == 9);
  CHECK(r43_plain.cycles == 37);
  CHECK(r43_plain.stats.stored > r43.stats.stored);
}

TEST_CASE("softmax search: at n = 4 the online rescale does not beat resident registers", "[optimize][softmax]") {
  // Four registers: 7 reads with or without MUL by e^(m_old - m_new). The rescale-free optimum
  // keeps three x's resident through the max pass; the online form also reaches 2n - 1 = 7
  // but no fewer, so at this size the search has no reason to pick it.
  auto with = solve(4, 4);
  auto without = solve(4, 4, false, false, false);
  CHECK(with.cycles == 33);
  CHECK(with.loads == 7);
  CHECK(without.cycles == with.cycles);
  CHECK(without.loads == with.loads);
  CHECK(without.per_op[static_cast<std::size_t>(isa::Opcode::MUL)] == 0);
  rerun(with, 4);
}

TEST_CASE("softmax search: the verifier rejects a wrong trace", "[optimize][softmax]") {
  // The n = 2 optimum with the divisor replaced by the other term: assembles, runs, wrong.
  auto r = solve(2, 3);
  std::string text = r.trace;
  auto pos = text.find("DIV R0, R1, R0");
  REQUIRE(pos != std::string::npos);
  text.replace(pos, 14, "DIV R0, R2, R0");
  auto wrong = isa::assemble(text, "wrong.fsa");
  CHECK_THROWS_AS(sim::verify_softmax_trace(wrong, 2), sim::SearchError);
}

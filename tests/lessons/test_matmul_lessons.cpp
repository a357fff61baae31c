// Lessons 01-04, the lesson checker's verdicts, the matmul generators and the optimal search.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lessons/lesson.h"
#include "sim/machine.h"
#include "sim/optimize.h"
#include "sim/schedules/matmul.h"
#include "tests/scratch_dir.h"

using namespace flashsim;
using namespace flashsim::lessons;

namespace {

std::string lesson_dir(const std::string& folder) { return std::string(FLASHSIM_SOURCE_DIR) + "/lessons/" + folder; }

Verdict check(const std::string& folder, const std::string& text, const std::string& part = "main") {
  Lesson l = load_lesson(lesson_dir(folder));
  const Part* p = l.find_part(part);
  REQUIRE(p != nullptr);
  return check_text(l, *p, text, "test.fsa");
}

bool mentions(const Verdict& v, const std::string& s) {
  for (const auto& p : v.problems)
    if (p.find(s) != std::string::npos) return true;
  return false;
}

std::string all_problems(const Verdict& v) {
  std::string s;
  for (const auto& p : v.problems) s += p + "\n";
  return s;
}

const char* kLesson1 = R"(.regs 3
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
STORE R2, c[0][0]
)";

// A part that grades any m x k x n product on `regs` registers, for generated traces.
Part matmul_part(int m, int k, int n, int regs) {
  Part p;
  p.reference = "matmul";
  p.arrays = {{"a", 2, m, k}, {"b", 2, k, n}, {"c", 2, m, n}};
  p.outputs = {{"c", std::nullopt, std::nullopt}};
  p.regs = regs;
  p.trials = 2;
  return p;
}

}  // namespace

TEST_CASE("lesson 01: the right trace passes with its counts", "[lesson-01]") {
  Verdict v = check("01-dot-product", kLesson1);
  INFO(all_problems(v));
  CHECK(v.passed);
  CHECK(v.counts.cycles == 7);
  CHECK(v.counts.loads == 4);
  CHECK(v.counts.stores == 1);
}

TEST_CASE("lesson 01: a wrong value names the cell, expected, got and the expression", "[lesson-01]") {
  std::string wrong = kLesson1;
  wrong.replace(wrong.find("b[1][0]"), 7, "b[0][1]");
  Verdict v = check("01-dot-product", wrong);
  CHECK_FALSE(v.passed);
  CHECK(mentions(v, "c[0][0]: expected "));
  CHECK(mentions(v, ", got "));
  CHECK(mentions(v, "your trace stored a00*b00 + a01*b01"));
}

TEST_CASE("lesson 01: one register too many is refused", "[lesson-01]") {
  std::string wrong = kLesson1;
  wrong.replace(wrong.find("MAC_Z R0, R1, R2"), 16, "MAC_Z R0, R1, R3");
  wrong.replace(wrong.find("MAC R0, R1, R2, R2"), 18, "MAC R0, R1, R3, R2");
  Verdict v = check("01-dot-product", wrong);
  CHECK_FALSE(v.passed);
  CHECK(mentions(v, "R3 is outside the machine: it has 3 registers"));
  // Without a .regs line the trace still runs on the lesson's 3 registers.
  Verdict no_directive = check("01-dot-product", wrong.substr(wrong.find('\n') + 1));
  CHECK_FALSE(no_directive.passed);
  CHECK(mentions(no_directive, "your trace uses R3 (line 3), but the machine has 3 registers (R0..R2)"));
  // Declaring a bigger machine does not help.
  std::string bigger = std::string(".regs 4\n") + (kLesson1 + 8);
  CHECK(mentions(check("01-dot-product", bigger), "declares .regs 4, but the machine has 3 registers"));
}

TEST_CASE("lesson 01: one cycle over budget says so", "[lesson-01]") {
  std::string slow = kLesson1;
  slow.insert(slow.find("STORE"), "LOAD a[0][0], R0\n");
  Verdict v = check("01-dot-product", slow);
  CHECK_FALSE(v.passed);
  CHECK(mentions(v, "your trace takes 8 cycles; the budget is 7"));
  CHECK(mentions(v, "your trace makes 5 LOADs; the budget is 4"));
}

TEST_CASE("lesson 01: a missing STORE and the untouched exercise fail clearly", "[lesson-01]") {
  std::string nostore = kLesson1;
  nostore.erase(nostore.find("STORE"));
  nostore += "STORE R2, c[0][1]\n";
  CHECK(mentions(check("01-dot-product", nostore), "c[0][0] is never stored"));
  Lesson l = load_lesson(lesson_dir("01-dot-product"));
  Verdict ex = check_file(l, l.parts[0], l.dir + "/exercise.fsa");
  CHECK_FALSE(ex.passed);
  CHECK(mentions(ex, "R2 is read before anything was written"));
}

TEST_CASE("lesson 02: the naive 28-cycle product is over budget", "[lesson-02]") {
  std::string naive = ".regs 3\n";
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      std::string I = std::to_string(i), J = std::to_string(j);
      naive += "LOAD a[" + I + "][0], R0\nLOAD b[0][" + J + "], R1\nMAC_Z R0, R1, R2\n";
      naive += "LOAD a[" + I + "][1], R0\nLOAD b[1][" + J + "], R1\nMAC R0, R1, R2, R2\nSTORE R2, c[" + I + "][" + J + "]\n";
    }
  Verdict v = check("02-locality", naive);
  CHECK_FALSE(v.passed);
  CHECK(mentions(v, "your trace takes 28 cycles; the budget is 25"));
  CHECK(mentions(v, "your trace makes 16 LOADs; the budget is 13"));
}

TEST_CASE("lesson 03: the outer-product trace is not an answer to the quiz", "[lesson-03]") {
  std::ifstream f(lesson_dir("03-outer-product") + "/solution.fsa");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Verdict v = check("03-outer-product", text, "quiz");
  CHECK_FALSE(v.passed);
  CHECK(mentions(v, "your trace takes 22 cycles; the budget is 20"));
  CHECK(mentions(v, "one output at a time"));
}

TEST_CASE("lesson budgets are the optimal search's answers", "[lesson-02][lesson-03][optimize]") {
  sim::MatmulSearch p;
  p.regs = 3;
  auto three = sim::optimize_matmul(p);
  p.regs = 6;
  auto six = sim::optimize_matmul(p);
  Lesson l2 = load_lesson(lesson_dir("02-locality")), l3 = load_lesson(lesson_dir("03-outer-product"));
  auto budget = [](const Part& part, const std::string& c) {
    for (const auto& b : part.budgets)
      if (b.counter == c) return b.limit;
    return std::uint64_t{0};
  };
  CHECK(budget(l2.parts[0], "cycles") == three.cycles);
  CHECK(budget(l2.parts[0], "loads") == three.loads);
  CHECK(budget(*l3.find_part("quiz"), "cycles") == six.cycles);
  CHECK(budget(*l3.find_part("quiz"), "loads") == six.loads);
}

TEST_CASE("check specs report errors at FILE:LINE:COL", "[lessons]") {
  flashsim::test::ScratchDir tmp;
  auto dir = tmp.dir() / "99-broken";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "check.spec") << "title = x\nsolution = s.fsa\nreference = matmul\nbogus = 3\n";
  try {
    load_lesson(dir.string());
    FAIL("a bad key must be rejected");
  } catch (const SpecError& e) {
    CHECK(std::string(e.what()).find("check.spec:4:1: error: unknown key 'bogus'") != std::string::npos);
  }
  std::ofstream(dir / "check.spec") << "solution = s.fsa\nreference = matmul\narrays = a[2][2] c[2][2]\noutputs = c\nregs = x\n";
  CHECK_THROWS_WITH(load_lesson(dir.string()), Catch::Contains("check.spec:5:8: error: 'x' is not an integer"));
}

TEST_CASE("FLASHSIM_LESSON_FILE picks the lesson it belongs to", "[lessons]") {
  Lesson l1 = load_lesson(lesson_dir("01-dot-product")), l2 = load_lesson(lesson_dir("02-locality"));
  ::unsetenv("FLASHSIM_LESSON");
  ::setenv("FLASHSIM_LESSON_FILE", (lesson_dir("01-dot-product") + "/exercise.fsa").c_str(), 1);
  CHECK(learner_file_for(l1).has_value());
  CHECK_FALSE(learner_file_for(l2).has_value());
  ::setenv("FLASHSIM_LESSON_FILE", "/tmp/somewhere/my.fsa", 1);
  CHECK(learner_file_for(l1).has_value());
  CHECK(learner_file_for(l2).has_value());
  ::setenv("FLASHSIM_LESSON", "02", 1);
  CHECK_FALSE(learner_file_for(l1).has_value());
  CHECK(learner_file_for(l2).has_value());
  ::unsetenv("FLASHSIM_LESSON");
  ::unsetenv("FLASHSIM_LESSON_FILE");
  CHECK_FALSE(learner_file_for(l1).has_value());
}

TEST_CASE("generators: values and counts over n, R and shapes", "[lesson-04][generators]") {
  using sim::schedules::MatmulSchedule;
  struct Shape {
    int m, k, n;
  };
  std::vector<Shape> shapes{{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {4, 4, 4}, {2, 3, 4}, {5, 2, 3}, {6, 6, 6}};
  for (auto [m, k, n] : shapes)
    for (int regs : {3, 4, 5, 6, 8, 12, 20})
      for (auto s : {MatmulSchedule::Inner, MatmulSchedule::Outer, MatmulSchedule::Blocked}) {
        sim::schedules::MatmulGenOptions o;
        o.m = m;
        o.k = k;
        o.n = n;
        o.regs = regs;
        o.schedule = s;
        auto g = sim::schedules::generate_matmul(o);
        INFO(g.summary << " m=" << m << " k=" << k << " n=" << n << " R=" << regs);
        CHECK(g.macs == static_cast<std::uint64_t>(m * k * n));
        CHECK(g.loads >= sim::schedules::compulsory_loads(m, k, n));
        CHECK(g.cycles == g.loads + g.macs + g.stores);
        if (s != MatmulSchedule::Outer) CHECK(g.stores == static_cast<std::uint64_t>(m * n));
        CHECK(g.program.highest_reg < regs);
        Lesson dummy;
        Verdict v = check_program(dummy, matmul_part(m, k, n, regs), g.program);
        INFO(all_problems(v));
        CHECK(v.passed);
      }
}

TEST_CASE("generators: known counts, reuse grows with R, compulsory when everything fits", "[lesson-04][generators]") {
  using sim::schedules::MatmulSchedule;
  auto gen = [](int n, int regs, MatmulSchedule s) {
    sim::schedules::MatmulGenOptions o;
    o.m = o.k = o.n = n;
    o.regs = regs;
    o.schedule = s;
    return sim::schedules::generate_matmul(o);
  };
  CHECK(gen(2, 3, MatmulSchedule::Inner).cycles == 25);
  CHECK(gen(2, 3, MatmulSchedule::Inner).loads == 13);
  CHECK(gen(2, 6, MatmulSchedule::Inner).cycles == 20);
  CHECK(gen(2, 6, MatmulSchedule::Outer).loads == 8);
  CHECK(gen(4, 6, MatmulSchedule::Blocked).cycles <= 160);  // lesson 04's hand-written loops
  for (int n : {3, 4, 6}) {
    std::uint64_t last = ~0ull;
    for (int regs = 3; regs <= 2 * n * n + n * n; ++regs) {
      auto g = gen(n, regs, MatmulSchedule::Blocked);
      CHECK(g.loads <= last);
      last = g.loads;
    }
    CHECK(last == sim::schedules::compulsory_loads(n, n, n));
  }
  sim::schedules::MatmulGenOptions bad;
  bad.regs = 5;
  bad.schedule = MatmulSchedule::Blocked;
  bad.block_rows = bad.block_cols = 2;
  CHECK_THROWS_WITH(sim::schedules::generate_matmul(bad), Catch::Contains("needs 6 registers"));
  bad.regs = 2;
  CHECK_THROWS(sim::schedules::generate_matmul(bad));
}

TEST_CASE("optimizer: 2x2 optima for 3..6 registers, traces re-run on the machine", "[optimize]") {
  struct Want {
    int regs;
    std::uint64_t cycles, loads;
  };
  for (auto w : {Want{3, 25, 13}, Want{4, 22, 10}, Want{5, 21, 9}, Want{6, 20, 8}}) {
    sim::MatmulSearch p;
    p.regs = w.regs;
    auto r = sim::optimize_matmul(p);
    INFO("regs " << w.regs << "\n" << r.trace);
    CHECK(r.cycles == w.cycles);
    CHECK(r.loads == w.loads);
    CHECK(r.start_bound_cycles == 20);
    sim::Machine m(r.program);
    m.run();
    CHECK(m.counters().cycles == r.cycles);
    CHECK(m.counters().count(isa::Opcode::LOAD) == r.loads);
    Lesson dummy;
    Verdict v = check_program(dummy, matmul_part(2, 2, 2, w.regs), r.program);
    INFO(all_problems(v));
    CHECK(v.passed);
    // Symmetry reduction only merges equivalent states: the optimum is the same without it.
    p.use_symmetry = false;
    CHECK(sim::optimize_matmul(p).cycles == w.cycles);
  }
}

TEST_CASE("optimizer: rectangular instances, spills and weighted costs", "[optimize]") {
  sim::MatmulSearch p;
  p.m = 2;
  p.k = 3;
  p.n = 2;
  p.regs = 6;
  auto r = sim::optimize_matmul(p);
  CHECK(r.cycles == 29);
  Lesson dummy;
  CHECK(check_program(dummy, matmul_part(2, 3, 2, 6), r.program).passed);
  // Without spills the search may not do better; with them it is never worse.
  p.allow_spills = false;
  CHECK(sim::optimize_matmul(p).cycles >= r.cycles);
  // Expensive LOADs: the search still returns a correct trace whose cost it reports.
  sim::MatmulSearch w;
  w.regs = 4;
  w.cycles[static_cast<std::size_t>(isa::Opcode::LOAD)] = 10;
  auto rw = sim::optimize_matmul(w);
  sim::MachineOptions mo;
  mo.costs[isa::Opcode::LOAD] = 10;
  sim::Machine m(rw.program, mo);
  m.run();
  CHECK(m.counters().cycles == rw.cycles);
  CHECK(rw.loads == 10);
  w.regs = 2;
  CHECK_THROWS_AS(sim::optimize_matmul(w), sim::SearchError);
}

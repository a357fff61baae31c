// Lessons 16 and 17 (the time model): the solutions pass their cycle and busy budgets, the
// exercises compute the right values but miss the time budget, and a trace that brings its own
// units, or none, is refused.
#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lessons/lesson.h"
#include "run_command.h"
#include "tests/scratch_dir.h"

using namespace flashsim::lessons;

namespace {

std::string source(const std::string& rel) {
  std::ifstream f(std::string(FLASHSIM_SOURCE_DIR) + "/" + rel);
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

Verdict check(const std::string& lesson, const std::string& part, const std::string& text) {
  Lesson l = find_lesson(lesson);
  const Part* p = l.find_part(part);
  REQUIRE(p != nullptr);
  return check_text(l, *p, text, "test.fsa");
}

std::string problems(const Verdict& v) {
  std::string s;
  for (const auto& p : v.problems) s += p + "\n";
  return s;
}

bool mentions(const Verdict& v, const std::string& what) { return problems(v).find(what) != std::string::npos; }

double busy(const Verdict& v, const char* unit) {
  for (std::size_t u = 0; u < 4; ++u)
    if (std::string(unit) == std::array<const char*, 4>{"memory", "tensor", "special", "vector"}[u]) return v.counts.busy[u];
  FAIL("no unit " << unit);
  return 0;
}

}  // namespace

TEST_CASE("lesson 16: the next S under this softmax meets the cycle budget at d = 64 and 128", "[lesson-16]") {
  const std::string sol = source("lessons/16-units-in-parallel/solution.fsa");
  const std::string ex = source("lessons/16-units-in-parallel/exercise.fsa");
  for (const char* part : {"d64", "d128"}) {
    INFO(part);
    Verdict s = check("16", part, sol);
    INFO(problems(s));
    CHECK(s.passed);
    CHECK(s.counts.timed);
    Verdict e = check("16", part, ex);
    CHECK_FALSE(e.passed);
    CHECK(e.counts.timed);
    CHECK_FALSE(mentions(e, "wrong values"));
    CHECK(mentions(e, "cycles on the h100 units; the budget is"));
    CHECK(e.counts.timed_cycles > s.counts.timed_cycles * 1.3);
    // the same work: the order alone changes the time
    CHECK(e.counts.bytes_read == s.counts.bytes_read);
    CHECK(e.counts.instructions == s.counts.instructions);
  }
}

TEST_CASE("lesson 17: consumers kept apart, not met at a barrier, keep the tensor unit busier", "[lesson-17]") {
  Verdict s = check("17", "main", source("lessons/17-ping-pong/solution.fsa"));
  INFO(problems(s));
  CHECK(s.passed);
  const std::string ex = source("lessons/17-ping-pong/exercise.fsa");
  Verdict e = check("17", "main", ex);
  CHECK_FALSE(e.passed);
  CHECK_FALSE(mentions(e, "wrong values"));
  CHECK(mentions(e, "cycles on the h100 units; the budget is"));
  CHECK(mentions(e, "the tensor unit is busy"));
  CHECK(busy(s, "tensor") > busy(e, "tensor") + 0.05);
  CHECK(e.counts.timed_cycles > s.counts.timed_cycles * 1.1);
  // The meetings dropped, no turns: the tensor unit takes products in issue order, so the
  // consumers drift one product apart on their own, as fast as with the turns.
  std::string dropped, line;
  std::istringstream in(ex);
  while (std::getline(in, line))
    if (line.find(" meet") == std::string::npos) dropped += line + "\n";
  Verdict d = check("17", "main", dropped);
  INFO(problems(d));
  CHECK(d.passed);
  CHECK(d.counts.timed_cycles == Approx(s.counts.timed_cycles).epsilon(0.01));
}

TEST_CASE("a timed lesson refuses a trace that changes the units or has none", "[lesson-16][lesson-17]") {
  const std::string sol = source("lessons/16-units-in-parallel/solution.fsa");
  // .unit: a faster special unit would pass any order
  Verdict unit = check("16", "d64", replaced(sol, ".units h100\n", ".units h100\n.unit special rate=1000\n"));
  CHECK(unit.refused);
  CHECK(mentions(unit, "test.fsa:8:1: error: .unit changes a unit's rate or latency"));
  Verdict latency = check("17", "main", replaced(source("lessons/17-ping-pong/solution.fsa"), ".units h100\n",
                                                 ".units h100\n.unit tensor latency=0\n"));
  CHECK(latency.refused);
  // no .units: the trace would not be timed at all
  Verdict none = check("16", "d64", replaced(sol, ".units h100\n", ""));
  CHECK(none.refused);
  CHECK(mentions(none, "test.fsa:1:1: error: this lesson's machine is timed on the h100 preset; add the line '.units h100'"));
  // another preset
  Verdict h200 = check("17", "main", replaced(source("lessons/17-ping-pong/solution.fsa"), ".units h100", ".units h200"));
  CHECK(h200.refused);
  CHECK(mentions(h200, "your trace declares .units h200, but the lesson's machine is timed on the h100 preset"));
  // an untimed lesson refuses .unit as well
  Verdict l11 = check("11", "main", replaced(source("lessons/11-fa1-vs-fa2/solution.fsa"), ".dtype f64\n",
                                             ".dtype f64\n.units h100\n.unit vector rate=2\n"));
  CHECK(l11.refused);
  CHECK(mentions(l11, ".unit changes a unit's rate or latency"));
}

TEST_CASE("a timed lesson reports a deadlock as a problem, not a crash", "[lesson-17]") {
  // consumer 1 never gives the first turn away
  Verdict v = check("17", "main", replaced(source("lessons/17-ping-pong/solution.fsa"), ".stream consumer1\n.arrive turn0\n", ""));
  CHECK_FALSE(v.passed);
  CHECK_FALSE(v.refused);
  CHECK(mentions(v, "the time model cannot time your trace"));
  CHECK(mentions(v, "deadlock"));
}

TEST_CASE("lesson specs: units, max_timed_cycles and min_busy", "[lessons]") {
  flashsim::test::ScratchDir tmp;
  auto dir = tmp.dir() / "96-timed";
  std::filesystem::create_directories(dir);
  const std::string head = "solution = s.fsa\nreference = tile-attention\nregs = 2\narray = Q[4][4] tile[2][2] elem 2\noutputs = Q\n";
  std::ofstream(dir / "check.spec") << head << "units = a100\n";
  CHECK_THROWS_WITH(load_lesson(dir.string()), Catch::Contains("check.spec:6:9: error: units is a GPU preset (h100, h200)"));
  std::ofstream(dir / "check.spec") << head << "units = h100\nmin_busy = warp 0.5\n";
  CHECK_THROWS_WITH(load_lesson(dir.string()), Catch::Contains("min_busy is 'UNIT FRACTION'"));
  std::ofstream(dir / "check.spec") << head << "units = h100\nmin_busy = tensor 1.5\n";
  CHECK_THROWS_WITH(load_lesson(dir.string()), Catch::Contains("min_busy's fraction lies in (0, 1]"));
  std::ofstream(dir / "check.spec") << head << "units = H100\nmax_timed_cycles = 900\nmin_busy = tensor 0.75\n";
  Lesson l = load_lesson(dir.string());
  const Part& p = l.parts.front();
  CHECK(p.units == "h100");
  CHECK(p.max_timed_cycles == Approx(900));
  REQUIRE(p.min_busy.size() == 1);
  CHECK(timing_budget_text(p) == "timed cycles <= 900, tensor busy >= 75.0%");
}

TEST_CASE("flashsim lesson list names the time budgets", "[lesson-list]") {
  auto [status, out] = run_command(std::string(FLASHSIM_EXE) + " lesson list");
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find("16:d64  17 registers;") != std::string::npos);
  CHECK(out.find("timed cycles <= ") != std::string::npos);
  CHECK(out.find("tensor busy >= ") != std::string::npos);
}

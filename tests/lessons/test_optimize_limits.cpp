// Long searches: progress reports, the time limit, and what `flashsim optimize` prints when the
// limit stops a search (the best schedule known, the proven bound, "NOT PROVEN OPTIMAL").
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "sim/optimize.h"
#include "sim/optimize_softmax.h"
#include "run_command.h"
#include "tests/scratch_dir.h"

using namespace flashsim;

namespace {

// 3x3x3 on 4 registers runs for minutes: the instance of issue 18.
sim::MatmulSearch big_matmul(double limit) {
  sim::MatmulSearch p;
  p.m = p.k = p.n = 3;
  p.regs = 4;
  p.limits.time_limit_seconds = limit;
  return p;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::uint64_t number_after(const std::string& text, const std::string& label) {
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex(label + R"( (\d+))")));
  return std::stoull(m[1]);
}

}  // namespace

TEST_CASE("a search stops at its time limit with the bound it proved", "[optimize][limits]") {
  auto p = big_matmul(1.5);  // long enough for two reports even when a sanitizer slows each expansion
  std::vector<sim::SearchProgress> reports;
  p.limits.report_every_seconds = 0.1;
  p.limits.report = [&](const sim::SearchProgress& r) { reports.push_back(r); };
  auto t0 = std::chrono::steady_clock::now();
  try {
    sim::optimize_matmul(p);
    FAIL("3x3x3 on 4 registers should not finish in 1.5 s");
  } catch (const sim::SearchStopped& t) {
    CHECK(seconds_since(t0) < 10);
    CHECK(t.at.seconds >= 1.5);
    CHECK(t.at.stored > 0);
    CHECK(std::string(t.at.bound_unit) == "cycles");
    // Every operand once (18 LOADs), 27 MACs, 9 STOREs: the start bound; the search only raises it.
    CHECK(t.at.bound >= 54);
    REQUIRE(reports.size() >= 2);
    for (std::size_t i = 1; i < reports.size(); ++i) {
      CHECK(reports[i].seconds >= reports[i - 1].seconds + 0.09);  // at most one per interval
      CHECK(reports[i].bound >= reports[i - 1].bound);             // A* pops in order of its bound
      CHECK(reports[i].stored >= reports[i - 1].stored);
    }
    CHECK(t.at.bound >= reports.back().bound);
  }
}

TEST_CASE("a search that finishes inside its limit is unchanged", "[optimize][limits]") {
  sim::MatmulSearch p;
  p.regs = 3;
  p.limits.time_limit_seconds = 60;
  auto r = sim::optimize_matmul(p);
  CHECK(r.cycles == 25);  // lesson 02's proved optimum
  sim::SoftmaxSearch s;
  s.n = 2;
  s.regs = 3;
  s.limits.time_limit_seconds = 60;
  CHECK(sim::optimize_softmax(s).cycles == 12);
}

TEST_CASE("the softmax search reports its bound in LOADs under --objective loads", "[optimize][limits]") {
  sim::SoftmaxSearch s;
  s.n = 4;
  s.regs = 4;
  s.allow_spills = true;
  s.objective = sim::SoftmaxSearch::Objective::Loads;
  s.limits.time_limit_seconds = 0.3;
  try {
    sim::optimize_softmax(s);
    SUCCEED("finished inside the limit");
  } catch (const sim::SearchStopped& t) {
    CHECK(std::string(t.at.bound_unit) == "LOADs");
    CHECK(t.at.bound >= 4);  // each x[i] read at least once
  }
}

TEST_CASE("flashsim optimize matmul --time-limit prints the best known schedule and the proven bound",
          "[optimize][limits][cli]") {
  flashsim::test::ScratchDir tmp;
  const std::string trace = tmp.path("best.fsa"), err = tmp.path("stderr.txt");
  auto t0 = std::chrono::steady_clock::now();
  // The parentheses keep stderr apart: run_command adds 2>&1 to the whole line.
  auto [status, out] = run_command("(" + std::string(FLASHSIM_EXE) + " optimize matmul --n 3 --regs 4 --time-limit 2.5 -o " +
                                   trace + " 2>" + err + ")");
  const double took = seconds_since(t0);
  INFO(out);
  CHECK(status == 0);
  CHECK(took < 15);
  CHECK(out.find("NOT PROVEN OPTIMAL: the time limit stopped the search after") != std::string::npos);
  CHECK(out.find("the row is the best schedule known (") != std::string::npos);
  CHECK(out.find("rows marked NOT PROVEN OPTIMAL excepted") != std::string::npos);
  CHECK(out.find("The best schedule known (not proven optimal) written to " + trace) != std::string::npos);
  const std::uint64_t bound = number_after(out, "proven lower bound");
  std::smatch row;
  REQUIRE(std::regex_search(out, row, std::regex(R"(\n\s+4\s+(\d+)\s+(\d+)\s+27\s+9\s+-)")));
  const std::uint64_t known = std::stoull(row[1]);
  CHECK(bound >= 54);
  CHECK(bound <= known);

  // Progress went to stderr about once a second.
  std::ifstream e(err);
  std::string progress((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  INFO(progress);
  const std::regex line(R"(flashsim optimize 3x3x3 on 4 registers: \d+ states \(\d+ expanded\), [\d.]+ s, lower bound \d+ cycles)");
  auto lines = std::distance(std::sregex_iterator(progress.begin(), progress.end(), line), std::sregex_iterator());
  CHECK(lines >= 1);
  CHECK(lines <= 3);

  // The schedule printed is labelled in the file too, and runs with the cycles the row shows.
  auto [rs, ran] = run_command(std::string(FLASHSIM_EXE) + " run --no-table " + trace);
  INFO(ran);
  CHECK(rs == 0);
  CHECK(ran.find("cycles        " + std::to_string(known) + "\n") != std::string::npos);
  std::ifstream f(trace);
  std::string first;
  std::getline(f, first);
  CHECK(first.rfind("# NOT PROVEN OPTIMAL", 0) == 0);

  // --quiet: no progress lines.
  auto [qs, quiet] = run_command(std::string(FLASHSIM_EXE) + " optimize matmul --n 3 --regs 4 --time-limit 1.2 --quiet 2>&1 >/dev/null");
  CHECK(qs == 0);
  CHECK(quiet.empty());
}

TEST_CASE("flashsim optimize softmax --time-limit labels the schedule it prints", "[optimize][limits][cli]") {
  // n = 4 on 4 registers with spills runs for minutes (see --help).
  auto [status, out] = run_command(std::string(FLASHSIM_EXE) +
                                   " optimize softmax --n 4 --regs 4 --spills --time-limit 1 --quiet");
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find("NOT PROVEN OPTIMAL: the time limit stopped the search") != std::string::npos);
  CHECK(out.find("the row is the best schedule known (three-pass softmax)") != std::string::npos);
  CHECK(out.find("Verified: the trace ran") != std::string::npos);
  CHECK(out.find("The best schedule known (not proven optimal):\n# NOT PROVEN OPTIMAL") != std::string::npos);
  // 4 LOADs, 4 STOREs, 3 MAX, 4 SUB, 4 EXP, 3 ADD, 4 DIV: every op once.
  const std::uint64_t bound = number_after(out, "proven lower bound");
  CHECK(bound >= 26);
  CHECK(bound <= 43);
  auto [hs, help] = run_command(std::string(FLASHSIM_EXE) + " optimize softmax --help");
  CHECK(help.find("--time-limit") != std::string::npos);
  CHECK(help.find("n = 4 --spills") != std::string::npos);
}

TEST_CASE("flashsim optimize --help says which sizes finish and how long they take", "[optimize][limits][cli]") {
  auto [status, help] = run_command(std::string(FLASHSIM_EXE) + " optimize matmul --help");
  INFO(help);
  CHECK(status == 0);
  CHECK(help.find("--time-limit") != std::string::npos);
  CHECK(help.find("2x2x2") != std::string::npos);
  CHECK(help.find("3x3x3") != std::string::npos);
}

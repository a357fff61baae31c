// The time model's lanes (sim/timeline.h) and what `flashsim run` prints and writes for a program
// with .units: the time block, the JSON "timing" key, Perfetto lanes, a deadlock as a text error.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "isa/assembler.h"
#include "main_helpers.h"
#include "sim/timeline.h"
#include "sim/timing.h"
#include "tests/json_check.h"
#include "tests/scratch_dir.h"

using namespace flashsim;
using flashsim::test::Json;
using flashsim::test::parse_json;

namespace {

// Free loads; EXP (special) and ADD (vector) do one element a cycle; 2x2 tiles. The two loads
// issue at cycles 0 and 1 (one asynchronous instruction a cycle) from stream "load".
const char* kTwoStreams =
    ".units h100\n"
    ".unit memory rate=1e9 latency=0\n"
    ".unit tensor rate=8 latency=0\n"
    ".unit special rate=1 latency=0\n"
    ".unit vector rate=1 latency=0\n"
    ".array x[2][2] tile[2][2]\n"
    ".array y[2][2] tile[2][2]\n"
    ".stream load\n"
    "LOAD x[0][0], R0\n"
    "LOAD y[0][0], R2\n"
    ".stream a\n"
    "EXP R0, R1\n"
    ".stream b\n"
    "ADD R2, R2, R3\n"
    "MUL R3, R2, R4\n";

std::string write_temp(const flashsim::test::ScratchDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const sim::TimelineLane& lane(const sim::Timeline& t, const std::string& name) {
  for (const auto& l : t.lanes)
    if (l.name == name) return l;
  FAIL("no lane " << name);
  return t.lanes.front();
}

}  // namespace

TEST_CASE("timeline: a lane per unit and per stream, each instruction a bar on both", "[timing][timeline]") {
  auto r = sim::time_program(isa::assemble(kTwoStreams, "two.fsa"));
  // EXP runs 0..4 on the special unit (x is loaded at 0); ADD 1..5 and MUL 5..9 on the vector unit.
  REQUIRE(r.cycles == Approx(9).margin(1e-3));
  const sim::Timeline t = sim::build_timeline(r);
  REQUIRE(t.lanes.size() == 4 + 3);
  CHECK(t.lanes[0].name == "memory");
  CHECK(t.lanes[3].name == "vector");
  CHECK(t.lanes[4].name == "load");
  CHECK(t.lanes[4].kind == sim::TimelineLane::Kind::Stream);
  CHECK(t.lanes[6].name == "b");

  const auto& special = lane(t, "special");
  REQUIRE(special.bars.size() == 1);
  CHECK(special.bars[0].x0 == Approx(0).margin(1e-3));
  CHECK(special.bars[0].x1 == Approx(4).margin(1e-3));
  CHECK(special.busy_cycles == Approx(4).margin(1e-3));
  CHECK(special.busy_fraction == Approx(4.0 / 9).margin(1e-3));
  CHECK(lane(t, "tensor").bars.empty());
  CHECK(lane(t, "tensor").busy_fraction == 0);

  const auto& vector = lane(t, "vector");
  REQUIRE(vector.bars.size() == 2);
  CHECK(vector.bars[0].x0 == Approx(1).margin(1e-3));
  CHECK(vector.bars[1].x0 == Approx(5).margin(1e-3));
  CHECK(vector.bars[1].x1 == Approx(9).margin(1e-3));
  CHECK(vector.rows == 1);  // one after the other: one row
  CHECK(vector.busy_fraction == Approx(8.0 / 9).margin(1e-3));
  // The MUL ends the run and waits for the ADD: both critical; the EXP is not.
  CHECK(vector.bars[0].critical);
  CHECK(vector.bars[1].critical);
  CHECK_FALSE(special.bars[0].critical);

  // Stream b's bars are its two instructions; its busy fraction is the cycles they cover.
  const auto& b = lane(t, "b");
  REQUIRE(b.bars.size() == 2);
  CHECK(b.busy_cycles == Approx(8).margin(1e-3));
  // Each step knows its bars.
  REQUIRE(t.places.size() == 5);
  const auto& p = t.places[2];  // the EXP
  CHECK(p.unit_lane == static_cast<std::uint32_t>(isa::Unit::Special));
  CHECK(t.lanes[p.stream_lane].name == "a");
  CHECK(t.lanes[p.unit_lane].bars[p.unit_bar].step == 2);
  CHECK(t.lanes[p.stream_lane].bars[p.stream_bar].step == 2);
}

TEST_CASE("timeline: overlapping bars of one lane take rows; sub-pixel bars merge", "[timing][timeline]") {
  // Two streams' EXPs share the special unit: both in flight from 1 to 8: two rows.
  const std::string text = std::string(kTwoStreams).substr(0, std::string(kTwoStreams).find(".stream a")) +
                           ".stream a\nEXP R0, R1\n.stream b\nEXP R2, R3\n";
  const sim::Timeline t = sim::build_timeline(sim::time_program(isa::assemble(text, "rows.fsa")));
  const auto& special = lane(t, "special");
  REQUIRE(special.bars.size() == 2);
  CHECK(special.rows == 2);
  CHECK(special.bars[0].row == 0);
  CHECK(special.bars[1].row == 1);
  CHECK(special.busy_fraction == Approx(1).margin(1e-3));

  // A hand-made lane: 100 bars of one cycle each, back to back, in one row.
  sim::TimelineLane l;
  for (int i = 0; i < 100; ++i) l.bars.push_back({static_cast<std::uint64_t>(i), double(i), double(i + 1), 0, i == 50});
  l.max_width = 1;
  CHECK(sim::visible_bars(l, 0, 100, 0.5).size() == 100);  // each wider than a pixel: all kept
  auto merged = sim::visible_bars(l, 0, 100, 10);          // a pixel is 10 cycles: runs merged
  CHECK(merged.size() < 20);
  bool critical = false;
  double covered = 0;
  for (const auto& b : merged) critical = critical || b.critical, covered += b.x1 - b.x0;
  CHECK(critical);  // the critical bar survives the merge
  CHECK(covered == Approx(100));
  auto window = sim::visible_bars(l, 20.5, 30.5, 0.5);  // bars 20..30 intersect [20.5, 30.5]
  REQUIRE(window.size() == 11);
  CHECK(window.front().step == 20);
  CHECK(window.back().step == 30);
}

TEST_CASE("flashsim run on a program with .units prints the time model", "[cli][timing]") {
  flashsim::test::ScratchDir tmp;
  const std::string f = write_temp(tmp, "two.fsa", kTwoStreams);
  auto r = flashsim::test::run_flashsim("run --no-table " + f);
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "cycles        5\n"));  // the machine's own count is unchanged
  // No instruction comes before the first .stream, so there is no "main" stream.
  CHECK(has(r.out, "time model    .units h100, 3 streams (load, a, b)\n"));
  CHECK(has(r.out, "predicted     9 cycles\n"));
  CHECK(has(r.out, "bound         vector\n"));
  CHECK(has(r.out, "special                 4    44.4 %\n"));
  CHECK(has(r.out, "vector                  8    88.9 %\n"));

  auto j = flashsim::test::run_flashsim("run --json " + f);
  REQUIRE(j.status == 0);
  const Json doc = parse_json(j.out);
  const Json& t = doc.at("timing");
  CHECK(t.at("cycles").number == Approx(9).margin(1e-3));
  CHECK(t.at("bound").string == "vector");
  CHECK(t.at("units").at("special").at("busy_cycles").number == Approx(4).margin(1e-3));
  CHECK(t.at("units").at("vector").at("busy_fraction").number == Approx(8.0 / 9).margin(1e-3));
  CHECK(t.at("units").at("tensor").at("busy_fraction").number == 0);
  REQUIRE(t.at("streams").array.size() == 3);
  CHECK(t.at("streams").array[1].string == "a");
  CHECK(doc.at("cycles").number == 5);

  // Without .units: no time block, no "timing" key.
  auto plain = flashsim::test::run_flashsim("run --json " + flashsim::test::source_path("lessons/01-dot-product/solution.fsa"));
  CHECK_FALSE(has(plain.out, "\"timing\""));
  CHECK_FALSE(has(flashsim::test::run_flashsim("run " + flashsim::test::source_path("lessons/01-dot-product/solution.fsa")).out,
                  "time model"));
}

TEST_CASE("flashsim run: a deadlock is an error at its .wait, exit 2", "[cli][timing]") {
  flashsim::test::ScratchDir tmp;
  const std::string f = write_temp(tmp, "dead.fsa",
                                   std::string(kTwoStreams) + ".stream c\n.wait never\nMOV R3, R5\n");
  auto r = flashsim::test::run_flashsim("run " + f);
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(has(r.out, f + ":17:1: error: deadlock"));
  CHECK(has(r.out, "'never'"));
  CHECK_FALSE(has(r.out, "Step |"));  // nothing else printed
  CHECK(flashsim::test::run_flashsim("run --json " + f).status == 2);
}

TEST_CASE("flashsim run --perfetto on a program with .units writes the lanes", "[cli][timing][export]") {
  flashsim::test::ScratchDir tmp;
  const std::string f = write_temp(tmp, "two.fsa", kTwoStreams);
  const std::string json = tmp.path("two.json");
  auto r = flashsim::test::run_flashsim("run --no-table --perfetto " + json + " " + f);
  REQUIRE(r.status == 0);
  const Json doc = parse_json(slurp(json));
  CHECK(doc.at("otherData").at("time_model").boolean);
  std::map<double, std::string> tracks;
  for (const auto& e : doc.at("traceEvents").array)
    if (e.at("ph").string == "M" && e.at("name").string == "thread_name") tracks[e.at("tid").number] = e.at("args").at("name").string;
  std::vector<std::string> names;
  for (const auto& [tid, name] : tracks) names.push_back(name);
  CHECK(names == std::vector<std::string>{"memory unit", "tensor unit", "special unit", "vector unit", "stream load",
                                          "stream a", "stream b"});
  // Every instruction twice (its unit's track and its stream's), from issue to end.
  std::map<std::string, std::vector<const Json*>> on;
  for (const auto& e : doc.at("traceEvents").array)
    if (e.at("ph").string == "X") on[tracks[e.at("tid").number]].push_back(&e);
  REQUIRE(on["vector unit"].size() == 2);
  REQUIRE(on["stream b"].size() == 2);
  REQUIRE(on["special unit"].size() == 1);
  const Json& mul = *on["vector unit"][1];
  CHECK(mul.at("name").string == "MUL (critical)");
  CHECK(mul.at("ts").number == Approx(5));
  CHECK(mul.at("dur").number == Approx(4));
  CHECK(mul.at("args").at("critical").boolean);
  CHECK(mul.at("args").at("stream").string == "b");
  CHECK(mul.at("args").at("step").number == 5);
  const Json& exp = *on["special unit"][0];
  CHECK(exp.at("name").string == "EXP");
  CHECK_FALSE(exp.at("args").at("critical").boolean);
  CHECK(on["stream a"].size() == 1);
  // The DRAM counter ends at the bytes the loads moved.
  double read = 0;
  for (const auto& e : doc.at("traceEvents").array)
    if (e.at("ph").string == "C") read = e.at("args").at("read").number;
  CHECK(read == 32);
}

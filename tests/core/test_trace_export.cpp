// flashsim run --trace-csv / --perfetto (sim/trace_export.h): what is written is parsed back,
// on the scalar and the tile machine, with costs, and up to a fault.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "main_helpers.h"
#include "sim/trace_export.h"
#include "tests/json_check.h"
#include "tests/scratch_dir.h"

using flashsim::test::Json;
using flashsim::test::parse_csv;
using flashsim::test::parse_json;

namespace {

int run_flashsim(const std::string& args, std::string* printed = nullptr) {
  FILE* p = popen((std::string(FLASHSIM_EXE) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  int st = pclose(p);
  if (printed) *printed = out;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<const Json*> events(const Json& doc, const std::string& ph) {
  std::vector<const Json*> out;
  for (const auto& e : doc.at("traceEvents").array)
    if (e.at("ph").string == ph) out.push_back(&e);
  return out;
}

std::string track_name(const Json& doc, double tid) {
  for (const auto* m : events(doc, "M"))
    if (m->at("name").string == "thread_name" && m->at("tid").number == tid) return m->at("args").at("name").string;
  return "";
}

}  // namespace

TEST_CASE("run --trace-csv writes one row per step of the scalar machine", "[cli][export]") {
  flashsim::test::ScratchDir tmp;
  const std::string csv = tmp.path("steps.csv");
  std::string out;
  REQUIRE(run_flashsim("run --no-table --trace-csv " + csv + " --input a=1,2 --input b=5,7 " +
                           flashsim::test::source_path("lessons/01-dot-product/solution.fsa"),
                       &out) == 0);
  INFO(out);
  auto rows = parse_csv(slurp(csv));
  REQUIRE(rows.size() == 8);  // header + 7 steps
  CHECK(rows[0] == std::vector<std::string>{"step", "line", "instruction", "cycle", "bytes_read", "bytes_written",
                                            "registers_written"});
  CHECK(rows[1] == std::vector<std::string>{"1", "3", "LOAD a[0][0], R0", "1", "4", "0", "R0=1"});
  CHECK(rows[3] == std::vector<std::string>{"3", "5", "MAC_Z R0, R1, R2", "3", "8", "0", "R2=5"});
  CHECK(rows[6] == std::vector<std::string>{"6", "8", "MAC R0, R1, R2, R2", "6", "16", "0", "R2=19"});
  CHECK(rows[7] == std::vector<std::string>{"7", "9", "STORE R2, c[0][0]", "7", "16", "4", ""});
  // The run's summary agrees with the last row.
  CHECK(out.find("DRAM reads    4 elements (16 bytes)") != std::string::npos);
}

TEST_CASE("run --perfetto writes trace-event JSON: a track per unit, slices in cycles, a DRAM counter",
          "[cli][export]") {
  flashsim::test::ScratchDir tmp;
  const std::string json = tmp.path("run.json");
  REQUIRE(run_flashsim("run --no-table --cost LOAD=10 --perfetto " + json + " " +
                       flashsim::test::source_path("lessons/01-dot-product/solution.fsa")) == 0);
  Json doc = parse_json(slurp(json));
  auto slices = events(doc, "X");
  REQUIRE(slices.size() == 7);
  CHECK(track_name(doc, 1) == "load/store unit");
  CHECK(track_name(doc, 2) == "compute unit");
  // LOAD costs 10 here: LOAD LOAD MAC_Z LOAD LOAD MAC STORE start at 0 10 20 21 31 41 42.
  const double starts[] = {0, 10, 20, 21, 31, 41, 42}, durs[] = {10, 10, 1, 10, 10, 1, 1};
  const char* names[] = {"LOAD", "LOAD", "MAC_Z", "LOAD", "LOAD", "MAC", "STORE"};
  for (std::size_t i = 0; i < 7; ++i) {
    INFO("slice " << i);
    CHECK(slices[i]->at("name").string == names[i]);
    CHECK(slices[i]->at("ts").number == starts[i]);
    CHECK(slices[i]->at("dur").number == durs[i]);
    CHECK(slices[i]->at("tid").number == (names[i][0] == 'M' ? 2 : 1));
    CHECK(slices[i]->at("args").at("step").number == static_cast<double>(i + 1));
  }
  CHECK(slices[2]->at("args").at("instruction").string == "MAC_Z R0, R1, R2");
  CHECK(slices[2]->at("args").at("line").number == 5);
  auto counters = events(doc, "C");
  REQUIRE(counters.size() == 6);  // the zero at ts 0, then after each LOAD and the STORE
  double last_ts = -1;
  for (const auto* c : counters) {
    CHECK(c->at("name").string == "DRAM bytes");
    CHECK(c->at("ts").number >= last_ts);
    last_ts = c->at("ts").number;
  }
  CHECK(counters.back()->at("ts").number == 43);
  CHECK(counters.back()->at("args").at("read").number == 16);
  CHECK(counters.back()->at("args").at("written").number == 4);
}

TEST_CASE("the exports follow the tile machine: bytes per tile move, registers hold tiles", "[cli][export][tile]") {
  flashsim::test::ScratchDir tmp;
  const std::string csv = tmp.path("tile.csv"), json = tmp.path("tile.json");
  const std::string trace = flashsim::test::source_path("lessons/10-element-is-tile/solution.fsa");
  REQUIRE(run_flashsim("run --no-table --trace-csv " + csv + " --perfetto " + json + " " + trace) == 0);
  auto m = flashsim::test::run_program(flashsim::test::load("lessons/10-element-is-tile/solution.fsa"), {});
  const auto& c = m.counters();
  REQUIRE(c.bytes_read > 0);
  auto rows = parse_csv(slurp(csv));
  REQUIRE(rows.size() == m.size() + 1);
  CHECK(rows.back()[3] == std::to_string(c.cycles));
  CHECK(rows.back()[4] == std::to_string(c.bytes_read));
  CHECK(rows.back()[5] == std::to_string(c.bytes_written));
  bool tile_register = false;
  for (const auto& r : rows) tile_register |= r[6].find(" tile") != std::string::npos;
  CHECK(tile_register);
  Json doc = parse_json(slurp(json));
  CHECK(events(doc, "X").size() == m.size());
  auto counters = events(doc, "C");
  REQUIRE_FALSE(counters.empty());
  CHECK(counters.back()->at("args").at("read").number == static_cast<double>(c.bytes_read));
  CHECK(counters.back()->at("args").at("written").number == static_cast<double>(c.bytes_written));
}

TEST_CASE("a fault ends the exports at the faulting step, still well-formed", "[cli][export]") {
  flashsim::test::ScratchDir tmp;
  const std::string trace = tmp.path("div.fsa"), csv = tmp.path("div.csv"), json = tmp.path("div.json");
  std::ofstream(trace) << "LOAD x[0], R0\nDIV R0, R0, R1\nSTORE R1, y[0]\n";
  std::string out;
  CHECK(run_flashsim("run --input x=0 --trace-csv " + csv + " --perfetto " + json + " " + trace, &out) == 1);
  CHECK(out.find("step 2 (line 2): error: division by zero") != std::string::npos);
  CHECK(parse_csv(slurp(csv)).size() == 2);  // header + the LOAD
  CHECK(events(parse_json(slurp(json)), "X").size() == 1);
  // A file that cannot be written is bad input.
  CHECK(run_flashsim("run --trace-csv " + tmp.path("no/such/dir.csv") + " " + trace, &out) == 2);
  CHECK(out.find("--trace-csv: cannot write '" + tmp.path("no/such/dir.csv") + "'") != std::string::npos);
}

TEST_CASE("the test's JSON and CSV readers reject what a viewer would reject", "[export]") {
  CHECK_THROWS(parse_json("{\"a\":1,}"));
  CHECK_THROWS(parse_json("{\"a\":1}{"));
  CHECK_THROWS(parse_json("[1, 2"));
  CHECK_THROWS(parse_json("{\"a\":01}"));
  CHECK_THROWS(parse_json("\"tab\there\""));
  CHECK(parse_json(" {\"a\":[1,-2.5e3,true,null,\"x\\\"y\"]} ").at("a").array.size() == 5);
  CHECK_THROWS(parse_csv("a,\"b\n"));
  CHECK(parse_csv("a,\"b,c\",\"d\"\"e\"\n")[0] == std::vector<std::string>{"a", "b,c", "d\"e"});
}

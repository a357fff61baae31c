// The L2 of one run: the .l2 directive, sim::TraceL2 on traces small enough to count by hand, its
// replay after step_back, and `flashsim run --l2`. Each expected number is derived in a comment.
#include <catch2/catch.hpp>

#include <fstream>

#include "isa/assembler.h"
#include "main_helpers.h"
#include "sim/l2_trace.h"
#include "sim/machine.h"
#include "tests/json_check.h"
#include "tests/scratch_dir.h"

using namespace flashsim;

namespace {

// x[16] of 4-byte elements read twice in order: 64 bytes, four 16-byte lines.
std::string two_passes(const std::string& l2) {
  std::string s = l2 + "\n.array x[16]\n";
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < 16; ++i) s += "LOAD x[" + std::to_string(i) + "], R0\n";
  return s;
}

sim::Machine machine_of(const std::string& text) {
  sim::MachineOptions mo;
  return sim::Machine(isa::assemble(text, "t.fsa"), mo);
}

std::string run_cli(const std::string& args, int& status) {
  auto r = flashsim::test::run_flashsim(args);
  status = r.status;
  return r.out;
}

}  // namespace

TEST_CASE(".l2 declares the machine's L2 and survives disassembly", "[l2][assembler]") {
  auto p = isa::assemble(".l2 4*1024 line=64 sector=16\nLOAD x[0], R0\n", "t.fsa");
  REQUIRE(p.config.l2);
  CHECK(p.config.l2->capacity_bytes == 4096);
  CHECK(p.config.l2->line_bytes == 64);
  CHECK(p.config.l2->sector_bytes == 16);
  auto again = isa::assemble(isa::disassemble(p), "again.fsa");
  CHECK(isa::same_program(p, again));
  auto hopper = isa::assemble(".l2 1024\nLOAD x[0], R0\n", "t.fsa");
  CHECK(hopper.config.l2->line_bytes == 128);  // Hopper's line and sector by default
  CHECK(hopper.config.l2->sector_bytes == 32);
  CHECK_FALSE(isa::assemble("LOAD x[0], R0\n", "t.fsa").config.l2);
}

TEST_CASE(".l2 errors name the line and column", "[l2][assembler]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(isa::assemble(".l2 512\n.l2 1024\nLOAD x[0], R0\n", "t.fsa"),
                    Contains("t.fsa:2:1: error: .l2 is already set on line 1"));
  CHECK_THROWS_WITH(isa::assemble(".l2 -1\n", "t.fsa"), Contains("t.fsa:1:5: error: L2 size must be positive"));
  CHECK_THROWS_WITH(isa::assemble(".l2 512 line=48\n", "t.fsa"), Contains("line size must be a power of two, got 48"));
  CHECK_THROWS_WITH(isa::assemble(".l2 512 line=128 sector=2\n", "t.fsa"), Contains("1 to 32 sectors"));
  CHECK_THROWS_WITH(isa::assemble(".l2 64 line=128\n", "t.fsa"), Contains("holds no 128-byte line"));
  CHECK_THROWS_WITH(isa::assemble(".l2 512 ways=4\n", "t.fsa"), Contains("t.fsa:1:9: error: unknown .l2 option 'ways'"));
  CHECK_THROWS_WITH(isa::assemble(".l2\n", "t.fsa"), Contains("t.fsa:1:"));
}

TEST_CASE("TraceL2: a re-read within capacity hits, a sweep larger than it misses again", "[l2]") {
  {
    // 64-byte L2 holds all four lines: pass 1 misses each line's one sector once (4) and hits the
    // other 12 reads; pass 2 hits all 16. DRAM sees each line once: 64 bytes.
    sim::Machine m = machine_of(two_passes(".l2 64 line=16"));
    m.run();
    sim::TraceL2 l2(m, *m.config().l2);
    CHECK(l2.total().misses == 4);
    CHECK(l2.total().hits == 28);
    CHECK(l2.total().hbm_read == 64);
    CHECK(m.counters().bytes_read == 128);  // the requested bytes are unchanged
  }
  {
    // 32 bytes = 2 lines, LRU: in pass 2 line 0 was evicted by line 2, line 1 by line 3, and so on:
    // 4 more misses, 128 bytes of DRAM.
    sim::Machine m = machine_of(two_passes(".l2 32 line=16"));
    m.run();
    sim::TraceL2 l2(m, *m.config().l2);
    CHECK(l2.total().misses == 8);
    CHECK(l2.total().hits == 24);
    CHECK(l2.total().hbm_read == 128);
    CHECK(l2.tile_hbm_reads(0)[0] == 2);  // x[0] went to DRAM in both passes
    CHECK(l2.tile_l2_hits(0)[1] == 2);    // x[1] found its line both times
  }
}

TEST_CASE("TraceL2: a store dirties its sector, written back once at the end", "[l2]") {
  // Two 4-byte stores into the same 16-byte sector, then a load of it: the load hits (the line was
  // allocated by the store, no DRAM read), and one sector (16 bytes) goes back at the end.
  sim::Machine m = machine_of(".l2 64 line=16\n.array x[4]\n.array y[4]\n.input x 1,2,3,4\n"
                              "LOAD x[0], R0\nSTORE R0, y[0]\nSTORE R0, y[1]\nLOAD y[1], R1\n");
  sim::TraceL2 l2(m, *m.config().l2);
  m.step();
  m.step();
  l2.sync(m);
  CHECK(l2.last().write);
  CHECK(l2.dirty_bytes() == 16);
  CHECK(l2.total().hbm_written == 0);  // not yet: the line is still in the L2
  m.run();
  l2.sync(m);
  CHECK(l2.flushed());
  CHECK(l2.array(1).hbm_written == 16);
  CHECK(l2.array(1).hbm_read == 0);
  CHECK(l2.last().hits == 1);
  CHECK(l2.total().hbm_read == 16);  // x's one line
}

TEST_CASE("TraceL2: stepping back replays the cache to the same state", "[l2]") {
  sim::Machine m = machine_of(two_passes(".l2 32 line=16"));
  sim::TraceL2 l2(m, *m.config().l2);
  m.run_to(20);
  l2.sync(m);
  const sim::L2Counts at20 = l2.total();
  const std::uint64_t resident20 = l2.resident_bytes();
  m.run();
  l2.sync(m);
  CHECK(l2.total().misses == 8);
  m.run_to(20);  // back through the undo log
  l2.sync(m);
  CHECK(l2.position() == 20);
  CHECK(l2.total().hits == at20.hits);
  CHECK(l2.total().misses == at20.misses);
  CHECK(l2.resident_bytes() == resident20);
  CHECK_FALSE(l2.flushed());
  m.run();
  l2.sync(m);
  CHECK(l2.total().misses == 8);
}

TEST_CASE("flashsim run --l2: the L2 column, the summary and the JSON keys", "[l2][cli]") {
  flashsim::test::ScratchDir tmp;
  const std::string path = tmp.path("two.fsa");
  std::ofstream(path) << two_passes("");
  int status = 0;
  std::string table = run_cli("run " + path + " --l2 32 --l2-line 16", status);
  CHECK(status == 0);
  CHECK(table.find("Step | Instruction    | L2   | R0") != std::string::npos);
  CHECK(table.find("L2            32 bytes, 16-byte lines of 16-byte sectors: 24 sector hits, 8 misses (75.0% hit)") !=
        std::string::npos);
  CHECK(table.find("HBM reads     128 bytes (100.0% of the bytes read)") != std::string::npos);
  std::string json = run_cli("run --json " + path + " --l2 64 --l2-line 16", status);
  REQUIRE(status == 0);
  auto doc = flashsim::test::parse_json(json);
  CHECK(doc.at("l2").at("capacity_bytes").number == 64);
  CHECK(doc.at("l2").at("hbm_bytes_read").number == 64);
  CHECK(doc.at("l2").at("hits").number == 28);
  CHECK(doc.at("arrays").at("x").at("hbm_bytes_read").number == 64);
  CHECK(doc.at("arrays").at("x").at("l2_misses").number == 4);
  // without an L2 the JSON is what it always was
  std::string plain = run_cli("run --json " + path, status);
  CHECK(plain.find("\"l2\"") == std::string::npos);
  CHECK(plain.find("hbm_") == std::string::npos);
  for (const char* bad : {"--l2 -1", "--l2 0x", "--l2 abc", "--l2 64 --l2-line 48", "--l2-line 16"}) {
    std::string out = run_cli("run " + path + " " + bad, status);
    INFO(bad << ": " << out);
    CHECK(status == 2);
    CHECK(out.find("error") != std::string::npos);
  }
}

// The time model (sim/timing.h) on hand-computed cases: units overlap, dependencies wait for
// latency, one unit's rate is shared, barriers order streams, deadlocks are reported.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "isa/assembler.h"
#include "main_helpers.h"
#include "sim/machine.h"
#include "sim/gpu_time.h"
#include "sim/split_tail.h"
#include "sim/timing.h"
#include "tests/json_check.h"
#include "tests/scratch_dir.h"

using namespace flashsim;

namespace {
// Loads are free (rate 1e9, no latency) so that only the units under test take time. Every unit
// does one element (or FLOP) a cycle with no latency unless a case says otherwise.
const char* kHeader =
    ".units h100\n"
    ".unit memory rate=1e9 latency=0\n"
    ".unit tensor rate=8 latency=0\n"
    ".unit special rate=1 latency=0\n"
    ".unit vector rate=1 latency=0\n"
    ".array x[2][2] tile[2][2]\n"
    ".array y[2][2] tile[2][2]\n"
    "LOAD x[0][0], R0\n"
    "LOAD y[0][0], R2\n";

sim::TimingResult time_text(const std::string& body, const std::string& header = kHeader) {
  return sim::time_program(isa::assemble(header + body, "t.fsa"));
}
// The two loads issue at cycles 0 and 1 (a stream issues one asynchronous instruction a cycle)
// and move their bytes in no time.
double cycles(const std::string& body, const std::string& header = kHeader) { return time_text(body, header).cycles; }

// An attention forward query at d = 128 (bf16 unless fp8: e4m3 Q, K, V and P).
sim::TimeQuery forward_d128(std::int64_t n, std::int64_t heads, bool fp8) {
  sim::TimeQuery q;
  q.n = n;
  q.d = 128;
  q.heads = heads;
  q.fp8 = fp8;
  q.elem_bytes = fp8 ? 1 : 2;
  return q;
}
}  // namespace

TEST_CASE("two independent instructions on different units overlap", "[timing]") {
  // EXP: 4 elements at 1 a cycle from 0 (x is loaded at 0); ADD: 4 elements at 1 a cycle on the
  // vector unit from 1 (y is loaded at 1): done at 5, not 8.
  CHECK(cycles(".stream a\nEXP R0, R1\n.stream b\nADD R2, R2, R3\n") == Approx(5).margin(1e-3));
  // One stream's warps run its vector and special instructions one after the other: 2 + 4 + 4.
  CHECK(cycles("EXP R0, R1\nADD R2, R2, R3\n") == Approx(10).margin(1e-3));
}

TEST_CASE("a tensor product runs while its stream goes on", "[timing]") {
  // MAC_Z of two 2x2 tiles: 16 FLOPs at 8 a cycle, cycles 2-4, asynchronous; the ADD is issued
  // at 3 and does its 4 elements at the preset's beside_tensor share of its rate while the product
  // runs (3 to 4), at the full rate after: done at 4 + (4 - f).
  const double f = isa::find_gpu_preset("h100")->beside_tensor;
  REQUIRE(f > 0);
  REQUIRE(f < 1);
  auto r = time_text("MAC_Z R0, R2, R4\nADD R2, R2, R3\n");
  CHECK(r.cycles == Approx(8 - f).margin(1e-3));
  CHECK(r.units[static_cast<int>(isa::Unit::Tensor)].busy_cycles == Approx(2));
  CHECK(r.units[static_cast<int>(isa::Unit::Vector)].busy_cycles == Approx(4));
}

TEST_CASE("the tensor unit takes products in the order they were issued", "[timing]") {
  // Two streams issue a 16-FLOP product each at cycle 1 (y is loaded at 1); at 8 FLOPs a cycle
  // the first issued runs 1-3 and the second 3-5, one after the other, not both 1-5 at half rate.
  auto r = time_text(".stream a\nMAC_Z R0, R2, R4\n.stream b\nMAC_Z R2, R0, R5\n");
  REQUIRE(r.steps.size() == 4);
  CHECK(r.steps[2].end == Approx(3).margin(1e-3));
  CHECK(r.steps[3].end == Approx(5).margin(1e-3));
  CHECK(r.cycles == Approx(5).margin(1e-3));
}

TEST_CASE("a dependent instruction waits for its producer's latency", "[timing]") {
  std::string h = kHeader;
  h.replace(h.find(".unit tensor rate=8 latency=0"), 29, ".unit tensor rate=8 latency=10");
  // The product runs from 2 to 4 and is usable at 14; the ADD then takes 4 cycles.
  auto r = time_text("MAC_Z R0, R2, R4\nADD R4, R4, R5\n", h);
  CHECK(r.cycles == Approx(18).margin(1e-3));
  REQUIRE(r.steps.size() == 4);
  CHECK(r.steps[3].issue == Approx(14).margin(1e-3));
  CHECK(r.steps[3].critical);
  CHECK(r.steps[2].critical);
}

TEST_CASE("one unit's rate is shared by the instructions on it", "[timing]") {
  // Two streams, two EXPs of 4 elements on a unit of 1 element a cycle: a alone from 0 to 1, then
  // both at half the rate; 8 elements in all take 8 cycles, not 4.
  auto r = time_text(".stream a\nEXP R0, R1\n.stream b\nEXP R2, R3\n");
  CHECK(r.cycles == Approx(8).margin(1e-3));
  CHECK(r.bound == "special");
  CHECK(r.units[static_cast<int>(isa::Unit::Special)].busy_fraction == Approx(1).margin(1e-3));
}

TEST_CASE("a barrier orders two streams", "[timing]") {
  // b's ADD may start only when a arrives, after its EXP (0 to 4): 4 + 4.
  CHECK(cycles(".stream a\nEXP R0, R1\n.arrive go\n.stream b\n.wait go\nADD R2, R2, R3\n") == Approx(8).margin(1e-3));
  // The arrive may come later in the text than the wait.
  CHECK(cycles(".stream b\n.wait go\nADD R2, R2, R3\n.stream a\nEXP R0, R1\n.arrive go\n") == Approx(8).margin(1e-3));
  // count=2: both streams must arrive; c's two ADDs run from 1 to 9, then b's MOV to 13.
  CHECK(cycles(".barrier go count=2\n.stream a\nEXP R0, R1\n.arrive go\n.stream c\nADD R0, R2, R5\nADD R5, R2, R6\n"
               ".arrive go\n.stream b\n.wait go\nMOV R2, R3\n") == Approx(13).margin(1e-3));
}

TEST_CASE("barriers in loops: one per index, phases counted per stream", "[timing]") {
  auto p = isa::assemble(std::string(kHeader) +
                             ".for j in 0..4\n.stream a\nEXP R0, R1\n.arrive full{j % 2}\n.stream b\n.wait full{j % 2}\n"
                             "ADD R1, R1, R3\n.end\n",
                         "t.fsa");
  CHECK(p.timing.barriers.size() == 2);
  CHECK(p.timing.syncs.size() == 8);
  auto r = sim::time_program(p);
  // Each ADD reads R1 of the EXP before it; the next EXP overwrites R1 only after that ADD read it.
  CHECK(r.cycles == Approx(32).margin(1e-3));
}

TEST_CASE("a wait nobody arrives at is a deadlock, reported with its streams and barrier", "[timing]") {
  try {
    time_text(".stream a\nEXP R0, R1\n.stream b\n.wait never\nADD R2, R2, R3\n");
    FAIL("no deadlock reported");
  } catch (const sim::TimingError& e) {
    const std::string m = e.what();
    CHECK(m.find("deadlock") != std::string::npos);
    CHECK(m.find("'b'") != std::string::npos);
    CHECK(m.find("'never'") != std::string::npos);
    CHECK(e.where.line == 13);
  }
  // Two streams each waiting for the other.
  CHECK_THROWS_AS(time_text(".stream a\n.wait x\n.arrive y\n.stream b\n.wait y\n.arrive x\nEXP R0, R1\n"), sim::TimingError);
  // The error points at the .wait, not at the first stream's LOAD that waits for the stuck ADD to
  // read R5 (it pointed at line 16, as lesson 17 with an .arrive deleted pointed at its producer).
  try {
    time_text(".stream p\nLOAD x[0][0], R5\n.stream c\n.wait never\nADD R5, R5, R6\n.stream p\nLOAD y[0][0], R5\n");
    FAIL("no deadlock reported");
  } catch (const sim::TimingError& e) {
    CHECK(std::string(e.what()).find("stream 'p' waits at line 16") != std::string::npos);
    CHECK(e.where.line == 13);
  }
}

TEST_CASE(".wait_for holds its stream until an asynchronous result is ready", "[timing]") {
  // The product runs 2-4 (16 FLOPs at 8 a cycle). Without the wait the ADD starts at 3 beside it
  // (8 - f, the case above); waiting for R4 it starts at 4, alone, and ends at 8.
  auto r = time_text("MAC_Z R0, R2, R4\n.wait_for R4\nADD R2, R2, R3\n");
  CHECK(r.cycles == Approx(8).margin(1e-3));
  REQUIRE(r.steps.size() == 4);
  CHECK(r.steps[3].issue == Approx(4).margin(1e-3));
  CHECK(r.steps[3].critical);
  CHECK(r.steps[2].critical);  // the chain goes through the wait to the product
  // With the tensor latency 10 the result is ready at 14: 14 + 4.
  std::string h = kHeader;
  h.replace(h.find(".unit tensor rate=8 latency=0"), 29, ".unit tensor rate=8 latency=10");
  CHECK(cycles("MAC_Z R0, R2, R4\n.wait_for R4\nADD R2, R2, R3\n", h) == Approx(18).margin(1e-3));
  // A register with no write before the wait: nothing to wait for (the ADD at 2, alone: 6).
  CHECK(cycles(".wait_for R7\nADD R2, R2, R3\n") == Approx(6).margin(1e-3));
  // The last write before the wait, not a later one: R4's second product (issued after the wait)
  // does not hold the ADD.
  CHECK(cycles("MAC_Z R0, R2, R4\n.wait_for R4\nADD R2, R2, R3\nMAC_Z R0, R0, R4\n") ==
        Approx(cycles("MAC_Z R0, R2, R4\n.wait_for R4\nADD R2, R2, R3\nMAC_Z R0, R0, R5\n")).margin(1e-3));
  // In a loop, R{k} as in an instruction; the wait does not count as a register use.
  auto p = isa::assemble(std::string(kHeader) + ".for j in 0..2\nMAC_Z R0, R2, R{4+j}\n.wait_for R{4+j}\n.end\n", "t.fsa");
  CHECK(p.timing.syncs.size() == 2);
  CHECK(p.timing.syncs[1].reg == 5);
  CHECK(p.highest_reg == 5);
  // A wait for a result that only a blocked stream can compute is a deadlock, not a hang.
  try {
    time_text(".stream a\n.wait go\nMAC_Z R0, R2, R4\n.stream b\n.wait_for R4\n.arrive go\n");
    FAIL("no deadlock reported");
  } catch (const sim::TimingError& e) {
    const std::string m = e.what();
    CHECK(m.find(".wait_for R4") != std::string::npos);
    CHECK(m.find("'go'") != std::string::npos);
  }
}

TEST_CASE("with the units off the machine's counts are today's exactly", "[timing]") {
  const std::string root = FLASHSIM_SOURCE_DIR;
  struct Seed {
    const char* path;
    std::uint64_t cycles;
  };
  for (const Seed& s : {Seed{"/lessons/01-dot-product/solution.fsa", 7}, Seed{"/lessons/02-locality/solution.fsa", 25},
                        Seed{"/lessons/03-outer-product/solution.fsa", 22}}) {
    auto p = isa::assemble_file(root + s.path);
    CHECK(p.timing.empty());
    sim::Machine m(p);
    m.run();
    CHECK(m.counters().cycles == s.cycles);
    // The same trace with units: the machine's count is unchanged; the time model is apart.
    std::ifstream in(root + s.path);
    std::stringstream text;
    text << ".units h100\n" << in.rdbuf();
    auto timed = isa::assemble(text.str(), "timed.fsa");
    sim::Machine mt(timed);
    mt.run();
    CHECK(mt.counters().cycles == s.cycles);
    CHECK(sim::time_program(timed).cycles > 0);
  }
}

TEST_CASE("bad unit descriptions are text errors at their line and column", "[timing]") {
  auto err = [](const std::string& text) {
    try {
      isa::assemble(text, "t.fsa");
    } catch (const isa::AsmError& e) {
      return std::to_string(e.line) + ":" + std::to_string(e.col) + " " + e.message;
    }
    return std::string("no error");
  };
  CHECK(err(".units h100\n.unit warp rate=1\nLOAD x[0], R0\n").rfind("2:7 unknown unit 'warp'", 0) == 0);
  CHECK(err(".units h100\n.unit tensor rate=0\nLOAD x[0], R0\n").rfind("2:19 a unit's rate must be positive", 0) == 0);
  CHECK(err(".units h100\n.unit tensor rate=-3\nLOAD x[0], R0\n").rfind("2:19 a unit's rate must be positive", 0) == 0);
  CHECK(err(".units a100\nLOAD x[0], R0\n").rfind("1:8 unknown GPU preset 'a100'", 0) == 0);
  CHECK(err(".unit tensor rate=1\nLOAD x[0], R0\n").rfind("1:1 .unit needs a .units line", 0) == 0);
  CHECK(err(".units h100\n.unit tensor speed=2\nLOAD x[0], R0\n").rfind("2:14 unknown .unit option 'speed'", 0) == 0);
  CHECK(err(".barrier b count=0\nLOAD x[0], R0\n").rfind("1:18 a barrier's count", 0) == 0);
  CHECK(err(".for i in 0..2\n.units h100\n.end\nLOAD x[0], R0\n").find("not allowed inside a .for loop") != std::string::npos);
  CHECK(err("LOAD x[0], R0\n.wait_for x\n").rfind("2:11 expected a register after .wait_for", 0) == 0);
  CHECK(err(".regs 4\nLOAD x[0], R0\n.wait_for R9\n").rfind("3:11 R9 is outside the machine", 0) == 0);
  CHECK(err("LOAD x[0], R0\n.wait_for R1^T\n").find("only source registers can be transposed") != std::string::npos);
  CHECK(err("LOAD x[0], R0\n.wait_for R1 R2\n").rfind("2:", 0) == 0);
}

TEST_CASE("streams and barriers survive disassembly", "[timing]") {
  auto p = isa::assemble(std::string(kHeader) + ".barrier go count=2\n.stream a\nEXP R0, R1\n.arrive go\n.stream b\n"
                                                ".wait go\nMOV R2, R4\n.stream c\nADD R2, R2, R3\n.arrive go\n",
                         "t.fsa");
  auto q = isa::assemble(isa::disassemble(p), "again.fsa");
  CHECK(isa::same_program(p, q));
  CHECK(sim::time_program(q).cycles == Approx(sim::time_program(p).cycles));
  // .wait_for too
  auto w = isa::assemble(std::string(kHeader) + ".stream a\nMAC_Z R0, R2, R4\n.wait_for R4\nADD R2, R2, R3\n", "t.fsa");
  const std::string text = isa::disassemble(w);
  CHECK(text.find(".wait_for R4\n") != std::string::npos);
  auto w2 = isa::assemble(text, "again.fsa");
  CHECK(w2.timing == w.timing);
  CHECK(sim::time_program(w2).cycles == Approx(sim::time_program(w).cycles));
}

TEST_CASE("a program without units cannot be timed", "[timing]") {
  auto p = isa::assemble("LOAD x[0], R0\n", "t.fsa");
  CHECK_THROWS_AS(sim::time_program(p), sim::TimingError);
}

TEST_CASE("flashsim time: JSON keys, bound, and bad input exits 2", "[timing][cli]") {
  auto r = test::run_flashsim("time attention --n 4096 --d 128 --heads 8 --gpu h100 --json");
  REQUIRE(r.status == 0);
  for (const char* key : {"\"predicted_ms\"", "\"cycles\"", "\"bound\"", "\"units\"", "\"busy_cycles\"", "\"busy_fraction\"",
                          "\"tensor\"", "\"special\"", "\"memory\"", "\"vector\""})
    CHECK(r.out.find(key) != std::string::npos);
  CHECK(r.out.find("\"bound\": \"tensor\"") != std::string::npos);
  // The softmax streams bytes: HBM bounds it.
  auto s = test::run_flashsim("time softmax --rows 32768 --cols 4096 --json");
  REQUIRE(s.status == 0);
  CHECK(s.out.find("\"bound\": \"hbm\"") != std::string::npos);
  auto bad = test::run_flashsim("time attention --n 4096 --d 128 --gpu a100");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("unknown --gpu 'a100' (known: h100, h200)") != std::string::npos);
  CHECK(test::run_flashsim("time attention --n 4096 --d 96").status == 2);
  CHECK(test::run_flashsim("time attention --n 4096 --d 64 --pingpong maybe").status == 2);
  CHECK(test::run_flashsim("time attention --n 4096 --d 64 --backward --version 3").status == 2);
}

TEST_CASE("flashsim time: long traces finish, sizes past the model's reach are refused", "[timing][cli]") {
  // N = 32768 over 16 heads stalled for ever once a remainder fell below the clock's last bit
  auto r = test::run_flashsim("time attention --n 32768 --d 128 --heads 16 --json");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("\"predicted_ms\"") != std::string::npos);
  for (const char* big : {"--n 4194304 --d 128 --heads 65536", "--n 1048576 --d 128 --heads 1",
                          "--n 4194304 --d 64 --heads 65536 --backward"}) {
    auto e = test::run_flashsim(std::string("time attention ") + big);
    CHECK(e.status == 2);
    CHECK(e.out.find("the time model traces at most") != std::string::npos);
  }
  // the matmul had no such limit: 65536^3 failed in the trace's assembler ("<timed block>: array 'A'
  // is too large"), 262144^3 ran for minutes in gigabytes
  for (const char* big : {"--m 65536 --n 65536 --k 65536", "--m 1048576 --n 1048576 --k 1048576",
                          "--m 1048576 --n 1048576 --k 1"}) {
    auto e = test::run_flashsim(std::string("time matmul ") + big);
    CHECK(e.status == 2);
    CHECK(e.out.find("k steps on the busiest SM; the time model traces at most") != std::string::npos);
    CHECK(e.out.find("a smaller m, n or k") != std::string::npos);
    CHECK(e.out.find("<timed block>") == std::string::npos);
  }
}

TEST_CASE("flashsim time: the kernel line names ping-pong as timed", "[timing][cli]") {
  // --pingpong off at d = 64 still printed "ping-pong" (and --pingpong on at d = 128 did not)
  auto kernel_line = [](const std::string& args) {
    auto r = test::run_flashsim("time attention --n 4096 " + args);
    REQUIRE(r.status == 0);
    const auto at = r.out.find("kernel ");
    REQUIRE(at != std::string::npos);
    return r.out.substr(at, r.out.find('\n', at) - at);
  };
  CHECK(kernel_line("--d 64").find("ping-pong") != std::string::npos);
  CHECK(kernel_line("--d 64 --pingpong off").find("ping-pong") == std::string::npos);
  CHECK(kernel_line("--d 128").find("ping-pong") == std::string::npos);
  CHECK(kernel_line("--d 128 --pingpong on").find("ping-pong") != std::string::npos);
  CHECK(kernel_line("--d 128 --warp-specialized off").find("ping-pong") == std::string::npos);
  CHECK(kernel_line("--d 128 --warp-specialized off --pingpong on").find("ping-pong") != std::string::npos);
}

TEST_CASE("flashsim time --trace: the matmul and softmax traces are the ones the prediction timed", "[timing][cli]") {
  // The trace was one 128x256 tile over all of k whatever the launch: at 1024^3 (128x128 tiles,
  // k split 2 ways) flashsim run said 24490 cycles against the prediction's 10014.
  const isa::GpuPreset& g = *isa::find_gpu_preset("h100");
  for (auto [m, n, k] : {std::tuple{1024, 1024, 1024}, std::tuple{8192, 8192, 1024}, std::tuple{1000, 3000, 200}}) {
    CAPTURE(m, n, k);
    sim::TimeQuery q;
    q.op = sim::TimedOp::Matmul;
    q.m = m, q.n = n, q.k = k;
    const double predicted = sim::predict_time(q, g).cycles;
    CHECK(sim::time_program(isa::assemble(sim::block_trace(q, g), "mm.fsa")).cycles == Approx(predicted));
  }
  // softmax: one block alone on its SM is the whole prediction (it wrote 4 rows whatever the size);
  // co-resident copies a trace cannot hold are named in its first line
  sim::TimeQuery q;
  q.op = sim::TimedOp::Softmax;
  q.m = 10, q.n = 40000;
  CHECK(sim::time_program(isa::assemble(sim::block_trace(q, g), "sm.fsa")).cycles == Approx(sim::predict_time(q, g).cycles));
  q.m = 100000, q.n = 4096;
  CHECK(sim::block_trace(q, g).rfind("# the prediction times 8 copies of this block at once on one SM, each copy's time scaled by 95 / 8 rows\n", 0) == 0);
}

TEST_CASE("flashsim time --json: every digit, and a finite --hbm-bytes", "[timing][cli]") {
  const isa::GpuPreset& g = *isa::find_gpu_preset("h100");
  sim::TimeQuery q;
  q.n = 16384, q.d = 128, q.heads = 16;
  const sim::LaunchPrediction p = sim::predict_time(q, g);
  auto r = test::run_flashsim("time attention --n 16384 --d 128 --heads 16 --json");
  REQUIRE(r.status == 0);
  const auto doc = test::JsonReader(r.out).document();
  // %.6g printed 4.23876e+06 cycles and 2.69484e+08 bytes
  CHECK(doc.at("cycles").number == p.cycles);
  CHECK(doc.at("hbm_bytes").number == p.hbm_bytes);
  for (const char* bad : {"nan", "inf", "-1"}) {
    auto e = test::run_flashsim(std::string("time attention --n 4096 --d 64 --hbm-bytes ") + bad);
    CHECK(e.status == 2);
    CHECK(e.out.find("--hbm-bytes must be a finite number of bytes") != std::string::npos);
  }
}

TEST_CASE("flashsim time --clock-mhz: the same cycles at another clock", "[timing][cli]") {
  auto number = [](const std::string& json, const std::string& key) {
    return test::JsonReader(json).document().at(key).number;
  };
  const std::string q = "time attention --n 8192 --d 128 --heads 8 --gpu h100 --json";
  auto preset = test::run_flashsim(q);
  REQUIRE(preset.status == 0);
  const double mhz = 1000 * number(preset.out, "clock_ghz");  // the preset's, about 1476
  CHECK(mhz == Approx(1476).epsilon(0.001));
  auto same = test::run_flashsim(q + " --clock-mhz " + std::to_string(mhz));
  auto half = test::run_flashsim(q + " --clock-mhz " + std::to_string(mhz / 2));
  REQUIRE((same.status == 0 && half.status == 0));
  CHECK(number(same.out, "predicted_ms") == Approx(number(preset.out, "predicted_ms")).epsilon(1e-5));
  CHECK(number(half.out, "cycles") == Approx(number(preset.out, "cycles")));
  CHECK(number(half.out, "sm_ms") == Approx(2 * number(preset.out, "sm_ms")).epsilon(1e-5));
  for (const char* bad : {"0.5", "0", "-1000", "9000"}) {
    auto r = test::run_flashsim(q + " --clock-mhz " + bad);
    CHECK(r.status == 2);
    CHECK(r.out.find("--clock-mhz must be between 100 and 5000") != std::string::npos);
  }
}

TEST_CASE("flashsim time --unit: a unit's figures over the preset's", "[timing][cli]") {
  auto number = [](const std::string& json, const std::string& key) {
    return test::JsonReader(json).document().at(key).number;
  };
  // The FA2 order on one 128-row tile (version 2, nothing overlapped) waits for each of its two
  // products, S = Q K^T and P V, one after the other: 1000 more cycles of tensor latency are 2000
  // more cycles, and the preset's own figure changes nothing.
  const std::string q = "time attention --n 64 --d 64 --version 2 --gpu h100 --json";
  auto preset = test::run_flashsim(q);
  auto same = test::run_flashsim(q + " --unit tensor:latency=60");
  auto longer = test::run_flashsim(q + " --unit tensor:latency=1060");
  REQUIRE((preset.status == 0 && same.status == 0 && longer.status == 0));
  CHECK(number(same.out, "cycles") == number(preset.out, "cycles"));
  CHECK(number(longer.out, "cycles") == Approx(number(preset.out, "cycles") + 2000));
  CHECK(test::JsonReader(longer.out).document().at("unit_figures").at("tensor").at("latency").number == 1060);
  // the trace written beside the prediction carries the override as a .unit line
  test::ScratchDir dir;
  const std::string trace = dir.path("fa2.fsa");
  REQUIRE(test::run_flashsim(q + " --unit special:rate=8 --trace " + trace).status == 0);
  std::ifstream in(trace);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find(".units h100\n.unit special rate=8 latency=20\n") != std::string::npos);
  for (const auto& [bad, message] : std::vector<std::pair<std::string, std::string>>{
           {"tensor", "--unit takes NAME:rate=R,latency=L"},
           {"warp:rate=1", "unknown unit 'warp'"},
           {"tensor:rate=0", "a unit's rate must be positive"},
           {"tensor:latency=-5", "a unit's latency must be between 0 and 1e9"},
           {"tensor:speed=2", "--unit takes NAME:rate=R,latency=L"},
           {"tensor:rate=4k", "--unit takes NAME:rate=R,latency=L"}}) {
    auto r = test::run_flashsim(q + " --unit " + bad);
    CHECK(r.status == 2);
    CHECK(r.out.find(message) != std::string::npos);
  }
}

TEST_CASE("the time model on the FA3 ablation: the overlap helps, ping-pong adds nothing", "[timing][fa3]") {
  // d = 128, N = 8192. With products taken in issue order two consumers drift apart on their own,
  // so the turns of ping-pong change nothing (as measured on this project's kernels: 0.98-1.00,
  // kernels/RESULTS.md), while overlapping the next S with the softmax helps with or without them.
  auto rate = [](const std::string& extra) {
    sim::TimeQuery q;
    q.n = 8192;
    q.d = 128;
    q.heads = 4;
    q.version = 6;
    q.pingpong = extra.find("pp") != std::string::npos;
    q.intra_overlap = extra.find("ov") != std::string::npos;
    return sim::predict_time(q, *isa::find_gpu_preset("h100")).predicted_ms;
  };
  const double none = rate(""), pp = rate("pp"), ov = rate("ov"), both = rate("pp ov");
  CHECK(both < 0.95 * pp);
  CHECK(ov < 0.95 * none);
  CHECK(both == Approx(ov).epsilon(0.01));
  CHECK(pp == Approx(none).epsilon(0.01));
}

TEST_CASE("the time model on FA3's other ablation: without warp specialization consumer 0 copies", "[timing][fa3]") {
  // The paper's ablation removes the producer warp ("no warp specialization"). The trace's consumer 0
  // then issues K_{j+1} at the top of step j and V_{j+1} after both consumers' P_{j-1} V_{j-1}: the
  // same values, no producer stream, and a little slower at d = 128 (it waits for the other
  // consumer's P V before its next step).
  sim::TimeQuery q;
  q.n = 8192;
  q.d = 128;
  q.heads = 4;
  const isa::GpuPreset& g = *isa::find_gpu_preset("h100");
  const sim::LaunchPrediction ws = sim::predict_time(q, g);
  q.warp_specialized = false;
  const sim::LaunchPrediction own = sim::predict_time(q, g);
  CHECK_FALSE(own.plan.warp_specialized);
  CHECK_FALSE(own.plan.pingpong);
  CHECK(own.plan.name.find("without warp specialization") != std::string::npos);
  CHECK(own.predicted_ms > ws.predicted_ms);
  CHECK(own.predicted_ms < 1.05 * ws.predicted_ms);
  // the same outputs as the producer's trace, value for value, on a small block
  auto outputs = [&](bool specialized) {
    sim::TimeQuery s;
    s.n = 512;
    s.d = 128;
    s.warp_specialized = specialized;
    const isa::Program prog = isa::assemble(sim::block_trace(s, g), "ws.fsa");
    CHECK((prog.timing.streams == std::vector<std::string>{"consumer0", "consumer1"}) == !specialized);
    sim::Machine m(prog);
    m.run();
    return std::make_pair(m.array(*prog.find_array("O")).values, m.array(*prog.find_array("L")).values);
  };
  CHECK(outputs(true) == outputs(false));
  // only version 6 has it, and the backward none of the forward's variants
  q.version = 5;
  CHECK_THROWS_AS(sim::predict_time(q, g), std::invalid_argument);
  q.version = 0;
  q.op = sim::TimedOp::AttnBwd;
  CHECK_THROWS_WITH(sim::predict_time(q, g), Catch::Contains("warp specialization on or off is a forward variant"));
  q.warp_specialized.reset();
  q.pingpong = false;
  CHECK_THROWS_WITH(sim::predict_time(q, g), Catch::Contains("ping-pong is a forward variant"));
  q.pingpong.reset();
  q.key_tile = 64;
  CHECK_THROWS_AS(sim::predict_time(q, g), std::invalid_argument);
  auto bad = test::run_flashsim("time attention --n 4096 --d 128 --warp-specialized maybe");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--warp-specialized takes on or off, not 'maybe'") != std::string::npos);
}

TEST_CASE("version 6 forward is faster than version 5 at d = 128, and backward 7 than 6", "[timing]") {
  auto ms = [](sim::TimedOp op, int version) {
    sim::TimeQuery q;
    q.op = op;
    q.n = 8192;
    q.d = 128;
    q.heads = 8;
    q.version = version;
    return sim::predict_time(q, *isa::find_gpu_preset("h100")).predicted_ms;
  };
  CHECK(ms(sim::TimedOp::AttnFwd, 6) < ms(sim::TimedOp::AttnFwd, 5));
  CHECK(ms(sim::TimedOp::AttnBwd, 7) < ms(sim::TimedOp::AttnBwd, 6));
}

TEST_CASE("forward version 6's tile variants: key tiles and consumers", "[timing]") {
  sim::TimeQuery q = forward_d128(16384, 16, true);
  // the FP8 launcher: 224 keys from n = 8192, 128 below
  CHECK(sim::plan_for(q).bc == 224);
  q.n = 4096;
  CHECK(sim::plan_for(q).bc == 128);
  q.key_tile = 192;
  q.consumers = 3;
  const sim::KernelPlan p = sim::plan_for(q);
  CHECK(p.bc == 192);
  CHECK(p.br == 192);
  CHECK(p.consumers == 3);
  CHECK(p.name.find("192x192") != std::string::npos);
  q.key_tile = 48;  // FP8 tiles step by 32 keys
  CHECK_THROWS_AS(sim::plan_for(q), std::invalid_argument);
  q.key_tile.reset();
  q.consumers = 4;
  CHECK_THROWS_AS(sim::plan_for(q), std::invalid_argument);
  q.consumers.reset();
  q.version = 5;
  q.key_tile = 128;
  q.fp8 = false;
  q.elem_bytes = 2;
  CHECK_THROWS_AS(sim::plan_for(q), std::invalid_argument);  // version 6's variants only
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --key-tile 144 --json").status == 0);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --consumers 4").status == 2);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --key-tile 100").status == 2);
}

TEST_CASE("the backward's default is version 7 at d = 64 and 128, as the launcher's", "[timing]") {
  for (int d : {64, 128}) {
    sim::TimeQuery q;
    q.op = sim::TimedOp::AttnBwd;
    q.n = 4096;
    q.d = d;
    q.heads = 4;
    const auto launcher = sim::predict_time(q, *isa::find_gpu_preset("h100"));
    CHECK(launcher.plan.version == 7);
    q.version = 6;
    CHECK(launcher.predicted_ms < sim::predict_time(q, *isa::find_gpu_preset("h100")).predicted_ms);
  }
}

TEST_CASE("the FP8 forward: the products at twice the rate, the same exponentials, half of Q, K, V's bytes",
          "[timing][fp8]") {
  const isa::GpuPreset& h100 = *isa::find_gpu_preset("h100");
  // the preset's FP8 rate: the datasheet's 1978.9 against 989.4 dense bf16 TFLOP/s, the same scaling
  CHECK(h100.tensor_fp8_rate == Approx(2 * h100.units[static_cast<int>(isa::Unit::Tensor)].rate).epsilon(1e-3));
  sim::TimeQuery q = forward_d128(8192, 4, false);
  const auto bf16 = sim::predict_time(q, h100);
  q.fp8 = true;
  q.elem_bytes = 1;
  q.key_tile = 128;  // the bf16 forward's tile (the FP8 launcher takes 224 keys from n = 8192)
  const auto fp8 = sim::predict_time(q, h100);
  const auto busy = [](const sim::LaunchPrediction& p, isa::Unit u) { return p.units[static_cast<int>(u)].busy_cycles; };
  CHECK(busy(fp8, isa::Unit::Tensor) == Approx(busy(bf16, isa::Unit::Tensor) / 2).epsilon(1e-3));
  CHECK(busy(fp8, isa::Unit::Special) == busy(bf16, isa::Unit::Special));
  CHECK(busy(fp8, isa::Unit::Memory) < busy(bf16, isa::Unit::Memory));
  CHECK(fp8.predicted_ms < bf16.predicted_ms);
  // the exponentials stay: far from twice as fast
  CHECK(bf16.predicted_ms / fp8.predicted_ms < 1.6);
  // compulsory bytes: Q, K, V at one byte, O in bf16, lse in fp32
  const double n = 8192, d = 128, h = 4;
  CHECK(sim::compulsory_bytes(q) == h * (3 * n * d + 2 * n * d + 4 * n));
  // FP8 is the forward's only, with 1-byte inputs
  q.elem_bytes = 2;
  CHECK_THROWS_AS(sim::predict_time(q, h100), std::invalid_argument);
  q.elem_bytes = 1;
  q.op = sim::TimedOp::AttnBwd;
  CHECK_THROWS_AS(sim::predict_time(q, h100), std::invalid_argument);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --dtype fp8 --backward").status == 2);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --dtype fp4").status == 2);
  const auto r = test::run_flashsim("time attention --n 4096 --d 128 --heads 8 --gpu h100 --dtype fp8 --json");
  CHECK(r.status == 0);
  CHECK(r.out.find("\"predicted_ms\"") != std::string::npos);
}

TEST_CASE("the time model with the row sums on the tensor unit: 8 more columns of P V and no row sum", "[timing][fp8]") {
  sim::TimeQuery q = forward_d128(4096, 8, true);
  q.key_tile = 128;
  const isa::GpuPreset& g = *isa::find_gpu_preset("h100");
  const sim::LaunchPrediction plain = sim::predict_time(q, g);
  q.sums_on_tensor = true;
  const sim::LaunchPrediction sums = sim::predict_time(q, g);
  const auto tensor = static_cast<std::size_t>(isa::Unit::Tensor), vector = static_cast<std::size_t>(isa::Unit::Vector);
  // a tile's products: S (d = 128 deep) and P V (128 columns), now P V over 136: (128 + 136) / 256
  CHECK(sums.units[tensor].busy_cycles == Approx(plain.units[tensor].busy_cycles * 264.0 / 256.0).epsilon(1e-6));
  CHECK(sums.units[vector].busy_cycles < plain.units[vector].busy_cycles);
  CHECK(sums.plan.name.find("row sums on the tensor cores") != std::string::npos);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --version 5 --sums-on-tensor").status == 2);
}

TEST_CASE("the consumer-loop traces beside probe_consumer_loop time as kernels/RESULTS.md says", "[timing][cli]") {
  // kernels/results/2026-11-27-consumer-loop: the d = 128 forward's loop on resident K and V, one
  // or two consumers, the kernel's order or FA2's; steady state = (cycles at 64 tiles - at 32) / 32
  const std::string dir = std::string(FLASHSIM_SOURCE_DIR) + "/kernels/results/2026-11-27-consumer-loop/";
  auto predicted = [&](const std::string& trace, int n) {
    auto r = test::run_flashsim("run " + dir + trace + " --no-table --param N=" + std::to_string(n));
    REQUIRE(r.status == 0);
    std::istringstream lines(r.out);
    for (std::string word, line; std::getline(lines, line);) {
      std::istringstream words(line);
      if (words >> word && word == "predicted") {
        double cycles = 0;
        words >> cycles;
        return cycles;
      }
    }
    FAIL("no 'predicted' line in: " << r.out);
    return 0.0;
  };
  struct Row {
    const char* trace;
    double per_tile;
  };
  for (const Row& row : {Row{"c1_kernel.fsa", 1482}, Row{"c2_kernel.fsa", 2048}, Row{"c2_turns.fsa", 2048},
                         Row{"c1_fa2.fsa", 1829}, Row{"c2_fa2.fsa", 2244}}) {
    INFO(row.trace);
    CHECK((predicted(row.trace, 8192) - predicted(row.trace, 4096)) / 32 == Approx(row.per_tile).margin(1));
  }
}

TEST_CASE("forward version 6 with O's rescale under the next S: the rescale moves, its work does not", "[timing]") {
  sim::TimeQuery q = forward_d128(1024, 2, false);
  const isa::GpuPreset& g = *isa::find_gpu_preset("h100");
  auto mul_right_after_s = [](const std::string& trace) {
    std::istringstream in(trace);
    std::string line, prev;
    int n = 0;
    while (std::getline(in, line)) {
      if (prev.rfind("MAC_Z", 0) == 0 && prev.find("^T") != std::string::npos && line.rfind("MUL", 0) == 0) ++n;
      prev = line;
    }
    return n;
  };
  q.rescale_under_s = true;
  const std::string under = sim::block_trace(q, g);
  const sim::LaunchPrediction on = sim::predict_time(q, g);
  q.rescale_under_s = false;
  const std::string after = sim::block_trace(q, g);
  const sim::LaunchPrediction off = sim::predict_time(q, g);
  // 8 KV tiles a Q tile: the rescale by the last tile's factor from the third S on, two consumers
  CHECK(mul_right_after_s(under) > 0);
  CHECK(mul_right_after_s(after) == 0);
  CHECK(on.plan.rescale_under_s);
  CHECK_FALSE(off.plan.rescale_under_s);
  const auto vector = static_cast<std::size_t>(isa::Unit::Vector);
  CHECK(on.units[vector].work == Approx(off.units[vector].work));
  // the launcher's default (on), and refused where there is no overlap to put it under
  q.rescale_under_s.reset();
  CHECK(sim::predict_time(q, g).plan.rescale_under_s);
  CHECK(test::run_flashsim("time attention --n 1024 --d 64 --causal --rescale-under-s on").status == 2);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --rescale-under-s perhaps").status == 2);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --rescale-under-s off --json").status == 0);
}

TEST_CASE("the split tail deals every tail key tile to exactly one block, in slots no two parts share", "[timing][split]") {
  // 2048 Q tiles (d = 128 at any N of the bench) on 132 SMs: 15 whole rounds, 68 tiles split
  const sim::SplitTail p = sim::split_tail_plan(2048, 128, 132);
  CHECK(p.blocks == 132);
  CHECK(p.whole == 15);
  CHECK(p.tail == 68);
  CHECK(p.tail_blocks == 132);
  for (auto [units, kv, sms] : std::vector<std::tuple<int, int, int>>{{2048, 128, 132}, {24, 8, 132}, {33, 33, 132},
                                                                     {153, 17, 132}, {2752, 128, 132}, {7, 20, 3}}) {
    const sim::SplitTail s = sim::split_tail_plan(units, kv, sms);
    INFO(units << " tiles, " << kv << " key tiles, " << sms << " SMs");
    REQUIRE(s.tail > 0);
    CHECK(s.whole * s.blocks + s.tail == units);
    CHECK(s.tail_blocks > s.tail);
    std::vector<int> owner(static_cast<std::size_t>(s.span()), -1), slot_used(static_cast<std::size_t>(s.slots()), 0);
    for (int b = 0; b < s.tail_blocks; ++b) {
      CHECK(s.start(b + 1) - s.start(b) >= sim::kMinSplitKeyTiles);
      for (int k = s.start(b); k < s.start(b + 1); ++k) {
        CHECK(owner[static_cast<std::size_t>(k)] == -1);
        owner[static_cast<std::size_t>(k)] = b;
        CHECK(s.block_at(k) == b);
      }
      // one slot per (tail tile, block) part
      for (int u = s.start(b) / kv; u * kv < s.start(b + 1); ++u) ++slot_used[static_cast<std::size_t>(u + b)];
    }
    CHECK(std::count(owner.begin(), owner.end(), -1) == 0);
    CHECK(std::count_if(slot_used.begin(), slot_used.end(), [](int n) { return n > 1; }) == 0);
  }
  // no split: the tiles divide evenly, a tile has one key tile, the tail too short to share, or off
  CHECK(sim::split_tail_plan(264, 128, 132).tail == 0);
  CHECK(sim::split_tail_plan(2048, 1, 132).tail == 0);
  CHECK(sim::split_tail_plan(2, 3, 132).tail == 0);  // 6 key tiles: one span, fewer blocks than tiles
  CHECK(sim::split_tail_plan(2048 + 68, 1 << 22, 132).tail == 0);  // spans past 32-bit arithmetic
  const sim::SplitTail off = sim::split_tail_plan(2048, 128, 132, false);
  CHECK(off.tail == 0);
  CHECK(off.blocks == 132);
  CHECK(sim::split_tail_plan(50, 128, 132, false).blocks == 50);
}

TEST_CASE("the time model with the split tail: the last round's staircase flattens", "[timing][split]") {
  // N = 8192, d = 128: 32 heads are 2048 Q tiles (68 SMs take a 16th), 33 heads exactly 16 rounds
  const isa::GpuPreset& g = *isa::find_gpu_preset("h200");
  auto ms = [&](std::int64_t heads, bool split) {
    sim::TimeQuery q = forward_d128(8192, heads, false);
    q.split_tail = split;
    return sim::predict_time(q, g);
  };
  const double whole32 = ms(32, false).predicted_ms, whole33 = ms(33, false).predicted_ms;
  const sim::LaunchPrediction split32 = ms(32, true);
  CHECK(split32.plan.split_tail);
  CHECK(whole32 == Approx(whole33).epsilon(0.01));  // the same clocks for 3 % more work
  CHECK(split32.predicted_ms < 0.985 * whole32);
  CHECK(split32.predicted_ms > 32.0 / 33 * whole33);  // not better than perfectly balanced
  CHECK(ms(33, true).predicted_ms == Approx(whole33));  // nothing to split
  // the launcher's default (kernels/launch_order.h): on at d = 128 from N = 8192, off below and at
  // d = 64, refused under the causal mask
  sim::TimeQuery q = forward_d128(8192, 32, false);
  CHECK(sim::predict_time(q, g).plan.split_tail);
  CHECK(sim::predict_time(q, g).predicted_ms == Approx(split32.predicted_ms));
  sim::TimeQuery below = forward_d128(4096, 128, false);
  CHECK_FALSE(sim::predict_time(below, g).plan.split_tail);
  below.split_tail = true;
  CHECK(sim::predict_time(below, g).plan.split_tail);
  sim::TimeQuery d64 = forward_d128(16384, 32, false);
  d64.d = 64;
  CHECK_FALSE(sim::predict_time(d64, g).plan.split_tail);
  CHECK(sim::split_tail_by_default(8192, 128));
  CHECK_FALSE(sim::split_tail_by_default(8191, 128));
  CHECK_FALSE(sim::split_tail_by_default(16384, 64));
  q.causal = true;
  CHECK_FALSE(sim::predict_time(q, g).plan.split_tail);
  q.split_tail = true;
  CHECK_THROWS_AS(sim::predict_time(q, g), std::invalid_argument);
  sim::TimeQuery fp8 = forward_d128(8192, 32, true);
  fp8.split_tail = true;
  CHECK(sim::predict_time(fp8, g).plan.split_tail);
  CHECK(test::run_flashsim("time attention --n 8192 --d 128 --heads 32 --split-tail maybe").status == 2);
  CHECK(test::run_flashsim("time attention --n 8192 --d 128 --heads 32 --causal --split-tail on").status == 2);
}

TEST_CASE("the fast backward's trace: tiles its warps write to shared memory cost bytes / 128 B a clock", "[timing]") {
  // One block of backward version 7 at d = 64 over one query tile of 128 rows: 2 consumers of 64
  // keys. Vector work by hand: each consumer's dS = P * (dP - D) is a SUB and a MUL of 64 x 128
  // (16384 elements) and its bf16 dS written for dQ = dS K (64 x 128 x 2 B = 16384 B); the owner
  // stages fp32 dQ (128 x 64 x 4 B = 32768 B); each consumer stages bf16 dK and dV (64 x 64 x 2 B
  // twice = 16384 B). 2 x 16384 + (2 x 16384 + 32768 + 2 x 16384) B / 128 B a clock = 256 + 768.
  const isa::GpuPreset& g = *isa::find_gpu_preset("h100");
  sim::TimeQuery q;
  q.op = sim::TimedOp::AttnBwd;
  q.version = 7;
  q.n = 128, q.d = 64, q.heads = 1;
  const auto p = sim::predict_time(q, g);
  CHECK(p.units[static_cast<int>(isa::Unit::Vector)].busy_cycles == Approx(256 + 768));
}

TEST_CASE("the causal backward's blocks longest first: the last wave holds the short ones", "[timing]") {
  // 16 heads at N = 16384, d = 128: 2048 K/V blocks of 1 to 128 query steps on 132 SMs. Shortest
  // first leaves a 128-step block to start last; longest first ends on 1-step blocks. The kernel
  // took 3-5 % fewer clocks in that order (H100, 2026-12-07, kernels/RESULTS.md).
  const isa::GpuPreset& g = *isa::find_gpu_preset("h100");
  sim::TimeQuery q;
  q.op = sim::TimedOp::AttnBwd;
  q.n = 16384, q.d = 128, q.heads = 16, q.causal = true;
  const double longest = sim::predict_time(q, g).predicted_ms;
  q.shortest_first = true;
  const double shortest = sim::predict_time(q, g).predicted_ms;
  CHECK(longest < 0.97 * shortest);
  // the same blocks either way: the full mask's time bounds both from below (half its work)
  q.causal = false;
  q.shortest_first = false;
  CHECK(longest > 0.5 * sim::predict_time(q, g).predicted_ms);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --heads 4 --backward --causal --kv-order sideways").status == 2);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --heads 4 --backward --kv-order shortest-first").status == 2);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --heads 4 --causal --kv-order shortest-first").status == 2);
  CHECK(test::run_flashsim("time attention --n 4096 --d 128 --heads 4 --backward --causal --kv-order shortest-first").status == 0);
}

TEST_CASE("the backward's two small launches: the statistics pass also zeroes the padded fp32 dQ", "[timing]") {
  // 2 heads, N = 1000 (rows padded to 1024), d = 64, bf16. Before: O and dO read (2 * 64 * 2 B a
  // row) with lse (4 B), then per padded row D and lse2 (8 B) and 64 zero floats (256 B): 2 * (1000
  // * 260 + 1024 * 264) = 1,060,672 B. After: the fp32 dQ read (256 B a row), bf16 dQ written (128 B):
  // 2 * 1000 * 384 = 768,000 B. ncu put the zeroing at half of the first launch's bytes (H100,
  // 2026-11-25, 16 x 16384 x 128: 88 us, 3.0 TB/s).
  const isa::GpuPreset& g = *isa::find_gpu_preset("h100");
  sim::TimeQuery q;
  q.op = sim::TimedOp::AttnBwd;
  q.n = 1000, q.d = 64, q.heads = 2;
  const sim::LaunchPrediction p = sim::predict_time(q, g);
  CHECK(p.extra_ms == Approx((1060672.0 + 768000.0) / g.hbm_bytes_per_s * 1e3));
  CHECK(p.predicted_ms == Approx(std::max(p.sm_ms, p.hbm_ms) + p.extra_ms));
}

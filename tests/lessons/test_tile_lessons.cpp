// Lessons 10-13 (the tile machine): the reference solutions pass with the closed-form bytes,
// the counted bytes equal the tile engine's, and wrong traces (a wrong value, FA1's order, the
// backward without the D trick, causal without skipping, hard-coded sizes) fail with the
// sentence a learner needs.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include "run_command.h"

#include "isa/assembler.h"
#include "lessons/lesson.h"
#include "sim/machine.h"
#include "sim/tile/schedules.h"
#include "sim/traffic.h"
#include "tests/scratch_dir.h"

using namespace flashsim;
using namespace flashsim::lessons;

namespace {

std::string read_source(const std::string& rel) {
  std::ifstream f(std::string(FLASHSIM_SOURCE_DIR) + "/" + rel);
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The lesson file `file` with `from` replaced by `to` (which must occur exactly once).
std::string edited(const std::string& rel, const std::string& from, const std::string& to) {
  std::string s = read_source(rel);
  auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(s.find(from, at + 1) == std::string::npos);
  return s.replace(at, from.size(), to);
}

Verdict check(const std::string& lesson, const std::string& text) {
  Lesson l = find_lesson(lesson);
  return check_text(l, l.parts.front(), text, "test.fsa");
}

std::string all_problems(const Verdict& v) {
  std::string s;
  for (const auto& p : v.problems) s += p + "\n";
  return s;
}

bool mentions(const Verdict& v, const std::string& part) { return all_problems(v).find(part) != std::string::npos; }

// Runs a lesson trace at the given sizes on the machine's own random inputs (counts only matter).
sim::Machine run_at(const std::string& rel, const std::map<std::string, std::int64_t>& params) {
  isa::AssembleOptions ao;
  ao.params = params;
  sim::MachineOptions mo;
  mo.history = false;
  sim::Machine m(isa::assemble(read_source(rel), rel, ao), mo);
  m.run();
  return m;
}

std::uint64_t read_bytes(const sim::Machine& m, const std::string& a) { return m.array(*m.program().find_array(a)).bytes_read; }
std::uint64_t written_bytes(const sim::Machine& m, const std::string& a) {
  return m.array(*m.program().find_array(a)).bytes_written;
}

}  // namespace

TEST_CASE("lesson 10: the merge solution passes with every input read once", "[lesson-10]") {
  Verdict v = check("10", read_source("lessons/10-element-is-tile/solution.fsa"));
  INFO(all_problems(v));
  REQUIRE(v.passed);
  CHECK(v.counts.bytes_read == 160);    // Q 32 + K 64 + V 64
  CHECK(v.counts.bytes_written == 48);  // O 32 + L 16
  CHECK(v.counts.sram_peak == 528);
}

TEST_CASE("lesson 10: the untouched exercise and a missing rescale fail at the cell", "[lesson-10]") {
  Verdict ex = check("10", read_source("lessons/10-element-is-tile/exercise.fsa"));
  CHECK_FALSE(ex.passed);
  CHECK(mentions(ex, "tile O[0][0] is never stored"));
  CHECK(mentions(ex, "tile L[0] is never stored"));

  // o_a is added without its factor alpha = exp(m_a - m)
  Verdict v = check("10", edited("lessons/10-element-is-tile/solution.fsa", "MUL R7, R5, R7", "MOV R7, R7"));
  CHECK_FALSE(v.passed);
  INFO(all_problems(v));
  CHECK(mentions(v, "wrong values on random inputs"));
  CHECK(mentions(v, "(in tile O[0][0]): expected "));
  CHECK(mentions(v, ", got "));
}

TEST_CASE("lesson 10: a merge that exponentiates the maxima overflows on large scores", "[lesson-10]") {
  // e^m_a and e^m_b instead of e^(m_a - m): right for small scores, nan in the thousands.
  std::string unsafe = edited("lessons/10-element-is-tile/solution.fsa",
                              "EXPD R5, R11, R5        # alpha = exp(m_a - m) <= 1\n"
                              "EXPD R8, R11, R8        # beta = exp(m_b - m) <= 1\n",
                              "EXP R5, R5\nEXP R8, R8\n");
  unsafe = unsafe.substr(0, unsafe.find("LOG R6, R6")) + "LOG R6, R6\nSTORE R6, L[0]\n";
  Verdict v = check("10", unsafe);
  CHECK_FALSE(v.passed);
  INFO(all_problems(v));
  CHECK(mentions(v, "with d = 8, Br = 4, Bc = 4 (Q, K in -30..30: scores in the thousands, so every exponent must be <= 0)"));
  CHECK((mentions(v, "got inf") || mentions(v, "got nan")));
}

TEST_CASE("lesson 10: a second read of K, a tile too many in SRAM, a register too many", "[lesson-10]") {
  Verdict twice = check("10", edited("lessons/10-element-is-tile/solution.fsa", "# the merge\n", "LOAD K[0][0], R1\n"));
  CHECK_FALSE(twice.passed);
  CHECK(mentions(twice, "your trace reads 96 bytes of K; the budget is 64 bytes (K read once: 2*Bc*d*2)"));

  // R11 holds a copy of the Q tile until the merge overwrites it with the 4x1 maximum
  Verdict sram = check("10", edited("lessons/10-element-is-tile/solution.fsa", "LOAD Q[0][0], R0\n", "LOAD Q[0][0], R0\nMOV R0, R11\n"));
  CHECK_FALSE(sram.passed);
  CHECK(mentions(sram, "your trace holds up to 576 bytes in its registers at once; the SRAM budget is 528 bytes"));

  // a spec's `sram = BYTES` is the capacity: the machine stops at the step that overflows it
  Lesson l10 = find_lesson("10");
  Part small = l10.parts.front();
  small.sram_bytes = 400;
  Verdict full = check_text(l10, small, read_source("lessons/10-element-is-tile/solution.fsa"), "solution.fsa");
  CHECK_FALSE(full.passed);
  CHECK(mentions(full, "the machine faults: step"));
  CHECK(mentions(full, "more than the SRAM's 400 bytes"));

  Verdict regs = check("10", edited("lessons/10-element-is-tile/solution.fsa", ".regs 12\n", ".regs 13\nMOV R0, R12\n"));
  CHECK_FALSE(regs.passed);
  CHECK(mentions(regs, "the machine has 12 registers"));
}

TEST_CASE("lesson 10: a trace sized by hand or tiled its own way fails at another size", "[lesson-10]") {
  Verdict fixed = check("10", edited("lessons/10-element-is-tile/solution.fsa", ".array Q[Br][d] tile[Br][d] elem 2",
                                     ".array Q[4][4] tile[4][4] elem 2"));
  CHECK_FALSE(fixed.passed);
  CHECK(mentions(fixed, "with d = 5, Br = 2, Bc = 3 (random inputs): your trace's 'Q' is Q[4][4] instead of Q[2][5]"));

  Verdict tiles = check("10", edited("lessons/10-element-is-tile/solution.fsa", ".array K[2*Bc][d] tile[Bc][d] elem 2",
                                     ".array K[2*Bc][d] tile[Bc][2] elem 2"));
  CHECK_FALSE(tiles.passed);
  CHECK(mentions(tiles, "your trace splits 'K' into 4x2 tiles, but on this machine its tiles are 4x4 (tile[4][4])"));

  Verdict elem = check("10", edited("lessons/10-element-is-tile/solution.fsa", ".array V[2*Bc][d] tile[Bc][d] elem 2",
                                    ".array V[2*Bc][d] tile[Bc][d] elem 1"));
  CHECK_FALSE(elem.passed);
  CHECK(mentions(elem, "your trace gives 'V' 1-byte elements, but on this machine they take 2 bytes"));
}

TEST_CASE("lesson 11: the FA2 solution passes with exactly the tile engine's FA2 bytes", "[lesson-11]") {
  Verdict v = check("11", read_source("lessons/11-fa1-vs-fa2/solution.fsa"));
  INFO(all_problems(v));
  REQUIRE(v.passed);
  traffic::AttentionParams p;
  p.n = 16;
  p.d = 4;
  p.br = 4;
  p.bc = 4;
  auto t = traffic::count_attention_forward(p, traffic::AttentionForward::FA2);
  CHECK(v.counts.bytes_read == t.bytes_read());
  CHECK(v.counts.bytes_written == t.bytes_written());
  // and per array at a ragged-free size with Br != Bc
  p.n = 12;
  p.d = 3;
  p.br = 6;
  p.bc = 4;
  auto t2 = traffic::count_attention_forward(p, traffic::AttentionForward::FA2);
  sim::Machine m = run_at("lessons/11-fa1-vs-fa2/solution.fsa", {{"N", 12}, {"d", 3}, {"Br", 6}, {"Bc", 4}});
  for (const char* a : {"Q", "K", "V"}) CHECK(read_bytes(m, a) == t2.find(a)->bytes_read);
  for (const char* a : {"O", "L"}) CHECK(written_bytes(m, a) == t2.find(a)->bytes_written);
}

TEST_CASE("lesson 11: FA1's loop order computes the right values and fails the O-write budget", "[lesson-11]") {
  Verdict v = check("11", read_source("lessons/11-fa1-vs-fa2/fa1.fsa"));
  CHECK_FALSE(v.passed);
  INFO(all_problems(v));
  CHECK_FALSE(mentions(v, "wrong values"));
  CHECK(v.problems.front() == "your trace writes 512 bytes of O; the budget is 128 bytes (O written once: N*d*2)");
  CHECK(mentions(v, "your trace reads 384 bytes of O; the budget is 0 bytes"));
  CHECK(mentions(v, "your trace reads 512 bytes of Q; the budget is 128 bytes"));
  // its O traffic is the tile engine's FA1 count
  traffic::AttentionParams p;
  p.n = 16;
  p.d = 4;
  p.br = 4;
  p.bc = 4;
  auto t = traffic::count_attention_forward(p, traffic::AttentionForward::FA1);
  sim::Machine m = run_at("lessons/11-fa1-vs-fa2/fa1.fsa", {});
  CHECK(written_bytes(m, "O") == t.find("O")->bytes_written);
  CHECK(read_bytes(m, "O") == t.find("O")->bytes_read);
}

TEST_CASE("lesson 11: the generated straight-line FA2 passes at its size only", "[lesson-11]") {
  traffic::AttentionParams p;
  p.n = 16;
  p.d = 4;
  p.br = 4;
  p.bc = 4;
  std::string text = isa::disassemble(tile::attention_forward_program(p, traffic::AttentionForward::FA2));
  Verdict v = check("11", text);
  CHECK_FALSE(v.passed);
  INFO(all_problems(v));
  // the spec's size passes (values and bytes); the re-run at N = 8 finds the hard-coded shapes
  CHECK(v.problems.size() == 1);
  CHECK(mentions(v, "with N = 8, d = 4, Br = 4, Bc = 4 (random inputs): your trace's 'Q' is Q[16][4] instead of Q[8][4]"));
  CHECK(check("11", read_source("lessons/11-fa1-vs-fa2/exercise.fsa")).passed == false);
}

TEST_CASE("lesson 12: the dK/dV pass with the D trick passes with the closed-form bytes", "[lesson-12]") {
  Verdict v = check("12", read_source("lessons/12-attention-backward/solution.fsa"));
  INFO(all_problems(v));
  REQUIRE(v.passed);
  CHECK(v.counts.bytes_read == 640);
  CHECK(v.counts.bytes_written == 160);
  // K and V once at a size with Br != Bc, Q once per key block
  sim::Machine m = run_at("lessons/12-attention-backward/solution.fsa", {{"N", 12}, {"d", 2}, {"Br", 4}, {"Bc", 6}});
  CHECK(read_bytes(m, "K") == 12 * 2 * 2);
  CHECK(read_bytes(m, "V") == 12 * 2 * 2);
  CHECK(read_bytes(m, "Q") == 2 * 12 * 2 * 2);
  CHECK(written_bytes(m, "dK") == 12 * 2 * 2);
}

TEST_CASE("lesson 12: without the D trick K is loaded again and the budget says so", "[lesson-12]") {
  Verdict v = check("12", read_source("lessons/12-attention-backward/no-d.fsa"));
  CHECK_FALSE(v.passed);
  INFO(all_problems(v));
  CHECK_FALSE(mentions(v, "wrong values"));
  CHECK(v.problems.front() == "your trace reads 192 bytes of K; the budget is 64 bytes (K read once: N*d*2)");
  CHECK(mentions(v, "your trace reads 192 bytes of V; the budget is 64 bytes"));
}

TEST_CASE("lesson 12: dS without D, or D used before it is written, gives wrong gradients", "[lesson-12]") {
  Verdict no_sub = check("12", edited("lessons/12-attention-backward/solution.fsa",
                                      "  SUB R8, R7, R8            # dP - D, D broadcast over the row\n", ""));
  CHECK_FALSE(no_sub.passed);
  INFO(all_problems(no_sub));
  CHECK(mentions(no_sub, "wrong values on random inputs"));
  CHECK(mentions(no_sub, "(in tile dK[0][0]): expected "));

  // D is scratch DRAM: skipping the pre-pass reads garbage
  std::string text = read_source("lessons/12-attention-backward/solution.fsa");
  auto a = text.find("# D = rowsum(dO * O)");
  auto b = text.find(".for j in 0..N/Bc");
  Verdict garbage = check("12", text.substr(0, a) + text.substr(b));
  CHECK_FALSE(garbage.passed);
  CHECK(mentions(garbage, "expected "));
  CHECK_FALSE(check("12", read_source("lessons/12-attention-backward/exercise.fsa")).passed);
}

TEST_CASE("lesson 13: causal FA2 that skips passes with the tile engine's causal bytes", "[lesson-13]") {
  Verdict v = check("13", read_source("lessons/13-masking/solution.fsa"));
  INFO(all_problems(v));
  REQUIRE(v.passed);
  for (auto [n, d, b] : std::vector<std::array<std::int64_t, 3>>{{10, 4, 4}, {13, 3, 4}, {7, 2, 2}, {3, 2, 4}, {16, 4, 4}}) {
    INFO("N = " << n << ", d = " << d << ", B = " << b);
    traffic::AttentionParams p;
    p.n = n;
    p.d = d;
    p.br = b;
    p.bc = b;
    p.causal = true;
    auto t = traffic::count_attention_forward(p, traffic::AttentionForward::FA2);
    sim::Machine m = run_at("lessons/13-masking/solution.fsa", {{"N", n}, {"d", d}, {"B", b}});
    for (const char* a : {"Q", "K", "V"}) CHECK(read_bytes(m, a) == t.find(a)->bytes_read);
    for (const char* a : {"O", "L"}) CHECK(written_bytes(m, a) == t.find(a)->bytes_written);
  }
}

TEST_CASE("lesson 13: masking without skipping is over the causal budget", "[lesson-13]") {
  Verdict v = check("13", read_source("lessons/13-masking/no-skip.fsa"));
  CHECK_FALSE(v.passed);
  INFO(all_problems(v));
  CHECK_FALSE(mentions(v, "wrong values"));
  CHECK(v.problems.front() ==
        "your trace reads 240 bytes of K; the budget is 176 bytes (causal: d*2*sum_j r_j*(T-j))");
  CHECK(mentions(v, "your trace executes 9 MASK instructions; the budget is 3"));
}

TEST_CASE("lesson 13: no MASK, or a MASK on every tile, fails clearly", "[lesson-13]") {
  Verdict unmasked = check("13", edited("lessons/13-masking/solution.fsa",
                                        "  MASK R3, R3               # -inf right of the diagonal and past the last key\n", ""));
  CHECK_FALSE(unmasked.passed);
  INFO(all_problems(unmasked));
  CHECK(mentions(unmasked, "wrong values on random inputs"));
  CHECK(mentions(unmasked, "(in tile O[0][0]): expected "));

  Verdict all = check("13", edited("lessons/13-masking/solution.fsa", "    MAC_Z R0, R1^T, R3\n    ROWMAX R3, R8\n",
                                   "    MAC_Z R0, R1^T, R3\n    MASK R3, R3\n    ROWMAX R3, R8\n"));
  CHECK_FALSE(all.passed);
  CHECK(mentions(all, "your trace executes 6 MASK instructions; the budget is 3"));
  CHECK_FALSE(check("13", read_source("lessons/13-masking/exercise.fsa")).passed);
}

TEST_CASE("tile lesson specs: new keys are checked at FILE:LINE:COL", "[lessons]") {
  flashsim::test::ScratchDir tmp;
  auto dir = tmp.dir() / "98-tiles";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "check.spec") << "solution = s.fsa\nreference = tile-attention\narray = Q[4][4] tile[4]\n";
  CHECK_THROWS_WITH(load_lesson(dir.string()), Catch::Contains("check.spec:3:9: error: the tile of 'Q' needs as many dimensions"));
  std::ofstream(dir / "check.spec") << "solution = s.fsa\nreference = tile-attention\nregs = 2\narray = Q[4][4]\n"
                                       "outputs = Q\nmax_read = K 64\n";
  CHECK_THROWS_WITH(load_lesson(dir.string()), Catch::Contains("the budget max_read names 'K', which is not among the arrays"));
  std::ofstream(dir / "check.spec") << "solution = s.fsa\nreference = tile-attention\nregs = 2\narray = Q[4][4] tile[2][2] elem 2\n"
                                       "outputs = Q\nmax_written = Q 64 once\nmax_sram = 100\nelem = 3\n";
  CHECK_THROWS_WITH(load_lesson(dir.string()), Catch::Contains("check.spec:8:8: error: element size must be 1, 2, 4 or 8"));
}

namespace {
std::pair<int, std::string> run_flashsim(const std::string& args) { return run_command(std::string(FLASHSIM_EXE) + " " + args); }
}  // namespace

TEST_CASE("flashsim lesson check 11 fa1.fsa prints the O budget and exits 1", "[lesson-11]") {
  auto [status, out] = run_flashsim(std::string("lesson check 11 ") + FLASHSIM_SOURCE_DIR + "/lessons/11-fa1-vs-fa2/fa1.fsa");
  INFO(out);
  CHECK(status == 1);
  CHECK(out.find("FAIL  lesson 11 fa1-vs-fa2") != std::string::npos);
  CHECK(out.find("your trace writes 512 bytes of O; the budget is 128 bytes (O written once: N*d*2)") != std::string::npos);
}

TEST_CASE("flashsim lesson list names byte budgets the way a check reports them", "[lesson-list]") {
  auto [status, out] = run_flashsim("lesson list");
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find("3 registers; cycles <= 7, LOADs <= 4, STOREs <= 1") != std::string::npos);
  CHECK(out.find("Q bytes read <= 32, K bytes read <= 64") != std::string::npos);
  CHECK(out.find("SRAM bytes <= 528") != std::string::npos);
  CHECK(out.find("read:") == std::string::npos);
}

TEST_CASE("lesson 15: the serpentine sweep passes the L2 budget, the forward sweep misses every re-read", "[lesson-15]") {
  Verdict v = check("15", read_source("lessons/15-l2-cache/solution.fsa"));
  INFO(all_problems(v));
  REQUIRE(v.passed);
  CHECK(v.counts.bytes_read == 4352);  // lesson 11's requested bytes at N = 32: Q 256, K and V 8 x 256
  CHECK(v.counts.hbm_bytes_read == 2560);
  CHECK(v.counts.hbm_bytes_written == 512);
  // 12 lines of 32 bytes; a forward sweep of 16 K/V lines through LRU: nothing is left to hit
  Verdict f = check("15", read_source("lessons/15-l2-cache/exercise.fsa"));
  CHECK_FALSE(f.passed);
  CHECK_FALSE(mentions(f, "wrong values"));
  CHECK(f.counts.l2_hits == 0);
  CHECK(f.counts.bytes_read == 4352);
  CHECK(mentions(f, "through the L2, your trace reads 4352 bytes (4.25 KiB) from DRAM; the budget is 2560 bytes (2.5 KiB)"));
}

TEST_CASE("lesson 15: a trace that brings its own L2, or none, is graded on the lesson's", "[lesson-15]") {
  Verdict bigger = check("15", edited("lessons/15-l2-cache/exercise.fsa", ".l2 384 line=32", ".l2 640 line=32"));
  CHECK(bigger.refused);
  CHECK(mentions(bigger, "test.fsa:13:1: error: your trace declares an L2 other than the lesson's"));
  // without the directive the lesson's L2 still applies
  Verdict none = check("15", edited("lessons/15-l2-cache/solution.fsa", ".l2 384 line=32\n", ""));
  INFO(all_problems(none));
  CHECK(none.passed);
  CHECK(none.counts.hbm_bytes_read == 2560);
  // lessons without an L2 refuse the directive
  Verdict l11 = check("11", edited("lessons/11-fa1-vs-fa2/solution.fsa", ".dtype f64\n", ".dtype f64\n.l2 4096\n"));
  CHECK(l11.refused);
  CHECK(mentions(l11, "this lesson's machine has no L2"));
}

TEST_CASE("lesson specs: l2 and the hbm budgets", "[lessons]") {
  flashsim::test::ScratchDir tmp;
  auto dir = tmp.dir() / "97-l2";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "check.spec") << "solution = s.fsa\nreference = tile-attention\nregs = 2\narray = Q[4][4] tile[2][2] elem 2\n"
                                       "outputs = Q\nl2 = 256 line=48\n";
  CHECK_THROWS_WITH(load_lesson(dir.string()), Catch::Contains("check.spec:6:6: error: the L2 line size must be a power of two"));
  std::ofstream(dir / "check.spec") << "solution = s.fsa\nreference = tile-attention\nregs = 2\narray = Q[4][4] tile[2][2] elem 2\n"
                                       "outputs = Q\nl2 = 256 lines=32\n";
  CHECK_THROWS_WITH(load_lesson(dir.string()), Catch::Contains("l2 is 'BYTES [line=L] [sector=S]'"));
  std::ofstream(dir / "check.spec") << "solution = s.fsa\nreference = tile-attention\nregs = 2\narray = Q[4][4] tile[2][2] elem 2\n"
                                       "outputs = Q\nl2 = 256 line=32\nmax_hbm_bytes_read = 64\n";
  Lesson l = load_lesson(dir.string());
  REQUIRE(l.parts.front().l2);
  CHECK(l.parts.front().l2->line_bytes == 32);
  CHECK(l.parts.front().l2->sector_bytes == 32);  // a line smaller than the default sector is one sector
  CHECK(l.parts.front().budgets.front().counter == "hbm_bytes_read");
}

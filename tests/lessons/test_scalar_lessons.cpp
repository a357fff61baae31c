// Lessons 05-09: the generated softmax, variance and attention traces against float64
// references for several sizes (n = 1 and large magnitudes included), their counted traffic
// against the lessons' closed forms, and the lesson checks failing wrong traces clearly.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "isa/assembler.h"
#include "lessons/lesson.h"
#include "sim/machine.h"
#include "sim/schedules/attention_scalar.h"
#include "sim/schedules/softmax.h"

using namespace flashsim;
using namespace flashsim::sim::schedules;

namespace {

std::vector<double> uniform(std::mt19937_64& rng, std::size_t count, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(count);
  for (auto& x : v) x = static_cast<double>(static_cast<float>(d(rng)));  // representable in float32 too
  return v;
}

sim::Machine run(const std::string& text, const std::map<std::string, std::vector<double>>& inputs, bool f64) {
  sim::MachineOptions o;
  o.inputs = inputs;
  o.f64 = f64;
  o.history = false;
  sim::Machine m(isa::assemble(text, "<generated>"), o);
  m.run();
  return m;
}

const sim::ArrayState& array(const sim::Machine& m, const std::string& name) {
  auto id = m.program().find_array(name);
  REQUIRE(id.has_value());
  return m.array(*id);
}

void require_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    REQUIRE(std::isfinite(got[i]));
    REQUIRE(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i])));
  }
}

bool any_nan(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); });
}

lessons::Verdict check(const std::string& lesson, const std::string& part, const std::string& text) {
  auto l = lessons::find_lesson(lesson);
  const lessons::Part* p = part.empty() ? &l.parts.front() : l.find_part(part);
  REQUIRE(p != nullptr);
  return lessons::check_text(l, *p, text, "test.fsa");
}

std::string read(const std::string& rel) {
  std::ifstream f(std::string(FLASHSIM_SOURCE_DIR) + "/" + rel);
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool mentions(const lessons::Verdict& v, const std::string& part) {
  for (const auto& p : v.problems)
    if (p.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("generated softmax traces match float64 and the closed-form traffic", "[scalar-lessons][softmax]") {
  std::mt19937_64 rng(5);
  for (std::int64_t n : {1, 2, 3, 7, 64, 257}) {
    auto x = uniform(rng, static_cast<std::size_t>(n), -20, 20);
    auto want = softmax_reference(x);
    struct Variant {
      std::string text;
      Traffic traffic;
      int regs;
    };
    const Variant variants[] = {{softmax_unsafe_source(n), softmax_unsafe_traffic(n), 2},
                                {softmax_three_pass_source(n), softmax_three_pass_traffic(n), 3},
                                {online_softmax_source(n), online_softmax_traffic(n), 4},
                                {online_softmax_source(n, Rescale::Ratio), online_softmax_traffic(n), 4}};
    for (const auto& v : variants) {
      INFO("n = " << n << "\n" << v.text);
      for (bool f64 : {true, false}) {
        auto m = run(v.text, {{"x", x}}, f64);
        require_close(array(m, "out").values, want, f64 ? 1e-12 : 1e-5);
        CHECK(m.counters().elem_reads == v.traffic.reads);
        CHECK(m.counters().elem_writes == v.traffic.writes);
        CHECK(m.register_count() == v.regs);
      }
    }
    CHECK(softmax_three_pass_traffic(n) == Traffic{static_cast<std::uint64_t>(3 * n), static_cast<std::uint64_t>(n)});
    CHECK(online_softmax_traffic(n) == Traffic{static_cast<std::uint64_t>(2 * n), static_cast<std::uint64_t>(n)});
  }
}

TEST_CASE("large inputs: the safe forms stay finite, the unsafe and ratio forms overflow to nan", "[scalar-lessons][softmax]") {
  std::mt19937_64 rng(6);
  for (std::int64_t n : {2, 5, 33}) {
    auto x = uniform(rng, static_cast<std::size_t>(n), 100, 1000);
    auto want = softmax_reference(x);
    require_close(array(run(softmax_three_pass_source(n), {{"x", x}}, false), "out").values, want, 1e-5);
    require_close(array(run(online_softmax_source(n), {{"x", x}}, false), "out").values, want, 1e-5);
    CHECK(any_nan(array(run(softmax_unsafe_source(n), {{"x", x}}, false), "out").values));
    CHECK(any_nan(array(run(online_softmax_source(n, Rescale::Ratio), {{"x", x}}, false), "out").values));
  }
  // n = 1 with a huge input: the safe forms give exactly 1.
  for (const auto& text : {softmax_three_pass_source(1), online_softmax_source(1)})
    CHECK(array(run(text, {{"x", {5000.0}}}, false), "out").values[0] == 1.0);
  // Very negative inputs underflow every e^x in the unsafe form: the machine faults on 0 / 0.
  CHECK_THROWS_AS(run(softmax_unsafe_source(3), {{"x", {-200, -300, -400}}}, false), sim::MachineFault);
}

TEST_CASE("variance traces: Welford in one pass matches the two-pass reference", "[scalar-lessons][variance]") {
  std::mt19937_64 rng(7);
  for (std::int64_t n : {1, 2, 3, 10, 100}) {
    auto x = uniform(rng, static_cast<std::size_t>(n), -10, 10);
    auto ref = moments_reference(x);
    struct Variant {
      std::string text;
      Traffic traffic;
    };
    for (const auto& v : {Variant{variance_welford_source(n), variance_welford_traffic(n)},
                          Variant{variance_two_pass_source(n), variance_two_pass_traffic(n)},
                          Variant{variance_naive_source(n), variance_naive_traffic(n)}}) {
      INFO("n = " << n << "\n" << v.text);
      auto m = run(v.text, {{"x", x}}, true);
      require_close(array(m, "mean").values, {ref.mean}, 1e-12);
      require_close(array(m, "var").values, {ref.variance}, 1e-9);
      CHECK(m.counters().elem_reads == v.traffic.reads);
      CHECK(m.counters().elem_writes == v.traffic.writes);
    }
    CHECK(variance_welford_traffic(n).reads == static_cast<std::uint64_t>(n + 2));
    // Single pass: every x[i] is loaded exactly once.
    auto w = run(variance_welford_source(n), {{"x", x}}, true);
    for (auto r : array(w, "x").tile_reads) CHECK(r == 1);
  }
  // Offset data in float32: Welford keeps its accuracy, E[x^2] - E[x]^2 does not.
  auto x = uniform(rng, 64, 10000, 10001);
  auto ref = moments_reference(x);
  double welford = array(run(variance_welford_source(64), {{"x", x}}, false), "var").values[0];
  double naive = array(run(variance_naive_source(64), {{"x", x}}, false), "var").values[0];
  CHECK(std::fabs(welford - ref.variance) < 1e-2 * ref.variance);
  CHECK(std::fabs(naive - ref.variance) > 0.5 * ref.variance);
}

TEST_CASE("scalar attention in both loop orders matches float64; traffic equals the closed forms",
          "[scalar-lessons][attention]") {
  std::mt19937_64 rng(8);
  struct Size {
    std::int64_t n, d, nq;
  };
  for (auto [n, d, nq] : {Size{1, 1, 1}, Size{1, 3, 2}, Size{2, 2, 2}, Size{4, 2, 4}, Size{5, 3, 3}, Size{8, 1, 8},
                          Size{3, 4, 6}}) {
    for (double scale : {2.0, 30.0}) {  // 30: scores in the thousands
      auto q = uniform(rng, static_cast<std::size_t>(nq * d), -scale, scale);
      auto k = uniform(rng, static_cast<std::size_t>(n * d), -scale, scale);
      auto v = uniform(rng, static_cast<std::size_t>(n * d), -1, 1);
      auto want = attention_reference(q, k, v, d);
      std::vector<AttentionParams> all;
      AttentionParams p;
      p.n = n;
      p.d = d;
      p.queries = nq;
      all.push_back(p);
      p.order = LoopOrder::OuterProduct;
      for (std::int64_t s = 0; s <= nq; ++s) {
        p.slots = s;
        all.push_back(p);
      }
      for (const auto& ap : all) {
        auto text = attention_scalar_source(ap);
        INFO("n = " << n << ", d = " << d << ", nq = " << nq << ", order " << loop_order_name(ap.order) << ", slots "
                    << ap.slots << ", scale " << scale);
        for (bool f64 : {true, false}) {
          auto m = run(text, {{"q", q}, {"K", k}, {"V", v}}, f64);
          require_close(array(m, "o").values, want, f64 ? 1e-11 : 2e-5);
          CHECK(m.register_count() == attention_scalar_registers(ap));
          const auto ud = static_cast<std::uint64_t>(d);
          auto t = attention_scalar_traffic(ap);
          CHECK(array(m, "q").elem_reads == t.q_row_loads * ud);
          CHECK(array(m, "K").elem_reads == t.k_row_loads * ud);
          CHECK(array(m, "V").elem_reads == t.v_row_loads * ud);
          CHECK(array(m, "o").elem_reads == t.o_row_loads * ud);
          CHECK(array(m, "o").elem_writes == t.o_row_stores * ud);
          CHECK(array(m, "m").elem_reads == t.stat_loads);
          CHECK(array(m, "l").elem_reads == t.stat_loads);
          CHECK(array(m, "m").elem_writes == t.stat_stores);
          CHECK(array(m, "l").elem_writes == t.stat_stores);
          // Nothing but the state is ever written: no score or probability reaches DRAM.
          CHECK(m.counters().elem_writes == t.o_row_stores * ud + 2 * t.stat_stores);
        }
      }
    }
  }
}

TEST_CASE("the lesson 09 table: n versus n^2 by order, and each output slot saves n - 1 stores",
          "[scalar-lessons][attention]") {
  for (std::int64_t n : {1, 2, 5, 8}) {
    const auto un = static_cast<std::uint64_t>(n);
    AttentionParams inner;
    inner.n = n;
    auto ti = attention_scalar_traffic(inner);
    CHECK(ti.q_row_loads == un);
    CHECK(ti.k_row_loads == un * un);
    CHECK(ti.v_row_loads == un * un);
    CHECK(ti.o_row_loads == un);
    CHECK(ti.o_row_stores == un);
    AttentionParams outer = inner;
    outer.order = LoopOrder::OuterProduct;
    for (std::int64_t s = 0; s <= n; ++s) {
      outer.slots = s;
      auto t = attention_scalar_traffic(outer);
      CHECK(t.q_row_loads == un * un);
      CHECK(t.k_row_loads == un);
      CHECK(t.o_row_stores == un * un - static_cast<std::uint64_t>(s) * (un - 1));
      CHECK(t.o_row_loads == t.o_row_stores);
    }
  }
  auto table = attention_traffic_table(8, 2);
  CHECK(table.find("64 = n^2") != std::string::npos);
  CHECK(table.find("8 = n") != std::string::npos);
  CHECK(table.find("outer, 4 slots") != std::string::npos);
  auto costs = softmax_cost_table(8);
  CHECK(costs.find("24 (3n)") != std::string::npos);
  CHECK(costs.find("16 (2n)") != std::string::npos);
}

TEST_CASE("generators by name, with clear errors for bad requests", "[scalar-lessons]") {
  for (const auto& name : scalar_schedule_names()) {
    INFO(name);
    auto text = scalar_schedule_source(name, {{"n", 3}});
    CHECK_NOTHROW(isa::assemble(text, name));
  }
  CHECK_THROWS_WITH(scalar_schedule_source("softmax-bogus", {}), Catch::Contains("unknown schedule"));
  CHECK_THROWS_WITH(scalar_schedule_source("softmax-online", {{"m", 3}}), Catch::Contains("unknown parameter 'm'"));
  CHECK_THROWS_WITH(scalar_schedule_source("softmax-online", {{"n", 0}}), Catch::Contains("at least 1"));
  CHECK_THROWS_WITH(scalar_schedule_source("attention-outer", {{"n", 3}, {"slots", 4}}), Catch::Contains("slots"));
  CHECK_THROWS_WITH(scalar_schedule_source("attention-inner", {{"n", 3}, {"slots", 1}}), Catch::Contains("outer-product"));
  CHECK_THROWS_WITH(scalar_schedule_source("attention-inner", {{"d", 0}}), Catch::Contains("d must be"));
  // The generated text is re-sizable with --param, like the lesson traces.
  isa::AssembleOptions o;
  o.params = {{"n", 5}, {"d", 3}};
  auto p = isa::assemble(scalar_schedule_source("attention-inner", {}), "gen", o);
  CHECK(p.arrays[*p.find_array("K")].elements() == 15);
}

TEST_CASE("lesson checks pass the solutions and fail wrong traces with clear messages", "[scalar-lessons][checks]") {
  SECTION("05: the unsafe softmax fails on large inputs") {
    auto v = check("05", "", read("lessons/05-safe-softmax/unsafe.fsa"));
    CHECK_FALSE(v.passed);
    CHECK(mentions(v, "large inputs in 100..1000"));
    CHECK(mentions(v, "got nan"));
    CHECK(check("05", "", read("lessons/05-safe-softmax/solution.fsa")).passed);
  }
  SECTION("05: the exercise as shipped fails: nothing is stored") {
    auto v = check("05", "", read("lessons/05-safe-softmax/exercise.fsa"));
    CHECK_FALSE(v.passed);
    CHECK(mentions(v, "out[0] is never stored"));
  }
  SECTION("05: a straight-line trace for n = 8 only is told to use .param and loops") {
    std::string text = ".regs 3\nLOAD x[0], R1\n";
    for (int i = 1; i < 8; ++i) text += "LOAD x[" + std::to_string(i) + "], R0\nMAX R0, R1, R1\n";
    text += "LOAD x[0], R0\nSUB R0, R1, R0\nEXP R0, R0\nMOV R0, R2\n";
    for (int i = 1; i < 8; ++i) text += "LOAD x[" + std::to_string(i) + "], R0\nSUB R0, R1, R0\nEXP R0, R0\nADD R2, R0, R2\n";
    for (int i = 0; i < 8; ++i)
      text += "LOAD x[" + std::to_string(i) + "], R0\nSUB R0, R1, R0\nEXP R0, R0\nDIV R0, R2, R0\nSTORE R0, out[" +
              std::to_string(i) + "]\n";
    auto v = check("05", "", text);
    CHECK_FALSE(v.passed);
    CHECK(mentions(v, ".param"));
  }
  SECTION("06: three passes are over the 2n budget; the ratio rescale overflows") {
    auto three = check("06", "", read("lessons/05-safe-softmax/solution.fsa"));
    CHECK_FALSE(three.passed);
    CHECK(mentions(three, "the budget is 16"));
    auto ratio = check("06", "", read("lessons/06-online-softmax/ratio.fsa"));
    CHECK_FALSE(ratio.passed);
    CHECK(mentions(ratio, "got nan"));
    CHECK(check("06", "", read("lessons/06-online-softmax/solution.fsa")).passed);
  }
  SECTION("07: the naive formula cancels, the two-pass version reads x twice") {
    auto naive = check("07", "", read("lessons/07-welford/naive.fsa"));
    CHECK_FALSE(naive.passed);
    CHECK(mentions(naive, "E[x^2] - E[x]^2"));
    auto two = check("07", "", read("lessons/07-welford/two-pass.fsa"));
    CHECK_FALSE(two.passed);
    CHECK(mentions(two, "read 2 times"));
    CHECK(check("07", "", read("lessons/07-welford/solution.fsa")).passed);
  }
  SECTION("08: storing scores or probabilities fails") {
    std::string sol = read("lessons/08-online-attention/solution.fsa");
    // Park every probability in o[0][0] before it is used: the values still come out right.
    std::string parked = sol;
    auto at = parked.find("  EXP R0, R0              # p");
    REQUIRE(at != std::string::npos);
    parked.insert(parked.find('\n', at) + 1, "  STORE R0, o[0][0]\n");
    auto v = check("08", "", parked);
    CHECK_FALSE(v.passed);
    CHECK(mentions(v, "P is never materialized"));
    // Or a scratch array for the scores: the machine has none.
    std::string scratch = sol;
    at = scratch.find("  MOV R2, R4");
    scratch.insert(at, "  STORE R0, p[j]\n");
    auto w = check("08", "", scratch);
    CHECK_FALSE(w.passed);
    CHECK(mentions(w, "array 'p'"));
    CHECK(check("08", "", sol).passed);
  }
  SECTION("08: a state that grows with n fails") {
    // Keep every score in its own register R{2*d+5+j}: more registers for larger n.
    std::string sol = read("lessons/08-online-attention/solution.fsa");
    std::string grows = sol;
    auto at = grows.find("  MOV R2, R4");
    grows.insert(at, "  MOV R0, R{2*d+5+j}\n");
    grows.replace(grows.find(".regs 2*d+5"), 11, ".regs 2*d+5+n");
    auto v = check("08", "", grows);
    CHECK_FALSE(v.passed);
  }
  SECTION("09: each part's solution passes; the inner order fails the outer part") {
    CHECK(check("09", "inner", read("lessons/09-attention-loop-orders/inner.fsa")).passed);
    CHECK(check("09", "outer", read("lessons/09-attention-loop-orders/solution.fsa")).passed);
    auto v = check("09", "outer", read("lessons/09-attention-loop-orders/inner.fsa"));
    CHECK_FALSE(v.passed);
    CHECK(mentions(v, "loads each key and value once"));
    auto ex = check("09", "outer", read("lessons/09-attention-loop-orders/exercise.fsa"));
    CHECK_FALSE(ex.passed);
    CHECK(mentions(ex, "never stored"));
    // The generated outer trace with resident slots also solves the outer part.
    AttentionParams p;
    p.n = 4;
    p.d = 2;
    p.order = LoopOrder::OuterProduct;
    p.slots = 0;
    CHECK(check("09", "outer", attention_scalar_source(p)).passed);
  }
}

// The lesson's traces reproduce its costs, and their values match a float64 reference
// on random inputs.
#include <catch2/catch.hpp>
#include <cmath>

#include "main_helpers.h"

using namespace flashsim;

namespace {
sim::Machine run_seeded(const std::string& file, std::uint64_t seed, const isa::AssembleOptions& ao = {},
                        bool f64 = true) {
  sim::MachineOptions o;
  o.seed = seed;
  o.f64 = f64;
  return test::run_program(test::load(file, ao), o);
}

std::vector<double> matmul2(const std::vector<double>& a, const std::vector<double>& b) {
  return {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
}

std::vector<double> softmax(const std::vector<double>& x) {
  double m = -INFINITY, s = 0;
  for (double v : x) m = std::max(m, v);
  for (double v : x) s += std::exp(v - m);
  std::vector<double> y;
  for (double v : x) y.push_back(std::exp(v - m) / s);
  return y;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double rel = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("cell " << i);
    CHECK(got[i] == Approx(want[i]).epsilon(rel));
  }
}
}  // namespace

TEST_CASE("Problem 1: c00 takes 7 cycles on 3 registers", "[lesson-trace]") {
  for (std::uint64_t seed : {1, 2, 3}) {
    auto m = run_seeded("lessons/01-dot-product/solution.fsa", seed);
    const auto& c = m.counters();
    CHECK(c.cycles == 7);
    CHECK(c.count(isa::Opcode::LOAD) == 4);
    CHECK(c.of_class(isa::OpClass::Mac) == 2);
    CHECK(c.count(isa::Opcode::STORE) == 1);
    CHECK(m.register_count() == 3);
    auto a = test::values(m, "a"), b = test::values(m, "b");
    // Shapes are inferred from use: a is 1x2 (row 0) and b is 2x1 (column 0).
    REQUIRE(a.size() == 2);
    REQUIRE(b.size() == 2);
    CHECK(test::values(m, "c")[0] == Approx(a[0] * b[0] + a[1] * b[1]).epsilon(1e-12));
  }
}

TEST_CASE("Problem 2: the 2x2 inner product takes 25 cycles and 13 LOADs on 3 registers", "[lesson-trace]") {
  for (std::uint64_t seed : {1, 2, 3}) {
    auto m = run_seeded("lessons/02-locality/solution.fsa", seed);
    CHECK(m.counters().cycles == 25);
    CHECK(m.counters().count(isa::Opcode::LOAD) == 13);
    CHECK(m.register_count() == 3);
    check_close(test::values(m, "c"), matmul2(test::values(m, "a"), test::values(m, "b")));
  }
}

TEST_CASE("Problem 3: the outer product takes 22 cycles and 10 LOADs on 6 registers", "[lesson-trace]") {
  for (std::uint64_t seed : {1, 2, 3}) {
    auto m = run_seeded("lessons/03-outer-product/solution.fsa", seed);
    CHECK(m.counters().cycles == 22);
    CHECK(m.counters().count(isa::Opcode::LOAD) == 10);
    CHECK(m.register_count() == 6);
    check_close(test::values(m, "c"), matmul2(test::values(m, "a"), test::values(m, "b")));
  }
}

TEST_CASE("Problem 4: safe softmax reads 3n and writes n with 3 registers", "[lesson-trace]") {
  for (std::int64_t n : {1, 2, 5, 16, 100}) {
    isa::AssembleOptions ao;
    ao.params["n"] = n;
    auto m = run_seeded("lessons/05-safe-softmax/solution.fsa", static_cast<std::uint64_t>(n), ao);
    INFO("n = " << n);
    CHECK(m.counters().elem_reads == static_cast<std::uint64_t>(3 * n));
    CHECK(m.counters().elem_writes == static_cast<std::uint64_t>(n));
    CHECK(m.register_count() == 3);
    check_close(test::values(m, "out"), softmax(test::values(m, "x")));
  }
}

TEST_CASE("Problem 5: online softmax reads 2n and writes n with 4 registers", "[lesson-trace]") {
  for (std::int64_t n : {1, 2, 5, 16, 100}) {
    isa::AssembleOptions ao;
    ao.params["n"] = n;
    auto m = run_seeded("lessons/06-online-softmax/solution.fsa", static_cast<std::uint64_t>(n) + 50, ao);
    INFO("n = " << n);
    CHECK(m.counters().elem_reads == static_cast<std::uint64_t>(2 * n));
    CHECK(m.counters().elem_writes == static_cast<std::uint64_t>(n));
    CHECK(m.register_count() == 4);
    check_close(test::values(m, "out"), softmax(test::values(m, "x")), 1e-12);
  }
}

TEST_CASE("float32 registers stay within float32 rounding of the reference", "[lesson-trace]") {
  isa::AssembleOptions ao;
  ao.params["n"] = 64;
  auto m = run_seeded("lessons/06-online-softmax/solution.fsa", 9, ao, /*f64=*/false);
  check_close(test::values(m, "out"), softmax(test::values(m, "x")), 1e-5);
}

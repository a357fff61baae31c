// The device level: ring schedules for many P against the float64 reference and the closed
// forms of the link bytes; ill-formed schedules are refused.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "sim/ring.h"

using namespace flashsim::sim::ring;

namespace {

struct Qkv {
  std::vector<double> q, k, v;
};

Qkv random_qkv(std::int64_t n, std::int64_t d, std::uint64_t seed, double range = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-range, range);
  Qkv x;
  for (auto* a : {&x.q, &x.k, &x.v}) {
    a->resize(static_cast<std::size_t>(n * d));
    for (auto& e : *a) e = u(rng);
  }
  return x;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

std::int64_t sum(const std::vector<std::int64_t>& v) {
  std::int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

}  // namespace

TEST_CASE("ring forward equals the float64 reference and the closed-form link bytes for P = 1..64", "[ring]") {
  for (bool causal : {false, true}) {
    for (int p = 1; p <= 64; ++p) {
      // uneven splits too: n not a multiple of P
      for (std::int64_t n : {std::int64_t{p}, std::int64_t{2 * p + 3}, std::int64_t{67}}) {
        if (n < p) continue;
        const std::int64_t d = 1 + (p % 5);
        RingConfig cfg{n, d, p, causal, 2, 4, 8};
        auto x = random_qkv(n, d, static_cast<std::uint64_t>(p * 1000 + n), 3.0);
        RingMachine m(cfg, x.q, x.k, x.v);
        m.execute(forward_schedule(cfg));
        std::vector<double> lse;
        const auto ref = attention_reference(x.q, x.k, x.v, n, d, causal, &lse);
        INFO("P = " << p << ", n = " << n << ", d = " << d << (causal ? ", causal" : ""));
        CHECK(max_diff(m.output(), ref) < 1e-12);
        CHECK(max_diff(m.lse(), lse) < 1e-12);
        for (int l = 0; l < p; ++l) CHECK(m.link_bytes()[l] == forward_link_bytes(cfg, l));
        CHECK(sum(m.link_bytes()) == forward_total_link_bytes(cfg));
        CHECK(sum(m.link_bytes()) == 2 * d * 2 * (p - 1) * n);
        // every device ends holding the block of the device after it
        for (int dev = 0; dev < p; ++dev) CHECK(m.held(Payload::KV)[dev] == (dev + 1) % p);
      }
    }
  }
}

TEST_CASE("with P dividing n each device moves (P-1)/P of K and V", "[ring]") {
  for (int p : {1, 2, 4, 8, 16, 64}) {
    RingConfig cfg{4096, 64, p, false, 2, 4, 64};
    RingMachine m(cfg);  // count-only
    m.execute(forward_schedule(cfg));
    const std::int64_t kv = 2 * cfg.n * cfg.d * cfg.elem_bytes;
    for (const auto& dev : m.devices()) {
      CHECK(dev.link_sent * p == kv * (p - 1));
      CHECK(dev.link_received * p == kv * (p - 1));
    }
  }
}

TEST_CASE("causal ring skips blocks above the diagonal and counts the scores of a triangle", "[ring]") {
  const int p = 4;
  RingConfig cfg{64, 8, p, true, 4, 4, 16};
  const auto sch = forward_schedule(cfg);
  int computes = 0, masked = 0;
  for (const auto& op : sch.ops)
    if (op.kind == OpKind::Compute) {
      ++computes;
      CHECK(op.block <= op.device);
      masked += op.masked;
    }
  CHECK(computes == p * (p + 1) / 2);
  CHECK(masked == p);
  RingMachine m(cfg);
  m.execute(sch);
  std::int64_t scores = 0;
  for (const auto& dev : m.devices()) scores += dev.score_elems;
  CHECK(scores == 64 * 65 / 2);
  // device p does p + 1 computes: the last device does the most (the ring's load imbalance)
  for (int dev = 0; dev < p; ++dev) CHECK(m.devices()[dev].computes == dev + 1);
  // the link bytes do not shrink with the mask: every block still travels
  CHECK(sum(m.link_bytes()) == forward_total_link_bytes(cfg));
}

TEST_CASE("the per-device HBM model of a step: Q once, K and V once per query tile, merges after the first",
          "[ring]") {
  RingConfig cfg{256, 64, 2, false, 4, 4, 64};
  RingMachine m(cfg);
  m.execute(forward_schedule(cfg));
  const std::int64_t np = 128, e = 4, d = 64, tiles = 2;
  const std::int64_t one_step_read = np * d * e + tiles * 2 * np * d * e;
  const std::int64_t merge_read = 2 * (np * d * e + 4 * np);
  for (const auto& dev : m.devices()) {
    CHECK(dev.computes == 2);
    CHECK(dev.hbm_read == 2 * one_step_read + merge_read);
    CHECK(dev.hbm_written == 3 * (np * d * e + 4 * np));
    // Q, O, O_b, two lse and two K/V blocks (held + arriving)
    CHECK(dev.resident_peak == 3 * np * d * e + 8 * np + 2 * 2 * np * d * e);
  }
}

TEST_CASE("ring backward: dK/dV travel one hop more and end at their owners; closed-form bytes", "[ring]") {
  for (int p = 1; p <= 64; p += (p < 8 ? 1 : 7)) {
    for (bool causal : {false, true}) {
      RingConfig cfg{3 * p + 1, 16, p, causal, 2, 4, 16};
      RingMachine m(cfg);
      m.execute(backward_schedule(cfg));
      INFO("P = " << p);
      for (int dev = 0; dev < p; ++dev) {
        CHECK(m.held(Payload::dKV)[dev] == dev);
        CHECK(m.link_bytes()[dev] == backward_link_bytes(cfg, dev));
      }
      CHECK(sum(m.link_bytes()) == backward_total_link_bytes(cfg));
      if (p > 1) CHECK(backward_total_link_bytes(cfg) == forward_total_link_bytes(cfg) + 2 * 16 * 4 * cfg.n * p);
    }
  }
}

TEST_CASE("ill-formed ring schedules are refused with a reason", "[ring]") {
  RingConfig cfg{16, 4, 4, false, 4, 4, 4};
  RingMachine m(cfg);
  SECTION("a SEND nobody receives") {
    auto s = forward_schedule(cfg);
    for (auto it = s.ops.begin(); it != s.ops.end(); ++it)
      if (it->kind == OpKind::Recv) {
        s.ops.erase(it);
        break;
      }
    REQUIRE_THROWS_WITH(m.execute(s), Catch::Contains("never receives"));
  }
  SECTION("a SEND to a device that is not the next on the ring") {
    auto s = forward_schedule(cfg);
    for (auto& op : s.ops)
      if (op.kind == OpKind::Send) {
        op.peer = (op.device + 2) % 4;
        break;
      }
    REQUIRE_THROWS_WITH(m.execute(s), Catch::Contains("not the next on the ring"));
  }
  SECTION("a COMPUTE with a block the device does not hold") {
    auto s = forward_schedule(cfg);
    for (auto& op : s.ops)
      if (op.kind == OpKind::Compute && op.step == 1) {
        op.block = op.device;
        break;
      }
    REQUIRE_THROWS_WITH(m.execute(s), Catch::Contains("but holds block"));
  }
  SECTION("bad configurations") {
    REQUIRE_THROWS_AS(forward_schedule({3, 4, 4, false, 4, 4, 4}), RingError);
    REQUIRE_THROWS_AS(forward_schedule({16, 4, 0, false, 4, 4, 4}), RingError);
    REQUIRE_THROWS_AS(RingMachine(cfg, {1.0}, {1.0}, {1.0}), RingError);
  }
}

TEST_CASE("large scores: the ring merge keeps the running max and stays exact", "[ring]") {
  RingConfig cfg{40, 4, 5, true, 4, 4, 8};
  auto x = random_qkv(40, 4, 7, 40.0);  // scores in the hundreds: a naive sum of exp overflows
  RingMachine m(cfg, x.q, x.k, x.v);
  m.execute(forward_schedule(cfg));
  const auto ref = attention_reference(x.q, x.k, x.v, 40, 4, true);
  CHECK(max_diff(m.output(), ref) < 1e-12);
}

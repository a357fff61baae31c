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
      // by hand: P - 1 hops of fp32 partials, then the last hop home in the 2-byte element type
      if (p > 1)
        CHECK(backward_total_link_bytes(cfg) == forward_total_link_bytes(cfg) + 2 * 16 * cfg.n * (4 * (p - 1) + 2));
      // what each device holds at most: home (Q, O, O_b, dO, two lse), two K/V blocks and two dK/dV
      // accumulators; the last hop's arrival (2-byte sums) is smaller than the accumulator it replaces
      const auto segs = device_segments(cfg);
      for (int dev = 0; dev < p; ++dev) {
        std::int64_t rows = 0, most = 0;
        for (const auto& g : segs[dev]) rows += g.rows;
        for (const auto& s : segs) {
          std::int64_t r = 0;
          for (const auto& g : s) r += g.rows;
          most = std::max(most, r);
        }
        CHECK(m.devices()[dev].resident_peak <= 4 * rows * 16 * 2 + 8 * rows + 2 * 2 * most * 16 * 2 + 2 * 2 * most * 16 * 4);
      }
    }
  }
  // the last hop's bytes by link: n = 12 rows on P = 3 contiguous (4 each), d = 16, bf16 inputs
  RingConfig three{12, 16, 3, false, 2, 4, 16};
  for (int link = 0; link < 3; ++link)
    CHECK(backward_link_bytes(three, link) == 2 * 16 * 2 * 8 + 2 * 16 * (4 * 8 + 2 * 4));
}

TEST_CASE("all-gather instead of the ring: the same K/V bytes, 1/P fewer dK/dV bytes, P blocks held", "[ring]") {
  for (int p = 1; p <= 64; p += (p < 8 ? 1 : 7)) {
    for (Split split : {Split::Contiguous, Split::Zigzag}) {
      for (std::int64_t n : {std::int64_t{2} * p * 8, std::int64_t{2} * p * 8 + 3}) {
        RingConfig cfg{n, 16, p, true, 2, 4, 16, split};
        INFO("P = " << p << ", n = " << n << (split == Split::Zigzag ? ", zig-zag" : ", contiguous"));
        std::int64_t fwd = 0, bwd = 0;
        for (int link = 0; link < p; ++link) {
          // the gather: link p carries every block but p+1's, as the ring forward's link does
          CHECK(allgather_link_bytes(cfg, link, false) == forward_link_bytes(cfg, link));
          fwd += allgather_link_bytes(cfg, link, false);
          bwd += allgather_link_bytes(cfg, link, true);
        }
        CHECK(fwd == allgather_total_link_bytes(cfg, false));
        CHECK(bwd == allgather_total_link_bytes(cfg, true));
        // by hand: K and V (2 d e) and, backward, their fp32 partials (2 d 4) cross P - 1 links
        CHECK(allgather_total_link_bytes(cfg, false) == 2 * 16 * 2 * (p - 1) * n);
        CHECK(allgather_total_link_bytes(cfg, true) == 2 * 16 * (2 + 4) * (p - 1) * n);
        if (p > 1) {
          // the ring backward sends every block one hop more, its last: the sums in the element type
          CHECK(backward_total_link_bytes(cfg) - allgather_total_link_bytes(cfg, true) == 2 * 16 * 2 * n);
        } else {
          CHECK(bwd == 0);
        }
        // memory: the ring holds two K/V blocks (and two dK/dV) on top of home; all-gather all P
        RingMachine ring(cfg);
        ring.execute(backward_schedule(cfg));
        for (int dev = 0; dev < p; ++dev) {
          const auto segs = device_segments(cfg);
          std::int64_t rows = 0;
          for (const auto& g : segs[dev]) rows += g.rows;
          const std::int64_t home = 3 * rows * 16 * 2 + 8 * rows;
          CHECK(allgather_resident_peak(cfg, dev, false) == home + 2 * n * 16 * 2);
          CHECK(allgather_resident_peak(cfg, dev, true) == home + rows * 16 * 2 + 2 * n * 16 * 2 + 2 * (n + rows) * 16 * 4);
          if (p >= 4) CHECK(allgather_resident_peak(cfg, dev, true) > ring.devices()[dev].resident_peak);
        }
      }
    }
  }
  RingConfig cfg{64, 16, 4, false, 2, 4, 16};
  CHECK_THROWS_AS(allgather_link_bytes(cfg, 4, false), RingError);
  CHECK_THROWS_AS(allgather_resident_peak(cfg, -1, true), RingError);
}

TEST_CASE("ring against all-gather, predicted by hand: overlap per step against the gather up front", "[ring]") {
  // 4 devices, 64 rows each, one row = 16 values of 2 bytes: a K/V block is 2 x 64 x 16 x 2 =
  // 4096 bytes, its fp32 dK/dV 8192; at 4096 bytes per ms a K/V hop takes 1 ms, a dK/dV hop 2 ms,
  // the last hop home (the sums in the 2-byte element type) 1 ms.
  RingConfig cfg{256, 16, 4, false, 2, 4, 16};
  SECTION("forward, compute-bound: both are the four blocks' compute") {
    const auto t = predict_methods(cfg, false, 10, 10, 4096);
    CHECK(t.ring_ms == Approx(40));
    CHECK(t.allgather_ms == Approx(40));  // the 3 ms gather hides under the own block's 10
  }
  SECTION("forward, exchange-bound: the ring hides a hop per step, the all-gather only one block's worth") {
    const auto t = predict_methods(cfg, false, 10, 10, 4096.0 / 15);  // a hop takes 15 ms
    CHECK(t.ring_ms == Approx(3 * 15 + 10));
    CHECK(t.allgather_ms == Approx(3 * 15 + 3 * 10));
  }
  SECTION("backward: the ring exposes its last dK/dV hop, the all-gather its reduce-scatter") {
    const auto t = predict_methods(cfg, true, 10, 10, 4096);
    CHECK(t.ring_ms == Approx(4 * 10 + 1));
    CHECK(t.allgather_ms == Approx(10 + 3 * 10 + 3 * 2));
  }
  SECTION("causal, contiguous: the last device's diagonal and three full blocks decide") {
    RingConfig c = cfg;
    c.causal = true;
    const auto t = predict_methods(c, false, 10, 6, 4096);
    CHECK(t.ring_ms == Approx(6 + 3 * 10));
    CHECK(t.allgather_ms == Approx(6 + 3 * 10));
  }
  SECTION("one device moves nothing") {
    RingConfig one{64, 16, 1, false, 2, 4, 16};
    const auto t = predict_methods(one, true, 10, 10, 4096);
    CHECK(t.ring_ms == Approx(10));
    CHECK(t.allgather_ms == Approx(10));
  }
  CHECK_THROWS_AS(predict_methods(cfg, false, 10, 10, 0), RingError);
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

TEST_CASE("zig-zag forward equals the float64 reference and the closed-form link bytes for P = 1..64", "[ring]") {
  for (bool causal : {false, true}) {
    for (int p = 1; p <= 64; ++p) {
      // 2P chunks of one row, of three rows, and an uneven split (n not a multiple of 2P)
      for (std::int64_t n : {std::int64_t{2 * p}, std::int64_t{6 * p}, std::int64_t{4 * p + 3}}) {
        const std::int64_t d = 1 + (p % 4);
        RingConfig cfg{n, d, p, causal, 2, 4, 2, Split::Zigzag};
        auto x = random_qkv(n, d, static_cast<std::uint64_t>(p * 7919 + n), 3.0);
        RingMachine m(cfg, x.q, x.k, x.v);
        const auto sch = forward_schedule(cfg);
        m.execute(sch);
        std::vector<double> lse;
        const auto ref = attention_reference(x.q, x.k, x.v, n, d, causal, &lse);
        INFO("P = " << p << ", n = " << n << ", d = " << d << (causal ? ", causal" : ""));
        CHECK(max_diff(m.output(), ref) < 1e-12);
        CHECK(max_diff(m.lse(), lse) < 1e-12);
        for (int l = 0; l < p; ++l) CHECK(m.link_bytes()[l] == forward_link_bytes(cfg, l));
        CHECK(sum(m.link_bytes()) == forward_total_link_bytes(cfg));
        // device dev owns chunks dev and 2P-1-dev of split_rows(n, 2P), in that order
        std::vector<std::int64_t> start, rows;
        split_rows(n, 2 * p, start, rows);
        for (int dev = 0; dev < p; ++dev) {
          REQUIRE(sch.segments[dev].size() == 2);
          CHECK(sch.segments[dev][0].start == start[dev]);
          CHECK(sch.segments[dev][1].start == start[2 * p - 1 - dev]);
          CHECK(sch.block_rows[dev] == rows[dev] + rows[2 * p - 1 - dev]);
          CHECK(m.held(Payload::KV)[dev] == (dev + 1) % p);
        }
      }
    }
  }
}

TEST_CASE("zig-zag balances causal work exactly when 2P divides n; contiguous does not", "[ring]") {
  for (int p = 1; p <= 64; ++p) {
    for (std::int64_t c : {1, 3, 64}) {  // rows per chunk
      const std::int64_t n = 2 * p * c;
      INFO("P = " << p << ", n = " << n);
      RingConfig zz{n, 64, p, true, 2, 4, 64, Split::Zigzag};
      RingMachine m(zz);
      m.execute(forward_schedule(zz));
      std::int64_t all = 0;
      for (const auto& dev : m.devices()) {
        // two chunks of queries: chunk dev sees dev chunks and a triangle, chunk 2P-1-dev sees
        // 2P-1-dev chunks and a triangle: (2P-1) c^2 + c (c+1) on every device
        CHECK(dev.score_elems == (2 * p - 1) * c * c + c * (c + 1));
        CHECK(dev.computes == p);            // a zig-zag device works at every step
        CHECK(dev.pairs == 2 * p + 1);       // two pairs a step, three on its own block
        // the two diagonal chunks (a one-row chunk's own key is no mask: that pair is full)
        CHECK(dev.masked_pairs == (c > 1 ? 2 : 0));
        CHECK(dev.link_sent == (p - 1) * 2 * 2 * c * 64 * 2);
        all += dev.score_elems;
      }
      CHECK(all == n * (n + 1) / 2);
      CHECK(score_imbalance(m.devices()) == 1.0);
      CHECK(sum(m.link_bytes()) == forward_total_link_bytes(zz));

      RingConfig ct{n, 64, p, true, 2, 4, 64, Split::Contiguous};
      RingMachine mc(ct);
      mc.execute(forward_schedule(ct));
      const std::int64_t nl = n / p;
      for (int dev = 0; dev < p; ++dev) {
        CHECK(mc.devices()[dev].score_elems == dev * nl * nl + nl * (nl + 1) / 2);
        CHECK(mc.devices()[dev].pairs == dev + 1);
        CHECK(mc.devices()[dev].masked_pairs == 1);
      }
      const double expect = static_cast<double>((p - 1) * nl * nl + nl * (nl + 1) / 2) * p / (n * (n + 1) / 2.0);
      CHECK(score_imbalance(mc.devices()) == Approx(expect));
      // the same bytes travel under either split
      CHECK(sum(mc.link_bytes()) == sum(m.link_bytes()));
    }
  }
}

TEST_CASE("zig-zag without a mask: every device evaluates its rows against all n keys", "[ring]") {
  for (int p : {1, 2, 3, 8, 64}) {
    RingConfig cfg{2 * p * 5 + 1, 8, p, false, 2, 4, 4, Split::Zigzag};
    RingMachine m(cfg);
    const auto sch = forward_schedule(cfg);
    m.execute(sch);
    for (int dev = 0; dev < p; ++dev) {
      CHECK(m.devices()[dev].score_elems == sch.block_rows[dev] * cfg.n);
      CHECK(m.devices()[dev].pairs == 4 * p);
      CHECK(m.devices()[dev].masked_pairs == 0);
    }
  }
}

TEST_CASE("the zig-zag HBM model, by hand: P = 2, n = 512, 64-row tiles", "[ring]") {
  // device 0 holds chunks 0 and 3 (128 rows each), device 1 chunks 1 and 2.
  // Device 0, step 0 (its own block): (0,0) masked, (3,0) full, (3,3) masked;
  //           step 1 (block 1 = chunks 1, 2): (3,1) full, (3,2) full; chunk 0 skips both.
  // Device 1, step 0: (1,1) masked, (2,1) full, (2,2) masked; step 1 (chunks 0, 3): (1,0), (2,0) full.
  RingConfig cfg{512, 64, 2, true, 2, 4, 64, Split::Zigzag};
  RingMachine m(cfg);
  m.execute(forward_schedule(cfg));
  const std::int64_t c = 128, d = 64, e = 2, q = c * d * e, o = q + 4 * c;
  const std::int64_t masked_kv = 64 + 128, full_kv = 2 * 128;  // K/V rows read per pair
  // device 0: 5 pairs (2 masked), chunk 3 merges three times; device 1: 5 pairs (2 masked),
  // chunk 1 merges once (step 1), chunk 2 merges twice
  for (int dev = 0; dev < 2; ++dev) {
    const auto& x = m.devices()[dev];
    CHECK(x.pairs == 5);
    CHECK(x.masked_pairs == 2);
    CHECK(x.hbm_read == 5 * q + 2 * (2 * masked_kv + 3 * full_kv) * d * e + 3 * 2 * o);
    CHECK(x.hbm_written == 5 * o + 3 * o);
  }
  CHECK(m.devices()[0].score_elems == m.devices()[1].score_elems);
}

TEST_CASE("zig-zag needs two rows per device", "[ring]") {
  REQUIRE_THROWS_WITH(forward_schedule({7, 4, 4, true, 2, 4, 4, Split::Zigzag}), Catch::Contains("zig-zag"));
  REQUIRE_NOTHROW(forward_schedule({8, 4, 4, true, 2, 4, 4, Split::Zigzag}));
  RingConfig a{16, 4, 2, true, 2, 4, 4, Split::Zigzag}, b{16, 4, 2, true, 2, 4, 4, Split::Contiguous};
  RingMachine m(a);
  REQUIRE_THROWS_WITH(m.execute(forward_schedule(b)), Catch::Contains("split"));
}

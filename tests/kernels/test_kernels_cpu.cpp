// CPU-side tests of the kernels module: references against naive float64 math (and finite
// differences), tolerance logic, compulsory minimum and traffic model formulas, CLI glue, reports.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <future>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/fp8_ref.h"
#include "kernels/l2_probe.h"
#include "kernels/launch_order.h"
#include "kernels/reference.h"
#include "kernels/report.h"
#include "kernels/ring.h"
#include "kernels/spec.h"
#include "kernels/tools/tile_phase.h"
#include "sim/gpu_time.h"
#include "tests/json_check.h"

using namespace flashsim::gpu;

namespace {

std::vector<float> random_vec(std::size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Naive float64 attention forward of one head: explicit S, row softmax, PV.
void naive_attention(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v, int n,
                     int d, bool causal, std::vector<double>& o, std::vector<double>& lse) {
  o.assign(n * d, 0.0);
  lse.assign(n, 0.0);
  std::vector<double> s(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int c = 0; c < d; ++c) acc += q[i * d + c] * k[j * d + c];
      s[i * n + j] = (causal && j > i) ? -INFINITY : acc / std::sqrt(static_cast<double>(d));
    }
  for (int i = 0; i < n; ++i) {
    double m = -INFINITY;
    for (int j = 0; j < n; ++j) m = std::max(m, s[i * n + j]);
    double l = 0;
    for (int j = 0; j < n; ++j) l += std::exp(s[i * n + j] - m);
    lse[i] = m + std::log(l);
    for (int j = 0; j < n; ++j) {
      const double p = std::exp(s[i * n + j] - m) / l;
      for (int c = 0; c < d; ++c) o[i * d + c] += p * v[j * d + c];
    }
  }
}

std::vector<double> to_d(const std::vector<float>& v) { return {v.begin(), v.end()}; }

Spec attn(Schedule sch, std::int64_t bh, std::int64_t n, bool causal, Dtype dt = Dtype::BF16) {
  Spec s;
  s.schedule = sch;
  s.dtype = dt;
  s.bh = bh;
  s.seq = n;
  s.d = 64;
  s.causal = causal;
  apply_kernel_tiles(s);
  return s;
}

const ArrayModel& arr(const std::vector<ArrayModel>& a, const std::string& name) {
  for (const auto& x : a)
    if (x.name == name) return x;
  FAIL("no array " << name);
  return a.front();
}

}  // namespace

TEST_CASE("bf16 rounding is round-to-nearest-even", "[kernels][reference]") {
  using ref::bf16_round;
  CHECK(bf16_round(1.0f) == 1.0f);
  CHECK(bf16_round(1.0f + std::ldexp(1.0f, -8)) == 1.0f);                              // tie -> even
  CHECK(bf16_round(1.0f + 3 * std::ldexp(1.0f, -8)) == 1.0f + std::ldexp(1.0f, -6));  // tie -> even
  CHECK(bf16_round(1.0f + std::ldexp(1.0f, -7)) == 1.0f + std::ldexp(1.0f, -7));      // representable
  CHECK(bf16_round(-2.5f) == -2.5f);
  CHECK(std::isnan(bf16_round(NAN)));
  CHECK(std::isinf(bf16_round(INFINITY)));
  CHECK(ref::bf16_bits_to_float(0xffff) != ref::bf16_bits_to_float(0xffff));  // the poison pattern is NaN
}

TEST_CASE("relative error", "[kernels][reference]") {
  std::vector<float> a = {3, 4}, b = {3, 4}, c = {3, 5}, z = {0, 0};
  CHECK(ref::rel_error(a, b) == 0.0);
  CHECK(ref::rel_error(c, a) == Approx(1.0 / 5.0));
  CHECK(ref::rel_error(a, z) == Approx(5.0));  // zero reference: absolute norm
  std::vector<float> bad = {3, NAN};
  CHECK(std::isinf(ref::rel_error(bad, a)));
  CHECK(std::isinf(ref::rel_error(std::vector<float>{1}, a)));
}

TEST_CASE("tolerance is scaled by dtype and rejects NaN", "[kernels][spec]") {
  Spec s;
  s.dtype = Dtype::F32;
  CHECK(tolerance(s) == 1e-4);
  s.dtype = Dtype::BF16;
  CHECK(tolerance(s) == 1e-2);
  CHECK(within_tolerance(5e-3, 1e-2));
  CHECK_FALSE(within_tolerance(2e-2, 1e-2));
  CHECK_FALSE(within_tolerance(NAN, 1e-2));
  CHECK_FALSE(within_tolerance(INFINITY, 1e-2));
}

TEST_CASE("FA1's tolerance follows its O round trips; the other schedules keep the dtype's", "[kernels][spec]") {
  CHECK(unit_roundoff(Dtype::BF16) == std::ldexp(1.0, -8));
  CHECK(rounding_rms(Dtype::BF16) == Approx(std::ldexp(1.0, -8) / std::sqrt(6.0)));
  // one round trip is the single output rounding
  CHECK(fa1_round_trip_error(Dtype::BF16, 1) == Approx(rounding_rms(Dtype::BF16)));
  CHECK(fa1_round_trip_error(Dtype::BF16, 192) == Approx(rounding_rms(Dtype::BF16) * std::sqrt(96.5)));
  Spec s;
  s.schedule = Schedule::AttnFA1;
  s.dtype = Dtype::BF16;
  s.bh = 6;
  s.d = 64;
  s.bc = 64;
  double last = 0;
  for (std::int64_t n : {64, 1024, 4096, 12288, 16384}) {
    s.seq = n;
    const double tol = tolerance(s);
    CHECK(tol >= 1e-2);
    CHECK(tol > last);  // grows with the number of round trips
    last = tol;
  }
  s.seq = 12288;  // 192 KV blocks: the H100 run measured 1.63e-2 against the old flat 1e-2
  CHECK(tolerance(s) > 3e-2);
  CHECK(tolerance(s) < 4e-2);
  s.dtype = Dtype::F32;  // fp32 rounding adds nothing visible
  CHECK(tolerance(s) == Approx(1e-4).epsilon(1e-3));
  s.dtype = Dtype::BF16;
  s.schedule = Schedule::AttnFA2;  // O stays in registers
  CHECK(tolerance(s) == 1e-2);
}

// FA1's order on the CPU: double arithmetic except that O is rounded to bf16 after every KV block,
// on a few query rows; its relative error against the exact result must follow the derivation.
static double fa1_bf16_round_trip_error(int n, int rows, std::mt19937& rng) {
  const int d = 64, bc = 64;
  std::uniform_real_distribution<float> qk(-2.f, 2.f), vd(-1.f, 1.f);  // as the GPU workload draws them
  std::vector<float> q(std::size_t(rows) * d), k(std::size_t(n) * d), v(std::size_t(n) * d);
  for (auto& x : q) x = ref::bf16_round(qk(rng));
  for (auto& x : k) x = ref::bf16_round(qk(rng));
  for (auto& x : v) x = ref::bf16_round(vd(rng));
  std::vector<float> got, want;
  const double scale = 1.0 / std::sqrt(double(d));
  for (int r = 0; r < rows; ++r) {
    std::vector<double> s(n), o(d, 0.0), exact(d, 0.0);
    double mx = -INFINITY;
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int c = 0; c < d; ++c) acc += double(q[r * d + c]) * k[std::size_t(j) * d + c];
      s[j] = acc * scale;
      mx = std::max(mx, s[j]);
    }
    double total = 0;
    for (int j = 0; j < n; ++j) {
      const double p = std::exp(s[j] - mx);
      total += p;
      for (int c = 0; c < d; ++c) exact[c] += p * v[std::size_t(j) * d + c];
    }
    double m = -INFINITY, l = 0;
    for (int j0 = 0; j0 < n; j0 += bc) {
      double bm = m;
      for (int j = j0; j < std::min(n, j0 + bc); ++j) bm = std::max(bm, s[j]);
      const double keep = l * std::exp(m - bm);
      std::vector<double> pv(d, 0.0);
      double bl = 0;
      for (int j = j0; j < std::min(n, j0 + bc); ++j) {
        const double p = std::exp(s[j] - bm);
        bl += p;
        for (int c = 0; c < d; ++c) pv[c] += p * v[std::size_t(j) * d + c];
      }
      const double ln = keep + bl;
      for (int c = 0; c < d; ++c) o[c] = ref::bf16_round(static_cast<float>((keep * o[c] + pv[c]) / ln));
      m = bm;
      l = ln;
    }
    for (int c = 0; c < d; ++c) {
      got.push_back(static_cast<float>(o[c]));
      want.push_back(static_cast<float>(exact[c] / total));
    }
  }
  return ref::rel_error(got, want);
}

TEST_CASE("FA1's bf16 round-trip error grows as derived: rms * sqrt((T + 1) / 2)", "[kernels][spec]") {
  std::mt19937 rng(7);
  for (int n : {1024, 8192}) {
    const double measured = fa1_bf16_round_trip_error(n, 48, rng);
    const double predicted = fa1_round_trip_error(Dtype::BF16, n / 64);
    INFO("N = " << n << ": measured " << measured << ", predicted " << predicted);
    CHECK(measured > 0.75 * predicted);
    CHECK(measured < 1.33 * predicted);
  }
}

TEST_CASE("matmul reference matches naive float64", "[kernels][reference]") {
  std::mt19937 rng(1);
  const int m = 13, n = 11, k = 17;
  auto a = random_vec(m * k, rng), b = random_vec(k * n, rng);
  std::vector<std::int64_t> rows = {0, 5, 12};
  std::vector<float> c(rows.size() * n);
  ref::matmul_rows(a.data(), b.data(), n, k, rows, c.data());
  for (std::size_t ri = 0; ri < rows.size(); ++ri)
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int kk = 0; kk < k; ++kk) want += static_cast<double>(a[rows[ri] * k + kk]) * b[kk * n + j];
      CHECK(c[ri * n + j] == Approx(want).epsilon(1e-6).margin(1e-6));
    }
}

TEST_CASE("softmax reference matches naive float64 and does not overflow", "[kernels][reference]") {
  std::mt19937 rng(2);
  auto x = random_vec(1000, rng, -40.f, 40.f);
  x[17] = 300.f;  // exp(300) overflows float; the max subtraction must handle it
  std::vector<float> y(x.size());
  ref::softmax_row(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  double m = -INFINITY, l = 0, total = 0;
  for (float v : x) m = std::max(m, static_cast<double>(v));
  for (float v : x) l += std::exp(v - m);
  for (std::size_t j = 0; j < x.size(); ++j) {
    CHECK(y[j] == Approx(std::exp(x[j] - m) / l).margin(1e-12));
    total += y[j];
  }
  CHECK(total == Approx(1.0).epsilon(1e-6));
}

TEST_CASE("attention forward reference matches explicit float64 softmax(QK^T)V", "[kernels][reference]") {
  std::mt19937 rng(3);
  for (bool causal : {false, true}) {
    const int n = 9, d = 5;
    auto q = random_vec(n * d, rng, -2, 2), k = random_vec(n * d, rng, -2, 2), v = random_vec(n * d, rng);
    std::vector<float> o(n * d), lse(n);
    ref::attention_forward(q.data(), k.data(), v.data(), n, d, causal, o.data(), lse.data());
    std::vector<double> wo, wl;
    naive_attention(to_d(q), to_d(k), to_d(v), n, d, causal, wo, wl);
    for (int x = 0; x < n * d; ++x) CHECK(o[x] == Approx(wo[x]).margin(1e-6));
    for (int i = 0; i < n; ++i) CHECK(lse[i] == Approx(wl[i]).margin(1e-5));
    if (causal)  // row 0 sees only key 0
      for (int c = 0; c < d; ++c) CHECK(o[c] == Approx(v[c]).margin(1e-6));
  }
}

TEST_CASE("attention backward reference matches finite differences of sum(dO * O)", "[kernels][reference]") {
  std::mt19937 rng(4);
  for (bool causal : {false, true}) {
    const int n = 6, d = 4;
    auto q = random_vec(n * d, rng, -1, 1), k = random_vec(n * d, rng, -1, 1), v = random_vec(n * d, rng);
    auto dout = random_vec(n * d, rng);
    std::vector<float> dq(n * d), dk(n * d), dv(n * d);
    ref::attention_backward(q.data(), k.data(), v.data(), dout.data(), n, d, causal, dq.data(), dk.data(), dv.data());
    auto loss = [&](const std::vector<double>& qq, const std::vector<double>& kk, const std::vector<double>& vv) {
      std::vector<double> o, lse;
      naive_attention(qq, kk, vv, n, d, causal, o, lse);
      double l = 0;
      for (int x = 0; x < n * d; ++x) l += o[x] * dout[x];
      return l;
    };
    const double h = 1e-5;
    auto qd = to_d(q), kd = to_d(k), vd = to_d(v);
    for (int which = 0; which < 3; ++which) {
      std::vector<double>& t = which == 0 ? qd : which == 1 ? kd : vd;
      const std::vector<float>& g = which == 0 ? dq : which == 1 ? dk : dv;
      for (int x = 0; x < n * d; ++x) {
        const double keep = t[x];
        t[x] = keep + h;
        const double up = loss(qd, kd, vd);
        t[x] = keep - h;
        const double down = loss(qd, kd, vd);
        t[x] = keep;
        CHECK(g[x] == Approx((up - down) / (2 * h)).margin(1e-5));
      }
    }
  }
}

TEST_CASE("row-sampled attention references agree with the full-head references", "[kernels][reference]") {
  std::mt19937 rng(5);
  for (bool causal : {false, true}) {
    const int n = 11, d = 6;
    auto q = random_vec(n * d, rng, -2, 2), k = random_vec(n * d, rng, -2, 2), v = random_vec(n * d, rng);
    auto dout = random_vec(n * d, rng);
    std::vector<float> o(n * d), lse(n), dq(n * d), dk(n * d), dv(n * d);
    ref::attention_forward(q.data(), k.data(), v.data(), n, d, causal, o.data(), lse.data());
    ref::attention_backward(q.data(), k.data(), v.data(), dout.data(), n, d, causal, dq.data(), dk.data(), dv.data());
    const std::vector<std::int64_t> rows = {0, 4, 10};
    std::vector<float> ro(rows.size() * d), rl(rows.size()), rq(rows.size() * d), rk(rq), rv(rq);
    ref::attention_forward_rows(q.data(), k.data(), v.data(), n, d, causal, rows, ro.data(), rl.data());
    ref::attention_backward_rows(q.data(), k.data(), v.data(), o.data(), dout.data(), lse.data(), n, d, causal, rows,
                                 rq.data(), rk.data(), rv.data());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      CHECK(rl[r] == Approx(lse[rows[r]]).margin(1e-6));
      for (int c = 0; c < d; ++c) {
        const auto x = rows[r] * d + c;
        CHECK(ro[r * d + c] == Approx(o[x]).margin(1e-6));
        CHECK(rq[r * d + c] == Approx(dq[x]).margin(1e-5));
        CHECK(rk[r * d + c] == Approx(dk[x]).margin(1e-5));
        CHECK(rv[r * d + c] == Approx(dv[x]).margin(1e-5));
      }
    }
  }
}

TEST_CASE("pick_indices spreads and includes both ends", "[kernels][reference]") {
  CHECK(ref::pick_indices(3, 16) == std::vector<std::int64_t>{0, 1, 2});
  auto p = ref::pick_indices(100, 5);
  CHECK(p == std::vector<std::int64_t>{0, 24, 49, 74, 99});
  CHECK(ref::pick_indices(100, 1) == std::vector<std::int64_t>{0});
  CHECK(ref::pick_indices(0, 4).empty());
}

TEST_CASE("schedule lists parse groups, keep canonical order and reject unknown names", "[kernels][cli]") {
  CHECK(parse_schedules("all").size() == all_schedules().size());
  CHECK(parse_schedules("softmax-online,matmul") ==
        std::vector<Schedule>{Schedule::MatmulInner, Schedule::MatmulOuter, Schedule::SoftmaxOnline});
  CHECK(parse_schedules("attention").size() == 7);  // 4 forward (one on tensor cores), 3 backward
  CHECK(parse_schedules("attn-fa1, attn-fa1") == std::vector<Schedule>{Schedule::AttnFA1});
  CHECK_THROWS_AS(parse_schedules("attn-fa3"), std::invalid_argument);
  CHECK_THROWS_AS(parse_schedules(""), std::invalid_argument);
}

TEST_CASE("size lists parse presets and op:dims", "[kernels][cli]") {
  auto s = parse_sizes("small, matmul:4096x4096x512,attn:2x100x64");
  REQUIRE(s.matmul.size() == 2);
  CHECK(s.matmul[1] == std::vector<std::int64_t>{4096, 4096, 512});
  CHECK(s.attn_fwd.size() == 2);
  CHECK(s.attn_bwd.back() == std::vector<std::int64_t>{2, 100, 64});
  CHECK(parse_sizes("large").softmax.front() == std::vector<std::int64_t>{256, 524288});
  CHECK_THROWS_AS(parse_sizes("huge"), std::invalid_argument);
  CHECK_THROWS_AS(parse_sizes("matmul:10x10"), std::invalid_argument);
  CHECK_THROWS_AS(parse_sizes("matmul:10x0x10"), std::invalid_argument);
  CHECK_THROWS_AS(parse_sizes("softmax:10xabc"), std::invalid_argument);
  CHECK(parse_sizes("attn-fwd:2x128x128").attn_fwd.size() == 1);               // d = 128: attn-fa2-mma
  CHECK_THROWS_AS(parse_sizes("attn-fwd:2x128x96"), std::invalid_argument);   // d = 64 or 128 only
  CHECK(parse_sizes("attn-bwd:2x128x128").attn_bwd.size() == 1);               // d = 128: bwd-mma
  CHECK_THROWS_AS(parse_sizes("attn-bwd:2x128x32"), std::invalid_argument);
  CHECK_THROWS_AS(parse_sizes("conv:1x2x3"), std::invalid_argument);
}

TEST_CASE("expand uses per-op default dtypes and both masks for attention", "[kernels][cli]") {
  auto specs = expand(parse_schedules("matmul-inner,softmax-3pass,attn-fa2"), parse_sizes("tiny"), {}, {false, true});
  // matmul: fp32 + bf16; softmax: fp32; attention: bf16 x {non-causal, causal}
  REQUIRE(specs.size() == 5);
  CHECK(specs[0].dtype == Dtype::F32);
  CHECK(specs[1].dtype == Dtype::BF16);
  CHECK(specs[2].schedule == Schedule::SoftmaxThree);
  CHECK_FALSE(specs[3].causal);
  CHECK(specs[4].causal);
  CHECK(specs[0].bk == 16);
  auto outer = expand({Schedule::MatmulOuter}, parse_sizes("tiny"), {Dtype::F32}, {false});
  REQUIRE(outer.size() == 1);
  CHECK(outer[0].bm == 256);
  CHECK(outer[0].bk == 4);
  CHECK(outer[0].size_label() == "100x72x40");
  CHECK(specs[4].size_label() == "2x100x64 causal");
}

TEST_CASE("the fast versions: which dtype and head dim each runs, and their tiles", "[kernels][cli]") {
  CHECK_FALSE(unsupported(Schedule::AttnFA2Mma, Dtype::F16, 128));
  CHECK_FALSE(unsupported(Schedule::AttnFA2Mma, Dtype::BF16, 64));
  CHECK(unsupported(Schedule::AttnFA2Mma, Dtype::F32, 64));
  CHECK(unsupported(Schedule::AttnFA2, Dtype::F16, 64));
  CHECK(unsupported(Schedule::AttnFA2, Dtype::BF16, 128));
  CHECK(unsupported(Schedule::SoftmaxFast, Dtype::BF16, 0));
  CHECK_FALSE(unsupported(Schedule::BwdMma, Dtype::F16, 128));
  CHECK(unsupported(Schedule::BwdAtomic, Dtype::BF16, 128));
  CHECK(expand({Schedule::BwdMma}, parse_sizes("attn-bwd:2x100x128"), {}, {false}).front().br == 64);
  // d = 128 and fp16 expand only for the tensor-core forward
  auto specs = expand(parse_schedules("attn-fa2,attn-fa2-mma"), parse_sizes("attn-fwd:2x100x128"),
                      {Dtype::BF16, Dtype::F16}, {false});
  REQUIRE(specs.size() == 2);
  for (const auto& s : specs) {
    CHECK(s.schedule == Schedule::AttnFA2Mma);
    CHECK(s.br == 128);
    CHECK(s.bc == 128);
  }
  CHECK(expand({Schedule::AttnFA2Mma}, parse_sizes("attn-fwd:2x100x64"), {}, {false}).front().bc == 128);
  // d = 64: the launcher's 192-row persistent tiles from N = 2048 (full) and 4096 (causal), 64 below
  auto fwd64 = [](const char* size, bool causal) {
    return expand({Schedule::AttnFA2Mma}, parse_sizes(size), {}, {causal}).front();
  };
  CHECK(fwd64("attn-fwd:2x2047x64", false).br == 64);
  CHECK(fwd64("attn-fwd:2x2048x64", false).br == 192);
  CHECK(fwd64("attn-fwd:2x4095x64", true).br == 64);
  CHECK(fwd64("attn-fwd:2x4096x64", true).br == 192);
  CHECK(fwd64("attn-fwd:2x8192x64", true).br == 192);
  CHECK(fwd64("attn-fwd:2x8192x64", true).bc == 128);
  CHECK(attention_forward_fast_tiling(8192, 64, true).paired);
  CHECK_FALSE(attention_forward_fast_tiling(8192, 64, false).paired);
  CHECK(attention_forward_fast_tiling(100, 128, true).paired);
  // the tiling as compare's CSV records it, and read back by predict --from
  CHECK(attn_tiles_label(fwd64("attn-fwd:2x8192x64", true)) == "192x128 paired");
  CHECK(attn_tiles_label(fwd64("attn-fwd:2x8192x64", false)) == "192x128");
  CHECK(attn_tiles_label(fwd64("attn-fwd:2x1000x64", false)) == "64x128");
  CHECK(attn_tiles_label(expand({Schedule::SoftmaxFast}, parse_sizes("tiny"), {}, {false}).front()).empty());
  {
    Spec t = fwd64("attn-fwd:2x8192x64", true);
    apply_attn_tiles_label(t, "64x128");
    CHECK(t.br == 64);
    CHECK_FALSE(t.paired_tiles);
    apply_attn_tiles_label(t, "192x128 paired");
    CHECK(t.br == 192);
    CHECK(t.paired_tiles);
    for (const char* bad : {"", "abc", "192x", "x128", "192x128 pairs", "0x128", "192*128", "-64x128"})
      CHECK_THROWS_AS(apply_attn_tiles_label(t, bad), std::invalid_argument);
    Spec full = fwd64("attn-fwd:2x8192x64", false);
    CHECK_THROWS_WITH(apply_attn_tiles_label(full, "192x128 paired"), Catch::Contains("without the causal mask"));
    Spec sm = expand({Schedule::SoftmaxFast}, parse_sizes("tiny"), {}, {false}).front();
    CHECK_NOTHROW(apply_attn_tiles_label(sm, ""));
    CHECK_THROWS_WITH(apply_attn_tiles_label(sm, "64x64"), Catch::Contains("not attention"));
    // rows from before the column: at d = 64 three blocks per SM were version 5 (64 x 128 tiles),
    // one was version 6 on the launcher's tiles
    apply_attn_tiles_before_column(t, 1);
    CHECK(attn_tiles_label(t) == "192x128 paired");
    apply_attn_tiles_before_column(t, 3);
    CHECK(attn_tiles_label(t) == "64x128");
    Spec d128 = expand({Schedule::AttnFA2Mma}, parse_sizes("attn-fwd:2x8192x128"), {}, {true}).front();
    apply_attn_tiles_before_column(d128, 1);
    CHECK(attn_tiles_label(d128) == "128x128 paired");
  }
  {
    // since 2026-12-07 the label also says the split tail (the full-mask forward at d = 128 from
    // N = 8192) and the causal backward's longest-first order; a label or a CSV without them is a
    // run from before: whole tiles, shortest first
    auto one = [](Schedule sc, const char* size, bool causal) { return expand({sc}, parse_sizes(size), {}, {causal}).front(); };
    Spec split = one(Schedule::AttnFA2Mma, "attn-fwd:2x8192x128", false);
    CHECK(split.split_tail);
    CHECK(attn_tiles_label(split) == "128x128 split");
    CHECK_FALSE(one(Schedule::AttnFA2Mma, "attn-fwd:2x4096x128", false).split_tail);
    CHECK_FALSE(one(Schedule::AttnFA2Mma, "attn-fwd:2x8192x64", false).split_tail);
    CHECK(attn_tiles_label(one(Schedule::AttnFP8, "attn-fwd:2x16384x128", false)) == "128x128 split");
    Spec bwd = one(Schedule::BwdMma, "attn-bwd:2x4096x128", true);
    CHECK(attn_tiles_label(bwd) == "64x128 longest-first");
    CHECK(attn_tiles_label(one(Schedule::BwdMma, "attn-bwd:2x4096x128", false)) == "64x128");
    apply_attn_tiles_label(bwd, "64x128");
    CHECK(bwd.shortest_first);
    apply_attn_tiles_label(bwd, "64x128 longest-first");
    CHECK_FALSE(bwd.shortest_first);
    apply_attn_tiles_before_column(bwd, 1);
    CHECK(bwd.shortest_first);
    apply_attn_tiles_label(split, "128x128");
    CHECK_FALSE(split.split_tail);
    apply_attn_tiles_label(split, "128x128 split");
    CHECK(split.split_tail);
    apply_attn_tiles_before_column(split, 1);
    CHECK_FALSE(split.split_tail);
    CHECK_THROWS_WITH(apply_attn_tiles_label(bwd, "64x128 split"), Catch::Contains("full-mask forward"));
    CHECK_THROWS_WITH(apply_attn_tiles_label(split, "128x128 longest-first"), Catch::Contains("causal bwd-mma"));
    Spec causal_fwd = one(Schedule::AttnFA2Mma, "attn-fwd:2x8192x128", true);
    CHECK_THROWS_WITH(apply_attn_tiles_label(causal_fwd, "128x128 paired split"), Catch::Contains("full-mask forward"));
  }
  CHECK(expand({Schedule::SoftmaxFast}, parse_sizes("tiny"), {}, {false}).front().chunk == 16384);
  CHECK(parse_dtype("fp16") == Dtype::F16);
  CHECK(std::string(dtype_name(Dtype::F16)) == "fp16");
  // the fast FA2 moves what FA2 moves with its own tiles: K and V once per 128-row Q tile (d = 128)
  Spec s = specs.front();
  s.dtype = Dtype::BF16;
  const auto a = model_traffic(s);
  CHECK(arr(a, "K").read == 2ull * 1 * 100 * 128 * 2);  // 2 heads x 1 Q tile (rows 0-99)
  CHECK(arr(a, "O").written == 2ull * 100 * 128 * 2);
}

TEST_CASE("compulsory minimum: each input once, each output once", "[kernels][traffic]") {
  Spec m;
  m.schedule = Schedule::MatmulOuter;
  m.dtype = Dtype::BF16;
  m.m = 100; m.n = 200; m.k = 50;
  CHECK(compulsory(m).read == (100 * 50 + 50 * 200) * 2);
  CHECK(compulsory(m).written == 100 * 200 * 4);

  Spec s;
  s.schedule = Schedule::SoftmaxOnline;
  s.dtype = Dtype::F32;
  s.rows = 3; s.cols = 1000;
  CHECK(compulsory(s).read == 12000);
  CHECK(compulsory(s).written == 12000);

  auto f = attn(Schedule::AttnFA1, 2, 100, true);
  CHECK(compulsory(f).read == 3 * 2 * 100 * 64 * 2);
  CHECK(compulsory(f).written == 2 * 100 * 64 * 2);
  auto b = attn(Schedule::BwdAtomic, 2, 100, false);
  CHECK(compulsory(b).read == 5 * 2 * 100 * 64 * 2 + 2 * 100 * 4);
  CHECK(compulsory(b).written == 3 * 2 * 100 * 64 * 2);
}

TEST_CASE("traffic model of the matmul kernels", "[kernels][traffic]") {
  Spec s;
  s.schedule = Schedule::MatmulOuter;
  s.dtype = Dtype::F32;
  s.m = 1000; s.n = 600; s.k = 10;
  apply_kernel_tiles(s);  // 256 x 256 x 4
  auto a = model_traffic(s);
  const std::uint64_t csz = 1000ull * 600 * 4;
  CHECK(arr(a, "C").read == 2 * csz);  // 3 k-steps, the first only writes
  CHECK(arr(a, "C").written == 3 * csz);
  CHECK(arr(a, "A").read == 1000ull * 10 * 4 * 3);  // ceil(600/256) = 3 column tiles
  CHECK(arr(a, "B").read == 10ull * 600 * 4 * 4);   // ceil(1000/256) = 4 row tiles
  auto e = expected_hbm(a);
  CHECK(e.read == 2 * csz + 1000ull * 10 * 4 + 10ull * 600 * 4);
  CHECK(e.written == 3 * csz);
  s.schedule = Schedule::MatmulInner;
  apply_kernel_tiles(s);
  a = model_traffic(s);
  CHECK(arr(a, "C").read == 0);
  CHECK(arr(a, "C").written == csz);
  CHECK(arr(a, "A").read == 1000ull * 10 * 4 * 10);  // ceil(600/64)
  CHECK(model_total(a).read == arr(a, "A").read + arr(a, "B").read);
}

TEST_CASE("traffic model of the softmax kernels", "[kernels][traffic]") {
  Spec s;
  s.schedule = Schedule::SoftmaxThree;
  s.dtype = Dtype::BF16;
  s.rows = 4; s.cols = 10000;
  apply_kernel_tiles(s);
  auto a = model_traffic(s);
  CHECK(arr(a, "X").read == 3ull * 4 * 10000 * 2);
  CHECK(arr(a, "Y").written == 4ull * 10000 * 2);
  CHECK(arr(a, "m_partial").written == 4ull * 3 * 4);  // 3 chunks of 4096
  s.schedule = Schedule::SoftmaxOnline;
  a = model_traffic(s);
  CHECK(arr(a, "X").read == 2ull * 4 * 10000 * 2);
  CHECK(expected_hbm(a).read == 2ull * 4 * 10000 * 2 + 2 * 4 * 3 * 4);
}

TEST_CASE("traffic model of the attention forward kernels", "[kernels][traffic]") {
  // N = 100 with 64-row tiles: tiles of 64 and 36 rows; causal visible tile pairs (0,0),(1,0),(1,1)
  const std::uint64_t e = 2, d = 64, bh = 3, n = 100, t = bh * n * d * e;
  auto fa1 = model_traffic(attn(Schedule::AttnFA1, 3, 100, true));
  CHECK(arr(fa1, "Q").read == bh * (64 + 36 + 36) * d * e);
  CHECK(arr(fa1, "O").read == bh * 36 * d * e);  // only tile 1 is revisited (at j = 1)
  CHECK(arr(fa1, "O").written == bh * (64 + 36 + 36) * d * e);
  CHECK(arr(fa1, "m").written == bh * (64 + 36 + 36) * 4);
  CHECK(arr(fa1, "K").read == bh * (64 + 64 + 36) * d * e);
  auto fa1n = model_traffic(attn(Schedule::AttnFA1, 3, 100, false));
  CHECK(arr(fa1n, "O").read == t);       // Tc - 1 = 1 re-read of every row
  CHECK(arr(fa1n, "O").written == 2 * t);
  CHECK(arr(fa1n, "Q").read == 2 * t);
  auto fa2 = model_traffic(attn(Schedule::AttnFA2, 3, 100, false));
  CHECK(arr(fa2, "Q").read == t);
  CHECK(arr(fa2, "K").read == 2 * t);  // once per Q tile
  CHECK(arr(fa2, "L").written == bh * n * 4);
  CHECK(expected_hbm(fa2).read == compulsory(attn(Schedule::AttnFA2, 3, 100, false)).read);
  auto naive = model_traffic(attn(Schedule::AttnNaive, 3, 100, true));
  CHECK(arr(naive, "S").written == bh * n * n * 4);
  CHECK(arr(naive, "S").read == 2 * bh * n * n * 4);  // two passes of the row softmax
  CHECK(arr(naive, "Q").read == t);                    // Q tile resident while K streams
  CHECK(arr(naive, "L").written == bh * n * 4);
  CHECK(arr(naive, "P").read == bh * n * n * 4);
  CHECK(arr(naive, "S").streamed);
  CHECK_FALSE(arr(naive, "Q").streamed);
}

TEST_CASE("traffic model of the attention backward kernels", "[kernels][traffic]") {
  const std::uint64_t e = 2, d = 64, bh = 2, n = 128, t = bh * n * d * e;
  auto two = model_traffic(attn(Schedule::BwdTwoPass, 2, 128, false));  // 2 x 2 tiles, all visible
  CHECK(arr(two, "K").read == 2 * t + t);  // per Q tile in the dQ kernel + once in dK/dV
  CHECK(arr(two, "dO").read == t + t + 2 * t);
  CHECK(arr(two, "D").written == bh * n * 4);
  auto at = model_traffic(attn(Schedule::BwdAtomic, 2, 128, true));  // causal: 3 visible pairs
  const std::uint64_t acc = bh * n * d * 4;
  CHECK(arr(at, "dQacc").read == bh * (64 + 64 + 64) * d * 4 + acc);
  CHECK(arr(at, "dQacc").written == acc + bh * (64 + 64 + 64) * d * 4);
  CHECK(arr(at, "dQ").written == t);
  CHECK(expected_hbm(at).written == compulsory(attn(Schedule::BwdAtomic, 2, 128, true)).written + bh * n * 4 + acc);
}

TEST_CASE("flops and visible pairs", "[kernels][traffic]") {
  CHECK(visible_pairs(4, false) == 16);
  CHECK(visible_pairs(4, true) == 10);
  Spec m;
  m.schedule = Schedule::MatmulInner;
  m.m = 2; m.n = 3; m.k = 4;
  CHECK(flops(m) == 48);
  CHECK(flops(attn(Schedule::AttnFA2, 2, 4, true)) == 4.0 * 64 * 10 * 2);
  CHECK(flops(attn(Schedule::BwdTwoPass, 1, 4, false)) == 10.0 * 64 * 16);
}

TEST_CASE("input rotation for timing", "[kernels][traffic]") {
  const std::size_t l2 = 50u << 20;
  CHECK(rotation_sets(200u << 20, l2) == 1);
  CHECK(rotation_sets(100u << 20, l2) == 1);
  CHECK(rotation_sets(60u << 20, l2) == 4);
  CHECK(rotation_sets(1u << 20, l2) == 8);
  CHECK(rotation_sets(0, l2) == 1);
}

TEST_CASE("counted bytes come from the tile machine when it is linked", "[kernels][traffic]") {
  std::string why;
  auto c = counted(attn(Schedule::AttnFA2, 2, 100, false), nullptr, &why);
  if (!have_counted()) {
    CHECK_FALSE(c.has_value());
    CHECK_FALSE(why.empty());
    WARN("flashsim_sim is not built: " << why);
  } else if (c) {
    CHECK(c->read >= compulsory(attn(Schedule::AttnFA2, 2, 100, false)).read);
  }
}

TEST_CASE("tile machine counts agree with the kernels' traffic model", "[kernels][traffic][!mayfail]") {
  if (!have_counted()) {
    WARN("flashsim_sim is not built; nothing to compare");
    return;
  }
  std::vector<Spec> specs;
  for (auto sch : {Schedule::MatmulInner, Schedule::MatmulOuter}) {
    Spec s;
    s.schedule = sch;
    s.dtype = Dtype::BF16;
    s.m = 300; s.n = 520; s.k = 70;
    apply_kernel_tiles(s);
    specs.push_back(s);
  }
  for (auto sch : {Schedule::SoftmaxThree, Schedule::SoftmaxOnline}) {
    Spec s;
    s.schedule = sch;
    s.rows = 3; s.cols = 10000;
    apply_kernel_tiles(s);
    specs.push_back(s);
  }
  for (auto sch : {Schedule::AttnNaive, Schedule::AttnFA1, Schedule::AttnFA2, Schedule::BwdTwoPass, Schedule::BwdAtomic})
    for (bool c : {false, true}) specs.push_back(attn(sch, 2, 100, c));
  for (const auto& s : specs) {
    std::vector<CountedArray> got;
    std::string why;
    auto c = counted(s, &got, &why);
    INFO(info(s.schedule).id << " " << s.size_label() << " " << why);
    REQUIRE(c.has_value());
    for (const auto& m : model_traffic(s)) {
      const CountedArray* hit = nullptr;
      for (const auto& g : got)
        if (g.name == m.name) hit = &g;
      INFO("array " << m.name << ": model read " << m.read << " written " << m.written);
      if (!hit) {
        // arrays that only our implementation has (per-chunk partials, D, the dQ accumulator) may be
        // named differently in the tile machine
        WARN(info(s.schedule).id << ": the tile machine has no array named " << m.name);
        continue;
      }
      CHECK(hit->read == m.read);
      CHECK(hit->written == m.written);
    }
  }
}

TEST_CASE("report formatting: table, CSV, JSON and the L2 explanation", "[kernels][report]") {
  CHECK(fmt_mib(1024.0 * 1024 * 1536) == "1536.0");
  CHECK(fmt_rw(std::nullopt) == "-");
  CHECK(fmt_rw(Bytes{1 << 20, 2 << 20}) == "1.0/2.0");
  CHECK(fmt_or_dash(0.0081, 3) == "0.008");
  CHECK(fmt_or_dash(std::nullopt, 3) == "-");
  CHECK(fmt_or_dash(NAN, 2) == "-");
  // measured / predicted, read and written, two decimals; "-" when either is missing
  CHECK(fmt_ratio_rw(Bytes{1100, 500}, Bytes{1000, 1000}) == "1.10/0.50");
  CHECK(fmt_ratio_rw(std::nullopt, Bytes{1000, 1000}) == "-");
  CHECK(fmt_ratio_rw(Bytes{1, 1}, std::nullopt) == "-");

  Row r;
  r.spec.schedule = Schedule::SoftmaxThree;
  r.spec.dtype = Dtype::F32;
  r.spec.rows = 64;
  r.spec.cols = 65536;
  apply_kernel_tiles(r.spec);
  r.compulsory = compulsory(r.spec);
  auto a = model_traffic(r.spec);
  r.model = model_total(a);
  r.expected = expected_hbm(a);
  r.time_ms = 0.1;
  r.tol = 1e-4;
  r.rel_err = 1e-7;
  r.validated = true;
  r.measured = Bytes{r.compulsory.read, r.compulsory.written};  // L2 held X: one read only
  std::vector<Row> rows = {r};
  CHECK(r.ok());
  CHECK(r.gbps() == Approx((2.0 * 64 * 65536 * 4) / 1e-4 / 1e9));
  CHECK_FALSE(r.streams_beyond(50e6));  // 16 MiB of X is inside L2
  auto expl = l2_explanation(rows, 50e6);
  CHECK(expl.find("softmax-3pass 64x65536") != std::string::npos);
  CHECK(expl.find("L2") != std::string::npos);

  std::ostringstream t, c, j;
  print_table(t, rows, 50e6);
  CHECK(t.str().find("softmax-3pass") != std::string::npos);
  CHECK(t.str().find(" ok") != std::string::npos);
  write_csv(c, rows);
  const std::string csv = c.str();
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 2);
  CHECK(c.str().rfind("schedule,file,version", 0) == 0);
  CHECK(c.str().find(",predicted_read,predicted_written,blocks_per_sm,dirty_at_start,writes_measured,attn_tiles,"
                    "measurements,hbm_read_min,hbm_read_max,hbm_written_min,hbm_written_max,pred_ms,time_meas_over_pred,"
                    "pred_bound\n") != std::string::npos);
  rows[0].predicted = Bytes{16777216, 16777216};
  rows[0].blocks_per_sm = 8;
  rows[0].dirty_at_start_bytes = 3145728;
  write_json(j, rows, "dev \"x\"\n", "ok");
  // the whole document parses, with the prediction and the occupancy it used
  auto doc = flashsim::test::parse_json(j.str());
  CHECK(doc.at("device").string == "dev \"x\"\n");
  CHECK(doc.at("runs").array.at(0).at("predicted").at("read").number == 16777216);
  CHECK(doc.at("runs").array.at(0).at("blocks_per_sm").number == 8);
  CHECK(doc.at("runs").array.at(0).at("dirty_at_start").number == 3145728);
  CHECK(doc.at("runs").array.at(0).at("size").string == "64x65536");
  CHECK(j.str().find("\"schedule\": \"softmax-3pass\"") != std::string::npos);
  CHECK(j.str().find("dev \\\"x\\\"") != std::string::npos);
  CHECK(j.str().find("\"counted\": null") != std::string::npos);
  CHECK(j.str().find("\"hbm_writeback\": null") != std::string::npos);  // not measured
  // the write-back of dirty L2 lines is its own CSV column and JSON key when measured
  rows[0].writeback_bytes = 3.0 * 1048576;
  std::ostringstream c2, j2;
  write_csv(c2, rows);
  const std::string header = c2.str().substr(0, c2.str().find('\n'));
  const std::string line = c2.str().substr(header.size() + 1);
  auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::stringstream ss(text);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    return cells;
  };
  auto names = split(header), cells = split(line);
  auto at = std::find(names.begin(), names.end(), "hbm_writeback");
  REQUIRE(at != names.end());
  CHECK(cells.at(static_cast<std::size_t>(at - names.begin())) == "3145728");
  write_json(j2, rows, "dev", "ok");
  CHECK(j2.str().find("\"hbm_writeback\": 3145728") != std::string::npos);
  // and how the writes were measured: the method before 2026-11-25 (split), or one range
  auto method = std::find(names.begin(), names.end(), "writes_measured");
  REQUIRE(method != names.end());
  CHECK(cells.at(static_cast<std::size_t>(method - names.begin())) == "split");
  // an attention row's tiling, empty for other rows (this one is softmax)
  auto tiles = std::find(names.begin(), names.end(), "attn_tiles");
  REQUIRE(tiles != names.end());
  CHECK(cells.at(static_cast<std::size_t>(tiles - names.begin())).empty());
  // one measurement: no count and no spread (the last five columns empty)
  CHECK(names.back() == "pred_bound");  // the time model's columns last, empty when not predicted
  CHECK(cells.back() == "\n");
  CHECK(line.find(",,,,,\n") != std::string::npos);
  CHECK(j2.str().find("\"attn_tiles\": null") != std::string::npos);
  CHECK(j2.str().find("\"writes_measured\": \"split\"") != std::string::npos);
  rows[0].writes_one_range = true;
  std::ostringstream c3, j3;
  write_csv(c3, rows);
  write_json(j3, rows, "dev", "ok");
  CHECK(c3.str().find(",one-range,,,,,,,,,\n") != std::string::npos);
  CHECK(j3.str().find("\"writes_measured\": \"one-range\"") != std::string::npos);
  // several measurements: the count and the smallest and largest beside the median
  rows[0].measurements = 3;
  rows[0].measured_min = Bytes{1048576, 2097152};
  rows[0].measured_max = Bytes{3145728, 4194304};
  std::ostringstream c4, j4, t4;
  write_csv(c4, rows);
  write_json(j4, rows, "dev", "ok");
  print_table(t4, rows, 50e6);
  CHECK(c4.str().find(",one-range,,3,1048576,3145728,2097152,4194304,,,\n") != std::string::npos);
  auto doc4 = flashsim::test::parse_json(j4.str());
  CHECK(doc4.at("runs").array.at(0).at("measurements").number == 3);
  CHECK(doc4.at("runs").array.at(0).at("hbm_min").at("written").number == 2097152);
  CHECK(doc4.at("runs").array.at(0).at("hbm_max").at("read").number == 3145728);
  CHECK(t4.str().find("softmax-3pass 64x65536 fp32: 3 measurements, HBM read 1.00-3.00 MiB, written 2.00-4.00 MiB") !=
        std::string::npos);

  // no explanation when measured matches the model
  rows[0].measured = r.model;
  CHECK(l2_explanation(rows, 50e6).empty());
  // a failed check is reported
  rows[0].rel_err = NAN;
  CHECK_FALSE(rows[0].ok());
}

TEST_CASE("the prediction bound: 10 % on reads and writes apart, figures under 1 MiB always within", "[kernels][report]") {
  const std::uint64_t mib = 1 << 20;
  CHECK(prediction_within_bound(Bytes{109 * mib, 91 * mib}, Bytes{100 * mib, 100 * mib}));
  CHECK_FALSE(prediction_within_bound(Bytes{111 * mib, 100 * mib}, Bytes{100 * mib, 100 * mib}));
  CHECK_FALSE(prediction_within_bound(Bytes{100 * mib, 89 * mib}, Bytes{100 * mib, 100 * mib}));
  // under 1 MiB measured: noise of a profiled range, not a miss; 1 MiB and over counts
  CHECK(prediction_within_bound(Bytes{mib - 1, 0}, Bytes{1, 0}));
  CHECK_FALSE(prediction_within_bound(Bytes{mib, 0}, Bytes{0, 0}));

  Row a, b, c;
  a.spec.schedule = Schedule::SoftmaxThree;
  a.spec.dtype = Dtype::F32;
  a.spec.rows = 64;
  a.spec.cols = 65536;
  b = a;
  b.spec.rows = 96;
  c = a;  // not measured: left out of the count
  a.measured = Bytes{16 * mib, 16 * mib};
  a.predicted = Bytes{16 * mib, 17 * mib};
  b.measured = Bytes{30 * mib, 24 * mib};
  b.predicted = Bytes{24 * mib, 24 * mib};
  c.predicted = Bytes{mib, mib};
  CHECK(prediction_summary({c}).empty());
  const std::string s = prediction_summary({a, b, c});
  CHECK(s.find(": 1 of 2 run(s); outside: softmax-3pass 96x65536 fp32 (1.25/1.00)") != std::string::npos);
  CHECK(s.find("64x65536") == std::string::npos);
  CHECK(prediction_summary({a}).find("1 of 1 run(s)") != std::string::npos);
  CHECK(prediction_summary({a}).find("outside") == std::string::npos);
}

TEST_CASE("flashsim-gpu predict: a compare CSV row back as a spec, predicted with two L2 partitions", "[kernels][l2]") {
  Spec s = spec_from_row("attn-fa2", "4x1024x64 causal", "bf16");
  CHECK(s.schedule == Schedule::AttnFA2);
  CHECK(s.bh == 4);
  CHECK(s.seq == 1024);
  CHECK(s.d == 64);
  CHECK(s.causal);
  CHECK(s.dtype == Dtype::BF16);
  CHECK_THROWS_WITH(spec_from_row("attn-fa9", "4x1024x64", "bf16"), Catch::Contains("attn-fa9"));
  CHECK_THROWS_WITH(spec_from_row("attn-fa2", "4x1024x64", "fp4"), Catch::Contains("unknown dtype 'fp4'"));
  CHECK_THROWS_WITH(spec_from_row("attn-fa2", "4x1024x64", "fp8"), Catch::Contains("attn-fa2 does not run in fp8"));  // attn-fp8's
  CHECK_THROWS(spec_from_row("attn-fa2", "4x1024", "bf16"));
  // 4 heads of K/V (1 MiB) fit a 50 MiB L2 split in two: Q, K, V read once, O and L written once.
  auto p = predicted(spec_from_row("attn-fa2", "4x1024x64", "bf16"), 50ull << 20, 132, 3, nullptr, nullptr, 2);
  REQUIRE(p);
  CHECK(p->read == 3ull * 4 * 1024 * 64 * 2);
  CHECK(p->written == 4ull * 1024 * 64 * 2 + 4ull * 1024 * 4);
}

TEST_CASE("with writes measured in one range, the dirty lines at the start are not the run's writes", "[kernels][l2]") {
  // A stream four times a 1 MiB L2 evicts all 256 KiB of dirty lines at the start: a range of the
  // run alone sees their write-back; a range with the flushes sees it in its baseline too.
  const Spec s = spec_from_row("softmax-online", "64x16384", "fp32");
  std::vector<CountedArray> with, without;
  auto counted_in = predicted(s, 1ull << 20, 16, 2, &with, nullptr, 2, 32, 16, 256u << 10, 0, 0, true);
  auto not_counted = predicted(s, 1ull << 20, 16, 2, &without, nullptr, 2, 32, 16, 256u << 10, 0, 0, false);
  REQUIRE(counted_in);
  REQUIRE(not_counted);
  CHECK(counted_in->written == not_counted->written + (256u << 10));
  CHECK(counted_in->read == not_counted->read);
  CHECK(with.size() == without.size() + 1);
  CHECK(std::none_of(without.begin(), without.end(), [](const CountedArray& a) { return a.name == "(L2 dirty at start)"; }));
  // the output itself: each Y line once, plus the row statistics
  CHECK(not_counted->written >= 64ull * 16384 * 4);
}

TEST_CASE("predictions made on several threads at once equal the same predictions made one by one", "[kernels][l2]") {
  // compare predicts on worker threads while the GPU measures: nothing may be shared between them.
  const std::vector<Spec> specs = {spec_from_row("attn-fa2", "8x2048x64", "bf16"),
                                   spec_from_row("attn-fa1", "4x2048x64 causal", "bf16"),
                                   spec_from_row("softmax-online", "64x16384", "fp32"),
                                   spec_from_row("matmul-outer", "512x512x64", "fp32")};
  // A small L2 (1 MiB) so that sets, the dirty limit and the dirty lines at the start all act.
  auto one = [](const Spec& s) { return predicted(s, 1ull << 20, 16, 2, nullptr, nullptr, 2, 32, 16, 256u << 10); };
  std::vector<std::optional<Bytes>> serial;
  for (const auto& s : specs) serial.push_back(one(s));
  std::vector<std::future<std::optional<Bytes>>> futures;
  for (int round = 0; round < 2; ++round)
    for (const auto& s : specs) futures.push_back(std::async(std::launch::async, one, s));
  for (std::size_t i = 0; i < futures.size(); ++i) {
    const auto got = futures[i].get();
    const auto& want = serial[i % specs.size()];
    REQUIRE(got);
    REQUIRE(want);
    CHECK(got->read == want->read);
    CHECK(got->written == want->written);
  }
}

TEST_CASE("l2probe: the model's side of the probes on hand-computed cases", "[kernels][l2]") {
  const std::uint64_t l2 = 8ull << 20;  // 8 MiB, one partition: an LRU over 65536 lines
  // Half the L2 read three times: the first pass misses, the other two hit.
  auto p = probe_predicted(ProbeCase{ProbePattern::Reread, l2 / 2, 3}, l2, 4, 2, 1);
  CHECK(p.read == l2 / 2);
  CHECK(p.written == 0);
  // Twice the L2 in address order, through an LRU: nothing survives to the next pass.
  p = probe_predicted(ProbeCase{ProbePattern::Reread, 2 * l2, 3}, l2, 4, 2, 1);
  CHECK(p.read == 3 * 2 * l2);
  // Read-modify-write within the L2: read once, each dirty line written back once at the end.
  p = probe_predicted(ProbeCase{ProbePattern::Rmw, l2 / 2, 4}, l2, 4, 2, 1);
  CHECK(p.read == l2 / 2);
  CHECK(p.written == l2 / 2);
  // ... and beyond it: every pass reads and writes the whole buffer.
  p = probe_predicted(ProbeCase{ProbePattern::Rmw, 2 * l2, 2}, l2, 4, 2, 1);
  CHECK(p.read == 2 * 2 * l2);
  CHECK(p.written == 2 * 2 * l2);
  CHECK_THROWS(probe_predicted(ProbeCase{ProbePattern::Reread, 1000, 2}, l2, 4, 2, 1));
  // Copy: X and Y of a quarter of the L2 each fit: X read once, Y written back once at the end.
  p = probe_predicted(ProbeCase{ProbePattern::Copy, l2 / 4, 3}, l2, 4, 2, 1);
  CHECK(p.read == l2 / 4);
  CHECK(p.written == l2 / 4);
  // X and Y of the whole L2 each, in address order through an LRU: every pass misses all of X and
  // evicts all of Y (its last pass's Y at the end).
  p = probe_predicted(ProbeCase{ProbePattern::Copy, l2, 3}, l2, 4, 2, 1);
  CHECK(p.read == 3 * l2);
  CHECK(p.written == 3 * l2);
  ProbePattern parsed = ProbePattern::Reread;
  CHECK(parse_probe_pattern("copy", &parsed));
  CHECK(parsed == ProbePattern::Copy);
  CHECK(std::string(probe_name(parsed)) == "copy");
  CHECK_FALSE(parse_probe_pattern("write", &parsed));

  const auto sizes = probe_sizes("0.5,1,1.5", l2);
  REQUIRE(sizes.size() == 3);
  CHECK(sizes[0] == l2 / 2);
  CHECK(sizes[2] == 3 * l2 / 2);
  CHECK_THROWS_WITH(probe_sizes("0.5,abc", l2), Catch::Contains("'abc'"));
  CHECK_THROWS_WITH(probe_sizes("-1", l2), Catch::Contains("'-1'"));
  CHECK_THROWS_WITH(probe_sizes("0.5x", l2), Catch::Contains("'0.5x'"));
}

TEST_CASE("parse_sizes and parse_schedules refuse an empty item instead of dropping it (issue 35)", "[kernels][cli]") {
  CHECK_THROWS_WITH(parse_sizes("small,,large"), Catch::Contains("an empty item in 'small,,large'"));
  CHECK_THROWS_WITH(parse_sizes("tiny,"), Catch::Contains("an empty item in 'tiny,'"));
  CHECK_THROWS_WITH(parse_sizes(",tiny"), Catch::Contains("an empty item"));
  CHECK_THROWS_WITH(parse_sizes("attn-fwd:4x x64"), Catch::Contains("an empty item in '4x x64'"));
  CHECK_THROWS_WITH(parse_sizes(" "), Catch::Contains("empty size list"));
  CHECK_THROWS_WITH(parse_schedules("attn-fa2, ,attn-fa1"), Catch::Contains("an empty item"));
  CHECK_THROWS_WITH(parse_schedules(""), Catch::Contains("empty schedule list"));
  CHECK(parse_sizes(" small , large ").matmul.size() == 2);  // blanks around an item are still trimmed
  CHECK(parse_schedules("attn-fa2,attn-fa1").size() == 2);
}

TEST_CASE("flashsim-gpu ring: the options are checked on the CPU, the machine's GPU count before n (issue 35)",
          "[kernels][ring]") {
  RingOptions o;  // 2 GPUs, n = 16384, d = 64, bf16, contiguous, transport auto
  CHECK(ring_options_error(o, 2).empty());
  CHECK(ring_options_error(o, 8).empty());
  // The issue: --gpus 5 on a 4-GPU machine was told that n = 16384 is not a multiple of 5.
  o.gpus = 5;
  CHECK(ring_options_error(o, 4) == "5 GPUs asked for (--gpus 5), but this machine has only 4 GPUs; nothing was run");
  CHECK(ring_options_error(o, 8) ==
        "n = 16384 is not a positive multiple of --gpus = 5; the contiguous split needs equal chunks");
  o.gpus = 2;
  CHECK(ring_options_error(o, 1) == "2 GPUs asked for (--gpus 2), but this machine has only 1 GPU; nothing was run");
  CHECK(ring_options_error(o, 0) == "2 GPUs asked for (--gpus 2), but this machine has no CUDA GPU; nothing was run");
  // --launch: step (a step's pairs in one launch, the default) or pair
  CHECK(o.launch == "step");
  o.launch = "pair";
  CHECK(ring_options_error(o, 2).empty());
  o.launch = "steps";
  CHECK(ring_options_error(o, 2) == "--launch must be step or pair");
  o = RingOptions{};
  // the backward and the all-gather alternative (issue 33): the options first, then the machine
  o.backward = true;
  CHECK(ring_options_error(o, 2).empty());
  o.method = "allgather";
  CHECK(ring_options_error(o, 4).empty());
  o.transport = "copy";
  CHECK(ring_options_error(o, 1) == "--method allgather runs through NCCL's collectives: it takes --transport nccl only");
  o.transport = "nccl";
  o.method = "gather";
  CHECK(ring_options_error(o, 1) == "--method must be ring or allgather");
  o.method = "ring";
  o.streams = 3;
  CHECK(ring_options_error(o, 1) == "--streams must be 1 or 2");
  o.streams = 1;
  CHECK(ring_options_error(o, 2).empty());
  o.streams = 2;
  o.d = 96;
  CHECK(ring_options_error(o, 2) == "--d 96 is not supported: the fast kernel takes d = 64 or 128");
  o.d = 64;
  o.backward = false;
  // n against the ring, once the GPUs are there (these were the CLI cases of ring_bad_input.cmake)
  o.n = 16385;
  CHECK(ring_options_error(o, 2) ==
        "n = 16385 is not a positive multiple of --gpus = 2; the contiguous split needs equal chunks");
  o.n = 16386;
  o.split = "zigzag";
  CHECK(ring_options_error(o, 2) ==
        "n = 16386 is not a positive multiple of 2 x --gpus = 4; the zigzag split needs equal chunks");
  o.n = 16384;
  CHECK(ring_options_error(o, 2).empty());
  o.n = 2;  // fewer rows than chunks
  CHECK_THAT(ring_options_error(o, 2), Catch::Contains("n = 2 is not a positive multiple of 2 x --gpus = 4"));
  o = RingOptions{};
  o.gpus = 1;
  o.n = std::int64_t{1} << 31;
  CHECK(ring_options_error(o, 1) == "n must fit in an int (the one-GPU run takes all n rows)");
  // What the options ask for on their own is said first, whatever the machine has.
  auto with = [](auto set) {
    RingOptions r;
    set(r);
    return ring_options_error(r, 0);
  };
  CHECK(with([](RingOptions& r) { r.gpus = 0; }) == "--gpus must be at least 1");
  CHECK(with([](RingOptions& r) { r.d = 96; }) == "--d 96 is not supported: the fast kernel takes d = 64 or 128");
  CHECK(with([](RingOptions& r) { r.dtype = "fp32"; }) == "--dtype must be bf16 or fp16");
  CHECK(with([](RingOptions& r) { r.split = "stripes"; }) == "--split must be contiguous or zigzag");
  CHECK(with([](RingOptions& r) { r.transport = "shm"; }) == "--transport must be auto, nccl or copy");
  CHECK(with([](RingOptions& r) { r.heads = 0; }) == "--heads must be between 1 and 65535");
  CHECK(with([](RingOptions& r) { r.nccl_ctas = -1; }) == "--nccl-ctas must be 0 (NCCL's default) or more");
  CHECK(with([](RingOptions& r) { r.settle_ms = -1; }) == "--settle-ms must be between 0 and 10000");
  CHECK(with([](RingOptions& r) { r.settle_ms = 10001; }) == "--settle-ms must be between 0 and 10000");
  CHECK(with([](RingOptions& r) { r.baseline = "gpu1"; }) == "--baseline must be gpu0 or all");
  CHECK(with([](RingOptions& r) { r.sm_clock_us = -1; }) == "--sm-clock must be between 0 (off) and 10000 us");
  CHECK(with([](RingOptions& r) { r.sm_clock_us = 10001; }) == "--sm-clock must be between 0 (off) and 10000 us");
  CHECK(ring_options_error([] { RingOptions r; r.sm_clock_us = 100; r.gpus = 1; return r; }(), 1).empty());
  CHECK(ring_options_error([] { RingOptions r; r.baseline = "gpu0"; r.gpus = 1; return r; }(), 1).empty());
}

// ---- time beside measurement (issue 32, item 4) ------------------------------------------------

TEST_CASE("the time model's preset is picked from the device name", "[kernels][time]") {
  CHECK(gpu_preset_for("NVIDIA H100 80GB HBM3").name == "h100");
  CHECK(gpu_preset_for("NVIDIA H100 80GB HBM3").note.empty());
  CHECK(gpu_preset_for("NVIDIA H200").name == "h200");
  CHECK(gpu_preset_for("nvidia h200 nvl").name == "h200");
  const PresetPick other = gpu_preset_for("NVIDIA A100-SXM4-80GB");
  CHECK(other.name == "h100");
  CHECK(other.note.find("A100") != std::string::npos);
  CHECK(other.note.find("h100") != std::string::npos);
  // --gpu-preset wins over the name; an unknown one is refused with the presets named
  CHECK(gpu_preset_for("NVIDIA H100 80GB HBM3", "h200").name == "h200");
  CHECK(gpu_preset_for("whatever", "H100").name == "h100");
  try {
    gpu_preset_for("NVIDIA H100", "b200");
    FAIL("no throw");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("h100, h200") != std::string::npos);
  }
}

TEST_CASE("compare's CSV and JSON carry pred ms and time meas/pred", "[kernels][time][report]") {
  Row r;
  r.spec.schedule = Schedule::SoftmaxOnline;
  r.spec.dtype = Dtype::F32;
  r.spec.rows = 256;
  r.spec.cols = 524288;
  apply_kernel_tiles(r.spec);
  r.compulsory = compulsory(r.spec);
  r.time_ms = 0.5;
  r.predicted = Bytes{2u * 256 * 524288 * 4, 256u * 524288 * 4};
  predict_row_time(r, "h100");
  REQUIRE(r.pred_ms);
  CHECK(*r.pred_ms > 0);
  CHECK(r.pred_bound == "hbm");  // 1.5 GiB over 3 TB/s, far more than the SMs' work
  // the predicted bytes are the HBM bound: 3 x 512 MiB at 3.0 TB/s, plus two launches' fixed cost
  CHECK(*r.pred_ms == Approx(3.0 * 512 * 1048576 / 3.0e12 * 1e3 + 2 * flashsim::sim::kSimtLaunchUs * 1e-3).epsilon(1e-6));
  r.pred_ms = 0.25;  // a synthetic row: meas/pred = 2
  r.pred_bound = "hbm";
  std::ostringstream c, j, t;
  write_csv(c, {r});
  const std::string header = c.str().substr(0, c.str().find('\n'));
  std::string line = c.str().substr(header.size() + 1);
  line.pop_back();
  auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::stringstream ss(text);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (!text.empty() && text.back() == ',') cells.push_back("");
    return cells;
  };
  auto names = split(header), cells = split(line);
  auto cell = [&](const char* name) {
    auto at = std::find(names.begin(), names.end(), name);
    REQUIRE(at != names.end());
    return cells.at(static_cast<std::size_t>(at - names.begin()));
  };
  CHECK(cell("pred_ms") == "0.25000");
  CHECK(cell("time_meas_over_pred") == "2.0000");
  CHECK(cell("pred_bound") == "hbm");
  CHECK(cell("time_ms") == "0.50000");  // the columns before are unchanged
  write_json(j, {r}, "dev", "ok");
  auto doc = flashsim::test::parse_json(j.str());
  const auto& run = doc.at("runs").array.at(0);
  CHECK(run.at("pred_ms").number == Approx(0.25));
  CHECK(run.at("time_meas_over_pred").number == Approx(2.0));
  CHECK(run.at("pred_bound").string == "hbm");
  print_table(t, {r}, 50e6);
  CHECK(t.str().find("pred ms") != std::string::npos);
  CHECK(t.str().find("meas/pred") != std::string::npos);
  CHECK(t.str().find(" 0.250 ") != std::string::npos);
  CHECK(t.str().find(" 2.00 ") != std::string::npos);
  // not predicted: empty cells and nulls
  r.pred_ms.reset();
  r.pred_bound.clear();
  std::ostringstream c2, j2;
  write_csv(c2, {r});
  CHECK(c2.str().substr(c2.str().size() - 4) == ",,,\n");
  write_json(j2, {r}, "dev", "ok");
  CHECK(j2.str().find("\"pred_ms\": null, \"time_meas_over_pred\": null, \"pred_bound\": null") != std::string::npos);
}

TEST_CASE("every schedule gets a time prediction: the fast ones from traces, the SIMT ones from throughput", "[kernels][time]") {
  for (const auto& in : all_schedules()) {
    Spec s;
    s.schedule = in.schedule;
    switch (in.op) {
      case Op::Matmul: s.m = 1024, s.n = 1024, s.k = 256, s.dtype = Dtype::F32; break;
      case Op::Softmax: s.rows = 64, s.cols = 65536, s.dtype = Dtype::F32; break;
      default: s.bh = 2, s.seq = 1024, s.d = 64, s.dtype = Dtype::BF16; break;
    }
    if (in.schedule == Schedule::AttnFP8) s.d = 128, s.dtype = Dtype::E4M3;  // its only head dim and dtype
    apply_kernel_tiles(s);
    std::string why;
    const auto t = predict_run_time(s, "h100", std::nullopt, &why);
    INFO(in.id << ": " << why);
    REQUIRE(t);
    CHECK(t->ms > 0);
    CHECK(t->ms < 1000);
    const bool fast = in.schedule == Schedule::AttnFA2Mma || in.schedule == Schedule::BwdMma || in.schedule == Schedule::SoftmaxFast ||
                      in.schedule == Schedule::AttnFP8;
    CHECK(t->model == (fast ? "trace" : "simt"));
    CHECK_FALSE(t->bound.empty());
  }
  std::string why;
  Spec s;
  s.schedule = Schedule::AttnFA2;
  s.bh = 1, s.seq = 64, s.d = 64;
  CHECK_FALSE(predict_run_time(s, "v100", std::nullopt, &why));
  CHECK(why.find("v100") != std::string::npos);
}

TEST_CASE("predict_time_simt: twice the work takes twice the time, HBM-bound rows are bound hbm", "[kernels][time]") {
  namespace fs = flashsim::sim;
  const auto* h100 = flashsim::isa::find_gpu_preset("h100");
  const auto* h200 = flashsim::isa::find_gpu_preset("h200");
  REQUIRE(h100);
  REQUIRE(h200);
  auto mm = [&](fs::SimtKernel k, std::int64_t m, std::int64_t n, std::int64_t kk, int e = 4) {
    fs::SimtQuery q;
    q.kernel = k;
    q.m = m, q.n = n, q.k = kk;
    q.elem_bytes = e;
    return q;
  };
  auto attn = [&](fs::SimtKernel k, std::int64_t heads, std::int64_t n, bool causal) {
    fs::SimtQuery q;
    q.kernel = k;
    q.heads = heads, q.n = n, q.d = 64, q.causal = causal;
    q.elem_bytes = 2;
    return q;
  };
  // matmul v1: the FMAs of 8192 x 8192 x 256 on 132 SMs x 128 FMA/clk at 1.83 GHz, 125 blocks of
  // 64 x 64 x 256 on the busiest SM (16384 blocks): 125 x 8192 cycles, hand-computed
  const auto a = fs::predict_time_simt(mm(fs::SimtKernel::MatmulInner, 8192, 8192, 256), *h100);
  CHECK(a.bound == "vector");
  CHECK(a.sm_ms == Approx(125.0 * 64 * 64 * 256 / 128 / 1.83e9 * 1e3));
  CHECK(a.predicted_ms == Approx(a.sm_ms + fs::kSimtLaunchUs * 1e-3));
  CHECK(a.flops == Approx(2.0 * 8192 * 8192 * 256));
  CHECK(a.units[static_cast<std::size_t>(flashsim::isa::Unit::Tensor)].work == 0);
  const auto a2 = fs::predict_time_simt(mm(fs::SimtKernel::MatmulInner, 8192, 8192, 512), *h100);
  CHECK(a2.predicted_ms / a.predicted_ms == Approx(2.0).epsilon(0.01));
  const auto a3 = fs::predict_time_simt(mm(fs::SimtKernel::MatmulInner, 16384, 8192, 256), *h100);
  CHECK(a3.predicted_ms / a.predicted_ms == Approx(2.0).epsilon(0.02));
  // matmul v2 streams C through HBM at every k-step of 4: HBM-bound, and twice the steps twice the time
  const auto o = fs::predict_time_simt(mm(fs::SimtKernel::MatmulOuter, 8192, 8192, 256), *h100);
  CHECK(o.bound == "hbm");
  CHECK(o.predicted_ms > 10 * a.predicted_ms);
  const auto o2 = fs::predict_time_simt(mm(fs::SimtKernel::MatmulOuter, 8192, 8192, 512), *h100);
  CHECK(o2.predicted_ms / o.predicted_ms == Approx(2.0).epsilon(0.02));
  // the H200's faster HBM makes an HBM-bound launch faster, by the bandwidth ratio
  const auto oh = fs::predict_time_simt(mm(fs::SimtKernel::MatmulOuter, 8192, 8192, 256), *h200);
  CHECK(o.hbm_ms / oh.hbm_ms == Approx(4.3 / 3.0));
  // softmax: HBM-bound; the 3-pass reads X once more than the online one
  fs::SimtQuery sm;
  sm.kernel = fs::SimtKernel::SoftmaxOnline;
  sm.m = 256, sm.n = 524288;
  const auto s2 = fs::predict_time_simt(sm, *h100);
  CHECK(s2.bound == "hbm");
  sm.kernel = fs::SimtKernel::SoftmaxThreePass;
  const auto s1 = fs::predict_time_simt(sm, *h100);
  CHECK(s1.bound == "hbm");
  CHECK(s1.predicted_ms / s2.predicted_ms == Approx(4.0 / 3.0).epsilon(0.02));
  // the caller's HBM bytes (the L2 model) set the HBM time
  sm.hbm_bytes = 2 * s1.hbm_bytes;
  CHECK(fs::predict_time_simt(sm, *h100).hbm_ms == Approx(2 * s1.hbm_ms));
  // attention: twice the heads twice the time; the causal FA2 about half the full one; FA2 beats FA1 and naive
  const auto f = fs::predict_time_simt(attn(fs::SimtKernel::AttnFA2, 16, 4096, false), *h100);
  const auto f2 = fs::predict_time_simt(attn(fs::SimtKernel::AttnFA2, 32, 4096, false), *h100);
  CHECK(f2.predicted_ms / f.predicted_ms == Approx(2.0).epsilon(0.05));
  CHECK(f.bound == "vector");
  const auto fc = fs::predict_time_simt(attn(fs::SimtKernel::AttnFA2, 16, 4096, true), *h100);
  CHECK(fc.predicted_ms / f.predicted_ms > 0.45);
  CHECK(fc.predicted_ms / f.predicted_ms < 0.65);
  CHECK(fs::predict_time_simt(attn(fs::SimtKernel::AttnFA1, 16, 4096, false), *h100).predicted_ms > f.predicted_ms);
  CHECK(fs::predict_time_simt(attn(fs::SimtKernel::AttnNaive, 16, 4096, false), *h100).predicted_ms > f.predicted_ms);
  // backward: the atomic version's one kernel does 5 products a tile pair, the two passes 3 + 4
  const auto b1 = fs::predict_time_simt(attn(fs::SimtKernel::BwdTwoPass, 16, 4096, false), *h100);
  const auto b2 = fs::predict_time_simt(attn(fs::SimtKernel::BwdAtomic, 16, 4096, false), *h100);
  CHECK(b2.predicted_ms < b1.predicted_ms);
  CHECK(b1.predicted_ms > 2.5 * f.predicted_ms);
  // longer sequences never take less time
  double last = 0;
  for (std::int64_t n : {256, 1000, 2048, 4096, 8192}) {
    const double ms = fs::predict_time_simt(attn(fs::SimtKernel::AttnNaive, 4, n, true), *h100).predicted_ms;
    CHECK(ms > last);
    last = ms;
  }
  CHECK_THROWS_AS(fs::predict_time_simt(mm(fs::SimtKernel::MatmulInner, 0, 8, 8), *h100), std::invalid_argument);
}

TEST_CASE("the time line counts rows within 15 % and names the bounded ones outside", "[kernels][time][report]") {
  std::vector<TimeCheck> rows = {
      {"attn-fwd 4x8192x128 bf16 full", true, 1.10, 1.0},   // within
      {"attn-fwd 4x8192x128 bf16 causal", true, 1.30, 1.0}, // outside
      {"matmul 8192x8192x8192 bf16", true, 0.80, 1.0},     // outside (0.80)
      {"attn-fwd 16x1024x64 bf16 full", false, 2.0, 1.0},  // not bounded, counted in all rows only
      {"softmax 256x524288 fp32", false, 1.0, std::nullopt},  // not predicted: left out
  };
  const std::string s = time_summary(rows);
  CHECK(s.find("within 15 %: 1 of 3 attention/matmul row(s) at N >= 4096") != std::string::npos);
  CHECK(s.find("all rows: 1 of 4") != std::string::npos);
  CHECK(s.find("outside: attn-fwd 4x8192x128 bf16 causal (1.30), matmul 8192x8192x8192 bf16 (0.80)") != std::string::npos);
  CHECK(s.find("16x1024x64") == std::string::npos);
  CHECK(time_summary({rows.back()}).empty());
  CHECK(time_within_bound(1.15, 1.0));
  CHECK_FALSE(time_within_bound(1.16, 1.0));
  CHECK(std::isnan(time_ratio(1.0, std::nullopt)));
  // cycles: 3.132 ms at 1980 MHz against 2.872 ms at the preset's 1.476 GHz (bench_kernels, H100)
  CHECK(cycle_ratio(3.132, 1980, 2.872, 1.476) == Approx(3.132 * 1980 / (2.872 * 1476)));
  CHECK(cycle_ratio(2.0, 1500, 1.0, 1.5) == Approx(2.0));
  CHECK(std::isnan(cycle_ratio(1.0, NAN, 1.0, 1.476)));
  CHECK(std::isnan(cycle_ratio(1.0, 1980, std::nullopt, 1.476)));
  // compare's rows: attention at N >= 4096 and matmul with m and n >= 4096 are bounded
  Spec s1;
  s1.schedule = Schedule::AttnFA2Mma;
  s1.seq = 4096;
  CHECK(time_bound_row(s1));
  s1.seq = 2048;
  CHECK_FALSE(time_bound_row(s1));
  Spec s2;
  s2.schedule = Schedule::MatmulInner;
  s2.m = 8192, s2.n = 4096, s2.k = 256;
  CHECK(time_bound_row(s2));
  s2.n = 1000;
  CHECK_FALSE(time_bound_row(s2));
}

// ---- FP8 (e4m3) forward: the host side (kernels/fp8_ref.h) ------------------------------------

TEST_CASE("e4m3: rounding to nearest even, saturation, subnormals, NaN", "[kernels][fp8]") {
  using fp8::float_to_e4m3;
  CHECK(float_to_e4m3(0.f) == 0x00);
  CHECK(float_to_e4m3(-0.f) == 0x80);
  CHECK(float_to_e4m3(1.f) == 0x38);  // exponent 7 (bias 7), mantissa 0
  CHECK(float_to_e4m3(-1.f) == 0xB8);
  CHECK(float_to_e4m3(448.f) == 0x7E);
  CHECK(float_to_e4m3(500.f) == 0x7E);  // saturates instead of reaching NaN (0x7F)
  CHECK(float_to_e4m3(-1e9f) == 0xFE);
  CHECK(float_to_e4m3(std::ldexp(1.f, -6)) == 0x08);  // smallest normal
  CHECK(float_to_e4m3(std::ldexp(1.f, -9)) == 0x01);  // smallest subnormal
  CHECK(float_to_e4m3(std::ldexp(1.f, -10)) == 0x00);  // half a step: ties to the even 0
  CHECK(float_to_e4m3(3 * std::ldexp(1.f, -10)) == 0x02);  // 1.5 steps: ties to the even 2
  CHECK(float_to_e4m3(1.0625f) == 0x38);  // halfway 1 | 1.125: to the even mantissa 0
  CHECK(float_to_e4m3(1.1875f) == 0x3A);  // halfway 1.125 | 1.25: to the even mantissa 2
  CHECK(float_to_e4m3(std::nanf("")) == 0x7F);
  CHECK(std::isnan(fp8::e4m3_to_float(0x7F)));
  CHECK(std::isnan(fp8::e4m3_to_float(0xFF)));
  CHECK(fp8::e4m3_to_float(0x7E) == 448.f);
  CHECK(fp8::e4m3_to_float(0x01) == std::ldexp(1.f, -9));
  // every finite code survives a round trip, and the codes 0..0x7E increase
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    CHECK(float_to_e4m3(fp8::e4m3_to_float(static_cast<std::uint8_t>(c))) == c);
    if (c > 0 && c <= 0x7E) CHECK(fp8::e4m3_to_float(static_cast<std::uint8_t>(c)) > fp8::e4m3_to_float(static_cast<std::uint8_t>(c - 1)));
  }
}

TEST_CASE("V^T's key order is the order of a thread's S accumulators in the A fragment of P V", "[kernels][fp8]") {
  // Thread t holds columns 2t, 2t+1 of each n8 tile of S; the kernel packs, per 16 keys, the tile
  // 0 pair then the tile 1 pair into the 4 bytes the A layout gives column 4t .. 4t+3.
  std::vector<int> seen(32, 0);
  for (int half = 0; half < 2; ++half)
    for (int t = 0; t < 4; ++t) {
      const int cols[4] = {2 * t, 2 * t + 1, 8 + 2 * t, 9 + 2 * t};
      for (int byte = 0; byte < 4; ++byte) {
        const int position = 16 * half + 4 * t + byte;
        CHECK(fp8::vt_key_of_position(position) == 16 * half + cols[byte]);
        ++seen[fp8::vt_key_of_position(position)];
      }
    }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));  // a permutation
  CHECK_THROWS_AS(fp8::vt_key_of_position(32), std::out_of_range);
  CHECK(fp8::padded_keys(1) == 32);
  CHECK(fp8::padded_keys(64) == 64);
  CHECK(fp8::padded_keys(77) == 96);
}

TEST_CASE("the random Hadamard transform keeps dot products and spreads an outlier over all of d", "[kernels][fp8]") {
  std::mt19937 rng(7);
  const int d = 128;
  auto x = random_vec(d, rng), y = random_vec(d, rng);
  std::vector<double> xd(x.begin(), x.end()), yd(y.begin(), y.end());
  double dot = 0;
  for (int i = 0; i < d; ++i) dot += xd[i] * yd[i];
  fp8::hadamard_row(xd, 42);
  fp8::hadamard_row(yd, 42);
  double dot_t = 0;
  for (int i = 0; i < d; ++i) dot_t += xd[i] * yd[i];
  CHECK(dot_t == Approx(dot).margin(1e-12));
  // one large entry (an outlier feature) becomes d entries of magnitude 1/sqrt(d) of it
  std::vector<double> spike(d, 0.0);
  spike[37] = 100.0;
  fp8::hadamard_row(spike, 42);
  for (double e : spike) CHECK(std::fabs(e) == Approx(100.0 / std::sqrt(128.0)));
  // the signs are a fixed function of the seed and differ between seeds
  int differ = 0;
  for (int i = 0; i < d; ++i) differ += fp8::hadamard_sign(1, i) != fp8::hadamard_sign(2, i);
  CHECK(differ > 32);
  std::vector<double> bad(96, 1.0);
  CHECK_THROWS_AS(fp8::hadamard_row(bad, 1), std::invalid_argument);
  CHECK_THROWS_AS(fp8::hadamard_row_inverse(bad, 1), std::invalid_argument);
  CHECK(bad == std::vector<double>(96, 1.0));  // refused before anything was changed
  // x H D undoes x D H
  std::vector<double> back(x.begin(), x.end());
  fp8::hadamard_row(back, 42);
  fp8::hadamard_row_inverse(back, 42);
  for (int i = 0; i < d; ++i) CHECK(back[i] == Approx(x[i]).margin(1e-12));
}

TEST_CASE("the time model's FP8 plan takes the kernel's default key tile", "[kernels][fp8]") {
  for (int n : {1, 1000, 4096, 8191, 8192, 16384, 65536}) {
    flashsim::sim::TimeQuery q;
    q.n = n;
    q.d = 128;
    q.fp8 = true;
    q.elem_bytes = 1;
    CHECK(flashsim::sim::plan_for(q).bc == fp8::default_key_tile(n));
  }
}

TEST_CASE("the FP8 error's sources: exact without rounding, the transform helps Q K and cannot help V", "[kernels][fp8]") {
  // (the transform's gain is a statistical effect of the outliers: at n = 1024 it is 0.52-0.72 of
  // Q K's error over nine draws, at n = 256 anywhere from 0.5 to 1.1; this draw is the first of
  // `fp8_error_sources --n 1024 --seed 3`)
  const int n = 1024, d = 128;
  std::mt19937_64 gen(3);
  std::normal_distribution<double> normal(0, 1), big(0, 10);
  std::bernoulli_distribution rare(0.001);
  std::vector<double> q(n * d), k(n * d), v(n * d);
  for (auto* x : {&q, &k, &v})
    for (auto& e : *x) e = normal(gen) + (rare(gen) ? big(gen) : 0.0);
  std::vector<int> rows;
  for (int i = 0; i < n; i += 8) rows.push_back(i);
  auto err = [&](fp8::Roundings r) { return fp8::fp8_rounding_error(q, k, v, n, d, r, rows, 3); };
  // no rounding: exact, with or without the transforms (they are orthogonal, and V's is undone)
  CHECK(err({}) < 1e-12);
  CHECK(err({false, true, false, false, true}) < 1e-12);
  // each rounding alone costs something
  const double qk = err({true, false, false, false, false}), qk_t = err({true, true, false, false, false});
  const double p = err({false, false, true, false, false});
  const double vv = err({false, false, false, true, false}), vv_t = err({false, false, false, true, true});
  CHECK(p > 0);
  CHECK(vv > 0);
  // the transform takes a large share of Q K's error on outlier inputs ...
  CHECK(qk_t < 0.7 * qk);
  // ... and none of V's: e4m3's rounding error is relative to each entry, a rotation keeps its size
  CHECK(vv_t == Approx(vv).epsilon(0.25));
  CHECK_THROWS_AS(fp8::fp8_rounding_error(q, k, std::vector<double>(5), n, d, {}, rows, 3), std::invalid_argument);
  CHECK_THROWS_AS(fp8::fp8_rounding_error(q, k, v, n, d, {}, {n}, 3), std::invalid_argument);
}

TEST_CASE("the FP8 kernel's arithmetic in double stays within e4m3's step of exact attention", "[kernels][fp8]") {
  // operands that are e4m3 values already (scales 1): the only rounding left is P's
  std::mt19937 rng(11);
  const int n = 300, d = 128;
  fp8::Dequantized x;
  x.bh = 1;
  x.n = n;
  x.d = d;
  auto e4m3_vec = [&](float lo, float hi) {
    auto v = random_vec(static_cast<std::size_t>(n) * d, rng, lo, hi);
    for (auto& e : v) e = fp8::e4m3_to_float(fp8::float_to_e4m3(e));
    return v;
  };
  x.q8 = e4m3_vec(-2, 2);
  x.k8 = e4m3_vec(-2, 2);
  x.v8 = e4m3_vec(-1, 1);
  x.q_scale.assign((n + 63) / 64, 1.f);
  x.k_scale.assign(fp8::k_scale_blocks(n), 1.f);
  x.v_scale.assign(1, 1.f);
  for (bool causal : {false, true}) {
    std::vector<std::int64_t> rows;
    for (int i = 0; i < n; ++i) rows.push_back(i);
    std::vector<float> eo(static_cast<std::size_t>(n) * d), el(n), ro(eo.size()), rl(n);
    fp8::attention_fp8_emulated_rows(x, 0, causal, 128, rows, eo.data(), el.data());
    ref::attention_forward(x.q8.data(), x.k8.data(), x.v8.data(), n, d, causal, ro.data(), rl.data());
    double worst = 0, worst_lse = 0;
    for (std::size_t i = 0; i < eo.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(eo[i]) - ro[i]));
    for (int i = 0; i < n; ++i) worst_lse = std::max(worst_lse, std::fabs(static_cast<double>(el[i]) - rl[i]));
    CHECK(worst <= 1.0 / 16);  // |V| <= 1 and each weight off by at most half a step, 2^-4 of itself
    CHECK(worst > 0);          // P really was rounded
    CHECK(worst_lse < 1e-5);   // the sums are exact
    // s_abs: the largest sum of |products| of a visible score, / sqrt(d)
    std::vector<float> sa(n);
    fp8::attention_fp8_emulated_rows(x, 0, causal, 128, rows, eo.data(), el.data(), sa.data());
    for (int i : {0, 150, n - 1}) {
      double want = 0;
      for (int j = 0; j <= (causal ? i : n - 1); ++j) {
        double a = 0;
        for (int c = 0; c < d; ++c) a += std::fabs(static_cast<double>(x.q8[i * d + c]) * x.k8[j * d + c]);
        want = std::max(want, a / std::sqrt(128.0));
      }
      CHECK(sa[i] == Approx(want).epsilon(1e-6));
    }
  }
  CHECK(fp8::fp8_lse_tolerance(2048.0) == Approx(1.0001));
  // one key: P = 1 is exact (2^8 in e4m3), O is V's row
  x.n = 1;
  std::vector<float> o1(d), l1(1);
  fp8::attention_fp8_emulated_rows(x, 0, false, 128, {0}, o1.data(), l1.data());
  for (int c = 0; c < d; ++c) CHECK(o1[c] == x.v8[c]);
  CHECK_THROWS_AS(fp8::attention_fp8_emulated_rows(x, 0, false, 80, {0}, o1.data(), l1.data()), std::invalid_argument);
}

// ---- attn-fp8 in compare ---------------------------------------------------------------------

namespace {
Spec fp8_spec(std::int64_t bh, std::int64_t n, bool causal) {
  auto specs = expand({Schedule::AttnFP8}, parse_sizes("attn-fwd:" + std::to_string(bh) + "x" + std::to_string(n) + "x128"),
                      {}, {causal});
  REQUIRE(specs.size() == 1);
  return specs[0];
}
}  // namespace

TEST_CASE("attn-fp8: parsed by name, listed, in `all` only, fp8 by default, d = 128 only", "[kernels][cli][fp8]") {
  CHECK(parse_schedules("attn-fp8") == std::vector<Schedule>{Schedule::AttnFP8});
  const auto all = parse_schedules("all");
  CHECK(std::find(all.begin(), all.end(), Schedule::AttnFP8) != all.end());
  for (const char* group : {"attn-fwd", "attention"}) {
    const auto g = parse_schedules(group);
    CHECK(std::find(g.begin(), g.end(), Schedule::AttnFP8) == g.end());
  }
  bool listed = false;
  for (const auto& i : all_schedules())
    if (std::string(i.id) == "attn-fp8") {
      listed = true;
      CHECK(i.op == Op::AttnFwd);
      CHECK(std::string(i.file) == "attention_fp8.cu");
    }
  CHECK(listed);
  CHECK(parse_dtype("fp8") == Dtype::E4M3);
  CHECK(parse_dtype("e4m3") == Dtype::E4M3);
  CHECK(std::string(dtype_name(Dtype::E4M3)) == "fp8");
  CHECK(dtype_bytes(Dtype::E4M3) == 1);
  // expand: fp8 and both masks, the launcher's 128 x 128 tiles, causal tiles paired
  auto specs = expand({Schedule::AttnFP8}, parse_sizes("attn-fwd:2x300x128"), {}, {false, true});
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].dtype == Dtype::E4M3);
  CHECK(specs[1].dtype == Dtype::E4M3);
  CHECK_FALSE(specs[0].causal);
  CHECK(specs[1].causal);
  CHECK(specs[0].br == 128);
  CHECK(specs[0].bc == 128);
  CHECK_FALSE(specs[0].paired_tiles);
  CHECK(specs[1].paired_tiles);
  CHECK(attn_tiles_label(specs[1]) == "128x128 paired");
  CHECK(specs[1].size_label() == "2x300x128 causal");
  CHECK(tolerance(specs[0]) == 1.0);
  // a compare CSV row back
  const Spec back = spec_from_row("attn-fp8", "2x300x128 causal", "fp8");
  CHECK(back.schedule == Schedule::AttnFP8);
  CHECK(back.dtype == Dtype::E4M3);
  CHECK(back.causal);
  // the kernels that exist
  CHECK_FALSE(unsupported(Schedule::AttnFP8, Dtype::E4M3, 128));
  CHECK(unsupported(Schedule::AttnFP8, Dtype::E4M3, 64));
  CHECK(unsupported(Schedule::AttnFP8, Dtype::BF16, 128));
  CHECK(unsupported(Schedule::AttnFA2Mma, Dtype::E4M3, 128));
  CHECK(unsupported(Schedule::MatmulInner, Dtype::E4M3, 0));
  // `all` at d = 64 (the presets) drops it silently, as the other d-bound schedules; fp8 is not asked
  for (const auto& x : expand(all, parse_sizes("tiny"), {}, {false, true})) CHECK(x.schedule != Schedule::AttnFP8);
  CHECK(expand({Schedule::AttnFP8}, parse_sizes("attn-fwd:2x300x128"), {Dtype::BF16}, {false}).empty());
}

TEST_CASE("attn-fp8: fp8 refused for every other schedule, d = 64 and other dtypes refused when named", "[kernels][cli][fp8]") {
  for (const char* list : {"matmul", "matmul-inner", "softmax-fast", "attn-fa2-mma", "bwd-mma", "attn-fwd", "all"})
    CHECK_THROWS_WITH(expand(parse_schedules(list), parse_sizes("tiny,attn:2x300x128"), {Dtype::E4M3}, {false}),
                      Catch::Contains("fp8") && Catch::Contains("attn-fp8"));
  CHECK_THROWS_WITH(expand(parse_schedules("attn-fp8,attn-fa2-mma"), parse_sizes("attn-fwd:2x300x128"),
                           {Dtype::BF16, Dtype::E4M3}, {false}),
                    Catch::Contains("attn-fa2-mma does not run in fp8"));
  CHECK_NOTHROW(expand(parse_schedules("attn-fp8"), parse_sizes("attn-fwd:2x300x128"), {Dtype::E4M3}, {false}));
  CHECK_THROWS_AS(spec_from_row("matmul-inner", "100x72x40", "fp8"), std::invalid_argument);
  // named: a head dim other than 128, or a dtype list without fp8, is refused instead of dropped
  CHECK_THROWS_WITH(check_named_schedules("attn-fp8", parse_sizes("attn-fwd:2x100x64"), {}),
                    Catch::Contains("d = 128 only") && Catch::Contains("2x100x64"));
  CHECK_THROWS_WITH(check_named_schedules("attn-fa2, attn-fp8", parse_sizes("tiny"), {}), Catch::Contains("d = 128"));
  CHECK_THROWS_WITH(check_named_schedules("attn-fp8", parse_sizes("attn-fwd:2x100x128"), {Dtype::BF16}),
                    Catch::Contains("fp8 (e4m3) only"));
  CHECK_NOTHROW(check_named_schedules("attn-fp8", parse_sizes("attn-fwd:2x100x128"), {}));
  CHECK_NOTHROW(check_named_schedules("attn-fp8", parse_sizes("attn-fwd:2x100x128,matmul:8x8x8"), {Dtype::E4M3}));
  CHECK_NOTHROW(check_named_schedules("all", parse_sizes("tiny"), {}));  // in a group: dropped at d = 64
  CHECK_NOTHROW(check_named_schedules("attn-fwd", parse_sizes("tiny"), {Dtype::BF16}));
}

TEST_CASE("attn-fp8: compulsory and modelled bytes, e4m3 in, bf16 O, V^T's padding keys, by hand", "[kernels][traffic][fp8]") {
  // bh = 2, n = 300, d = 128: Q tiles and key tiles of 128, 128, 44 rows; V^T rows hold
  // padded_keys(300) = 320 keys, so the last key tile reads 64 keys of V^T (44 + 20 padding).
  const std::uint64_t bh = 2, n = 300, d = 128;
  REQUIRE(fp8::padded_keys(300) == 320);
  const Spec full = fp8_spec(2, 300, false), causal = fp8_spec(2, 300, true);
  for (const Spec* s : {&full, &causal}) {
    CHECK(compulsory(*s).read == bh * n * d * 1 * 2 + bh * d * 320);  // Q, K; V^T with its padding
    CHECK(compulsory(*s).written == bh * n * d * 2);                   // O bf16
  }
  auto model = model_traffic(full);
  CHECK(arr(model, "Q").read == bh * n * d);                    // 76800
  CHECK(arr(model, "K").read == bh * 3 * n * d);                // each Q tile reads all 300 keys: 230400
  CHECK(arr(model, "V").read == bh * 3 * 320 * d);              // ... and all 320 of V^T: 245760
  CHECK(arr(model, "O").written == bh * n * d * 2);             // 153600
  CHECK(arr(model, "L").written == bh * n * 4);                 // 2400
  CHECK(model_total(model).read == 552960u);
  CHECK(model_total(model).written == 156000u);
  CHECK(expected_hbm(model).read == compulsory(full).read);
  model = model_traffic(causal);
  // visible tiles: (0,0) (1,0) (1,1) (2,0) (2,1) (2,2): keys 128 + 256 + 300, V^T 128 + 256 + 320
  CHECK(arr(model, "K").read == bh * 684 * d);                  // 175104
  CHECK(arr(model, "V").read == bh * 704 * d);                  // 180224
  CHECK(arr(model, "Q").read == bh * n * d);
  CHECK(model_total(model).read == 432128u);
  CHECK(model_total(model).written == 156000u);
}

TEST_CASE("attn-fp8: the tile machine's count with 1-byte Q, K, V, bf16 O and V^T's padding", "[kernels][traffic][fp8]") {
  if (!have_counted()) {
    WARN("flashsim_sim is not built; nothing to count");
    return;
  }
  const std::uint64_t bh = 2, d = 128;
  struct Want {
    bool causal;
    std::uint64_t k_rows, v_rows;  // per head, summed over visible (Q tile, key tile) pairs
  };
  for (const Want w : {Want{false, 900, 960}, Want{true, 684, 704}}) {
    const Spec s = fp8_spec(2, 300, w.causal);
    std::vector<CountedArray> got;
    std::string why;
    const auto c = counted(s, &got, &why);
    INFO(s.size_label() << ": " << why);
    REQUIRE(c.has_value());
    auto find = [&](const std::string& name) -> const CountedArray& {
      for (const auto& g : got)
        if (g.name == name) return g;
      FAIL("no counted array " << name);
      return got.front();
    };
    CHECK(find("Q").read == bh * 300 * d);
    CHECK(find("K").read == bh * w.k_rows * d);
    CHECK(find("V").read == bh * w.v_rows * d);
    CHECK(find("O").written == bh * 300 * d * 2);
    CHECK(find("L").written == bh * 300 * 4);
    CHECK(c->read == bh * (300 + w.k_rows + w.v_rows) * d);
    CHECK(c->written == bh * 300 * d * 2 + bh * 300 * 4);
    // and the same arrays as the model of our kernel
    for (const auto& m : model_traffic(s)) {
      INFO("array " << m.name);
      CHECK(find(m.name).read == m.read);
      CHECK(find(m.name).written == m.written);
    }
  }
}

TEST_CASE("attn-fp8: the L2 model sees attn-fa2-mma's blocks with 1-byte inputs; the time model's FP8 forward", "[kernels][l2][time][fp8]") {
  if (!have_counted()) {
    WARN("flashsim_sim is not built");
    return;
  }
  // a large L2: every byte read from HBM once (V^T with its padding), O and lse written once
  for (bool causal : {false, true}) {
    const Spec s = fp8_spec(2, 300, causal);
    std::string why;
    const auto p = predicted(s, 64ull << 20, 4, 1, nullptr, &why, 2);
    INFO(why);
    REQUIRE(p.has_value());
    CHECK(p->read >= compulsory(s).read);
    CHECK(p->read <= compulsory(s).read + 4096);  // at most partial lines beyond the bytes
    CHECK(p->written >= 2ull * 300 * 128 * 2 + 2ull * 300 * 4);
    CHECK(p->written <= 2ull * 300 * 128 * 2 + 2ull * 300 * 4 + 256);  // lse's last sector, at most
    // attn-fa2-mma's count at d = 128 in bf16 is the same schedule with 2-byte Q, K, V
    Spec b = s;
    b.schedule = Schedule::AttnFA2Mma;
    b.dtype = Dtype::BF16;
    apply_kernel_tiles(b);
    REQUIRE(b.paired_tiles == s.paired_tiles);
    REQUIRE(b.br == s.br);
    const auto cb = counted(b);
    const auto cf = counted(s);
    REQUIRE(cb);
    REQUIRE(cf);
    CHECK(cf->written == cb->written);  // O bf16 in both, lse fp32
  }
  // pred ms: the FP8 forward of the time model (flashsim time attention --dtype fp8), on the trace
  const Spec s = fp8_spec(16, 4096, true);
  std::string why;
  const auto t = predict_run_time(s, "h100", std::nullopt, &why);
  INFO(why);
  REQUIRE(t);
  CHECK(t->model == "trace");
  flashsim::sim::TimeQuery q;
  q.op = flashsim::sim::TimedOp::AttnFwd;
  q.n = 4096, q.d = 128, q.heads = 16, q.causal = true, q.elem_bytes = 1, q.fp8 = true, q.version = 6;
  CHECK(t->ms == Approx(flashsim::sim::predict_time(q, *flashsim::isa::find_gpu_preset("h100")).predicted_ms));
  Spec b = s;
  b.schedule = Schedule::AttnFA2Mma;
  b.dtype = Dtype::BF16;
  apply_kernel_tiles(b);
  const auto tb = predict_run_time(b, "h100", std::nullopt, &why);
  REQUIRE(tb);
  CHECK(t->ms < tb->ms);  // the FP8 tensor cores' rate
}

TEST_CASE("attn-fp8's check: operands read back from the quantize pass's bytes, and its allowances", "[kernels][fp8]") {
  // V^T in the kernel's key order (keys permuted within groups of 32), n = 40: 64 keys a row
  const int bh = 1, n = 40, d = 128, nk = fp8::padded_keys(n);
  std::vector<std::uint8_t> q(n * d), k(n * d), vt(static_cast<std::size_t>(d) * nk, 0);
  for (int i = 0; i < n * d; ++i) q[i] = k[i] = fp8::float_to_e4m3(0.25f);
  auto v_of = [](int key, int c) { return fp8::float_to_e4m3(static_cast<float>((key * 7 + c) % 13) / 16.f); };
  for (int c = 0; c < d; ++c)
    for (int pos = 0; pos < nk; ++pos) {
      const int key = pos - pos % fp8::kKeyGroup + fp8::vt_key_of_position(pos % fp8::kKeyGroup);
      if (key < n) vt[c * nk + pos] = v_of(key, c);
    }
  const std::vector<float> qs(fp8::q_scale_blocks(n), 2.f), ks(fp8::k_scale_blocks(n), 1.f), vs(1, 0.5f);
  auto x = fp8::dequantize_operands(bh, n, d, q, k, vt, qs, ks, vs);
  CHECK(x.q(0, 39, 5) == 0.5f);
  for (int key : {0, 1, 31, 32, 39})
    for (int c : {0, 77})
      CHECK(x.v(0, key, c) == fp8::e4m3_to_float(v_of(key, c)) * 0.5f);
  CHECK_THROWS_AS(fp8::dequantize_operands(bh, n, d, q, k, std::vector<std::uint8_t>(d * n), qs, ks, vs),
                  std::invalid_argument);
  // a padding key that is not zero fails every check
  auto bad = vt;
  bad[nk - 1] = fp8::float_to_e4m3(1.f);
  CHECK(std::isnan(fp8::dequantize_operands(bh, n, d, q, k, bad, qs, ks, vs).v(0, 0, 0)));
  // the emulation's own output passes with nothing to spare; an O off by max|V|/4 does not
  std::vector<std::int64_t> rows(n);
  for (int i = 0; i < n; ++i) rows[i] = i;
  std::vector<float> o(static_cast<std::size_t>(n) * d), lse(n);
  fp8::attention_fp8_emulated_rows(x, 0, true, 128, rows, o.data(), lse.data());
  fp8::OutputCheck good;
  good.add_head(x, 0, true, rows, o.data(), lse.data());
  CHECK(good.result().worst_fraction() == 0.0);
  CHECK(good.result().ok());
  double vmax = 0;
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < d; ++c) vmax = std::max(vmax, static_cast<double>(std::fabs(x.v(0, i, c))));
  CHECK(good.result().vmax == vmax);
  auto off = o;
  off[5 * d + 3] += static_cast<float>(vmax / 4);
  fp8::OutputCheck worse;
  worse.add_head(x, 0, true, rows, off.data(), lse.data());
  CHECK(worse.result().worst_fraction() == Approx(2.0).epsilon(1e-3));
  CHECK_FALSE(worse.result().ok());
  off[0] = NAN;
  fp8::OutputCheck nan;
  nan.add_head(x, 0, true, rows, off.data(), lse.data());
  CHECK_FALSE(within_tolerance(nan.result().worst_fraction(), 1.0));
}

TEST_CASE("tile phases: lockstep reads 0, alternation 0.5, stamps outside the other's tiles are left out", "[kernels][probe]") {
  namespace pr = flashsim::gpu::probe;
  std::vector<long long> a, alt, lock, late;
  for (int i = 0; i < 8; ++i) {
    a.push_back(1000 + 100 * i);
    alt.push_back(1050 + 100 * i);   // half a tile after a's
    lock.push_back(1000 + 100 * i);  // with a's
    late.push_back(1024 + 100 * i);
  }
  std::vector<double> f;
  pr::add_tile_phases(a.data(), alt.data(), 8, f);
  REQUIRE(f.size() == 7);  // the last stamp lies past a's last whole tile
  CHECK(pr::quartiles(f) == std::array<double, 3>{0.5, 0.5, 0.5});
  f.clear();
  pr::add_tile_phases(a.data(), lock.data(), 8, f);
  CHECK(pr::quartiles(f)[1] == 0.0);
  f.clear();
  pr::add_tile_phases(a.data(), late.data(), 8, f);
  CHECK(pr::quartiles(f)[1] == Approx(0.24));
  const std::vector<long long> early{10, 20};  // before a's first tile
  f.clear();
  pr::add_tile_phases(a.data(), early.data(), 2, f);
  CHECK(f.empty());
  CHECK(pr::quartiles({}) == std::array<double, 3>{0, 0, 0});
  CHECK(pr::quartiles({0.1, 0.2, 0.3, 0.4, 0.9}) == std::array<double, 3>{0.2, 0.3, 0.4});
}

// Validation and timing of attention_forward_fast (kernels/attention_forward.cu versions 4 and 5)
// and its tile variants, standalone (no runner, no CUPTI). CMake builds it as the target
// bench_attention_forward_fast (`ninja -C build/default bench_attention_forward_fast`); by hand, from the repository root:
//   nvcc -O3 -std=c++20 -gencode=arch=compute_90a,code=sm_90a -I. -DFLASHSIM_ATTN_FWD_FAST_ONLY -o build/fwdfast/bench_attention_forward_fast kernels/tools/bench_attention_forward_fast.cu kernels/attention_forward.cu kernels/reference.cpp
// Run:
//   bench_attention_forward_fast             full checks at small sizes (every variant), then the
//                                            launcher on every timed shape (sampled rows checked)
//   bench_attention_forward_fast --variants  every variant on every timed shape (bf16)
//   bench_attention_forward_fast --variants 64   the same at one head dimension (64 or 128) only
//   bench_attention_forward_fast --variants 64 TEXT   only the variants whose name holds TEXT
//   bench_attention_forward_fast --variants 64 TEXT N[c]...   and only at these timed shapes (c: causal),
//                                            e.g. --variants 64 "" 1024 1024c 2048c ("" picks every variant)
//                                            (variants marked diagnostic, e.g. "loads kLoadsFirstFill", have wrong
//                                            output by design: timed, never checked)
// FLASHSIM_FWD_FLAT_INPUTS=1: Q and K constant (no row maximum moves after the first KV tile), a timing
// diagnostic beside probe_consumer_loop; the checks still hold (uniform attention).
//   bench_attention_forward_fast --sanitize  n = 100 and 77 (bh = 2), n = 77 at bh = 300, n = 1000 at bh = 3 (the
//                                            split tail, FLASHSIM_FWD_SPLIT=1), for compute-sanitizer
//   bench_attention_forward_fast --heads D N BH...   the launcher (bf16, full) at each batch x heads, twice
// Small checks: O (relative L2) and lse (entry by entry: relative above 1, absolute below) of every head
// against kernels/reference.cpp attention_forward (double);
// timed shapes: 2 heads (first, last), 16 sampled rows, attention_forward_rows. Outputs are poisoned
// (NaN) before each checked run. Timed shapes as bench_kernels: d 64/128, N 1024..16384,
// batch x heads = 16384/N x 2048/d, causal and not; FLOPs 4 N^2 d per head (half causal); median
// of 20 timed runs after 3 warm-ups, CUDA events; after each timed run (outside its span) one warp
// reads the SMs' clock over 20 us (kernels/sm_clock.cuh): the median MHz and the time in Mclk.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention_forward_variants.h"
#include "kernels/cuda_util.cuh"
#include "kernels/fast.h"
#include "kernels/launch_order.h"
#include "kernels/reference.h"
#include "kernels/tools/standalone.cuh"
#include "sim/main_guard.h"

namespace fg = flashsim::gpu;
namespace fv = flashsim::gpu::fwd_variants;

namespace {

using fg::standalone::Buf;
using fg::standalone::fetch;
using fg::standalone::fill_kernel;

template <class T> const char* type_name();
template <> const char* type_name<__nv_bfloat16>() { return "bf16"; }
template <> const char* type_name<__half>() { return "fp16"; }

template <class T>
struct Problem {
  int bh, n, d;
  bool causal;
  std::size_t elems;
  Buf q, k, v, o, lse;
  fv::Launcher<T> run = nullptr;  // nullptr: attention_forward_fast
  Problem(int bh_, int n_, int d_, bool causal_, std::uint64_t seed)
      : bh(bh_), n(n_), d(d_), causal(causal_), elems(static_cast<std::size_t>(bh_) * n_ * d_), q(elems * sizeof(T)),
        k(elems * sizeof(T)), v(elems * sizeof(T)), o(elems * sizeof(T)), lse(static_cast<std::size_t>(bh_) * n_ * 4) {
    // FLASHSIM_FWD_FLAT_INPUTS=1 (a timing diagnostic): Q and K constant, so every score of a row is
    // the same and no row maximum moves after the first tile, as in probe_consumer_loop
    const bool flat = std::getenv("FLASHSIM_FWD_FLAT_INPUTS") != nullptr;
    fill_kernel<T><<<1024, 256>>>(q.as<T>(), elems, seed, flat ? 0.25f : -2.f, flat ? 0.25f : 2.f);
    fill_kernel<T><<<1024, 256>>>(k.as<T>(), elems, seed + 1, flat ? 0.5f : -2.f, flat ? 0.5f : 2.f);
    fill_kernel<T><<<1024, 256>>>(v.as<T>(), elems, seed + 2, -1.f, 1.f);
    CUDA_CHECK_LAUNCH();
  }
  void poison() {
    CUDA_CHECK(cudaMemset(o.p, 0xff, elems * sizeof(T)));
    CUDA_CHECK(cudaMemset(lse.p, 0xff, static_cast<std::size_t>(bh) * n * 4));
  }
  void forward() {
    if (run) run(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(), bh, n, causal, nullptr);
    else fg::attention_forward_fast<T>(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(), bh, n, d, causal, nullptr);
  }
};

template <class T> double tolerance() { return std::is_same_v<T, __half> ? 5e-3 : 1e-2; }

// Worst relative error of O (and of lse, reported apart) over `heads` x `rows` of a problem.
template <class T>
void check(Problem<T>& p, std::int64_t max_heads, std::int64_t max_rows, double& err_o, double& err_l) {
  const std::size_t per = static_cast<std::size_t>(p.n) * p.d;
  err_o = err_l = 0;
  for (auto h : fg::ref::pick_indices(p.bh, max_heads)) {
    auto hq = fetch(p.q.template as<T>(), h * per, per), hk = fetch(p.k.template as<T>(), h * per, per),
         hv = fetch(p.v.template as<T>(), h * per, per), go = fetch(p.o.template as<T>(), h * per, per);
    auto gl = fetch(p.lse.template as<float>(), static_cast<std::size_t>(h) * p.n, p.n);
    const auto rows = fg::ref::pick_indices(p.n, max_rows);
    std::vector<float> ro(rows.size() * p.d), rl(rows.size()), so, sl;
    fg::ref::attention_forward_rows(hq.data(), hk.data(), hv.data(), p.n, p.d, p.causal, rows, ro.data(), rl.data());
    for (auto r : rows) {
      so.insert(so.end(), go.begin() + r * p.d, go.begin() + (r + 1) * p.d);
      sl.push_back(gl[r]);
    }
    err_o = std::max(err_o, fg::ref::rel_error(so, ro));
    // lse entry by entry, relative above 1 and absolute below: an lse near 0 (one key, a score
    // that cancels) has no relative precision to speak of (fp16 n = 1 over 500 heads failed on it)
    for (std::size_t i = 0; i < sl.size(); ++i) {
      const double e = std::fabs(static_cast<double>(sl[i]) - rl[i]) / std::max(1.0, std::fabs(static_cast<double>(rl[i])));
      err_l = std::max(err_l, std::isnan(e) ? INFINITY : e);
    }
  }
}

// One run on poisoned outputs, checked on `heads` heads and `rows` rows each; errors in eo, el.
template <class T>
bool run_checked(Problem<T>& p, int heads, int rows, double& eo, double& el) {
  p.poison();
  p.forward();
  CUDA_CHECK(cudaDeviceSynchronize());
  check(p, heads, rows, eo, el);
  return eo < tolerance<T>() && el < 1e-3;
}

template <class T>
bool check_small(int bh, int n, int d, bool causal, fv::Launcher<T> run, const char* name, std::uint64_t seed) {
  Problem<T> p(bh, n, d, causal, seed);
  p.run = run;
  double eo, el;
  const bool ok = run_checked(p, bh, n, eo, el);
  std::printf("check %s d=%-3d n=%-5d bh=%d %-6s %-28s O %.2e lse %.2e  %s\n", type_name<T>(), d, n, bh,
              causal ? "causal" : "full", name, eo, el, ok ? "ok" : "FAIL");
  return ok;
}

// diagnostic: the variant's output is wrong by design (fv::Variant::diagnostic); timed, not checked
// bh_wanted 0: the timed shapes' batch x heads, (16384 / n) x (2048 / d)
template <class T>
bool bench(int d, int n, bool causal, fv::Launcher<T> run, const char* name, std::uint64_t seed, bool diagnostic = false,
           int bh_wanted = 0) {
  const int bh = bh_wanted > 0 ? bh_wanted : (16384 / n) * (2048 / d);
  Problem<T> p(bh, n, d, causal, seed);
  p.run = run;
  double eo, el;
  const bool ok = run_checked(p, 2, 16, eo, el) || diagnostic;
  fg::standalone::ClockSamples clock;  // the SMs' clock after each timed run, outside its span
  const std::vector<float> ms = fg::sorted_times_ms([&] { p.forward(); }, 3, 20, [&] { clock.sample(20); });
  const double med = ms[ms.size() / 2], mhz = clock.median_mhz();
  const double flops = 4.0 * n * static_cast<double>(n) * d * bh * (causal ? 0.5 : 1.0);
  // Mclk: the median time in SM clocks at the median clock (per SM: every SM runs the whole span)
  std::printf("%-4s d=%-3d N=%-5d bh=%-3d %-6s %-28s %8.3f ms %6.1f TFLOP/s %5.0f MHz %8.3f Mclk  err O %.1e lse %.1e %s\n",
              type_name<T>(), d, n, bh, causal ? "causal" : "full", name, med, flops / med * 1e-9, mhz, med * mhz * 1e-3,
              eo, el,
              diagnostic ? "diagnostic, not checked" : ok ? "ok" : "FAIL");
  std::fflush(stdout);
  return ok;
}

}  // namespace

// --heads D N BH...: the launcher (bf16, full mask) at each batch x heads, in the order given, twice:
// with persistent blocks the SMs take whole Q tiles, so the rate shows how the tiles divide over the SMs
static int run_heads(int argc, char** argv) {
  const int d = argc > 2 ? std::atoi(argv[2]) : 0, n = argc > 3 ? std::atoi(argv[3]) : 0;
  std::vector<int> bhs;
  for (int i = 4; i < argc; ++i) bhs.push_back(std::atoi(argv[i]));
  const bool bad_bh = bhs.empty() || std::any_of(bhs.begin(), bhs.end(), [](int b) { return b < 1 || b > 4096; });
  if ((d != 64 && d != 128) || n < 1 || n > 65536 || bad_bh) {
    std::fprintf(stderr, "bench_attention_forward_fast: --heads takes D (64 or 128), N (1..65536) and one or more "
                         "batch x heads counts (1..4096)\n");
    return 2;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const fg::AttnFwdTiling tiling = fg::attention_forward_fast_tiling(n, d, false);
  std::printf("device: %s, %d SMs; Q tiles of %d rows%s\n", prop.name, prop.multiProcessorCount, tiling.br,
              tiling.persistent ? ", persistent blocks" : "");
  std::uint64_t seed = static_cast<std::uint64_t>(std::time(nullptr));
  bool ok = true;
  for (int round = 0; round < 2; ++round)
    for (int bh : bhs) ok &= bench<__nv_bfloat16>(d, n, false, nullptr, "attention_forward_fast", seed += 10, false, bh);
  std::printf("%s\n", ok ? "ALL OK" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

static int run_main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--heads") == 0) return run_heads(argc, argv);
  const bool variants = argc > 1 && std::strcmp(argv[1], "--variants") == 0;
  const bool sanitize = argc > 1 && std::strcmp(argv[1], "--sanitize") == 0;
  const int head_dim = variants && argc > 2 ? std::atoi(argv[2]) : 0;  // 0: both
  const char* name_has = variants && argc > 3 ? argv[3] : nullptr;
  auto picked = [&](int i) { return !name_has || std::strstr(fv::kVariants[i].name, name_has) != nullptr; };
  std::vector<std::pair<int, bool>> shapes;  // (N, causal) the timed runs are cut to; empty: every one
  for (int i = 4; variants && i < argc; ++i) {
    char* end = nullptr;
    const long n = std::strtol(argv[i], &end, 10);
    const bool causal = *end == 'c';
    if (n < 1 || n > 65536 || (causal ? end[1] != '\0' : *end != '\0')) {
      std::fprintf(stderr, "bench_attention_forward_fast: a timed shape is N or Nc (causal), N in 1..65536, not '%s'\n",
                   argv[i]);
      return 2;
    }
    shapes.emplace_back(static_cast<int>(n), causal);
  }
  auto timed = [&](int n, bool causal) {
    return shapes.empty() || std::find(shapes.begin(), shapes.end(), std::make_pair(n, causal)) != shapes.end();
  };
  if (head_dim != 0 && head_dim != 64 && head_dim != 128) {
    std::fprintf(stderr, "bench_attention_forward_fast: --variants takes a head dimension of 64 or 128, not '%s'\n", argv[2]);
    return 2;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::uint64_t seed = static_cast<std::uint64_t>(std::time(nullptr));
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  bool ok = true;
  // small sizes: every variant and the launcher, every head and row
  auto wanted = [&](int d) { return head_dim == 0 || d == head_dim; };
  for (int i = -1; i < fv::kVariantCount; ++i) {
    if (i >= 0 && (!picked(i) || fv::kVariants[i].diagnostic)) continue;
    const int d_only = i < 0 ? 0 : fv::kVariants[i].d;
    const char* name = i < 0 ? "attention_forward_fast" : fv::kVariants[i].name;
    for (int d : {64, 128}) {
      if ((d_only && d != d_only) || !wanted(d)) continue;
      for (bool causal : {false, true})
        // bh = 300 (500): more tiles than SMs, so a persistent block takes several, with little work
        // between them: a buffer handed to the next tile too early shows here (it did, H100
        // 2026-11-25: the d = 128 launcher's Q), and racecheck sees the handovers
        // n = 1000, bh = 3 at d = 128: 24 Q tiles of 8 key tiles, split in halves over 48 blocks
        // (the launcher's split tail and its merge: the launchers' own from N = 8192, at these sizes with FLASHSIM_FWD_SPLIT=1)
        for (auto [n, bh] : sanitize ? std::vector<std::pair<int, int>>{{77, 2}, {100, 2}, {77, 300}, {1000, 3}}
                                     : std::vector<std::pair<int, int>>{{1, 1}, {77, 2}, {100, 2}, {256, 2}, {333, 2},
                                                                        {77, 300}, {1, 500}, {1000, 3}}) {
          ok &= check_small<__nv_bfloat16>(bh, n, d, causal, i < 0 ? nullptr : fv::kVariants[i].bf16, name, seed += 10);
          ok &= check_small<__half>(bh, n, d, causal, i < 0 ? nullptr : fv::kVariants[i].fp16, name, seed += 10);
        }
    }
  }
  if (!sanitize) {
    for (int d : {64, 128}) {
      if (!wanted(d)) continue;
      for (int n : {1024, 2048, 4096, 8192, 16384})
        for (bool causal : {false, true}) {
          if (!timed(n, causal)) continue;
          if (variants) {
            // picked variants are timed beside the launcher's choice, in the same run
            if (name_has) ok &= bench<__nv_bfloat16>(d, n, causal, nullptr, "attention_forward_fast", seed += 10);
            for (int i = 0; i < fv::kVariantCount; ++i)
              if (fv::kVariants[i].d == d && picked(i))
                ok &= bench<__nv_bfloat16>(d, n, causal, fv::kVariants[i].bf16, fv::kVariants[i].name, seed += 10,
                                           fv::kVariants[i].diagnostic);
          } else {
            ok &= bench<__nv_bfloat16>(d, n, causal, nullptr, "attention_forward_fast", seed += 10);
            ok &= bench<__half>(d, n, causal, nullptr, "attention_forward_fast", seed += 10);
          }
        }
    }
  }
  std::printf("%s\n", ok ? "ALL OK" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) { return flashsim::guard_main("bench_attention_forward_fast", [&] { return run_main(argc, argv); }); }

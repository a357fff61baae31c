// Validation, accuracy and timing of the FP8 attention forward (kernels/attention_fp8.cu,
// kernels/fp8.h), standalone. CMake builds it as bench_attention_forward_fp8; by hand, from the
// repository root:
//   nvcc -O3 -std=c++20 -gencode=arch=compute_90a,code=sm_90a -I. -DFLASHSIM_ATTN_FWD_FAST_ONLY -o bench_attention_forward_fp8 kernels/tools/bench_attention_forward_fp8.cu kernels/attention_fp8.cu kernels/attention_forward.cu kernels/fp8_ref.cpp kernels/reference.cpp
// Versions (fp8::Variant): default = no ping-pong, Q in registers; pingpong; qsmem; pingpong+qsmem.
// Tried and dropped (H100, 2026-11-26; kernels/results/2026-11-26-h100-fp8-*): a quarter or half
// of the exponentials on the FMA pipe, 3 or 4 K / V^T tiles in flight, consumer 1 starting half a
// tile late, four independent max / sum chains in the softmax, 256-key tiles (spill).
// Run:
//   bench_attention_forward_fp8              checks at small sizes, the accuracy study, then timing
//   bench_attention_forward_fp8 --variants   every variant on every timed shape
//   bench_attention_forward_fp8 --accuracy   the accuracy study only
//   bench_attention_forward_fp8 --sanitize   small shapes only (for compute-sanitizer)
//   bench_attention_forward_fp8 --trace N CAUSAL [pingpong]   the SM clocks of each phase of block 0's
//                                            first Q tile, per KV tile and consumer (fp8.h)
//   bench_attention_forward_fp8 --one N CAUSAL [VARIANT]   one timed shape (for ncu); VARIANT an
//                                            index into kVariants: 0 default, 1 pingpong, 2 qsmem,
//                                            3 pingpong+qsmem, 4-6 keys128/192/224, 7 exps-first,
//                                            8 exps-first keys128; 9 no exponentials (a timing
//                                            diagnostic, output wrong and not checked)
// Checks: O and lse against the kernel's own arithmetic in double (fp8_ref.h
// attention_fp8_emulated_rows, on the quantized operands read back), tolerances from e4m3's step
// (a probability rounds by at most 2^-4 of itself; a rounding flip against the double reference
// moves one key's weight by one step, 2^-3): max |dO| <= 2^-3 max|V|, rms |dO| <= 2^-8 max|V|,
// |dlse| within fp8_ref.h's fp8_lse_tolerance (the tensor cores' FP8 sums keep ~14 bits; printed
// as the worst fraction of it). The quantize pass is checked against the host's transform: every entry within
// half an e4m3 step (2^-4 relative, or 2^-10 of the scale below the normals) plus 1e-5 of its row's
// largest entry (fp32 against double in the butterflies).
// Accuracy: inputs N(0,1) + N(0,10^2) Bernoulli(0.001) (outliers, as FlashAttention-3's study),
// RMS error of O against float64 attention on the bf16 inputs, per scaling and transform, beside
// the bf16 forward.
// Timing: d = 128, N 1024..16384, bh = 16 x 16384/N, full and causal; median of 20 after 3 warm-ups;
// FLOPs 4 N^2 d per head (half causal); the bf16 forward (attention_forward_fast) on the same
// shape, and the quantize pass on its own.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda_util.cuh"
#include "kernels/fast.h"
#include "kernels/fp8.h"
#include "kernels/fp8_ref.h"
#include "kernels/reference.h"
#include "kernels/tools/standalone.cuh"
#include "sim/main_guard.h"

namespace fg = flashsim::gpu;
namespace f8 = flashsim::gpu::fp8;
using fg::standalone::Buf;
using fg::standalone::fetch;
using fg::standalone::fill_kernel;

namespace {

constexpr int kD = 128;

struct Problem {
  int bh, n;
  bool causal;
  std::size_t elems;
  Buf q, k, v, o, lse, ws;
  f8::Operands ops;
  Problem(int bh_, int n_, bool causal_)
      : bh(bh_), n(n_), causal(causal_), elems(static_cast<std::size_t>(bh_) * n_ * kD), q(elems * 2), k(elems * 2),
        v(elems * 2), o(elems * 2), lse(static_cast<std::size_t>(bh_) * n_ * 4), ws(f8::workspace_bytes(bh_, n_, kD)) {
    ops = f8::operands_in(ws.p, bh, n, kD);
  }
  void fill_uniform(std::uint64_t seed) {
    fill_kernel<__nv_bfloat16><<<1024, 256>>>(q.as<__nv_bfloat16>(), elems, seed, -2.f, 2.f);
    fill_kernel<__nv_bfloat16><<<1024, 256>>>(k.as<__nv_bfloat16>(), elems, seed + 1, -2.f, 2.f);
    fill_kernel<__nv_bfloat16><<<1024, 256>>>(v.as<__nv_bfloat16>(), elems, seed + 2, -1.f, 1.f);
    CUDA_CHECK_LAUNCH();
  }
  void quantize(const f8::QuantOptions& opt) {
    f8::quantize(q.as<__nv_bfloat16>(), k.as<__nv_bfloat16>(), v.as<__nv_bfloat16>(), ops, opt, nullptr);
  }
  void forward(f8::Variant var) { f8::attention_forward_variant(ops, o.as<__nv_bfloat16>(), lse.as<float>(), causal, var, nullptr); }
  void forward_bf16() {
    fg::attention_forward_fast<__nv_bfloat16>(q.as<__nv_bfloat16>(), k.as<__nv_bfloat16>(), v.as<__nv_bfloat16>(),
                                              o.as<__nv_bfloat16>(), lse.as<float>(), bh, n, kD, causal, nullptr);
  }
  void poison() {
    CUDA_CHECK(cudaMemset(o.p, 0xff, elems * 2));
    CUDA_CHECK(cudaMemset(lse.p, 0xff, static_cast<std::size_t>(bh) * n * 4));
  }
};

std::vector<std::uint8_t> fetch_bytes(const std::uint8_t* p, std::size_t count) {
  std::vector<std::uint8_t> out(count);
  CUDA_CHECK(cudaMemcpy(out.data(), p, count, cudaMemcpyDeviceToHost));
  return out;
}
std::vector<float> fetch_floats(const float* p, std::size_t count) { return fetch(p, 0, count); }

// The operands as the kernel reads them, dequantized on the host (V^T back to [keys][d]).
f8::Dequantized read_back(const Problem& p) {
  return f8::dequantize_operands(p.bh, p.n, kD, fetch_bytes(p.ops.q, p.elems), fetch_bytes(p.ops.k, p.elems),
                                 fetch_bytes(p.ops.vt, static_cast<std::size_t>(p.bh) * kD * p.ops.n_keys),
                                 fetch_floats(p.ops.q_scale, static_cast<std::size_t>(p.bh) * f8::q_scale_blocks(p.n)),
                                 fetch_floats(p.ops.k_scale, static_cast<std::size_t>(p.bh) * f8::k_scale_blocks(p.n)),
                                 fetch_floats(p.ops.v_scale, p.bh));
}

// Largest miss of a dequantized entry against the host's own transform, in units of its
// allowance (half an e4m3 step: 2^-4 of the value, or 2^-10 of the scale below the normals).
double quantize_miss(const Problem& p, const f8::Dequantized& x, const f8::QuantOptions& opt, int head) {
  const std::size_t per = static_cast<std::size_t>(p.n) * kD;
  double worst = 0;
  for (int which = 0; which < 3; ++which) {
    const auto orig = fetch((which == 0 ? p.q : which == 1 ? p.k : p.v).as<__nv_bfloat16>(), head * per, per);
    for (auto r : fg::ref::pick_indices(p.n, 64)) {
      std::vector<double> row(orig.begin() + r * kD, orig.begin() + (r + 1) * kD);
      if (which < 2 && opt.hadamard) f8::hadamard_row(row, opt.seed);
      double row_max = 0;
      for (double e : row) row_max = std::max(row_max, std::fabs(e));
      for (int c = 0; c < kD; ++c) {
        const int i = static_cast<int>(r);
        const double got = which == 0 ? x.q(head, i, c) : which == 1 ? x.k(head, i, c) : x.v(head, i, c);
        const int qb = f8::q_scale_blocks(p.n), kb = f8::k_scale_blocks(p.n);
        const double scale = which == 0   ? x.q_scale[head * qb + i / f8::kQBlockRows]
                             : which == 1 ? x.k_scale[head * kb + i / f8::kKBlockRows]
                                                                                     : x.v_scale[head];
        // + the device's fp32 transform against the host's double one (7 butterfly stages)
        const double allow = std::max(std::fabs(row[c]) / 16.0, scale / 1024.0) + 1e-5 * row_max;
        worst = std::max(worst, std::fabs(got - row[c]) / allow);
      }
    }
  }
  return worst;
}

struct CheckResult {
  f8::OutputErrors out;  // O and lse against the emulation (fp8_ref.h OutputCheck)
  double quant = 0;
  bool ok() const { return out.ok() && quant <= 1.0; }
};

CheckResult check(Problem& p, const f8::QuantOptions& opt, int key_tile, int max_heads, int max_rows) {
  const f8::Dequantized x = read_back(p);
  CheckResult res;
  f8::OutputCheck oc(key_tile);  // the emulation takes the kernel's tiles: P's rounding follows the running max
  const std::size_t per = static_cast<std::size_t>(p.n) * kD;
  for (auto h : fg::ref::pick_indices(p.bh, max_heads)) {
    const int head = static_cast<int>(h);
    const auto go = fetch(p.o.as<__nv_bfloat16>(), head * per, per);
    const auto gl = fetch(p.lse.as<float>(), static_cast<std::size_t>(head) * p.n, p.n);
    oc.add_head(x, head, p.causal, fg::ref::pick_indices(p.n, max_rows), go.data(), gl.data());
    res.quant = std::max(res.quant, quantize_miss(p, x, opt, head));
  }
  res.out = oc.result();
  return res;
}

const char* scaling_name(const f8::QuantOptions& o) {
  if (o.scaling == f8::Scaling::PerBlock) return o.hadamard ? "block+hadamard" : "block";
  return o.hadamard ? "tensor+hadamard" : "tensor";
}
std::string variant_name(f8::Variant v) {
  if (v.no_exponentials) return "no-exp (diagnostic)";
  if (v.exps_first) return "exps-first" + (v.key_tile != 0 ? " keys" + std::to_string(v.key_tile) : std::string());
  if (v.key_tile != 0) return "keys" + std::to_string(v.key_tile);
  return v.pingpong ? (v.qsmem ? "pingpong+qsmem" : "pingpong") : (v.qsmem ? "qsmem" : "default");
}
// the default picks its key tile by n (fp8.h key_tile_for); keys128/192/224 force one
const f8::Variant kVariants[] = {{false, false},
                                 {true, false},
                                 {false, true},
                                 {true, true},
                                 {false, false, false, 128},
                                 {false, false, false, 192},
                                 {false, false, false, 224},
                                 {false, false, false, 0, true},
                                 {false, false, false, 128, true}};
// --one's VARIANT = kVariantCount: the timing diagnostic without exponentials (fp8.h), unchecked
constexpr int kVariantCount = static_cast<int>(std::size(kVariants));
const f8::Variant kNoExp{false, false, true};

bool check_small(int bh, int n, bool causal, f8::QuantOptions opt, f8::Variant var, std::uint64_t seed) {
  Problem p(bh, n, causal);
  p.fill_uniform(seed);
  p.poison();
  p.quantize(opt);
  p.forward(var);
  CUDA_CHECK(cudaDeviceSynchronize());
  const CheckResult r = check(p, opt, f8::key_tile_for(n, var), 4, 1000);
  std::printf("check fp8 d=128 n=%-5d bh=%-3d %-6s %-15s %-14s O max %.2e rms %.2e (max|V| %.2f) lse/tol %.2f quant %.2f  %s\n",
              n, bh, causal ? "causal" : "full", scaling_name(opt), variant_name(var).c_str(), r.out.max_o, r.out.rms_o,
              r.out.vmax, r.out.lse, r.quant, r.ok() ? "ok" : "FAIL");
  return r.ok();
}

// FlashAttention-3's outlier inputs: N(0,1) + N(0,10^2) Bernoulli(0.001), rounded to bf16.
std::vector<__nv_bfloat16> outlier_inputs(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.f, 1.f), big(0.f, 10.f);
  std::bernoulli_distribution rare(0.001);
  std::vector<__nv_bfloat16> out(count);
  for (auto& e : out) e = __float2bfloat16(normal(gen) + (rare(gen) ? big(gen) : 0.f));
  return out;
}

// The quantizations compared on the outlier inputs: the per-tensor baseline first, the default last.
f8::QuantOptions quant_options(f8::Scaling scaling, bool hadamard) {
  f8::QuantOptions o;
  o.scaling = scaling;
  o.hadamard = hadamard;
  return o;
}
const f8::QuantOptions kAccuracyOptions[] = {
    quant_options(f8::Scaling::PerTensor, false), quant_options(f8::Scaling::PerTensor, true),
    quant_options(f8::Scaling::PerBlock, false), quant_options(f8::Scaling::PerBlock, true)};

// One draw of the outlier inputs: RMS error of O against float64 for bf16, then each quantization.
std::vector<double> accuracy_draw(Problem& p, std::uint64_t seed) {
  const int bh = p.bh, n = p.n;
  const std::size_t per = static_cast<std::size_t>(n) * kD;
  for (int which = 0; which < 3; ++which) {
    const auto host = outlier_inputs(p.elems, seed + which);
    CUDA_CHECK(cudaMemcpy((which == 0 ? p.q : which == 1 ? p.k : p.v).p, host.data(), p.elems * 2, cudaMemcpyHostToDevice));
  }
  // float64 reference on 256 rows of every head
  const auto rows = fg::ref::pick_indices(n, 256);
  std::vector<std::vector<float>> ref(bh);
  for (int h = 0; h < bh; ++h) {
    const auto hq = fetch(p.q.as<__nv_bfloat16>(), h * per, per), hk = fetch(p.k.as<__nv_bfloat16>(), h * per, per),
               hv = fetch(p.v.as<__nv_bfloat16>(), h * per, per);
    ref[h].resize(rows.size() * kD);
    std::vector<float> lse(rows.size());
    fg::ref::attention_forward_rows(hq.data(), hk.data(), hv.data(), n, kD, false, rows, ref[h].data(), lse.data());
  }
  auto rmse = [&] {
    CUDA_CHECK(cudaDeviceSynchronize());
    double sq = 0;
    std::size_t count = 0;
    for (int h = 0; h < bh; ++h) {
      const auto go = fetch(p.o.as<__nv_bfloat16>(), h * per, per);
      for (std::size_t r = 0; r < rows.size(); ++r)
        for (int c = 0; c < kD; ++c) {
          const double e = static_cast<double>(go[rows[r] * kD + c]) - ref[h][r * kD + c];
          sq += e * e;
          ++count;
        }
    }
    return std::sqrt(sq / count);
  };
  std::vector<double> errors;
  p.forward_bf16();
  errors.push_back(rmse());
  for (const auto& opt : kAccuracyOptions) {
    p.quantize(opt);
    p.forward(f8::Variant{});
    errors.push_back(rmse());
  }
  return errors;
}

// FA3's accuracy comparison, on several draws since one draw's ratio moves by +-0.3: the default
// (per block, Q and K transformed) against the per-tensor baseline without the transform.
bool accuracy_study(std::uint64_t seed) {
  const int bh = 4, n = 2048, draws = 4;
  std::printf("accuracy: bh=%d n=%d d=128 full, inputs N(0,1) + N(0,100) Bernoulli(0.001), RMS error of O vs float64, "
              "%d draws\n", bh, n, draws);
  std::printf("accuracy draw  bf16      ");
  for (const auto& opt : kAccuracyOptions) std::printf(" %-16s", scaling_name(opt));
  std::printf(" baseline/default\n");
  Problem p(bh, n, false);
  double worst_ratio = INFINITY, log_sum = 0;
  bool finite = true;
  for (int draw = 0; draw < draws; ++draw) {
    const auto e = accuracy_draw(p, seed + 100 * draw);
    const double ratio = e[1] / e.back();
    std::printf("accuracy %4d  %.3e", draw, e[0]);
    for (std::size_t i = 1; i < e.size(); ++i) std::printf(" %-16.3e", e[i]);
    std::printf(" %.2fx\n", ratio);
    for (double x : e) finite &= std::isfinite(x);
    worst_ratio = std::min(worst_ratio, ratio);
    log_sum += std::log(ratio);
  }
  std::printf("accuracy per-tensor / (per-block + Hadamard): %.2fx lower error at worst, %.2fx geometric mean "
              "(target >= 2x)\n", worst_ratio, std::exp(log_sum / draws));
  return finite;
}

bool bench(int n, bool causal, f8::Variant var, bool with_bf16, std::uint64_t seed) {
  const int bh = (16384 / n) * 16;
  Problem p(bh, n, causal);
  p.fill_uniform(seed);
  const f8::QuantOptions opt;
  p.quantize(opt);
  p.poison();
  p.forward(var);
  CUDA_CHECK(cudaDeviceSynchronize());
  const bool diagnostic = var.no_exponentials;
  const CheckResult r = diagnostic ? CheckResult{} : check(p, opt, f8::key_tile_for(n, var), 2, 16);
  const double flops = 4.0 * n * static_cast<double>(n) * kD * bh * (causal ? 0.5 : 1.0);
  const auto ms = fg::sorted_times_ms([&] { p.forward(var); }, 3, 20);
  const double med = ms[ms.size() / 2];
  std::string name = variant_name(var);
  if (name == "default") name += " k" + std::to_string(f8::key_tile_for(n, var));  // the tile it picked
  std::printf("fp8  d=128 N=%-5d bh=%-3d %-6s %-15s %8.3f ms %7.1f TFLOP/s", n, bh, causal ? "causal" : "full",
              name.c_str(), med, flops / med * 1e-9);
  if (with_bf16) {
    const auto qms = fg::sorted_times_ms([&] { p.quantize(opt); }, 3, 20);
    const auto bms = fg::sorted_times_ms([&] { p.forward_bf16(); }, 3, 20);
    const double qmed = qms[qms.size() / 2], bmed = bms[bms.size() / 2];
    std::printf("  bf16 %7.1f TFLOP/s  fp8/bf16 %.2fx  quantize %.3f ms (with it %.2fx)", flops / bmed * 1e-9,
                bmed / med, qmed, bmed / (med + qmed));
  }
  if (diagnostic) std::printf("  (output not checked)\n");
  else std::printf("  err O %.1e lse/tol %.2f %s\n", r.out.max_o, r.out.lse, r.ok() ? "ok" : "FAIL");
  std::fflush(stdout);
  return diagnostic || r.ok();
}

// --trace N CAUSAL [pingpong]: block 0's first Q tile, phase by phase (fp8.h attention_forward_trace):
// per KV tile and consumer the SM clocks spent issuing, waiting for S, in the softmax, waiting for
// P V and packing P, then the averages over the steady tiles.
int run_trace(int n, bool causal, bool pingpong) {
  const int bh = (16384 / n) * 16, tiles = std::min(64, n / 128);
  Problem p(bh, n, causal);
  p.fill_uniform(1);
  p.quantize(f8::QuantOptions{});
  p.forward(f8::Variant{pingpong, false});  // warm
  Buf trace(static_cast<std::size_t>(2) * tiles * 6 * sizeof(long long));
  f8::attention_forward_trace(p.ops, p.o.as<__nv_bfloat16>(), p.lse.as<float>(), causal, pingpong,
                              trace.as<long long>(), tiles, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<long long> t(static_cast<std::size_t>(2) * tiles * 6);
  CUDA_CHECK(cudaMemcpy(t.data(), trace.p, t.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  auto at = [&](int c, int j, int e) { return t[(static_cast<std::size_t>(c) * tiles + j) * 6 + e]; };
  const long long t0 = std::min(at(0, 0, 0), at(1, 0, 0));
  std::printf("trace fp8 d=128 N=%d %s %s, block 0's first Q tile, SM clocks from its start\n", n,
              causal ? "causal" : "full", pingpong ? "pingpong" : "default");
  std::printf("tile c  start  issue  wait-S  softmax  wait-PV  pack   (end)\n");
  const char* names[] = {"issue", "wait-S", "softmax", "wait-PV", "pack"};
  double sum[2][5] = {}, period[2] = {};
  int counted = 0;
  for (int j = 0; j < tiles; ++j)
    for (int c = 0; c < 2; ++c) {
      std::printf("%4d %d %7lld", j, c, at(c, j, 0) - t0);
      for (int e = 1; e < 6; ++e) std::printf(" %7lld", at(c, j, e) - at(c, j, e - 1));
      std::printf("  %7lld\n", at(c, j, 5) - t0);
      if (j >= 2 && j + 1 < tiles) {
        for (int e = 1; e < 6; ++e) sum[c][e - 1] += static_cast<double>(at(c, j, e) - at(c, j, e - 1));
        period[c] += static_cast<double>(at(c, j + 1, 0) - at(c, j, 0));
        if (c == 1) ++counted;
      }
    }
  for (int c = 0; c < 2; ++c) {
    std::printf("mean c%d over tiles 2..%d: tile %.0f clocks =", c, tiles - 2, period[c] / counted);
    for (int e = 0; e < 5; ++e) std::printf(" %s %.0f", names[e], sum[c][e] / counted);
    std::printf("\n");
  }
  // how far apart the consumers run: c1's softmax start against c0's, in tiles
  double lag = 0;
  for (int j = 2; j + 1 < tiles; ++j) lag += static_cast<double>(at(1, j, 2) - at(0, j, 2));
  std::printf("c1's softmax starts %.0f clocks after c0's (mean), a tile lasting %.0f\n", lag / counted,
              period[0] / counted);
  return 0;
}

// --one N CAUSAL [VARIANT]: one timed shape (for ncu), VARIANT an index into kVariants.
bool parse_one(int argc, char** argv, int& n, bool& causal, int& variant) {
  if (argc < 4 || argc > 5) return false;
  char* end = nullptr;
  const long nn = std::strtol(argv[2], &end, 10);
  if (*end || nn < 1 || nn > 16384 || 16384 % nn != 0) return false;
  if (std::strcmp(argv[3], "0") != 0 && std::strcmp(argv[3], "1") != 0) return false;
  const long v = argc == 5 ? std::strtol(argv[4], &end, 10) : 0;
  if (argc == 5 && (*end || v < 0 || v > kVariantCount)) return false;
  n = static_cast<int>(nn);
  causal = argv[3][0] == '1';
  variant = static_cast<int>(v);
  return true;
}

int run_main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int one_n = 0, one_variant = 0;
  bool one_causal = false;
  const bool one = mode == "--one";
  if (mode == "--trace") {
    int n = 0, unused = 0;
    bool causal = false;
    const bool pingpong = argc == 5 && std::strcmp(argv[4], "pingpong") == 0;
    if (!(argc == 4 || pingpong) || !parse_one(4, argv, n, causal, unused) || n < 1024) {
      std::fprintf(stderr, "usage: bench_attention_forward_fp8 --trace N CAUSAL [pingpong]  (N a power of two, 1024..16384)\n");
      return 2;
    }
    return run_trace(n, causal, pingpong);
  }
  if (one ? !parse_one(argc, argv, one_n, one_causal, one_variant)
          : argc > 2 || !(mode.empty() || mode == "--variants" || mode == "--accuracy" || mode == "--sanitize")) {
    std::fprintf(stderr,
                 "usage: bench_attention_forward_fp8 [--variants | --accuracy | --sanitize | --one N CAUSAL [VARIANT]]\n"
                 "  --one: N a power of two dividing 16384, CAUSAL 0 or 1, VARIANT 0..%d (%d: no exponentials, a\n"
                 "  timing diagnostic whose output is wrong and not checked)\n",
                 kVariantCount, kVariantCount);
    return 2;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::uint64_t seed = static_cast<std::uint64_t>(std::time(nullptr));
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  bool ok = true;
  if (one) {
    ok = bench(one_n, one_causal, one_variant == kVariantCount ? kNoExp : kVariants[one_variant], false, seed);
    std::printf("%s\n", ok ? "ALL OK" : "SOME CHECKS FAILED");
    return ok ? 0 : 1;
  }
  if (mode != "--accuracy") {
    // bh = 300: more tiles than SMs, so a persistent block takes several with little work between
    const std::vector<std::pair<int, int>> shapes =
        mode == "--sanitize" ? std::vector<std::pair<int, int>>{{77, 2}, {333, 2}, {77, 300}, {1000, 2}}
                             : std::vector<std::pair<int, int>>{{1, 1}, {77, 2}, {200, 3}, {333, 2}, {1000, 2}, {77, 300}};
    for (auto [n, bh] : shapes)
      for (bool causal : {false, true}) {
        for (auto var : kVariants) ok &= check_small(bh, n, causal, f8::QuantOptions{}, var, seed += 10);
        f8::QuantOptions tensor;
        tensor.scaling = f8::Scaling::PerTensor;
        tensor.hadamard = false;
        ok &= check_small(bh, n, causal, tensor, f8::Variant{}, seed += 10);
      }
  }
  if (mode.empty() || mode == "--accuracy") ok &= accuracy_study(seed += 10);
  if (mode.empty() || mode == "--variants")
    for (int n : {1024, 2048, 4096, 8192, 16384})
      for (bool causal : {false, true}) {
        if (mode == "--variants")
          for (auto var : kVariants) ok &= bench(n, causal, var, false, seed += 10);
        else ok &= bench(n, causal, f8::Variant{}, true, seed += 10);
      }
  std::printf("%s\n", ok ? "ALL OK" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return flashsim::guard_main("bench_attention_forward_fp8", [&] { return run_main(argc, argv); }); }

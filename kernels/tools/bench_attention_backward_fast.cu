// Validation and timing of attention_backward_fast (kernels/attention_backward.cu version 7, or
// version 6 / 5 with FLASHSIM_BWD_VERSION=6 / 5 in the environment),
// standalone (no runner, no CUPTI). CMake builds it as the target bench_attention_backward_fast
// (`ninja -C build/default bench_attention_backward_fast`); by hand, from the repository root:
//   nvcc -O3 -std=c++20 -gencode=arch=compute_90a,code=sm_90a -I. -DFLASHSIM_ATTN_BWD_FAST_ONLY -o build/bwdfast/bench_attention_backward_fast kernels/tools/bench_attention_backward_fast.cu kernels/attention_backward.cu kernels/reference.cpp
//   (add -Xptxas -v to see registers and spills per kernel)
// Run:
//   bench_attention_backward_fast            full checks at small sizes, then every timed shape
//                                            (checked on sampled rows) with its time and TFLOP/s
//   bench_attention_backward_fast --small    only the small full checks
//   bench_attention_backward_fast --variants the launcher (version 7, 6 or 5) against the version before
//                                            it, the other variants, versions 4, 3 and the all-mma.sync kernel: full
//                                            checks of each at small sizes, then each timed (bf16)
//   bench_attention_backward_fast --check D N CAUSAL [bf16|fp16]   one head of N rows checked in full
//                                            (the launcher; for a sanitizer on one shape)
//   bench_attention_backward_fast --one D N CAUSAL [bf16|fp16]   one problem run twice (for ncu; bf16
//                                            unless fp16 is named)
//   bench_attention_backward_fast --d128     the launcher at d = 128, N = 8192 and 16384, full and causal,
//                                            bf16 and fp16 side by side, two rounds (checked on sampled rows)
//   bench_attention_backward_fast --power D N CAUSAL SECONDS   back-to-back runs of one shape for
//                                            SECONDS per phase (bf16, fp16, fp16 with bf16-representable
//                                            inputs, the same with P / dS cut to bf16's mantissa width,
//                                            then bf16 and fp16 again), 1 s idle between phases; each
//                                            phase prints its epoch start / end (to line up with an
//                                            `nvidia-smi -lms` log or an NVML energy-counter log)
//                                            and its mean time and TFLOP/s
//   bench_attention_backward_fast --ab D N CAUSAL SECONDS [7|8]   --power's phases for launch_bwd
//                                            PRODUCTS 7 (version 6 pre-LEAN; 8: version 7, dQ
//                                            alternating between the consumers) and 4 (version 6),
//                                            bf16 and fp16, in ABBA order
//   bench_attention_backward_fast --ab-table [7|8]   the timed shapes at N >= 8192, PRODUCTS 7 (8)
//                                            and 4 side by side, after full checks of the variant at
//                                            n = 1, 77, 333
//   bench_attention_backward_fast --ring-step   the ring backward's step launch against the plain launcher
//                                            on one GPU (no ring): chunks of 8192, 16384, 32768 rows, 8 heads,
//                                            d 64 and 128, bf16, full mask; TFLOP/s of the plain launch on
//                                            [2 x 8] heads, the step over two independent pairs (the same
//                                            FLOPs), the step over all four pairs (each key tile walking two
//                                            query chunks, then a launch per query chunk) and the same four
//                                            pairs as per-pair accumulating launches (the ring's --launch pair)
//   bench_attention_backward_fast --sanitize bh = 2, n = 100 and bh = 1, n = 333 only (d 64/128,
//                                            causal or not, both dtypes; 333 rows reuse the Q / dO
//                                            ring's stages), for compute-sanitizer memcheck / racecheck
// O and lse for the backward come from a plain mma.sync forward in this file (test-only; it is
// checked against the float64 CPU forward at the small sizes). The gradients are checked against
// kernels/reference.cpp in double: attention_backward (all heads, all rows) at small sizes,
// attention_backward_rows (2 heads, sampled rows, given the GPU's O and lse) at the timed sizes.
// Outputs and workspace are poisoned (NaN) before each checked run; a non-finite value fails.
// Timed shapes: d in {64, 128}, N in {1024, 4096, 8192, 16384}, batch*heads = 16 * 16384 / N
// (16k tokens x 16 heads), causal and not, bf16 and fp16. FLOPs = 2.5 * 4 N^2 d per head
// (half under the causal mask); median of 20 timed runs after 3 warm-ups, CUDA events.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <ctime>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda_util.cuh"
#include "kernels/fast.h"
#include "kernels/mma.cuh"
#include "kernels/reference.h"
#include "kernels/tools/standalone.cuh"
#include "sim/main_guard.h"

namespace flashsim::gpu::bwd_fast {  // tile-shape variants instantiated in the standalone build
template <class T, int D, int BR, int BC, int NW, int DQ_MT, int PRODUCTS>
void launch_bwd(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse, T* dq, T* dk, T* dv,
                void* workspace, int bh, int n, bool causal, cudaStream_t stream);
int selected_version();  // the launcher's: 7, or 6 / 5 under FLASHSIM_BWD_VERSION=6 / 5
}  // namespace flashsim::gpu::bwd_fast

namespace fg = flashsim::gpu;
namespace mm = flashsim::gpu::mma;

namespace {

// ---------------------------------------------------------------------------------------------
// device helpers: counter-based random fill, NaN counter, test forward

using fg::standalone::fill_kernel;

template <class T>
__global__ void round_bf16_kernel(T* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = fg::from_f<T>(__bfloat162float(__float2bfloat16_rn(fg::to_f(p[i]))));
}

template <class T>
__global__ void count_bad_kernel(const T* p, std::size_t n, unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    local += !isfinite(fg::to_f(p[i]));
  if (local) atomicAdd(bad, local);
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <int ROWS, int D, class T>
__device__ __forceinline__ void copy_rows(std::uint32_t dst, const T* src, int row0, int n) {
  for (int i = threadIdx.x; i < ROWS * (D / 8); i += blockDim.x) {
    const int r = i / (D / 8), c = i % (D / 8);
    const bool ok = row0 + r < n;
    mm::cp_async16(mm::swizzled<D>(dst, r, c), src + static_cast<std::size_t>(ok ? row0 + r : 0) * D + c * 8, ok);
  }
}

// Test-only forward: 4 warps x 16 query rows, 64-key tiles, no pipelining. Writes O and the
// natural-log lse the backward needs.
template <class T, int D>
__global__ void __launch_bounds__(128) test_forward_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                           const T* __restrict__ v, T* __restrict__ o,
                                                           float* __restrict__ lse, int n, bool causal,
                                                           float scale_log2) {
  constexpr int BR = 64, BC = 64;
  extern __shared__ __align__(128) unsigned char smem[];
  const std::uint32_t qs = mm::smem_addr(smem), ks = qs + BR * D * 2, vs = ks + BC * D * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int q0 = blockIdx.x * BR;
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * n * D;
  q += head; k += head; v += head; o += head;
  copy_rows<BR, D>(qs, q, q0, n);
  const int kv_end = causal ? min(n, q0 + BR) : n;
  float acc[D / 8][4] = {}, mx[2] = {-INFINITY, -INFINITY}, sum[2] = {0.f, 0.f};
  for (int kv0 = 0; kv0 < kv_end; kv0 += BC) {
    __syncthreads();
    copy_rows<BC, D>(ks, k, kv0, n);
    copy_rows<BC, D>(vs, v, kv0, n);
    mm::cp_async_commit();
    mm::cp_async_wait<0>();
    __syncthreads();
    float s[BC / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      std::uint32_t a[4];
      mm::ldmatrix_x4(a, mm::swizzled<D>(qs, warp * 16 + (lane % 8) + ((lane / 8) & 1) * 8, kk * 2 + lane / 16));
#pragma unroll
      for (int np = 0; np < BC / 16; ++np) {
        std::uint32_t b[4];
        mm::ldmatrix_x4(b, mm::swizzled<D>(ks, np * 16 + (lane % 8) + (lane / 16) * 8, kk * 2 + ((lane / 8) & 1)));
        mm::mma16816<T>(s[2 * np], a, b[0], b[1]);
        mm::mma16816<T>(s[2 * np + 1], a, b[2], b[3]);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = q0 + warp * 16 + g + 8 * h;
      float m = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int key = kv0 + nt * 8 + 2 * t + e;
          float& x = s[nt][2 * h + e];
          x = (key >= n || (causal && key > row)) ? -INFINITY : x * scale_log2;
          m = fmaxf(m, x);
        }
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      const float m_new = fmaxf(mx[h], m);
      const float base = m_new == -INFINITY ? 0.f : m_new;
      const float alpha = ex2(mx[h] - base);
      mx[h] = m_new;
      float part = 0.f;
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float p = ex2(s[nt][2 * h + e] - base);
          s[nt][2 * h + e] = p;
          part += p;
        }
      sum[h] = sum[h] * alpha + part;
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        acc[dt][2 * h] *= alpha;
        acc[dt][2 * h + 1] *= alpha;
      }
    }
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      std::uint32_t a[4] = {mm::pack2<T>(s[2 * kk][0], s[2 * kk][1]), mm::pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                            mm::pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                            mm::pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        std::uint32_t b[4];
        mm::ldmatrix_x4_trans(b, mm::swizzled<D>(vs, kk * 16 + (lane % 8) + ((lane / 8) & 1) * 8, dp * 2 + lane / 16));
        mm::mma16816<T>(acc[2 * dp], a, b[0], b[1]);
        mm::mma16816<T>(acc[2 * dp + 1], a, b[2], b[3]);
      }
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = sum[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int row = q0 + warp * 16 + g + 8 * h;
    if (row >= n) continue;
    const float inv = 1.f / l;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
      *reinterpret_cast<std::uint32_t*>(o + static_cast<std::size_t>(row) * D + dt * 8 + 2 * t) =
          mm::pack2<T>(acc[dt][2 * h] * inv, acc[dt][2 * h + 1] * inv);
    if (t == 0) lse[static_cast<std::size_t>(blockIdx.y) * n + row] = (mx[h] + log2f(l)) * 0.6931471805599453f;
  }
}

// ---------------------------------------------------------------------------------------------
// host side

template <class T> const char* type_name();
template <> const char* type_name<__nv_bfloat16>() { return "bf16"; }
template <> const char* type_name<__half>() { return "fp16"; }

using fg::standalone::Buf;
using fg::standalone::fetch;

template <class T>
std::uint64_t count_bad(const T* p, std::size_t n) {
  Buf c(sizeof(unsigned long long));
  CUDA_CHECK(cudaMemset(c.p, 0, sizeof(unsigned long long)));
  count_bad_kernel<T><<<1024, 256>>>(p, n, c.as<unsigned long long>());
  CUDA_CHECK_LAUNCH();
  unsigned long long h = 0;
  CUDA_CHECK(cudaMemcpy(&h, c.p, sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

// One problem on the device: inputs drawn, forward run, buffers for the gradients.
template <class T>
struct Problem {
  int bh, n, d;
  bool causal;
  std::size_t elems;
  Buf q, k, v, o, dout, lse, dq, dk, dv, ws;
  Problem(int bh_, int n_, int d_, bool causal_, std::uint64_t seed, bool bf16_values = false)
      : bh(bh_), n(n_), d(d_), causal(causal_), elems(static_cast<std::size_t>(bh_) * n_ * d_),
        q(elems * sizeof(T)), k(elems * sizeof(T)), v(elems * sizeof(T)), o(elems * sizeof(T)),
        dout(elems * sizeof(T)), lse(static_cast<std::size_t>(bh_) * n_ * 4), dq(elems * sizeof(T)),
        dk(elems * sizeof(T)), dv(elems * sizeof(T)), ws(fg::attention_backward_fast_workspace_bytes(bh_, n_, d_)) {
    fill_kernel<T><<<1024, 256>>>(q.as<T>(), elems, seed, -2.f, 2.f);
    CUDA_CHECK_LAUNCH();
    fill_kernel<T><<<1024, 256>>>(k.as<T>(), elems, seed + 1, -2.f, 2.f);
    CUDA_CHECK_LAUNCH();
    fill_kernel<T><<<1024, 256>>>(v.as<T>(), elems, seed + 2, -1.f, 1.f);
    CUDA_CHECK_LAUNCH();
    fill_kernel<T><<<1024, 256>>>(dout.as<T>(), elems, seed + 3, -1.f, 1.f);
    CUDA_CHECK_LAUNCH();
    if (bf16_values)  // inputs rounded to bf16's mantissa width (fp16: its 3 low mantissa bits cleared)
      for (Buf* b : {&q, &k, &v, &dout}) {
        round_bf16_kernel<T><<<1024, 256>>>(b->as<T>(), elems);
        CUDA_CHECK_LAUNCH();
      }
    CUDA_CHECK(cudaMemset(o.p, 0xff, elems * sizeof(T)));
    CUDA_CHECK(cudaMemset(lse.p, 0xff, static_cast<std::size_t>(bh) * n * 4));
    const float scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(d));
    const dim3 grid((n + 63) / 64, bh);
    if (d == 64) {
      constexpr int smem = 3 * 64 * 64 * 2;
      test_forward_kernel<T, 64><<<grid, 128, smem>>>(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(), n,
                                                     causal, scale_log2);
    } else {
      constexpr int smem = 3 * 64 * 128 * 2;
      CUDA_CHECK(cudaFuncSetAttribute(test_forward_kernel<T, 128>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      test_forward_kernel<T, 128><<<grid, 128, smem>>>(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(), n,
                                                      causal, scale_log2);
    }
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  void poison() {
    for (Buf* b : {&dq, &dk, &dv}) CUDA_CHECK(cudaMemset(b->p, 0xff, elems * sizeof(T)));
    CUDA_CHECK(cudaMemset(ws.p, 0xff, fg::attention_backward_fast_workspace_bytes(bh, n, d)));
  }
  using Launcher = void (*)(const T*, const T*, const T*, const T*, const T*, const float*, T*, T*, T*, void*, int, int,
                           bool, cudaStream_t);
  Launcher variant = nullptr;  // a tile-shape variant instead of attention_backward_fast
  void backward() {
    if (variant) {
      variant(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), dout.as<T>(), lse.as<float>(), dq.as<T>(), dk.as<T>(),
              dv.as<T>(), ws.p, bh, n, causal, nullptr);
      return;
    }
    fg::attention_backward_fast<T>(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), dout.as<T>(), lse.as<float>(),
                                   dq.as<T>(), dk.as<T>(), dv.as<T>(), ws.p, bh, n, d, causal, nullptr);
  }
  std::uint64_t bad_outputs() { return count_bad(dq.as<T>(), elems) + count_bad(dk.as<T>(), elems) + count_bad(dv.as<T>(), elems); }
};

constexpr double kTolerance = 1e-2;  // relative L2, bf16 and fp16 operands

// Small sizes: every head and row against the float64 CPU forward and backward.
template <class T>
bool check_full(int bh, int n, int d, bool causal, std::uint64_t seed,
                typename Problem<T>::Launcher variant = nullptr, const char* label = "") {
  Problem<T> p(bh, n, d, causal, seed);
  p.variant = variant;
  p.poison();
  p.backward();
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::uint64_t bad = p.bad_outputs();
  const std::size_t per = static_cast<std::size_t>(n) * d;
  double err_fwd = 0, err_lse = 0, err[3] = {0, 0, 0};
  for (int h = 0; h < bh; ++h) {
    auto hq = fetch(p.q.template as<T>(), h * per, per), hk = fetch(p.k.template as<T>(), h * per, per),
         hv = fetch(p.v.template as<T>(), h * per, per), hdo = fetch(p.dout.template as<T>(), h * per, per);
    auto go = fetch(p.o.template as<T>(), h * per, per);
    auto glse = fetch(p.lse.template as<float>(), static_cast<std::size_t>(h) * n, n);
    std::vector<float> ro(per), rlse(n), rdq(per), rdk(per), rdv(per);
    fg::ref::attention_forward(hq.data(), hk.data(), hv.data(), n, d, causal, ro.data(), rlse.data());
    fg::ref::attention_backward(hq.data(), hk.data(), hv.data(), hdo.data(), n, d, causal, rdq.data(), rdk.data(),
                                rdv.data());
    err_fwd = std::max(err_fwd, fg::ref::rel_error(go, ro));
    err_lse = std::max(err_lse, fg::ref::rel_error(glse, rlse));
    const std::vector<float>* want[3] = {&rdq, &rdk, &rdv};
    const Buf* got[3] = {&p.dq, &p.dk, &p.dv};
    for (int x = 0; x < 3; ++x)
      err[x] = std::max(err[x], fg::ref::rel_error(fetch(got[x]->template as<T>(), h * per, per), *want[x]));
  }
  const double worst = std::max({err[0], err[1], err[2], err_fwd});
  const bool ok = bad == 0 && worst < kTolerance && err_lse < 1e-3;
  std::printf("check %s d=%-3d n=%-5d bh=%d %-6s  fwd O %.1e lse %.1e | dQ %.2e dK %.2e dV %.2e | non-finite %llu  %s%s\n",
              type_name<T>(), d, n, bh, causal ? "causal" : "full", err_fwd, err_lse, err[0], err[1], err[2],
              static_cast<unsigned long long>(bad), ok ? "ok" : "FAIL", label);
  return ok;
}

// Timed sizes: 2 heads (first, last), sampled rows, given the GPU forward's O and lse.
template <class T>
bool check_rows(Problem<T>& p, double* worst_out) {
  const std::uint64_t bad = p.bad_outputs();
  const std::size_t per = static_cast<std::size_t>(p.n) * p.d;
  const auto heads = fg::ref::pick_indices(p.bh, 2);
  const auto rows = fg::ref::pick_indices(p.n, 12);
  std::vector<double> errs(heads.size(), 0.0);
  std::vector<std::thread> th;
  std::vector<std::vector<float>> in[6], out[3];
  for (auto& x : in) x.resize(heads.size());
  for (auto& x : out) x.resize(heads.size());
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const std::size_t off = heads[i] * per;
    in[0][i] = fetch(p.q.template as<T>(), off, per);
    in[1][i] = fetch(p.k.template as<T>(), off, per);
    in[2][i] = fetch(p.v.template as<T>(), off, per);
    in[3][i] = fetch(p.o.template as<T>(), off, per);
    in[4][i] = fetch(p.dout.template as<T>(), off, per);
    in[5][i] = fetch(p.lse.template as<float>(), heads[i] * p.n, p.n);
    const Buf* got[3] = {&p.dq, &p.dk, &p.dv};
    for (int x = 0; x < 3; ++x) {
      auto full = fetch(got[x]->template as<T>(), off, per);
      out[x][i].clear();
      for (auto r : rows) out[x][i].insert(out[x][i].end(), full.begin() + r * p.d, full.begin() + (r + 1) * p.d);
    }
  }
  for (std::size_t i = 0; i < heads.size(); ++i)
    th.emplace_back([&, i] {
      const std::size_t m = rows.size() * p.d;
      std::vector<float> rq(m), rk(m), rv(m);
      fg::ref::attention_backward_rows(in[0][i].data(), in[1][i].data(), in[2][i].data(), in[3][i].data(),
                                       in[4][i].data(), in[5][i].data(), p.n, p.d, p.causal, rows, rq.data(),
                                       rk.data(), rv.data());
      errs[i] = std::max({fg::ref::rel_error(out[0][i], rq), fg::ref::rel_error(out[1][i], rk),
                          fg::ref::rel_error(out[2][i], rv)});
    });
  for (auto& x : th) x.join();
  double worst = 0;
  for (double e : errs) worst = std::max(worst, e);
  *worst_out = bad ? INFINITY : worst;
  return bad == 0 && worst < kTolerance;
}

template <class T>
bool bench_shape(int d, int n, bool causal, std::uint64_t seed, typename Problem<T>::Launcher variant = nullptr,
                 const char* label = "") {
  const int bh = 16 * 16384 / n;
  Problem<T> p(bh, n, d, causal, seed);
  p.variant = variant;
  p.poison();
  p.backward();
  CUDA_CHECK(cudaDeviceSynchronize());
  double err = 0;
  const bool ok = check_rows(p, &err);
  const std::vector<float> ms = fg::sorted_times_ms([&] { p.backward(); }, 3, 20);
  const double med = ms[ms.size() / 2];
  const double flops = 2.5 * 4.0 * n * static_cast<double>(n) * d * bh * (causal ? 0.5 : 1.0);
  std::printf("%-4s d=%-3d N=%-5d bh=%-3d %-6s  %8.3f ms  %6.1f TFLOP/s  (min %.3f max %.3f)  err %.2e %s%s\n",
              type_name<T>(), d, n, bh, causal ? "causal" : "full", med, flops / med * 1e-9, ms.front(), ms.back(),
              err, ok ? "ok" : "FAIL", label);
  std::fflush(stdout);
  return ok;
}

template <class T>
bool small_checks(std::uint64_t seed, bool tiny) {
  bool ok = true;
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      ok &= check_full<T>(2, 100, d, causal, seed += 10);
      ok &= check_full<T>(tiny ? 1 : 3, 333, d, causal, seed += 10);
      if (tiny) continue;
      ok &= check_full<T>(1, 1, d, causal, seed += 10);
      ok &= check_full<T>(1, 256, d, causal, seed += 10);
    }
  return ok;
}

double epoch_s() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// One --power phase: warm-up, 1 s idle, then back-to-back runs (10 between two events) for `seconds`.
template <class T>
void power_phase(const char* label, int d, int n, bool causal, double seconds, bool bf16_values,
                 typename Problem<T>::Launcher variant) {
  const int bh = 16 * 16384 / n;
  Problem<T> p(bh, n, d, causal, 11, bf16_values);
  p.variant = variant;
  for (int w = 0; w < 3; ++w) p.backward();
  CUDA_CHECK(cudaDeviceSynchronize());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  const double t0 = epoch_s();
  double gpu_ms = 0;
  long runs = 0;
  while (epoch_s() - t0 < seconds) {
    CUDA_CHECK(cudaEventRecord(a));
    for (int r = 0; r < 10; ++r) p.backward();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float x = 0;
    CUDA_CHECK(cudaEventElapsedTime(&x, a, b));
    gpu_ms += x;
    runs += 10;
  }
  const double t1 = epoch_s();
  const double ms = gpu_ms / runs;
  const double flops = 2.5 * 4.0 * n * static_cast<double>(n) * d * bh * (causal ? 0.5 : 1.0);
  std::printf("power %-62s d=%d N=%d %s  t0 %.3f t1 %.3f  runs %ld  %.3f ms  %.1f TFLOP/s\n", label, d, n,
              causal ? "causal" : "full", t0, t1, runs, ms, flops / ms * 1e-9);
  std::fflush(stdout);
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
}

}  // namespace

// --variants: the launcher (version 7, 6 or 5) against every other kernel, checked then timed
static int run_variants() {
  namespace bf = fg::bwd_fast;
  struct V { int d; const char* name; Problem<__nv_bfloat16>::Launcher b; Problem<__half>::Launcher h; };
  const int version = bf::selected_version();
  // the launcher, then the version before it (so the two are timed side by side)
  const V v5_64{64, "  [v5: TMA loads, float2 dQ atomics]", bf::launch_bwd<__nv_bfloat16, 64, 128, 128, 8, 2, 3>,
                bf::launch_bwd<__half, 64, 128, 128, 8, 2, 3>};
  const V v6_64{64, "  [v6: warp-specialized, bulk dQ]", bf::launch_bwd<__nv_bfloat16, 64, 128, 128, 8, 2, 4>,
                bf::launch_bwd<__half, 64, 128, 128, 8, 2, 4>};
  const V v5_128{128, "  [v5: TMA loads, float2 dQ atomics]", bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 3>,
                 bf::launch_bwd<__half, 128, 64, 128, 8, 2, 3>};
  const V v6_128{128, "  [v6: warp-specialized, bulk dQ]", bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 4>,
                 bf::launch_bwd<__half, 128, 64, 128, 8, 2, 4>};
  const V other64 = version == 6 ? v5_64 : v6_64;
  const V other128 = version == 6 ? v5_128 : v6_128;
  const char* launcher = version == 7   ? "  [launcher: v7, v6 with alternating dQ]"
                         : version == 6 ? "  [launcher: v6 (FLASHSIM_BWD_VERSION=6)]"
                                        : "  [launcher: v5 (FLASHSIM_BWD_VERSION=5)]";
  const V vs[] = {
      {64, launcher, nullptr, nullptr},
      other64,
      {64, "  [v6 pre-LEAN: mask select in every tile, dS^T by st.shared.b32]",
       bf::launch_bwd<__nv_bfloat16, 64, 128, 128, 8, 2, 7>, bf::launch_bwd<__half, 64, 128, 128, 8, 2, 7>},
      {64, "  [v4: cp.async loads]", bf::launch_bwd<__nv_bfloat16, 64, 128, 128, 8, 2, 2>,
       bf::launch_bwd<__half, 64, 128, 128, 8, 2, 2>},
      {64, "  [v3: dK/dV on wgmma]", bf::launch_bwd<__nv_bfloat16, 64, 128, 128, 8, 2, 1>,
       bf::launch_bwd<__half, 64, 128, 128, 8, 2, 1>},
      {64, "  [all mma.sync (2026-11-22)]", bf::launch_bwd<__nv_bfloat16, 64, 128, 128, 8, 2, 0>,
       bf::launch_bwd<__half, 64, 128, 128, 8, 2, 0>},
      {128, launcher, nullptr, nullptr},
      other128,
      {128, "  [v6, 3-stage Q/dO ring]", bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 5>,
       bf::launch_bwd<__half, 128, 64, 128, 8, 2, 5>},
      {128, "  [v6 pre-LEAN: mask select in every tile, dS^T by st.shared.b32]",
       bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 7>, bf::launch_bwd<__half, 128, 64, 128, 8, 2, 7>},
      {128, "  [v4: cp.async loads]", bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 2>,
       bf::launch_bwd<__half, 128, 64, 128, 8, 2, 2>},
      {128, "  [v3: dK/dV on wgmma]", bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 1>,
       bf::launch_bwd<__half, 128, 64, 128, 8, 2, 1>},
      {128, "  [all mma.sync (2026-11-22)]", bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 0>,
       bf::launch_bwd<__half, 128, 64, 128, 8, 2, 0>}};
  bool ok = true;
  std::uint64_t s = static_cast<std::uint64_t>(std::time(nullptr));
  for (const V& v : vs)
    for (bool causal : {false, true})
      for (int n : {1, 100, 256, 333}) {
        ok &= check_full<__nv_bfloat16>(n == 1 ? 1 : 2, n, v.d, causal, s += 10, v.b, v.name);
        ok &= check_full<__half>(n == 1 ? 1 : 2, n, v.d, causal, s += 10, v.h, v.name);
      }
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int n : {1024, 4096, 8192, 16384})
        for (const V& v : vs)
          if (v.d == d) ok &= bench_shape<__nv_bfloat16>(d, n, causal, s += 10, v.b, v.name);
  std::printf("%s\n", ok ? "ALL OK" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

// --check D N CAUSAL [fp16]: one small problem checked in full (for a sanitizer)
static int run_check(int argc, char** argv) {
  const int d = std::atoi(argv[2]), n = std::atoi(argv[3]);
  const bool causal = std::atoi(argv[4]) != 0, fp16 = argc > 5 && std::strcmp(argv[5], "fp16") == 0;
  if ((d != 64 && d != 128) || n < 1) {
    std::fprintf(stderr, "bench_attention_backward_fast --check: need D = 64 or 128 and N >= 1\n");
    return 2;
  }
  const std::uint64_t seed = static_cast<std::uint64_t>(std::time(nullptr));
  const bool ok = fp16 ? check_full<__half>(1, n, d, causal, seed) : check_full<__nv_bfloat16>(1, n, d, causal, seed);
  return ok ? 0 : 1;
}

// --one D N CAUSAL [fp16]: one problem, two runs (for a profiler)
static int run_one(int argc, char** argv) {
  const int n = std::atoi(argv[3]), d = std::atoi(argv[2]);
  const bool causal = std::atoi(argv[4]) != 0;
  if (argc > 5 && std::strcmp(argv[5], "fp16") == 0) {
    Problem<__half> p(16 * 16384 / n, n, d, causal, 7);
    p.backward();
    p.backward();
  } else {
    Problem<__nv_bfloat16> p(16 * 16384 / n, n, d, causal, 7);
    p.backward();
    p.backward();
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return 0;
}

// --d128: the launcher's d = 128 N >= 8192 rows, twice
static int run_d128() {
  bool ok = true;
  std::uint64_t s = static_cast<std::uint64_t>(std::time(nullptr));
  for (int round = 0; round < 2; ++round)
    for (bool causal : {false, true})
      for (int n : {8192, 16384}) {
        ok &= bench_shape<__nv_bfloat16>(128, n, causal, s += 10);
        ok &= bench_shape<__half>(128, n, causal, s += 10);
      }
  std::printf("%s\n", ok ? "ALL OK" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

// --ab / --ab-table: version 6 (launch_bwd PRODUCTS 4) against one of its variants, PRODUCTS 7
// (pre-LEAN, the default) or 8 (dQ alternating between the consumers, version 7), named by an
// optional last argument
namespace {
struct AbPair { const char* name; Problem<__nv_bfloat16>::Launcher b4, bx; Problem<__half>::Launcher h4, hx; };

AbPair ab_pair(int d, int other) {
  namespace bf = fg::bwd_fast;
  const bool d64 = d == 64;
  AbPair p{other == 8 ? "v6 alternating dQ" : "v6 pre-LEAN",
           d64 ? bf::launch_bwd<__nv_bfloat16, 64, 128, 128, 8, 2, 4> : bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 4>,
           nullptr,
           d64 ? bf::launch_bwd<__half, 64, 128, 128, 8, 2, 4> : bf::launch_bwd<__half, 128, 64, 128, 8, 2, 4>,
           nullptr};
  if (other == 8) {
    p.bx = d64 ? bf::launch_bwd<__nv_bfloat16, 64, 128, 128, 8, 2, 8> : bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 8>;
    p.hx = d64 ? bf::launch_bwd<__half, 64, 128, 128, 8, 2, 8> : bf::launch_bwd<__half, 128, 64, 128, 8, 2, 8>;
  } else {
    p.bx = d64 ? bf::launch_bwd<__nv_bfloat16, 64, 128, 128, 8, 2, 7> : bf::launch_bwd<__nv_bfloat16, 128, 64, 128, 8, 2, 7>;
    p.hx = d64 ? bf::launch_bwd<__half, 64, 128, 128, 8, 2, 7> : bf::launch_bwd<__half, 128, 64, 128, 8, 2, 7>;
  }
  return p;
}

// The variant named by argv[at], 7 when there is none; anything else is refused (exit 2).
int ab_other(int argc, char** argv, int at) {
  if (argc <= at) return 7;
  const int v = std::atoi(argv[at]);
  if (v < 7 || v > 8) {
    std::fprintf(stderr, "bench_attention_backward_fast: the variant to compare must be 7 or 8, not '%s'\n", argv[at]);
    std::exit(2);
  }
  return v;
}
}  // namespace

// --ab D N CAUSAL SECONDS [7|8]: the pair's power phases in ABBA order
static int run_ab(int argc, char** argv) {
  const int d = std::atoi(argv[2]), n = std::atoi(argv[3]);
  const bool causal = std::atoi(argv[4]) != 0;
  const double seconds = std::atof(argv[5]);
  const AbPair p = ab_pair(d, ab_other(argc, argv, 6));
  const std::string x = p.name;
  power_phase<__nv_bfloat16>(("bf16 " + x).c_str(), d, n, causal, seconds, false, p.bx);
  power_phase<__nv_bfloat16>("bf16 v6", d, n, causal, seconds, false, p.b4);
  power_phase<__half>(("fp16 " + x).c_str(), d, n, causal, seconds, false, p.hx);
  power_phase<__half>("fp16 v6", d, n, causal, seconds, false, p.h4);
  power_phase<__half>("fp16 v6 (again)", d, n, causal, seconds, false, p.h4);
  power_phase<__half>(("fp16 " + x + " (again)").c_str(), d, n, causal, seconds, false, p.hx);
  power_phase<__nv_bfloat16>("bf16 v6 (again)", d, n, causal, seconds, false, p.b4);
  power_phase<__nv_bfloat16>(("bf16 " + x + " (again)").c_str(), d, n, causal, seconds, false, p.bx);
  return 0;
}

// --ab-table [7|8]: the variant checked in full, then beside version 6 at N >= 8192
static int run_ab_table(int argc, char** argv) {
  const int other = ab_other(argc, argv, 2);
  bool ok = true;
  std::uint64_t s = static_cast<std::uint64_t>(std::time(nullptr));
  const std::vector<int> dims{128, 64};
  for (int d : dims)  // the variant in full at odd sizes first
    for (bool causal : {false, true})
      for (int n : {1, 77, 333}) {
        const AbPair p = ab_pair(d, other);
        ok &= check_full<__nv_bfloat16>(n == 1 ? 1 : 3, n, d, causal, s += 10, p.bx, p.name);
        ok &= check_full<__half>(n == 1 ? 1 : 3, n, d, causal, s += 10, p.hx, p.name);
      }
  for (int d : dims)
    for (bool causal : {false, true})
      for (int n : {8192, 16384}) {
        const AbPair p = ab_pair(d, other);
        const std::string x = std::string("  [") + p.name + "]";
        ok &= bench_shape<__nv_bfloat16>(d, n, causal, s += 10, p.bx, x.c_str());
        ok &= bench_shape<__nv_bfloat16>(d, n, causal, s += 10, p.b4, "  [v6]");
        ok &= bench_shape<__half>(d, n, causal, s += 10, p.hx, x.c_str());
        ok &= bench_shape<__half>(d, n, causal, s += 10, p.h4, "  [v6]");
      }
  std::printf("%s\n", ok ? "ALL OK" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

// --power D N CAUSAL SECONDS: the launcher's phases, bf16 and fp16
static int run_power(char** argv) {
  const int d = std::atoi(argv[2]), n = std::atoi(argv[3]);
  const bool causal = std::atoi(argv[4]) != 0;
  const double seconds = std::atof(argv[5]);
  namespace bf = fg::bwd_fast;
  power_phase<__nv_bfloat16>("bf16", d, n, causal, seconds, false, nullptr);
  power_phase<__half>("fp16", d, n, causal, seconds, false, nullptr);
  power_phase<__half>("fp16, bf16-representable inputs", d, n, causal, seconds, true, nullptr);
  if (d == 128)
    power_phase<__half>("fp16, bf16-representable inputs, P/dS cut to 7 mantissa bits", d, n, causal, seconds, true,
                        bf::launch_bwd<__half, 128, 64, 128, 8, 2, 6>);
  power_phase<__nv_bfloat16>("bf16 (again)", d, n, causal, seconds, false, nullptr);
  power_phase<__half>("fp16 (again)", d, n, causal, seconds, false, nullptr);
  return 0;
}

// No option, --small or --sanitize: the full checks at small sizes, then (no option) every timed shape
static int run_checks_and_shapes(int argc, char** argv) {
  const bool sanitize = argc > 1 && std::strcmp(argv[1], "--sanitize") == 0;
  const bool small_only = sanitize || (argc > 1 && std::strcmp(argv[1], "--small") == 0);
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs; attention_backward_fast runs version %d\n", prop.name, prop.multiProcessorCount,
              fg::bwd_fast::selected_version());
  const std::uint64_t seed = static_cast<std::uint64_t>(std::time(nullptr));
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  bool ok = small_checks<__nv_bfloat16>(seed, sanitize) & small_checks<__half>(seed + 1000, sanitize);
  if (!small_only) {
    // argument errors are reported, not crashed on
    try {
      fg::attention_backward_fast<__nv_bfloat16>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                 nullptr, nullptr, nullptr, 1, 16, 96, false, nullptr);
      std::printf("bad-argument check FAIL (no exception)\n");
      ok = false;
    } catch (const std::invalid_argument& e) {
      std::printf("bad-argument check ok: %s\n", e.what());
    }
    std::uint64_t s = seed + 5000;
    for (int d : {64, 128})
      for (bool causal : {false, true})
        for (int n : {1024, 4096, 8192, 16384}) {
          ok &= bench_shape<__nv_bfloat16>(d, n, causal, s += 10);
          ok &= bench_shape<__half>(d, n, causal, s += 10);
        }
  }
  std::printf("%s\n", ok ? "ALL OK" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

// --ring-step: what the step launch costs per FLOP against the plain launcher, ring effects aside.
// Median of 20 after 3 warm-ups, as the timed shapes.
template <class F>
double median_ms(F f) {
  return fg::sorted_times_ms(f, 3, 20)[10];
}

static int run_ring_step() {
  using T = __nv_bfloat16;
  const int heads = 8;
  for (int d : {64, 128})
    for (int c : {8192, 16384, 32768}) {
      Problem<T> p(2 * heads, c, d, false, 11);  // [2][heads][c][d]: two query chunks, two key chunks
      const std::size_t part = static_cast<std::size_t>(heads) * c * d;
      Buf dk(2 * part * 4), dv(2 * part * 4), ws(fg::attention_backward_fast_workspace_bytes(2 * heads, c, d));
      Buf ws_pair(fg::attention_backward_fast_workspace_bytes(heads, c, d));
      fg::attention_backward_fast_ring_prepare<T>(p.o.as<T>(), p.dout.as<T>(), p.lse.as<float>(), ws.p, 2 * heads, c, d,
                                                  nullptr);
      auto step = [&](int kinds) {
        fg::attention_backward_fast_ring_step<T>(p.q.as<T>(), p.k.as<T>(), p.v.as<T>(), p.dout.as<T>(), dk.as<float>(),
                                                 dv.as<float>(), ws.p, heads, c, d, 2, kinds, nullptr);
      };
      auto chunk = [&](const Buf& b, int i) { return b.as<T>() + i * part; };
      auto pairs = [&] {  // the four pairs as the ring's --launch pair runs them (one workspace, for timing)
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j)
            fg::attention_backward_fast_accumulate<T>(chunk(p.q, i), chunk(p.k, j), chunk(p.v, j), chunk(p.o, i),
                                                      chunk(p.dout, i), p.lse.as<float>() + i * heads * c,
                                                      dk.as<float>() + j * part, dv.as<float>() + j * part, i == 0,
                                                      ws_pair.p, j == 0, heads, c, d, false, nullptr);
      };
      const double pair_flop = 10.0 * heads * double(c) * c * d;  // one (query chunk, key chunk) pair
      const double plain = median_ms([&] { p.backward(); }), two = median_ms([&] { step((1 << 0) | (1 << 6)); });
      setenv("FLASHSIM_RING_BWD_SPLIT", "0", 1);  // each key tile walks both query chunks
      const double four = median_ms([&] { step(0x55); });
      setenv("FLASHSIM_RING_BWD_SPLIT", "1", 1);  // a launch per query chunk
      const double four_split = median_ms([&] { step(0x55); });
      unsetenv("FLASHSIM_RING_BWD_SPLIT");
      const double four_pairs = median_ms(pairs);
      std::printf("d = %3d, chunks of %5d rows, %d heads: plain %7.3f ms %5.0f TFLOP/s | step, 2 pairs %7.3f ms %5.0f | "
                  "step, 4 pairs, joined %7.3f ms %5.0f | split %7.3f ms %5.0f | 4 pair launches %7.3f ms %5.0f\n",
                  d, c, heads, plain, 2 * pair_flop / plain * 1e-9, two, 2 * pair_flop / two * 1e-9, four,
                  4 * pair_flop / four * 1e-9, four_split, 4 * pair_flop / four_split * 1e-9, four_pairs,
                  4 * pair_flop / four_pairs * 1e-9);
    }
  return 0;
}

static int run_main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  auto is = [&](const char* m, int min_argc) { return argc >= min_argc && std::strcmp(mode, m) == 0; };
  if (is("--variants", 2)) return run_variants();
  if (is("--check", 5)) return run_check(argc, argv);
  if (is("--one", 5)) return run_one(argc, argv);
  if (is("--d128", 2)) return run_d128();
  if (is("--ab", 6)) return run_ab(argc, argv);
  if (is("--ab-table", 2)) return run_ab_table(argc, argv);
  if (is("--power", 6)) return run_power(argv);
  if (is("--ring-step", 2)) return run_ring_step();
  return run_checks_and_shapes(argc, argv);
}

int main(int argc, char** argv) { return flashsim::guard_main("bench_attention_backward_fast", [&] { return run_main(argc, argv); }); }

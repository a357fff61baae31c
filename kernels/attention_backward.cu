/*
Kernels for the attention backward pass: given Q, K, V, O, dO ([bh, N, 64], bf16 or fp32) and the
forward's logsumexp (fp32), compute dQ, dK, dV. Same schedules as the tile machine's
AttentionBackward. P is never stored: every kernel recomputes P = exp(QK^T/sqrt(d) - lse).

Build: part of the CMake build (target `attention_backward`); run ./attention_backward [version] [size...]
  e.g. ./attention_backward 2 attn-bwd:128x2048x64

Both versions start with D = rowsum(dO * O) (fp32, one warp per row). 64 x 64 tiles, d = 64,
256 threads, 4 x 4 per thread as in attention_forward.cu.

version 1 is two passes (AttentionBackward::TwoPass):
  a dQ kernel, one block per Q tile looping over the visible KV tiles:
    dS = P * (dO V^T - D), dQ += dS K;
  then a dK/dV kernel, one block per KV tile looping over the visible Q tiles:
    dV += P^T dO, dK += dS^T Q.
  Both kernels run in one profiled range.
./attention_backward 1

version 2 is one kernel (AttentionBackward::AtomicDQ): the dK/dV kernel also adds dS K into an fp32
dQ accumulator in HBM with atomicAdd (zeroed first), and a last kernel converts it to dQ.
./attention_backward 2

Inputs O and logsumexp come from attention_forward.cu version 3 (run during setup, outside the
measured range). CPU reference: kernels/reference.cpp attention_backward (double) on up to
2 heads; outputs checked: dQ, dK, dV; tolerance fp32 1e-4, bf16 1e-2.

version 3 is FA2's backward on tensor cores (bf16 or fp16, d = 64 or 128, any n; since version 4 it
is built only in the standalone driver, for comparison). A preprocessing kernel writes D = rowsum(dO * O) and lse * log2(e) into the
workspace (rows padded to 128; padding lse = +inf, so P = 0 there) and zeroes an fp32 dQ
accumulator. The main kernel runs one block of 8 warps per 128-key tile, walking the query tiles
that see it (64 queries for d = 128, 128 for d = 64; causal: tiles above the diagonal skipped, the
diagonal masked) with Q, dO and their statistics double-buffered through cp.async (the next tile is
requested right after the barrier that frees its buffer). Per query tile:
S^T = K Q^T and dP^T = V dO^T on mma.sync m16n8k16 over a 4 (keys) x 2 (queries) warp grid, P^T =
exp2(S^T scale log2e - lse2) and dS^T = P^T (dP^T - D) to shared memory; then dV += P^T dO and
dK += dS^T Q on Hopper's wgmma (each warpgroup 64 keys x d, m64nDk16, both operands read by the
tensor cores from 128-byte-swizzled shared memory, accumulators in registers for the whole loop),
in flight while the warps compute dQ_tile = dS K on mma.sync in 32-row slabs and add it to the
accumulator with float2 atomics. mma.sync operands come from shared memory through ldmatrix
(.trans for dS^T and K). dK, dV leave through shared memory as 16-byte stores; a last kernel
scales dQ and converts it. Blocks are launched KV tile by KV tile with a few heads interleaved (as
many as keep their Q and dO within ~20 MB of L2), longest causal tiles first.
Measured on an H100 (kernels/RESULTS.md, bf16, 16k tokens x 16 heads): 2026-11-22, all products on
mma.sync: d = 128 N = 16384 280 TFLOP/s (PyTorch FA2 306, cuDNN 544), d = 64 245 (FA2 280); the
tile sweep then found the 4 x 2 warp grid (281 vs 258-263 for one warp per 16 keys: every warp read
all of Q and dO twice; ncu: L1 78 %, tensor 39 %), 32-row dQ slabs +1-3 %, 128-query tiles +6 % at
d = 64. 2026-11-23, dV/dK on wgmma: d = 128 N = 16384 282 (the all-mma.sync kernel in the same
binary 271; it now spills 24 bytes), d = 64 250 (242), +1-4 % at every N. Tried and dropped: all
heads interleaved in launch order (-7 % causal: Q and dO of 16 heads overflow L2); groups of 1, 2,
4 or 8 heads (within 1 %, 8 heads causal -5 %); staggering each block's first query tile so the
dQ atomics of concurrent blocks hit different rows (no change; its extra registers spilled, -3 %);
float4 dQ atomics (red.global.add.v4.f32 after a lane-pair exchange: half the atomics, 0-3 %
slower).
version 4 (standalone driver only since version 5) keeps version 3's preprocessing,
launch order, tiles and dQ accumulator, and moves every product to wgmma, so nothing goes through
ldmatrix: two warpgroups per 128-key tile, warpgroup w owning keys 64w..64w+63. Per query tile:
S^T = K Q^T and dP^T = V dO^T with both operands read by the tensor cores from 128-byte-swizzled
shared memory (K-major); P^T and dS^T are formed in the accumulator registers, whose layout is the
A-fragment layout, so dV += P^T dO and dK += dS^T Q take them from registers (dO, Q read MN-major);
dS^T also goes to shared memory, where dQ_tile = dS K reads it transposed (MN-major A), each
warpgroup one 64 x 64 block, added with float2 atomics. Two barriers per tile.
Measured on an H100 (2026-11-23, bf16, 16k tokens x 16 heads): d = 128 N = 16384 358 TFLOP/s
(version 3 285 in the same binary, PyTorch FA2 301, cuDNN 550), d = 64 324 (v3 254, FA2 286).
Tried and dropped: waiting for dQ only in the next tile (its atomics overlapping the next S^T and
dP^T): 10-12 % slower (254 registers). ncu (d = 128, N = 16384): tensor pipe 37 % busy; stalls per
issued instruction: wait 1.1, barrier 1.0, lg_throttle 1.0 (atomics and cp.async), mio 0.8.
version 5 (kernels/fast.h attention_backward_fast, `bwd-mma`) is version 4 with each Q and dO tile
fetched by TMA (3-D tensor maps [bh][n][d], rows past n zero-filled) and its lse / D rows by bulk
copies, issued by one thread and completing on one mbarrier per buffer, in place of 10 cp.async per
thread per tile. H100, 2026-11-23: d = 128 N = 16384 416 TFLOP/s (v4 361, PyTorch FA2 305, cuDNN
512), d = 64 376 (v4 323); 1.29-1.62x FA2 and 0.70-1.04x cuDNN on the 40 shapes of bench_kernels.
Tried and dropped: the dQ block staged in shared memory and added by 64 row-wise bulk reductions
(cp.reduce.async.bulk) instead of float2 atomics: 3-5 % slower at N >= 4096.
version 6 (kernels/fast.h attention_backward_fast; FLASHSIM_BWD_VERSION=5 in the environment selects
version 5 instead, read once per process, for A/B runs of one binary) is version 5 warp-specialized
as in FlashAttention-3: 384 threads per 128-key tile. Warpgroup 0 gives its registers away
(setmaxnreg 24): one thread loads K and V once and each query tile's Q, dO and statistics into a
2-stage ring (full / empty mbarriers, so loads run ahead as soon as a stage's last product is done),
and one warp is the dQ writer. Warpgroups 1 and 2 (setmaxnreg 240) do version 5's products for
their 64 keys; dS^T is double-buffered, so the two consumers meet once per tile (a named barrier
before dQ = dS K reads both halves) instead of two __syncthreads. Each consumer stages its 64 x 64
fp32 dQ block in shared memory and the writer adds it to the accumulator with one 16 KB
cp.reduce.async.bulk, so no atomics or reduction waits sit in the consumers' loop. The accumulator
is kept in that staging order (one contiguous chunk per head and query tile) and a last kernel
un-permutes, scales and converts it. Same schedule and bytes as version 5 (dQ accumulator traffic
included). ptxas: 0 spill bytes (consumer loop re-reads its shared-memory base each tile and masks
with one compare per element to stay within 240 registers at d = 64).
First H100 run, one call, same binary (2026-11-24, bf16, 16k tokens x 16 heads, --variants; raw
kernels/results/2026-11-24-h100-bwd-v6-*.txt): d = 128 N = 16384 527 TFLOP/s (v5 415), causal 523
(390); d = 64 463 (376), causal 462 (348); 1.16-1.38x v5 on all 16 bf16 shapes of the driver; full
checks, compute-sanitizer memcheck / racecheck / synccheck (--sanitize) clean. Next to SDPA's cuDNN
backend (bench_kernels.sh, same call, kernels/RESULTS.md): d = 64 20 of 20 shapes >= cuDNN
(1.03-1.61x), d = 128 16 of 20 (0.95-1.24x; below: fp16 at N >= 8192 and bf16 causal N = 16384). A 3-stage Q / dO ring at d = 128 (launch_bwd PRODUCTS = 5): -6 to +9 % against 2
stages, no consistent gain; kept as a --variants row only.
fp16 against bf16 at d = 128 (2026-11-24; raw kernels/results/2026-11-24-h200-bwd-fp16-power.txt and
-h100-bwd-fp16-lean.txt): the two instantiations' SASS is the same instruction for instruction (1880,
same registers, 746 a tile in the consumer loop; only the F2FP / HGMMA type differs), 0 spills. The
gap is power: the board sits at its 700 W limit (sw_power_cap active throughout) and fp16's longer
mantissa costs clock. H200, N = 16384 full, back-to-back runs: bf16 1753-1759 MHz 516-518 TFLOP/s,
fp16 1702-1706 MHz 500-501 (-3 %); fp16 with bf16-representable inputs 1755 MHz 517.5 (= bf16);
SDPA's cuDNN backward on the same card loses the same (bf16 530 at 1694 MHz, fp16 515 at 1652).
H100: bf16 1618-1626 MHz 523-525, fp16 1583-1588 MHz 507-510. Since then the mask's compare and
select run only in tiles that need a mask and dS^T is stored by stmatrix (fewer instructions; the old
path is PRODUCTS = 7, PRE_LEAN): H100, back-to-back ABBA at N = 16384: bf16 full +1.1 %, fp16 full
+0.7 %, bf16 causal +0.9 %, fp16 causal +1.1 % (fp16 stays ~3 % below bf16); short bursts (the
driver's timing, one run): d = 64 +5 to +9 % on all 8 rows at N >= 8192, d = 128 -7 to +7 % (noise).
Against cuDNN under ncu at locked clocks (2026-11-25, d = 128 N = 16384 bf16): 11.82 against 11.06
ms, cuDNN 7 % faster per cycle with 9 % more instructions. Tried and dropped the same day (H100,
kernels/RESULTS.md): the next tile's S^T queued before this tile's dQ is staged (-9 to -16 %), and dQ
deferred a tile with the two consumers decoupled and staggered (-18 to -25 %).
version 7 (the launcher's since 2026-11-25; FLASHSIM_BWD_VERSION=6 or 5 selects the older ones) is
version 6 with the consumers taking turns at dQ: in tile t consumer t % 2 computes the whole dQ
block over all 128 keys (d = 128: 64 x 128, 8 m64n128k16 from dS^T and K in shared memory; d = 64
since 2026-11-26: 128 x 64, two m64n64 blocks, one staging buffer the consumers take turns at)
while the other only signals that its half of dS^T is written and goes on to tile t + 1. Version 6's per-tile meeting of both consumers is gone, so they run one dQ product
apart: one's exponentials and dS^T fall under the other's products, a ping-pong like FlashAttention-3's
forward. Same products, bytes and accumulator layout (registers 32.. of the m64n128 block are
version 6's second 64 x 64 block); each consumer stages its block in its own 32 KB buffer and the
writer warp adds it with one 32 KB bulk reduction (226 of 227 KB of shared memory; 168 registers at
launch, 0 spills). H100, same binary (2026-11-25, `--ab-table 8`, bf16 and fp16 at N >= 8192):
+4 to +10 % on all 8 rows against version 6 (bf16 N = 16384 full 571 against 550 TFLOP/s); sustained
ABBA (`--ab 128 16384 0 4 8`): bf16 564 / 563 against 527 / 526, fp16 546 / 548 against 511 / 511.
At d = 64 (2026-11-26, H100, `--ab-table 8`): +6 to +16 % on all 8 rows (bf16 N = 16384 full 586
against 522 TFLOP/s). Every consumer thread arrives on the stage's empty barrier (its own reads of
the statistics) and the epilogue meets on an mbarrier: with lane 0 arriving for its warp and a named
barrier there, compute-sanitizer's racecheck reported hazards once the Q / dO ring was reused.
Validated and timed by kernels/tools/bench_attention_backward_fast.cu (standalone nvcc build with
-DFLASHSIM_ATTN_BWD_FAST_ONLY, which leaves out versions 1-2 and their workload and adds version 3
and the all-mma.sync kernel for comparison).
*/
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/cuda_util.cuh"
#include "kernels/launch_order.h"
#include "kernels/fast.h"
#include "kernels/mma.cuh"
#include "kernels/reference.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"

namespace flashsim::gpu {

#ifndef FLASHSIM_ATTN_BWD_FAST_ONLY

// ----------------------------------------------------------------------------
// GPU kernels

template <class T>
__global__ void __launch_bounds__(256) attn_bwd_dot_kernel(const T* __restrict__ o, const T* __restrict__ dout,
                                                           float* __restrict__ dsum, long long rows) {
  const long long row = blockIdx.x * 8LL + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const std::size_t off = static_cast<std::size_t>(row) * kHead;
  float acc = to_f(o[off + lane]) * to_f(dout[off + lane]) + to_f(o[off + lane + 32]) * to_f(dout[off + lane + 32]);
  acc = warp_sum(acc);
  if (lane == 0) dsum[row] = acc;
}

// One block per Q tile: dQ = scale * sum_j dS_ij K_j.
template <class T>
__global__ void __launch_bounds__(256) attn_bwd_dq_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                          const T* __restrict__ v, const T* __restrict__ dout,
                                                          const float* __restrict__ lse, const float* __restrict__ dsum,
                                                          T* __restrict__ dq, int n, bool causal, float scale) {
  extern __shared__ float smem[];
  float* qs = smem;
  float* dos = qs + kTileFloats;
  float* ks = dos + kTileFloats;
  float* vs = ks + kTileFloats;
  float* dss = vs + kTileFloats;
  const int i = blockIdx.x, bh = blockIdx.y;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const std::size_t base = static_cast<std::size_t>(bh) * n * kHead, sbase = static_cast<std::size_t>(bh) * n;
  load_tile(qs, q + base, i * kTile, n);
  load_tile(dos, dout + base, i * kTile, n);
  float l_r[4], d_r[4];
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int r = i * kTile + ty * 4 + a;
    l_r[a] = r < n ? lse[sbase + r] : 0.f;
    d_r[a] = r < n ? dsum[sbase + r] : 0.f;
  }
  float acc[4][4] = {};
  const int last_row = min(n, (i + 1) * kTile) - 1;
  const int tc = causal ? last_row / kTile + 1 : (n + kTile - 1) / kTile;
  for (int j = 0; j < tc; ++j) {
    __syncthreads();
    load_tile(ks, k + base, j * kTile, n);
    load_tile(vs, v + base, j * kTile, n);
    __syncthreads();
    float s[4][4] = {}, dp[4][4] = {};
    tile_mma_abt(qs, ks, s, tx, ty);     // S = Q K^T
    tile_mma_abt(dos, vs, dp, tx, ty);   // dP = dO V^T
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int r = i * kTile + ty * 4 + a, c = j * kTile + tx + 16 * b;
        const bool ok = r < n && c < n && !(causal && c > r);
        const float p = ok ? __expf(s[a][b] * scale - l_r[a]) : 0.f;
        dss[(ty * 4 + a) * kLd + tx + 16 * b] = p * (dp[a][b] - d_r[a]);
      }
    __syncthreads();
    tile_mma_ab(dss, ks, acc, tx, ty);  // dQ += dS K
  }
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int r = i * kTile + ty * 4 + a;
    if (r >= n) continue;
#pragma unroll
    for (int b = 0; b < 4; ++b) dq[base + static_cast<std::size_t>(r) * kHead + tx + 16 * b] = from_f<T>(acc[a][b] * scale);
  }
}

// One block per KV tile: dV = sum_i P_ij^T dO_i, dK = scale * sum_i dS_ij^T Q_i; with ATOMIC also
// dQ_accum[i] += dS_ij K_j (unscaled, fp32 atomics).
template <class T, bool ATOMIC>
__global__ void __launch_bounds__(256) attn_bwd_dkv_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                           const T* __restrict__ v, const T* __restrict__ dout,
                                                           const float* __restrict__ lse,
                                                           const float* __restrict__ dsum, T* __restrict__ dk,
                                                           T* __restrict__ dv, float* __restrict__ dq_acc, int n,
                                                           bool causal, float scale) {
  extern __shared__ float smem[];
  float* ks = smem;
  float* vs = ks + kTileFloats;
  float* qs = vs + kTileFloats;
  float* dos = qs + kTileFloats;
  float* pts = dos + kTileFloats;  // P^T tile: pts[c][r], c = key row, r = query row
  float* dsts = pts + kTileFloats; // dS^T tile
  float* stat = dsts + kTileFloats;  // lse[64], D[64] of the current Q tile
  const int j = blockIdx.x, bh = blockIdx.y;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const std::size_t base = static_cast<std::size_t>(bh) * n * kHead, sbase = static_cast<std::size_t>(bh) * n;
  load_tile(ks, k + base, j * kTile, n);
  load_tile(vs, v + base, j * kTile, n);
  float acc_k[4][4] = {}, acc_v[4][4] = {};
  const int tr = (n + kTile - 1) / kTile;
  const int i0 = causal ? (j * kTile) / kTile : 0;
  for (int i = i0; i < tr; ++i) {
    __syncthreads();
    load_tile(qs, q + base, i * kTile, n);
    load_tile(dos, dout + base, i * kTile, n);
    if (threadIdx.x < kTile) {
      const int r = i * kTile + threadIdx.x;
      stat[threadIdx.x] = r < n ? lse[sbase + r] : 0.f;
      stat[kTile + threadIdx.x] = r < n ? dsum[sbase + r] : 0.f;
    }
    __syncthreads();
    // this thread: key rows c = ty*4+a, query rows r = tx+16b
    float st[4][4] = {}, dpt[4][4] = {};
    tile_mma_abt(ks, qs, st, tx, ty);    // S^T = K Q^T
    tile_mma_abt(vs, dos, dpt, tx, ty);  // dP^T = V dO^T
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int c = j * kTile + ty * 4 + a, r = i * kTile + tx + 16 * b;
        const bool ok = r < n && c < n && !(causal && c > r);
        const float p = ok ? __expf(st[a][b] * scale - stat[tx + 16 * b]) : 0.f;
        pts[(ty * 4 + a) * kLd + tx + 16 * b] = p;
        dsts[(ty * 4 + a) * kLd + tx + 16 * b] = p * (dpt[a][b] - stat[kTile + tx + 16 * b]);
      }
    __syncthreads();
    tile_mma_ab(pts, dos, acc_v, tx, ty);   // dV += P^T dO
    tile_mma_ab(dsts, qs, acc_k, tx, ty);   // dK += dS^T Q
    if (ATOMIC) {
      // dQ[r][col] += sum_c dS^T[c][r] K[c][col] for query rows r = ty*4+a
      float part[4][4] = {};
      tile_mma_atb(dsts, ks, part, tx, ty);
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        const int r = i * kTile + ty * 4 + a;
        if (r >= n) continue;
#pragma unroll
        for (int b = 0; b < 4; ++b) atomicAdd(dq_acc + base + static_cast<std::size_t>(r) * kHead + tx + 16 * b, part[a][b]);
      }
    }
  }
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int c = j * kTile + ty * 4 + a;
    if (c >= n) continue;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const std::size_t idx = base + static_cast<std::size_t>(c) * kHead + tx + 16 * b;
      dk[idx] = from_f<T>(acc_k[a][b] * scale);
      dv[idx] = from_f<T>(acc_v[a][b]);
    }
  }
}

template <class T>
__global__ void attn_bwd_convert_kernel(const float* __restrict__ acc, T* __restrict__ dq, std::size_t count,
                                        float scale) {
  for (std::size_t x = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; x < count;
       x += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dq[x] = from_f<T>(acc[x] * scale);
}

// ----------------------------------------------------------------------------
// kernel launchers

namespace {

float attn_scale() { return 1.f / std::sqrt(static_cast<float>(kHead)); }

template <class K>
void allow_smem(K kernel, int bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

template <class T>
void launch_dot(const T* o, const T* dout, float* dsum, int bh, int n) {
  const long long rows = static_cast<long long>(bh) * n;
  attn_bwd_dot_kernel<T><<<static_cast<unsigned>((rows + 7) / 8), 256>>>(o, dout, dsum, rows);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

template <class T>
void attention_backward_two_pass(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse,
                                 float* dsum, T* dq, T* dk, T* dv, int bh, int n, bool causal) {
  const int t = (n + kTile - 1) / kTile;
  launch_dot(o, dout, dsum, bh, n);
  const int smem_q = 5 * kTileFloats * 4, smem_kv = (6 * kTileFloats + 2 * kTile) * 4;
  allow_smem(attn_bwd_dq_kernel<T>, smem_q);
  record_occupancy(reinterpret_cast<const void*>(attn_bwd_dq_kernel<T>), 256, smem_q);
  attn_bwd_dq_kernel<T><<<dim3(t, bh), 256, smem_q>>>(q, k, v, dout, lse, dsum, dq, n, causal, attn_scale());
  CUDA_CHECK_LAUNCH();
  allow_smem(attn_bwd_dkv_kernel<T, false>, smem_kv);
  record_occupancy(reinterpret_cast<const void*>(attn_bwd_dkv_kernel<T, false>), 256, smem_kv);
  attn_bwd_dkv_kernel<T, false><<<dim3(t, bh), 256, smem_kv>>>(q, k, v, dout, lse, dsum, dk, dv, nullptr, n, causal,
                                                               attn_scale());
  CUDA_CHECK_LAUNCH();
}

template <class T>
void attention_backward_atomic(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse,
                               float* dsum, float* dq_acc, T* dq, T* dk, T* dv, int bh, int n, bool causal) {
  const int t = (n + kTile - 1) / kTile;
  const std::size_t count = static_cast<std::size_t>(bh) * n * kHead;
  launch_dot(o, dout, dsum, bh, n);
  CUDA_CHECK(cudaMemsetAsync(dq_acc, 0, count * 4));
  const int smem_kv = (6 * kTileFloats + 2 * kTile) * 4;
  allow_smem(attn_bwd_dkv_kernel<T, true>, smem_kv);
  record_occupancy(reinterpret_cast<const void*>(attn_bwd_dkv_kernel<T, true>), 256, smem_kv);
  attn_bwd_dkv_kernel<T, true><<<dim3(t, bh), 256, smem_kv>>>(q, k, v, dout, lse, dsum, dk, dv, dq_acc, n, causal,
                                                              attn_scale());
  CUDA_CHECK_LAUNCH();
  const std::size_t blocks = std::min<std::size_t>((count + 255) / 256, 65536);
  attn_bwd_convert_kernel<T><<<static_cast<unsigned>(blocks), 256>>>(dq_acc, dq, count, attn_scale());
  CUDA_CHECK_LAUNCH();
}

// ----------------------------------------------------------------------------
// workload

namespace {

class AttnBwdWorkload : public Workload {
 public:
  using Workload::Workload;
  void setup(std::uint64_t seed) override {
    const auto& s = spec_;
    const std::size_t elems = static_cast<std::size_t>(s.bh * s.seq * s.d);
    const std::size_t bytes = elems * dtype_bytes(s.dtype), stat = static_cast<std::size_t>(s.bh * s.seq) * 4;
    iq_ = add_input(bytes);
    ik_ = add_input(bytes);
    iv_ = add_input(bytes);
    io_ = add_input(bytes);
    ido_ = add_input(bytes);
    ilse_ = add_input(stat);
    dsum_ = DevBuf(stat);
    dq_ = DevBuf(bytes);
    dk_ = DevBuf(bytes);
    dv_ = DevBuf(bytes);
    if (s.schedule == Schedule::BwdAtomic) acc_ = DevBuf(elems * 4);
    if (s.schedule == Schedule::BwdMma)  // D, scaled lse and the fp32 dQ accumulator
      acc_ = DevBuf(attention_backward_fast_workspace_bytes(static_cast<int>(s.bh), static_cast<int>(s.seq),
                                                            static_cast<int>(s.d)));
    fill_uniform(in(0, iq_), elems, s.dtype, seed, -2.f, 2.f);
    fill_uniform(in(0, ik_), elems, s.dtype, seed + 1, -2.f, 2.f);
    fill_uniform(in(0, iv_), elems, s.dtype, seed + 2, -1.f, 1.f);
    fill_uniform(in(0, ido_), elems, s.dtype, seed + 3, -1.f, 1.f);
    if (s.dtype == Dtype::F32) forward<float>();
    else if (s.dtype == Dtype::F16) forward<__half>();
    else forward<__nv_bfloat16>();
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  void poison_outputs() override {
    poison(dsum_);
    poison(dq_);
    poison(dk_);
    poison(dv_);
    if (acc_.get()) poison(acc_);
  }
  void run(int set) override {
    if (spec_.dtype == Dtype::F32) go<float>(set);
    else if (spec_.dtype == Dtype::F16) go<__half>(set);
    else go<__nv_bfloat16>(set);
  }
  double check(std::string* note) override {
    const auto& s = spec_;
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::size_t per_head = static_cast<std::size_t>(s.seq * s.d);
    std::uint64_t bad = 0;
    for (const DevBuf* b : {&dq_, &dk_, &dv_}) bad += count_nonfinite(b->get(), per_head * s.bh, s.dtype);
    auto heads = ref::pick_indices(s.bh, 2);
    const std::size_t nh = heads.size();
    std::vector<std::vector<float>> hq(nh), hk(nh), hv(nh), hdo(nh), wq(nh), wk(nh), wv(nh);
    for (std::size_t h = 0; h < nh; ++h) {
      hq[h] = to_host(in(0, iq_), heads[h] * per_head, per_head, s.dtype);
      hk[h] = to_host(in(0, ik_), heads[h] * per_head, per_head, s.dtype);
      hv[h] = to_host(in(0, iv_), heads[h] * per_head, per_head, s.dtype);
      hdo[h] = to_host(in(0, ido_), heads[h] * per_head, per_head, s.dtype);
      wq[h].resize(per_head);
      wk[h].resize(per_head);
      wv[h].resize(per_head);
    }
    std::vector<std::thread> th;
    for (std::size_t h = 0; h < nh; ++h)
      th.emplace_back([&, h] {
        ref::attention_backward(hq[h].data(), hk[h].data(), hv[h].data(), hdo[h].data(), s.seq, s.d, s.causal,
                                wq[h].data(), wk[h].data(), wv[h].data());
      });
    for (auto& t : th) t.join();
    double err = 0;
    const DevBuf* outs[3] = {&dq_, &dk_, &dv_};
    std::vector<std::vector<float>>* wants[3] = {&wq, &wk, &wv};
    for (int x = 0; x < 3; ++x) {
      std::vector<float> got, want;
      for (std::size_t h = 0; h < nh; ++h) {
        auto g = to_host(outs[x]->get(), heads[h] * per_head, per_head, s.dtype);
        got.insert(got.end(), g.begin(), g.end());
        want.insert(want.end(), (*wants[x])[h].begin(), (*wants[x])[h].end());
      }
      err = std::max(err, ref::rel_error(got, want));
    }
    std::ostringstream o;
    o << nh << " of " << s.bh << " heads checked (dQ, dK, dV); " << bad << " non-finite outputs";
    if (note) *note = o.str();
    return bad ? INFINITY : err;
  }

 private:
  template <class T>
  void forward() {
    const auto& s = spec_;
    if constexpr (!std::is_same_v<T, float>) {
      if (s.schedule == Schedule::BwdMma) {  // O and lse from the tensor-core forward (any d, fp16 too)
        attention_forward_fast(static_cast<const T*>(in(0, iq_)), static_cast<const T*>(in(0, ik_)),
                               static_cast<const T*>(in(0, iv_)), static_cast<T*>(in(0, io_)),
                               static_cast<float*>(in(0, ilse_)), static_cast<int>(s.bh), static_cast<int>(s.seq),
                               static_cast<int>(s.d), s.causal, nullptr);
        return;
      }
    }
    if constexpr (std::is_same_v<T, __half>) throw std::logic_error("the SIMT attention kernels have no fp16 version");
    else attention_fa2(static_cast<const T*>(in(0, iq_)), static_cast<const T*>(in(0, ik_)),
                  static_cast<const T*>(in(0, iv_)), static_cast<T*>(in(0, io_)), static_cast<float*>(in(0, ilse_)),
                  static_cast<int>(s.bh), static_cast<int>(s.seq), s.causal);
  }
  template <class T>
  void go(int set) {
    const auto& s = spec_;
    auto q = static_cast<const T*>(in(set, iq_)), k = static_cast<const T*>(in(set, ik_)),
         v = static_cast<const T*>(in(set, iv_)), o = static_cast<const T*>(in(set, io_)),
         dout = static_cast<const T*>(in(set, ido_));
    auto lse = static_cast<const float*>(in(set, ilse_));
    const int bh = static_cast<int>(s.bh), n = static_cast<int>(s.seq);
    if constexpr (!std::is_same_v<T, float>) {
      if (s.schedule == Schedule::BwdMma) {
        attention_backward_fast(q, k, v, o, dout, lse, dq_.as<T>(), dk_.as<T>(), dv_.as<T>(), acc_.get(), bh, n,
                                static_cast<int>(s.d), s.causal, nullptr);
        return;
      }
    }
    if constexpr (std::is_same_v<T, __half>) throw std::logic_error("the SIMT attention kernels have no fp16 version");
    else if (s.schedule == Schedule::BwdTwoPass)
      attention_backward_two_pass(q, k, v, o, dout, lse, dsum_.as<float>(), dq_.as<T>(), dk_.as<T>(), dv_.as<T>(), bh,
                                  n, s.causal);
    else
      attention_backward_atomic(q, k, v, o, dout, lse, dsum_.as<float>(), acc_.as<float>(), dq_.as<T>(), dk_.as<T>(),
                                dv_.as<T>(), bh, n, s.causal);
  }
  int iq_ = 0, ik_ = 0, iv_ = 0, io_ = 0, ido_ = 0, ilse_ = 0;
  DevBuf dsum_, dq_, dk_, dv_, acc_;
};

}  // namespace

std::unique_ptr<Workload> make_attention_backward(const Spec& s) {
  if (auto why = unsupported(s.schedule, s.dtype, s.d)) throw std::invalid_argument(*why);
  if (s.schedule != Schedule::BwdMma && (s.br != kTile || s.bc != kTile))
    throw std::invalid_argument("the SIMT attention kernels are compiled for 64 x 64 tiles");
  return std::make_unique<AttnBwdWorkload>(s);
}

#endif  // FLASHSIM_ATTN_BWD_FAST_ONLY

// ----------------------------------------------------------------------------
// version 3: FA2 backward on tensor cores (kernels/fast.h attention_backward_fast)

namespace bwd_fast {

// How a launch leaves its gradients: the plain launcher's T outputs (mode 0, dQ zeroed and converted),
// or the ring's fp32 sums over (query chunk, key chunk) pairs: dK / dV written (mode 1) or added
// (mode 2) into dk / dv, dQ kept in the workspace's accumulator (zero_dq on a chunk's first pair,
// convert_dq never: attention_backward_fast_finish_dq converts it once).
struct BwdAccumulate {
  float* dk = nullptr;
  float* dv = nullptr;
  int mode = 0;
  bool zero_dq = true, convert_dq = true;
};

constexpr float kLog2e = 1.4426950408889634f;
// lse and D rows are padded to a multiple of this in the workspace, so a Q tile's statistics are
// always one aligned 16-byte-chunked run (no bounds checks in the main loop).
constexpr int kStatPad = 128;

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float2 ld_shared_f2(std::uint32_t addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ void st_shared_b32(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v));
}

__device__ __forceinline__ void unpack8(const uint4& u, float (&f)[8], __nv_bfloat16) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = __bfloat1622float2(h[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}
__device__ __forceinline__ void unpack8(const uint4& u, float (&f)[8], __half) {
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = __half22float2(h[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}

std::size_t stat_rows(int n) { return (static_cast<std::size_t>(n) + kStatPad - 1) / kStatPad * kStatPad; }

// Preprocessing, D/8 threads per row of the padded [bh, n_pad] statistics: D = rowsum(dO * O) from
// 16-byte loads, lse copied in log2 units (+inf on padding rows, so that P = 0 there), and the
// fp32 dQ accumulator zeroed: all bh * n_pad * D floats of it, 8 a thread in address order (version 5
// uses the first bh * n * D as [bh][n][D], version 6 the first bh * ceil(n / BR) * BR * D as one
// chunk per query tile).
template <class T, int D>
__global__ void __launch_bounds__(256) bwd_fast_prep_kernel(const T* __restrict__ o, const T* __restrict__ dout,
                                                            const float* __restrict__ lse, float* __restrict__ dq_acc,
                                                            float* __restrict__ lse2, float* __restrict__ dsum, int n,
                                                            int n_pad, long long rows, bool zero_dq) {
  constexpr int kLanes = D / 8;
  const long long id = blockIdx.x * 256LL + threadIdx.x;
  const long long row = id / kLanes;  // the grid covers whole rows, so groups of kLanes stay together
  const int part = static_cast<int>(id % kLanes);
  if (row >= rows) return;
  const long long head = row / n_pad;
  const int r = static_cast<int>(row % n_pad);
  float acc = 0.f;
  if (r < n) {
    const std::size_t off = (static_cast<std::size_t>(head) * n + r) * D + part * 8;
    const uint4 ov = *reinterpret_cast<const uint4*>(o + off);
    const uint4 dv = *reinterpret_cast<const uint4*>(dout + off);
    float a[8], b[8];
    unpack8(ov, a, T{});
    unpack8(dv, b, T{});
#pragma unroll
    for (int i = 0; i < 8; ++i) acc = fmaf(a[i], b[i], acc);
  }
  if (zero_dq) {  // the ring's later pairs add into the dQ their earlier pairs left
    float4* z = reinterpret_cast<float4*>(dq_acc + static_cast<std::size_t>(id) * 8);
    z[0] = make_float4(0.f, 0.f, 0.f, 0.f);
    z[1] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
#pragma unroll
  for (int s = kLanes / 2; s > 0; s >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, s);
  if (part == 0) {
    dsum[row] = acc;
    lse2[row] = r < n ? lse[static_cast<std::size_t>(head) * n + r] * kLog2e : INFINITY;
  }
}

// Launch order of the KV-tile kernels: groups of heads_per_group heads (their Q and dO fit in L2
// together), and in a group, KV tile by KV tile with the heads interleaved, so that under the
// causal mask the long (first) KV tiles of all the group's heads start before its short ones.
// (Until 2026-12-07 the causal walk ran the last, shortest KV tile first, its comment said the
// opposite: the grid's last blocks were then its longest. kernels/RESULTS.md "The causal
// backward's longest blocks first".)
// A block's head, first key, and the query tiles [i_begin, i_end) that see its keys.
struct KvBlock {
  int head, kv0, i_begin, i_end;
};
// Moves every pointer `by` elements on (a block's tensors to its head).
template <class... P>
__device__ __forceinline__ void advance(std::size_t by, P&... p) {
  ((p += by), ...);
}
template <int BR, int BC>
__device__ __forceinline__ KvBlock kv_block(int n, int bh, int heads_per_group, bool causal) {
  const int kv_tiles = (n + BC - 1) / BC;
  const int group = blockIdx.x / (heads_per_group * kv_tiles);
  const int in_group = blockIdx.x - group * heads_per_group * kv_tiles;
  const int group_heads = min(heads_per_group, bh - group * heads_per_group);
  const int step = in_group / group_heads;
  const int kv0 = step * BC;  // KV tile 0 sees every query tile under the causal mask: the longest
  return {group * heads_per_group + in_group % group_heads, kv0, causal ? kv0 / BR : 0, (n + BR - 1) / BR};
}

// Walks dK and dV staged in the K and V tiles (row-XOR swizzle), 16 bytes a thread: for each
// chunk of a row kv0 + r < n, store(offset of the chunk in [n, D], dK's 8 values, dV's 8 values).
// tid: the thread's index among the THREADS that share the work.
template <int D, int BC, int THREADS, class Store>
__device__ __forceinline__ void for_each_staged_dkdv(std::uint32_t ks, std::uint32_t vs, int kv0, int n, int tid,
                                                     Store store) {
  constexpr int kChunks = D / 8;
  for (int x = tid; x < BC * kChunks; x += THREADS) {
    const int r = x / kChunks, c = x % kChunks;
    if (kv0 + r >= n) continue;
    uint4 a, b;
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a.x), "=r"(a.y), "=r"(a.z), "=r"(a.w) : "r"(mma::swizzled<D>(ks, r, c)));
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(b.x), "=r"(b.y), "=r"(b.z), "=r"(b.w) : "r"(mma::swizzled<D>(vs, r, c)));
    store(static_cast<std::size_t>(kv0 + r) * D + c * 8, a, b);
  }
}

// dK and dV out to T tensors.
template <int D, int BC, int THREADS, class T>
__device__ __forceinline__ void store_dkdv(std::uint32_t ks, std::uint32_t vs, T* dk, T* dv, int kv0, int n, int tid) {
  for_each_staged_dkdv<D, BC, THREADS>(ks, vs, kv0, n, tid, [&](std::size_t off, const uint4& a, const uint4& b) {
    *reinterpret_cast<uint4*>(dk + off) = a;
    *reinterpret_cast<uint4*>(dv + off) = b;
  });
}

// The same rows into fp32 accumulators (the ring backward, kernels/ring_backward.cpp): written, or
// added to what the pairs before left there (add). The staged values are already rounded to T.
template <int D, int BC, int THREADS, class T>
__device__ __forceinline__ void store_dkdv_f32(std::uint32_t ks, std::uint32_t vs, float* dk, float* dv, int kv0, int n,
                                               int tid, bool add) {
  for_each_staged_dkdv<D, BC, THREADS>(ks, vs, kv0, n, tid, [&](std::size_t off, const uint4& a, const uint4& b) {
    float fk[8], fv[8];
    unpack8(a, fk, T{});
    unpack8(b, fv, T{});
    float4* pk = reinterpret_cast<float4*>(dk + off);
    float4* pv = reinterpret_cast<float4*>(dv + off);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float4 k4 = make_float4(fk[4 * h], fk[4 * h + 1], fk[4 * h + 2], fk[4 * h + 3]);
      float4 v4 = make_float4(fv[4 * h], fv[4 * h + 1], fv[4 * h + 2], fv[4 * h + 3]);
      if (add) {
        const float4 ko = pk[h], vo = pv[h];
        k4.x += ko.x, k4.y += ko.y, k4.z += ko.z, k4.w += ko.w;
        v4.x += vo.x, v4.y += vo.y, v4.z += vo.z, v4.w += vo.w;
      }
      pk[h] = k4;
      pv[h] = v4;
    }
  });
}

// Rows [row0, row0 + ROWS) of a [n, D] matrix into a shared tile through cp.async (rows >= n become
// zeros): SW128 = false in the row-XOR layout ldmatrix reads (mma::swizzled), true in the
// 128-byte-swizzled boxes wgmma reads (wgmma::sw128).
template <int ROWS, int D, int THREADS, bool SW128, class T>
__device__ __forceinline__ void load_rows(std::uint32_t dst, const T* src, int row0, int n) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int i = threadIdx.x; i < ROWS * kChunks; i += THREADS) {
    const int r = i / kChunks, c = i % kChunks;
    const bool valid = row0 + r < n;
    const std::uint32_t to = SW128 ? wgmma::sw128<ROWS>(dst, r, c) : mma::swizzled<D>(dst, r, c);
    mma::cp_async16(to, src + (static_cast<std::size_t>(valid ? row0 + r : 0) * D + c * 8), valid);
  }
}

// One block per KV tile of BC = 128 keys, looping over the Q tiles of BR queries that see it.
// 8 warps in FA2's layout: S^T / dP^T as a 4 (keys) x 2 (queries) grid of 32 x BR/2 blocks, and the
// dK / dV accumulators (registers, for the whole loop) as 4 (keys) x 2 (head columns) blocks of
// 32 x D/2, so that every fragment read from shared memory feeds two m16 products. Per Q tile:
//   S^T = K Q^T, dP^T = V dO^T                  (A: K, V rows; B: Q, dO rows; ldmatrix)
//   P^T = exp2(S^T scale log2e - lse2), dS^T = P^T (dP^T - D)  -> shared memory (bf16 / fp16)
//   dV += P^T dO, dK += dS^T Q                  (WG: wgmma, each warpgroup 64 keys x D, operands from
//                                                shared memory; else mma.sync, A: P^T, dS^T; B: dO, Q
//                                                with ldmatrix.trans, on the 4 x 2 grid above)
//   dQ slab (16 DQ_MT queries x D/kColGroups) = dS K  (A: dS^T with .trans; B: K with .trans),
//   added to the fp32 accumulator with float2 atomics.
// Two barriers per Q tile: tile landed (and the previous tile's readers done), P^T / dS^T written.
// WG = false is the kernel of 2026-11-22 (its next Q tile is requested before the first barrier,
// while slow warps may still read that buffer: kept only for comparison in the bench driver).
template <int D, int BR, int BC, int NW, int DQ_MT>
struct BwdConfig {
  static constexpr int kThreads = NW * 32;
  static constexpr int kWarpsKV = 4, kWarpsQ = NW / 4;
  static constexpr int kSKV = BC / kWarpsKV, kSQ = BR / kWarpsQ;  // S^T block of one warp
  static constexpr int kSM = kSKV / 16, kSN = kSQ / 8;
  static constexpr int kGD = D / kWarpsQ, kGN = kGD / 8;           // dK, dV block: kSKV x kGD
  static constexpr int kKVBytes = BC * D * 2, kQBytes = BR * D * 2, kPBytes = BC * BR * 2, kStatBytes = 2 * BR * 4;
  // K, V; Q and dO double-buffered; P^T, dS^T; (lse, D) double-buffered
  static constexpr int kSmem = 2 * kKVBytes + 4 * kQBytes + 2 * kPBytes + 2 * kStatBytes;
  static constexpr int kRowGroups = BR / (16 * DQ_MT);
  static constexpr int kColGroups = NW / kRowGroups;
  static constexpr int kDQCols = D / kColGroups;
  static_assert(NW % 4 == 0 && kSKV % 16 == 0 && kSQ % 16 == 0 && kGD % 16 == 0, "warp grid");
  static_assert(NW % kRowGroups == 0 && kDQCols % 16 == 0, "dQ partition");
  static_assert(BR % 64 == 0 && D % 64 == 0, "tile shape");
};

template <class T, int D, int BR, int BC, int NW, int DQ_MT, bool WG>
__global__ void __launch_bounds__(NW * 32, 1)
    attn_bwd_fast_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                              const T* __restrict__ dout, const float* __restrict__ lse2,
                              const float* __restrict__ dsum, float* __restrict__ dq_acc, T* __restrict__ dk,
                              T* __restrict__ dv, int n, int n_pad, int bh, int heads_per_group, bool causal,
                              float scale, float scale_log2) {
  using C = BwdConfig<D, BR, BC, NW, DQ_MT>;
  extern __shared__ __align__(128) unsigned char smem[];
  // the wgmma path's tiles need 1024-aligned bases (the launcher adds 1024 bytes of slack)
  const std::uint32_t raw = mma::smem_addr(smem);
  const std::uint32_t ks = WG ? (raw + 1023) & ~1023u : raw, vs = ks + C::kKVBytes;
  const std::uint32_t qs0 = vs + C::kKVBytes, dos0 = qs0 + 2 * C::kQBytes;
  const std::uint32_t pss = dos0 + 2 * C::kQBytes, dss = pss + C::kPBytes;
  float* stat0 = reinterpret_cast<float*>(smem + (ks - raw) + 2 * C::kKVBytes + 4 * C::kQBytes + 2 * C::kPBytes);
  // Q / dO tiles and P^T / dS^T: row-XOR swizzle on whole rows (mma.sync path), or 64-column
  // 128-byte-swizzled boxes (wgmma path: dV += P^T dO and dK += dS^T Q read them from here)
  auto q_addr = [](std::uint32_t b, int row, int chunk) {
    if constexpr (WG) return wgmma::sw128<BR>(b, row, chunk);
    else return mma::swizzled<D>(b, row, chunk);
  };
  auto p_addr = [](std::uint32_t b, int row, int chunk) {
    if constexpr (WG) return wgmma::sw128<BC>(b, row, chunk);
    else return mma::swizzled<BR>(b, row, chunk);
  };
  const std::uint32_t stat_s0 = mma::smem_addr(stat0);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const KvBlock blk = kv_block<BR, BC>(n, bh, heads_per_group, causal);
  const int bh_index = blk.head, kv0 = blk.kv0, i_begin = blk.i_begin, i_end = blk.i_end;
  advance(static_cast<std::size_t>(bh_index) * n * D, q, k, v, dout, dq_acc, dk, dv);
  advance(static_cast<std::size_t>(bh_index) * n_pad, lse2, dsum);

  auto load_q_tile = [&](int i, int buf) {
    load_rows<BR, D, C::kThreads, WG>(qs0 + buf * C::kQBytes, q, i * BR, n);
    load_rows<BR, D, C::kThreads, WG>(dos0 + buf * C::kQBytes, dout, i * BR, n);
    if (threadIdx.x < BR / 2) {  // BR/4 chunks of lse2, then BR/4 of D
      const int c = threadIdx.x % (BR / 4);
      const float* src = (threadIdx.x < BR / 4 ? lse2 : dsum) + i * BR + c * 4;
      mma::cp_async16(stat_s0 + buf * C::kStatBytes + threadIdx.x * 16, src, true);
    }
  };
  load_rows<BC, D, C::kThreads, false>(ks, k, kv0, n);
  load_rows<BC, D, C::kThreads, false>(vs, v, kv0, n);
  load_q_tile(i_begin, 0);
  mma::cp_async_commit();

  const int wm = warp % C::kWarpsKV, wn = warp / C::kWarpsKV;
  const int key_row0 = wm * C::kSKV;  // this warp's keys (S^T rows, dK/dV rows)
  const int q_col0 = wn * C::kSQ;     // this warp's queries in S^T
  const int d_col0 = wn * C::kGD;     // this warp's head columns in dK/dV
  float acc_dk[C::kSM][C::kGN][4], acc_dv[C::kSM][C::kGN][4];
#pragma unroll
  for (int mt = 0; mt < C::kSM; ++mt)
#pragma unroll
    for (int x = 0; x < C::kGN; ++x)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_dk[mt][x][e] = acc_dv[mt][x][e] = 0.f;
  // wgmma path: warpgroup wg owns keys 64 wg .. 64 wg + 63, all D columns (m64nD accumulators)
  float wg_dk[D / 2], wg_dv[D / 2];
#pragma unroll
  for (int x = 0; x < D / 2; ++x) wg_dk[x] = wg_dv[x] = 0.f;
  auto pin = [](float (&x)[D / 2]) {
#pragma unroll
    for (int e = 0; e < D / 2; ++e) wgmma::reg_fence(x[e]);
  };

  const int a_row = (lane % 8) + ((lane / 8) & 1) * 8, a_chunk = lane / 16;   // A, row-major source
  const int b_row = (lane % 8) + (lane / 16) * 8, b_chunk = (lane / 8) & 1;   // B from [n][k]
  const int bt_row = (lane % 8) + ((lane / 8) & 1) * 8, bt_chunk = lane / 16; // B from [k][n], .trans
  const int at_row = (lane % 8) + (lane / 16) * 8, at_chunk = (lane / 8) & 1; // A from [k][m], .trans
  const int rg = warp % C::kRowGroups, cg = warp / C::kRowGroups;

  for (int i = i_begin; i < i_end; ++i) {
    const int buf = (i - i_begin) & 1;
    if constexpr (WG) {
      mma::cp_async_wait<0>();     // tile i landed
      wgmma::fence_proxy_async();  // ... and is visible to wgmma's reads
      __syncthreads();             // every thread's copies; tile i-1 (products included) done everywhere
      if (i + 1 < i_end) load_q_tile(i + 1, buf ^ 1);
      mma::cp_async_commit();
    } else {
      if (i + 1 < i_end) load_q_tile(i + 1, buf ^ 1);
      mma::cp_async_commit();
      mma::cp_async_wait<1>();
      __syncthreads();  // tile i landed; P^T, dS^T and the other buffer free
    }
    const std::uint32_t qs = qs0 + buf * C::kQBytes, dos = dos0 + buf * C::kQBytes;
    const float* st_lse = stat0 + buf * (C::kStatBytes / 4);
    const float* st_d = st_lse + BR;
    const int q0 = i * BR;

    float s[C::kSM][C::kSN][4], dp[C::kSM][C::kSN][4];
#pragma unroll
    for (int mt = 0; mt < C::kSM; ++mt)
#pragma unroll
      for (int x = 0; x < C::kSN; ++x)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][x][e] = dp[mt][x][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      std::uint32_t ka[C::kSM][4], va[C::kSM][4];
#pragma unroll
      for (int mt = 0; mt < C::kSM; ++mt) {
        mma::ldmatrix_x4(ka[mt], mma::swizzled<D>(ks, key_row0 + mt * 16 + a_row, kk * 2 + a_chunk));
        mma::ldmatrix_x4(va[mt], mma::swizzled<D>(vs, key_row0 + mt * 16 + a_row, kk * 2 + a_chunk));
      }
#pragma unroll
      for (int np = 0; np < C::kSN / 2; ++np) {
        std::uint32_t b[4];
        mma::ldmatrix_x4(b, q_addr(qs, q_col0 + np * 16 + b_row, kk * 2 + b_chunk));
#pragma unroll
        for (int mt = 0; mt < C::kSM; ++mt) {
          mma::mma16816<T>(s[mt][2 * np], ka[mt], b[0], b[1]);
          mma::mma16816<T>(s[mt][2 * np + 1], ka[mt], b[2], b[3]);
        }
        mma::ldmatrix_x4(b, q_addr(dos, q_col0 + np * 16 + b_row, kk * 2 + b_chunk));
#pragma unroll
        for (int mt = 0; mt < C::kSM; ++mt) {
          mma::mma16816<T>(dp[mt][2 * np], va[mt], b[0], b[1]);
          mma::mma16816<T>(dp[mt][2 * np + 1], va[mt], b[2], b[3]);
        }
      }
    }

    // P^T, dS^T -> shared memory (row = key, column = query). Padding queries have lse2 = +inf
    // (P = 0); padding keys and keys after the query (causal) are masked here.
    const bool masked = kv0 + BC > n || (causal && kv0 + BC - 1 > q0);
#pragma unroll
    for (int nt = 0; nt < C::kSN; ++nt) {
      const int col = q_col0 + nt * 8 + 2 * t;
      const float2 l2 = *reinterpret_cast<const float2*>(st_lse + col);
      const float2 dd = *reinterpret_cast<const float2*>(st_d + col);
#pragma unroll
      for (int mt = 0; mt < C::kSM; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = key_row0 + mt * 16 + g + 8 * h;
          float p0 = fast_exp2(fmaf(s[mt][nt][2 * h], scale_log2, -l2.x));
          float p1 = fast_exp2(fmaf(s[mt][nt][2 * h + 1], scale_log2, -l2.y));
          if (masked) {
            const int key = kv0 + row, query = q0 + col;
            if (key >= n || (causal && key > query)) p0 = 0.f;
            if (key >= n || (causal && key > query + 1)) p1 = 0.f;
          }
          const float ds0 = p0 * (dp[mt][nt][2 * h] - dd.x), ds1 = p1 * (dp[mt][nt][2 * h + 1] - dd.y);
          st_shared_b32(p_addr(pss, row, q_col0 / 8 + nt) + 4 * t, mma::pack2<T>(p0, p1));
          st_shared_b32(p_addr(dss, row, q_col0 / 8 + nt) + 4 * t, mma::pack2<T>(ds0, ds1));
        }
    }
    if constexpr (WG) wgmma::fence_proxy_async();  // st.shared -> wgmma's reads
    __syncthreads();  // P^T, dS^T complete

    if constexpr (WG) {
      // dV += P^T dO, dK += dS^T Q for the warpgroup's 64 keys: A (P^T, dS^T rows) K-major and B (dO,
      // Q: [query][d]) MN-major, straight from shared memory; in flight during the dQ product below
      const std::uint32_t wg_rows = (warp / 4) * 64 * 128;
      pin(wg_dv);
      pin(wg_dk);
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < BR / 16; ++kk)
        wgmma::wgmma_ss<1>(wgmma::WgmmaN<D>{}, T{}, wg_dv,
                           wgmma::desc128(pss + (kk / 4) * (BC * 128) + wg_rows + (kk % 4) * 32, 16, 1024),
                           wgmma::desc128(dos + kk * 16 * 128, BR * 128, 1024), 1);
#pragma unroll
      for (int kk = 0; kk < BR / 16; ++kk)
        wgmma::wgmma_ss<1>(wgmma::WgmmaN<D>{}, T{}, wg_dk,
                           wgmma::desc128(dss + (kk / 4) * (BC * 128) + wg_rows + (kk % 4) * 32, 16, 1024),
                           wgmma::desc128(qs + kk * 16 * 128, BR * 128, 1024), 1);
      wgmma::commit();
    } else {

    // dV += P^T dO, dK += dS^T Q on this warp's kSKV x kGD block
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk) {
      std::uint32_t pa[C::kSM][4], da[C::kSM][4];
#pragma unroll
      for (int mt = 0; mt < C::kSM; ++mt) {
        mma::ldmatrix_x4(pa[mt], mma::swizzled<BR>(pss, key_row0 + mt * 16 + a_row, kk * 2 + a_chunk));
        mma::ldmatrix_x4(da[mt], mma::swizzled<BR>(dss, key_row0 + mt * 16 + a_row, kk * 2 + a_chunk));
      }
#pragma unroll
      for (int np = 0; np < C::kGN / 2; ++np) {
        std::uint32_t b[4];
        mma::ldmatrix_x4_trans(b, mma::swizzled<D>(dos, kk * 16 + bt_row, d_col0 / 8 + np * 2 + bt_chunk));
#pragma unroll
        for (int mt = 0; mt < C::kSM; ++mt) {
          mma::mma16816<T>(acc_dv[mt][2 * np], pa[mt], b[0], b[1]);
          mma::mma16816<T>(acc_dv[mt][2 * np + 1], pa[mt], b[2], b[3]);
        }
        mma::ldmatrix_x4_trans(b, mma::swizzled<D>(qs, kk * 16 + bt_row, d_col0 / 8 + np * 2 + bt_chunk));
#pragma unroll
        for (int mt = 0; mt < C::kSM; ++mt) {
          mma::mma16816<T>(acc_dk[mt][2 * np], da[mt], b[0], b[1]);
          mma::mma16816<T>(acc_dk[mt][2 * np + 1], da[mt], b[2], b[3]);
        }
      }
    }

    }

    // dQ slab = dS K; each K fragment feeds DQ_MT products
    float dq[DQ_MT][C::kDQCols / 8][4];
#pragma unroll
    for (int mt = 0; mt < DQ_MT; ++mt)
#pragma unroll
      for (int x = 0; x < C::kDQCols / 8; ++x)
#pragma unroll
        for (int e = 0; e < 4; ++e) dq[mt][x][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      std::uint32_t a[DQ_MT][4];
#pragma unroll
      for (int mt = 0; mt < DQ_MT; ++mt)
        mma::ldmatrix_x4_trans(a[mt], p_addr(dss, kk * 16 + at_row, (rg * DQ_MT + mt) * 2 + at_chunk));
#pragma unroll
      for (int np = 0; np < C::kDQCols / 16; ++np) {
        std::uint32_t b[4];
        mma::ldmatrix_x4_trans(b, mma::swizzled<D>(ks, kk * 16 + bt_row, cg * (C::kDQCols / 8) + np * 2 + bt_chunk));
#pragma unroll
        for (int mt = 0; mt < DQ_MT; ++mt) {
          mma::mma16816<T>(dq[mt][2 * np], a[mt], b[0], b[1]);
          mma::mma16816<T>(dq[mt][2 * np + 1], a[mt], b[2], b[3]);
        }
      }
    }
#pragma unroll
    for (int mt = 0; mt < DQ_MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = q0 + (rg * DQ_MT + mt) * 16 + g + 8 * h;
        if (row >= n) continue;
        float* dst = dq_acc + static_cast<std::size_t>(row) * D + cg * C::kDQCols + 2 * t;
#pragma unroll
        for (int nt = 0; nt < C::kDQCols / 8; ++nt) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
          atomicAdd(reinterpret_cast<float2*>(dst + nt * 8), make_float2(dq[mt][nt][2 * h], dq[mt][nt][2 * h + 1]));
#else
          atomicAdd(dst + nt * 8, dq[mt][nt][2 * h]);
          atomicAdd(dst + nt * 8 + 1, dq[mt][nt][2 * h + 1]);
#endif
        }
      }
    if constexpr (WG) {
      wgmma::wait<0>();  // before the next tile's barrier: P^T, dS^T, Q and dO get rewritten
      pin(wg_dv);
      pin(wg_dk);
    }
  }
  mma::cp_async_wait<0>();
  __syncthreads();  // every warp is done with K and V: stage dK, dV there for 16-byte stores

  if constexpr (WG) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = (warp / 4) * 64 + (warp % 4) * 16 + g + 8 * h;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        st_shared_b32(mma::swizzled<D>(ks, r, j) + 4 * t,
                      mma::pack2<T>(wg_dk[4 * j + 2 * h] * scale, wg_dk[4 * j + 2 * h + 1] * scale));
        st_shared_b32(mma::swizzled<D>(vs, r, j) + 4 * t, mma::pack2<T>(wg_dv[4 * j + 2 * h], wg_dv[4 * j + 2 * h + 1]));
      }
    }
  } else {
#pragma unroll
  for (int mt = 0; mt < C::kSM; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = key_row0 + mt * 16 + g + 8 * h;
#pragma unroll
      for (int nt = 0; nt < C::kGN; ++nt) {
        st_shared_b32(mma::swizzled<D>(ks, r, d_col0 / 8 + nt) + 4 * t,
                      mma::pack2<T>(acc_dk[mt][nt][2 * h] * scale, acc_dk[mt][nt][2 * h + 1] * scale));
        st_shared_b32(mma::swizzled<D>(vs, r, d_col0 / 8 + nt) + 4 * t,
                      mma::pack2<T>(acc_dv[mt][nt][2 * h], acc_dv[mt][nt][2 * h + 1]));
      }
    }
  }
  __syncthreads();
  store_dkdv<D, BC, C::kThreads>(ks, vs, dk, dv, kv0, n, threadIdx.x);
}

// x = (a warpgroup's 64 rows of a key tile, `key_rows` bytes into each 128-byte-swizzled box) (a
// query tile)^T, both K-major in shared memory: one wgmma group (versions 5 and 6).
template <class T, int D, int BR, int BC>
__device__ __forceinline__ void keys_by_queries(float (&x)[BR / 2], std::uint32_t key_tile, std::uint32_t query_tile,
                                                std::uint32_t key_rows) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    wgmma::wgmma_ss<0>(wgmma::WgmmaN<BR>{}, T{}, x,
                       wgmma::desc128(key_tile + (kk / 4) * (BC * 128) + key_rows + (kk % 4) * 32, 16, 1024),
                       wgmma::desc128(query_tile + (kk / 4) * (BR * 128) + (kk % 4) * 32, 16, 1024), kk > 0);
  wgmma::commit();
}

// Version 4: every product on wgmma. One block of two warpgroups per 128-key tile; warpgroup wg
// owns keys 64 wg .. 64 wg + 63 (its rows of S^T, dP^T, dK, dV). Per Q tile of BR queries:
//   S^T = K Q^T, dP^T = V dO^T      (A: K, V rows, K-major; B: Q, dO rows, K-major; all shared memory)
//   P^T, dS^T in registers          (the accumulator layout is the A-fragment layout of the next two)
//   dV += P^T dO, dK += dS^T Q      (A: registers; B: dO, Q read MN-major)
//   dS^T -> shared memory; dQ = dS K (A: dS^T read MN-major, i.e. transposed; B: K read MN-major),
//   each warpgroup a 64 x 64 block of dQ, added to the fp32 accumulator with float2 atomics.
// Nothing goes through ldmatrix: the tensor cores read every shared operand themselves, which is
// what the shared-memory pipe of version 3 (S^T, dP^T and dQ on mma.sync) could not keep up with.
// Two barriers per Q tile: tile landed (and all of the previous tile's products done), dS^T written.
template <int D, int BR, int BC>
struct WgBwdConfig {
  static constexpr int kKVBytes = BC * D * 2, kQBytes = BR * D * 2, kDSBytes = BC * BR * 2, kStatBytes = 2 * BR * 4;
  // K, V; Q and dO double-buffered; dS^T; (lse, D) double-buffered; two mbarriers; 1024 bytes of
  // alignment slack
  static constexpr int kSmem = 2 * kKVBytes + 4 * kQBytes + kDSBytes + 2 * kStatBytes + 16 + 1024;
  // dQ blocks of 64 queries x 64 columns: BR = 64 splits the columns between the two warpgroups,
  // BR = 128 the queries
  static constexpr int kDQQueryBlocks = BR / 64;
  static_assert(BC == 128, "two warpgroups of 64 keys");
  static_assert((BR == 64 && D == 128) || (BR == 128 && D == 64), "dQ: one 64 x 64 block per warpgroup");
};

// TMA_LOADS (version 5): thread 0 fetches each Q and dO tile with TMA (3-D maps [bh][n][d], rows
// past n zero-filled) and its statistics with bulk copies, completing on one mbarrier per buffer,
// instead of every thread issuing 10 cp.async with their address arithmetic.
template <class T, int D, int BR, int BC, bool TMA_LOADS>
__global__ void __launch_bounds__(256, 1)
    attn_bwd_wgmma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                          const T* __restrict__ dout, const float* __restrict__ lse2, const float* __restrict__ dsum,
                          float* __restrict__ dq_acc, T* __restrict__ dk, T* __restrict__ dv, int n, int n_pad, int bh,
                          int heads_per_group, bool causal, float scale, float scale_log2,
                          const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_do) {
  using C = WgBwdConfig<D, BR, BC>;
  extern __shared__ __align__(128) unsigned char smem[];
  const std::uint32_t raw = mma::smem_addr(smem);
  const std::uint32_t ks = (raw + 1023) & ~1023u, vs = ks + C::kKVBytes;
  const std::uint32_t qs0 = vs + C::kKVBytes, dos0 = qs0 + 2 * C::kQBytes, dss = dos0 + 2 * C::kQBytes;
  float* stat0 = reinterpret_cast<float*>(smem + (ks - raw) + 2 * C::kKVBytes + 4 * C::kQBytes + C::kDSBytes);
  const std::uint32_t stat_s0 = mma::smem_addr(stat0), full0 = stat_s0 + 2 * C::kStatBytes;  // mbarriers

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wg = warp / 4, row_w = (warp % 4) * 16;  // warpgroup; this warp's 16 rows of its 64
  const KvBlock blk = kv_block<BR, BC>(n, bh, heads_per_group, causal);
  const int bh_index = blk.head, kv0 = blk.kv0, i_begin = blk.i_begin, i_end = blk.i_end;
  advance(static_cast<std::size_t>(bh_index) * n * D, q, k, v, dout, dq_acc, dk, dv);
  advance(static_cast<std::size_t>(bh_index) * n_pad, lse2, dsum);

  auto load_q_tile = [&](int i, int buf) {
    if constexpr (TMA_LOADS) {
      if (threadIdx.x == 0) {
        const std::uint32_t bar = full0 + 8 * buf;
        tma::mbar_arrive_expect_tx(bar, 2 * C::kQBytes + C::kStatBytes);  // whole boxes, zero-filled rows too
#pragma unroll
        for (int b = 0; b < D / 64; ++b) {
          tma::load_3d(qs0 + buf * C::kQBytes + b * BR * 128, &map_q, bar, b * 64, i * BR, bh_index);
          tma::load_3d(dos0 + buf * C::kQBytes + b * BR * 128, &map_do, bar, b * 64, i * BR, bh_index);
        }
        tma::copy(stat_s0 + buf * C::kStatBytes, lse2 + i * BR, BR * 4, bar);
        tma::copy(stat_s0 + buf * C::kStatBytes + BR * 4, dsum + i * BR, BR * 4, bar);
      }
      return;
    }
    load_rows<BR, D, 256, true>(qs0 + buf * C::kQBytes, q, i * BR, n);
    load_rows<BR, D, 256, true>(dos0 + buf * C::kQBytes, dout, i * BR, n);
    if (threadIdx.x < BR / 2) {  // BR/4 chunks of lse2, then BR/4 of D
      const int c = threadIdx.x % (BR / 4);
      const float* src = (threadIdx.x < BR / 4 ? lse2 : dsum) + i * BR + c * 4;
      mma::cp_async16(stat_s0 + buf * C::kStatBytes + threadIdx.x * 16, src, true);
    }
  };
  if constexpr (TMA_LOADS) {
    if (threadIdx.x == 0) {
      tma::mbar_init(full0, 1);
      tma::mbar_init(full0 + 8, 1);
      tma::mbar_init_fence();
    }
    __syncthreads();
  }
  load_rows<BC, D, 256, true>(ks, k, kv0, n);
  load_rows<BC, D, 256, true>(vs, v, kv0, n);
  load_q_tile(i_begin, 0);
  mma::cp_async_commit();

  float acc_dk[D / 2], acc_dv[D / 2];
#pragma unroll
  for (int x = 0; x < D / 2; ++x) acc_dk[x] = acc_dv[x] = 0.f;
  auto pin = [](auto& x) {
#pragma unroll
    for (int e = 0; e < static_cast<int>(sizeof(x) / sizeof(x[0])); ++e) wgmma::reg_fence(x[e]);
  };
  auto pin_frag = [](std::uint32_t (&x)[BR / 16][4]) {
#pragma unroll
    for (int i = 0; i < BR / 16; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(x[i][e])::"memory");
  };
  const std::uint32_t key_rows = wg * 64 * 128;  // the warpgroup's 64 rows inside each K / V box
  const int key_row = kv0 + wg * 64 + row_w + g;  // this thread's first key (the second is + 8)
  // dQ block of this warpgroup: queries 64 qb .., columns 64 cb ..
  const int dq_qb = C::kDQQueryBlocks == 2 ? wg : 0, dq_cb = C::kDQQueryBlocks == 2 ? 0 : wg;

  for (int i = i_begin; i < i_end; ++i) {
    const int buf = (i - i_begin) & 1;
    if constexpr (TMA_LOADS) tma::mbar_wait(full0 + 8 * buf, ((i - i_begin) >> 1) & 1);  // Q, dO tile i
    mma::cp_async_wait<0>();     // tile i landed (K and V: the first time)
    wgmma::fence_proxy_async();  // ... and is visible to wgmma's reads
    __syncthreads();             // every thread's copies; every product of tile i-1 done
    if (i + 1 < i_end) load_q_tile(i + 1, buf ^ 1);
    mma::cp_async_commit();
    const std::uint32_t qs = qs0 + buf * C::kQBytes, dos = dos0 + buf * C::kQBytes;
    const float* st_lse = stat0 + buf * (C::kStatBytes / 4);
    const float* st_d = st_lse + BR;
    const int q0 = i * BR;

    float s[BR / 2], dp[BR / 2];
    wgmma::fence();
    keys_by_queries<T, D, BR, BC>(s, ks, qs, key_rows);    // S^T = K Q^T
    keys_by_queries<T, D, BR, BC>(dp, vs, dos, key_rows);  // dP^T = V dO^T
    wgmma::wait<1>();
    pin(s);

    // P^T = exp2(S^T scale log2e - lse2): accumulator element 4j + 2h + e is key key_row + 8h,
    // query q0 + 8j + 2t + e. Padding queries have lse2 = +inf (P = 0); padding keys and keys
    // after the query (causal) are masked here.
    const bool masked = kv0 + BC > n || (causal && kv0 + BC - 1 > q0);
#pragma unroll
    for (int j = 0; j < BR / 8; ++j) {
      const float2 l2 = *reinterpret_cast<const float2*>(st_lse + 8 * j + 2 * t);
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float p = fast_exp2(fmaf(s[4 * j + 2 * h + e], scale_log2, -(e ? l2.y : l2.x)));
          if (masked) {
            const int key = key_row + 8 * h, query = q0 + 8 * j + 2 * t + e;
            if (key >= n || (causal && key > query)) p = 0.f;
          }
          s[4 * j + 2 * h + e] = p;
        }
    }
    std::uint32_t pa[BR / 16][4], da[BR / 16][4];
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk)
#pragma unroll
      for (int e = 0; e < 4; ++e) pa[kk][e] = mma::pack2<T>(s[8 * kk + 2 * e], s[8 * kk + 2 * e + 1]);
    wgmma::wait<0>();
    pin(dp);
    // dS^T = P^T (dP^T - D); kept in registers for dK and stored (key rows, query columns) for dQ
#pragma unroll
    for (int j = 0; j < BR / 8; ++j) {
      const float2 dd = *reinterpret_cast<const float2*>(st_d + 8 * j + 2 * t);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float ds0 = s[4 * j + 2 * h] * (dp[4 * j + 2 * h] - dd.x);
        const float ds1 = s[4 * j + 2 * h + 1] * (dp[4 * j + 2 * h + 1] - dd.y);
        const std::uint32_t packed = mma::pack2<T>(ds0, ds1);
        da[j / 2][(j % 2) * 2 + h] = packed;
        st_shared_b32(wgmma::sw128<BC>(dss, wg * 64 + row_w + g + 8 * h, j) + 4 * t, packed);
      }
    }
    wgmma::fence_proxy_async();  // st.shared -> wgmma's reads of dS^T

    // dV += P^T dO, dK += dS^T Q: in flight across the barrier and the dQ product
    pin(acc_dv);
    pin(acc_dk);
    pin_frag(pa);
    pin_frag(da);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk)
      wgmma::wgmma_rs<1>(wgmma::WgmmaN<D>{}, T{}, acc_dv, pa[kk], wgmma::desc128(dos + kk * 16 * 128, BR * 128, 1024), 1);
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk)
      wgmma::wgmma_rs<1>(wgmma::WgmmaN<D>{}, T{}, acc_dk, da[kk], wgmma::desc128(qs + kk * 16 * 128, BR * 128, 1024), 1);
    wgmma::commit();
    __syncthreads();  // dS^T complete

    // dQ block = dS K: A = dS^T (stored [key][query]) read transposed, B = K (stored [key][d]) MN-major
    float dq[32];
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk)
      wgmma::wgmma_ss<1, 1>(wgmma::WgmmaN<64>{}, T{}, dq,
                            wgmma::desc128(dss + dq_qb * (BC * 128) + kk * 16 * 128, BC * 128, 1024),
                            wgmma::desc128(ks + dq_cb * (BC * 128) + kk * 16 * 128, BC * 128, 1024), kk > 0);
    wgmma::commit();
    wgmma::wait<0>();
    pin(dq);
    pin(acc_dv);
    pin(acc_dk);
    pin_frag(pa);
    pin_frag(da);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = q0 + dq_qb * 64 + row_w + g + 8 * h;
      if (row >= n) continue;
      float* dst = dq_acc + static_cast<std::size_t>(row) * D + dq_cb * 64 + 2 * t;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        atomicAdd(reinterpret_cast<float2*>(dst + j * 8), make_float2(dq[4 * j + 2 * h], dq[4 * j + 2 * h + 1]));
#else
        atomicAdd(dst + j * 8, dq[4 * j + 2 * h]);
        atomicAdd(dst + j * 8 + 1, dq[4 * j + 2 * h + 1]);
#endif
      }
    }
  }
  mma::cp_async_wait<0>();
  __syncthreads();  // every warp is done with K and V: stage dK, dV there for 16-byte stores

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = wg * 64 + row_w + g + 8 * h;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      st_shared_b32(mma::swizzled<D>(ks, r, j) + 4 * t,
                    mma::pack2<T>(acc_dk[4 * j + 2 * h] * scale, acc_dk[4 * j + 2 * h + 1] * scale));
      st_shared_b32(mma::swizzled<D>(vs, r, j) + 4 * t, mma::pack2<T>(acc_dv[4 * j + 2 * h], acc_dv[4 * j + 2 * h + 1]));
    }
  }
  __syncthreads();
  store_dkdv<D, BC, 256>(ks, vs, dk, dv, kv0, n, threadIdx.x);
}

// dQ = scale * accumulator, 8 elements (two float4 loads, one 16-byte store) per thread.
template <class T>
__global__ void __launch_bounds__(256) bwd_fast_dq_kernel(const float* __restrict__ acc, T* __restrict__ dq,
                                                          std::size_t chunks, float scale) {
  for (std::size_t x = blockIdx.x * 256ULL + threadIdx.x; x < chunks; x += static_cast<std::size_t>(gridDim.x) * 256) {
    const float4 a = reinterpret_cast<const float4*>(acc)[2 * x];
    const float4 b = reinterpret_cast<const float4*>(acc)[2 * x + 1];
    uint4 out;
    out.x = mma::pack2<T>(a.x * scale, a.y * scale);
    out.y = mma::pack2<T>(a.z * scale, a.w * scale);
    out.z = mma::pack2<T>(b.x * scale, b.y * scale);
    out.w = mma::pack2<T>(b.z * scale, b.w * scale);
    reinterpret_cast<uint4*>(dq)[x] = out;
  }
}

// ---- version 6: warp-specialized backward (FlashAttention-3's recipe) -----------------------------
//
// 384 threads per 128-key tile. Warpgroup 0 is the producer (setmaxnreg 24): one thread of warp 0
// loads K and V once (TMA, kv_full), then each query tile's Q, dO (TMA) and lse2 / D rows (bulk
// copies) into a STAGES-deep ring (full[s] / empty[s] mbarriers); warp 1 is the dQ writer. Warpgroups
// 1 and 2 (setmaxnreg 240) are version 5's two consumers, warpgroup 1 + c owning keys 64c..64c+63.
// Per query tile, consumer c:
//   wait full[s]; S^T, dP^T (wgmma ss); P^T, dS^T in registers; dS^T (its 64 key rows) to the
//   double-buffered dS^T tile; dV += P^T dO, dK += dS^T Q (wgmma rs, one group);
//   named barrier kBarDs (256 consumers: both halves of dS^T written);
//   dQ block = dS K (wgmma ss, its own group); wait for dV / dK -> every consumer thread arrives on
//   empty[s] (the stage's Q, dO and statistics are no longer read); wait for dQ;
//   [named barrier kBarDqEmpty + c, after the first tile] its 64 x 64 fp32 dQ block to shared memory
//   (8 float4 a thread, conflict-free), fence.proxy.async, bar.arrive kBarDqFull + c.
// The writer warp, per query tile and consumer c: bar.sync kBarDqFull + c; lane 0 issues one
// cp.reduce.async.bulk .add.f32 of the 16 KB block into the accumulator and waits until it has read
// shared memory (wait_group.read); bar.arrive kBarDqEmpty + c (not after the block's last tile, so
// that every named barrier ends the kernel with its arrivals matched).
// dS^T is double-buffered, so the buffer a tile writes was last read by the dQ product two tiles
// back, which both consumers finished before they met at the previous tile's kBarDs.
// The dQ accumulator is one contiguous chunk of BR * D floats per (head, query tile) in the order
// the consumers stage it: [consumer c][float4 k = 0..7][thread 0..127] of 4 floats, float4 k of a
// thread holding its accumulator d[4k..4k+3] (rows 16w + g and + 8, columns 8k + 2t, + 1 of the
// consumer's 64 x 64 block; w, g, t as in wgmma.cuh). bwd_ws_dq_kernel undoes the permutation.
template <int D, int BR, int BC, int STAGES, bool ALT_DQ = false>
struct WsBwdConfig {
  static constexpr int kKVBytes = BC * D * 2, kQBytes = BR * D * 2, kDSBytes = BC * BR * 2, kStatBytes = 2 * BR * 4;
  // two 64 x 64 fp32 blocks, one per consumer; with ALT_DQ whole BR x D blocks: one per consumer at
  // d = 128, one the consumers take turns at at d = 64 (two would not fit)
  static constexpr int kDQBuffers = ALT_DQ && D == 128 ? 2 : 1;
  static constexpr int kDQBytes = kDQBuffers * BR * D * 4;
  static constexpr int kBars = 2 + 2 * STAGES;  // kv_full, full[STAGES], empty[STAGES], epilogue
  // K | V | Q ring | dO ring | dS^T x 2 | dQ staging | statistics ring | mbarriers, + 1024 of slack
  // for the 1024-byte alignment of the swizzled tiles
  static constexpr int kOffV = kKVBytes, kOffQ = 2 * kKVBytes, kOffDO = kOffQ + STAGES * kQBytes;
  static constexpr int kOffDS = kOffDO + STAGES * kQBytes, kOffDQ = kOffDS + 2 * kDSBytes;
  static constexpr int kOffStat = kOffDQ + kDQBytes, kOffBars = kOffStat + STAGES * kStatBytes;
  static constexpr int kSmem = kOffBars + 8 * kBars + 1024;
  static constexpr int kDQQueryBlocks = BR / 64;
  // ALT_DQ: the staging buffer of consumer c's whole dQ block (shared by both at d = 64)
  __device__ static constexpr int alt_dq_buffer(int c) { return kOffDQ + (kDQBuffers == 2 ? c : 0) * BR * D * 4; }
  static_assert(BC == 128, "two consumer warpgroups of 64 keys");
  static_assert((BR == 64 && D == 128) || (BR == 128 && D == 64), "dQ: one 64 x 64 block per consumer");
  static_assert(kSmem <= 227 * 1024, "shared memory per block");
};
// One ring step's pairs for the backward's one launch (attention_backward_fast_ring_step): slot a is
// key chunk kv_chunk[a], seen by runs[a] query chunks q_chunk[a][r], each under the causal mask
// (the chunks' diagonal) or not. A kernel argument; plain launches pass it empty.
struct BwdRingStep {
  int heads = 0;  // heads per chunk
  int slots = 0;  // key chunks that some query chunk sees
  int kv_chunk[2] = {0, 0};
  int runs[2] = {0, 0};
  int q_chunk[2][2] = {{0, 0}, {0, 0}};
  bool masked[2][2] = {{false, false}, {false, false}};
  int max_runs() const {
    int m = 0;
    for (int a = 0; a < slots; ++a) m = runs[a] > m ? runs[a] : m;
    return m;
  }
};
struct QueryTile {
  int head, i;  // the query head (a chunk's head in the ring) and the tile
  bool causal;
};
// A block's query tiles in the order it walks them: the plain launch's one run [i_begin, i_end) of
// its own head; in a ring step up to two runs, one per query chunk that sees the block's key chunk.
template <bool RING>
struct QueryRuns {
  int kv_head;  // the K / V / dK / dV head of the block
  int head[2], begin[2], len0, total;
  bool causal[2];
  __device__ __forceinline__ QueryTile at(int it) const {
    if constexpr (!RING) return {head[0], begin[0] + it, causal[0]};
    const bool second = it >= len0;
    return {second ? head[1] : head[0], second ? begin[1] + it - len0 : begin[0] + it,
            second ? causal[1] : causal[0]};
  }
};
// Ternaries, not indexing, so that the kernel argument is never copied to local memory.
template <bool RING, int BR>
__device__ __forceinline__ QueryRuns<RING> query_runs(const KvBlock& blk, const BwdRingStep& ring, int q_tiles,
                                                      bool causal) {
  QueryRuns<RING> r{};
  if constexpr (!RING) {
    r.kv_head = r.head[0] = blk.head;
    r.begin[0] = blk.i_begin;
    r.len0 = r.total = blk.i_end - blk.i_begin;
    r.causal[0] = causal;
    return r;
  } else {
    const int a = blk.head / ring.heads, h = blk.head % ring.heads;
    r.kv_head = (a ? ring.kv_chunk[1] : ring.kv_chunk[0]) * ring.heads + h;
    const int runs = a ? ring.runs[1] : ring.runs[0];
    r.total = 0;
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int chunk = a ? ring.q_chunk[1][x] : ring.q_chunk[0][x];
      const bool masked = a ? ring.masked[1][x] : ring.masked[0][x];
      r.head[x] = chunk * ring.heads + h;
      r.causal[x] = masked;
      r.begin[x] = masked ? blk.kv0 / BR : 0;  // under the mask, the tiles at or past the block's keys
      const int len = x < runs ? q_tiles - r.begin[x] : 0;
      if (x == 0) r.len0 = len;
      r.total += len;
    }
    return r;
  }
}

// named barriers of version 6 (0 is __syncthreads)
constexpr int kBarDs = 1;       // 256 consumer threads: dS^T complete
constexpr int kBarDqFull = 2;   // + c: consumer c (128) arrives, the writer warp (32) syncs
constexpr int kBarDqEmpty = 4;  // + c: the writer warp arrives, consumer c syncs
constexpr int kBarDsTo = 7;     // + c (ALT_DQ): the other consumer (128) arrives, consumer c (128) syncs
constexpr int kDqBarCount = 128 + 32;

// TRUNC_PDS (a diagnostic, fp16 only, launch_bwd PRODUCTS = 6 in the standalone build): P^T and dS^T
// are cut to bf16's 7 mantissa bits after their fp16 conversion (low 3 bits cleared), so that with
// bf16-representable inputs every tensor-core operand carries bf16's mantissa width in fp16's format.
// Not numerically equivalent to version 6 (bf16-level accuracy); it measures how much of fp16's
// time goes with its operands' extra mantissa bits.
// PRE_LEAN (launch_bwd PRODUCTS = 7, for A/B runs): version 6 as first written, with the mask's compare
// and select in every tile (the compiler if-converts `masked && ...` into straight-line code) and
// dS^T stored by 16 st.shared.b32 with their swizzle arithmetic. The default since 2026-11-24 runs
// the compare and select only in tiles that need a mask (a warp-uniform branch) and stores dS^T
// with 4 stmatrix.x4 (one XOR per address): fewer instructions, same products and results.
// ALT_DQ (launch_bwd PRODUCTS = 8, version 7): the consumers take turns, tile by tile, at the whole
// dQ block (all 128 keys: 64 queries x 128 columns at d = 128, 128 x 64 at d = 64, where the two
// share one staging buffer, as two buffers do not fit). The one whose turn it is waits for the
// other's half of dS^T; the other only signals it and goes on to the next tile, so the two drift
// apart by one dQ product and one's exponentials run under the other's products (ping-pong), in
// place of version 6's meeting of both consumers at every tile.
//
// RING (version 7 only, attention_backward_fast_ring_step): a block's key tile belongs to key chunk
// ring.kv_chunk[a] of a ring step and walks the query tiles of each query chunk that sees it, one
// run after the other, in one pass (QueryRuns); tensors are [chunk][head][n][D], so chunk i's head
// h is head i * heads + h of the tensor maps, the statistics and the accumulators.
template <class T, int D, int BR, int BC, int STAGES, bool TRUNC_PDS = false, bool PRE_LEAN = false,
          bool ALT_DQ = false, bool RING = false>
__global__ void __launch_bounds__(384, 1)
    attn_bwd_ws_kernel(const float* __restrict__ lse2, const float* __restrict__ dsum, float* __restrict__ dq_acc,
                       T* __restrict__ dk, T* __restrict__ dv, float* __restrict__ dk_acc, float* __restrict__ dv_acc,
                       int acc_mode, int n, int n_pad, int bh, int heads_per_group,
                       bool causal, float scale, float scale_log2, const __grid_constant__ CUtensorMap map_q,
                       const __grid_constant__ CUtensorMap map_do, const __grid_constant__ CUtensorMap map_k,
                       const __grid_constant__ CUtensorMap map_v, const BwdRingStep ring) {
  using C = WsBwdConfig<D, BR, BC, STAGES, ALT_DQ>;
  extern __shared__ __align__(128) unsigned char smem[];
  // every shared address is base + a C::kOff* constant (K at 0); the consumers re-read base through
  // an opaque move each tile, so that the addresses are not all held in registers over the loop
  const std::uint32_t base = (mma::smem_addr(smem) + 1023) & ~1023u;
  auto kv_full = [](std::uint32_t b) { return b + C::kOffBars; };
  auto full = [](std::uint32_t b, int s) { return b + C::kOffBars + 8 * (1 + s); };
  auto empty = [](std::uint32_t b, int s) { return b + C::kOffBars + 8 * (1 + STAGES + s); };
  const std::uint32_t epilogue_bar = base + C::kOffBars + 8 * (1 + 2 * STAGES);

  const KvBlock blk = kv_block<BR, BC>(n, bh, heads_per_group, causal);
  const int kv0 = blk.kv0, q_tiles = (n + BR - 1) / BR;
  const QueryRuns<RING> runs = query_runs<RING, BR>(blk, ring, q_tiles, causal);
  const int kv_head = runs.kv_head;  // (dk, dv: advanced in the epilogue, not held over the loop)

  if (threadIdx.x == 0) {
    tma::mbar_init(kv_full(base), 1);
    for (int s = 0; s < STAGES; ++s) {
      tma::mbar_init(full(base, s), 1);
      // every consumer thread arrives once it has read the stage (its statistics through ld.shared):
      // a release that covers each thread's own reads, which one lane per warp would not
      tma::mbar_init(empty(base, s), 256);
    }
    tma::mbar_init(epilogue_bar, 256);
    tma::mbar_init_fence();
  }
  __syncthreads();

  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    if (warp == 0) {  // producer
      if (lane != 0) return;
      tma::mbar_arrive_expect_tx(kv_full(base), 2 * C::kKVBytes);  // whole boxes, zero-filled rows too
#pragma unroll
      for (int b = 0; b < D / 64; ++b) {
        tma::load_3d(base + b * BC * 128, &map_k, kv_full(base), b * 64, kv0, kv_head);
        tma::load_3d(base + C::kOffV + b * BC * 128, &map_v, kv_full(base), b * 64, kv0, kv_head);
      }
      for (int it = 0; it < runs.total; ++it) {
        const QueryTile tile = runs.at(it);
        const int i = tile.i;
        const std::size_t stats = static_cast<std::size_t>(tile.head) * n_pad + i * BR;
        const int s = it % STAGES;
        const std::uint32_t bar = full(base, s);
        tma::mbar_wait(empty(base, s), ((it / STAGES) & 1) ^ 1);  // a fresh barrier's phase "-1" counts as done
        tma::mbar_arrive_expect_tx(bar, 2 * C::kQBytes + C::kStatBytes);
#pragma unroll
        for (int b = 0; b < D / 64; ++b) {
          tma::load_3d(base + C::kOffQ + s * C::kQBytes + b * BR * 128, &map_q, bar, b * 64, i * BR, tile.head);
          tma::load_3d(base + C::kOffDO + s * C::kQBytes + b * BR * 128, &map_do, bar, b * 64, i * BR, tile.head);
        }
        tma::copy(base + C::kOffStat + s * C::kStatBytes, lse2 + stats, BR * 4, bar);
        tma::copy(base + C::kOffStat + s * C::kStatBytes + BR * 4, dsum + stats, BR * 4, bar);
      }
    } else if (warp == 1 && ALT_DQ) {  // dQ writer: tile it's whole block comes from consumer it % 2
      for (int it = 0; it < runs.total; ++it) {
        const QueryTile tile = runs.at(it);
        const int c = it & 1;
        tma::named_bar_sync(kBarDqFull + c, kDqBarCount);
        if (lane == 0) {
          // one accumulator chunk per (head, query tile)
          tma::reduce_add_f32(dq_acc + (static_cast<std::size_t>(tile.head) * q_tiles + tile.i) * BR * D,
                              base + C::alt_dq_buffer(c), BR * D * 4);
          tma::bulk_commit();
          tma::bulk_wait_read<0>();
        }
        __syncwarp();
        // the buffer is free for its next writer: the same consumer two tiles on (a buffer each), or
        // the other one at the next tile (one buffer)
        if (C::kDQBuffers == 2 && it + 2 < runs.total) tma::named_bar_arrive(kBarDqEmpty + c, kDqBarCount);
        if (C::kDQBuffers == 1 && it + 1 < runs.total) tma::named_bar_arrive(kBarDqEmpty + (c ^ 1), kDqBarCount);
      }
      if (lane == 0) tma::bulk_wait<0>();
    } else if (warp == 1) {  // dQ writer
      for (int it = 0; it < runs.total; ++it) {
        const QueryTile tile = runs.at(it);
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          tma::named_bar_sync(kBarDqFull + c, kDqBarCount);
          if (lane == 0) {
            tma::reduce_add_f32(dq_acc + (static_cast<std::size_t>(tile.head) * q_tiles + tile.i) * BR * D + c * 64 * 64,
                                base + C::kOffDQ + c * 64 * 64 * 4, 64 * 64 * 4);
            tma::bulk_commit();
            tma::bulk_wait_read<0>();
          }
          __syncwarp();
          if (it + 1 < runs.total) tma::named_bar_arrive(kBarDqEmpty + c, kDqBarCount);
        }
      }
      if (lane == 0) tma::bulk_wait<0>();  // the reductions are done before the block's shared memory goes
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
  const int c = wg - 1, g = lane / 4, t = lane % 4;
  const int row_w = warp * 16;  // this warp's 16 rows of the consumer's 64
  const std::uint32_t key_rows = c * 64 * 128;  // the consumer's 64 rows inside each K / V box
  const int key_row = kv0 + c * 64 + row_w + g;  // this thread's first key (the second is + 8)
  // dQ block of this consumer: queries 64 qb .., columns 64 cb ..
  const int dq_qb = C::kDQQueryBlocks == 2 ? c : 0, dq_cb = C::kDQQueryBlocks == 2 ? 0 : c;
  // this thread's float4 k of the staged dQ block: base + kOffDQ + dq_stage + k * 2048
  const std::uint32_t dq_stage = c * (64 * 64 * 4) + (threadIdx.x % 128) * 16;

  float acc_dk[D / 2], acc_dv[D / 2];
#pragma unroll
  for (int x = 0; x < D / 2; ++x) acc_dk[x] = acc_dv[x] = 0.f;
  auto pin = [](auto& x) {
#pragma unroll
    for (int e = 0; e < static_cast<int>(sizeof(x) / sizeof(x[0])); ++e) wgmma::reg_fence(x[e]);
  };
  auto pin_frag = [](std::uint32_t (&x)[BR / 16][4]) {
#pragma unroll
    for (int i = 0; i < BR / 16; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(x[i][e])::"memory");
  };
  tma::mbar_wait(kv_full(base), 0);

  for (int it = 0; it < runs.total; ++it) {
    const QueryTile tile = runs.at(it);
    const int s_ = it % STAGES;
    std::uint32_t b;
    asm volatile("mov.u32 %0, %1;" : "=r"(b) : "r"(base));
    tma::mbar_wait(full(b, s_), (it / STAGES) & 1);  // Q, dO, statistics of tile i
    const std::uint32_t ks = b, vs = b + C::kOffV, qs = b + C::kOffQ + s_ * C::kQBytes;
    const std::uint32_t dos = b + C::kOffDO + s_ * C::kQBytes, dss = b + C::kOffDS + (it & 1) * C::kDSBytes;
    const std::uint32_t st_lse = b + C::kOffStat + s_ * C::kStatBytes, st_d = st_lse + BR * 4;
    const int q0 = tile.i * BR;
    const bool tile_causal = tile.causal;

    float s[BR / 2], dp[BR / 2];
    wgmma::fence();
    keys_by_queries<T, D, BR, BC>(s, ks, qs, key_rows);    // S^T = K Q^T
    keys_by_queries<T, D, BR, BC>(dp, vs, dos, key_rows);  // dP^T = V dO^T
    wgmma::wait<1>();
    pin(s);

    // P^T = exp2(S^T scale log2e - lse2) as in version 5 (element 4j + 2h + e: key key_row + 8h,
    // query q0 + 8j + 2t + e; padding queries have lse2 = +inf). Masked (padding key, or causal
    // key > query, i.e. 8j + e < key - q0 - 2t) where 8j + e < lim[h]: one compare per element
    // against one register per row, which keeps d = 64 within 240 registers.
    const bool masked = kv0 + BC > n || (tile_causal && kv0 + BC - 1 > q0);
    int lim[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = key_row + 8 * h;
      lim[h] = key >= n ? INT_MAX : tile_causal ? key - q0 - 2 * t : INT_MIN;
    }
    auto probabilities = [&](auto mask) {
      constexpr bool kMask = decltype(mask)::value;
#pragma unroll
      for (int j = 0; j < BR / 8; ++j) {
        const float2 l2 = ld_shared_f2(st_lse + (8 * j + 2 * t) * 4);
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float p = fast_exp2(fmaf(s[4 * j + 2 * h + e], scale_log2, -(e ? l2.y : l2.x)));
            if (kMask && masked && 8 * j + e < lim[h]) p = 0.f;
            s[4 * j + 2 * h + e] = p;
          }
      }
    };
    if (PRE_LEAN || masked) probabilities(std::true_type{});
    else probabilities(std::false_type{});
    std::uint32_t pa[BR / 16][4], da[BR / 16][4];  // P^T packed for dV while dP^T is in flight
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        pa[kk][e] = mma::pack2<T>(s[8 * kk + 2 * e], s[8 * kk + 2 * e + 1]);
        if constexpr (TRUNC_PDS) pa[kk][e] &= 0xfff8fff8u;
      }
    wgmma::wait<0>();
    pin(dp);
    // dS^T = P^T (dP^T - D); kept in registers for dK and stored (key rows, query columns) for dQ
#pragma unroll
    for (int j = 0; j < BR / 8; ++j) {
      const float2 dd = ld_shared_f2(st_d + (8 * j + 2 * t) * 4);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float ds0 = s[4 * j + 2 * h] * (dp[4 * j + 2 * h] - dd.x);
        const float ds1 = s[4 * j + 2 * h + 1] * (dp[4 * j + 2 * h + 1] - dd.y);
        const std::uint32_t packed = mma::pack2<T>(ds0, ds1) & (TRUNC_PDS ? 0xfff8fff8u : 0xffffffffu);
        da[j / 2][(j % 2) * 2 + h] = packed;
        if constexpr (PRE_LEAN) st_shared_b32(wgmma::sw128<BC>(dss, c * 64 + row_w + g + 8 * h, j) + 4 * t, packed);
      }
    }
    if constexpr (!PRE_LEAN) {
      // stmatrix.x4 kk: matrices (rows +0, chunk 2kk), (rows +8, 2kk), (+0, 2kk + 1), (+8, 2kk + 1), i.e.
      // da[kk][0..3]; lane L gives row L % 8 of matrix L / 8. In the 128-byte swizzle the chunk
      // (2kk + L / 16) % 8 ^ (L % 8) = 2 (kk % 4) ^ (L / 16 ^ L % 8), so the address is
      // a0 ^ ((kk % 4) << 5), plus a 64-column box (BC * 128 bytes) per 4 kk (BR = 128).
      const std::uint32_t a0 = dss + (c * 64 + row_w + (lane & 7) + 8 * ((lane >> 3) & 1)) * 128 +
                               (((lane >> 4) ^ (lane & 7)) << 4);
#pragma unroll
      for (int kk = 0; kk < BR / 16; ++kk)
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                     ::"r"((a0 ^ ((kk & 3) << 5)) + (kk >> 2) * (BC * 128)),
                     "r"(da[kk][0]), "r"(da[kk][1]), "r"(da[kk][2]), "r"(da[kk][3])
                     : "memory");
    }
    wgmma::fence_proxy_async();  // st.shared -> wgmma's reads of dS^T

    // dV += P^T dO, dK += dS^T Q: one group, the last readers of the stage
    pin(acc_dv);
    pin(acc_dk);
    pin_frag(pa);
    pin_frag(da);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk)
      wgmma::wgmma_rs<1>(wgmma::WgmmaN<D>{}, T{}, acc_dv, pa[kk], wgmma::desc128(dos + kk * 16 * 128, BR * 128, 1024), 1);
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk)
      wgmma::wgmma_rs<1>(wgmma::WgmmaN<D>{}, T{}, acc_dk, da[kk], wgmma::desc128(qs + kk * 16 * 128, BR * 128, 1024), 1);
    wgmma::commit();
    if constexpr (ALT_DQ) {
      if ((it & 1) != c) {  // not this consumer's turn: hand over the half of dS^T and go on
        tma::named_bar_arrive(kBarDsTo + (c ^ 1), 256);
        wgmma::wait<0>();
        pin(acc_dv);
        pin(acc_dk);
        pin_frag(pa);
        pin_frag(da);
        tma::mbar_arrive(empty(b, s_));
        continue;
      }
      tma::named_bar_sync(kBarDsTo + c, 256);  // the other half of dS^T is written
      wgmma::wait<0>();  // dV, dK done (P^T, dS^T fragments free before dQ's 64 registers are live)
      pin(acc_dv);
      pin(acc_dk);
      pin_frag(pa);
      pin_frag(da);
      tma::mbar_arrive(empty(b, s_));
      // the same layout as version 6's two 64 x 64 blocks: registers 32.. are columns 64.. of the
      // m64n128 block (d = 128), or the second m64n64 block, query rows 64.. (d = 64)
      float dq[64];
      wgmma::fence();
      if constexpr (D == 128) {
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
          wgmma::wgmma_ss<1, 1>(wgmma::WgmmaN<128>{}, T{}, dq, wgmma::desc128(dss + kk * 16 * 128, BC * 128, 1024),
                                wgmma::desc128(ks + kk * 16 * 128, BC * 128, 1024), kk > 0);
      } else {
        auto& rows0 = *reinterpret_cast<float(*)[32]>(dq);
        auto& rows64 = *reinterpret_cast<float(*)[32]>(dq + 32);
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) {
          wgmma::wgmma_ss<1, 1>(wgmma::WgmmaN<64>{}, T{}, rows0, wgmma::desc128(dss + kk * 16 * 128, BC * 128, 1024),
                                wgmma::desc128(ks + kk * 16 * 128, BC * 128, 1024), kk > 0);
          wgmma::wgmma_ss<1, 1>(wgmma::WgmmaN<64>{}, T{}, rows64,
                                wgmma::desc128(dss + BC * 128 + kk * 16 * 128, BC * 128, 1024),
                                wgmma::desc128(ks + kk * 16 * 128, BC * 128, 1024), kk > 0);
        }
      }
      wgmma::commit();
      wgmma::wait<0>();
      pin(dq);
      // the writer has read the buffer: this consumer's block of two tiles back (a buffer each), or the
      // other consumer's of the tile before (one buffer)
      if (it >= (C::kDQBuffers == 2 ? 2 : 1)) tma::named_bar_sync(kBarDqEmpty + c, kDqBarCount);
      const std::uint32_t stage = b + C::alt_dq_buffer(c) + (threadIdx.x % 128) * 16;
#pragma unroll
      for (int k4 = 0; k4 < 16; ++k4)
        asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(stage + (k4 / 8) * (64 * 64 * 4) + (k4 % 8) * 2048),
                     "f"(dq[4 * k4]), "f"(dq[4 * k4 + 1]), "f"(dq[4 * k4 + 2]), "f"(dq[4 * k4 + 3])
                     : "memory");
      wgmma::fence_proxy_async();
      tma::named_bar_arrive(kBarDqFull + c, kDqBarCount);
      continue;
    }
    tma::named_bar_sync(kBarDs, 256);  // both consumers' halves of dS^T written

    // dQ block = dS K: A = dS^T (stored [key][query]) read transposed, B = K (stored [key][d]) MN-major
    float dq[32];
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk)
      wgmma::wgmma_ss<1, 1>(wgmma::WgmmaN<64>{}, T{}, dq,
                            wgmma::desc128(dss + dq_qb * (BC * 128) + kk * 16 * 128, BC * 128, 1024),
                            wgmma::desc128(ks + dq_cb * (BC * 128) + kk * 16 * 128, BC * 128, 1024), kk > 0);
    wgmma::commit();
    wgmma::wait<1>();  // dV, dK done: Q, dO and the statistics of stage s_ are free
    pin(acc_dv);
    pin(acc_dk);
    pin_frag(pa);
    pin_frag(da);
    tma::mbar_arrive(empty(b, s_));
    wgmma::wait<0>();
    pin(dq);

    if (it > 0) tma::named_bar_sync(kBarDqEmpty + c, kDqBarCount);  // the writer has read the last block
#pragma unroll
    for (int k4 = 0; k4 < 8; ++k4)
      asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(b + C::kOffDQ + dq_stage + k4 * 2048), "f"(dq[4 * k4]),
                   "f"(dq[4 * k4 + 1]), "f"(dq[4 * k4 + 2]), "f"(dq[4 * k4 + 3])
                   : "memory");
    wgmma::fence_proxy_async();  // st.shared -> the bulk reduction's reads
    tma::named_bar_arrive(kBarDqFull + c, kDqBarCount);
  }

  // The consumers meet twice on an mbarrier (phases 0 and 1), not a named barrier: compute-sanitizer's
  // racecheck loses the order of a named barrier here after the turn-taking at dQ (version 7).
  tma::mbar_arrive(epilogue_bar);  // both consumers are done with K (dQ reads all 128 keys) and V
  tma::mbar_wait(epilogue_bar, 0);
  const std::uint32_t ks = base, vs = base + C::kOffV;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = c * 64 + row_w + g + 8 * h;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      st_shared_b32(mma::swizzled<D>(ks, r, j) + 4 * t,
                    mma::pack2<T>(acc_dk[4 * j + 2 * h] * scale, acc_dk[4 * j + 2 * h + 1] * scale));
      st_shared_b32(mma::swizzled<D>(vs, r, j) + 4 * t, mma::pack2<T>(acc_dv[4 * j + 2 * h], acc_dv[4 * j + 2 * h + 1]));
    }
  }
  tma::mbar_arrive(epilogue_bar);  // dK, dV staged
  tma::mbar_wait(epilogue_bar, 1);
  if (acc_mode == 0) {
    advance(static_cast<std::size_t>(kv_head) * n * D, dk, dv);
    store_dkdv<D, BC, 256>(ks, vs, dk, dv, kv0, n, threadIdx.x - 128);
  } else {  // 1: write the fp32 accumulators, 2: add into them
    advance(static_cast<std::size_t>(kv_head) * n * D, dk_acc, dv_acc);
    store_dkdv_f32<D, BC, 256, T>(ks, vs, dk_acc, dv_acc, kv0, n, threadIdx.x - 128, acc_mode == 2);
  }
}

// Version 6's dQ = scale * accumulator: one thread per 16 consecutive floats of a chunk (4 float4
// loads), which are 8 columns of two rows (16w + g and + 8) of one consumer's 64 x 64 block; the
// 8 lanes of a row group take its 8 column chunks, so each row's 128 bytes go out together.
template <class T, int D, int BR>
__global__ void __launch_bounds__(256) bwd_ws_dq_kernel(const float* __restrict__ acc, T* __restrict__ dq, int n,
                                                        int q_tiles, std::size_t groups, float scale) {
  constexpr int kGroupsPerChunk = BR * D / 16;  // 256 per 64 x 64 block
  for (std::size_t x = blockIdx.x * 256ULL + threadIdx.x; x < groups; x += static_cast<std::size_t>(gridDim.x) * 256) {
    const std::size_t chunk = x / kGroupsPerChunk;
    const int in_chunk = static_cast<int>(x % kGroupsPerChunk);
    const int c = in_chunk / 256, y = in_chunk % 256;
    const int k = y % 8, rg = y / 8;  // column chunk; row group 8w + g
    const int w = rg / 8, g = rg % 8;
    const int head = static_cast<int>(chunk / q_tiles), qt = static_cast<int>(chunk % q_tiles);
    const float4* src = reinterpret_cast<const float4*>(acc + chunk * (BR * D) + c * 4096 + (32 * k + rg) * 16);
    float4 a[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) a[u] = src[u];
    const int row0 = qt * BR + (BR == 128 ? 64 * c : 0) + 16 * w + g;
    const int col = (BR == 128 ? 0 : 64 * c) + 8 * k;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h;
      if (row >= n) continue;
      uint4 out;
      out.x = mma::pack2<T>((h ? a[0].z : a[0].x) * scale, (h ? a[0].w : a[0].y) * scale);
      out.y = mma::pack2<T>((h ? a[1].z : a[1].x) * scale, (h ? a[1].w : a[1].y) * scale);
      out.z = mma::pack2<T>((h ? a[2].z : a[2].x) * scale, (h ? a[2].w : a[2].y) * scale);
      out.w = mma::pack2<T>((h ? a[3].z : a[3].x) * scale, (h ? a[3].w : a[3].y) * scale);
      *reinterpret_cast<uint4*>(dq + (static_cast<std::size_t>(head) * n + row) * D + col) = out;
    }
  }
}


// The statistics (D = rowsum(dO * O), lse in log2 units) into the workspace, and its fp32 dQ
// accumulator zeroed when zero_dq. Workspace layout as launch_bwd_with says.
template <class T, int D>
void launch_prep(const T* o, const T* dout, const float* lse, void* workspace, int bh, int n, bool zero_dq,
                 cudaStream_t stream) {
  const int n_pad = static_cast<int>(stat_rows(n));
  float* dq_acc = static_cast<float*>(workspace);
  float* lse2 = dq_acc + static_cast<std::size_t>(bh) * n_pad * D;
  float* dsum = lse2 + static_cast<std::size_t>(bh) * n_pad;
  const long long rows = static_cast<long long>(bh) * n_pad;  // a multiple of 128: whole blocks
  bwd_fast_prep_kernel<T, D><<<static_cast<unsigned>(rows * (D / 8) / 256), 256, 0, stream>>>(
      o, dout, lse, dq_acc, lse2, dsum, n, n_pad, rows, zero_dq);
  CUDA_CHECK_LAUNCH();
}

// Version 6's Q / dO ring depth: 2 (d = 128: 194 KB of shared memory, d = 64: 195 KB); PRODUCTS = 5
// is version 6 with 3 stages, which fits at d = 128 only (226.6 of 227 KB).
template <int PRODUCTS>
constexpr int ws_stages() {
  return PRODUCTS == 5 ? 3 : 2;
}

// PRODUCTS: 0 = all on mma.sync (2026-11-22), 1 = dK / dV on wgmma (version 3), 2 = all on wgmma
// (version 4; NW and DQ_MT unused), 3 = version 4 with Q, dO and statistics through TMA (version 5),
// 4 = warp-specialized, dQ by bulk reductions (version 6; NW and DQ_MT unused), 5 = version 6 with a
// 3-stage Q / dO ring (d = 128 only; an experiment for the bench driver's --variants), 6 = version 6
// with P^T and dS^T cut to bf16's mantissa width (fp16 only; a diagnostic for the driver's --power),
// 7 = version 6 as first written (attn_bwd_ws_kernel PRE_LEAN: more instructions around dS^T; for A/B),
// 8 = version 6 with the consumers taking turns at the whole dQ block (ALT_DQ; version 7).
// Workspace: the fp32 dQ accumulator (bh * n_pad * D floats: [bh][n][D] for PRODUCTS <= 3, one chunk
// per query tile for 4 and 5), then lse2 and D ([bh][n_pad] each).
template <class T, int D, int BR, int BC, int NW, int DQ_MT, int PRODUCTS>
void launch_bwd_with(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse, T* dq, T* dk,
                     T* dv, void* workspace, int bh, int n, bool causal, cudaStream_t stream, const BwdAccumulate& acc) {
  if constexpr (PRODUCTS < 4)
    if (acc.mode != 0 || !acc.zero_dq || !acc.convert_dq)
      throw std::invalid_argument("attention_backward_fast: fp32 accumulation needs version 6 or 7");
  const int n_pad = static_cast<int>(stat_rows(n));
  const std::size_t elems = static_cast<std::size_t>(bh) * n * D;
  float* dq_acc = static_cast<float*>(workspace);
  float* lse2 = dq_acc + static_cast<std::size_t>(bh) * n_pad * D;
  float* dsum = lse2 + static_cast<std::size_t>(bh) * n_pad;
  const float scale = 1.f / std::sqrt(static_cast<float>(D));

  launch_prep<T, D>(o, dout, lse, workspace, bh, n, acc.zero_dq, stream);

  const int group = bwd_mma_heads_per_group(n, D, static_cast<int>(sizeof(T)), bh);
  const long long grid = static_cast<long long>(bh) * ((n + BC - 1) / BC);
  if (grid > 0x7fffffffLL) throw std::invalid_argument("attention_backward_fast: too many blocks");
  static std::uint64_t smem_set = 0;  // one per instantiation, a bit per device
  if constexpr (PRODUCTS >= 4) {
    using C = WsBwdConfig<D, BR, BC, ws_stages<PRODUCTS>(), PRODUCTS == 8>;
    auto kernel = attn_bwd_ws_kernel<T, D, BR, BC, ws_stages<PRODUCTS>(), PRODUCTS == 6, PRODUCTS == 7, PRODUCTS == 8>;
    if (first_launch_on_this_device(smem_set))
      CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem));
    const CUtensorMap map_q = tma::head_tensor_map(q, bh, n, D, BR), map_do = tma::head_tensor_map(dout, bh, n, D, BR),
                      map_k = tma::head_tensor_map(k, bh, n, D, BC), map_v = tma::head_tensor_map(v, bh, n, D, BC);
    record_occupancy(reinterpret_cast<const void*>(kernel), 384, C::kSmem);
    kernel<<<static_cast<unsigned>(grid), 384, C::kSmem, stream>>>(lse2, dsum, dq_acc, dk, dv, acc.dk, acc.dv, acc.mode,
                                                                   n, n_pad, bh, group, causal, scale, scale * kLog2e,
                                                                   map_q, map_do, map_k, map_v, BwdRingStep{});
    CUDA_CHECK_LAUNCH();
    if (!acc.convert_dq) return;
    const int q_tiles = (n + BR - 1) / BR;
    const std::size_t groups = static_cast<std::size_t>(bh) * q_tiles * (BR * D / 16);
    const std::size_t blocks = std::min<std::size_t>((groups + 255) / 256, 132 * 16);
    bwd_ws_dq_kernel<T, D, BR><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(dq_acc, dq, n, q_tiles, groups, scale);
    CUDA_CHECK_LAUNCH();
    return;
  } else if constexpr (PRODUCTS >= 2) {
    constexpr bool kTmaLoads = PRODUCTS == 3;
    auto kernel = attn_bwd_wgmma_kernel<T, D, BR, BC, kTmaLoads>;
    constexpr int smem = WgBwdConfig<D, BR, BC>::kSmem;
    if (first_launch_on_this_device(smem_set))
      CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUtensorMap map_q{}, map_do{};
    if constexpr (kTmaLoads) {
      map_q = tma::head_tensor_map(q, bh, n, D, BR);
      map_do = tma::head_tensor_map(dout, bh, n, D, BR);
    }
    record_occupancy(reinterpret_cast<const void*>(kernel), 256, smem);
    kernel<<<static_cast<unsigned>(grid), 256, smem, stream>>>(q, k, v, dout, lse2, dsum, dq_acc, dk, dv, n, n_pad, bh,
                                                               group, causal, scale, scale * kLog2e, map_q, map_do);
  } else {
    auto kernel = attn_bwd_fast_kernel<T, D, BR, BC, NW, DQ_MT, PRODUCTS == 1>;
    constexpr int smem = BwdConfig<D, BR, BC, NW, DQ_MT>::kSmem + (PRODUCTS == 1 ? 1024 : 0);
    if (first_launch_on_this_device(smem_set))
      CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    record_occupancy(reinterpret_cast<const void*>(kernel), NW * 32, smem);
    kernel<<<static_cast<unsigned>(grid), NW * 32, smem, stream>>>(q, k, v, dout, lse2, dsum, dq_acc, dk, dv, n, n_pad,
                                                                   bh, group, causal, scale, scale * kLog2e);
  }
  if constexpr (PRODUCTS <= 3) {  // version 6 converts its own accumulator layout above
    CUDA_CHECK_LAUNCH();
    const std::size_t chunks = elems / 8;
    const std::size_t blocks = std::min<std::size_t>((chunks + 255) / 256, 132 * 16);
    bwd_fast_dq_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(dq_acc, dq, chunks, scale);
    CUDA_CHECK_LAUNCH();
  }
}

// The plain launch (T outputs), the form the standalone bench's variant tables point at. Not
// inlined: the bench links against the instantiations the launcher below makes.
template <class T, int D, int BR, int BC, int NW, int DQ_MT, int PRODUCTS>
__attribute__((noinline)) void launch_bwd(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse, T* dq, T* dk, T* dv,
                void* workspace, int bh, int n, bool causal, cudaStream_t stream) {
  launch_bwd_with<T, D, BR, BC, NW, DQ_MT, PRODUCTS>(q, k, v, o, dout, lse, dq, dk, dv, workspace, bh, n, causal, stream,
                                                     BwdAccumulate{});
}

// Whether a key tile may walk both query chunks of a ring step in one launch: while one head's
// Q, dO and dQ accumulator of both chunks stay in L2 (under 3/4 of it) the block rereads them
// from L2. Beyond that they stream from HBM: 2 x 32768 rows at d = 128 (67 MB a head) ran 8 %
// slower than a launch per chunk on an H200 (60 MB of L2), 2 x 16384 rows (34 MB) 1-4 % faster
// (kernels/RESULTS.md, issue 33, 2026-11-27).
inline bool ring_runs_fit_l2(const BwdRingStep& ring, int n, int d, std::size_t elem_bytes) {
  if (ring.max_runs() < 2) return true;
  // FLASHSIM_RING_BWD_SPLIT (tests, A/B runs): 1 a launch per query chunk, 0 one launch, else by size
  if (const char* env = std::getenv("FLASHSIM_RING_BWD_SPLIT")) {
    if (std::strcmp(env, "1") == 0) return false;
    if (std::strcmp(env, "0") == 0) return true;
  }
  int dev = 0, l2 = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const double head_bytes = 2.0 * n * d * (2.0 * static_cast<double>(elem_bytes) + 4.0);
  return head_bytes <= 0.75 * l2;
}

// Version 7 over one ring step: one block per key tile of every key chunk some query chunk sees
// (ring's slots), walking those query chunks' tiles; dK / dV written (acc_mode 1) or added (2) to
// the fp32 accumulators. The statistics and the dQ accumulator are the ring's, prepared once
// (launch_prep).
template <class T, int D, int BR>
void launch_bwd_ring_step(const T* q, const T* k, const T* v, const T* dout, float* dk_acc, float* dv_acc,
                          void* workspace, int chunks, int n, const BwdRingStep& ring, int acc_mode,
                          cudaStream_t stream) {
  constexpr int BC = 128, STAGES = ws_stages<8>();
  using C = WsBwdConfig<D, BR, BC, STAGES, true>;
  auto kernel = attn_bwd_ws_kernel<T, D, BR, BC, STAGES, false, false, true, true>;
  const int bh = chunks * ring.heads, n_pad = static_cast<int>(stat_rows(n));
  float* dq_acc = static_cast<float*>(workspace);
  float* lse2 = dq_acc + static_cast<std::size_t>(bh) * n_pad * D;
  float* dsum = lse2 + static_cast<std::size_t>(bh) * n_pad;
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  bool any_masked = false;
  for (int a = 0; a < ring.slots; ++a)
    for (int r = 0; r < ring.runs[a]; ++r) any_masked = any_masked || ring.masked[a][r];
  // a key block reads the Q and dO of every query chunk it sees: their bytes set the L2 groups
  const int group = bwd_mma_heads_per_group(static_cast<std::int64_t>(n) * ring.max_runs(), D, static_cast<int>(sizeof(T)),
                                            ring.slots * ring.heads);
  const long long grid = static_cast<long long>(ring.slots) * ring.heads * ((n + BC - 1) / BC);
  if (grid > 0x7fffffffLL) throw std::invalid_argument("attention_backward_fast_ring_step: too many blocks");
  static std::uint64_t smem_set = 0;
  if (first_launch_on_this_device(smem_set))
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem));
  const CUtensorMap map_q = tma::head_tensor_map(q, bh, n, D, BR), map_do = tma::head_tensor_map(dout, bh, n, D, BR),
                    map_k = tma::head_tensor_map(k, bh, n, D, BC), map_v = tma::head_tensor_map(v, bh, n, D, BC);
  record_occupancy(reinterpret_cast<const void*>(kernel), 384, C::kSmem);
  // causal (the launch order's): the long key tiles of a diagonal first, as in the plain launch
  kernel<<<static_cast<unsigned>(grid), 384, C::kSmem, stream>>>(lse2, dsum, dq_acc, nullptr, nullptr, dk_acc, dv_acc,
                                                                 acc_mode,
                                                                 n, n_pad, ring.slots * ring.heads, group, any_masked, scale,
                                                                 scale * kLog2e, map_q, map_do, map_k, map_v, ring);
  CUDA_CHECK_LAUNCH();
}

// The launchers' kernel for head dimension d and a version: launch(Tiles<D, BR, PRODUCTS>{}), with
// 128 keys per block and 128 (d = 64) or 64 (d = 128) queries per step, chosen by measurement on an
// H100 (kernels/RESULTS.md); version 7 is PRODUCTS 8, 6 is 4, 5 is 3.
template <int D_, int BR_, int PRODUCTS_>
struct Tiles {
  static constexpr int D = D_, BR = BR_, PRODUCTS = PRODUCTS_;
};
template <class Launch>
void for_version(int d, int version, Launch launch) {
  if (d == 64) {
    if (version == 7) launch(Tiles<64, 128, 8>{});
    else if (version == 6) launch(Tiles<64, 128, 4>{});
    else launch(Tiles<64, 128, 3>{});
  } else {
    if (version == 7) launch(Tiles<128, 64, 8>{});
    else if (version == 6) launch(Tiles<128, 64, 4>{});
    else launch(Tiles<128, 64, 3>{});
  }
}

// The version attention_backward_fast runs: 7, or 6 / 5 when FLASHSIM_BWD_VERSION says so (read
// once; for A/B runs of the same binary).
int selected_version() {
  static const int version = [] {
    const char* env = std::getenv("FLASHSIM_BWD_VERSION");
    const long v = env != nullptr ? std::strtol(env, nullptr, 10) : 7;
    return v == 5 || v == 6 ? static_cast<int>(v) : 7;
  }();
  return version;
}

}  // namespace bwd_fast

std::size_t attention_backward_fast_workspace_bytes(int bh, int n, int d) {
  if (bh < 1 || n < 1 || d < 1) throw std::invalid_argument("attention_backward_fast_workspace_bytes: need bh, n, d >= 1");
  // the dQ accumulator with its rows padded like the statistics (version 6 keeps whole query tiles)
  return (static_cast<std::size_t>(bh) * bwd_fast::stat_rows(n) * d + 2 * static_cast<std::size_t>(bh) * bwd_fast::stat_rows(n)) *
         sizeof(float);
}

template <class T>
void attention_backward_fast(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse, T* dq,
                             T* dk, T* dv, void* workspace, int bh, int n, int d, bool causal, cudaStream_t stream) {
  if (bh < 1 || n < 1) throw std::invalid_argument("attention_backward_fast: need bh >= 1 and n >= 1");
  for (const void* p : {static_cast<const void*>(q), static_cast<const void*>(k), static_cast<const void*>(v),
                        static_cast<const void*>(o), static_cast<const void*>(dout), static_cast<const void*>(dq),
                        static_cast<const void*>(dk), static_cast<const void*>(dv), static_cast<const void*>(workspace)})
    if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
      throw std::invalid_argument("attention_backward_fast: tensors and workspace must be non-null and 16-byte aligned");
  if (lse == nullptr) throw std::invalid_argument("attention_backward_fast: lse is null");
  if (d != 64 && d != 128) throw std::invalid_argument("attention_backward_fast: head dimension must be 64 or 128");
  // version 7 unless FLASHSIM_BWD_VERSION selects 6 or 5
  bwd_fast::for_version(d, bwd_fast::selected_version(), [&](auto t) {
    using K = decltype(t);
    bwd_fast::launch_bwd<T, K::D, K::BR, 128, 8, 2, K::PRODUCTS>(q, k, v, o, dout, lse, dq, dk, dv, workspace, bh, n,
                                                                  causal, stream);
  });
}

template void attention_backward_fast<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                     const __nv_bfloat16*, const __nv_bfloat16*,
                                                     const __nv_bfloat16*, const float*, __nv_bfloat16*,
                                                     __nv_bfloat16*, __nv_bfloat16*, void*, int, int, int, bool,
                                                     cudaStream_t);
template void attention_backward_fast<__half>(const __half*, const __half*, const __half*, const __half*,
                                              const __half*, const float*, __half*, __half*, __half*, void*, int, int,
                                              int, bool, cudaStream_t);

template <class T>
void attention_backward_fast_accumulate(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse,
                                        float* dk_acc, float* dv_acc, bool assign_dkv, void* workspace, bool first_dq,
                                        int bh, int n, int d, bool causal, cudaStream_t stream) {
  if (bh < 1 || n < 1) throw std::invalid_argument("attention_backward_fast_accumulate: need bh >= 1 and n >= 1");
  for (const void* p : {static_cast<const void*>(q), static_cast<const void*>(k), static_cast<const void*>(v),
                        static_cast<const void*>(o), static_cast<const void*>(dout), static_cast<const void*>(dk_acc),
                        static_cast<const void*>(dv_acc), static_cast<const void*>(workspace)})
    if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
      throw std::invalid_argument("attention_backward_fast_accumulate: tensors and workspace must be non-null and 16-byte aligned");
  if (lse == nullptr) throw std::invalid_argument("attention_backward_fast_accumulate: lse is null");
  if (d != 64 && d != 128) throw std::invalid_argument("attention_backward_fast_accumulate: head dimension must be 64 or 128");
  if (bwd_fast::selected_version() < 6)
    throw std::invalid_argument("attention_backward_fast_accumulate: needs version 6 or 7 (FLASHSIM_BWD_VERSION=5 is set)");
  const bwd_fast::BwdAccumulate acc{dk_acc, dv_acc, assign_dkv ? 1 : 2, first_dq, false};
  T* none = nullptr;
  bwd_fast::for_version(d, bwd_fast::selected_version(), [&](auto t) {
    using K = decltype(t);
    bwd_fast::launch_bwd_with<T, K::D, K::BR, 128, 8, 2, K::PRODUCTS>(q, k, v, o, dout, lse, none, none, none, workspace,
                                                                       bh, n, causal, stream, acc);
  });
}

template <class T>
void attention_backward_fast_finish_dq(void* workspace, T* dq, int bh, int n, int d, cudaStream_t stream) {
  if (bh < 1 || n < 1 || workspace == nullptr || dq == nullptr || (d != 64 && d != 128))
    throw std::invalid_argument("attention_backward_fast_finish_dq: need bh, n >= 1, d = 64 or 128 and buffers");
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  auto convert = [&](auto kernel, int br) {
    const int q_tiles = (n + br - 1) / br;
    const std::size_t groups = static_cast<std::size_t>(bh) * q_tiles * (br * d / 16);
    const std::size_t blocks = std::min<std::size_t>((groups + 255) / 256, 132 * 16);
    kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(static_cast<const float*>(workspace), dq, n, q_tiles,
                                                              groups, scale);
    CUDA_CHECK_LAUNCH();
  };
  if (d == 64) convert(bwd_fast::bwd_ws_dq_kernel<T, 64, 128>, 128);
  else convert(bwd_fast::bwd_ws_dq_kernel<T, 128, 64>, 64);
}

template <class T>
void attention_backward_fast_ring_prepare(const T* o, const T* dout, const float* lse, void* workspace, int bh, int n,
                                          int d, cudaStream_t stream) {
  if (bh < 1 || n < 1 || o == nullptr || dout == nullptr || lse == nullptr || workspace == nullptr)
    throw std::invalid_argument("attention_backward_fast_ring_prepare: need bh, n >= 1 and buffers");
  if (d == 64) bwd_fast::launch_prep<T, 64>(o, dout, lse, workspace, bh, n, true, stream);
  else if (d == 128) bwd_fast::launch_prep<T, 128>(o, dout, lse, workspace, bh, n, true, stream);
  else throw std::invalid_argument("attention_backward_fast_ring_prepare: head dimension must be 64 or 128");
}

template <class T>
void attention_backward_fast_ring_step(const T* q, const T* k, const T* v, const T* dout, float* dk_acc,
                                       float* dv_acc, void* workspace, int heads, int n, int d, int chunks, int kinds,
                                       cudaStream_t stream) {
  const char* what = "attention_backward_fast_ring_step";
  if (heads < 1 || n < 1) throw std::invalid_argument(std::string(what) + ": need heads >= 1 and n >= 1");
  if (chunks != 1 && chunks != 2) throw std::invalid_argument(std::string(what) + ": chunks must be 1 or 2");
  if (d != 64 && d != 128) throw std::invalid_argument(std::string(what) + ": head dimension must be 64 or 128");
  for (const void* p : {static_cast<const void*>(q), static_cast<const void*>(k), static_cast<const void*>(v),
                        static_cast<const void*>(dout), static_cast<const void*>(dk_acc),
                        static_cast<const void*>(dv_acc), static_cast<const void*>(workspace)})
    if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
      throw std::invalid_argument(std::string(what) + ": tensors and workspace must be non-null and 16-byte aligned");
  if (bwd_fast::selected_version() != 7)
    throw std::invalid_argument(std::string(what) + ": needs version 7 (FLASHSIM_BWD_VERSION selects another)");
  if (kinds < 0 || kinds >= (1 << (2 * (2 * (chunks - 1) + chunks))))
    throw std::invalid_argument(std::string(what) + ": kinds has bits past the chunks' pairs");
  bwd_fast::BwdRingStep ring;
  ring.heads = heads;
  const std::size_t chunk = static_cast<std::size_t>(heads) * n * d;
  for (int j = 0; j < chunks; ++j) {
    int runs = 0;
    for (int i = 0; i < chunks; ++i) {
      const int code = (kinds >> (2 * (2 * i + j))) & 3;
      if (code == 3) throw std::invalid_argument(std::string(what) + ": a pair's kind must be 0, 1 or 2");
      if (code == 0) continue;
      ring.q_chunk[ring.slots][runs] = i;
      ring.masked[ring.slots][runs] = code == 2;
      ++runs;
    }
    if (runs == 0) {  // no query sees this key chunk: its gradients are zero
      CUDA_CHECK(cudaMemsetAsync(dk_acc + j * chunk, 0, chunk * sizeof(float), stream));
      CUDA_CHECK(cudaMemsetAsync(dv_acc + j * chunk, 0, chunk * sizeof(float), stream));
      continue;
    }
    ring.kv_chunk[ring.slots] = j;
    ring.runs[ring.slots] = runs;
    ++ring.slots;
  }
  if (ring.slots == 0) return;
  auto launch = [&](const bwd_fast::BwdRingStep& r, int acc_mode) {
    if (d == 64)
      bwd_fast::launch_bwd_ring_step<T, 64, 128>(q, k, v, dout, dk_acc, dv_acc, workspace, chunks, n, r, acc_mode,
                                                 stream);
    else
      bwd_fast::launch_bwd_ring_step<T, 128, 64>(q, k, v, dout, dk_acc, dv_acc, workspace, chunks, n, r, acc_mode,
                                                 stream);
  };
  if (!bwd_fast::ring_runs_fit_l2(ring, n, d, sizeof(T))) {
    // a launch per query chunk: every slot's first run writes dK / dV, the second runs add to them
    bwd_fast::BwdRingStep first = ring, second = ring;
    second.slots = 0;
    for (int a = 0; a < ring.slots; ++a) {
      first.runs[a] = 1;
      if (ring.runs[a] < 2) continue;
      second.kv_chunk[second.slots] = ring.kv_chunk[a];
      second.runs[second.slots] = 1;
      second.q_chunk[second.slots][0] = ring.q_chunk[a][1];
      second.masked[second.slots][0] = ring.masked[a][1];
      ++second.slots;
    }
    launch(first, 1);
    launch(second, 2);
    return;
  }
  launch(ring, 1);
}

#define FLASHSIM_BWD_ACCUMULATE(T)                                                                                    \
  template void attention_backward_fast_accumulate<T>(const T*, const T*, const T*, const T*, const T*, const float*, \
                                                      float*, float*, bool, void*, bool, int, int, int, bool,          \
                                                      cudaStream_t);                                                   \
  template void attention_backward_fast_finish_dq<T>(void*, T*, int, int, int, cudaStream_t);                      \
  template void attention_backward_fast_ring_prepare<T>(const T*, const T*, const float*, void*, int, int, int,      \
                                                        cudaStream_t);                                               \
  template void attention_backward_fast_ring_step<T>(const T*, const T*, const T*, const T*, float*, float*, void*, \
                                                     int, int, int, int, int, cudaStream_t);
FLASHSIM_BWD_ACCUMULATE(__nv_bfloat16)
FLASHSIM_BWD_ACCUMULATE(__half)
#undef FLASHSIM_BWD_ACCUMULATE

}  // namespace flashsim::gpu

#ifdef FLASHSIM_ATTN_BWD_FAST_ONLY
// Other tile shapes, only in the standalone build: the tuning sweep of
// kernels/tools/bench_attention_backward_fast.cu (--variants) times them against the chosen ones.
namespace flashsim::gpu::bwd_fast {
#define FLASHSIM_BWD_VARIANT(T, D, BR, BC, NW, DQ_MT, PRODUCTS)                                                  \
  template void launch_bwd<T, D, BR, BC, NW, DQ_MT, PRODUCTS>(const T*, const T*, const T*, const T*, const T*, const float*, \
                                                        T*, T*, T*, void*, int, int, bool, cudaStream_t);
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 64, 128, 128, 8, 2, 8)  // version 7
FLASHSIM_BWD_VARIANT(__half, 64, 128, 128, 8, 2, 8)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 64, 128, 128, 8, 2, 4)  // version 6
FLASHSIM_BWD_VARIANT(__half, 64, 128, 128, 8, 2, 4)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 128, 64, 128, 8, 2, 4)
FLASHSIM_BWD_VARIANT(__half, 128, 64, 128, 8, 2, 4)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 128, 64, 128, 8, 2, 5)  // version 6 with a 3-stage Q / dO ring
FLASHSIM_BWD_VARIANT(__half, 128, 64, 128, 8, 2, 6)  // diagnostic: P^T, dS^T at bf16's mantissa width
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 128, 64, 128, 8, 2, 7)  // version 6 as first written (PRE_LEAN)
FLASHSIM_BWD_VARIANT(__half, 128, 64, 128, 8, 2, 7)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 64, 128, 128, 8, 2, 7)
FLASHSIM_BWD_VARIANT(__half, 64, 128, 128, 8, 2, 7)
FLASHSIM_BWD_VARIANT(__half, 128, 64, 128, 8, 2, 5)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 64, 128, 128, 8, 2, 3)  // version 5 (the launcher's under FLASHSIM_BWD_VERSION=5)
FLASHSIM_BWD_VARIANT(__half, 64, 128, 128, 8, 2, 3)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 128, 64, 128, 8, 2, 3)
FLASHSIM_BWD_VARIANT(__half, 128, 64, 128, 8, 2, 3)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 64, 128, 128, 8, 2, 0)  // all products on mma.sync
FLASHSIM_BWD_VARIANT(__half, 64, 128, 128, 8, 2, 0)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 128, 64, 128, 8, 2, 0)
FLASHSIM_BWD_VARIANT(__half, 128, 64, 128, 8, 2, 0)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 64, 128, 128, 8, 2, 2)  // version 4: loads through cp.async
FLASHSIM_BWD_VARIANT(__half, 64, 128, 128, 8, 2, 2)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 128, 64, 128, 8, 2, 2)
FLASHSIM_BWD_VARIANT(__half, 128, 64, 128, 8, 2, 2)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 64, 128, 128, 8, 2, 1)  // version 3: dK / dV on wgmma
FLASHSIM_BWD_VARIANT(__half, 64, 128, 128, 8, 2, 1)
FLASHSIM_BWD_VARIANT(__nv_bfloat16, 128, 64, 128, 8, 2, 1)
FLASHSIM_BWD_VARIANT(__half, 128, 64, 128, 8, 2, 1)
#undef FLASHSIM_BWD_VARIANT
}  // namespace flashsim::gpu::bwd_fast
#endif

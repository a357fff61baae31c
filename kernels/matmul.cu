/*
Kernels for matmul C[M,N] = A[M,K] B[K,N] (row-major), fp32 or bf16 inputs, fp32 accumulation
and fp32 C. Same schedules as the tile machine's MatmulSchedule.

Build: part of the CMake build (target `matmul`); run ./matmul [version] [size...]
  e.g. ./matmul 2 matmul:8192x8192x256

version 1 is the inner-product / output-stationary order (MatmulSchedule::Inner): each 256-thread
block owns a 64x64 tile of C in registers (4x4 per thread) and streams 64x16 panels of A and
16x64 panels of B through shared memory over k. C is written once. Tiles bm=bn=64, bk=16.
./matmul 1

version 2 is the outer-product order (MatmulSchedule::Outer): k is the outermost loop, across
launches: launch s adds A[:, 4s:4s+4] B[4s:4s+4, :] to every C tile, so C (fp32) is read from and
written back to HBM at every k-step (the first step only writes). Logical tiles bm=bn=256, bk=4;
a block keeps the 256x4 and 4x256 panels in shared memory and streams its C tile row by row.
./matmul 2

version 3 is the inner-product order again, on Hopper's own path (sm_90a; launcher
matmul_bf16_fast in kernels/fast.h: bf16 A, B and C, fp32 accumulation). A persistent grid of one
block per SM walks 128x256 tiles of C in groups of 16 tile rows (neighbouring blocks share A and B
panels in L2). Each block has three warpgroups: the producer (one thread, 40 registers) streams
128x64 panels of A and 64x256 panels of B into a 4-stage shared-memory ring with TMA
(cp.async.bulk.tensor, 128-byte swizzle, zero fill past the edges) and mbarriers; two consumer
warpgroups (232 registers) each run m64n256k16 wgmma on their 64 rows, A K-major and B read in its
row-major [k][n] layout as an MN-major operand (wgmma's transpose-B flag), keeping one wgmma
group in flight while the next stage arrives. The epilogue rounds the fp32 accumulators (128 a
thread) to bf16 into swizzled 64x64 shared-memory chunks that TMA stores (clipped at the edges of
C) while the consumers already start the next tile; storing straight from registers instead cost
25% at k = 1024. Any m, n, k >= 0: where k or n is not a multiple of 8 (TMA's 16-byte strides) A and
B go through zero-padded copies (rows rounded up to 16 elements) in a workspace (one
pad_operands_kernel launch for both) and C, or a C that is not 16-byte aligned, is stored from the
staging chunks with bounded 2-byte stores instead of TMA (kDirectC), so that no copy of C goes back.
Tensor maps come from cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion (nothing
links libcuda), through a 32-entry cache keyed on pointer, shape and box (bf16_tensor_map).

Tile widths: 256, 192 (m64n192k16, 4 stages of 40 KB) or 128 (m64n128k16, 6 stages of 32 KB);
B and C move in 64-column boxes and chunks for all three. dp_width takes the width with the fewest
waves x per-iteration cost (a 192-wide iteration ~0.78 of a 256-wide one), a narrower one only 5 %
below: 3072^3 (3 waves either way) and 5120x1000x3000 go 192, one-wave grids such as
1000x1000x8192 go 128, 8192^3 and 4096^3 stay 256. B rows that are not whole 32-byte sectors
(n % 16 != 0) make every TMA box row straddle a sector and cost up to 1.44x the time on the H100;
where A has >= 1536 rows and the estimate says the saving beats the copy, B is copied with rows of
round16(n) first (OptPad, only if the workspace has room).

Clusters (v3::Sched, cluster_shape). Where B's rows (as the kernel reads them) are not whole
128-byte lines, the grid runs as clusters of 2 or 4 CTAs on neighbouring tiles, and the CTAs that
share a panel each load a part of it and multicast it to the others (cp.async.bulk.tensor
.multicast::cluster): 2x1 shares B, 2x2 A too (where A's rows are not whole lines either), 1x2 A
alone (only by override). That halves those panels' L2 -> SM traffic. Each consumer warp releases a
stage on the empty barriers of every CTA that fills it. Only data-parallel plans and plain k-splits
take a cluster; FLASHSIM_MATMUL_CLUSTER=1x1|1x2|2x1|2x2 overrides the rule. H100: 5120x1000x3000
0.100 -> 0.071 ms (2x2), 1000x1000x8192 0.059 -> 0.047 ms (2x1); elsewhere clusters lost 1-14 %.

Split-k / stream-k (v3::Sched, MatmulPlan). A grid whose tiles fill at most half the SMs (1000 x
1000 x 8192: 64 tiles of 128x128 on 132 SMs) gets its k loop split: the plan runs s x tiles blocks,
each taking one s-th of one tile's k-iterations (plan_sk with grid = s x tiles). The general form,
reachable only by forcing it, is stream-k with a data-parallel head: the last one to two waves of
tiles have their (tile, k-iteration) pairs cut into equal contiguous ranges, one per block, tiles
before them run whole. A tile shared by several blocks is fixed up in fp32 (sk_fixup): each
consumer warpgroup of each block publishes its 64 x BN partial into a workspace slot and bumps a
per-tile counter; the last to arrive adds all partials in block (= k) order, so the result does
not depend on arrival order and repeats bit for bit, and stores C. No block waits on another. The
launcher clears the counters (one cudaMemsetAsync) and takes the slots from the workspace
(matmul_bf16_fast_workspace_bytes includes them; a workspace too small for them runs the
data-parallel plan). choose_plan estimates each plan's time in k-iterations of a 128x256 tile from
the tile count, the waves on the device's SM count (read from the device) and fixup costs, and
splits only for an estimate 10 % below the data-parallel plan's; grids that fill more than half
the SMs, square shapes among them, keep the plan of before. The constants were fitted by hand to
`bench_matmul_fast --plans` runs during development; recorded measurements (RESULTS.md) are
pending, and `bench_matmul_fast --ab` prints, per shape, split-k off against auto against cuBLAS.
FLASHSIM_MATMUL_SPLITK overrides the plan, read once per process: unset, empty or "auto": the
estimate decides; 0 (or 1): never split; s >= 2: always stream-k on min(SMs, s x tiles) blocks
(s is the k-split of each tile when s x tiles <= SMs), the tile width by the estimate.

Checked and timed against cuBLAS by kernels/tools/bench_matmul_fast.cu (build line in its header):
H100 SXM, 2026-11-22, 8192^3 in 1.59 ms = 693 TFLOP/s, 1.03x cuBLAS's speed.

CPU reference: kernels/reference.cpp matmul_rows (double accumulation), checked on up to 64 rows
spread over C (all rows when M <= 64); tolerance fp32 1e-4, bf16 1e-2 (relative L2 error).
*/

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_util.cuh"
#include "kernels/fast.h"
#include "kernels/mma.cuh"
#include "kernels/reference.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"

namespace flashsim::gpu {

// ----------------------------------------------------------------------------
// GPU kernels

template <class T>
__global__ void __launch_bounds__(256) matmul_inner_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                                           float* __restrict__ c, int m, int n, int k) {
  constexpr int BM = 64, BN = 64, BK = 16;
  __shared__ float as[BK][BM + 4];  // transposed A panel: as[kk][row]
  __shared__ float bs[BK][BN + 4];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int t = threadIdx.x; t < BM * BK; t += blockDim.x) {
      const int r = t / BK, kk = t % BK, gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? to_f(a[static_cast<std::size_t>(gr) * k + gk]) : 0.f;
    }
    for (int t = threadIdx.x; t < BK * BN; t += blockDim.x) {
      const int kk = t / BN, cc = t % BN, gk = k0 + kk, gc = col0 + cc;
      bs[kk][cc] = (gk < k && gc < n) ? to_f(b[static_cast<std::size_t>(gk) * n + gc]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i;
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int cc = col0 + tx + 16 * j;
      if (cc < n) c[static_cast<std::size_t>(r) * n + cc] = acc[i][j];
    }
  }
}

// One k-step of the outer product: C[tile] (+)= A[tile rows, k0:k0+kb] B[k0:k0+kb, tile cols].
template <class T>
__global__ void __launch_bounds__(256) matmul_outer_step_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                                                float* __restrict__ c, int m, int n, int k, int k0,
                                                                int kb, int first) {
  constexpr int BM = 256, BN = 256, BK = 4;
  __shared__ float as[BK][BM];
  __shared__ float bs[BK][BN];
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  for (int t = threadIdx.x; t < BM * BK; t += blockDim.x) {
    const int r = t / BK, kk = t % BK, gr = row0 + r;
    as[kk][r] = (gr < m && kk < kb) ? to_f(a[static_cast<std::size_t>(gr) * k + k0 + kk]) : 0.f;
  }
  for (int t = threadIdx.x; t < BK * BN; t += blockDim.x) {
    const int kk = t / BN, cc = t % BN, gc = col0 + cc;
    bs[kk][cc] = (kk < kb && gc < n) ? to_f(b[static_cast<std::size_t>(k0 + kk) * n + gc]) : 0.f;
  }
  __syncthreads();
  const int col = col0 + threadIdx.x;
  if (col >= n) return;
  const float b0 = bs[0][threadIdx.x], b1 = bs[1][threadIdx.x], b2 = bs[2][threadIdx.x], b3 = bs[3][threadIdx.x];
  const int rows = min(BM, m - row0);
  float* cp = c + static_cast<std::size_t>(row0) * n + col;
  int r = 0;
  for (; r + 8 <= rows; r += 8) {
    float v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = first ? 0.f : cp[static_cast<std::size_t>(r + u) * n];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int rr = r + u;
      v[u] += as[0][rr] * b0 + as[1][rr] * b1 + as[2][rr] * b2 + as[3][rr] * b3;
      cp[static_cast<std::size_t>(rr) * n] = v[u];
    }
  }
  for (; r < rows; ++r) {
    float v = first ? 0.f : cp[static_cast<std::size_t>(r) * n];
    v += as[0][r] * b0 + as[1][r] * b1 + as[2][r] * b2 + as[3][r] * b3;
    cp[static_cast<std::size_t>(r) * n] = v;
  }
}

// ----------------------------------------------------------------------------
// version 3: Hopper tensor cores (sm_90a). PTX wrappers first, then the kernel.

namespace v3 {

constexpr int kBM = 128, kBK = 64;  // block tile rows; kBK * 2 bytes = one 128-byte swizzle row
constexpr int kConsumers = 2;       // warpgroups doing wgmma, 64 rows of the tile each
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kABytes = kBM * kBK * 2;        // 16 KB
constexpr int kBBoxBytes = kBK * 64 * 2;      // one TMA box of B: 64 k-rows x 64 columns, 8 KB
constexpr int kCChunkBytes = 64 * 64 * 2;     // one 64 x 64 bf16 chunk of C on its way out
constexpr int kGroupM = 16;                                // tile rows per raster group (L2 reuse)

// Tile width BN = 256 (the default), 192 or 128 (the plan picks the one whose waves cost least).
template <int BN>
struct Cfg {
  static_assert(BN == 256 || BN == 192 || BN == 128, "m64nBNk16 wrappers exist for these");
  static constexpr int kBN = BN;
  static constexpr int kBBytes = kBK * BN * 2;  // 32, 24 or 16 KB
  static constexpr int kStageBytes = kABytes + kBBytes;
  // as many stages as fit beside the C chunks, at most 6: 4 x 48 KB, 4 x 40 KB or 6 x 32 KB
  static constexpr int kStages = std::min(6, (227 * 1024 - kConsumers * 2 * kCChunkBytes - 1024) / kStageBytes);
  // ring + two chunk buffers per consumer + slack to align everything to 1024 bytes: <= 225 KB of 227
  static constexpr int kSmemBytes = kStages * kStageBytes + kConsumers * 2 * kCChunkBytes + 1024;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory");

};

using mma::smem_addr;

// mbarriers, TMA loads and stores: kernels/tma.cuh (addresses in the shared window)
using tma::bulk_wait_read;
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) { tma::mbar_wait(smem_addr(bar), parity); }

// Barrier over one warpgroup (ids 1, 2; 0 is __syncthreads).
__device__ __forceinline__ void named_barrier(int id) { asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory"); }

// Descriptors, fences, commit / wait and register pins: kernels/wgmma.cuh. Here A is K-major (8-row
// groups 1024 bytes apart, SBO) and B MN-major (LBO = distance between 64-column blocks).
using wgmma::desc128;
using wgmma::reg_fence;

// One m64n256k16 wgmma: d (64x256 fp32, 128 registers a thread) += A (smem, K-major) * B (smem,
// MN-major: tnspB = 1, i.e. B stored row-major [k][n]). scale_d = 0 overwrites d instead.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b,
                                                 int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// The same with n = 128 (64 registers a thread).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b,
                                                 int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// The same with n = 192 (96 registers a thread).
__device__ __forceinline__ void wgmma_m64n192k16(float (&d)[96], std::uint64_t desc_a, std::uint64_t desc_b,
                                                 int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, %96, %97, p, 1, 1, 0, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// Tile t of a persistent block's sequence -> (tile row, tile column), in groups of kGroupM tile rows
// walked column by column, so that the tiles in flight at once share panels of A and B in L2.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn, int group_m = kGroupM) {
  const int per_group = group_m * tiles_n;
  const int first_m = (t / per_group) * group_m;
  const int rows = min(tiles_m - first_m, group_m);
  const int r = t % per_group;
  tm = first_m + r % rows;
  tn = r / rows;
}

// The grid's work (host side: MatmulPlan). Tiles 0 .. dp_tiles-1 are data-parallel: block b takes
// tiles b, b + G, ... whole (G = gridDim.x; dp_tiles is a multiple of G). The sk_tiles tiles after
// them are stream-k: their sk_iters = sk_tiles x nk k-iterations, in tile order, are cut into G
// equal contiguous ranges, block b taking [b I / G, (b+1) I / G). A tile whose iterations fall to
// more than one block is fixed up in fp32: `partials` holds, per block, two 64 x BN slots per
// consumer warpgroup (kind 0: the block's first piece, which starts where its range starts; kind 1:
// its last piece, which starts at a tile's first iteration), and `counters` one int per stream-k
// tile and warpgroup, zero at launch (the launcher clears them).
//
// Clusters (cm x cn CTAs, cm, cn in {1, 2}): the tiles are walked as super tiles of cm x cn tiles
// (stiles_m x stiles_n of them, the grid's edge padded with tiles outside C), one a cluster: tile
// index vt = super tile x cm cn + rank, rank = rm cn + rn owning tile row st_m cm + rm and column
// st_n cn + rn. The CTAs of a row (same rm) share A's 128 x 64 panel: each loads 128 / cn of its rows
// and multicasts them to the others; those of a column share B's 64 x BN panel the same way, 64 / cm
// of its k-rows each. dp_tiles and sk_tiles count tile indices, so multiples of cm cn. With a
// cluster, stream-k is only the plain split: grid = split x sk_tiles, dp_tiles = 0, and CTA
// blockIdx = (super tile x split + part) x cm cn + rank works as block (vt x split + part) of the
// stream-k walk, so that a cluster's CTAs take the same k range of their tiles.
struct Sched {
  int tiles_m, tiles_n, nk;
  int dp_tiles, sk_tiles;
  long long sk_iters;
  float* partials;
  int* counters;
  int cm, cn, stiles_m, stiles_n, split;
};

// Tile index vt -> (tile row, tile column); see Sched.
__device__ __forceinline__ void vtile_coords(const Sched& s, int vt, int& tm, int& tn) {
  const int cs = s.cm * s.cn;
  if (cs == 1) {
    tile_coords(vt, s.tiles_m, s.tiles_n, tm, tn);
    return;
  }
  int stm, stn;
  const int r = vt % cs;
  tile_coords(vt / cs, s.stiles_m, s.stiles_n, stm, stn, kGroupM / s.cm);
  tm = stm * s.cm + r / s.cn;
  tn = stn * s.cn + r % s.cn;
}

// This CTA's block number in the stream-k walk (see Sched): blockIdx.x without a cluster.
__device__ __forceinline__ int walk_block(const Sched& s) {
  const int cs = s.cm * s.cn;
  if (cs == 1 || s.sk_tiles == 0) return blockIdx.x;
  const int c = blockIdx.x / cs, r = blockIdx.x % cs;
  return ((c / s.split) * cs + r) * s.split + c % s.split;
}

__device__ __forceinline__ long long sk_start(const Sched& s, int b) {
  return static_cast<long long>(b) * s.sk_iters / gridDim.x;
}
// The block whose range holds stream-k iteration g: the largest b with sk_start(b) <= g.
__device__ __forceinline__ int sk_block_of(const Sched& s, long long g) {
  return static_cast<int>(((g + 1) * gridDim.x + s.sk_iters - 1) / s.sk_iters - 1);
}

// A block's pieces of work in order: (tile, k-iterations kb0 .. kb1-1); rel is the tile's index
// among the stream-k tiles, -1 for data-parallel ones. The producer and the consumers walk the same
// sequence.
struct UnitIter {
  int t = 0, kb0 = 0, kb1 = 0, rel = -1;
  int dp_next;
  long long g, end;
  __device__ UnitIter(const Sched& s, int vb) : dp_next(blockIdx.x) {
    g = s.sk_tiles > 0 ? sk_start(s, vb) : 0;
    end = s.sk_tiles > 0 ? sk_start(s, vb + 1) : 0;
  }
  __device__ bool next(const Sched& s) {
    if (dp_next < s.dp_tiles) {
      t = dp_next;
      kb0 = 0;
      kb1 = s.nk;
      rel = -1;
      dp_next += gridDim.x;
      return true;
    }
    if (g >= end) return false;
    rel = static_cast<int>(g / s.nk);
    kb0 = static_cast<int>(g - static_cast<long long>(rel) * s.nk);
    kb1 = static_cast<int>(min(static_cast<long long>(s.nk), kb0 + (end - g)));
    t = s.dp_tiles + rel;
    g += kb1 - kb0;
    return true;
  }
};

__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void cp_async16(float4* dst, const float4* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// The address of block b's partial for stream-k tile rel (first iteration t0), at this thread's
// first float4 (a slot is [kVec][128 threads] float4).
template <int BN>
__device__ __forceinline__ float4* sk_slot(const Sched& s, long long t0, int b, int half) {
  const int kind = sk_start(s, b) >= t0 ? 0 : 1;
  return reinterpret_cast<float4*>(s.partials + static_cast<std::size_t>((b * 2 + kind) * 2 + half) * (64 * BN)) +
         threadIdx.x % 128;
}

// acc = the sum, in block order, of the partials of blocks blo..bhi (this block's own in acc). The
// others' partials stream through this warpgroup's two C staging chunks (stage, 16 KB) with
// cp.async, two pieces of 4 float4 a thread in flight; each thread reads back only what it copied
// itself, so no barrier is needed between copy and use. (Streaming them through the idle 192 KB
// ring on a block's last piece instead, 96 KB a warpgroup in flight, measured the same on the H100:
// the reads are not what a split costs.)
constexpr int kRedChunk = 4;  // float4 a thread per piece: 8 KB a warpgroup
constexpr int kRedSlots = 2;  // pieces in flight
static_assert(kRedSlots * kRedChunk * 16 * 128 <= 2 * kCChunkBytes, "sk_reduce's pieces fit a warpgroup's C chunks");
template <int BN>
__device__ __forceinline__ void sk_reduce(float (&acc)[BN / 2], const Sched& s, long long t0, int blo, int bhi,
                                          int half, unsigned char* stage, int self) {
  constexpr int kVec = BN / 8;  // float4 per thread: 64 x BN fp32 over 128 threads
  const int others = bhi - blo;
  float4* buf = reinterpret_cast<float4*>(stage) + threadIdx.x % 128;
  // piece i = (chunk i / others, the (i % others)-th other block) into slot i % kRedSlots
  auto issue = [&](int i) {
    if (i < (kVec / kRedChunk) * others) {
      const int c = i / others, r = i % others, b = blo + r + (blo + r >= self ? 1 : 0);
      const float4* src = sk_slot<BN>(s, t0, b, half) + c * kRedChunk * 128;
#pragma unroll
      for (int j = 0; j < kRedChunk; ++j) cp_async16(buf + ((i % kRedSlots) * kRedChunk + j) * 128, src + j * 128);
    }
    cp_async_commit();  // one group per piece, empty past the end: the group count stays regular
  };
#pragma unroll
  for (int i = 0; i < kRedSlots; ++i) issue(i);
  int piece = 0;
#pragma unroll
  for (int c0 = 0; c0 < kVec; c0 += kRedChunk) {
    float4 sum[kRedChunk];
#pragma unroll
    for (int j = 0; j < kRedChunk; ++j) sum[j] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int b = blo; b <= bhi; ++b) {
      float4 v[kRedChunk];
      if (b == self) {
#pragma unroll
        for (int j = 0; j < kRedChunk; ++j)
          v[j] = make_float4(acc[4 * (c0 + j)], acc[4 * (c0 + j) + 1], acc[4 * (c0 + j) + 2], acc[4 * (c0 + j) + 3]);
      } else {
        cp_async_wait<kRedSlots - 1>();  // piece `piece` has landed
#pragma unroll
        for (int j = 0; j < kRedChunk; ++j) v[j] = buf[((piece % kRedSlots) * kRedChunk + j) * 128];
      }
#pragma unroll
      for (int j = 0; j < kRedChunk; ++j) {
        sum[j].x += v[j].x;
        sum[j].y += v[j].y;
        sum[j].z += v[j].z;
        sum[j].w += v[j].w;
      }
      if (b != self) issue(piece++ + kRedSlots);  // the slot just read gets a later piece
    }
#pragma unroll
    for (int j = 0; j < kRedChunk; ++j) {
      acc[4 * (c0 + j)] = sum[j].x;
      acc[4 * (c0 + j) + 1] = sum[j].y;
      acc[4 * (c0 + j) + 2] = sum[j].z;
      acc[4 * (c0 + j) + 3] = sum[j].w;
    }
  }
  cp_async_wait<0>();
}

// Stream-k fixup of one consumer warpgroup's 64 x BN half of a tile that several blocks share
// (this block computed iterations u.kb0 .. u.kb1-1 of it into acc). The last of the tile's blocks to
// get here reduces: it adds every block's fp32 partial in block order (= k order, so the sum does
// not depend on who arrives last) and returns true with the tile's sum in acc; the others publish
// their partial (st.cg, fence, then an atomic on the tile's counter) and return false. A block that
// finds all the others already counted skips publishing its own. Nobody waits on anybody: no
// deadlock whatever the order in which blocks run.
template <int BN>
__device__ __forceinline__ bool sk_fixup(float (&acc)[BN / 2], const Sched& s, const UnitIter& u, int half,
                                         volatile int* sk_last, unsigned char* cbuf, int vb) {
  constexpr int kVec = BN / 8;  // float4 per thread: 64 x BN fp32 over 128 threads
  const int tid = threadIdx.x % 128;
  const long long t0 = static_cast<long long>(u.rel) * s.nk;
  const int blo = sk_block_of(s, t0), bhi = sk_block_of(s, t0 + s.nk - 1);
  int* counter = s.counters + 2 * u.rel + half;
  if (tid == 0) bulk_wait_read<0>();  // the C stores that read this warpgroup's staging chunks are done
  named_barrier(1 + half);            // ... and everyone has read sk_last from the last fixup
  if (tid == 0) sk_last[half] = ld_acquire_gpu(counter) == bhi - blo;
  named_barrier(1 + half);
  if (!sk_last[half]) {
    float4* mine = sk_slot<BN>(s, t0, vb, half);
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      __stcg(mine + i * 128, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
    __threadfence();
    named_barrier(1 + half);
    if (tid == 0) sk_last[half] = atomicAdd(counter, 1) == bhi - blo;
    named_barrier(1 + half);
    if (!sk_last[half]) return false;
  }
  __threadfence();
  sk_reduce<BN>(acc, s, t0, blo, bhi, half, cbuf + half * 2 * kCChunkBytes, vb);
  return true;
}

// Persistent, warp-specialized: warpgroup 0 (one thread) streams A and B k-panels with TMA into a
// kStages ring; warpgroups 1 and 2 each multiply a 64 x BN half of the 128 x BN tile with wgmma.
// full[s]: the stage's bytes landed (TMA transaction count); empty[s]: all 8 consumer warps are done
// reading it. Every block walks its pieces of work (UnitIter) in the same order in both roles.
// kDirectC: C is stored from the staging buffers with plain bounded 2-byte stores (any n, any
// alignment; c_direct with row stride ldc, n_c columns) instead of TMA through map_c.
// In a cluster (Sched) each stage is filled by the CTAs that share its panels, so empty[s] counts the
// consumer warps of all of them (each warp arrives on the stage's empty barrier in every CTA that
// writes into its shared memory) and full[s] the bytes from all of them; map_a's boxes are 128 / cn
// rows, map_b's 64 / cm k-rows.
template <int BN, bool kDirectC>
__global__ void __launch_bounds__(kThreads, 1)
    matmul_bf16_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                             const __grid_constant__ CUtensorMap map_c, int m, const Sched sched,
                             __nv_bfloat16* __restrict__ c_direct, int n_c, long long ldc) {
  using C = Cfg<BN>;
  constexpr int kBN = C::kBN, kStages = C::kStages, kStageBytes = C::kStageBytes;
  extern __shared__ unsigned char smem_raw[];
  __shared__ alignas(8) std::uint64_t full[kStages], empty[kStages];
  __shared__ int sk_last[kConsumers];
  // 128-byte swizzle repeats every 1024 bytes; wgmma and TMA agree on it only from 1024-aligned bases
  unsigned char* ring = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  auto stage_a = [&](int s) { return ring + s * kStageBytes; };
  auto stage_b = [&](int s) { return ring + s * kStageBytes + kABytes; };
  unsigned char* cbuf = ring + kStages * kStageBytes;  // kConsumers x 2 output chunks

  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
  // cluster: rank = rm cn + rn; peers in A (same rm) and in B (same rn)
  const int cm = sched.cm, cn = sched.cn, cs = cm * cn;
  const unsigned rank = cs > 1 ? tma::cluster_rank() : 0;
  const int rm = rank / cn, rn = rank % cn;
  const std::uint16_t mask_a = static_cast<std::uint16_t>(((1u << cn) - 1) << (rm * cn));
  const std::uint16_t mask_b = static_cast<std::uint16_t>(cm == 2 ? (1u << rn) | (1u << (rn + cn)) : 1u << rn);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      tma::mbar_init(smem_addr(&full[s]), 1);
      tma::mbar_init(smem_addr(&empty[s]), kConsumers * 4 * (1 + (cn > 1) + (cm > 1)));
    }
    tma::mbar_init_fence();
  }
  // the peers' barriers must be initialized before anything lands in or arrives on them
  if (cs > 1)
    tma::cluster_sync();
  else
    __syncthreads();
  const int vb = walk_block(sched);

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      int it = 0;
      UnitIter u(sched, vb);
      while (u.next(sched)) {
        int tm, tn;
        vtile_coords(sched, u.t, tm, tn);
        for (int kb = u.kb0; kb < u.kb1; ++kb, ++it) {
          const int s = it % kStages;
          mbar_wait(&empty[s], ((it / kStages) & 1) ^ 1);
          tma::mbar_arrive_expect_tx(smem_addr(&full[s]), kStageBytes);  // whole boxes count, zero-filled parts too
          if (cn == 1)
            tma::load_2d(smem_addr(stage_a(s)), &map_a, smem_addr(&full[s]), kb * kBK, tm * kBM);
          else  // this CTA's 64 rows of the row's A panel, to both CTAs of the row
            tma::load_2d_multicast(smem_addr(stage_a(s)) + rn * (kABytes / 2), &map_a, smem_addr(&full[s]), kb * kBK,
                                   tm * kBM + rn * (kBM / 2), mask_a);
#pragma unroll
          for (int j = 0; j < kBN / 64; ++j)
            if (cm == 1)
              tma::load_2d(smem_addr(stage_b(s) + j * kBBoxBytes), &map_b, smem_addr(&full[s]), tn * kBN + j * 64,
                           kb * kBK);
            else  // this CTA's 32 k-rows of the column's B box, to both CTAs of the column
              tma::load_2d_multicast(smem_addr(stage_b(s) + j * kBBoxBytes) + rm * (kBBoxBytes / 2), &map_b,
                                     smem_addr(&full[s]), tn * kBN + j * 64, kb * kBK + rm * (kBK / 2), mask_b);
        }
      }
    }
    if (cs > 1) tma::cluster_sync();  // no CTA leaves while a peer may still arrive on its barriers
    return;
  }
  // a consumer warp's release of a stage: on its own empty barrier and on those of the CTAs that fill it
  auto release = [&](int s) {
    tma::mbar_arrive(smem_addr(&empty[s]));
    if (cn > 1) tma::mbar_arrive_cluster(smem_addr(&empty[s]), rank ^ 1u);
    if (cm > 1) tma::mbar_arrive_cluster(smem_addr(&empty[s]), rank ^ static_cast<unsigned>(cn));
  };

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  const int half = wg - 1;                     // which 64 rows of the tile
  const int w = (threadIdx.x % 128) / 32;      // warp within the warpgroup: 16 rows each
  constexpr int kAcc = kBN / 2;  // fp32 accumulators a thread: 64 rows x BN over 128 threads
  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.f;
  int it = 0;
  unsigned chunk = 0;  // C chunks staged so far: buffer chunk % 2 (with BN = 192, 3 a tile, q alone would not alternate)
  UnitIter u(sched, vb);
  while (u.next(sched)) {
    int tm, tn;
    vtile_coords(sched, u.t, tm, tn);
    for (int kb = u.kb0; kb < u.kb1; ++kb, ++it) {
      const int s = it % kStages;
      mbar_wait(&full[s], (it / kStages) & 1);
      const std::uint32_t a0 = smem_addr(stage_a(s)) + half * 64 * 128;
      const std::uint32_t b0 = smem_addr(stage_b(s));
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk)
        if constexpr (BN == 256)
          wgmma_m64n256k16(acc, desc128(a0 + kk * 32, 16, 1024), desc128(b0 + kk * 16 * 128, kBBoxBytes, 1024),
                           kb > u.kb0 || kk > 0);
        else if constexpr (BN == 192)
          wgmma_m64n192k16(acc, desc128(a0 + kk * 32, 16, 1024), desc128(b0 + kk * 16 * 128, kBBoxBytes, 1024),
                           kb > u.kb0 || kk > 0);
        else
          wgmma_m64n128k16(acc, desc128(a0 + kk * 32, 16, 1024), desc128(b0 + kk * 16 * 128, kBBoxBytes, 1024),
                           kb > u.kb0 || kk > 0);
      wgmma::commit();
      // keep this k-step's group in flight; the previous one is done, so its stage can be refilled
      wgmma::wait<1>();
      if (kb > u.kb0 && lane == 0) release((it - 1) % kStages);
    }
    wgmma::wait<0>();
    if (lane == 0) release((it - 1) % kStages);
#pragma unroll
    for (int i = 0; i < kAcc; ++i) reg_fence(acc[i]);

    // a piece of a tile that other blocks share: only the last to finish stores it
    if (u.rel >= 0 && u.kb1 - u.kb0 != sched.nk &&
        !sk_fixup<BN>(acc, sched, u, half, sk_last, cbuf, vb))
      continue;

    // Epilogue: fragment layout of m64nNk16: register 4j + {0,1} holds (row l/4, columns
    // 8j + 2(l%4) + {0,1}) of the warp's 16 rows, 4j + {2,3} the same columns 8 rows lower. Each
    // 64 x 64 chunk goes as bf16 into a 128-byte-swizzled staging buffer (the 16-byte column group j
    // of row r sits at group j ^ (r % 8): the warp's 8 rows hit 8 different bank groups), then one
    // thread stores it with TMA, which drops what lies outside C. Two buffers per warpgroup: the
    // next chunk is written while the previous one is still being read out.
    const int r0 = w * 16 + lane / 4;  // row within the warpgroup's 64
#pragma unroll
    for (int q = 0; q < kBN / 64; ++q, ++chunk) {
      unsigned char* buf = cbuf + (half * 2 + (chunk & 1)) * kCChunkBytes;
      if (!kDirectC && threadIdx.x % 128 == 0) bulk_wait_read<1>();  // the store that last read `buf` is done
      named_barrier(1 + half);
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const int j = 8 * q + jj;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = r0 + 8 * h;
          *reinterpret_cast<__nv_bfloat162*>(buf + r * 128 + ((jj ^ (r % 8)) * 16) + 4 * (lane % 4)) =
              __floats2bfloat162_rn(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
        }
      }
      if constexpr (kDirectC) {
        // each row of the chunk by 64 consecutive threads: 128 contiguous bytes, bounded
        named_barrier(1 + half);
        const int tid = threadIdx.x % 128, cc = tid % 64, row0 = tm * kBM + half * 64;
        const int col = tn * kBN + q * 64 + cc, rows = min(64, m - row0);
        if (col < n_c) {
          unsigned short* dst = reinterpret_cast<unsigned short*>(c_direct) + (row0 + tid / 64) * ldc + col;
          const unsigned char* src = buf + (tid / 64) * 128 + (cc % 8) * 2;
#pragma unroll 4
          for (int r = tid / 64; r < rows; r += 2, dst += 2 * ldc, src += 256)
            *dst = *reinterpret_cast<const unsigned short*>(src + ((cc / 8) ^ (r % 8)) * 16);
        }
      } else {
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // st.shared -> TMA's reads
        named_barrier(1 + half);
        if (threadIdx.x % 128 == 0) {
          // (a cluster's padding tiles lie wholly outside C)
          if (tn * kBN + q * 64 < n_c && tm * kBM + half * 64 < m)
            tma::store_2d(&map_c, smem_addr(buf), tn * kBN + q * 64, tm * kBM + half * 64);
          tma::bulk_commit();
        }
      }
    }
  }
  // shared memory must outlive the stores' reads of it
  if (!kDirectC && threadIdx.x % 128 == 0) tma::bulk_wait<0>();
  if (cs > 1) tma::cluster_sync();
}

// Zero-padded copies for TMA: dst [rows][cols_to] from src [rows][cols] (any alignment), columns
// past cols zero. Each thread writes 8 elements (16 bytes; cols_to is a multiple of 8), reading
// them as one 16-byte load where src's rows are 16-byte aligned (the optional padding to 64
// columns), else element by element. Both operands in one launch.
struct PadJob {
  const unsigned short* src;
  uint4* dst;
  int rows, cols, cols_to;
};

__global__ void __launch_bounds__(256) pad_operands_kernel(const PadJob j0, const PadJob j1) {
  const long long v0 = static_cast<long long>(j0.rows) * (j0.cols_to / 8);
  const long long total = v0 + static_cast<long long>(j1.rows) * (j1.cols_to / 8);
  for (long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; v < total;
       v += static_cast<long long>(gridDim.x) * blockDim.x) {
    const bool first = v < v0;
    const long long u = first ? v : v - v0;
    const unsigned short* src = first ? j0.src : j1.src;
    uint4* dst = first ? j0.dst : j1.dst;
    const int cols = first ? j0.cols : j1.cols, per_row = (first ? j0.cols_to : j1.cols_to) / 8;
    const long long r = u / per_row;
    const int c0 = static_cast<int>(u - r * per_row) * 8;
    if (c0 >= cols) {
      dst[u] = make_uint4(0, 0, 0, 0);
      continue;
    }
    if (c0 + 8 <= cols && cols % 8 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0) {
      dst[u] = *reinterpret_cast<const uint4*>(src + r * cols + c0);
      continue;
    }
    unsigned short e[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = c0 + i < cols ? src[r * cols + c0 + i] : 0;
    dst[u] = make_uint4(e[0] | (unsigned(e[1]) << 16), e[2] | (unsigned(e[3]) << 16), e[4] | (unsigned(e[5]) << 16),
                        e[6] | (unsigned(e[7]) << 16));
  }
}

}  // namespace v3

// ----------------------------------------------------------------------------
// kernel launchers

template <class T>
void matmul_inner(const T* a, const T* b, float* c, int m, int n, int k) {
  dim3 grid((n + 63) / 64, (m + 63) / 64);
  record_occupancy(reinterpret_cast<const void*>(matmul_inner_kernel<T>), 256, 0);
  matmul_inner_kernel<T><<<grid, 256>>>(a, b, c, m, n, k);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void matmul_outer(const T* a, const T* b, float* c, int m, int n, int k) {
  dim3 grid((n + 255) / 256, (m + 255) / 256);
  for (int k0 = 0; k0 < k; k0 += 4) {
    record_occupancy(reinterpret_cast<const void*>(matmul_outer_step_kernel<T>), 256, 0);
    matmul_outer_step_kernel<T><<<grid, 256>>>(a, b, c, m, n, k, k0, std::min(4, k - k0), k0 == 0);
    CUDA_CHECK_LAUNCH();
  }
}


// ----------------------------------------------------------------------------
// version 3 launcher

namespace {

using tma::tensor_map_encoder;

// Row-major bf16 matrix rows x cols as a 2-D tensor map with box_rows x 64 boxes, 128-byte swizzle.
CUtensorMap encode_bf16_tensor_map(const __nv_bfloat16* p, int rows, int cols, int box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 2};  // bytes; the innermost stride is implied
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(p),
                                          dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(r));
  return map;
}

// The same through a small cache: encoding is a host-side driver call, three per matmul, and
// calls that repeat their operands (timing loops, a model's layers step after step) find their maps
// here. A map holds only the address, the sizes and the box, so an entry stays valid when its
// buffer is freed and the address reused.
CUtensorMap bf16_tensor_map(const __nv_bfloat16* p, int rows, int cols, int box_rows) {
  struct Entry {
    const void* p;
    int rows, cols, box_rows;
    CUtensorMap map;
  };
  constexpr int kEntries = 32;
  static std::mutex mu;
  static Entry cache[kEntries];
  static int used = 0, next = 0;
  std::lock_guard<std::mutex> lock(mu);
  for (int i = 0; i < used; ++i) {
    const Entry& e = cache[i];
    if (e.p == p && e.rows == rows && e.cols == cols && e.box_rows == box_rows) return e.map;
  }
  const CUtensorMap map = encode_bf16_tensor_map(p, rows, cols, box_rows);
  cache[next] = Entry{p, rows, cols, box_rows, map};
  next = (next + 1) % kEntries;
  used = std::min(used + 1, kEntries);
  return map;
}

template <int BN, bool kDirectC>
void set_v3_smem_limit() {
  CUDA_CHECK(cudaFuncSetAttribute(v3::matmul_bf16_wgmma_kernel<BN, kDirectC>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, v3::Cfg<BN>::kSmemBytes));
}

// Multiprocessor count of the current device; raises the kernels' shared-memory limit there on
// first use. Cached per device: these driver calls would otherwise sit in every timed call.
int prepare_device_for_v3() {
  static std::mutex mu;
  static std::vector<int> sms_by_device;  // 0: not prepared yet
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<std::size_t>(dev) >= sms_by_device.size()) sms_by_device.resize(dev + 1, 0);
  if (sms_by_device[dev] == 0) {
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    set_v3_smem_limit<256, false>();
    set_v3_smem_limit<256, true>();
    set_v3_smem_limit<192, false>();
    set_v3_smem_limit<192, true>();
    set_v3_smem_limit<128, false>();
    set_v3_smem_limit<128, true>();
    sms_by_device[dev] = sms;
  }
  return sms_by_device[dev];
}

// The same count without touching the kernels or failing: 0 where there is no device (the
// workspace query may run before one is in use).
int current_device_sms() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return sms;
}

}  // namespace

namespace {

// Where a shape breaks TMA's rules (row strides and bases in multiples of 16 bytes), the operand
// goes through a padded copy: A' [m, kp] and B' [k, np] with zero columns past k and n (one
// pad_operands_kernel launch for both). C is then stored by the kernel itself with bounded plain
// stores (direct_c). Rows need no padding: TMA zero-fills loads past the last row. The aligned case
// uses none of this.
//
// Optional padding (OptPad): a row length that is not a multiple of 16 elements (32 bytes) makes
// every 128-byte row of a TMA box straddle a sector boundary. On the H100, B rows of 6000 bytes
// made 4000x3000x2048 run 1.44x as long as 4000x3072x2048 (5120x1000x3000 against 5120x1024x3072:
// the same), while 4096x4000x4096 (rows of 8000 bytes, whole sectors) lost nothing. B gets a copy
// with rows of round16(n) where A has at least kPadMinM rows and the estimated saving, kPadSaving
// of the kernel's time (measured 0.25-0.32), exceeds the copy's cost (4kn bytes at
// kPadCopyBytesPerUs, plus kPadLaunchUs). At m = 1000-1024 (1000x1000x8192, 1024x3000x4096) the
// copy gained in one call and lost in another; from m = 1536 it gained 4-25 % in every one. Not for
// A: padding it cost about what it saved (3000x8192x1000, 5120x1000x3000). Taken only where the
// workspace has room for it (matmul_bf16_fast_workspace_bytes counts it).
struct FastLayout {
  int kp, np;
  bool pad_a, pad_b, direct_c;
  std::size_t off_b, bytes;  // byte offset of B' in the workspace; total
};

struct OptPad {
  bool a = false, b = false;  // A' rows of round16(k), B' rows of round16(n)
};

constexpr int kPadMinM = 1536;
constexpr double kPadSaving = 0.3;
constexpr double kUsPerEstUnit = 0.8;           // an estimate unit (MatmulPlan::est) in microseconds
constexpr double kPadCopyBytesPerUs = 2.5e6;  // the padding kernel's read + write rate
constexpr double kPadLaunchUs = 1.5;          // its launch

// For kernels/tools/bench_matmul_fast.cu: -1 the rule below; else bit 0 pads B, bit 1 pads A
// (where n, k are not multiples of 16). Not part of the library's interface.
std::atomic<int> g_pad_override{-1};

// est: the plan's estimate (< 0: unknown, assume it pays)
OptPad opt_pad(int m, int n, int k, double est) {
  OptPad w;
  const int o = g_pad_override.load(std::memory_order_relaxed);
  const bool pays = m >= kPadMinM && (est < 0 || kPadSaving * est * kUsPerEstUnit >
                                                     4.0 * k * double(n) / kPadCopyBytesPerUs + kPadLaunchUs);
  w.b = n % 16 != 0 && (o >= 0 ? (o & 1) != 0 : pays);
  w.a = k % 16 != 0 && o >= 0 && (o & 2) != 0;
  return w;
}

constexpr std::size_t round256(std::size_t x) { return (x + 255) / 256 * 256; }

// For kernels/tools/bench_matmul_fast.cu: the optional copy's row multiple (16: whole sectors, 64:
// whole lines). Not part of the library's interface.
std::atomic<int> g_pad_round{16};

// Padded rows are rounded up to 16 elements (whole sectors; 8 would do for TMA); the optional copy's
// rows to g_pad_round.
FastLayout fast_layout(int m, int n, int k, bool a_misaligned, bool b_misaligned, bool c_misaligned, OptPad w = {}) {
  FastLayout l{};
  l.pad_a = k % 8 != 0 || a_misaligned || w.a;
  l.pad_b = n % 8 != 0 || b_misaligned || w.b;
  const int ra = w.a && k % 8 == 0 && !a_misaligned ? g_pad_round.load(std::memory_order_relaxed) : 16;
  const int rb = w.b && n % 8 == 0 && !b_misaligned ? g_pad_round.load(std::memory_order_relaxed) : 16;
  l.kp = l.pad_a ? (k + ra - 1) / ra * ra : k;
  l.np = l.pad_b ? (n + rb - 1) / rb * rb : n;
  l.direct_c = n % 8 != 0 || c_misaligned;
  const std::size_t a_bytes = l.pad_a ? round256(std::size_t(m) * l.kp * 2) : 0;
  const std::size_t b_bytes = l.pad_b ? round256(std::size_t(k) * l.np * 2) : 0;
  l.off_b = a_bytes;
  l.bytes = a_bytes + b_bytes;
  return l;
}

bool misaligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 != 0; }

// ----------------------------------------------------------------------------
// The grid's plan: tile width, grid size, and which tiles run data-parallel or stream-k (v3::Sched).
//
// Estimated time in units of one k-iteration (64 deep) of a 128x256 tile on one SM (~0.74 us at
// 8192^3). Constants fitted by hand to `bench_matmul_fast --plans` on one H100 (2026-11-24; the
// header comment says what was measured), for choosing, not predicting:
//   kNarrowIter, kMidIter: a 128x128 / 128x192 tile's iteration over a 128x256 one's (128: a wave
//     of each, 5120x1000x3000; 192: 0.735-0.81 at 8192^3, 3072^3, 3840x2560x1024, 5120x1024x3072);
//   kWidthMargin: a narrower data-parallel tile is taken only for an estimate this much below the
//     wider one's (the ratios above are not exact; 8192^3 is 16 waves of 256-wide tiles, 21 of
//     192-wide ones);
//   kBusyIter: the cost of an iteration when more than half the SMs stream at once / when at most
//     half do (a 2048x512x16384 tile's 256 iterations took 0.61 us each on 32 SMs; split 4 ways
//     on 128 SMs, its 64 took ~1.1 us each); kBusyIterNarrow the same for 128- and 192-wide tiles
//     (there a 2-way split of 128-wide tiles, 0.068 ms, beat the 4-way one of 256-wide, 0.073);
//   kSplitFixed: what any split adds (the counters' memset, publishing partials, the fixup's tail);
//   kPartialRead: each further block's 128x256 fp32 partial (128 KB; half for 128x128 tiles) that
//     a tile's reducing block adds in; 2-way splits beat 3- and 4-way ones on every shape measured.
constexpr double kNarrowIter = 0.72;
constexpr double kMidIter = 0.78;
constexpr double kWidthMargin = 0.95;
constexpr double kBusyIter = 1.4;
constexpr double kBusyIterNarrow = 1.15;
constexpr double kTileEpilogue = 1.0;
constexpr double kSplitFixed = 8.0;
constexpr double kPartialRead = 10.0;
// Auto switches to a split only for an estimate this much below the data-parallel plan's.
constexpr double kSwitchMargin = 0.9;

struct MatmulPlan {
  int bn = 256, grid = 1;
  int tiles_m = 0, tiles_n = 0, nk = 0;
  int dp_tiles = 0, sk_tiles = 0;
  int cm = 1, cn = 1, split = 0;  // cluster shape (v3::Sched); split: the k-split with a cluster
  double est = 0;
  int cluster() const { return cm * cn; }
  long long tiles() const { return static_cast<long long>(tiles_m) * tiles_n; }
  bool stream_k() const { return sk_tiles > 0; }
  // fp32 partials, two slots per block and consumer warpgroup; one counter per tile and warpgroup
  std::size_t partial_bytes() const { return stream_k() ? round256(std::size_t(grid) * 4 * 64 * bn * 4) : 0; }
  std::size_t counter_bytes() const { return stream_k() ? round256(std::size_t(sk_tiles) * 2 * sizeof(int)) : 0; }
  std::size_t workspace_bytes() const { return partial_bytes() + counter_bytes(); }
};

constexpr int kWidths[3] = {256, 192, 128};  // widest first: ties keep the wider tile

double width_cost(int bn) { return bn == 256 ? 1.0 : bn == 192 ? kMidIter : kNarrowIter; }

double iter_cost(int bn, long long grid, int sms) {
  return width_cost(bn) * (2 * grid <= sms ? 1.0 : bn == 256 ? kBusyIter : kBusyIterNarrow);
}

MatmulPlan plan_base(int m, int n, int k, int bn) {
  MatmulPlan p;
  p.bn = bn;
  p.tiles_m = (m + v3::kBM - 1) / v3::kBM;
  p.tiles_n = (n + bn - 1) / bn;
  p.nk = (k + v3::kBK - 1) / v3::kBK;
  return p;
}

// Whole tiles, blocks = min(tiles, SMs).
MatmulPlan plan_dp(int m, int n, int k, int bn, int sms) {
  MatmulPlan p = plan_base(m, n, k, bn);
  const long long tiles = p.tiles();
  p.grid = static_cast<int>(std::min<long long>(tiles, sms));
  p.dp_tiles = static_cast<int>(tiles);
  const long long waves = (tiles + sms - 1) / sms;
  p.est = waves * (p.nk + kTileEpilogue) * iter_cost(bn, p.grid, sms);
  return p;
}

// Stream-k on `grid` blocks: all but the last full wave and the part-wave after it run
// data-parallel, the rest (between one and two waves of tiles) stream-k. With grid = s x tiles
// (<= SMs) that is a plain s-way split of every tile's k range.
MatmulPlan plan_sk(int m, int n, int k, int bn, long long grid, int sms) {
  MatmulPlan p = plan_base(m, n, k, bn);
  const long long tiles = p.tiles();
  grid = std::max<long long>(1, std::min<long long>(grid, tiles * p.nk));  // every block gets an iteration
  p.grid = static_cast<int>(grid);
  const long long dp = std::max<long long>(0, tiles / grid - 1) * grid, sk = tiles - dp;
  p.dp_tiles = static_cast<int>(dp);
  p.sk_tiles = static_cast<int>(sk);
  const long long iters = sk * p.nk;
  const double per_block = static_cast<double>(iters) / grid;
  // blocks sharing a tile: s for an s-way split, else about one more than a block's share spans
  long long contrib;
  if (grid % sk == 0)
    contrib = grid / sk;
  else
    contrib = std::min<long long>(p.nk, static_cast<long long>(std::ceil(p.nk / per_block)) + 1);
  const double fixup = kSplitFixed + (contrib - 1) * kPartialRead * bn / 256.0;
  const double c = iter_cost(bn, grid, sms);
  p.est = static_cast<double>(dp / grid) * (p.nk + kTileEpilogue) * c +
          (std::ceil(per_block) + std::ceil(static_cast<double>(sk) / grid) * kTileEpilogue) * c + fixup;
  return p;
}

// The data-parallel tile width: the fewest waves x width_cost, a narrower width only below
// kWidthMargin x the wider ones' (k-iterations are the same for every width). On the H100:
// 3072^3 (3 waves of 256 or 192) and 1536^3 go 192, 1000x1000x8192 (1 wave each) 128,
// 4000x3000x2048 (3 waves of 256, 4 of 192) and the square shapes stay 256.
// (5120x1000x3000, A rows of 6000 bytes, B padded: `--plans` once timed 256-wide tiles 10 % faster
// than 192-wide ones, but `--ab` and `--pads` timed 192 faster, 0.086 against 0.095 ms.)
int dp_width(int m, int n, int sms) {
  const long long tm = (m + v3::kBM - 1) / v3::kBM;
  int best = 256;
  double best_cost = INFINITY;
  for (int bn : kWidths) {
    const long long waves = (tm * ((n + bn - 1) / bn) + sms - 1) / sms;
    const double cost = waves * width_cost(bn) / (bn == 256 ? 1.0 : kWidthMargin);
    if (cost < best_cost) {
      best = bn;
      best_cost = cost;
    }
  }
  return best;
}

// mode: -1 auto, 0 data-parallel only (width from dp_width), s >= 2 stream-k on min(SMs, s x
// tiles) blocks; force_bn 128 / 192 / 256 fixes the tile width (0: chosen).
//
// Auto considers only s-way splits of every tile (grid = s x tiles <= SMs, so only grids whose
// tiles fill at most half the SMs), against the data-parallel plan. On the H100, stream-k over all
// 132 SMs with ranges that do not line up with the tiles lost to data-parallel on 777x4096x4096
// and 4000x3000x2048 and tied on 5120x1000x3000 and 3072^3; forced s >= 2 still reaches it.
MatmulPlan choose_plan(int m, int n, int k, int sms, int mode, int force_bn) {
  sms = std::max(sms, 1);
  if (m <= 0 || n <= 0 || k <= 0) return plan_base(std::max(m, 0), std::max(n, 0), std::max(k, 0), 256);  // nothing to run
  const MatmulPlan dp = plan_dp(m, n, k, force_bn ? force_bn : dp_width(m, n, sms), sms);
  if (mode == 0) return dp;
  int widths[3], nw = 0;  // no heap: this runs in every call
  if (force_bn)
    widths[nw++] = force_bn;
  else
    for (int bn : kWidths) widths[nw++] = bn;
  MatmulPlan best;
  best.est = INFINITY;
  if (mode > 0) {
    for (int i = 0; i < nw; ++i) {
      const int bn = widths[i];
      const MatmulPlan p = plan_sk(m, n, k, bn, std::min<long long>(sms, mode * plan_base(m, n, k, bn).tiles()), sms);
      if (p.est < best.est) best = p;
    }
    return best;
  }
  for (int i = 0; i < nw; ++i) {
    const int bn = widths[i];
    const MatmulPlan base = plan_base(m, n, k, bn);
    for (long long s = 2; s * base.tiles() <= sms && s <= base.nk; ++s) {
      const MatmulPlan p = plan_sk(m, n, k, bn, s * base.tiles(), sms);
      if (p.est < best.est) best = p;
    }
  }
  return best.est < kSwitchMargin * dp.est ? best : dp;
}

[[maybe_unused]] std::string describe(const MatmulPlan& p) {
  std::ostringstream o;
  if (!p.stream_k())
    o << "dp" << p.bn << " g" << p.grid;
  else
    o << "sk" << p.bn << " g" << p.grid << " dp" << p.dp_tiles << "+sk" << p.sk_tiles;
  if (p.cluster() > 1) o << " c" << p.cm << "x" << p.cn;
  return o.str();
}

// Clusters: the plan's tiles walked in cm x cn super tiles (v3::Sched), A multicast along a
// cluster's rows (cn = 2), B along its columns (cm = 2). Only data-parallel plans and plain
// splits (grid = split x tiles) take one; `clusters` is how many clusters of this size the device
// holds at once (a data-parallel grid has at most that many).
MatmulPlan with_cluster(MatmulPlan p, int cm, int cn, int clusters) {
  const int cs = cm * cn;
  if (cs == 1 || p.tiles() == 0) return p;
  const bool split = p.stream_k() && p.dp_tiles == 0 && p.grid % p.sk_tiles == 0;
  if (p.stream_k() && !split) return p;
  const long long st = static_cast<long long>((p.tiles_m + cm - 1) / cm) * ((p.tiles_n + cn - 1) / cn);
  p.cm = cm;
  p.cn = cn;
  if (split) {
    p.split = p.grid / p.sk_tiles;
    p.sk_tiles = static_cast<int>(st * cs);
    p.grid = p.split * p.sk_tiles;
  } else {
    p.dp_tiles = static_cast<int>(st * cs);
    p.grid = static_cast<int>(std::min<long long>(st, std::max(clusters, 1)) * cs);
  }
  return p;
}

// FLASHSIM_MATMUL_SPLITK: unset, empty or "auto": the plan above (-1); 0 or 1: never stream-k (0);
// s >= 2: always stream-k, min(SMs, s x tiles) blocks. Read once.
int splitk_mode_from_env() {
  static const int mode = [] {
    const char* v = std::getenv("FLASHSIM_MATMUL_SPLITK");
    if (v == nullptr || *v == '\0' || std::string(v) == "auto") return -1;
    char* end = nullptr;
    const long s = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || s < 0 || s > 1024)
      throw std::invalid_argument(std::string("FLASHSIM_MATMUL_SPLITK must be auto or a whole number 0..1024, got '") +
                                  v + "'");
    return s <= 1 ? 0 : static_cast<int>(s);
  }();
  return mode;
}

// For kernels/tools/bench_matmul_fast.cu, which compiles this file into itself to compare plans in
// one process: splitk overrides FLASHSIM_MATMUL_SPLITK (kSplitkFromEnv: the variable decides), bn
// forces the tile width (0: chosen). Not part of the library's interface.
constexpr int kSplitkFromEnv = -2;
std::atomic<int> g_splitk_override{kSplitkFromEnv};
std::atomic<int> g_bn_override{0};

int splitk_mode() {
  const int o = g_splitk_override.load(std::memory_order_relaxed);
  return o == kSplitkFromEnv ? splitk_mode_from_env() : o;
}

// FLASHSIM_MATMUL_CLUSTER: unset, empty or "auto": the rule in cluster_shape; "1x1", "1x2", "2x1",
// "2x2": that cluster shape (cm x cn) where the plan can take one. Encoded as 10 cm + cn, -1 auto.
int cluster_mode_from_env() {
  static const int mode = [] {
    const char* v = std::getenv("FLASHSIM_MATMUL_CLUSTER");
    if (v == nullptr || *v == '\0' || std::string(v) == "auto") return -1;
    const std::string t(v);
    if (t == "1x1") return 11;
    if (t == "1x2") return 12;
    if (t == "2x1") return 21;
    if (t == "2x2") return 22;
    throw std::invalid_argument("FLASHSIM_MATMUL_CLUSTER must be auto, 1x1, 1x2, 2x1 or 2x2, got '" + t + "'");
  }();
  return mode;
}
// For kernels/tools/bench_matmul_fast.cu: kSplitkFromEnv: the variable decides, else as above.
std::atomic<int> g_cluster_override{kSplitkFromEnv};

int cluster_mode() {
  const int o = g_cluster_override.load(std::memory_order_relaxed);
  return o == kSplitkFromEnv ? cluster_mode_from_env() : o;
}

// How many clusters of cs CTAs of the BN-wide kernel the current device runs at once (cached).
int cluster_capacity(int bn, int cs, int sms);

// The cluster shape (10 cm + cn) for plan p; mode as cluster_mode(). ka, nb: the lengths of A's and
// B's rows as the kernel reads them (after any padded copy). Auto, fitted to 17 shapes and checked on
// 4 more on the H100 and the H200 (2026-11-25, RESULTS.md): clusters paid wherever B's rows are not
// whole 128-byte L2 lines (nb % 64 != 0) and the k loop is at least kClusterMinK iterations long.
// Sharing B, 1000 x 1000 x 8192 and 1000 x 3000 x 8192 ran 0.77-0.82x as long; sharing A as well
// where A's rows are not whole lines either, 5120 x 1000 x 3000 0.70-0.77x and 6000 x 1000 x 5000
// 0.92x. Elsewhere 1x2 and 2x1 lost 0-14 % (2x2 up to 85 %): B rows of whole lines (4000 x 3000 x
// 2048 with B copied to 3008 columns, 2560 x 2048 x 3000 whose A rows straddle, the squares), or 16
// iterations (3000 x 1000 x 1000). A data-parallel grid takes 2 x 2 only where its waves do not
// grow (30 such clusters fit the H100 and the H200).
constexpr int kClusterMinK = 32;

int cluster_shape(const MatmulPlan& p, int ka, int nb, int sms, int mode) {
  if (mode >= 0) return mode;
  if (p.nk < kClusterMinK || p.tiles() == 0 || nb % 64 == 0) return 11;
  if (ka % 64 == 0) return 21;
  if (p.stream_k()) return 22;
  const long long st = static_cast<long long>((p.tiles_m + 1) / 2) * ((p.tiles_n + 1) / 2);
  const long long cap = cluster_capacity(p.bn, 4, sms);
  const long long waves1 = (p.tiles() + sms - 1) / sms, waves4 = (st + cap - 1) / cap;
  return waves4 <= waves1 ? 22 : 21;
}

// The plan for m x n x k on a device with `sms` multiprocessors; n and k as the kernel sees them.
MatmulPlan matmul_fast_plan(int m, int n, int k, int sms) {
  // n and k as the kernel sees them without the optional padding; with it the tile counts are the
  // same (every tile width is a multiple of 64)
  const FastLayout l = fast_layout(m, n, k, false, false, false);
  const MatmulPlan p = choose_plan(m, l.np, l.kp, sms, splitk_mode(), g_bn_override.load(std::memory_order_relaxed));
  const FastLayout lw = fast_layout(m, n, k, false, false, false, opt_pad(m, n, k, p.est));  // rows as read
  const int c = cluster_shape(p, lw.kp, lw.np, std::max(sms, 1), cluster_mode());
  if (c == 11) return p;
  return with_cluster(p, c / 10, c % 10, cluster_capacity(p.bn, (c / 10) * (c % 10), sms));
}

void check_shape(int m, int n, int k) {
  if (m < 0 || n < 0 || k < 0) {
    std::ostringstream o;
    o << "matmul_bf16_fast: m, n, k must be non-negative (got " << m << "x" << n << "x" << k << ")";
    throw std::invalid_argument(o.str());
  }
}

template <int BN, bool kDirectC>
void launch_v3(const MatmulPlan& p, const CUtensorMap& map_a, const CUtensorMap& map_b, const CUtensorMap& map_c, int m,
               const v3::Sched& sched, __nv_bfloat16* c, int n, cudaStream_t stream) {
  if (p.cluster() == 1) {
    v3::matmul_bf16_wgmma_kernel<BN, kDirectC><<<p.grid, v3::kThreads, v3::Cfg<BN>::kSmemBytes, stream>>>(
        map_a, map_b, map_c, m, sched, c, n, n);
    return;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(p.grid);
  cfg.blockDim = dim3(v3::kThreads);
  cfg.dynamicSmemBytes = v3::Cfg<BN>::kSmemBytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = p.cluster();
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, v3::matmul_bf16_wgmma_kernel<BN, kDirectC>, map_a, map_b, map_c, m, sched, c, n,
                                static_cast<long long>(n)));
}

template <int BN>
int query_cluster_capacity(int cs) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(cs);
  cfg.blockDim = dim3(v3::kThreads);
  cfg.dynamicSmemBytes = v3::Cfg<BN>::kSmemBytes;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cs;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int n = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, v3::matmul_bf16_wgmma_kernel<BN, false>, &cfg));
  return n;
}

int cluster_capacity(int bn, int cs, int sms) {
  static std::mutex mu;
  static std::vector<std::array<int, 9>> by_device;  // [bn 256/192/128][cs 2/4/other] per device, 0: not asked yet
  int dev = 0;
  if (sms <= 0 || cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::max(1, sms / cs);
  }
  prepare_device_for_v3();  // the kernels' shared-memory limits, which the query needs
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<std::size_t>(dev) >= by_device.size()) by_device.resize(dev + 1, std::array<int, 9>{});
  int& slot = by_device[dev][(bn == 256 ? 0 : bn == 192 ? 1 : 2) * 3 + (cs == 2 ? 0 : cs == 4 ? 1 : 2)];
  if (slot == 0) {
    const int n = bn == 256 ? query_cluster_capacity<256>(cs) : bn == 192 ? query_cluster_capacity<192>(cs)
                                                                           : query_cluster_capacity<128>(cs);
    slot = std::max(1, n);
  }
  return slot;
}

}  // namespace

std::size_t matmul_bf16_fast_workspace_bytes(int m, int n, int k) {
  check_shape(m, n, k);
  // padded copies: the worst case over pointer alignments, so that one size fits any buffers
  if (m == 0 || n == 0 || k == 0) return fast_layout(m, n, k, true, true, true).bytes;
  const int sms = current_device_sms();
  if (sms == 0) return fast_layout(m, n, k, true, true, true, opt_pad(m, n, k, -1)).bytes;  // no device: with the padding
  const MatmulPlan plan = matmul_fast_plan(m, n, k, sms);
  return fast_layout(m, n, k, true, true, true, opt_pad(m, n, k, plan.est)).bytes + plan.workspace_bytes();
}

void matmul_bf16_fast(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int m, int n, int k,
                      void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  check_shape(m, n, k);
  if (m == 0 || n == 0) return;
  if (c == nullptr) throw std::invalid_argument("matmul_bf16_fast: null pointer");
  if (k == 0) {  // empty sum
    CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<std::size_t>(m) * n * sizeof(__nv_bfloat16), stream));
    return;
  }
  if (a == nullptr || b == nullptr) throw std::invalid_argument("matmul_bf16_fast: null pointer");
  const bool ws_ok = workspace != nullptr && !misaligned16(workspace);
  auto fits = [&](std::size_t bytes) { return bytes == 0 || (ws_ok && workspace_bytes >= bytes); };
  const FastLayout needed = fast_layout(m, n, k, misaligned16(a), misaligned16(b), misaligned16(c));
  if (!fits(needed.bytes)) {
    std::ostringstream o;
    o << "matmul_bf16_fast: " << m << "x" << n << "x" << k << " needs a 16-byte aligned workspace of " << needed.bytes
      << " bytes (matmul_bf16_fast_workspace_bytes), got " << workspace_bytes;
    throw std::invalid_argument(o.str());
  }
  const int sms = prepare_device_for_v3();
  MatmulPlan plan = matmul_fast_plan(m, n, k, sms);
  // the optional padding only where it fits
  FastLayout l = fast_layout(m, n, k, misaligned16(a), misaligned16(b), misaligned16(c), opt_pad(m, n, k, plan.est));
  if (!fits(l.bytes)) l = needed;
  // too little workspace for stream-k's partials (a caller that sized it without them): whole tiles
  if (plan.stream_k() && !fits(l.bytes + plan.workspace_bytes())) {
    const FastLayout l8 = fast_layout(m, n, k, false, false, false);
    plan = choose_plan(m, l8.np, l8.kp, sms, 0, g_bn_override.load(std::memory_order_relaxed));
  }

  auto* ws = static_cast<unsigned char*>(workspace);
  const __nv_bfloat16* a_use = a;
  const __nv_bfloat16* b_use = b;
  if (l.pad_a || l.pad_b) {
    v3::PadJob ja{}, jb{};
    if (l.pad_a) {
      ja = v3::PadJob{reinterpret_cast<const unsigned short*>(a), reinterpret_cast<uint4*>(ws), m, k, l.kp};
      a_use = reinterpret_cast<const __nv_bfloat16*>(ws);
    }
    if (l.pad_b) {
      jb = v3::PadJob{reinterpret_cast<const unsigned short*>(b), reinterpret_cast<uint4*>(ws + l.off_b), k, n, l.np};
      b_use = reinterpret_cast<const __nv_bfloat16*>(ws + l.off_b);
    }
    const long long vecs = static_cast<long long>(ja.rows) * (ja.cols_to / 8) + static_cast<long long>(jb.rows) * (jb.cols_to / 8);
    const int blocks = static_cast<int>(std::min<long long>((vecs + 255) / 256, 16LL * sms));
    v3::pad_operands_kernel<<<blocks, 256, 0, stream>>>(ja, jb);
    CUDA_CHECK_LAUNCH();
  }
  const int ka = l.pad_a ? l.kp : k, nb = l.pad_b ? l.np : n;  // n % 8 == 0 unless B is padded

  // B keeps k rows: TMA zero-fills rows k..kp, which meet A's zero columns
  // (a cluster's CTAs load 1 / cn of A's box and 1 / cm of B's each)
  const CUtensorMap map_a = bf16_tensor_map(a_use, m, ka, v3::kBM / plan.cn);  // boxes of 128 rows x 64 k
  const CUtensorMap map_b = bf16_tensor_map(b_use, k, nb, v3::kBK / plan.cm);  // 64 k-rows x 64 columns
  const CUtensorMap map_c = l.direct_c ? CUtensorMap{} : bf16_tensor_map(c, m, n, 64);  // output chunks of 64 x 64

  v3::Sched sched{};
  sched.tiles_m = plan.tiles_m;
  sched.tiles_n = plan.tiles_n;
  sched.nk = plan.nk;
  sched.dp_tiles = plan.dp_tiles;
  sched.sk_tiles = plan.sk_tiles;
  sched.sk_iters = static_cast<long long>(plan.sk_tiles) * plan.nk;
  sched.cm = plan.cm;
  sched.cn = plan.cn;
  sched.stiles_m = (plan.tiles_m + plan.cm - 1) / plan.cm;
  sched.stiles_n = (plan.tiles_n + plan.cn - 1) / plan.cn;
  sched.split = plan.split;
  if (plan.stream_k()) {
    sched.partials = reinterpret_cast<float*>(ws + l.bytes);
    sched.counters = reinterpret_cast<int*>(ws + l.bytes + plan.partial_bytes());
    CUDA_CHECK(cudaMemsetAsync(sched.counters, 0, std::size_t(plan.sk_tiles) * 2 * sizeof(int), stream));
  }
  if (plan.bn == 128)
    l.direct_c ? launch_v3<128, true>(plan, map_a, map_b, map_c, m, sched, c, n, stream)
               : launch_v3<128, false>(plan, map_a, map_b, map_c, m, sched, c, n, stream);
  else if (plan.bn == 192)
    l.direct_c ? launch_v3<192, true>(plan, map_a, map_b, map_c, m, sched, c, n, stream)
               : launch_v3<192, false>(plan, map_a, map_b, map_c, m, sched, c, n, stream);
  else
    l.direct_c ? launch_v3<256, true>(plan, map_a, map_b, map_c, m, sched, c, n, stream)
               : launch_v3<256, false>(plan, map_a, map_b, map_c, m, sched, c, n, stream);
  CUDA_CHECK_LAUNCH();
}

void matmul_bf16_fast(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int m, int n, int k,
                      cudaStream_t stream) {
  check_shape(m, n, k);
  std::size_t bytes = 0;
  if (m > 0 && n > 0 && k > 0) {
    const MatmulPlan plan = matmul_fast_plan(m, n, k, prepare_device_for_v3());
    const FastLayout l = fast_layout(m, n, k, misaligned16(a), misaligned16(b), misaligned16(c), opt_pad(m, n, k, plan.est));
    bytes = l.bytes + plan.workspace_bytes();
  }
  if (bytes == 0) {
    matmul_bf16_fast(a, b, c, m, n, k, nullptr, 0, stream);
    return;
  }
  // stream-ordered, so that the buffer lives exactly as long as this call's work
  void* ws = nullptr;
  CUDA_CHECK(cudaMallocAsync(&ws, bytes, stream));
  try {
    matmul_bf16_fast(a, b, c, m, n, k, ws, bytes, stream);
  } catch (...) {
    cudaFreeAsync(ws, stream);
    throw;
  }
  CUDA_CHECK(cudaFreeAsync(ws, stream));
}

// The per-file driver's workload. kernels/tools/bench_matmul_fast.cu compiles this file on its own
// with FLASHSIM_MATMUL_FAST_ONLY, without the runner and the other ops the workload pulls in.
#ifndef FLASHSIM_MATMUL_FAST_ONLY

// ----------------------------------------------------------------------------
// workload: random inputs, poisoned output, CPU check

namespace {

class MatmulWorkload : public Workload {
 public:
  using Workload::Workload;

  void setup(std::uint64_t seed) override {
    const auto& s = spec_;
    const int e = dtype_bytes(s.dtype);
    ia_ = add_input(static_cast<std::size_t>(s.m * s.k) * e);
    ib_ = add_input(static_cast<std::size_t>(s.k * s.n) * e);
    c_ = DevBuf(static_cast<std::size_t>(s.m * s.n) * 4);
    fill_uniform(in(0, ia_), s.m * s.k, s.dtype, seed, -1.f, 1.f);
    fill_uniform(in(0, ib_), s.k * s.n, s.dtype, seed + 1, -1.f, 1.f);
  }
  void poison_outputs() override { poison(c_); }
  void run(int set) override {
    const auto& s = spec_;
    const bool inner = s.schedule == Schedule::MatmulInner;
    if (s.dtype == Dtype::F32) {
      auto a = static_cast<const float*>(in(set, ia_)), b = static_cast<const float*>(in(set, ib_));
      inner ? matmul_inner(a, b, c_.as<float>(), s.m, s.n, s.k) : matmul_outer(a, b, c_.as<float>(), s.m, s.n, s.k);
    } else {
      auto a = static_cast<const __nv_bfloat16*>(in(set, ia_)), b = static_cast<const __nv_bfloat16*>(in(set, ib_));
      inner ? matmul_inner(a, b, c_.as<float>(), s.m, s.n, s.k) : matmul_outer(a, b, c_.as<float>(), s.m, s.n, s.k);
    }
  }
  double check(std::string* note) override {
    const auto& s = spec_;
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::uint64_t bad = count_nonfinite(c_.get(), s.m * s.n, Dtype::F32);
    auto a = to_host(in(0, ia_), 0, s.m * s.k, s.dtype);
    auto b = to_host(in(0, ib_), 0, s.k * s.n, s.dtype);
    auto rows = ref::pick_indices(s.m, 64);
    std::vector<float> want(rows.size() * s.n), got;
    ref::matmul_rows(a.data(), b.data(), s.n, s.k, rows, want.data());
    for (auto r : rows) {
      auto row = to_host(c_.get(), static_cast<std::size_t>(r * s.n), s.n, Dtype::F32);
      got.insert(got.end(), row.begin(), row.end());
    }
    std::ostringstream o;
    o << rows.size() << " of " << s.m << " rows checked; " << bad << " non-finite outputs";
    if (note) *note = o.str();
    const double err = ref::rel_error(got, want);
    return bad ? INFINITY : err;
  }

 private:
  int ia_ = 0, ib_ = 0;
  DevBuf c_;
};

}  // namespace

std::unique_ptr<Workload> make_matmul(const Spec& s) {
  if (s.schedule == Schedule::MatmulInner && !(s.bm == 64 && s.bn == 64 && s.bk == 16))
    throw std::invalid_argument("matmul-inner is compiled for 64x64x16 tiles");
  if (s.schedule == Schedule::MatmulOuter && !(s.bm == 256 && s.bn == 256 && s.bk == 4))
    throw std::invalid_argument("matmul-outer is compiled for 256x256x4 tiles");
  return std::make_unique<MatmulWorkload>(s);
}

#endif  // FLASHSIM_MATMUL_FAST_ONLY

}  // namespace flashsim::gpu

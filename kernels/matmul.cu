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
25% at k = 1024. Any m, n, k >= 0: where k or n is not a multiple of 8 (TMA's 16-byte strides) A, B
and C go through zero-padded copies in a workspace (launcher comment). Tensor maps come from
cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion (nothing links libcuda).
Grids that would leave much of a last wave of 128x256 tiles empty run 128x128 tiles instead
(m64n128k16, 6 stages; rule in matmul_fast_narrow_tiles).
Checked and timed against cuBLAS by kernels/tools/bench_matmul_fast.cu (build line in its header):
H100 SXM, 2026-11-22, 8192^3 in 1.59 ms = 693 TFLOP/s, 1.03x cuBLAS's speed.

CPU reference: kernels/reference.cpp matmul_rows (double accumulation), checked on up to 64 rows
spread over C (all rows when M <= 64); tolerance fp32 1e-4, bf16 1e-2 (relative L2 error).
*/

#include <algorithm>
#include <cstdint>
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

// Tile width BN = 256 (the default) or 128 (grids that would leave most of a last wave empty).
template <int BN>
struct Cfg {
  static constexpr int kBN = BN;
  static constexpr int kBBytes = kBK * BN * 2;  // 32 or 16 KB
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kStages = BN == 256 ? 4 : 6;  // 4 x 48 KB or 6 x 32 KB
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

// Tile t of a persistent block's sequence -> (tile row, tile column), in groups of kGroupM tile rows
// walked column by column, so that the tiles in flight at once share panels of A and B in L2.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = kGroupM * tiles_n;
  const int first_m = (t / per_group) * kGroupM;
  const int rows = min(tiles_m - first_m, kGroupM);
  const int r = t % per_group;
  tm = first_m + r % rows;
  tn = r / rows;
}

// Persistent, warp-specialized: warpgroup 0 (one thread) streams A and B k-panels with TMA into a
// kStages ring; warpgroups 1 and 2 each multiply a 64 x BN half of the 128 x BN tile with wgmma.
// full[s]: the stage's bytes landed (TMA transaction count); empty[s]: all 8 consumer warps are done
// reading it. Every block walks tiles blockIdx.x, +gridDim.x, ... in the same order in both roles.
template <int BN>
__global__ void __launch_bounds__(kThreads, 1)
    matmul_bf16_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                             const __grid_constant__ CUtensorMap map_c, int m, int n, int k) {
  using C = Cfg<BN>;
  constexpr int kBN = C::kBN, kStages = C::kStages, kStageBytes = C::kStageBytes;
  extern __shared__ unsigned char smem_raw[];
  __shared__ alignas(8) std::uint64_t full[kStages], empty[kStages];
  // 128-byte swizzle repeats every 1024 bytes; wgmma and TMA agree on it only from 1024-aligned bases
  unsigned char* ring = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  auto stage_a = [&](int s) { return ring + s * kStageBytes; };
  auto stage_b = [&](int s) { return ring + s * kStageBytes + kABytes; };
  unsigned char* cbuf = ring + kStages * kStageBytes;  // kConsumers x 2 output chunks

  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      tma::mbar_init(smem_addr(&full[s]), 1);
      tma::mbar_init(smem_addr(&empty[s]), kConsumers * 4);
    }
    tma::mbar_init_fence();
  }
  __syncthreads();

  const int tiles_m = (m + kBM - 1) / kBM, tiles_n = (n + kBN - 1) / kBN, tiles = tiles_m * tiles_n;
  const int nk = (k + kBK - 1) / kBK;

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x != 0) return;
    int it = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      int tm, tn;
      tile_coords(t, tiles_m, tiles_n, tm, tn);
      for (int kb = 0; kb < nk; ++kb, ++it) {
        const int s = it % kStages;
        mbar_wait(&empty[s], ((it / kStages) & 1) ^ 1);
        tma::mbar_arrive_expect_tx(smem_addr(&full[s]), kStageBytes);  // whole boxes count, zero-filled parts too
        tma::load_2d(smem_addr(stage_a(s)), &map_a, smem_addr(&full[s]), kb * kBK, tm * kBM);
#pragma unroll
        for (int j = 0; j < kBN / 64; ++j)
          tma::load_2d(smem_addr(stage_b(s) + j * kBBoxBytes), &map_b, smem_addr(&full[s]), tn * kBN + j * 64, kb * kBK);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  const int half = wg - 1;                     // which 64 rows of the tile
  const int w = (threadIdx.x % 128) / 32;      // warp within the warpgroup: 16 rows each
  constexpr int kAcc = kBN / 2;  // fp32 accumulators a thread: 64 rows x BN over 128 threads
  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.f;
  int it = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    int tm, tn;
    tile_coords(t, tiles_m, tiles_n, tm, tn);
    for (int kb = 0; kb < nk; ++kb, ++it) {
      const int s = it % kStages;
      mbar_wait(&full[s], (it / kStages) & 1);
      const std::uint32_t a0 = smem_addr(stage_a(s)) + half * 64 * 128;
      const std::uint32_t b0 = smem_addr(stage_b(s));
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk)
        if constexpr (BN == 256)
          wgmma_m64n256k16(acc, desc128(a0 + kk * 32, 16, 1024), desc128(b0 + kk * 16 * 128, kBBoxBytes, 1024),
                           kb > 0 || kk > 0);
        else
          wgmma_m64n128k16(acc, desc128(a0 + kk * 32, 16, 1024), desc128(b0 + kk * 16 * 128, kBBoxBytes, 1024),
                           kb > 0 || kk > 0);
      wgmma::commit();
      // keep this k-step's group in flight; the previous one is done, so its stage can be refilled
      wgmma::wait<1>();
      if (kb > 0 && lane == 0) tma::mbar_arrive(smem_addr(&empty[(it - 1) % kStages]));
    }
    wgmma::wait<0>();
    if (lane == 0) tma::mbar_arrive(smem_addr(&empty[(it - 1) % kStages]));
#pragma unroll
    for (int i = 0; i < kAcc; ++i) reg_fence(acc[i]);

    // Epilogue: fragment layout of m64nNk16: register 4j + {0,1} holds (row l/4, columns
    // 8j + 2(l%4) + {0,1}) of the warp's 16 rows, 4j + {2,3} the same columns 8 rows lower. Each
    // 64 x 64 chunk goes as bf16 into a 128-byte-swizzled staging buffer (the 16-byte column group j
    // of row r sits at group j ^ (r % 8): the warp's 8 rows hit 8 different bank groups), then one
    // thread stores it with TMA, which drops what lies outside C. Two buffers per warpgroup: the
    // next chunk is written while the previous one is still being read out.
    const int r0 = w * 16 + lane / 4;  // row within the warpgroup's 64
#pragma unroll
    for (int q = 0; q < kBN / 64; ++q) {
      unsigned char* buf = cbuf + (half * 2 + (q & 1)) * kCChunkBytes;
      if (threadIdx.x % 128 == 0) bulk_wait_read<1>();  // the store that last read `buf` is done
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
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // st.shared -> TMA's reads
      named_barrier(1 + half);
      if (threadIdx.x % 128 == 0) {
        tma::store_2d(&map_c, smem_addr(buf), tn * kBN + q * 64, tm * kBM + half * 64);
        tma::bulk_commit();
      }
    }
  }
  // shared memory must outlive the stores' reads of it
  if (threadIdx.x % 128 == 0) tma::bulk_wait<0>();
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
CUtensorMap bf16_tensor_map(const __nv_bfloat16* p, int rows, int cols, int box_rows) {
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

// Multiprocessor count of the current device; raises the kernel's shared-memory limit there on
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
    CUDA_CHECK(cudaFuncSetAttribute(v3::matmul_bf16_wgmma_kernel<256>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    v3::Cfg<256>::kSmemBytes));
    CUDA_CHECK(cudaFuncSetAttribute(v3::matmul_bf16_wgmma_kernel<128>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    v3::Cfg<128>::kSmemBytes));
    sms_by_device[dev] = sms;
  }
  return sms_by_device[dev];
}

}  // namespace

namespace {

// Where a shape breaks TMA's rules (row strides and bases in multiples of 16 bytes), the operand
// goes through a padded copy: A' [m, kp] and B' [k, np] with zero columns past k and n, and C'
// [m, np] copied back. Rows need no padding: TMA zero-fills loads past the last row and clips
// stores there. The aligned case uses none of this.
struct FastLayout {
  int kp, np;
  bool pad_a, pad_b, pad_c;
  std::size_t off_b, off_c, bytes;  // byte offsets of B' and C' in the workspace; total
};

constexpr std::size_t round256(std::size_t x) { return (x + 255) / 256 * 256; }

FastLayout fast_layout(int m, int n, int k, bool a_misaligned, bool b_misaligned, bool c_misaligned) {
  FastLayout l{};
  l.kp = (k + 7) / 8 * 8;
  l.np = (n + 7) / 8 * 8;
  l.pad_a = k % 8 != 0 || a_misaligned;
  l.pad_b = n % 8 != 0 || b_misaligned;
  l.pad_c = n % 8 != 0 || c_misaligned;
  const std::size_t a_bytes = l.pad_a ? round256(std::size_t(m) * l.kp * 2) : 0;
  const std::size_t b_bytes = l.pad_b ? round256(std::size_t(k) * l.np * 2) : 0;
  const std::size_t c_bytes = l.pad_c ? round256(std::size_t(m) * l.np * 2) : 0;
  l.off_b = a_bytes;
  l.off_c = a_bytes + b_bytes;
  l.bytes = a_bytes + b_bytes + c_bytes;
  return l;
}

bool misaligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 != 0; }

// 128-wide tiles when the persistent grid's waves of them take less time than those of 256-wide
// ones. A wave of 128-wide tiles took 0.72x as long as one of 256-wide tiles on the H100
// (5120x1000x3000: 3 waves 0.120 ms, 2 waves 0.111 ms), hence 3/4: 1000x1000x8192 (1 wave either
// way) goes narrow, 5120x1000x3000 (3 vs 2 waves) stays wide.
bool matmul_fast_narrow_tiles(int m, int n, int sms) {
  const long long tm = (m + v3::kBM - 1) / v3::kBM;
  const long long waves256 = (tm * ((n + 255) / 256) + sms - 1) / sms;
  const long long waves128 = (tm * ((n + 127) / 128) + sms - 1) / sms;
  return 3 * waves128 < 4 * waves256;
}

void check_shape(int m, int n, int k) {
  if (m < 0 || n < 0 || k < 0) {
    std::ostringstream o;
    o << "matmul_bf16_fast: m, n, k must be non-negative (got " << m << "x" << n << "x" << k << ")";
    throw std::invalid_argument(o.str());
  }
}

// Copies rows x cols bf16 from a row-major matrix with `cols` columns into one with `cols_to`
// columns, zeroing the columns past `cols` (values there would turn 0 * garbage into NaN).
void pad_copy(__nv_bfloat16* dst, int cols_to, const __nv_bfloat16* src, int rows, int cols, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpy2DAsync(dst, std::size_t(cols_to) * 2, src, std::size_t(cols) * 2, std::size_t(cols) * 2, rows,
                               cudaMemcpyDeviceToDevice, stream));
  if (cols_to > cols)
    CUDA_CHECK(cudaMemset2DAsync(dst + cols, std::size_t(cols_to) * 2, 0, std::size_t(cols_to - cols) * 2, rows, stream));
}

}  // namespace

std::size_t matmul_bf16_fast_workspace_bytes(int m, int n, int k) {
  check_shape(m, n, k);
  // the worst case over pointer alignments, so that one size fits any buffers
  return fast_layout(m, n, k, true, true, true).bytes;
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
  const FastLayout l = fast_layout(m, n, k, misaligned16(a), misaligned16(b), misaligned16(c));
  if (l.bytes > 0 && (workspace == nullptr || workspace_bytes < l.bytes || misaligned16(workspace))) {
    std::ostringstream o;
    o << "matmul_bf16_fast: " << m << "x" << n << "x" << k << " needs a 16-byte aligned workspace of " << l.bytes
      << " bytes (matmul_bf16_fast_workspace_bytes), got " << workspace_bytes;
    throw std::invalid_argument(o.str());
  }
  auto* ws = static_cast<unsigned char*>(workspace);
  const __nv_bfloat16* a_use = a;
  const __nv_bfloat16* b_use = b;
  __nv_bfloat16* c_use = c;
  if (l.pad_a) {
    auto* ap = reinterpret_cast<__nv_bfloat16*>(ws);
    pad_copy(ap, l.kp, a, m, k, stream);
    a_use = ap;
  }
  if (l.pad_b) {
    auto* bp = reinterpret_cast<__nv_bfloat16*>(ws + l.off_b);
    pad_copy(bp, l.np, b, k, n, stream);
    b_use = bp;
  }
  if (l.pad_c) c_use = reinterpret_cast<__nv_bfloat16*>(ws + l.off_c);
  const int ka = l.pad_a ? l.kp : k, nb = l.pad_b || l.pad_c ? l.np : n;

  // B keeps k rows: TMA zero-fills rows k..kp, which meet A's zero columns
  const CUtensorMap map_a = bf16_tensor_map(a_use, m, ka, v3::kBM);  // boxes of 128 rows x 64 k
  const CUtensorMap map_b = bf16_tensor_map(b_use, k, l.pad_b ? l.np : n, v3::kBK);  // 64 k-rows x 64 columns
  const CUtensorMap map_c = bf16_tensor_map(c_use, m, l.pad_c ? l.np : n, 64);        // output chunks of 64 x 64
  const int sms = prepare_device_for_v3();
  const bool narrow = matmul_fast_narrow_tiles(m, nb, sms);
  const long long tiles = static_cast<long long>((m + v3::kBM - 1) / v3::kBM) * ((nb + (narrow ? 127 : 255)) / (narrow ? 128 : 256));
  const int grid = static_cast<int>(std::min<long long>(tiles, sms));
  if (narrow)
    v3::matmul_bf16_wgmma_kernel<128><<<grid, v3::kThreads, v3::Cfg<128>::kSmemBytes, stream>>>(map_a, map_b, map_c, m, nb, ka);
  else
    v3::matmul_bf16_wgmma_kernel<256><<<grid, v3::kThreads, v3::Cfg<256>::kSmemBytes, stream>>>(map_a, map_b, map_c, m, nb, ka);
  CUDA_CHECK_LAUNCH();
  if (l.pad_c)
    CUDA_CHECK(cudaMemcpy2DAsync(c, std::size_t(n) * 2, c_use, std::size_t(l.np) * 2, std::size_t(n) * 2, m,
                                 cudaMemcpyDeviceToDevice, stream));
}

void matmul_bf16_fast(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int m, int n, int k,
                      cudaStream_t stream) {
  check_shape(m, n, k);
  const FastLayout l = fast_layout(m, n, k, misaligned16(a), misaligned16(b), misaligned16(c));
  if (l.bytes == 0 || m == 0 || n == 0 || k == 0) {
    matmul_bf16_fast(a, b, c, m, n, k, nullptr, 0, stream);
    return;
  }
  // stream-ordered, so that the buffer lives exactly as long as this call's work
  void* ws = nullptr;
  CUDA_CHECK(cudaMallocAsync(&ws, l.bytes, stream));
  try {
    matmul_bf16_fast(a, b, c, m, n, k, ws, l.bytes, stream);
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

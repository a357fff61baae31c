// Shared CUDA helpers for kernels/*.cu: error checks, dtype conversion, block reductions, and
// the tile loader used by the attention kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "kernels/workload.h"

namespace flashsim::gpu {

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
template <class T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Reductions over the 16 lanes of a half-warp (lanes 0-15 or 16-31).
__device__ __forceinline__ float half_max(float v) {
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float half_sum(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide reductions; every thread gets the result. `sh` holds at least 32 floats and
// blockDim.x is a multiple of 32. Contains two __syncthreads().
__device__ __forceinline__ float block_max(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();  // sh may still be read by a previous reduction
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  float r = lane < nw ? sh[lane] : -INFINITY;
  return warp_max(r);
}
__device__ __forceinline__ float block_sum(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  float r = lane < nw ? sh[lane] : 0.f;
  return warp_sum(r);
}

// (m, l) pairs: l is a sum of exp(x - m). Combining two pairs rescales to the larger max.
__device__ __forceinline__ void combine_ml(float& m, float& l, float m2, float l2) {
  const float mm = fmaxf(m, m2);
  if (mm == -INFINITY) return;  // both empty
  l = l * __expf(m - mm) + l2 * __expf(m2 - mm);
  m = mm;
}

__device__ __forceinline__ void block_combine_ml(float& m, float& l, float* sh) {
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), l2 = __shfl_xor_sync(0xffffffffu, l, o);
    combine_ml(m, l, m2, l2);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) {
    sh[warp] = m;
    sh[32 + warp] = l;
  }
  __syncthreads();
  m = lane < nw ? sh[lane] : -INFINITY;
  l = lane < nw ? sh[32 + lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), l2 = __shfl_xor_sync(0xffffffffu, l, o);
    combine_ml(m, l, m2, l2);
  }
}

// Attention tiles: 64 x 64, head dimension 64, 256 threads. Thread (ty = tid / 16, tx = tid % 16)
// owns rows ty*4 .. ty*4+3 and columns tx, tx+16, tx+32, tx+48 of every 64 x 64 tile it computes.
constexpr int kTile = 64;
constexpr int kHead = 64;
constexpr int kLd = 65;  // padded leading dimension of shared-memory tiles
constexpr int kTileFloats = kTile * kLd;

// Loads rows [row0, row0 + 64) of a (n x 64) matrix into a padded float tile; rows >= n become 0.
template <class T>
__device__ __forceinline__ void load_tile(float* dst, const T* src, int row0, int n) {
  for (int t = threadIdx.x; t < kTile * kHead; t += blockDim.x) {
    const int r = t / kHead, c = t % kHead;
    const int g = row0 + r;
    dst[r * kLd + c] = g < n ? to_f(src[static_cast<std::size_t>(g) * kHead + c]) : 0.f;
  }
}

// Products of padded 64 x 64 tiles into a thread's 4 x 4 block (rows ty*4+i, columns tx+16j),
// accumulated over k = 0 .. 63 in order:
//   tile_mma_abt: acc[i][j] += sum_k A[ty*4+i][k] B[tx+16j][k]   (A B^T)
//   tile_mma_ab:  acc[i][j] += sum_k A[ty*4+i][k] B[k][tx+16j]   (A B)
//   tile_mma_atb: acc[i][j] += sum_k A[k][ty*4+i] B[k][tx+16j]   (A^T B)
template <int A_ROW, int A_K, int B_COL, int B_K>
__device__ __forceinline__ void tile_mma(const float* as, const float* bs, float (&acc)[4][4], int tx, int ty) {
#pragma unroll 8
  for (int k = 0; k < kTile; ++k) {
    float a[4], b[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = as[(ty * 4 + i) * A_ROW + k * A_K];
#pragma unroll
    for (int j = 0; j < 4; ++j) b[j] = bs[(tx + 16 * j) * B_COL + k * B_K];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
  }
}
__device__ __forceinline__ void tile_mma_abt(const float* as, const float* bs, float (&acc)[4][4], int tx, int ty) {
  tile_mma<kLd, 1, kLd, 1>(as, bs, acc, tx, ty);
}
__device__ __forceinline__ void tile_mma_ab(const float* as, const float* bs, float (&acc)[4][4], int tx, int ty) {
  tile_mma<kLd, 1, 1, kLd>(as, bs, acc, tx, ty);
}
__device__ __forceinline__ void tile_mma_atb(const float* as, const float* bs, float (&acc)[4][4], int tx, int ty) {
  tile_mma<1, kLd, 1, kLd>(as, bs, acc, tx, ty);
}

// cudaFuncSetAttribute holds for the current device only: a launcher raises a kernel's
// shared-memory limit once on every device it launches on (bit `dev` of `done`), so that one
// process can run the kernel on several GPUs (flashsim-gpu ring).
inline bool first_launch_on_this_device(std::uint64_t& done, int* dev_out = nullptr) {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  if (dev_out) *dev_out = dev;
  const std::uint64_t bit = std::uint64_t{1} << (dev & 63);
  if (done & bit) return false;
  done |= bit;
  return true;
}

// Scratch memory in stream order from a pool of flashsim's own per device that keeps what it once
// held (release threshold: never), so that a launch's scratch costs no cudaMalloc after the first,
// works under graph capture and cannot race another stream's.
inline cudaMemPool_t scratch_pool() {
  static std::mutex mu;
  static cudaMemPool_t pools[64] = {};
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  cudaMemPool_t& pool = pools[dev & 63];
  if (!pool) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    std::uint64_t keep = ~std::uint64_t{0};
    CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  return pool;
}

}  // namespace flashsim::gpu

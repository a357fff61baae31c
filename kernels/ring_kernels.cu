// The device-level merge of ring attention: two normalised partial outputs with their
// logsumexps combine exactly like two tiles of the online softmax.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/cuda_util.cuh"
#include "kernels/ring.h"
#include "kernels/ring_run.h"

namespace flashsim::gpu {
namespace {

// One warp per row of D values; lane t handles columns t, t + 32, ... (coalesced).
template <class T, int D>
__global__ void ring_merge_kernel(T* __restrict__ o, float* __restrict__ lse, const T* __restrict__ ob,
                                  const float* __restrict__ lseb, std::int64_t rows) {
  const std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.y) + threadIdx.y;
  if (r >= rows) return;
  const float l1 = lse[r], l2 = lseb[r];
  const float m = fmaxf(l1, l2);
  if (m == -INFINITY) return;  // neither part saw a key
  const float w1 = __expf(l1 - m), w2 = __expf(l2 - m), inv = 1.f / (w1 + w2);
  const std::size_t at = static_cast<std::size_t>(r) * D + threadIdx.x;
#pragma unroll
  for (int c = 0; c < D; c += 32) o[at + c] = from_f<T>((w1 * to_f(o[at + c]) + w2 * to_f(ob[at + c])) * inv);
  if (threadIdx.x == 0) lse[r] = m + logf(w1 + w2);
}

template <class T>
void launch(void* o, float* lse, const void* ob, const float* lseb, std::int64_t rows, int d, cudaStream_t s) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((rows + 7) / 8));
  if (d == 64)
    ring_merge_kernel<T, 64><<<grid, block, 0, s>>>(static_cast<T*>(o), lse, static_cast<const T*>(ob), lseb, rows);
  else if (d == 128)
    ring_merge_kernel<T, 128><<<grid, block, 0, s>>>(static_cast<T*>(o), lse, static_cast<const T*>(ob), lseb, rows);
  else
    throw std::invalid_argument("ring_merge: d must be 64 or 128");
}

}  // namespace

void ring_merge(void* o, float* lse, const void* ob, const float* lseb, std::int64_t rows, int d, Dtype dt,
                void* stream) {
  if (rows <= 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  switch (dt) {
    case Dtype::BF16: launch<__nv_bfloat16>(o, lse, ob, lseb, rows, d, s); break;
    case Dtype::F16: launch<__half>(o, lse, ob, lseb, rows, d, s); break;
    case Dtype::F32: launch<float>(o, lse, ob, lseb, rows, d, s); break;
  }
}

namespace ring_detail {
namespace {

// Four values of T in one store.
template <class T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};

// Four sums a thread, rounded to T once (the one-GPU backward rounds its fp32 sums the same way).
// out may be acc (W += R): each thread reads its four before it writes them.
template <class T>
__global__ void sum_to_kernel(Four<T>* out, const float4* acc, const float4* __restrict__ in, std::size_t quads) {
  for (std::size_t g = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; g < quads;
       g += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float4 a = acc[g];
    if (in) {
      const float4 b = in[g];
      a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
    }
    out[g] = Four<T>{{from_f<T>(a.x), from_f<T>(a.y), from_f<T>(a.z), from_f<T>(a.w)}};
  }
}

unsigned grid_for(std::size_t items) { return static_cast<unsigned>(std::min<std::size_t>((items + 255) / 256, 132 * 8)); }

}  // namespace

void ring_add_f32(float* acc, const float* in, std::size_t elems, void* stream) {
  ring_sum_to(acc, acc, in, elems, Dtype::F32, stream);
}

void ring_sum_to(void* out, const float* acc, const float* in, std::size_t elems, Dtype dt, void* stream) {
  if (elems == 0) return;
  if (elems % 4 != 0) throw std::invalid_argument("ring_sum_to / ring_add_f32: elems must be a multiple of 4");
  const auto s = static_cast<cudaStream_t>(stream);
  const auto a = reinterpret_cast<const float4*>(acc), b = reinterpret_cast<const float4*>(in);
  const unsigned grid = grid_for(elems / 4);
  switch (dt) {
    case Dtype::BF16: sum_to_kernel<<<grid, 256, 0, s>>>(static_cast<Four<__nv_bfloat16>*>(out), a, b, elems / 4); break;
    case Dtype::F16: sum_to_kernel<<<grid, 256, 0, s>>>(static_cast<Four<__half>*>(out), a, b, elems / 4); break;
    case Dtype::F32: sum_to_kernel<<<grid, 256, 0, s>>>(static_cast<Four<float>*>(out), a, b, elems / 4); break;
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace ring_detail
}  // namespace flashsim::gpu

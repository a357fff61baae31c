// The device-level merge of ring attention: two normalised partial outputs with their
// logsumexps combine exactly like two tiles of the online softmax.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda_util.cuh"
#include "kernels/ring.h"

namespace flashsim::gpu {
namespace {

template <class T>
__global__ void ring_merge_kernel(T* __restrict__ o, float* __restrict__ lse, const T* __restrict__ ob,
                                  const float* __restrict__ lseb, std::int64_t rows) {
  const std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.y) + threadIdx.y;
  if (r >= rows) return;
  const float l1 = lse[r], l2 = lseb[r];
  const float m = fmaxf(l1, l2);
  if (m == -INFINITY) return;  // neither part saw a key
  const float w1 = __expf(l1 - m), w2 = __expf(l2 - m), inv = 1.f / (w1 + w2);
  const std::size_t at = static_cast<std::size_t>(r) * kHead + threadIdx.x;
  for (int c = 0; c < kHead; c += 32)
    o[at + c] = from_f<T>((w1 * to_f(o[at + c]) + w2 * to_f(ob[at + c])) * inv);
  if (threadIdx.x == 0) lse[r] = m + logf(w1 + w2);
}

}  // namespace

void ring_merge(void* o, float* lse, const void* ob, const float* lseb, std::int64_t rows, bool bf16, void* stream) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((rows + 7) / 8));
  auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    ring_merge_kernel<<<grid, block, 0, s>>>(static_cast<__nv_bfloat16*>(o), lse,
                                             static_cast<const __nv_bfloat16*>(ob), lseb, rows);
  else
    ring_merge_kernel<<<grid, block, 0, s>>>(static_cast<float*>(o), lse, static_cast<const float*>(ob), lseb, rows);
}

}  // namespace flashsim::gpu

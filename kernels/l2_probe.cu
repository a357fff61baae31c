// The L2 probes' kernels (kernels/l2_probe.h): a persistent grid walking a buffer in 16-byte
// accesses, 256 threads a block, block b on 4 KiB chunks b, b + grid, ... (the L2 model replays
// the same order).
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/workload.h"
#include "kernels/l2_probe.h"

namespace flashsim::gpu {
namespace {

__global__ void __launch_bounds__(256) probe_read_kernel(const float4* __restrict__ p, std::size_t n, float* sink) {
  float acc = 0.f;
  for (std::size_t i = blockIdx.x * 256ULL + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * 256) {
    const float4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) *sink = acc;  // practically never true; keeps the loads alive
}

// y = x + 1: rmw with y == x (so no __restrict__), copy with Y right after X.
__global__ void __launch_bounds__(256) probe_add_one_kernel(const float4* x, float4* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * 256ULL + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * 256) {
    float4 v = x[i];
    v.x += 1.f;
    v.y += 1.f;
    v.z += 1.f;
    v.w += 1.f;
    y[i] = v;
  }
}

}  // namespace

int probe_blocks_per_sm() {
  int a = 0, b = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a, probe_read_kernel, 256, 0));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, probe_add_one_kernel, 256, 0));
  return std::min(a, b);
}

// `buf` holds `bytes` (copy: 2 x `bytes`).
void probe_pass(ProbePattern pattern, void* buf, std::uint64_t bytes, int grid, float* sink) {
  const std::size_t n = bytes / 16;
  if (pattern == ProbePattern::Reread)
    probe_read_kernel<<<grid, 256>>>(static_cast<const float4*>(buf), n, sink);
  else if (pattern == ProbePattern::Rmw)
    probe_add_one_kernel<<<grid, 256>>>(static_cast<const float4*>(buf), static_cast<float4*>(buf), n);
  else  // X is the buffer's first `bytes`, Y the next
    probe_add_one_kernel<<<grid, 256>>>(static_cast<const float4*>(buf), static_cast<float4*>(buf) + n, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace flashsim::gpu

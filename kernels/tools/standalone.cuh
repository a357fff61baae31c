// Shared by the standalone drivers in kernels/tools/ (built by hand with nvcc, without util.cu):
// the CUDA error hook that util.cu would define, a counter-based random fill on the device, device
// buffers and copies back to the host (event timing: kernels/event_timing.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cuda_util.cuh"
#include "kernels/event_timing.h"
#include "kernels/sm_clock.cuh"

namespace flashsim::gpu {
void cuda_fail(cudaError_t e, const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: CUDA error %s: %s\n", file, line, cudaGetErrorString(e), what);
  std::exit(1);
}
}  // namespace flashsim::gpu

namespace flashsim::gpu::standalone {

__device__ __forceinline__ std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Element i gets lo + (hi - lo) * u(seed, i): the same inputs for a seed whatever the launch shape.
template <class T>
__global__ void fill_kernel(T* p, std::size_t n, std::uint64_t seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float u = static_cast<float>(splitmix(seed * 0x100000001b3ULL + i) >> 40) * (1.f / 16777216.f);
    p[i] = from_f<T>(lo + (hi - lo) * u);
  }
}

float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
float to_float(__half x) { return __half2float(x); }
float to_float(float x) { return x; }

// Device memory owned for one scope (util.cu's DevBuf is not linked into these drivers).
struct Buf {
  void* p = nullptr;
  explicit Buf(std::size_t bytes) { CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 16))); }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  template <class U> U* as() const { return static_cast<U*>(p); }
};

// The SMs' clock after each timed run: kernels/sm_clock.cuh's sampler on Buf memory (util.cu's
// SmClockLog is not linked here). sample() on the default stream; median_mhz() of every sample so far.
struct ClockSamples {
  static constexpr unsigned kCapacity = 256;
  Buf log{kCapacity * sizeof(SmClockSample)}, count{sizeof(unsigned)};
  ClockSamples() { CUDA_CHECK(cudaMemset(count.p, 0, sizeof(unsigned))); }
  void sample(unsigned window_us) {
    sm_clock_sample_kernel<<<1, 32>>>(log.as<SmClockSample>(), count.as<unsigned>(), kCapacity, window_us * 1000u);
    CUDA_CHECK_LAUNCH();
  }
  double median_mhz() const {
    std::vector<double> mhz = read_sm_clock_mhz(log.as<SmClockSample>(), count.as<unsigned>(), kCapacity);
    if (mhz.empty()) return 0;
    std::sort(mhz.begin(), mhz.end());
    return mhz[mhz.size() / 2];
  }
};

// count elements from p + offset, copied to the host as float.
template <class T>
std::vector<float> fetch(const T* p, std::size_t offset, std::size_t count) {
  std::vector<T> raw(count);
  CUDA_CHECK(cudaMemcpy(raw.data(), p + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = to_float(raw[i]);
  return out;
}

}  // namespace flashsim::gpu::standalone

// The SMs' own clock, sampled on the device: one lane counts clock64 over a window of %globaltimer.
// Shared by kernels/util.cu (SmClockLog, bench_kernels and the ring) and the standalone drivers in
// kernels/tools/, which do not link util.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda_util.cuh"
#include "kernels/workload.h"

namespace flashsim::gpu {
namespace {  // a copy per translation unit: the standalone drivers are one unit each

// One lane: clock64 ticks over window_ns of the global timer, appended to log[*count] (dropped past
// capacity).
__global__ void sm_clock_sample_kernel(SmClockSample* __restrict__ log, unsigned* __restrict__ count,
                                       unsigned capacity, unsigned window_ns) {
  if (threadIdx.x != 0) return;
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  } while (t1 - t0 < window_ns);
  const long long c1 = clock64();
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  const unsigned i = atomicAdd(count, 1u);
  if (i < capacity) log[i] = {t0, t1 - t0, static_cast<unsigned long long>(c1 - c0), smid};
}

}  // namespace

// The samples the kernel above logged (log and count on the device), as MHz in the order taken.
inline std::vector<double> read_sm_clock_mhz(const SmClockSample* log, const unsigned* count, unsigned capacity) {
  CUDA_CHECK(cudaDeviceSynchronize());
  unsigned n = 0;
  CUDA_CHECK(cudaMemcpy(&n, count, sizeof n, cudaMemcpyDeviceToHost));
  std::vector<SmClockSample> got(std::min(n, capacity));
  if (!got.empty()) CUDA_CHECK(cudaMemcpy(got.data(), log, got.size() * sizeof(SmClockSample), cudaMemcpyDeviceToHost));
  std::vector<double> mhz;
  for (const auto& c : got) mhz.push_back(c.mhz());
  return mhz;
}

}  // namespace flashsim::gpu

// The SMs' own clock, sampled on the device: one lane counts clock64 over a window of %globaltimer.
// Shared by kernels/util.cu (SmClockLog, bench_kernels and the ring) and the standalone drivers in
// kernels/tools/, which do not link util.cu.
#pragma once

#include <cuda_runtime.h>

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
}  // namespace flashsim::gpu

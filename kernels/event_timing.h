// CUDA-event timing shared by bench_kernels and the standalone drivers in kernels/tools/.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/workload.h"

namespace flashsim::gpu {

// Times run() with CUDA events: `warmups` untimed calls, then `reps` timed one by one, after_each()
// after each timed call has finished (outside the timed span). Sorted ms.
template <class Run, class After>
std::vector<float> sorted_times_ms(Run&& run, int warmups, int reps, After&& after_each) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  for (int w = 0; w < warmups; ++w) run();
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(a));
    run();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float x = 0;
    CUDA_CHECK(cudaEventElapsedTime(&x, a, b));
    ms.push_back(x);
    after_each();
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms;
}

template <class Run>
std::vector<float> sorted_times_ms(Run&& run, int warmups, int reps) {
  return sorted_times_ms(run, warmups, reps, [] {});
}

}  // namespace flashsim::gpu

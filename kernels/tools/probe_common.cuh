// Shared by the probes in kernels/tools/ (probe_softmax, probe_consumer_loop): a CUDA call's error
// said once with the probe's name, and the device's SM count and properties.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

namespace flashsim::gpu::probe {

// 0 when e is cudaSuccess, else prints "PROGRAM: WHAT: the error" and returns 1
inline int check(cudaError_t e, const char* program, const char* what) {
  if (e == cudaSuccess) return 0;
  std::fprintf(stderr, "%s: %s: %s\n", program, what, cudaGetErrorString(e));
  return 1;
}

struct Device {
  int sms = 0;
  cudaDeviceProp prop{};
};
// Device 0's SM count and properties; false (with a message) when there is no CUDA device
inline bool device_zero(const char* program, Device& d) {
  return check(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, 0), program, "no CUDA device") == 0 &&
         check(cudaGetDeviceProperties(&d.prop, 0), program, "cudaGetDeviceProperties") == 0;
}

}  // namespace flashsim::gpu::probe

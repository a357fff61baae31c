// How many exp2 (ex2.approx.ftz.f32, MUFU.EX2) an SM finishes per clock, against warps per SM: the
// special-function rate the time model's GPU presets take from the FlashAttention-3 paper (16 a clock
// per SM on the H100), measured, and how many warps it takes to reach it. One block per SM, W warps,
// 16 independent chains a thread; SM clocks from clock64. Modes: ex2 + FADD (the softmax's
// exponential and sum), FFMA + ex2 (its scale-and-shift and exponential), FFMA alone (the FMA pipe).
// CMake builds it as probe_special_unit; by hand:
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o probe_special_unit kernels/tools/probe_special_unit.cu
// H100 80GB HBM3, 2026-11-26: ex2 15.2 a clock per SM with one warp per scheduler (4 a block),
// 16.0 with two or more; FFMA 116 (kernels/RESULTS.md, "The FP8 forward").
#include <cuda_runtime.h>

#include <cstdio>

#include "sim/main_guard.h"

namespace {

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

enum Mode { kEx2Add = 0, kFmaEx2 = 1, kFma = 2 };

template <int MODE>
__global__ void chains_kernel(float* out, int iters, long long* clocks) {
  float a[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) a[i] = -0.001f * static_cast<float>(threadIdx.x + i);
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      if constexpr (MODE == kEx2Add) a[i] = ex2(a[i]) - 1.0f;
      else if constexpr (MODE == kFmaEx2) a[i] = ex2(fmaf(a[i], 0.5f, -0.25f));
      else a[i] = fmaf(a[i], 0.999f, 0.0001f);
    }
  }
  const long long t1 = clock64();
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < 16; ++i) sum += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;  // keeps the chains alive
  if (threadIdx.x == 0) clocks[blockIdx.x] = t1 - t0;
}

int check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return 0;
  std::fprintf(stderr, "probe_special_unit: %s: %s\n", what, cudaGetErrorString(e));
  return 1;
}

int run_main() {
  int sms = 0;
  if (check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "no CUDA device")) return 1;
  float* out = nullptr;
  long long* clocks = nullptr;
  if (check(cudaMalloc(&out, static_cast<size_t>(sms) * 1024 * sizeof(float)), "cudaMalloc") ||
      check(cudaMalloc(&clocks, static_cast<size_t>(sms) * sizeof(long long)), "cudaMalloc"))
    return 1;
  const int iters = 4096;
  const char* names[] = {"ex2 + fadd", "ffma + ex2", "ffma alone"};
  for (int mode = 0; mode < 3; ++mode)
    for (int warps : {1, 2, 4, 8, 16, 32}) {
      auto kernel = mode == kEx2Add ? chains_kernel<kEx2Add> : mode == kFmaEx2 ? chains_kernel<kFmaEx2> : chains_kernel<kFma>;
      for (int rep = 0; rep < 2; ++rep) kernel<<<sms, warps * 32>>>(out, iters, clocks);  // the second is read
      if (check(cudaDeviceSynchronize(), "kernel")) return 1;
      long long c = 0;
      if (check(cudaMemcpy(&c, clocks, sizeof c, cudaMemcpyDeviceToHost), "cudaMemcpy")) return 1;
      const double results = static_cast<double>(iters) * 16 * warps * 32;
      std::printf("%s  warps per SM %2d: %6.2f results a clock per SM\n", names[mode], warps, results / static_cast<double>(c));
    }
  return 0;
}

}  // namespace

int main() { return flashsim::guard_main("probe_special_unit", run_main); }

// Does ptxas allocate the registers of the code after `setmaxnreg.inc` within its count, or within
// the launch's (65536 / threads)? Compile-only probe (kernels/RESULTS.md, "FP8, continued"):
//
//   nvcc -gencode arch=compute_90a,code=sm_90a -std=c++20 -O3 -Xptxas -v -c kernels/tools/probe_setmaxnreg.cu -o /dev/null
//
// Each kernel keeps LIVE fp32 values live across a loop in its consumer warps. With 384 threads the
// launch allows 168 registers a thread and setmaxnreg 240; with 512, 128 and 160. ptxas -v reports
// spills per kernel: none for the INC kernels means the larger count is used (nvcc 13.0: yes). The
// CTest kernels.ptxas_setmaxnreg (tests/kernels/ptxas_setmaxnreg.cmake) checks that reading.

template <int LIVE, int THREADS, int REGS, bool INC>
__global__ void __launch_bounds__(THREADS, 1) probe(const float* __restrict__ in, float* __restrict__ out, int n) {
  if (threadIdx.x < 128) {  // the producer warpgroup gives its registers back
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    return;
  }
  if constexpr (INC) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
  float acc[LIVE];
#pragma unroll
  for (int i = 0; i < LIVE; ++i) acc[i] = in[i * THREADS + threadIdx.x];
  for (int it = 0; it < n; ++it) {
    const float x = in[it + threadIdx.x];
#pragma unroll
    for (int i = 0; i < LIVE; ++i) acc[i] = fmaf(acc[i], x, 1.0f);
#pragma unroll
    for (int i = 0; i < LIVE; ++i) asm volatile("" : "+f"(acc[i]));  // all LIVE values stay live
  }
#pragma unroll
  for (int i = 0; i < LIVE; ++i) out[i * THREADS + threadIdx.x] = acc[i];
}

// two consumer warpgroups (the forwards at d = 128): 200 values, 168 allowed at launch, 240 after
template __global__ void probe<200, 384, 240, true>(const float*, float*, int);
template __global__ void probe<200, 384, 240, false>(const float*, float*, int);
// three consumer warpgroups (the d = 64 forward): 145 values, 128 at launch, 160 after
template __global__ void probe<145, 512, 160, true>(const float*, float*, int);
template __global__ void probe<145, 512, 160, false>(const float*, float*, int);

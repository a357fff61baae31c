// The forward tile variants that attention_forward.cu instantiates when built with
// FLASHSIM_ATTN_FWD_FAST_ONLY, for kernels/tools/bench_attention_forward_fast.cu to check and time.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace flashsim::gpu::fwd_variants {
template <class T>
using Launcher = void (*)(const T*, const T*, const T*, T*, float*, int, int, bool, cudaStream_t);
struct Variant {
  int d;
  const char* name;
  Launcher<__nv_bfloat16> bf16;
  Launcher<__half> fp16;
  bool diagnostic = false;  // a timing diagnostic with wrong output by design: timed, never checked
};
extern const Variant kVariants[];
extern const int kVariantCount;
}  // namespace flashsim::gpu::fwd_variants

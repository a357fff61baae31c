// Launchers shared between attention_forward.cu and attention_backward.cu (the backward workload
// produces its O and logsumexp with the FA2 forward). Layout: [batch*heads, n, 64] row-major.
#pragma once

#include <cuda_bf16.h>

namespace flashsim::gpu {

template <class T>
void attention_fa2(const T* q, const T* k, const T* v, T* o, float* lse, int bh, int n, bool causal);

}  // namespace flashsim::gpu

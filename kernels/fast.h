// The fast (tensor-core) versions of the kernels, as plain launchers so that flashsim-gpu,
// the per-file drivers and bench_kernels share them. Each lives in the kernel file of its op:
//   matmul.cu            v3  matmul_bf16_fast          (Hopper wgmma, inner-product schedule)
//   softmax.cu           v3  softmax_online_fast       (online 2-pass, 16-byte loads)
//   attention_forward.cu v5/v6 attention_forward_fast  (FA2 order, Hopper wgmma + TMA; v6 warp-specialized at d = 128)
//   attention_backward.cu v7 attention_backward_fast   (FA2 backward, every product on Hopper wgmma, TMA loads;
//                                                        warp-specialized with bulk dQ reductions, v7: the
//                                                        consumers take turns at dQ (d = 128);
//                                                        FLASHSIM_BWD_VERSION=6 or 5 selects v6 or v5)
//   attention_fp8.cu          attention forward in FP8 (e4m3), d = 128: its own header, fp8.h
// Layouts are row-major. Attention tensors are [bh, n, d] with d = 64 or 128, any n >= 1;
// softmax scale 1/sqrt(d); lse is the natural-log logsumexp per row, fp32 [bh, n].
// Every launcher checks its arguments (throws std::invalid_argument) and its launches.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace flashsim::gpu {

// C[m,n] = A[m,k] B[k,n] in bf16 with fp32 accumulation (as cublasGemmEx with CUBLAS_COMPUTE_32F).
// Any m, n, k >= 0. `workspace` (16-byte aligned, content on entry irrelevant) holds padded copies
// of A and B when k or n is not a multiple of 8 (or a pointer is not 16-byte aligned), and the fp32
// partials and counters of a split-k plan (grids that fill at most half the SMs; the environment
// variable FLASHSIM_MATMUL_SPLITK overrides, see matmul.cu). matmul_bf16_fast_workspace_bytes
// gives the size for the current device; a workspace without room for the partials runs the
// shape unsplit; one without room for the copies is an error (null is fine where neither is
// needed). The form without workspace takes one stream-ordered (cudaMallocAsync) when it needs it.
std::size_t matmul_bf16_fast_workspace_bytes(int m, int n, int k);
void matmul_bf16_fast(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int m, int n, int k,
                      void* workspace, std::size_t workspace_bytes, cudaStream_t stream);
void matmul_bf16_fast(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int m, int n, int k,
                      cudaStream_t stream);

// y = softmax(x) over each row of a rows x cols fp32 matrix: one pass for (max, sum) per row chunk,
// a merge of the chunks' states, one pass to normalize. `partials` needs softmax_fast_partials_bytes.
std::size_t softmax_fast_partials_bytes(int rows, long long cols);
void softmax_online_fast(const float* x, float* y, int rows, long long cols, float* partials, cudaStream_t stream);

// T = __nv_bfloat16 or __half.
template <class T>
void attention_forward_fast(const T* q, const T* k, const T* v, T* o, float* lse, int bh, int n, int d,
                            bool causal, cudaStream_t stream);
// The same function, launched with one thread block per Q tile at every d and mask (the d = 128
// launch above is persistent, one block per SM: alone it is 1-14 % faster under the full mask and
// up to 13 % under the causal mask, most at small N; kernels/RESULTS.md). A kernel on
// another stream of the same GPU (NCCL's, in flashsim-gpu ring) then gets SMs as tiles finish
// instead of waiting for the whole grid. Both forward launchers raise their kernels' shared-memory
// limit on every device they launch on, so one process can run them on several GPUs (the backward
// launcher still does it once per process: its first device only).
template <class T>
void attention_forward_fast_tiled(const T* q, const T* k, const T* v, T* o, float* lse, int bh, int n, int d,
                                  bool causal, cudaStream_t stream);

// One step of a zig-zag ring (kernels/ring.cpp) in one launch: q and o hold a GPU's two query
// chunks and k, v a block's two key chunks, each [2][heads][n][d] (lse [2][heads][n]); query chunk
// i attends to key chunk j as kinds says, two bits at 2 (2i + j): 0 not at all, 1 every key, 2
// under the causal mask (the chunks' diagonal). Rows that see no key get O = 0, lse = -inf.
template <class T>
void attention_forward_fast_ring_step(const T* q, const T* k, const T* v, T* o, float* lse, int heads, int n, int d,
                                      int kinds, cudaStream_t stream);

// Gradients of O = softmax(QK^T/sqrt(d)) V given dO, O and lse from the forward.
// `workspace` needs attention_backward_fast_workspace_bytes (D = rowsum(dO * O) and an fp32 dQ
// accumulator); its content on entry does not matter.
std::size_t attention_backward_fast_workspace_bytes(int bh, int n, int d);
template <class T>
void attention_backward_fast(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse,
                             T* dq, T* dk, T* dv, void* workspace, int bh, int n, int d, bool causal,
                             cudaStream_t stream);

// The ring backward's form (kernels/ring_backward.cpp): one (query chunk, key chunk) pair's
// gradients summed in fp32 across calls on the same n. dQ accumulates in the workspace's fp32
// accumulator (zeroed first when first_dq; one workspace per query chunk) and reaches dq (type T)
// only through attention_backward_fast_finish_dq; dK and dV are written (assign_dkv) or added into
// dk_acc, dv_acc (fp32 [bh, n, d]; the pair's values are rounded to T before the sum). Versions 6
// and 7 only (throws under FLASHSIM_BWD_VERSION=5).
template <class T>
void attention_backward_fast_accumulate(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse,
                                        float* dk_acc, float* dv_acc, bool assign_dkv, void* workspace, bool first_dq,
                                        int bh, int n, int d, bool causal, cudaStream_t stream);
template <class T>
void attention_backward_fast_finish_dq(void* workspace, T* dq, int bh, int n, int d, cudaStream_t stream);

// The ring backward with one launch a step (kernels/ring_backward.cpp, --launch step). A GPU's
// `chunks` query chunks (q, o, dout: [chunks][heads][n][d]; lse: [chunks][heads][n]) stay home for
// the whole ring, so ring_prepare computes their statistics into the workspace
// (attention_backward_fast_workspace_bytes(chunks * heads, n, d)) once, with bh = chunks * heads,
// and zeroes its fp32 dQ accumulator. Each step is then one ring_step over the key block in hand
// (k, v: [chunks][heads][n][d]); `kinds` says which query chunk sees which key chunk, two bits at
// 2 (2i + j) as for the forward's step. A key tile sums its dK, dV over every query chunk that
// sees it in registers and writes them (not adds) to dk_acc, dv_acc (fp32 [chunks][heads][n][d];
// zeros for a key chunk nobody sees); dQ adds into the accumulator, converted at the end by
// attention_backward_fast_finish_dq(workspace, dq, chunks * heads, n, d). Version 7 only.
template <class T>
void attention_backward_fast_ring_prepare(const T* o, const T* dout, const float* lse, void* workspace, int bh, int n,
                                          int d, cudaStream_t stream);
template <class T>
void attention_backward_fast_ring_step(const T* q, const T* k, const T* v, const T* dout, float* dk_acc,
                                       float* dv_acc, void* workspace, int heads, int n, int d, int chunks, int kinds,
                                       cudaStream_t stream);

}  // namespace flashsim::gpu

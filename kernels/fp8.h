// The FP8 (e4m3) attention forward on Hopper (kernels/attention_fp8.cu): FlashAttention-3's recipe
// for 8-bit inputs. A quantize pass turns bf16 / fp16 Q, K, V into e4m3 with fp32 scales, and the
// warp-specialized forward multiplies them on the FP8 tensor cores (m64nNk32), with P quantized to
// e4m3 on its way from the softmax into P V. O stays bf16, lse fp32 (natural log).
//
// Quantization (fp8::QuantOptions): per block (one scale per 64 rows of Q, per 32 rows of K, per
// head of V; FA3's block quantization) or per tensor (one scale each, the baseline), optionally
// after a random Hadamard transform of Q and K along d (Q D H and K D H with H the normalized
// Walsh-Hadamard matrix and D random signs: (Q D H)(K D H)^T = Q K^T, while a few large entries
// spread over all d columns and no longer set the scale alone). d = 128; any n >= 1.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace flashsim::gpu::fp8 {

enum class Scaling { PerBlock, PerTensor };
struct QuantOptions {
  Scaling scaling = Scaling::PerBlock;
  bool hadamard = true;
  std::uint64_t seed = 0x5eed;  // of the transform's signs (fp8_ref.h hadamard_sign)
};

// The quantized operands, laid out in one workspace (fp8_workspace_bytes): q, k [bh][n][d] e4m3;
// vt [bh][d][padded_keys(n)] e4m3, keys permuted within groups of 32 (fp8_ref.h); the scales that
// undo the quantization (x = e4m3 value * scale) per block of Q and K rows and per head of V.
struct Operands {
  int bh = 0, n = 0, d = 0, n_keys = 0;
  std::uint8_t *q = nullptr, *k = nullptr, *vt = nullptr;
  float *q_scale = nullptr, *k_scale = nullptr, *v_scale = nullptr;
  unsigned* amax = nullptr;  // the quantize pass's scratch (per-tensor and per-head maxima)
};
std::size_t workspace_bytes(int bh, int n, int d);
Operands operands_in(void* workspace, int bh, int n, int d);

// Fills `ops` from q, k, v ([bh][n][d], T = __nv_bfloat16 or __half); stream-ordered.
template <class T>
void quantize(const T* q, const T* k, const T* v, const Operands& ops, const QuantOptions& opt, cudaStream_t stream);

// O = softmax(Q K^T / sqrt(d) [causal]) V from the quantized operands, o bf16 [bh][n][d].
void attention_forward(const Operands& ops, __nv_bfloat16* o, float* lse, bool causal, cudaStream_t stream);

// The forward's variants for the bench driver (kernels/tools/bench_attention_forward_fp8.cu):
// pingpong = the two consumers take turns issuing their products; qsmem = S reads Q from shared
// memory instead of registers; no_exponentials = P = S without exp2 (a timing diagnostic: how long
// the loop takes without the special-function unit; the output is wrong).
struct Variant {
  bool pingpong = false;
  bool qsmem = false;
  bool no_exponentials = false;
  int key_tile = 0;  // keys a KV tile: 128, 192 or 224 (FA3 takes 224 for FP8 at d = 128); 0: key_tile_for's choice
  bool exps_first = false;  // the softmax issues a tile's exponentials before its sums (tile::kExpsFirst)
};
// The key tile a launch of `variant` takes at sequence length n: variant.key_tile if set, else
// fp8_ref.h default_key_tile(n); ping-pong, qsmem and no_exponentials run 128 only. The checks' emulation
// (fp8_ref.h OutputCheck) must take the same tile: P's rounding follows the running maximum.
int key_tile_for(int n, const Variant& variant);
void attention_forward_variant(const Operands& ops, __nv_bfloat16* o, float* lse, bool causal, Variant variant,
                               cudaStream_t stream);

// The default (or ping-pong) forward that also writes, for block 0's first Q tile, the SM clock
// (clock64) of thread 0 of each consumer at six points of each of its first trace_tiles KV tiles:
// trace[(consumer * trace_tiles + j) * 6 + e], e = start, products issued, S done, softmax done,
// P V done, P packed (tile 0 has no P V of its own: its events 3 and 4 coincide). A diagnostic:
// where a consumer's time goes, and whether one's softmax runs under the other's products.
void attention_forward_trace(const Operands& ops, __nv_bfloat16* o, float* lse, bool causal, bool pingpong,
                             long long* trace, int trace_tiles, cudaStream_t stream);

}  // namespace flashsim::gpu::fp8

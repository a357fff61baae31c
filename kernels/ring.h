// `flashsim-gpu ring`: ring attention over P GPUs of one process. Each GPU keeps its Q block;
// the K/V blocks travel the ring through ncclSend/ncclRecv on a communication stream while the
// FA2 kernel of kernels/attention_forward.cu works on the block in hand; a merge kernel folds each
// step's (O_b, lse_b) into the running (O, lse). Validated against one-GPU FA2 and a float64 CPU
// reference on sampled rows; prints counted (sim/ring.h) vs NCCL-posted bytes, times, overlap and
// scaling efficiency.
#pragma once

#include <cstdint>
#include <string>

namespace flashsim::gpu {

struct RingOptions {
  int gpus = 2;
  int heads = 8;          // batch * heads, each [n, 64]
  std::int64_t n = 16384;  // total sequence length, split evenly over the GPUs
  bool causal = false;
  bool bf16 = true;
  int repeats = 5;
  std::uint64_t seed = 1;
};

// Returns 0 when the ring validates, 1 on a mismatch, 2 when it cannot run (no NCCL, too few GPUs).
int ring_main(const RingOptions& opt);

// The merge of a partial (O_b, lse_b) into (O, lse), rows of 64, on `stream`.
void ring_merge(void* o, float* lse, const void* ob, const float* lseb, std::int64_t rows, bool bf16,
                void* stream);

}  // namespace flashsim::gpu

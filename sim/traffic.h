// Counted HBM traffic of the tile-scale schedules, for a kernel's exact parameters.
// The GPU module (kernels/) asks this API what its kernels should move; the numbers come from
// running the schedule on the tile machine in count-only mode, never from a separate formula.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flashsim::traffic {

struct ArrayTraffic {
  std::string name;
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
};

struct Traffic {
  std::vector<ArrayTraffic> arrays;  // one entry per DRAM array the schedule touches
  std::uint64_t instructions = 0;     // tile instructions executed
  std::uint64_t bytes_read() const;
  std::uint64_t bytes_written() const;
  const ArrayTraffic* find(const std::string& name) const;
};

// C[M,N] = A[M,K] * B[K,N]; tiles BM x BK (A), BK x BN (B), BM x BN (C).
enum class MatmulSchedule { Inner, Outer };
struct MatmulParams {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t bm = 64, bn = 64, bk = 64;
  int in_bytes = 4;   // A and B element size
  int out_bytes = 4;  // C element size (the accumulator precision for the outer product's round trips)
};

// Row softmax of X[rows, cols] into Y, processed in chunks of `chunk` columns per row.
enum class SoftmaxSchedule { ThreePass, Online };
struct SoftmaxParams {
  std::int64_t rows = 0, cols = 0, chunk = 1024;
  int elem_bytes = 4;
};

// Attention over batch*heads independent (N x d) heads.
enum class AttentionForward { Naive, FA1, FA2 };
enum class AttentionBackward { TwoPass, AtomicDQ };
struct AttentionParams {
  std::int64_t batch_heads = 1, n = 0, d = 64;
  std::int64_t br = 64, bc = 64;  // Q rows per tile, K/V rows per tile
  int elem_bytes = 2;             // Q, K, V, O, dO, dQ, dK, dV
  int score_bytes = 4;            // S and P of the naive schedule
  int stat_bytes = 4;             // m, l, logsumexp, D
  int accum_bytes = 4;            // dQ accumulator of the atomic backward
  bool causal = false;
};

Traffic count_matmul(const MatmulParams& p, MatmulSchedule s);
Traffic count_softmax(const SoftmaxParams& p, SoftmaxSchedule s);
Traffic count_attention_forward(const AttentionParams& p, AttentionForward s);
Traffic count_attention_backward(const AttentionParams& p, AttentionBackward s);

}  // namespace flashsim::traffic

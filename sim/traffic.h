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
  // Outer schedule only: k-tiles per pass (A tiles held resident); 0 means 1, the pure outer
  // product. k_chunk = ceil(k / bk) keeps C resident through all of k.
  std::int64_t k_chunk = 0;
  std::uint64_t sram_bytes = 0;  // > 0: the generated program faults if its tiles exceed it
};

// Row softmax of X[rows, cols] into Y, processed in chunks of `chunk` columns per row.
enum class SoftmaxSchedule { ThreePass, Online };
struct SoftmaxParams {
  std::int64_t rows = 0, cols = 0, chunk = 1024;
  int elem_bytes = 4;
  std::uint64_t sram_bytes = 0;  // > 0: the generated program faults if its tiles exceed it
};

// Attention over batch*heads independent (N x d) heads.
enum class AttentionForward { Naive, FA1, FA2 };
// TwoPass: a dK/dV pass (outer loop over K/V blocks) and a dQ pass (outer loop over Q blocks),
//   each recomputing P from the logsumexp. AtomicDQ: one column-wise pass, dQ accumulated in
//   DRAM (read + write per update, like atomic adds) and converted at the end. RowWise: one
//   row-wise pass, dQ resident, dK and dV accumulated in DRAM. RowWiseNoD: RowWise without the
//   D = rowsum(dO * O) preprocessing: D comes from P and dP, so K and V are loaded twice.
enum class AttentionBackward { TwoPass, AtomicDQ, RowWise, RowWiseNoD };
struct AttentionParams {
  std::int64_t batch_heads = 1, n = 0, d = 64;
  std::int64_t br = 64, bc = 64;  // Q rows per tile, K/V rows per tile
  int elem_bytes = 2;             // Q, K, V, O, dO, dQ, dK, dV
  int score_bytes = 4;            // S and P of the naive schedule
  int stat_bytes = 4;             // m, l, logsumexp, D
  int accum_bytes = 4;            // dQ accumulator of the atomic backward
  bool causal = false;
  std::int64_t n_kv = 0;           // key/value length; 0 means n. Causal aligns bottom-right.
  bool base2 = false;              // EXP2D/LOG2 variant (same traffic)
  std::uint64_t sram_bytes = 0;    // > 0: the generated program faults if its tiles exceed it
};

// Each count generates the schedule and runs it on sim::Machine in count-only mode.
Traffic count_matmul(const MatmulParams& p, MatmulSchedule s);
Traffic count_softmax(const SoftmaxParams& p, SoftmaxSchedule s);
Traffic count_attention_forward(const AttentionParams& p, AttentionForward s);
Traffic count_attention_backward(const AttentionParams& p, AttentionBackward s);

}  // namespace flashsim::traffic

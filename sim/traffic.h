// Counted HBM traffic of the tile-scale schedules, for a kernel's exact parameters.
// The GPU module (kernels/) asks this API what its kernels should move; the numbers come from
// running the schedule on the tile machine in count-only mode, never from a separate formula.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/launch.h"

namespace flashsim::traffic {

// The array that holds, through a GPU model with dirty lines at the start, the write-back of
// those lines that the run evicted (sim/launch.h GpuModel::dirty_at_start_bytes).
inline constexpr const char* kDirtyAtStartArray = "(L2 dirty at start)";

struct ArrayTraffic {
  std::string name;
  std::uint64_t bytes_read = 0;     // what the schedule's LOADs and STOREs request
  std::uint64_t bytes_written = 0;
  // With a GPU model: what reaches HBM through its L2, and the L2's sector hits and misses.
  // Without one: equal to the requested bytes, and no hits or misses.
  std::uint64_t hbm_bytes_read = 0, hbm_bytes_written = 0;
  std::uint64_t l2_hits = 0, l2_misses = 0;
};

struct Traffic {
  std::vector<ArrayTraffic> arrays;  // one entry per DRAM array the schedule touches
  std::uint64_t instructions = 0;     // tile instructions executed
  bool l2 = false;                    // counted through a GPU model's L2
  std::uint64_t blocks = 0;           // thread blocks the GPU model ran (0 without one)
  std::uint64_t bytes_read() const;
  std::uint64_t bytes_written() const;
  std::uint64_t hbm_bytes_read() const;
  std::uint64_t hbm_bytes_written() const;
  std::uint64_t l2_hits() const;
  std::uint64_t l2_misses() const;
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
  // Outer schedule only: > 0 streams each bm x bn block of C in strips of this many rows, each
  // strip read, updated and written before the next (as the GPU kernel's row loop does), instead
  // of one whole-tile load and store. Same bytes; another order. Must divide bm; 0: whole tiles.
  std::int64_t c_strip_rows = 0;
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
  int out_bytes = 0;              // the forward's O when it differs (FP8 forward: bf16 O); 0: elem_bytes
  int score_bytes = 4;            // S and P of the naive schedule
  int stat_bytes = 4;             // m, l, logsumexp, D
  int accum_bytes = 4;            // dQ accumulator of the atomic backward
  bool causal = false;
  std::int64_t n_kv = 0;           // key/value length; 0 means n. Causal aligns bottom-right.
  bool base2 = false;              // EXP2D/LOG2 variant (same traffic)
  // Block order of the GPU kernels (the L2 model only; no effect on the trace's counts).
  bool heavy_first = false;          // causal: the tiles with the most work start first
  // forward FA2: one block takes a head's Q tiles in pairs, the heaviest causal tile with the
  // lightest, then the next two (the persistent d = 128 kernel; units of equal work)
  bool paired_tiles = false;
  std::int64_t heads_per_group = 0;  // backward atomic-dq: K/V-tile blocks in groups of heads
  // with heads_per_group, causal: the last (shortest) K/V tile first, the fast backward's order
  // before 2026-12-07 (evening); default: K/V tile 0, the longest, first
  bool kv_shortest_first = false;
  // forward FA2, full mask, > 0: the persistent launch's last round split along the keys over this
  // many SMs (sim/split_tail.h, the d = 128 launchers' default from N = 8192): a split tile's parts
  // write a partial O and logsumexp (fp32) to a scratch array and a second launch merges them
  int split_tail_sms = 0;
  std::uint64_t sram_bytes = 0;    // > 0: the generated program faults if its tiles exceed it
};

// Each count generates the schedule and runs it on sim::Machine in count-only mode. With a GPU
// model (sim/launch.h) whose L2 is not empty, the machine's DRAM accesses are also cut into the
// schedule's thread blocks (tile::BlockStart) and replayed through that L2 with the model's
// concurrency, which fills the hbm_* and l2_* counts. Arrays the schedule declares with a fill
// value (accumulators) are then written first by a memset, as on the GPU. Each array gets its own
// allocation; the heads of batch*heads lie one after the other in it, as in the kernels.
Traffic count_matmul(const MatmulParams& p, MatmulSchedule s, const sim::GpuModel* gpu = nullptr);
Traffic count_softmax(const SoftmaxParams& p, SoftmaxSchedule s, const sim::GpuModel* gpu = nullptr);
Traffic count_attention_forward(const AttentionParams& p, AttentionForward s, const sim::GpuModel* gpu = nullptr);
Traffic count_attention_backward(const AttentionParams& p, AttentionBackward s, const sim::GpuModel* gpu = nullptr);
// One forward schedule through several GPU models (flashsim sweep --vary l2): generated and recorded
// once, replayed through each model's L2. A model with capacity 0 gives the requested bytes.
std::vector<Traffic> count_attention_forward(const AttentionParams& p, AttentionForward s,
                                             const std::vector<sim::GpuModel>& gpus);

}  // namespace flashsim::traffic

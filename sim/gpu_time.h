// Predicted time of a whole launch of the fast kernels on a GPU preset (isa/units.h).
//
// Each kernel's thread block is written as a timed trace (`.units`, one stream per warp role:
// the TMA producer and the consumer warpgroups, ordered by the barriers the kernel uses), the
// trace is timed on one SM (sim/timing.h), and the blocks are laid out in waves over the SMs at
// the kernel's occupancy (persistent kernels: one block per SM walking its tiles). The launch
// takes the longest SM's time, or the HBM bytes over the preset's sustained HBM bandwidth when
// that is longer. The kernels' structure (tile sizes, consumers, overlap, ping-pong) is each
// version's own (kernels/attention_forward.cu, attention_backward.cu, matmul.cu, softmax.cu).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "isa/units.h"
#include "sim/timing.h"

namespace flashsim::sim {

enum class TimedOp { AttnFwd, AttnBwd, Matmul, Softmax };

struct TimeQuery {
  TimedOp op = TimedOp::AttnFwd;
  // attention: n (queries = keys), d, heads = batch * heads, causal; matmul: m x n x k;
  // softmax: m rows of n columns (fp32)
  std::int64_t n = 0, d = 64, heads = 1, m = 0, k = 0;
  bool causal = false;
  int elem_bytes = 2;
  // The FP8 forward (attention forward only): Q, K, V and P in e4m3 (elem_bytes 1, the preset's
  // tensor_fp8_rate), O written in bf16; the softmax is unchanged.
  bool fp8 = false;
  // 0: what the launcher runs for these sizes; attention forward 5 or 6, backward 5, 6 or 7,
  // FA2 (the tile machine's FA2 order on one warpgroup, no overlap: the baseline of the lessons)
  int version = 0;
  // The FlashAttention-3 ablation on forward version 6: turn ping-pong / the intra-warpgroup
  // overlap of S_{j+1} with the softmax of j on or off (default: the version's own).
  std::optional<bool> pingpong, intra_overlap;
  // FlashAttention-3's other ablation on forward version 6: warp specialization off, i.e. no
  // producer warp: consumer 0 issues the K/V copies in its own instruction stream, in order with its
  // products, and waits there for a buffer both consumers have finished reading (ping-pong off unless
  // asked for). Default: on.
  std::optional<bool> warp_specialized;
  // Forward version 6 with the overlap: O's rescale by the last tile's factor issued between S_{j+1}
  // and P_j V_j (under S_{j+1}, FA3's order) or after P_{j-1} V_{j-1} is done (default: the
  // launcher's: on since 2026-12-01, off for the FP8 forward).
  std::optional<bool> rescale_under_s;
  // Forward version 6 with the overlap: the softmax of S_j runs while P_{j-1} V_{j-1} is in flight
  // (the source's order, FA3's) or only once it is done (ptxas hoists the wait for P V to the
  // softmax's top unless a fence keeps it: cuobjdump, 2026-12-02, kernels/RESULTS.md "Where ptxas
  // puts the wait for P V"). Default: the launchers' (on at d = 128 in bf16/fp16, which have the
  // fence; off at d = 64 and for FP8).
  std::optional<bool> softmax_under_pv;
  std::optional<bool> split_tail;  // forward v6, full mask: the last round split along the keys
  // Backward, causal: the K/V blocks' launch order. Default: the launchers' since 2026-12-07, the
  // longest (K/V tile 0) first; true: the shortest first, as every backward measured before ran.
  bool shortest_first = false;
  // Forward version 6's tile variants (the drivers' --variants): keys a KV tile (a multiple of 16,
  // FP8 32, up to 256) and consumer warpgroups (2 or 3, 64 query rows each). Default: the launcher's
  // (FP8 takes 224 keys from n = 8192, kernels/fp8.h key_tile_for).
  std::optional<int> key_tile, consumers;
  // Forward version 6: the softmax's row sums on the tensor cores (fp8.h Variant sums_on_tensor): P
  // times a K/V tile's worth of ones (8 columns) beside P V, no row sum on the vector unit.
  bool sums_on_tensor = false;
  // HBM bytes of the launch (the L2 model's prediction); default: the compulsory bytes.
  std::optional<double> hbm_bytes;
};

// One block's structure, as the prediction used it.
struct KernelPlan {
  std::string name;        // "attention forward v6 (warp-specialized, 2 consumers, ...)"
  int br = 0, bc = 0;      // tile rows (queries / keys; matmul: block rows / cols)
  int consumers = 1;       // consumer warpgroups (streams besides the producer)
  int stages = 2;
  bool warp_specialized = false, intra_overlap = false, pingpong = false, persistent = false, paired = false;
  int blocks_per_sm = 1;
  int version = 0;
  bool sums_on_tensor = false;  // forward v6: row sums as P times ones on the tensor unit
  bool rescale_under_s = false;  // forward v6: O's rescale issued under S_{j+1} (TimeQuery)
  bool softmax_under_pv = false;  // forward v6: the softmax of S_j under P_{j-1} V_{j-1} (TimeQuery)
  bool split_tail = false;  // forward v6, full mask: the last round split along the keys (sim/split_tail.h)
};

struct LaunchPrediction {
  KernelPlan plan;
  double predicted_ms = 0;
  double sm_ms = 0;          // the longest SM's blocks
  double hbm_ms = 0;         // HBM bytes at the sustained bandwidth
  double cycles = 0;         // the longest SM's cycles
  double hbm_bytes = 0;
  std::int64_t blocks = 0;   // thread blocks (persistent: tiles)
  double flops = 0;          // useful FLOPs (attention: halved under the causal mask)
  // Per unit on the longest SM: busy cycles and the fraction of `cycles`.
  std::array<UnitUsage, isa::kUnitCount> units{};
  std::string bound;         // "tensor", "special", "vector", "memory", "latency" or "hbm"
  double extra_ms = 0;       // the backward's small launches (D = rowsum(dO * O), the dQ conversion)
};

// Throws std::invalid_argument for sizes the kernels do not take.
LaunchPrediction predict_time(const TimeQuery& q, const isa::GpuPreset& gpu);
KernelPlan plan_for(const TimeQuery& q);

// The timed trace of one block (persistent: one SM's tiles), as text `flashsim run` takes; the
// trace `predict_time` times for its longest SM.
std::string block_trace(const TimeQuery& q, const isa::GpuPreset& gpu);

// Compulsory HBM bytes: each input read once, each output written once.
double compulsory_bytes(const TimeQuery& q);

}  // namespace flashsim::sim

// ---- the SIMT kernels (sim/gpu_time_simt.cpp) --------------------------------------------------
namespace flashsim::sim {
//
// The kernels of versions 1-3 (kernels/matmul.cu v1/v2, softmax.cu v1/v2, attention_forward.cu
// v1-3, attention_backward.cu v1/v2) do their arithmetic in fp32 on the SIMT pipes, not on the
// tensor cores. Their time is a throughput model from the same preset figures, no trace: each
// launch's blocks carry their work (FMAs and other fp32 operations on the vector unit at its
// rate per SM, 128 a clock = 256 FLOP/clk; exponentials on the special unit; global loads, stores
// and atomics at the memory unit's L2 -> SM rate), a block takes the longest of its three units,
// the blocks go in launch order to the SM that frees first, and a launch takes the longest SM or
// its share of the HBM bytes at the sustained bandwidth, whichever is longer, plus a fixed
// kSimtLaunchUs per launch. Left out: shared-memory bandwidth and the issue slots of loads,
// address arithmetic and shuffles (SIMT products reach a fraction of the FMA peak, so compute-bound
// rows measure slower than predicted), latency that too few resident warps cannot hide, partial
// tiles (counted whole) and atomics' own throughput (counted as stores).
enum class SimtKernel { MatmulInner, MatmulOuter, SoftmaxThreePass, SoftmaxOnline, AttnNaive, AttnFA1, AttnFA2, BwdTwoPass, BwdAtomic };

struct SimtQuery {
  SimtKernel kernel = SimtKernel::MatmulInner;
  // matmul: m x n x k; softmax: m rows of n columns; attention: n = sequence length, d, heads =
  // batch * heads, causal
  std::int64_t m = 0, n = 0, k = 0, d = 64, heads = 1;
  bool causal = false;
  int elem_bytes = 4;  // inputs and outputs (fp32 4, bf16 2); statistics and matmul C are fp32
  // HBM bytes of the whole run (the L2 model's prediction), shared out over the launches in
  // proportion to the bytes each launch moves touching its arrays once; default: those bytes.
  std::optional<double> hbm_bytes;
};

// A fixed cost per launch (a kernel boundary's drain and fill), an assumed figure, not a preset's.
inline constexpr double kSimtLaunchUs = 2.0;

// plan.name says the kernel and its launches; units: the work summed over all blocks, and the busy
// cycles of each launch's longest SM summed over the launches (busy_fraction of `cycles`); bound:
// the unit ("vector", "special", "memory") or "hbm" that the most time went to; extra_ms: the launches' fixed cost. Throws std::invalid_argument for sizes < 1.
LaunchPrediction predict_time_simt(const SimtQuery& q, const isa::GpuPreset& gpu);

}  // namespace flashsim::sim

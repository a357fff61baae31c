// A GPU launch on the tile machine: the DRAM accesses of a schedule, cut into the thread blocks of
// the kernels that run it, replayed through an L2 with many blocks resident at once.
//
// The model has GPU-level parameters only: the L2 (size, line, sector), the number of SMs and how
// many blocks of the kernel one SM holds (its occupancy). Blocks start in each launch's block
// order; `sms * blocks_per_sm` of them are resident, and each resident block issues its next tile
// access in turn (one access per block per round), so their loads reach the L2 interleaved as on
// the GPU. When a block ends, the next block in order takes its slot. Launches run one after the
// other (a stream), and the L2 keeps its contents across them. At the end the dirty lines are
// written back, as the GPU does later.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/l2.h"

namespace flashsim::sim {

struct GpuModel {
  L2Config l2;
  std::int64_t sms = 132;
  std::int64_t blocks_per_sm = 1;
  // L2 slices (sim/l2.h PartitionedL2): 1 is one shared cache; Hopper has 2. Resident block k runs
  // on SM k % sms, and SM s sits next to slice s % partitions.
  std::uint32_t l2_partitions = 1;
  // Bytes of unrelated dirty lines in the L2 when the launch starts (the most recently used then),
  // as a profiled range on a GPU finds them: the profiler's own writes at the range's start, which
  // `flashsim-gpu compare` measures as its write-back baseline. Those the launch evicts are HBM
  // writes inside the range; those it leaves are not.
  std::uint64_t dirty_at_start_bytes = 0;
};

// Throws std::invalid_argument for a model that cannot run (no SM, no block per SM, bad L2).
void validate(const GpuModel& g);

// `rows` runs of `row_bytes` bytes, `stride` apart, of DRAM stream (array) `stream`.
struct BlockAccess {
  std::uint64_t addr = 0, stride = 0;
  std::uint32_t rows = 0, row_bytes = 0;
  std::uint32_t stream = 0;
  bool write = false;
};

class LaunchRecorder {
 public:
  // Accesses from here on belong to a new block: of launch `launch` (launches run in ascending
  // order), at position `order` in that launch's block order. Before the first call, accesses
  // go to block 0 of launch 0.
  void begin_block(std::uint64_t launch, std::uint64_t order);
  void add(const BlockAccess& a);
  std::size_t accesses() const { return accesses_.size(); }
  std::size_t blocks() const { return blocks_.size(); }

  // Replays every block through a fresh L2 with the model's concurrency; counts per stream, every
  // dirty line written back at the end. `dirty_at_start_written` (if given) gets the bytes of
  // g.dirty_at_start_bytes that the launch evicted.
  std::vector<L2Counts> simulate(const GpuModel& g, std::size_t streams,
                                 std::uint64_t* dirty_at_start_written = nullptr) const;

 private:
  struct Block {
    std::uint64_t launch, order;
    std::size_t begin, end;  // range in accesses_
  };
  std::vector<BlockAccess> accesses_;
  std::vector<Block> blocks_;
};

}  // namespace flashsim::sim

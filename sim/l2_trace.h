// The L2 of one machine run (`.l2` or `--l2`): the run's LOADs and STOREs replayed, in trace order,
// through one sim::L2Cache, so a learner sees which re-reads an L2 serves and what reaches DRAM.
//
// The cache only counts: values come from the machine as before, and a run without an L2 counts
// exactly what it always did. Each array gets its own line-aligned region of the address space,
// in declaration order. One trace is one block on one SM; the concurrent blocks of a GPU launch
// are sim/launch.h's business (`flashsim traffic --l2`).
//
// The replay follows the machine: sync() after each step costs one access; a step back rebuilds the
// cache from the start on the next sync, since a cache state cannot be undone in place.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/l2.h"
#include "sim/machine.h"

namespace flashsim::sim {

class TraceL2 {
 public:
  // Throws std::invalid_argument for a geometry L2Cache cannot model or a capacity of 0.
  TraceL2(const Machine& m, const L2Config& config);

  // Brings the cache to the machine's position: instructions [0, m.pc()) replayed; once the
  // trace is done, the dirty lines are written back as the GPU does at the end of a kernel.
  void sync(const Machine& m) { replay_to(m, m.pc()); }
  // The same to any position of m's trace, wherever the machine stands (the whole-trace totals).
  void replay_to(const Machine& m, std::uint64_t target);

  const L2Config& config() const { return config_; }
  std::uint64_t position() const { return pos_; }
  bool flushed() const { return flushed_; }
  // Per array and over all arrays: sector hits and misses, HBM bytes read and written back.
  const L2Counts& array(std::uint32_t id) const { return cache_->counts()[id]; }
  L2Counts total() const;
  std::uint64_t resident_bytes() const { return cache_->resident_bytes(); }
  std::uint64_t dirty_bytes() const { return cache_->dirty_sectors() * config_.sector_bytes; }

  // The last replayed LOAD or STORE (instruction position() - 1), when it was one.
  struct Outcome {
    bool memory = false;
    bool write = false;
    std::uint64_t hits = 0, misses = 0;  // sectors
  };
  const Outcome& last() const { return last_; }
  // Per tile of an array: reads that missed at least one sector (went to HBM) and reads that
  // every sector of hit.
  const std::vector<std::uint32_t>& tile_hbm_reads(std::uint32_t id) const { return hbm_reads_[id]; }
  const std::vector<std::uint32_t>& tile_l2_hits(std::uint32_t id) const { return hit_reads_[id]; }
  // Fraction of the tile's sectors the cache holds now, 0..1.
  double tile_resident(const Machine& m, std::uint32_t id, std::int64_t tile) const;
  // Where array `id` starts in the modelled address space.
  std::uint64_t base(std::uint32_t id) const { return base_[id]; }

 private:
  struct Span {
    std::uint64_t addr, stride, rows, row_bytes, sectors;
  };
  Span span(const Machine& m, std::uint32_t id, std::int64_t tile_row, std::int64_t tile_col) const;
  void restart(const Machine& m);
  void replay(const Machine& m, std::uint64_t index);

  L2Config config_;
  std::unique_ptr<L2Cache> cache_;
  std::vector<std::uint64_t> base_;
  std::vector<std::vector<std::uint32_t>> hbm_reads_, hit_reads_;
  std::uint64_t pos_ = 0;
  bool flushed_ = false;
  Outcome last_;
};

}  // namespace flashsim::sim

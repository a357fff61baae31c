// A second memory level between the machine and DRAM: a last-level cache modelled on a GPU's L2.
//
// What it models: a cache of `capacity_bytes`, in lines of `line_bytes` made of sectors of
// `sector_bytes` (Hopper: 128-byte lines, 32-byte sectors). A read brings in only the sectors it
// touches (a sector miss costs one sector of HBM read); a write allocates the line without reading
// HBM and marks its sectors dirty; a dirty sector costs one sector of HBM write when its line is
// evicted or at flush(). Replacement is least-recently-used over the lines of a set: one set of
// every line by default (fully associative), or sets of `ways` lines with line addresses hashed
// onto them. With `dirty_ways`, a set holding more dirty lines than that writes its least recently
// used dirty line back early (the line stays, clean), as a GPU's L2 does when much of it is dirty;
// with `dirty_group` G, G neighbouring sets share a limit of G x dirty_ways lines.
//
// What a Hopper L2 does differently: its replacement policy and set hash are not documented, and
// it is split into two partitions (PartitionedL2 below). `flashsim-gpu l2probe` measures what a
// GPU's L2 keeps; kernels/RESULTS.md has the figures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.h"

namespace flashsim::sim {

// capacity_bytes 0: no cache, every access goes to DRAM as requested.
using L2Config = isa::L2Geometry;

// Throws std::invalid_argument unless line_bytes is a power of two, sector_bytes divides it into
// at most 32 sectors, and a non-zero capacity holds at least one line.
void validate(const L2Config& c);

// Counts for one stream of accesses (one DRAM array): sector accesses that hit and missed, and the
// HBM bytes they caused. Write-backs are charged to the array that last dirtied the line.
struct L2Counts {
  std::uint64_t hits = 0, misses = 0;  // sector accesses
  std::uint64_t hbm_read = 0, hbm_written = 0;
};

class L2Cache {
 public:
  // `slices`: how many partitions share the line numbers (page-balanced sets count the lines of a
  // page that live in this one).
  L2Cache(const L2Config& config, std::size_t streams, std::uint32_t slices = 1);

  void read(std::uint64_t addr, std::uint64_t bytes, std::uint32_t stream) { access(addr, bytes, stream, false); }
  void write(std::uint64_t addr, std::uint64_t bytes, std::uint32_t stream) { access(addr, bytes, stream, true); }
  // `rows` runs of `row_bytes` bytes, `stride` apart: one tile of a row-major array.
  void access_rows(std::uint64_t addr, std::uint64_t stride, std::uint64_t rows, std::uint64_t row_bytes,
                   std::uint32_t stream, bool write);
  void flush();  // writes back every dirty sector; the lines stay, clean
  // One line's sectors `mask`, for the partitioned model below: a home access counts hits, misses
  // and HBM bytes as access() does; a copy access (a far partition's line cached near its
  // requester) counts hits only and returns the sectors it lacked, which the home must supply.
  void access_line(std::uint64_t line, std::uint32_t mask, std::uint32_t stream, bool write) {
    touch_line(line, mask, stream, write);
  }
  std::uint32_t copy_line(std::uint64_t line, std::uint32_t mask, std::uint32_t stream);
  std::uint32_t line_shift() const { return line_shift_; }
  std::uint32_t sector_shift() const { return sector_shift_; }
  // How many of the sectors that [addr, addr + bytes) touches the cache holds now.
  std::uint64_t resident_sectors(std::uint64_t addr, std::uint64_t bytes) const;

  const L2Config& config() const { return cfg_; }
  const std::vector<L2Counts>& counts() const { return counts_; }
  std::uint64_t resident_bytes() const { return static_cast<std::uint64_t>(used_) * cfg_.line_bytes; }
  std::uint64_t dirty_sectors() const { return dirty_sectors_; }
  std::uint32_t set_of(std::uint64_t addr) const { return set_of_line(addr >> line_shift_); }
  std::uint32_t sets() const { return sets_; }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  void access(std::uint64_t addr, std::uint64_t bytes, std::uint32_t stream, bool write);
  void touch_line(std::uint64_t line, std::uint32_t mask, std::uint32_t stream, bool write);
  // The line's slot, made most recent; allocated on a miss, most recent or `rank` lines above the
  // least recently used (rank > 0).
  std::uint32_t use_line(std::uint64_t line, std::uint32_t rank = 0);
  void insert_at_rank(std::uint32_t slot, std::uint32_t rank);
  std::uint32_t set_of_line(std::uint64_t line) const;
  std::uint32_t set_of_slot(std::uint32_t slot) const { return sets_ == 1 ? 0 : slot / ways_; }  // no divide when fully associative
  // Writes back the least recently used dirty line of sets [first_set, end_set) (one dirty group).
  void clean_oldest_dirty(std::uint32_t first_set, std::uint32_t end_set);
  std::uint32_t find(std::uint64_t line, std::uint32_t set) const;  // slot, or kNone (set: set_of_line)
  std::uint32_t find_in_set(std::uint64_t line, std::uint32_t set) const;  // set-associative caches
  static std::uint8_t fingerprint(std::uint64_t line);
  void insert_index(std::uint64_t line, std::uint32_t slot);
  void erase_index(std::uint64_t line);
  void unlink(std::uint32_t slot);
  void push_front(std::uint32_t slot);
  void evict(std::uint32_t slot);

  L2Config cfg_;
  std::uint32_t sectors_per_line_ = 4;
  std::uint32_t line_shift_ = 7, sector_shift_ = 5;
  std::uint32_t slots_ = 0, used_ = 0;
  std::uint32_t ways_ = 0, sets_ = 0;  // set k owns slots [k ways_, (k + 1) ways_)
  std::uint32_t slices_ = 1;
  std::vector<std::uint64_t> tag_;
  std::vector<std::uint8_t> fp_;  // set-associative: a byte of each slot's line hash, for find_in_set
  std::vector<std::uint32_t> valid_, dirty_, owner_, prev_, next_;
  std::vector<std::uint32_t> head_, tail_;  // per set: most and least recently used
  std::vector<std::uint32_t> set_used_, set_dirty_lines_;
  std::vector<std::uint64_t> stamp_;  // dirty groups of 2+ sets: when each slot was last used
  std::uint64_t clock_ = 0;
  std::uint32_t dirty_group_ = 1;  // sets sharing one dirty limit, at most sets_
  // Fully associative only: open addressing with linear probing, line -> slot + 1 (0 marks an
  // empty bucket).
  std::vector<std::uint64_t> index_key_;
  std::vector<std::uint32_t> index_slot_;
  std::uint64_t index_mask_ = 0;
  std::uint64_t dirty_sectors_ = 0;
  std::vector<L2Counts> counts_;
};

// An L2 split into `partitions` slices of capacity / partitions, as Hopper's two: every line has
// a home slice (its address hashed); SMs are spread over the slices. A read by an SM whose slice
// is not the line's home goes through a copy in its own slice first (a hit there costs nothing),
// then to the home slice, which alone reads HBM; writes go to the home slice. Data read from both
// sides of the chip so takes room twice. With one partition this is L2Cache.
class PartitionedL2 {
 public:
  PartitionedL2(const L2Config& config, std::uint32_t partitions, std::size_t streams);
  void access_rows(std::uint64_t addr, std::uint64_t stride, std::uint64_t rows, std::uint64_t row_bytes,
                   std::uint32_t stream, bool write, std::uint32_t requester);
  void flush();
  std::vector<L2Counts> counts() const;
  std::uint32_t partitions() const { return static_cast<std::uint32_t>(slices_.size()); }
  std::uint32_t home_of(std::uint64_t addr) const;  // the slice a byte's line lives in

 private:
  void access(std::uint64_t addr, std::uint64_t bytes, std::uint32_t stream, bool write, std::uint32_t requester);
  L2Config cfg_;
  std::vector<L2Cache> slices_;
  std::uint32_t sectors_per_line_ = 4;
};

// "50MiB", "60MB", "4KiB", "1048576" -> bytes. Units: B, KB/MB/GB (10^3), KiB/MiB/GiB (2^10).
// Throws std::invalid_argument naming the text for anything else (negative, empty, trailing junk).
std::uint64_t parse_size(const std::string& text);

}  // namespace flashsim::sim

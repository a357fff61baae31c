#include "sim/launch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace flashsim::sim {

void validate(const GpuModel& g) {
  validate(g.l2);
  if (g.sms < 1) throw std::invalid_argument("the number of SMs must be at least 1, got " + std::to_string(g.sms));
  if (g.blocks_per_sm < 1)
    throw std::invalid_argument("blocks per SM must be at least 1, got " + std::to_string(g.blocks_per_sm));
  if (g.l2_partitions < 1 || g.l2_partitions > 64)
    throw std::invalid_argument("the L2 needs 1 to 64 partitions, got " + std::to_string(g.l2_partitions));
  if (g.sms > 1'000'000 || g.blocks_per_sm > 1024)
    throw std::invalid_argument("at most 1000000 SMs and 1024 blocks per SM");
}

void LaunchRecorder::begin_block(std::uint64_t launch, std::uint64_t order) {
  if (!blocks_.empty() && blocks_.back().begin == accesses_.size()) {
    blocks_.back().launch = launch;  // the previous block issued nothing: reuse it
    blocks_.back().order = order;
    return;
  }
  if (!blocks_.empty()) blocks_.back().end = accesses_.size();
  blocks_.push_back(Block{launch, order, accesses_.size(), accesses_.size()});
}

void LaunchRecorder::add(const BlockAccess& a) {
  if (blocks_.empty()) blocks_.push_back(Block{0, 0, 0, 0});
  accesses_.push_back(a);
  blocks_.back().end = accesses_.size();
}

std::vector<L2Counts> LaunchRecorder::simulate(const GpuModel& g, std::size_t streams,
                                              std::uint64_t* dirty_at_start_written) const {
  validate(g);
  PartitionedL2 cache(g.l2, g.l2_partitions, streams + 1);  // the last stream: dirty at start
  // Far from every array (those start at (k + 1) << 44), written by SMs on every side of the chip.
  constexpr std::uint64_t kForeignBase = std::uint64_t{1} << 62, kChunk = 4096;
  for (std::uint64_t off = 0, k = 0; off < g.dirty_at_start_bytes; off += kChunk, ++k)
    cache.access_rows(kForeignBase + off, kChunk, 1, std::min(kChunk, g.dirty_at_start_bytes - off),
                      static_cast<std::uint32_t>(streams), true, static_cast<std::uint32_t>(k % g.l2_partitions));
  std::vector<Block> order(blocks_);
  std::stable_sort(order.begin(), order.end(), [](const Block& a, const Block& b) {
    return a.launch != b.launch ? a.launch < b.launch : a.order < b.order;
  });
  const auto slots = static_cast<std::size_t>(g.sms * g.blocks_per_sm);
  struct Slot {
    std::size_t next, end;
    std::uint32_t slice;  // the L2 slice next to the slot's SM
  };
  std::vector<Slot> resident;
  resident.reserve(slots);
  std::size_t b = 0;
  while (b < order.size()) {
    // One launch: its blocks take free slots in order; the next launch waits for all of them.
    const std::uint64_t launch = order[b].launch;
    resident.clear();
    auto take = [&](Slot& s) {
      while (b < order.size() && order[b].launch == launch) {
        const Block& blk = order[b++];
        if (blk.begin == blk.end) continue;
        s.next = blk.begin;
        s.end = blk.end;
        return true;
      }
      return false;
    };
    for (std::size_t k = 0; k < slots; ++k) {
      Slot s{};
      s.slice = static_cast<std::uint32_t>((k % static_cast<std::size_t>(g.sms)) % g.l2_partitions);
      if (!take(s)) break;
      resident.push_back(s);
    }
    while (!resident.empty()) {
      std::size_t live = 0;
      for (std::size_t k = 0; k < resident.size(); ++k) {
        Slot s = resident[k];
        const BlockAccess& a = accesses_[s.next++];
        cache.access_rows(a.addr, a.stride, a.rows, a.row_bytes, a.stream, a.write, s.slice);
        if (s.next == s.end && !take(s)) continue;  // the slot stays empty for the rest of the launch
        resident[live++] = s;
      }
      resident.resize(live);
    }
  }
  if (dirty_at_start_written) *dirty_at_start_written = cache.counts()[streams].hbm_written;
  cache.flush();
  auto counts = cache.counts();
  counts.pop_back();
  return counts;
}

}  // namespace flashsim::sim

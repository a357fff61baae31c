#include "sim/l2_trace.h"

#include <algorithm>
#include <stdexcept>

namespace flashsim::sim {

TraceL2::TraceL2(const Machine& m, const L2Config& config) : config_(config) {
  validate(config_);
  if (config_.capacity_bytes == 0) throw std::invalid_argument("an L2 of 0 bytes is no L2; leave it out");
  const auto& arrays = m.program().arrays;
  std::uint64_t next = 0;
  for (std::uint32_t id = 0; id < arrays.size(); ++id) {
    base_.push_back(next);
    const std::uint64_t bytes = static_cast<std::uint64_t>(arrays[id].elements()) * m.element_bytes(id);
    next += (bytes + config_.line_bytes - 1) / config_.line_bytes * config_.line_bytes;  // line-aligned arrays
  }
  restart(m);
  sync(m);
}

void TraceL2::restart(const Machine& m) {
  const auto& arrays = m.program().arrays;
  cache_ = std::make_unique<L2Cache>(config_, arrays.size());
  hbm_reads_.assign(arrays.size(), {});
  hit_reads_.assign(arrays.size(), {});
  for (std::uint32_t id = 0; id < arrays.size(); ++id) {
    hbm_reads_[id].assign(static_cast<std::size_t>(arrays[id].tile_count()), 0);
    hit_reads_[id].assign(static_cast<std::size_t>(arrays[id].tile_count()), 0);
  }
  pos_ = 0;
  flushed_ = false;
  last_ = {};
}

TraceL2::Span TraceL2::span(const Machine& m, std::uint32_t id, std::int64_t tr, std::int64_t tc) const {
  const auto& a = m.program().arrays[id];
  const std::uint64_t eb = m.element_bytes(id);
  const auto rows = static_cast<std::uint64_t>(std::min(a.tile_rows, a.rows - tr * a.tile_rows));
  const auto cols = static_cast<std::uint64_t>(std::min(a.tile_cols, a.cols - tc * a.tile_cols));
  const auto stride = static_cast<std::uint64_t>(a.cols) * eb;
  const std::uint64_t addr = base_[id] + static_cast<std::uint64_t>(tr * a.tile_rows) * stride +
                             static_cast<std::uint64_t>(tc * a.tile_cols) * eb;
  // Sectors the tile touches: per row when rows are apart, once when they are contiguous.
  auto sectors_of = [&](std::uint64_t at, std::uint64_t bytes) {
    return (at + bytes - 1) / config_.sector_bytes - at / config_.sector_bytes + 1;
  };
  std::uint64_t sectors = 0;
  if (cols * eb == stride) sectors = sectors_of(addr, rows * stride);
  else
    for (std::uint64_t r = 0; r < rows; ++r) sectors += sectors_of(addr + r * stride, cols * eb);
  return {addr, stride, rows, cols * eb, sectors};
}

void TraceL2::replay(const Machine& m, std::uint64_t index) {
  const isa::Instruction& in = m.program().code[index];
  last_ = {};
  if (in.op != isa::Opcode::LOAD && in.op != isa::Opcode::STORE) return;
  const bool write = in.op == isa::Opcode::STORE;
  const std::uint32_t array = in.array();
  const std::int64_t row = in.row(), col = in.col();
  const Span s = span(m, array, row, col);
  // Hits and misses count on the accessed array's stream (write-backs may land on others).
  const L2Counts before = cache_->counts()[array];
  cache_->access_rows(s.addr, s.stride, s.rows, s.row_bytes, array, write);
  const L2Counts after = cache_->counts()[array];
  last_ = {true, write, after.hits - before.hits, after.misses - before.misses};
  if (write) return;
  const auto tile = static_cast<std::size_t>(row * m.program().arrays[array].tile_grid_cols() + col);
  ++(last_.misses ? hbm_reads_ : hit_reads_)[array][tile];
}

void TraceL2::replay_to(const Machine& m, std::uint64_t target) {
  const bool end = target >= m.size();
  target = std::min(target, m.size());
  if (target < pos_ || (flushed_ && !end)) restart(m);
  for (; pos_ < target; ++pos_) replay(m, pos_);
  if (end && !flushed_) {
    cache_->flush();
    flushed_ = true;
  }
}

L2Counts TraceL2::total() const {
  L2Counts t;
  for (const auto& c : cache_->counts()) {
    t.hits += c.hits;
    t.misses += c.misses;
    t.hbm_read += c.hbm_read;
    t.hbm_written += c.hbm_written;
  }
  return t;
}

double TraceL2::tile_resident(const Machine& m, std::uint32_t id, std::int64_t tile) const {
  const auto& a = m.program().arrays[id];
  const Span s = span(m, id, tile / a.tile_grid_cols(), tile % a.tile_grid_cols());
  std::uint64_t held = 0;
  if (s.row_bytes == s.stride) held = cache_->resident_sectors(s.addr, s.rows * s.stride);
  else
    for (std::uint64_t r = 0; r < s.rows; ++r) held += cache_->resident_sectors(s.addr + r * s.stride, s.row_bytes);
  return s.sectors ? static_cast<double>(held) / static_cast<double>(s.sectors) : 0.0;
}

}  // namespace flashsim::sim

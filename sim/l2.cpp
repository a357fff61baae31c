#include "sim/l2.h"

#include <algorithm>

#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace flashsim::sim {

namespace {
// Set bits of a sector mask. std::popcount becomes a library call on x86-64 builds without
// -mpopcnt (which this project does not assume), and it ran on every access.
inline std::uint32_t sectors_in(std::uint32_t x) {
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  x = (x + (x >> 4)) & 0x0f0f0f0fu;
  return (x * 0x01010101u) >> 24;
}
}  // namespace

void validate(const L2Config& c) {
  if (std::string why = isa::l2_geometry_error(c); !why.empty()) throw std::invalid_argument(why);
}

L2Cache::L2Cache(const L2Config& config, std::size_t streams, std::uint32_t slices)
    : cfg_(config), slices_(std::max<std::uint32_t>(1, slices)), counts_(streams) {
  validate(cfg_);
  sectors_per_line_ = cfg_.line_bytes / cfg_.sector_bytes;
  line_shift_ = static_cast<std::uint32_t>(std::countr_zero(cfg_.line_bytes));
  sector_shift_ = static_cast<std::uint32_t>(std::countr_zero(cfg_.sector_bytes));
  const auto lines = static_cast<std::uint32_t>(cfg_.capacity_bytes / cfg_.line_bytes);
  ways_ = cfg_.ways && cfg_.ways < lines ? cfg_.ways : lines;
  sets_ = ways_ ? lines / ways_ : 0;
  slots_ = sets_ * ways_;  // a set-associative L2 of lines not divisible by its ways drops the rest
  head_.assign(sets_, kNone);
  tail_.assign(sets_, kNone);
  set_used_.assign(sets_, 0);
  set_dirty_lines_.assign(sets_, 0);
  dirty_group_ = std::max<std::uint32_t>(1, std::min(cfg_.dirty_group, sets_));
  if (dirty_group_ > 1) stamp_.assign(slots_, 0);  // one set's own LRU order needs no stamps
  tag_.resize(slots_);
  if (sets_ > 1) fp_.resize(slots_);
  valid_.resize(slots_);
  dirty_.resize(slots_);
  owner_.resize(slots_);
  prev_.resize(slots_);
  next_.resize(slots_);
  if (sets_ == 1) {  // fully associative: a hash index finds a line's slot (a set is scanned)
    std::uint64_t buckets = std::bit_ceil(std::max<std::uint64_t>(2 * std::uint64_t{slots_}, 16));
    index_key_.assign(buckets, 0);
    index_slot_.assign(buckets, 0);
    index_mask_ = buckets - 1;
  }
}

namespace {
std::uint64_t bucket_of(std::uint64_t line) {
  line ^= line >> 33;  // murmur3's finalizer: neighbouring lines spread over the table
  line *= 0xff51afd7ed558ccdULL;
  line ^= line >> 33;
  return line;
}
}  // namespace

std::uint32_t L2Cache::find(std::uint64_t line, std::uint32_t set) const {
  if (sets_ > 1) return find_in_set(line, set);
  for (std::uint64_t b = bucket_of(line) & index_mask_;; b = (b + 1) & index_mask_) {
    if (index_slot_[b] == 0) return kNone;
    if (index_key_[b] == line) return index_slot_[b] - 1;
  }
}

// A set's slots fill in order and are never emptied (an eviction reuses its slot), so its lines
// are its first set_used_ slots. Each slot keeps a byte of its line's hash; eight of them are
// compared at once (a zero byte of fingerprints ^ pattern marks a candidate), and only candidates'
// full tags are read: at Hopper's 32 ways a lookup reads 32 bytes, which beats probing a hash
// table of the whole cache and deleting from it on every eviction.
std::uint8_t L2Cache::fingerprint(std::uint64_t line) {
  return static_cast<std::uint8_t>((line * 0x9e3779b97f4a7c15ULL) >> 56);
}

std::uint32_t L2Cache::find_in_set(std::uint64_t line, std::uint32_t set) const {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  const std::uint32_t first = set * ways_, used = set_used_[set];
  const std::uint8_t f = fingerprint(line);
  const std::uint64_t pattern = kOnes * f;
  std::uint32_t w = 0;
  for (; w + 8 <= used; w += 8) {
    std::uint64_t word;
    std::memcpy(&word, &fp_[first + w], 8);
    const std::uint64_t x = word ^ pattern;
    // every zero byte of x gets its high bit; a byte above a zero one may too (checked by its tag)
    for (std::uint64_t m = (x - kOnes) & ~x & kHighs; m; m &= m - 1) {
      const std::uint32_t s = first + w + static_cast<std::uint32_t>(std::countr_zero(m) >> 3);
      if (tag_[s] == line) return s;
    }
  }
  for (; w < used; ++w)
    if (fp_[first + w] == f && tag_[first + w] == line) return first + w;
  return kNone;
}

void L2Cache::insert_index(std::uint64_t line, std::uint32_t slot) {
  std::uint64_t b = bucket_of(line) & index_mask_;
  while (index_slot_[b] != 0) b = (b + 1) & index_mask_;
  index_key_[b] = line;
  index_slot_[b] = slot + 1;
}

// Backward-shift deletion keeps every probe chain unbroken without tombstones.
void L2Cache::erase_index(std::uint64_t line) {
  std::uint64_t b = bucket_of(line) & index_mask_;
  while (index_key_[b] != line || index_slot_[b] == 0) b = (b + 1) & index_mask_;
  std::uint64_t hole = b;
  for (std::uint64_t j = (hole + 1) & index_mask_; index_slot_[j] != 0; j = (j + 1) & index_mask_) {
    std::uint64_t home = bucket_of(index_key_[j]) & index_mask_;
    // Move j into the hole unless its home lies cyclically in (hole, j].
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    index_key_[hole] = index_key_[j];
    index_slot_[hole] = index_slot_[j];
    hole = j;
  }
  index_slot_[hole] = 0;
}

void L2Cache::unlink(std::uint32_t s) {
  const std::uint32_t set = set_of_slot(s);
  if (prev_[s] != kNone) next_[prev_[s]] = next_[s];
  else head_[set] = next_[s];
  if (next_[s] != kNone) prev_[next_[s]] = prev_[s];
  else tail_[set] = prev_[s];
}

void L2Cache::push_front(std::uint32_t s) {
  const std::uint32_t set = set_of_slot(s);
  prev_[s] = kNone;
  next_[s] = head_[set];
  if (head_[set] != kNone) prev_[head_[set]] = s;
  head_[set] = s;
  if (tail_[set] == kNone) tail_[set] = s;
}

void L2Cache::evict(std::uint32_t s) {
  if (dirty_[s]) {
    const auto n = static_cast<std::uint64_t>(sectors_in(dirty_[s]));
    counts_[owner_[s]].hbm_written += n << sector_shift_;
    dirty_sectors_ -= n;
    --set_dirty_lines_[set_of_slot(s)];
  }
  if (sets_ == 1) erase_index(tag_[s]);
  unlink(s);
}

namespace {
std::uint64_t page_offset_hash(std::uint64_t page) {  // where a page's rotation starts
  std::uint64_t h = (page + 0x2545f4914f6cdd1dULL) * 0x9e3779b97f4a7c15ULL;
  h ^= h >> 31;
  h *= 0xd6e8feb86659fd93ULL;
  h ^= h >> 32;
  return h;
}
}  // namespace

std::uint32_t L2Cache::set_of_line(std::uint64_t line) const {
  if (sets_ == 1) return 0;
  if (cfg_.page_lines) {  // this slice's lines of the page in turn over the sets, from a page's offset
    const std::uint64_t page = line / cfg_.page_lines, in_page = (line % cfg_.page_lines) / slices_;
    return static_cast<std::uint32_t>((in_page + page_offset_hash(page)) % sets_);
  }
  // A hash unlike bucket_of's and the partitions', so that sets, slices and the index spread
  // lines independently.
  std::uint64_t h = (line + 0x632be59bd9b4e019ULL) * 0x9e6c63d0676a9a99ULL;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 32;
  return static_cast<std::uint32_t>(h % sets_);
}

void L2Cache::insert_at_rank(std::uint32_t s, std::uint32_t rank) {
  const std::uint32_t set = set_of_slot(s);
  std::uint32_t below = tail_[set];  // s goes just above `below`, `rank` lines up from the end
  for (std::uint32_t k = 1; k < rank && below != kNone && prev_[below] != kNone; ++k) below = prev_[below];
  if (below == kNone || prev_[below] == kNone) {
    push_front(s);
    return;
  }
  const std::uint32_t above = prev_[below];
  prev_[s] = above;
  next_[s] = below;
  prev_[below] = s;
  next_[above] = s;
}

std::uint32_t L2Cache::use_line(std::uint64_t line, std::uint32_t rank) {
  const std::uint32_t set = set_of_line(line);
  std::uint32_t s = find(line, set);
  if (s == kNone) {
    if (set_used_[set] < ways_) {
      s = set * ways_ + set_used_[set]++;
      ++used_;
    } else {
      s = tail_[set];
      evict(s);
    }
    tag_[s] = line;
    if (sets_ > 1) fp_[s] = fingerprint(line);
    valid_[s] = 0;
    dirty_[s] = 0;
    if (sets_ == 1) insert_index(line, s);
    if (rank) insert_at_rank(s, rank);
    else push_front(s);
  } else if (s != head_[set]) {
    unlink(s);
    push_front(s);
  }
  if (dirty_group_ > 1) stamp_[s] = ++clock_;
  return s;
}

// The group's least recently used dirty line (each set's oldest, from its LRU end; between sets,
// by last use), written back and kept, clean.
void L2Cache::clean_oldest_dirty(std::uint32_t first_set, std::uint32_t end_set) {
  std::uint32_t oldest = kNone, oldest_set = first_set;
  for (std::uint32_t set = first_set; set < end_set; ++set)
    for (std::uint32_t s = tail_[set]; s != kNone; s = prev_[s])
      if (dirty_[s]) {
        if (oldest == kNone || stamp_[s] < stamp_[oldest]) oldest = s, oldest_set = set;
        break;
      }
  if (oldest == kNone) return;
  const auto n = static_cast<std::uint64_t>(sectors_in(dirty_[oldest]));
  counts_[owner_[oldest]].hbm_written += n << sector_shift_;
  dirty_sectors_ -= n;
  dirty_[oldest] = 0;
  --set_dirty_lines_[oldest_set];
}

void L2Cache::touch_line(std::uint64_t line, std::uint32_t mask, std::uint32_t stream, bool write) {
  L2Counts& c = counts_[stream];
  const std::uint32_t s = use_line(line);
  const std::uint32_t present = valid_[s] & mask, absent = mask & ~valid_[s];
  c.hits += static_cast<std::uint64_t>(sectors_in(present));
  c.misses += static_cast<std::uint64_t>(sectors_in(absent));
  valid_[s] |= mask;
  if (write) {
    dirty_sectors_ += static_cast<std::uint64_t>(sectors_in(mask & ~dirty_[s]));
    const bool newly_dirty = dirty_[s] == 0;
    dirty_[s] |= mask;
    owner_[s] = stream;
    if (newly_dirty) {
      const std::uint32_t set = set_of_slot(s);
      ++set_dirty_lines_[set];
      if (cfg_.dirty_ways) {  // the sets sharing this one's limit: [first, end)
        const std::uint32_t first = set / dirty_group_ * dirty_group_, end = std::min(sets_, first + dirty_group_);
        std::uint32_t dirty = 0;
        for (std::uint32_t k = first; k < end; ++k) dirty += set_dirty_lines_[k];
        if (dirty > cfg_.dirty_ways * (end - first)) clean_oldest_dirty(first, end);
      }
    }
  } else {
    c.hbm_read += static_cast<std::uint64_t>(sectors_in(absent)) << sector_shift_;
  }
}

void L2Cache::access(std::uint64_t addr, std::uint64_t bytes, std::uint32_t stream, bool write) {
  if (bytes == 0) return;
  if (slots_ == 0) {  // no cache: DRAM sees exactly what was asked for
    L2Counts& c = counts_[stream];
    const std::uint64_t first = addr >> sector_shift_, last = (addr + bytes - 1) >> sector_shift_;
    c.misses += last - first + 1;
    (write ? c.hbm_written : c.hbm_read) += bytes;
    return;
  }
  const std::uint64_t end = addr + bytes;
  const std::uint64_t first_line = addr >> line_shift_, last_line = (end - 1) >> line_shift_;
  const std::uint32_t full = sectors_per_line_ == 32 ? 0xffffffffu : (1u << sectors_per_line_) - 1;
  for (std::uint64_t line = first_line; line <= last_line; ++line) {
    std::uint32_t mask = full;
    const std::uint64_t line_start = line << line_shift_;
    if (line == first_line || line == last_line) {
      const std::uint64_t lo = std::max(addr, line_start) - line_start;
      const std::uint64_t hi = std::min(end, line_start + cfg_.line_bytes) - line_start;  // exclusive
      const auto s0 = static_cast<std::uint32_t>(lo >> sector_shift_);
      const auto s1 = static_cast<std::uint32_t>((hi - 1) >> sector_shift_);
      mask = (s1 - s0 + 1 == 32 ? 0xffffffffu : ((1u << (s1 - s0 + 1)) - 1)) << s0;
    }
    touch_line(line, mask, stream, write);
  }
}

void L2Cache::access_rows(std::uint64_t addr, std::uint64_t stride, std::uint64_t rows, std::uint64_t row_bytes,
                          std::uint32_t stream, bool write) {
  if (row_bytes == stride) {  // the rows are contiguous: one run
    access(addr, rows * row_bytes, stream, write);
    return;
  }
  for (std::uint64_t r = 0; r < rows; ++r) access(addr + r * stride, row_bytes, stream, write);
}

std::uint32_t L2Cache::copy_line(std::uint64_t line, std::uint32_t mask, std::uint32_t stream) {
  const std::uint32_t s = use_line(line, cfg_.copy_rank);
  const std::uint32_t absent = mask & ~valid_[s];
  counts_[stream].hits += static_cast<std::uint64_t>(sectors_in(mask & valid_[s]));
  valid_[s] |= mask;
  return absent;
}

PartitionedL2::PartitionedL2(const L2Config& config, std::uint32_t partitions, std::size_t streams) : cfg_(config) {
  validate(cfg_);
  if (partitions < 1 || partitions > 64) throw std::invalid_argument("the L2 needs 1 to 64 partitions");
  L2Config slice = cfg_;
  slice.capacity_bytes = cfg_.capacity_bytes / partitions / cfg_.line_bytes * cfg_.line_bytes;
  if (cfg_.capacity_bytes && slice.capacity_bytes == 0)
    throw std::invalid_argument("an L2 of " + std::to_string(cfg_.capacity_bytes) + " bytes cannot be split into " +
                                std::to_string(partitions) + " partitions of whole lines");
  for (std::uint32_t p = 0; p < partitions; ++p) slices_.emplace_back(slice, streams, partitions);
  sectors_per_line_ = cfg_.line_bytes / cfg_.sector_bytes;
}

void PartitionedL2::access_rows(std::uint64_t addr, std::uint64_t stride, std::uint64_t rows, std::uint64_t row_bytes,
                                std::uint32_t stream, bool write, std::uint32_t requester) {
  if (slices_.size() == 1) {
    slices_[0].access_rows(addr, stride, rows, row_bytes, stream, write);
    return;
  }
  if (row_bytes == stride) {
    access(addr, rows * row_bytes, stream, write, requester);
    return;
  }
  for (std::uint64_t r = 0; r < rows; ++r) access(addr + r * stride, row_bytes, stream, write, requester);
}

void PartitionedL2::access(std::uint64_t addr, std::uint64_t bytes, std::uint32_t stream, bool write, std::uint32_t requester) {
  if (bytes == 0) return;
  const std::uint32_t line_shift = slices_[0].line_shift(), sector_shift = slices_[0].sector_shift();
  const std::uint64_t end = addr + bytes;
  const std::uint64_t first = addr >> line_shift, last = (end - 1) >> line_shift;
  const std::uint32_t full = sectors_per_line_ == 32 ? 0xffffffffu : (1u << sectors_per_line_) - 1;
  const auto n = static_cast<std::uint64_t>(slices_.size());
  const std::uint32_t near = requester % static_cast<std::uint32_t>(n);
  for (std::uint64_t line = first; line <= last; ++line) {
    std::uint32_t mask = full;
    const std::uint64_t start = line << line_shift;
    if (line == first || line == last) {
      const std::uint64_t lo = std::max(addr, start) - start, hi = std::min(end, start + cfg_.line_bytes) - start;
      const auto s0 = static_cast<std::uint32_t>(lo >> sector_shift), s1 = static_cast<std::uint32_t>((hi - 1) >> sector_shift);
      mask = (s1 - s0 + 1 == 32 ? 0xffffffffu : ((1u << (s1 - s0 + 1)) - 1)) << s0;
    }
    const std::uint32_t home = home_of(start);
    if (write || home == near) {
      slices_[home].access_line(line, mask, stream, write);
      continue;
    }
    const std::uint32_t absent = slices_[near].copy_line(line, mask, stream);
    if (absent) slices_[home].access_line(line, absent, stream, false);
  }
}

std::uint32_t PartitionedL2::home_of(std::uint64_t addr) const {
  if (cfg_.page_lines) {  // a page's lines take the slices in turn, from a page's offset
    const std::uint64_t line = addr >> slices_[0].line_shift();
    return static_cast<std::uint32_t>((line % cfg_.page_lines + page_offset_hash(line / cfg_.page_lines)) % slices_.size());
  }
  // Hashed so that neighbouring lines spread over the slices.
  const std::uint64_t h = (addr >> slices_[0].line_shift()) * 0x9e3779b97f4a7c15ULL;
  return static_cast<std::uint32_t>((h >> 32) % slices_.size());
}

void PartitionedL2::flush() {
  for (auto& s : slices_) s.flush();
}

std::vector<L2Counts> PartitionedL2::counts() const {
  std::vector<L2Counts> total = slices_[0].counts();
  for (std::size_t p = 1; p < slices_.size(); ++p)
    for (std::size_t k = 0; k < total.size(); ++k) {
      const L2Counts& c = slices_[p].counts()[k];
      total[k].hits += c.hits;
      total[k].misses += c.misses;
      total[k].hbm_read += c.hbm_read;
      total[k].hbm_written += c.hbm_written;
    }
  return total;
}

std::uint64_t L2Cache::resident_sectors(std::uint64_t addr, std::uint64_t bytes) const {
  if (bytes == 0 || slots_ == 0) return 0;
  std::uint64_t held = 0;
  const std::uint64_t first = addr >> sector_shift_, last = (addr + bytes - 1) >> sector_shift_;
  for (std::uint64_t sector = first; sector <= last; ++sector) {
    const std::uint64_t line = sector >> (line_shift_ - sector_shift_);
    const std::uint32_t s = find(line, set_of_line(line));
    if (s != kNone && (valid_[s] >> (sector & (sectors_per_line_ - 1)) & 1u)) ++held;
  }
  return held;
}

void L2Cache::flush() {
  for (std::uint32_t set = 0; set < sets_; ++set) {
    for (std::uint32_t s = head_[set]; s != kNone; s = next_[s]) {
      if (!dirty_[s]) continue;
      counts_[owner_[s]].hbm_written += static_cast<std::uint64_t>(sectors_in(dirty_[s])) << sector_shift_;
      dirty_[s] = 0;
    }
    set_dirty_lines_[set] = 0;
  }
  dirty_sectors_ = 0;
}

std::uint64_t parse_size(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("invalid size '" + text + "': " + why +
                                 " (write e.g. 50MiB, 60MB, 4096KiB or a number of bytes)");
  };
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (text.empty()) throw bad("empty");
  if (i == 0) throw bad("it must start with a non-negative whole number");
  std::uint64_t value = 0;
  for (std::size_t k = 0; k < i; ++k) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[k] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) throw bad("too large");
    value = value * 10 + digit;
  }
  std::string unit = text.substr(i);
  std::uint64_t scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KB" || unit == "kB") scale = 1000;
  else if (unit == "MB") scale = 1000 * 1000;
  else if (unit == "GB") scale = 1000ull * 1000 * 1000;
  else if (unit == "KiB") scale = 1ull << 10;
  else if (unit == "MiB") scale = 1ull << 20;
  else if (unit == "GiB") scale = 1ull << 30;
  else throw bad("unknown unit '" + unit + "'");
  if (value > std::numeric_limits<std::uint64_t>::max() / scale) throw bad("too large");
  return value * scale;
}

}  // namespace flashsim::sim

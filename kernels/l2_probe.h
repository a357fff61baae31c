// L2 probes: two elementary access patterns swept over buffer sizes around the L2 capacity, run on
// the GPU (HBM bytes from CUPTI) and through the tile machine's L2 model (sim/launch.h) with the
// same grid, so that the model's cache is checked on the GPU's own behaviour, apart from any
// schedule:
//   reread  a buffer of W bytes read in `passes` launches: HBM reads beyond the first pass's W are
//           what the L2 did not keep from one pass to the next.
//   rmw     a buffer of W bytes read-modified-written in `passes` launches: HBM reads beyond W are
//           what the L2 lost between passes; HBM writes (with the write-back of what the range left
//           dirty) beyond W are dirty lines that went out before the last pass.
//   copy    a buffer X of W bytes read and a buffer Y of W bytes written (Y = X + 1, as a softmax's
//           last pass does) in `passes` launches: HBM reads beyond W are what the L2 lost of the
//           clean X, HBM writes beyond W what it wrote back of the dirty Y before the last pass. An
//           LRU cache loses both alike; a cache that keeps dirty lines first loses more of X.
// The range starts after an L2 flush, so the first pass always reads W from HBM.
// Each probe kernel is a persistent grid of sms x blocks_per_sm blocks of 256 threads walking the
// buffer in 16-byte loads, grid-stride: block b touches 4 KiB chunk b, b + grid, b + 2 grid, ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flashsim::gpu {

enum class ProbePattern { Reread, Rmw, Copy };
const char* probe_name(ProbePattern p);

// "reread" / "rmw" / "copy" -> the pattern; false for any other name.
bool parse_probe_pattern(const std::string& name, ProbePattern* out);

struct ProbeCase {
  ProbePattern pattern = ProbePattern::Reread;
  std::uint64_t bytes = 0;  // W, a multiple of 4096 (copy: X and Y are W each)
  int passes = 2;           // launches inside the measured range
};

// The probe kernels' grid: blocks of 256 threads, each a 4 KiB chunk per step.
constexpr std::uint64_t kProbeChunk = 4096;

struct ProbeTraffic {
  std::uint64_t read = 0, written = 0;
};

// What the L2 model predicts for the measured range of `c`, dirty lines written back at the end.
// `ways`, `dirty_ways`, `dirty_group`: the L2's sets and dirty-line limit (sim/l2.h; 0: fully
// associative, no dirty limit);
// `dirty_at_start`: the profiler's dirty lines at the range's start (sim/launch.h), whose
// write-back the range pays for when the probe evicts them.
ProbeTraffic probe_predicted(const ProbeCase& c, std::uint64_t l2_bytes, int sms, int blocks_per_sm,
                             int l2_partitions, std::uint32_t ways = 0, std::uint32_t dirty_ways = 0,
                             std::uint64_t dirty_at_start = 0, std::uint32_t page_lines = 0,
                             std::uint32_t copy_rank = 0, std::uint32_t dirty_group = 1);

// "0.25,0.5,1.5" (fractions of the L2) -> buffer sizes, each rounded to a multiple of 4 KiB.
// Throws std::invalid_argument naming the field that is not a positive number below 16.
std::vector<std::uint64_t> probe_sizes(const std::string& fractions, std::uint64_t l2_bytes);

}  // namespace flashsim::gpu

namespace flashsim::gpu {
// GPU side (kernels/l2_probe.cu): the kernels' occupancy (the smaller of the two), and one pass.
int probe_blocks_per_sm();
void probe_pass(ProbePattern pattern, void* buf, std::uint64_t bytes, int grid, float* sink);
}  // namespace flashsim::gpu

#include "kernels/l2_probe.h"

#include <cmath>
#include <stdexcept>

#include "sim/csv_text.h"
#ifdef FLASHSIM_HAVE_SIM
#include "sim/launch.h"
#endif

namespace flashsim::gpu {

const char* probe_name(ProbePattern p) {
  return p == ProbePattern::Reread ? "reread" : p == ProbePattern::Rmw ? "rmw" : "copy";
}

bool parse_probe_pattern(const std::string& name, ProbePattern* out) {
  for (ProbePattern p : {ProbePattern::Reread, ProbePattern::Rmw, ProbePattern::Copy})
    if (name == probe_name(p)) {
      *out = p;
      return true;
    }
  return false;
}

#ifdef FLASHSIM_HAVE_SIM
namespace {

// One launch of the probe kernel: block b walks chunks b, b + grid, ... as the kernel does. The
// copy pattern's Y lies right after X, as in the GPU's buffer.
void record_pass(sim::LaunchRecorder& rec, std::uint64_t launch, std::uint64_t bytes, std::uint64_t grid,
                 ProbePattern pattern, std::uint32_t stream) {
  const std::uint64_t chunks = bytes / kProbeChunk;
  for (std::uint64_t b = 0; b < grid && b < chunks; ++b) {
    rec.begin_block(launch, b);
    for (std::uint64_t c = b; c < chunks; c += grid) {
      sim::BlockAccess a;
      a.addr = c * kProbeChunk;
      a.stride = kProbeChunk;
      a.rows = 1;
      a.row_bytes = static_cast<std::uint32_t>(kProbeChunk);
      a.stream = stream;
      rec.add(a);
      if (pattern != ProbePattern::Reread) {
        if (pattern == ProbePattern::Copy) a.addr += bytes;
        a.write = true;
        rec.add(a);
      }
    }
  }
}

}  // namespace

ProbeTraffic probe_predicted(const ProbeCase& c, std::uint64_t l2_bytes, int sms, int blocks_per_sm,
                             int l2_partitions, std::uint32_t ways, std::uint32_t dirty_ways,
                             std::uint64_t dirty_at_start, std::uint32_t page_lines, std::uint32_t copy_rank,
                             std::uint32_t dirty_group) {
  if (c.bytes == 0 || c.bytes % kProbeChunk) throw std::invalid_argument("probe buffer not a multiple of 4 KiB");
  if (c.passes < 1) throw std::invalid_argument("a probe needs at least one measured pass");
  sim::GpuModel g;
  g.l2.capacity_bytes = l2_bytes;
  g.l2.ways = ways;
  g.l2.dirty_ways = dirty_ways;
  g.l2.dirty_group = dirty_group;
  g.l2.page_lines = page_lines;
  g.l2.copy_rank = copy_rank;
  g.dirty_at_start_bytes = dirty_at_start;
  g.sms = sms;
  g.blocks_per_sm = blocks_per_sm;
  g.l2_partitions = static_cast<std::uint32_t>(l2_partitions);
  const std::uint64_t grid = static_cast<std::uint64_t>(sms) * static_cast<std::uint64_t>(blocks_per_sm);
  // Every pass is one launch; the range starts after a flush (clean, empty for the probe's buffer)
  // and its dirty lines are written back at the end, as the measurement's write-back run does.
  sim::LaunchRecorder rec;
  for (int p = 0; p < c.passes; ++p) record_pass(rec, static_cast<std::uint64_t>(p), c.bytes, grid, c.pattern, 0);
  std::uint64_t foreign = 0;
  const auto counts = rec.simulate(g, 1, &foreign);
  return ProbeTraffic{counts[0].hbm_read, counts[0].hbm_written + foreign};
}
#else
ProbeTraffic probe_predicted(const ProbeCase&, std::uint64_t, int, int, int, std::uint32_t, std::uint32_t, std::uint64_t,
                             std::uint32_t, std::uint32_t, std::uint32_t) {
  throw std::runtime_error("the L2 model needs flashsim_sim, which this build lacks");
}
#endif

std::vector<std::uint64_t> probe_sizes(const std::string& fractions, std::uint64_t l2_bytes) {
  std::vector<std::uint64_t> out;
  for (const auto& f : sim::csv_split(fractions)) {
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(f, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != f.size() || !(x > 0) || !(x < 16))
      throw std::invalid_argument("--fractions: '" + f + "' is not a fraction of the L2 in (0, 16)");
    const auto bytes = static_cast<std::uint64_t>(std::llround(x * static_cast<double>(l2_bytes) / kProbeChunk));
    out.push_back(std::max<std::uint64_t>(1, bytes) * kProbeChunk);
  }
  if (out.empty()) throw std::invalid_argument("--fractions: no sizes given");
  return out;
}

}  // namespace flashsim::gpu

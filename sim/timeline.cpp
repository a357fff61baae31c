#include "sim/timeline.h"

#include <algorithm>
#include <numeric>

namespace flashsim::sim {

namespace {

// Packs the lane's bars (already sorted by x0) into rows, first fit, and sums the cycles that
// at least one bar covers.
double pack(TimelineLane& lane) {
  std::vector<double> row_end;
  double covered = 0, run0 = 0, run1 = -1;
  for (TimelineBar& b : lane.bars) {
    std::uint32_t r = 0;
    while (r < row_end.size() && b.x0 < row_end[r] - 1e-9) ++r;
    if (r == row_end.size()) row_end.push_back(b.x1);
    else row_end[r] = b.x1;
    b.row = r;
    if (b.x0 > run1) {
      if (run1 > run0) covered += run1 - run0;
      run0 = b.x0, run1 = b.x1;
    } else {
      run1 = std::max(run1, b.x1);
    }
  }
  if (run1 > run0) covered += run1 - run0;
  lane.rows = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(row_end.size()));
  return covered;
}

}  // namespace

Timeline build_timeline(const TimingResult& r) {
  Timeline t;
  t.cycles = r.cycles;
  t.bound = r.bound;
  for (std::size_t u = 0; u < isa::kUnitCount; ++u) {
    TimelineLane lane;
    lane.kind = TimelineLane::Kind::Unit;
    lane.name = std::string(isa::kUnitNames[u]);
    lane.index = static_cast<std::uint32_t>(u);
    lane.busy_cycles = r.units[u].busy_cycles;
    lane.busy_fraction = r.units[u].busy_fraction;
    t.lanes.push_back(std::move(lane));
  }
  std::uint32_t copies = 0;
  for (const TimedStep& s : r.steps) copies = std::max(copies, s.copy + 1);
  const std::size_t nstreams = std::max<std::size_t>(1, r.streams.size());
  // A lane for each stream that issues an instruction (not the implicit "main" of a program
  // whose every instruction follows a .stream, nor a stream of barriers only).
  std::vector<std::uint32_t> lane_of(copies * nstreams, 0);
  for (const TimedStep& s : r.steps) lane_of[s.copy * nstreams + s.stream] = 1;
  for (std::uint32_t c = 0; c < copies; ++c)
    for (std::size_t s = 0; s < nstreams; ++s) {
      if (!lane_of[c * nstreams + s]) continue;
      lane_of[c * nstreams + s] = static_cast<std::uint32_t>(t.lanes.size());
      TimelineLane lane;
      lane.kind = TimelineLane::Kind::Stream;
      const std::string name = s < r.streams.size() ? r.streams[s] : "main";
      lane.name = copies > 1 ? std::to_string(c) + ":" + name : name;
      lane.index = static_cast<std::uint32_t>(s);
      lane.copy = c;
      t.lanes.push_back(std::move(lane));
    }
  // Each lane's steps in the order of their issue (stable: trace order breaks ties).
  std::vector<std::uint64_t> order(r.steps.size());
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) { return r.steps[a].issue < r.steps[b].issue; });
  t.places.resize(r.steps.size());
  for (std::uint64_t id : order) {
    const TimedStep& s = r.steps[id];
    const TimelineBar bar{id, s.issue, std::max(s.end, s.issue), 0, s.critical};
    Timeline::Place& p = t.places[id];
    p.unit_lane = static_cast<std::uint32_t>(s.unit);
    p.stream_lane = lane_of[s.copy * nstreams + s.stream];
    p.unit_bar = static_cast<std::uint32_t>(t.lanes[p.unit_lane].bars.size());
    p.stream_bar = static_cast<std::uint32_t>(t.lanes[p.stream_lane].bars.size());
    t.lanes[p.unit_lane].bars.push_back(bar);
    t.lanes[p.stream_lane].bars.push_back(bar);
  }
  for (TimelineLane& lane : t.lanes) {
    const double covered = pack(lane);
    for (const TimelineBar& b : lane.bars) lane.max_width = std::max(lane.max_width, b.x1 - b.x0);
    if (lane.kind == TimelineLane::Kind::Stream) {
      lane.busy_cycles = covered;
      lane.busy_fraction = t.cycles > 0 ? covered / t.cycles : 0;
    }
  }
  return t;
}

std::vector<TimelineBar> visible_bars(const TimelineLane& lane, double c0, double c1, double min_width) {
  std::vector<TimelineBar> out;
  auto first = std::lower_bound(lane.bars.begin(), lane.bars.end(), c0 - lane.max_width,
                                [](const TimelineBar& b, double x) { return b.x0 < x; });
  std::vector<TimelineBar> pending(lane.rows);
  std::vector<bool> has(lane.rows, false);
  for (auto it = first; it != lane.bars.end() && it->x0 <= c1; ++it) {
    if (it->x1 < c0) continue;
    TimelineBar& p = pending[it->row];
    if (has[it->row] && it->x0 - p.x1 < min_width && (p.x1 - p.x0 < min_width || it->x1 - it->x0 < min_width)) {
      p.x1 = std::max(p.x1, it->x1);
      p.critical = p.critical || it->critical;
      continue;
    }
    if (has[it->row]) out.push_back(p);
    p = *it;
    has[it->row] = true;
  }
  for (std::uint32_t r = 0; r < lane.rows; ++r)
    if (has[r]) out.push_back(pending[r]);
  return out;
}

}  // namespace flashsim::sim

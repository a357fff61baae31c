// The lanes of a timed run (sim/timing.h), as `--perfetto` and the viewer's Units panel draw
// them: one lane per functional unit and one per stream (per copy when there are several), each
// instruction a bar from its issue to the end of its work on its unit's lane and on its stream's
// lane. Bars that overlap in time (a unit shares its rate among the instructions in flight; a
// stream goes on past its asynchronous ones) are packed into rows of the lane, first fit, so that
// no two bars of one row overlap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/timing.h"

namespace flashsim::sim {

struct TimelineBar {
  std::uint64_t step = 0;  // index into TimingResult::steps
  double x0 = 0, x1 = 0;   // cycles: issue and end of the work
  std::uint32_t row = 0;   // row of the lane; bars of one row never overlap
  bool critical = false;   // on the critical path
};

struct TimelineLane {
  enum class Kind : std::uint8_t { Unit, Stream };
  Kind kind = Kind::Unit;
  std::string name;          // "tensor", "producer", "1:consumer" (copy 1 of several)
  std::uint32_t index = 0;   // the unit (isa::Unit) or the stream number
  std::uint32_t copy = 0;    // streams: the program copy
  std::uint32_t rows = 1;    // rows the bars needed (at least 1)
  double busy_cycles = 0;    // units: work / rate; streams: cycles covered by a bar
  double busy_fraction = 0;  // busy_cycles / the run's cycles
  double max_width = 0;      // the longest bar, in cycles (visible_bars searches with it)
  std::vector<TimelineBar> bars;  // sorted by x0
};

struct Timeline {
  double cycles = 0;
  std::string bound;
  std::vector<TimelineLane> lanes;  // the four units, then the streams with instructions (copy-major)
  // Per step of TimingResult::steps: its bar on its unit lane and on its stream lane.
  struct Place {
    std::uint32_t unit_lane = 0, unit_bar = 0, stream_lane = 0, stream_bar = 0;
  };
  std::vector<Place> places;
};

Timeline build_timeline(const TimingResult& r);

// The bars of `lane` that intersect [c0, c1], with runs of bars of one row narrower than
// `min_width` cycles merged into one bar (critical when any of them is): what a screen of that
// resolution can show. Cost: the bars in the window, found by binary search.
std::vector<TimelineBar> visible_bars(const TimelineLane& lane, double c0, double c1, double min_width);

}  // namespace flashsim::sim

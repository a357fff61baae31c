// Text and JSON views of a machine: the lesson-style step table, the cost summary, JSON.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "sim/machine.h"

namespace flashsim::sim {
class TraceL2;
struct TimingResult;
}

namespace flashsim::sim {

struct TableOptions {
  bool symbolic = false;
  std::uint64_t max_rows = 200;  // the rest is summarised in one line
  TraceL2* l2 = nullptr;         // adds an L2 column: what each LOAD and STORE did in the cache
};

// Resets the machine, then steps it to the end while printing one row per step.
void print_step_table(Machine& m, std::ostream& os, const TableOptions& opt = {});
// With an L2 (synced to the machine), also its hits, misses and the bytes that reached DRAM.
void print_cost_summary(const Machine& m, std::ostream& os, const TraceL2* l2 = nullptr);
void print_outputs(const Machine& m, std::ostream& os, std::size_t max_values = 16);
// One JSON object; the machine is expected to have run.
// With an L2: an "l2" object and, per array, hbm_bytes_read, hbm_bytes_written, l2_hits, l2_misses.
// With a timing (programs with .units): a "timing" object, {"cycles", "bound", "units": {name:
// {"busy_cycles", "busy_fraction"}}, "streams": [names]}.
void print_json(const Machine& m, std::ostream& os, const TraceL2* l2 = nullptr, const TimingResult* timing = nullptr);
// The time model's block after the cost summary (sim/timing.h): predicted cycles, the bound,
// per unit its busy cycles and fraction, the streams. `preset` names the .units preset.
void print_timing_summary(const TimingResult& t, const std::string& preset, std::ostream& os);


std::string format_value(double v);
std::string register_cell(const Machine& m, int r, bool symbolic);

}  // namespace flashsim::sim

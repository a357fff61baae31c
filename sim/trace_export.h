// Step-by-step exports of a run, shared by `flashsim run` and the viewer's File menu:
//   CSV: one row per step (step, line, instruction, cycle, DRAM bytes so far, registers written);
//   Perfetto: Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): a track per unit
//   (load/store unit, compute unit) with each instruction as a slice, and DRAM bytes as a
//   counter track. Timestamps are cycles (the viewer shows 1 cycle as 1 us).
//   With a timing (programs with .units, sim/timing.h) the tracks are the time model's lanes
//   (sim/timeline.h) instead: one per functional unit and one per stream, each instruction a slice
//   from its issue to the end of its work on both, more tracks ("tensor unit 2") where slices of
//   one lane overlap; critical-path slices are named "OP (critical)" with "critical":true in their
//   args, and the DRAM counter steps at the end of each LOAD and STORE.
#pragma once

#include <iosfwd>

#include "sim/machine.h"
#include "sim/timing.h"

namespace flashsim::sim {

struct TraceExport {
  std::ostream* csv = nullptr;       // null: no CSV
  std::ostream* perfetto = nullptr;  // null: no JSON
  const TimingResult* timing = nullptr;  // the program's time model, with steps: timed Perfetto lanes
};

// Resets the machine and steps it to the end, writing every requested form. A fault ends
// the run: what was written so far stays well-formed (the JSON is closed), then the
// MachineFault is rethrown. The machine is left where the run stopped.
void export_trace(Machine& m, const TraceExport& out);

// The CSV header line, without the newline.
const char* trace_csv_header();

}  // namespace flashsim::sim

// Step-by-step exports of a run, shared by `flashsim run` and the viewer's File menu:
//   CSV: one row per step (step, line, instruction, cycle, DRAM bytes so far, registers written);
//   Perfetto: Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): a track per unit
//   (load/store unit, compute unit) with each instruction as a slice, and DRAM bytes as a
//   counter track. Timestamps are cycles (the viewer shows 1 cycle as 1 us).
#pragma once

#include <iosfwd>

#include "sim/machine.h"

namespace flashsim::sim {

struct TraceExport {
  std::ostream* csv = nullptr;       // null: no CSV
  std::ostream* perfetto = nullptr;  // null: no JSON
};

// Resets the machine and steps it to the end, writing every requested form. A fault ends
// the run: what was written so far stays well-formed (the JSON is closed), then the
// MachineFault is rethrown. The machine is left where the run stopped.
void export_trace(Machine& m, const TraceExport& out);

// The CSV header line, without the newline.
const char* trace_csv_header();

}  // namespace flashsim::sim

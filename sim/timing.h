// The time model: a program's instructions on functional units that overlap.
//
// Each instruction runs on one unit of isa/units.h (memory, tensor, special, vector), which does
// `rate` units of work a cycle and hands the result over `latency` cycles after the work is done.
// Instructions issue in order within their stream (`.stream`); a stream waits for the registers an
// instruction reads (and for the readers of the register it overwrites), and at `.wait` for a phase
// of a barrier that other streams complete with `.arrive`, and at `.wait_for R` for the result of R's
// last write before it (an asynchronous product or copy: a kernel's wgmma.wait_group). Tensor and memory instructions run
// asynchronously (the stream goes on, as after a wgmma or a TMA copy); vector and special ones
// are executed by the stream's own warps, which are busy until they are done. Instructions in
// flight on one unit share its rate equally, as warp schedulers interleave warps.
//
// Work per instruction: bytes for LOAD/STORE (the machine's own count), 2*m*n*k FLOPs for a
// product, elements for the rest (a reduction counts its input).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/program.h"
#include "isa/units.h"

namespace flashsim::sim {

// A program the model cannot time: no units, or a deadlock (`where` names its .wait or line).
class TimingError : public std::runtime_error {
 public:
  TimingError(isa::SourceLoc where, std::string message)
      : std::runtime_error(message), where(where), message(std::move(message)) {}
  isa::SourceLoc where;  // line 0: no place in the text
  std::string message;
};

struct TimingOptions {
  // Co-resident copies of the program (thread blocks on one SM): each has its own registers,
  // streams and barriers, and all share the units.
  int copies = 1;
  // Copy c starts c * stagger cycles late: blocks that share an SM in steady state are at
  // different points of their loops, not in step.
  double stagger = 0;
  bool keep_steps = true;                 // fill TimingResult::steps
  std::optional<isa::UnitsConfig> units;  // instead of the program's .units
};

struct TimedStep {
  std::uint64_t pc = 0;
  std::uint32_t copy = 0;
  std::uint16_t stream = 0;
  isa::Unit unit = isa::Unit::Vector;
  double work = 0;
  double issue = 0, end = 0, ready = 0;  // cycles: issued (and started), work done, result usable
  bool critical = false;                 // on the chain of constraints that sets the total
};

struct UnitUsage {
  double work = 0;
  double busy_cycles = 0;    // work / rate: the cycles the unit had something to do
  double busy_fraction = 0;  // busy_cycles / cycles
};

struct TimingResult {
  double cycles = 0;  // the last result's ready time
  std::array<UnitUsage, isa::kUnitCount> units{};
  isa::Unit busiest = isa::Unit::Vector;
  // The busiest unit's name when it is busy at least half the time, else "latency": the chain of
  // dependencies, not a unit's rate, sets the time.
  std::string bound;
  std::vector<std::string> streams;
  std::vector<TimedStep> steps;  // copy-major, trace order within a copy (keep_steps)
  std::uint64_t instructions = 0;
};

// Runs the program's trace (values off) for its tile shapes and byte counts, then times it.
// Throws TimingError (no .units and none given; deadlock) and the machine's own errors.
TimingResult time_program(const isa::Program& p, const TimingOptions& o = {});

}  // namespace flashsim::sim

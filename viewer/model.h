// The viewer's state, with no window: one or two traces stepped in lockstep, breakpoints,
// what each pane highlights at step k, heat-map data and a cheap bytes-over-time series.
// The ImGui layer (app.*) only reads this; the tests drive it directly.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/l2_trace.h"
#include "sim/machine.h"
#include "sim/timeline.h"
#include "sim/timing.h"
#include "sim/trace_export.h"

namespace flashsim::viewer {

// Traces longer than this start with the symbolic shadow off: it costs a string per step.
inline constexpr std::uint64_t kSymbolicLimit = 200'000;
// The bytes-over-time series keeps at most this many samples, whatever the trace length.
inline constexpr std::size_t kMaxSeriesSamples = 4096;

// What to open: an assembly file with optional .param overrides, or a program a generator made.
struct LoadRequest {
  std::string path;                             // .fsa file (ignored when program is set)
  std::map<std::string, std::int64_t> params;   // overrides for the file's .param defaults
  std::optional<isa::Program> program;          // already assembled (generated schedules)
  std::string title;                            // shown above the panes; default: the file name
  std::optional<bool> symbolic;                 // default: on up to kSymbolicLimit steps
  std::optional<int> regs;                      // like `flashsim run --regs`
  std::optional<isa::L2Geometry> l2;            // like `flashsim run --l2` (capacity 0: none)
};

// Total DRAM bytes (read + written) after k steps, sampled every `stride` steps.
struct BytesSeries {
  std::uint64_t stride = 1;
  std::uint64_t steps = 0;               // trace length
  std::vector<std::uint64_t> samples;    // samples[i]: bytes after min(i*stride, steps) steps
  std::uint64_t at(std::uint64_t step) const;  // exact at sample points, else the sample before
  std::uint64_t total() const { return samples.empty() ? 0 : samples.back(); }
};

struct RegisterRow {
  std::string name;      // "R2"
  std::string numeric;   // "0.25", "4x4 tile @(0,4): 0.1 0.2 ...", or "" before first write
  std::string symbolic;  // "a00*b00" when the symbolic shadow is on
  bool written = false;
  bool changed = false;  // written by the last step
};

// A DRAM tile the last step (or the next one) touches.
struct Touch {
  std::uint32_t array = 0;
  std::int64_t tile = 0;  // flat tile index (the element index on the scalar machine)
  bool write = false;
  bool operator==(const Touch&) const = default;
};

// A lesson budget shown as a bar: the counter's value now and over the whole trace.
struct Budget {
  std::string counter;  // cycles, instructions, loads, stores, macs, dram_reads, dram_writes, or a mnemonic
  std::uint64_t limit = 0;
};
// The value of a budget counter; nullopt for a name it does not know.
std::optional<std::uint64_t> budget_value(const sim::Counters& c, const std::string& counter);

// A .param line of the source, so the app can offer its value for editing.
struct ParamDecl {
  std::string name;
  std::int64_t value = 0;  // the value used for this trace
};

// Where a trace's load time went (wall and this thread's CPU time, in ms).
struct LoadTimes {
  double assemble_ms = 0, assemble_cpu_ms = 0;  // text -> expanded program (0 for a given program)
  double machine_ms = 0, machine_cpu_ms = 0;    // sim::Machine construction (checks, decoding)
  double prepass_ms = 0, prepass_cpu_ms = 0;    // whole-trace counting pass (heat scales, bytes series)
};

// What the Units panel draws for a trace with .units: a window of cycles [c0, c1], one lane per
// functional unit and per stream with its label and busy fraction, the bars that intersect the
// window (sub-pixel runs merged), the current step's bar on its unit's and its stream's lane.
struct UnitsLaneView {
  std::string label;           // "tensor" / "stream producer"
  std::string busy;            // "62.5 %": a unit's busy cycles over the run's, a stream's covered cycles
  bool unit = true;
  std::uint32_t unit_index = 0;  // units: isa::Unit
  double busy_fraction = 0;
  std::uint32_t rows = 1;        // rows of bars (bars of one row never overlap)
  std::vector<sim::TimelineBar> bars;  // cycle coordinates; row in [0, rows)
  std::optional<sim::TimelineBar> current;  // the current step's bar, when it is on this lane
};
struct UnitsView {
  double c0 = 0, c1 = 1;  // the window, in cycles
  double cycles = 0;      // the whole run
  std::string bound;      // "tensor", "latency", ...
  std::optional<double> now;  // the current step's issue cycle
  std::vector<UnitsLaneView> lanes;
};

class Trace {
 public:
  // Throws isa::AsmError (bad text) or sim::MachineFault (bad inputs).
  explicit Trace(const LoadRequest& request);

  const std::string& title() const { return title_; }
  const std::string& path() const { return path_; }
  const isa::Program& program() const { return machine_->program(); }
  const sim::Machine& machine() const { return *machine_; }
  const std::vector<ParamDecl>& params() const { return params_; }
  const LoadRequest& request() const { return request_; }
  // The lesson this trace is held to ("" when none) and its budgets.
  void set_lesson(std::string name, std::vector<Budget> budgets);
  const std::string& lesson() const { return lesson_; }
  const std::vector<Budget>& budgets() const { return budgets_; }

  std::uint64_t step() const { return machine_->pc(); }  // steps executed so far
  std::uint64_t size() const { return machine_->size(); }
  bool done() const { return machine_->done(); }

  // Each returns false when nothing happened (at an end, or the step faulted).
  bool step_forward();
  bool step_back();
  void reset();
  void seek(std::uint64_t k);
  // The runtime fault that stopped the last forward step, as "step N (line L): error: ...".
  const std::string& fault() const { return fault_; }
  // Writes the whole run step by step (sim/trace_export.h, as `flashsim run --trace-csv` and
  // `--perfetto` do), then returns to the current step. Throws sim::MachineFault after writing
  // the steps up to a fault.
  void export_steps(const sim::TraceExport& out);

  // Breakpoints are source lines; only lines that hold an instruction can take one.
  bool line_has_code(std::uint32_t line) const;
  bool toggle_breakpoint(std::uint32_t line);
  const std::set<std::uint32_t>& breakpoints() const { return breakpoints_; }
  // True when the next instruction sits on a breakpoint line.
  bool at_breakpoint() const;

  // ---- what the panes show at the current step ----
  // The instruction executed by the last step, as in the lesson tables' "Step k" row.
  std::optional<std::uint64_t> current_index() const;
  std::uint32_t current_line() const;  // its source line; 0 before the first step
  std::uint32_t next_line() const;     // the next instruction's line; 0 at the end
  std::string instruction_text(std::uint64_t index) const;
  std::vector<int> changed_registers() const;
  RegisterRow register_row(int r) const;
  std::optional<Touch> touched() const;     // by the last step
  std::optional<Touch> next_touch() const;  // by the next step
  std::optional<Touch> touch_at(std::uint64_t index) const;  // by instruction `index` (0-based)
  // How often each source line has executed so far (loop bodies run many times).
  std::uint64_t line_hits(std::uint32_t line) const;
  std::uint64_t line_total(std::uint32_t line) const;  // over the whole trace
  // Heat-map scale: the largest per-tile read (write) count any step of the trace reaches.
  std::uint32_t max_tile_reads(std::uint32_t array) const { return final_max_reads_[array]; }
  std::uint32_t max_tile_writes(std::uint32_t array) const { return final_max_writes_[array]; }
  const BytesSeries& bytes_series() const { return series_; }
  std::uint64_t dram_bytes() const;
  // Whole-trace totals from the counting pass at load time.
  const sim::Counters& final_counters() const { return final_counters_; }
  // The run's L2 (.l2 or LoadRequest::l2) brought to the current step, or null without one.
  const sim::TraceL2* l2() const;
  // Its totals over the whole trace, dirty lines written back at the end (zeros without one).
  const sim::L2Counts& final_l2() const { return final_l2_; }
  // A lesson budget's counter now and over the whole trace: the machine's counters, bytes per
  // array (read:K), and through the L2 (hbm_bytes_read); nullopt for a name it does not know.
  std::optional<std::uint64_t> budget_now(const std::string& counter) const;
  std::optional<std::uint64_t> budget_whole(const std::string& counter) const;
  bool tile_machine() const { return tile_machine_; }  // cached: is_scalar() walks the trace
  // The time model of a program with .units (sim/timing.h), computed at load time: null without
  // .units, or when it could not time the program (then timing_error() says why, as
  // "FILE:LINE:COL: error: deadlock ...").
  const sim::TimingResult* timing() const { return timing_ ? &*timing_ : nullptr; }
  const sim::Timeline* timeline() const { return timing_ ? &timeline_ : nullptr; }
  const std::string& timing_error() const { return timing_error_; }
  // The Units panel for a window of cycles: `zoom` 1 shows the whole run, `zoom` z a z-th of it
  // centred on the current step's instruction; `pixels` across the window (bars narrower than a
  // pixel are merged). Empty lanes without a timing.
  UnitsView units_view(double zoom, double pixels) const;
  const LoadTimes& load_times() const { return load_times_; }
  // Unique per loaded trace (never reused), so caches drawn from it know when it was replaced.
  std::uint64_t serial() const { return serial_; }

 private:
  void prepass();
  void count_line(std::uint64_t index, int sign);

  LoadRequest request_;
  std::string title_, path_;
  std::unique_ptr<sim::Machine> machine_;
  std::vector<ParamDecl> params_;
  std::set<std::uint32_t> breakpoints_;
  std::string lesson_;
  std::vector<Budget> budgets_;
  bool tile_machine_ = false;
  std::string fault_;
  std::vector<std::uint64_t> line_hits_, line_total_;
  std::vector<std::uint32_t> final_max_reads_, final_max_writes_;
  sim::Counters final_counters_;
  std::vector<std::uint64_t> final_array_read_, final_array_written_;  // bytes per array
  std::unique_ptr<sim::TraceL2> l2_;
  sim::L2Counts final_l2_;
  BytesSeries series_;
  std::optional<sim::TimingResult> timing_;
  sim::Timeline timeline_;
  std::string timing_error_;
  LoadTimes load_times_;
  std::uint64_t serial_ = 0;
};

// Reads the .param lines of an assembly file (name and default), for the "open with
// parameters" dialog. Lines that do not parse are skipped; the assembler reports them.
std::vector<ParamDecl> scan_params(const std::vector<std::string>& source_lines);

// One or two traces stepped together. Commands apply to every open trace; a trace that has
// reached its end simply stays there while the other goes on.
class Model {
 public:
  // Opens a trace in slot 0 or 1. On failure the slot is left as it was, the message
  // (FILE:LINE:COL: error: ...) is kept in error() and false is returned.
  bool open(int slot, const LoadRequest& request);
  void close(int slot);
  int trace_count() const { return (traces_[0] ? 1 : 0) + (traces_[1] ? 1 : 0); }
  bool compare() const { return traces_[0] && traces_[1]; }
  Trace* trace(int slot) { return traces_[static_cast<std::size_t>(slot)].get(); }
  const Trace* trace(int slot) const { return traces_[static_cast<std::size_t>(slot)].get(); }

  const std::string& error() const { return error_; }
  // The source line an assembler error points at, with a caret under its column
  // ("   3 | ADD R0, R0\n     | ^"); empty when the error has no line.
  const std::string& error_context() const { return error_context_; }
  void set_error(std::string e) {
    error_ = std::move(e);
    error_context_.clear();
  }
  void clear_error() { set_error(""); }

  // Writes trace `slot`'s run to `path` as a step CSV or Perfetto JSON. On failure (the file,
  // or a fault of the run) the message is kept in error() and false is returned.
  enum class ExportFormat { StepsCsv, Perfetto };
  bool export_trace(int slot, const std::string& path, ExportFormat format);
  static std::string default_export_name(const Trace& t, ExportFormat format);

  // Lockstep commands.
  bool step();
  bool step_back();
  void reset();
  void seek(std::uint64_t k);
  // Steps until a trace's next instruction is on one of its breakpoints (after at least one
  // step), or every trace is done. Returns true when it stopped at a breakpoint.
  bool run_to_breakpoint();
  std::uint64_t step_index() const;  // the shared step k (the longest trace's position)
  std::uint64_t max_steps() const;   // the longest trace
  bool all_done() const;

  // Animated run: `tick` advances speed * seconds steps (carrying fractions), pausing at the
  // end, at a breakpoint or on a fault. `budget_steps` caps the work done in one frame.
  void run() { running_ = !all_done(); }
  void pause() { running_ = false; }
  bool running() const { return running_; }
  double speed() const { return speed_; }
  void set_speed(double steps_per_second);
  std::uint64_t tick(double seconds, std::uint64_t budget_steps = 1'000'000);

  // The text form of what every pane shows; the screenshot test and the unit tests read it.
  std::string dump() const;

 private:
  template <class F>
  bool each(F&& f);

  std::unique_ptr<Trace> traces_[2];
  std::string error_, error_context_;
  bool running_ = false;
  double speed_ = 8.0;
  double carry_ = 0.0;
};

std::string dump_trace(const Trace& t);

}  // namespace flashsim::viewer

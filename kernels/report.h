// One result row per (schedule, size, dtype) and its text table, CSV and JSON forms. Plain C++.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/spec.h"

namespace flashsim::gpu {

struct Row {
  Spec spec;
  std::optional<Bytes> counted;   // tile machine (sim/traffic.h), when linked
  // The tile machine through its L2 model with this device's L2 size and SMs, the kernel's
  // occupancy (blocks_per_sm) and block order: predicted HBM bytes.
  std::optional<Bytes> predicted;
  int blocks_per_sm = 0;
  // Dirty lines the profiler leaves in L2 at a range's start (the write-back baseline), which the
  // prediction starts with. Those the run evicts are HBM writes of its range; with writes measured
  // in one range the baseline holds their write-back too, and the prediction leaves it out.
  double dirty_at_start_bytes = 0;
  Bytes compulsory;               // each input once, each output once
  Bytes model;                    // what our kernel issues with no cache (kernels/spec.cpp)
  Bytes expected;                 // model with small panels read once (see expected_hbm)
  // dram__bytes_read.sum of the run's range; the writes: see writes_one_range.
  std::optional<Bytes> measured;
  // How the writes were measured. true: one range holding the run and the two L2 flushes after
  // it, less the same range without the run (the baseline), so lines the run left dirty are
  // counted as they leave. false (CSVs from before 2026-11-25): the run's range plus the write-back
  // of a second run's dirty lines, measured apart, which lands 2 MiB off either way
  // (kernels/RESULTS.md, "Writes measured in one range").
  bool writes_one_range = false;
  // With several profiled measurements (compare --measurements N): how many, and the smallest and
  // largest of them, reads and writes apart; `measured` is their median.
  int measurements = 0;
  std::optional<Bytes> measured_min, measured_max;
  // Written after the run's range ended: the dirty lines it left in L2 (charged to it).
  std::optional<double> writeback_bytes;
  std::optional<Bytes> l2;        // lts__t_sectors_srcunit_tex_op_{read,write}.sum * 32
  std::optional<double> l2_red_bytes;     // lts__t_sectors_srcunit_tex_op_red.sum * 32 (atomics)
  std::optional<double> profiled_time_ms; // gpu__time_duration.sum of the profiled range
  double time_ms = 0;             // median of the timed repeats (CUDA events)
  // The time model's prediction (predict_run_time on the device's preset, with `predicted` as the
  // HBM bytes when there): milliseconds and what bounds them; empty when not predicted.
  std::optional<double> pred_ms;
  std::string pred_bound;
  double rel_err = 0;             // ||out - ref|| / ||ref||, largest over the outputs
  double tol = 0;
  bool validated = false;         // reference check ran
  std::string note;               // e.g. which rows/heads were checked

  double gbps() const;    // measured HBM bytes / time (compulsory bytes when not measured)
  double tflops() const;  // flops(spec) / time
  bool ok() const { return !validated || within_tolerance(rel_err, tol); }
  // Whether this row's streamed arrays are far beyond L2 (so measured should match expected).
  bool streams_beyond(double l2_bytes) const;
};

void print_table(std::ostream& out, const std::vector<Row>& rows, double l2_bytes);
void write_csv(std::ostream& out, const std::vector<Row>& rows);
void write_json(std::ostream& out, const std::vector<Row>& rows, const std::string& device,
                const std::string& profiler_status);

// The one-line explanation printed under the table when measured < counted because L2 absorbed
// re-reads; empty when no row shows that.
std::string l2_explanation(const std::vector<Row>& rows, double l2_bytes);

// Whether a prediction holds for one run: reads and writes apart, the measured bytes within 10 %
// of the predicted ones, a figure under 1 MiB always counting as within (a profiled range moves
// by up to 1 MiB). The bound `flashsim-gpu compare` and `predict` both count.
bool prediction_within_bound(const Bytes& measured, const Bytes& predicted);

// "meas/pred within 10 % ...: N of M runs", then the runs outside it with their ratios; empty
// when no row has both a measurement and a prediction.
std::string prediction_summary(const std::vector<Row>& rows);

// Fills row.pred_ms and pred_bound from predict_run_time on `preset`, with row.predicted as the
// HBM bytes when there (a note says why when there is no prediction). Thread-safe.
void predict_row_time(Row& row, const std::string& preset);

// Measured time over predicted time; NaN when either is missing or not positive.
double time_ratio(double meas_ms, std::optional<double> pred_ms);
// The cycles a run took (meas_ms at the SM clock measured, MHz) over the cycles the model counts
// (pred_ms at its preset's clock, GHz); NaN when anything is missing or not positive.
double cycle_ratio(double meas_ms, double meas_mhz, std::optional<double> pred_ms, double preset_ghz);
// One row as the time line counts it.
struct TimeCheck {
  std::string label;   // "attn-fa2-mma 16x8192x128 bf16"
  bool bound_row = false;  // covered by the bound (time_bound_row)
  double meas_ms = 0;
  std::optional<double> pred_ms;
};
// Whether a time prediction holds: measured within 15 % of predicted.
bool time_within_bound(double meas_ms, double pred_ms);
// "time meas/pred within 15 %: A of B attention/matmul rows at N >= 4096 (all rows: C of D); outside: ...",
// naming the bounded rows outside 15 % with their ratios; empty when no row has both times.
std::string time_summary(const std::vector<TimeCheck>& rows);
// The same over compare's rows.
std::string time_prediction_summary(const std::vector<Row>& rows);

// Formatting helpers (tested).
std::string fmt_mib(double bytes);                     // "1536.0"
std::string fmt_rw(std::optional<Bytes> b);            // "1536.0/512.0" or "-"
std::string fmt_ratio_rw(std::optional<Bytes> measured, std::optional<Bytes> predicted);  // "1.00/0.98" or "-"
std::string fmt_or_dash(std::optional<double> v, int prec);  // "0.123", or "-" for none or NaN

}  // namespace flashsim::gpu

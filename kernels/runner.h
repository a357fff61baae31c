// Runs one Spec on the GPU: fresh inputs, poisoned outputs, validation against the CPU reference,
// timing with CUDA events (warm-up, median, rotating input copies when they would fit in L2) and
// one profiled range (after an L2 flush) for HBM/L2 bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <string>

#include "kernels/profiler.h"
#include "kernels/report.h"
#include "kernels/workload.h"

namespace flashsim::gpu {

struct RunOptions {
  int warmup = 2;
  int repeats = 10;
  bool profile = true;
  bool check = true;
  // false: run() leaves Row::predicted empty and the caller predicts (compare does it on worker
  // threads while the GPU measures the next rows, see predict_row).
  bool predict = true;
  // Writes measured in one range with the flushes that follow the run (Row::writes_one_range);
  // false: the run's range plus a rerun's write-back, as before 2026-11-25.
  bool writes_one_range = true;
  // Profiled measurements of each run (each after its own L2 flush): the median is the row's
  // figure, the spread is kept beside it (Row::measured_min, measured_max).
  int measurements = 1;
};

// The row's predicted HBM bytes (the L2 model on the CPU, from the row's spec, occupancy and dirty
// lines at the start), or a note why none. Thread-safe: every call builds its own machine.
void predict_row(Row& row, const DeviceInfo& dev);

class Runner {
 public:
  explicit Runner(const RunOptions& opt);  // requires a device (see device_info)
  Row run(const Spec& s, std::uint64_t seed);
  const DeviceInfo& device() const { return dev_; }
  bool profiling() const { return prof_.ready(); }
  const std::string& profiler_status() const { return prof_status_; }

 private:
  RunOptions opt_;
  DeviceInfo dev_;
  std::unique_ptr<L2Flusher> flusher_;
  HbmProfiler prof_;
  std::string prof_status_;
  // HBM writes of the write-back range when no kernel ran before it (a flush after a flush):
  // subtracted from every run's write-back.
  double writeback_baseline_ = 0;
};

// HBM writes a range left dirty in L2 and that reach HBM only later: `work` run again (unmeasured,
// after a flush), then the flush that evicts its dirty lines, measured, less `baseline` (the same
// measured after a flush alone). nullopt with *why when the profiler fails.
std::optional<double> measure_writeback(HbmProfiler& prof, L2Flusher& flusher, const std::string& name,
                                        const std::function<void()>& work, double baseline, std::string* why);

// llm.c-style per-file driver: ./matmul [version] [sizes...]. Validates and times every version
// of the op (or just `version`), prints one timing line per version, returns 0 when all pass.
int dev_main(Op op, int argc, char** argv);

}  // namespace flashsim::gpu

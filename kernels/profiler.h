// HBM and L2 traffic of a range of GPU work, read in-process with CUPTI's range profiler
// (cupti_range_profiler.h + cupti_profiler_host.h), one user range per measurement, user replay.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace flashsim::gpu {

struct RangeMetrics {
  double dram_read_bytes = 0, dram_write_bytes = 0;
  double gpu_time_ns = 0;
  double l2_read_sectors = 0, l2_write_sectors = 0, l2_red_sectors = 0;  // 32-byte sectors
};

const std::vector<const char*>& profiler_metric_names();

class HbmProfiler {
 public:
  HbmProfiler() = default;
  ~HbmProfiler();
  HbmProfiler(const HbmProfiler&) = delete;
  HbmProfiler& operator=(const HbmProfiler&) = delete;

  // Sets up CUPTI for the current device (call after the CUDA context exists). False, with the
  // reason (e.g. CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: profiling not permitted), when it cannot.
  bool init(std::string* why);
  bool ready() const { return host_ != nullptr; }
  std::size_t passes() const { return passes_; }

  // Runs prepare() (not measured, e.g. an L2 flush) then work() inside one range, as many times as
  // CUPTI needs passes; work must be idempotent. nullopt with *why on failure.
  std::optional<RangeMetrics> measure(const std::string& name, const std::function<void()>& prepare,
                                      const std::function<void()>& work, std::string* why);

 private:
  void* host_ = nullptr;  // CUpti_Profiler_Host_Object*
  void* ctx_ = nullptr;   // CUcontext
  std::vector<unsigned char> config_;
  std::size_t passes_ = 0;
};

}  // namespace flashsim::gpu

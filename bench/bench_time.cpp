// Speed of the time model: predicting a whole launch of the fast kernels (`flashsim time`).
// Prints wall and CPU milliseconds per prediction; the target: FA2 at N = 16384, d = 128 in < 1 s.
#include <chrono>
#include <cstdio>
#include <ctime>

#include "isa/units.h"
#include "sim/gpu_time.h"
#include "sim/main_guard.h"

using flashsim::sim::TimedOp;
using flashsim::sim::TimeQuery;

static int run_main() {
  struct Case {
    const char* name;
    TimeQuery q;
  };
  auto attention = [](TimedOp op, std::int64_t n, std::int64_t d, std::int64_t heads, bool causal, int version) {
    TimeQuery q;
    q.op = op;
    q.n = n;
    q.d = d;
    q.heads = heads;
    q.causal = causal;
    q.version = version;
    return q;
  };
  TimeQuery mm;
  mm.op = TimedOp::Matmul;
  mm.m = mm.n = mm.k = 8192;
  const Case cases[] = {
      {"FA2 order (version 2), N = 16384, d = 128, 16 heads", attention(TimedOp::AttnFwd, 16384, 128, 16, false, 2)},
      {"forward v6, N = 16384, d = 128, 16 heads", attention(TimedOp::AttnFwd, 16384, 128, 16, false, 0)},
      {"forward v6, N = 16384, d = 64, 32 heads, causal", attention(TimedOp::AttnFwd, 16384, 64, 32, true, 0)},
      {"forward v5, N = 1024, d = 64, 512 heads", attention(TimedOp::AttnFwd, 1024, 64, 512, false, 0)},
      {"backward v7, N = 16384, d = 128, 16 heads", attention(TimedOp::AttnBwd, 16384, 128, 16, false, 0)},
      {"backward v6, N = 16384, d = 64, 32 heads, causal", attention(TimedOp::AttnBwd, 16384, 64, 32, true, 0)},
      {"matmul 8192^3", mm},
  };
  const auto& gpu = *flashsim::isa::find_gpu_preset("h100");
  std::printf("%-52s %10s %10s %12s\n", "prediction (h100)", "wall ms", "cpu ms", "predicted ms");
  for (const Case& c : cases) {
    const auto w0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const auto p = flashsim::sim::predict_time(c.q, gpu);
    const double cpu_ms = 1e3 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
    std::printf("%-52s %10.1f %10.1f %12.4f\n", c.name, wall_ms, cpu_ms, p.predicted_ms);
  }
  return 0;
}

int main() { return flashsim::guard_main("bench_time", run_main); }

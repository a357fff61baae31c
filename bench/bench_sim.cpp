// Simulator speed: a generated 10-million-instruction online-softmax trace, run with and
// without the step history that step_back needs. Prints simulated instructions per second,
// both per wall-clock second and per second of this process's CPU time (the machine is
// shared, so wall time includes time spent waiting for a core). Best of --repeat runs.
//   bench_sim [--n ELEMENTS] [--repeat K]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "isa/assembler.h"
#include "sim/machine.h"
#include "sim/main_guard.h"

using namespace flashsim;

namespace {
// Online softmax pass over n elements: 9 instructions per element plus 5 per element to normalise.
std::string online_softmax_text(long n) {
  return ".param n = " + std::to_string(n) +
         "\n.regs 4\nLOAD x[0], R0\nMOV R0, R1\nSUB R0, R1, R0\nEXP R0, R0\nMOV R0, R2\n"
         ".for i in 1..n\nLOAD x[i], R0\nMOV R1, R3\nMAX R1, R0, R1\nSUB R3, R1, R3\nSUB R0, R1, R0\n"
         "EXP R3, R3\nEXP R0, R0\nMUL R2, R3, R2\nADD R2, R0, R2\n.end\n"
         ".for i in 0..n\nLOAD x[i], R0\nSUB R0, R1, R0\nEXP R0, R0\nDIV R0, R2, R0\nSTORE R0, out[i]\n.end\n";
}

// Wall-clock and process CPU time, in seconds.
struct Clock {
  std::chrono::steady_clock::time_point wall;
  double cpu;
  static double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  static Clock now() { return {std::chrono::steady_clock::now(), cpu_now()}; }
};
struct Elapsed {
  double wall = 1e30, cpu = 1e30;
  void best_of(const Clock& t0) {
    Clock t1 = Clock::now();
    wall = std::min(wall, std::chrono::duration<double>(t1.wall - t0.wall).count());
    cpu = std::min(cpu, t1.cpu - t0.cpu);
  }
};
}  // namespace

static int run_main(int argc, char** argv) {
  long n = 10'000'000 / 14;  // ~10 M instructions
  int repeat = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--n")) n = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat")) repeat = std::max(1, std::atoi(argv[i + 1]));
  }
  Clock t0 = Clock::now();
  isa::Program prog = isa::assemble(online_softmax_text(n), "bench");
  Elapsed assemble;
  assemble.best_of(t0);
  const double count = static_cast<double>(prog.code.size());
  std::printf("trace: online softmax, n = %ld, %zu instructions (assembled in %.2f s wall)\n", n, prog.code.size(),
              assemble.wall);
  std::printf("rates are simulated instructions per second; best of %d runs; \"cpu\" is this process's CPU time\n"
              "(CLOCK_PROCESS_CPUTIME_ID), \"wall\" is steady_clock and includes waiting for a shared core\n",
              repeat);
  std::printf("%-14s %14s %14s %12s %12s %10s\n", "run()", "M instr/s cpu", "M instr/s wall", "cpu s", "wall s",
              "setup s");

  for (bool history : {false, true}) {
    Elapsed run, setup;
    std::uint64_t cycles = 0, hist_bytes = 0;
    for (int r = 0; r < repeat; ++r) {
      sim::MachineOptions o;
      o.history = history;
      Clock s0 = Clock::now();
      sim::Machine m(prog, o);  // copies and decodes the trace
      setup.best_of(s0);
      Clock r0 = Clock::now();
      m.run();
      run.best_of(r0);
      cycles = m.counters().cycles;
      hist_bytes = m.history_bytes();
    }
    std::printf("%-14s %14.1f %14.1f %12.4f %12.4f %10.3f   (%llu cycles, history %.0f MB)\n",
                history ? "with history" : "no history", count / run.cpu / 1e6, count / run.wall / 1e6, run.cpu,
                run.wall, setup.cpu, static_cast<unsigned long long>(cycles), static_cast<double>(hist_bytes) / 1e6);
  }

  // Stepping back from the end of the trace: each step back is O(1), no replay.
  sim::Machine m(prog);
  m.run();
  const int steps = 1'000'000;
  Elapsed back, forward;
  for (int r = 0; r < repeat; ++r) {
    Clock b0 = Clock::now();
    for (int k = 0; k < steps; ++k) m.step_back();
    back.best_of(b0);
    // Stepping forward one instruction at a time, as the viewer does.
    Clock f0 = Clock::now();
    for (int k = 0; k < steps; ++k) m.step();
    forward.best_of(f0);
  }
  std::printf("step back     %8.1f ns cpu %8.1f ns wall per step (1 M steps back from the end of the trace)\n",
              back.cpu / steps * 1e9, back.wall / steps * 1e9);
  std::printf("step forward  %8.1f ns cpu %8.1f ns wall per step (general path with history)\n",
              forward.cpu / steps * 1e9, forward.wall / steps * 1e9);
  return 0;
}

int main(int argc, char** argv) { return flashsim::guard_main("bench_sim", [&] { return run_main(argc, argv); }); }

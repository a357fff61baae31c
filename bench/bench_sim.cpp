// Simulator speed: a generated 10-million-instruction online-softmax trace, run with and
// without the step history that step_back needs. Prints instructions per second.
//   bench_sim [--n ELEMENTS] [--repeat K]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "isa/assembler.h"
#include "sim/machine.h"

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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  long n = 10'000'000 / 14;  // ~10 M instructions
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--n")) n = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat")) repeat = std::atoi(argv[i + 1]);
  }
  auto t0 = std::chrono::steady_clock::now();
  isa::Program prog = isa::assemble(online_softmax_text(n), "bench");
  double assemble_s = seconds_since(t0);
  std::printf("trace: online softmax, n = %ld, %zu instructions (assembled in %.2f s)\n", n, prog.code.size(),
              assemble_s);

  for (bool history : {false, true}) {
    double best = 1e30;
    std::uint64_t cycles = 0, hist_bytes = 0;
    for (int r = 0; r < repeat; ++r) {
      sim::MachineOptions o;
      o.history = history;
      sim::Machine m(prog, o);
      auto t = std::chrono::steady_clock::now();
      m.run();
      best = std::min(best, seconds_since(t));
      cycles = m.counters().cycles;
      hist_bytes = m.history_bytes();
    }
    std::printf("run %-13s %8.1f M instructions/s  (%.3f s, %llu cycles, history %.0f MB)\n",
                history ? "with history" : "no history", static_cast<double>(prog.code.size()) / best / 1e6, best,
                static_cast<unsigned long long>(cycles), static_cast<double>(hist_bytes) / 1e6);
  }

  // Stepping back from the end of the trace: each step back is O(1), no replay.
  sim::Machine m(prog);
  m.run();
  const int backs = 1'000'000;
  auto t = std::chrono::steady_clock::now();
  for (int k = 0; k < backs; ++k) m.step_back();
  double s = seconds_since(t);
  std::printf("step back     %8.1f ns per step (1 M steps back from the end of the trace)\n", s / backs * 1e9);
  // Stepping forward one instruction at a time, as the viewer does.
  t = std::chrono::steady_clock::now();
  for (int k = 0; k < backs; ++k) m.step();
  s = seconds_since(t);
  std::printf("step forward  %8.1f ns per step (general path with history)\n", s / backs * 1e9);
  return 0;
}

// Times the exhaustive optimal-schedule search (flashsim optimize matmul) for 2x2 on 3..6
// registers and a rectangular 2x3x2 instance, then flashsim optimize softmax for n = 2..4.
// Prints figures; asserts nothing about time.
#include <cstdio>

#include "sim/optimize.h"
#include "sim/optimize_softmax.h"
#include "sim/main_guard.h"

static int run_main() {
  std::printf("%-10s %5s %7s %6s %10s %10s %9s\n", "instance", "regs", "cycles", "LOADs", "states", "expanded", "seconds");
  struct Case {
    int m, k, n, regs;
  };
  double worst = 0;
  for (Case c : {Case{2, 2, 2, 3}, Case{2, 2, 2, 4}, Case{2, 2, 2, 5}, Case{2, 2, 2, 6}, Case{2, 3, 2, 3}, Case{2, 3, 2, 4},
                 Case{2, 3, 2, 5}, Case{2, 3, 2, 6}}) {
    flashsim::sim::MatmulSearch p;
    p.m = c.m;
    p.k = c.k;
    p.n = c.n;
    p.regs = c.regs;
    auto r = flashsim::sim::optimize_matmul(p);
    char name[32];
    std::snprintf(name, sizeof name, "%dx%dx%d", c.m, c.k, c.n);
    std::printf("%-10s %5d %7llu %6llu %10llu %10llu %9.3f\n", name, c.regs, static_cast<unsigned long long>(r.cycles),
                static_cast<unsigned long long>(r.loads), static_cast<unsigned long long>(r.stats.stored),
                static_cast<unsigned long long>(r.stats.expanded), r.stats.seconds);
    if (c.m == 2 && c.k == 2 && c.n == 2 && r.stats.seconds > worst) worst = r.stats.seconds;
  }
  std::printf("slowest 2x2 search: %.3f s (target: under 60 s each)\n", worst);

  // Softmax: minimum LOADs then cycles (no spills), with and without the online rescale, and
  // minimum cycles with spills for the small instances where that search stays quick.
  std::printf("\n%-22s %5s %7s %6s %10s %10s %9s\n", "softmax instance", "regs", "cycles", "LOADs", "states", "expanded",
              "seconds");
  struct SoftmaxCase {
    int n, regs;
    bool by_loads, rescale, spills;
  };
  double slowest = 0;
  for (SoftmaxCase c : {SoftmaxCase{2, 3, true, true, false}, SoftmaxCase{3, 3, true, true, false},
                        SoftmaxCase{3, 4, true, true, false}, SoftmaxCase{4, 3, true, true, false},
                        SoftmaxCase{4, 4, true, true, false}, SoftmaxCase{4, 4, true, false, false},
                        SoftmaxCase{4, 5, true, true, false}, SoftmaxCase{4, 4, false, true, false},
                        SoftmaxCase{2, 2, false, true, true}, SoftmaxCase{3, 3, false, true, true}}) {
    flashsim::sim::SoftmaxSearch p;
    p.n = c.n;
    p.regs = c.regs;
    p.objective = c.by_loads ? flashsim::sim::SoftmaxSearch::Objective::Loads : flashsim::sim::SoftmaxSearch::Objective::Cycles;
    p.allow_rescale = c.rescale;
    p.allow_spills = c.spills;
    auto r = flashsim::sim::optimize_softmax(p);
    char name[48];
    std::snprintf(name, sizeof name, "n=%d %s%s%s", c.n, c.by_loads ? "loads" : "cycles", c.rescale ? "" : " no-rescale",
                  c.spills ? " spills" : "");
    std::printf("%-22s %5d %7llu %6llu %10llu %10llu %9.3f\n", name, c.regs, static_cast<unsigned long long>(r.cycles),
                static_cast<unsigned long long>(r.loads), static_cast<unsigned long long>(r.stats.stored),
                static_cast<unsigned long long>(r.stats.expanded), r.stats.seconds);
    if (r.stats.seconds > slowest) slowest = r.stats.seconds;
  }
  std::printf("slowest softmax search: %.3f s (target: under 60 s each)\n", slowest);
  return 0;
}

int main() { return flashsim::guard_main("bench_optimize", [&] { return run_main(); }); }

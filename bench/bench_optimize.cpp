// Times the exhaustive optimal-schedule search (flashsim optimize matmul) for 2x2 on 3..6
// registers, and a rectangular 2x3x2 instance. Prints figures; asserts nothing about time.
#include <cstdio>

#include "sim/optimize.h"

int main() {
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
  return 0;
}

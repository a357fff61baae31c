// Speed of counted traffic: generating a schedule and running it in count-only mode.
// Prints wall and CPU milliseconds per count (the targets: FA2 at N = 16384, d = 128 in < 50 ms;
// the same through an H100-sized L2 with the launch model, `flashsim traffic --l2`, in < 1 s; the
// "Hopper L2" rows use the partitioned, 32-way model that `flashsim-gpu compare` predicts with).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "sim/traffic.h"
#include "sim/main_guard.h"

using namespace flashsim::traffic;

static int run_main() {
  struct Case {
    const char* name;
    AttentionParams p;
    bool forward;
    AttentionForward f;
    AttentionBackward b;
    const flashsim::sim::GpuModel* gpu = nullptr;
  };
  flashsim::sim::GpuModel h100;  // 50 MiB L2, 132 SMs, the SIMT FA2 kernel's 3 blocks per SM
  h100.l2.capacity_bytes = 50ull << 20;
  h100.sms = 132;
  h100.blocks_per_sm = 3;
  // the model `flashsim-gpu compare` predicts with on Hopper: two partitions of 32-way sets, a
  // dirty limit of 16 lines a set shared by groups of 4 sets
  flashsim::sim::GpuModel hopper = h100;
  hopper.l2_partitions = 2;
  hopper.l2.ways = 32;
  hopper.l2.dirty_ways = 16;
  hopper.l2.dirty_group = 4;
  AttentionParams many;
  many.batch_heads = 2048;
  many.n = 1024;
  many.d = 64;
  AttentionParams big;
  big.n = 16384;
  big.d = 128;
  big.br = 64;
  big.bc = 64;
  AttentionParams causal = big;
  causal.causal = true;
  AttentionParams heads = big;
  heads.batch_heads = 32;
  const Case cases[] = {
      {"fa2 N=16384 d=128 Br=Bc=64", big, true, AttentionForward::FA2, {}},
      {"fa2 causal N=16384 d=128", causal, true, AttentionForward::FA2, {}},
      {"fa2 N=16384 d=128 x32 heads", heads, true, AttentionForward::FA2, {}},
      {"fa1 N=16384 d=128", big, true, AttentionForward::FA1, {}},
      {"naive N=16384 d=128", big, true, AttentionForward::Naive, {}},
      {"bwd two-pass N=16384 d=128", big, false, {}, AttentionBackward::TwoPass},
      {"fa2 N=16384 d=128, L2 50MiB", big, true, AttentionForward::FA2, {}, &h100},
      {"fa2 2048x1024x64, L2 50MiB", many, true, AttentionForward::FA2, {}, &h100},
      {"fa2 N=16384 d=128, Hopper L2", big, true, AttentionForward::FA2, {}, &hopper},
      {"fa2 2048x1024x64, Hopper L2", many, true, AttentionForward::FA2, {}, &hopper},
      {"fa1 N=16384 d=128, Hopper L2", big, true, AttentionForward::FA1, {}, &hopper},
  };
  std::cout << "case                               instrs     wall ms   cpu ms (best of 5)\n";
  for (const auto& c : cases) {
    double best_wall = 1e300, best_cpu = 1e300;
    std::uint64_t instrs = 0;
    for (int rep = 0; rep < 5; ++rep) {
      auto w0 = std::chrono::steady_clock::now();
      std::clock_t c0 = std::clock();
      Traffic t = c.forward ? count_attention_forward(c.p, c.f, c.gpu) : count_attention_backward(c.p, c.b, c.gpu);
      double cpu = 1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
      double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
      instrs = t.instructions;
      best_wall = std::min(best_wall, wall);
      best_cpu = std::min(best_cpu, cpu);
    }
    std::printf("%-32s %10llu %10.1f %8.1f\n", c.name, static_cast<unsigned long long>(instrs), best_wall, best_cpu);
  }
  return 0;
}

int main() { return flashsim::guard_main("bench_traffic", [&] { return run_main(); }); }

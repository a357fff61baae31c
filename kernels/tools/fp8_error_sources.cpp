// Where the FP8 forward's error comes from, on FlashAttention-3's outlier inputs (N(0,1) plus
// N(0,100) on one entry in a thousand): attention in double with each rounding switched on alone
// (fp8_ref.h fp8_rounding_error), then all of them, with and without the random Hadamard
// transform. CPU only. It explains the GPU's accuracy study (bench_attention_forward_fp8
// --accuracy): what the transform of Q and K removes, and what is left that no scale or rotation
// can remove (V's and P's rounding, relative to each entry in a floating-point format).
//
//   fp8_error_sources [--n N] [--draws K] [--seed S]   (d = 128; every 8th row compared)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/fp8_ref.h"
#include "sim/main_guard.h"

namespace {

namespace f8 = flashsim::gpu::fp8;
constexpr int kD = 128;

struct Source {
  const char* name;
  f8::Roundings r;
};
const Source kSources[] = {
    {"Q K", {true, false, false, false, false}},
    {"Q K, transformed", {true, true, false, false, false}},
    {"P", {false, false, true, false, false}},
    {"V", {false, false, false, true, false}},
    {"V, transformed", {false, false, false, true, true}},
    {"all (per-tensor baseline)", {true, false, true, true, false}},
    {"all, Q K transformed", {true, true, true, true, false}},
};

bool parse_int(const char* text, long lo, long hi, long& out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end || v < lo || v > hi) return false;
  out = v;
  return true;
}

int run_main(int argc, char** argv) {
  long n = 2048, draws = 3, seed = 11;
  for (int i = 1; i < argc; i += 2) {
    const bool has_value = i + 1 < argc;
    const std::string opt = argv[i];
    bool ok = has_value;
    if (ok && opt == "--n") ok = parse_int(argv[i + 1], 8, 16384, n);
    else if (ok && opt == "--draws") ok = parse_int(argv[i + 1], 1, 100, draws);
    else if (ok && opt == "--seed") ok = parse_int(argv[i + 1], 0, 1L << 40, seed);
    else ok = false;
    if (!ok) {
      std::fprintf(stderr, "fp8_error_sources: bad argument '%s'\nusage: fp8_error_sources [--n N (8..16384)] "
                   "[--draws K (1..100)] [--seed S]\n", argv[i]);
      return 2;
    }
  }
  std::mt19937_64 gen(static_cast<std::uint64_t>(seed));
  std::normal_distribution<double> normal(0, 1), big(0, 10);
  std::bernoulli_distribution rare(0.001);
  std::vector<int> rows;
  for (int i = 0; i < n; i += 8) rows.push_back(i);
  std::printf("FP8 (e4m3) forward's error by source: n=%ld d=%d, inputs N(0,1) + N(0,100) Bernoulli(0.001), RMS error "
              "of O against exact attention over %zu rows, %ld draws (seed %ld)\n", n, kD, rows.size(), draws, seed);
  std::vector<std::vector<double>> err(std::size(kSources));
  for (long draw = 0; draw < draws; ++draw) {
    std::vector<double> q(static_cast<std::size_t>(n) * kD), k(q.size()), v(q.size());
    for (auto* x : {&q, &k, &v})
      for (auto& e : *x) e = normal(gen) + (rare(gen) ? big(gen) : 0.0);
    for (std::size_t s = 0; s < std::size(kSources); ++s)
      err[s].push_back(f8::fp8_rounding_error(q, k, v, static_cast<int>(n), kD, kSources[s].r, rows, 3));
  }
  std::vector<double> mean(std::size(kSources));
  for (std::size_t s = 0; s < std::size(kSources); ++s) {
    std::printf("%-26s", kSources[s].name);
    for (double e : err[s]) {
      std::printf(" %.3e", e);
      mean[s] += e / static_cast<double>(draws);
    }
    std::printf("   mean %.3e\n", mean[s]);
  }
  const std::size_t last = std::size(kSources) - 1;  // all, Q K transformed; the one before: the baseline
  std::printf("mean error, baseline / Q K transformed: %.2fx\n", mean[last - 1] / mean[last]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return flashsim::guard_main("fp8_error_sources", [&] { return run_main(argc, argv); }); }

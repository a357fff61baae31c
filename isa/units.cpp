#include "isa/units.h"

#include <cctype>

namespace flashsim::isa {

namespace {

// Per SM, at the preset's clock. Tensor: the measured large-GEMM ceiling (not the datasheet's
// peak, which no kernel sustains) over 132 SMs at 1.83 GHz; the other rates are the vendor's
// per-clock figures. Latencies are the published microbenchmarks' round figures: they set how
// long a pipeline takes to fill, not its rate. Sources: preset_sources() below.
constexpr double kClockGhz = 1.83;
constexpr double kSms = 132;
constexpr double per_sm_clk(double per_second) { return per_second / (kSms * kClockGhz * 1e9); }
// 8986 GB/s of L2 bandwidth on the full GH100 (144 SMs at 1755 MHz): bytes per SM per clock.
constexpr double kL2BytesPerClk = 8986e9 / (144 * 1.755e9);

constexpr std::array<GpuPreset, 2> kPresets{{
    {"h100", "NVIDIA H100 SXM5 80GB (132 SMs, 50 MB L2, HBM3)", 132, kClockGhz, 50ull << 20, 3.0e12, 228u << 10,
     {{{kL2BytesPerClk, 500},
       {per_sm_clk(798e12), 128},
       {16, 20},
       {128, 4}}},
     per_sm_clk(1978.9e12 * 798 / 989.4)},
    {"h200", "NVIDIA H200 SXM 141GB (132 SMs, 60 MB L2, HBM3e)", 132, kClockGhz, 60ull << 20, 4.3e12, 228u << 10,
     {{{kL2BytesPerClk, 500},
       {per_sm_clk(788e12), 128},
       {16, 20},
       {128, 4}}},
     per_sm_clk(1978.9e12 * 788 / 989.4)},
}};

constexpr std::array<PresetSource, 12> kSources{{
    {"SMs", "132", "132", "NVIDIA H100 Tensor Core GPU Architecture whitepaper (SXM5); H200 datasheet: the same GH100 configuration"},
    {"clock", "1.83 GHz", "1.83 GHz", "the clock at which the datasheet's 989.4 dense bf16 TFLOP/s is 4096 FLOP/clk on each of 132 SMs"},
    {"tensor (bf16/fp16 dense)", "3304 FLOP/clk/SM", "3262 FLOP/clk/SM",
     "measured ceiling: an 8192^3 bf16 product through PyTorch, 798 TFLOP/s on an H100 (2026-11-13) and 788 on an H200 "
     "(2026-10-28), this workplace's device notes (KINDS.md); the datasheet's peak is 4096 FLOP/clk/SM"},
    {"tensor (fp8 e4m3 dense, the FP8 forward)", "6607 FLOP/clk/SM", "6525 FLOP/clk/SM",
     "the datasheet's 1978.9 dense FP8 TFLOP/s (H100 SXM; H200 the same) scaled by the bf16 row's measured / datasheet "
     "ratio (798 / 989.4 and 788 / 989.4): derived, no FP8 product was measured here"},
    {"tensor latency", "128 cycles", "128 cycles", "wgmma round trip, order of magnitude of Luo et al., arXiv 2402.13499 (2024)"},
    {"special function (exp2, log2, rcp)", "16 /clk/SM", "16 /clk/SM",
     "CUDA C++ Programming Guide, arithmetic instruction throughput, compute capability 9.0; x 132 SMs x 1.83 GHz = 3.9 T/s, "
     "the FlashAttention-3 paper's figure"},
    {"special latency", "20 cycles", "20 cycles", "MUFU latency, order of magnitude of the Hopper microbenchmarks (arXiv 2402.13499)"},
    {"vector (fp32 add/mul/fma/max)", "128 /clk/SM", "128 /clk/SM", "CUDA C++ Programming Guide, compute capability 9.0"},
    {"vector latency", "4 cycles", "4 cycles", "dependent fp32 arithmetic, Hopper microbenchmarks (PMC10448217, Table 3)"},
    {"memory (L2 -> SM, TMA)", "35.6 B/clk/SM", "35.6 B/clk/SM",
     "L2 bandwidth 8986 GB/s for GH100 at 1755 MHz on 144 SMs (PMC10448217, Table 3): 35.6 bytes per SM per clock"},
    {"memory latency", "500 cycles", "500 cycles", "L2 hit ~260 and HBM ~480 cycles (arXiv 2402.13499) plus the copy engine's issue"},
    {"HBM (sustained)", "3.0 TB/s", "4.3 TB/s",
     "measured device-to-device copy, bytes read + written (KINDS.md: H100 2026-11-13, H200 2026-11-04); datasheets 3.35 / 4.8 TB/s"},
}};

}  // namespace

std::optional<Unit> find_unit(std::string_view name) {
  for (std::size_t u = 0; u < kUnitCount; ++u)
    if (kUnitNames[u] == name) return static_cast<Unit>(u);
  return std::nullopt;
}

std::span<const GpuPreset> gpu_presets() { return kPresets; }

const GpuPreset* find_gpu_preset(std::string_view name) {
  for (const GpuPreset& p : kPresets) {
    if (p.name.size() != name.size()) continue;
    bool same = true;
    for (std::size_t k = 0; k < name.size(); ++k)
      same &= std::tolower(static_cast<unsigned char>(name[k])) == p.name[k];
    if (same) return &p;
  }
  return nullptr;
}

std::string gpu_preset_names() {
  std::string s;
  for (const GpuPreset& p : kPresets) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

std::span<const PresetSource> preset_sources() { return kSources; }

}  // namespace flashsim::isa

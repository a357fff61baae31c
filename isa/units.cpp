#include "isa/units.h"

#include <cctype>

namespace flashsim::isa {

namespace {

// Per SM, counted at the clock the GPU holds while its tensor cores are busy. One warpgroup's
// products reach the datasheet's 4096 bf16 FLOP per clock per SM (kernels/tools/probe_softmax.cu
// measured 4094), so a large GEMM's measured ceiling is a clock, not a rate: 798 TFLOP/s over 132
// SMs at 4096 FLOP/clk is 1.476 GHz, where the 700 W budget holds the clock of an H100 with busy
// tensor cores. The other units count at that clock too: the attention kernels keep the tensor
// cores busy. Kernels without products (the SIMT model) run at the datasheet's 1.83 GHz.
// Latencies are the published microbenchmarks' round figures: they set how long a pipeline takes
// to fill, not its rate. Sources: preset_sources() below.
constexpr double kSms = 132;
constexpr double kTensorPerClk = 4096;  // bf16 FLOP/clk/SM: the datasheet's 989.4 TFLOP/s at 1.83 GHz
constexpr double kSimtClockGhz = 1.83;
constexpr double clock_of(double gemm_flops_per_s) { return gemm_flops_per_s / (kSms * kTensorPerClk * 1e9); }
constexpr double kH100ClockGhz = clock_of(798e12), kH200ClockGhz = clock_of(788e12);
// 8986 GB/s of L2 bandwidth on the full GH100 (144 SMs): bytes per SM per clock at `ghz`.
constexpr double l2_bytes_per_clk(double ghz) { return 8986e9 / (144 * ghz * 1e9); }
// probe_softmax: one warpgroup's softmax of a 64 x 128 tile takes 744 clocks alone and 1206 while
// another warpgroup's products (A in registers) run at their full rate (H100 and H200, 2026-11-27)
constexpr double kBesideTensor = 0.62;
// probe_softmax: a group of eight m64n128k16 products waited for before the next is issued takes
// 569 clocks with A in registers and 576 with A in shared memory, against 512 kept in flight: a
// round trip of 57 and 64 clocks, 60 their mean (H100, 2026-11-27, kernels/tools/tensor_round_trip.py)
constexpr double kTensorLatency = 60;

constexpr std::array<GpuPreset, 2> kPresets{{
    {"h100", "NVIDIA H100 SXM5 80GB (132 SMs, 50 MB L2, HBM3)", 132, kH100ClockGhz, kSimtClockGhz, 50ull << 20, 3.0e12,
     228u << 10,
     {{{l2_bytes_per_clk(kH100ClockGhz), 500},
       {kTensorPerClk, kTensorLatency},
       {16, 20},
       {128, 4}}},
     2 * kTensorPerClk, kBesideTensor},
    {"h200", "NVIDIA H200 SXM 141GB (132 SMs, 60 MB L2, HBM3e)", 132, kH200ClockGhz, kSimtClockGhz, 60ull << 20, 4.3e12,
     228u << 10,
     {{{l2_bytes_per_clk(kH200ClockGhz), 500},
       {kTensorPerClk, kTensorLatency},
       {16, 20},
       {128, 4}}},
     2 * kTensorPerClk, kBesideTensor},
}};

constexpr std::array<PresetSource, 15> kSources{{
    {"SMs", "132", "132", "NVIDIA H100 Tensor Core GPU Architecture whitepaper (SXM5); H200 datasheet: the same GH100 configuration"},
    {"clock (tensor-core kernels)", "1.476 GHz", "1.457 GHz",
     "a large GEMM's measured ceiling at the per-clock peak below: an 8192^3 bf16 product through PyTorch, 798 TFLOP/s on an "
     "H100 (2026-11-13) and 788 on an H200 (2026-10-28), this workplace's device notes (KINDS.md), over 132 SMs x 4096 "
     "FLOP/clk; under load the 700 W budget sets the clock (cuBLAS held 1365-1515 MHz, kernels/RESULTS.md). Not the "
     "clock of the fast kernels' benchmark rows: counted in the kernel after each timed run (bench_kernels --sm-clock, "
     "2026-11-27) they ran at a median 1980 MHz (H100) and 1966 (H200) and took 1.44x and 1.42x this model's cycles, "
     "so the figure is the rate at which the model's cycles come out at the measured time"},
    {"clock (SIMT kernels)", "1.83 GHz", "1.83 GHz",
     "the clock at which the datasheet's 989.4 dense bf16 TFLOP/s is 4096 FLOP/clk on each of 132 SMs"},
    {"tensor (bf16/fp16 dense)", "4096 FLOP/clk/SM", "4096 FLOP/clk/SM",
     "the datasheet's per-clock peak (989.4 TFLOP/s at 1.83 GHz); kernels/tools/probe_softmax.cu measured 4094 with one "
     "warpgroup issuing m64n128k16 products (H100 and H200, 2026-11-27)"},
    {"tensor (fp8 e4m3 dense, the FP8 forward)", "8192 FLOP/clk/SM", "8192 FLOP/clk/SM",
     "the datasheet's 1978.9 dense FP8 TFLOP/s, twice the bf16 rate per clock: not measured here"},
    {"tensor latency", "60 cycles", "60 cycles",
     "measured: a group of eight m64n128k16 products waited for before the next is issued takes 57 (A in registers) and 64 "
     "(A in shared memory) clocks longer than one kept in flight (kernels/tools/probe_softmax.cu and tensor_round_trip.py, "
     "H100, 2026-11-27); the H200 is the same SM"},
    {"special function (exp2, log2, rcp)", "16 /clk/SM", "16 /clk/SM",
     "CUDA C++ Programming Guide, arithmetic instruction throughput, compute capability 9.0 (x 132 SMs x 1.83 GHz = 3.9 T/s, "
     "the FlashAttention-3 paper's figure)"},
    {"special latency", "20 cycles", "20 cycles", "MUFU latency, order of magnitude of the Hopper microbenchmarks (arXiv 2402.13499)"},
    {"vector (fp32 add/mul/fma/max)", "128 /clk/SM", "128 /clk/SM", "CUDA C++ Programming Guide, compute capability 9.0"},
    {"vector latency", "4 cycles", "4 cycles", "dependent fp32 arithmetic, Hopper microbenchmarks (PMC10448217, Table 3)"},
    {"special and vector beside products", "x 0.62", "x 0.62",
     "measured: one warpgroup's online softmax of a 64 x 128 tile (kernels/attention_tile.cuh) takes 744 SM clocks alone and "
     "1206 while another warpgroup's products run (A in registers, as the forward's); 16 exp2 chains a thread 13.5 -> 9.0 a "
     "clock per SM (kernels/tools/probe_softmax.cu, H100 and H200, 2026-11-27)"},
    {"shared-memory stores by the warps (the fast kernels' traces)", "128 B/clk/SM", "128 B/clk/SM",
     "CUDA C++ Programming Guide, shared memory: 32 banks of 32 bits a clock. A tile staged for a TMA store (O, dQ, dK, "
     "dV, C) or written as an operand (dS for dQ = dS K) costs its warps one vector pass (128 lanes a clock) per byte of "
     "element (sim/gpu_time.cpp stage_in_shared), beside products at the vector unit's share"},
    {"memory (L2 -> SM, TMA)", "42.3 B/clk/SM", "42.8 B/clk/SM",
     "L2 bandwidth 8986 GB/s for GH100 on 144 SMs (PMC10448217, Table 3): 62.4 GB/s per SM at the clock above"},
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

std::string unit_figure_error(std::string_view key, double value) {
  if (key == "rate" && !(value > 0 && value < 1e12)) return "a unit's rate must be positive (work per cycle)";
  if (key == "latency" && !(value >= 0 && value < 1e9)) return "a unit's latency must be between 0 and 1e9 cycles";
  return {};
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

std::vector<std::pair<Unit, UnitRate>> units_changed_from_preset(const GpuPreset& gpu) {
  const GpuPreset* named = find_gpu_preset(gpu.name);
  std::vector<std::pair<Unit, UnitRate>> out;
  for (std::size_t u = 0; u < kUnitCount; ++u)
    if (!named || !(gpu.units[u] == named->units[u]))
      out.emplace_back(static_cast<Unit>(u), named ? named->units[u] : gpu.units[u]);
  return out;
}

std::string gpu_preset_names() {
  std::string s;
  for (const GpuPreset& p : kPresets) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

std::span<const PresetSource> preset_sources() { return kSources; }

}  // namespace flashsim::isa

// Functional units of the timed machine (`.units`): which unit runs each opcode, and the GPU
// presets whose per-SM rates and latencies the time model (sim/timing.h) uses. Off by default:
// a program without `.units` is timed by the one-cycle-per-instruction count alone.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <utility>

#include "isa/isa.h"

namespace flashsim::isa {

// Memory: LOAD/STORE as bulk (TMA) copies, work in bytes. Tensor: MAC_Z/MAC on tiles, work in
// FLOPs (2 per multiply-add). Special: the exponentials and logarithms, work in elements.
// Vector: every other opcode, work in elements.
enum class Unit : std::uint8_t { Memory, Tensor, Special, Vector };
inline constexpr std::size_t kUnitCount = 4;
inline constexpr std::array<std::string_view, kUnitCount> kUnitNames{"memory", "tensor", "special", "vector"};
inline constexpr std::array<std::string_view, kUnitCount> kUnitWork{"bytes", "FLOPs", "elements", "elements"};

constexpr Unit unit_of(Opcode op) {
  switch (op) {
    case Opcode::LOAD:
    case Opcode::STORE: return Unit::Memory;
    case Opcode::MAC_Z:
    case Opcode::MAC: return Unit::Tensor;
    case Opcode::EXP:
    case Opcode::EXPD:
    case Opcode::EXP2D:
    case Opcode::LOG:
    case Opcode::LOG2: return Unit::Special;
    default: return Unit::Vector;
  }
}
// Asynchronous units run while the issuing stream goes on (TMA copies, wgmma); the others are
// issued by the stream's own warps, which are busy until the instruction is done.
constexpr bool unit_is_async(Unit u) { return u == Unit::Memory || u == Unit::Tensor; }
constexpr std::string_view unit_name(Unit u) { return kUnitNames[static_cast<std::size_t>(u)]; }
std::optional<Unit> find_unit(std::string_view name);
// Why `value` cannot be a unit's `rate` or `latency` (a `.unit` line, `flashsim time --unit`), or
// "" when it can: a rate is positive work a cycle, a latency between 0 and 1e9 cycles.
std::string unit_figure_error(std::string_view key, double value);

struct UnitRate {
  double rate = 1;     // work per cycle (unit's own measure: bytes, FLOPs or elements)
  double latency = 0;  // cycles from the end of the work until the result can be used
  bool operator==(const UnitRate&) const = default;
};

// One GPU: the per-SM figures of the time model and the chip-level ones of a whole launch.
struct GpuPreset {
  std::string_view name;         // "h100", "h200"
  std::string_view description;
  int sms;
  double clock_ghz;              // the SM clock under a tensor-core load; the per-cycle rates count at it
  double simt_clock_ghz;         // the clock of kernels without tensor-core work (sim/gpu_time_simt.cpp)
  std::uint64_t l2_bytes;
  double hbm_bytes_per_s;        // sustained (measured copy), bounds a launch's HBM bytes
  std::uint64_t smem_bytes_per_sm;
  std::array<UnitRate, kUnitCount> units;  // per SM, indexed by Unit
  double tensor_fp8_rate;        // FLOP/clk/SM of e4m3 products (the FP8 forward), in place of units[Tensor]
  double beside_tensor;          // the share of the special and vector units' rates left while products run
};
std::span<const GpuPreset> gpu_presets();
const GpuPreset* find_gpu_preset(std::string_view name);
// The units whose figures in `gpu` differ from its named preset's (`flashsim time --unit`), with
// the preset's figures; every unit when the name is no preset's.
std::vector<std::pair<Unit, UnitRate>> units_changed_from_preset(const GpuPreset& gpu);
std::string gpu_preset_names();  // "h100, h200"

// Where each figure of the presets comes from (docs and `flashsim time --sources`).
struct PresetSource {
  std::string_view figure;
  std::string_view h100;
  std::string_view h200;
  std::string_view source;
};
std::span<const PresetSource> preset_sources();

// A program's `.units` directive and the `.unit` lines after it.
struct UnitsConfig {
  std::string preset;                         // a GpuPreset name
  std::array<UnitRate, kUnitCount> units{};   // the preset's, with any `.unit` overrides
  bool redefined = false;                     // a `.unit` line changed a figure (lessons refuse it)
  double beside_tensor = 1;                   // the preset's GpuPreset::beside_tensor
  bool operator==(const UnitsConfig&) const = default;
};

}  // namespace flashsim::isa

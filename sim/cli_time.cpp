#include "sim/cli_time.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli.h"
#include "sim/gpu_time.h"
#include "sim/json_text.h"

namespace flashsim::cli {

namespace {

struct TimeArgs {
  std::string gpu = "h100";
  std::string dtype = "bf16";
  std::int64_t n = 0, d = 64, heads = 1, m = 0, k = 0;
  bool causal = false, backward = false, json = false;
  int version = 0;
  std::string pingpong, overlap, rescale_under_s, softmax_under_pv, split_tail, warp_specialized;  // "", "on", "off"
  std::string kv_order;  // "", "longest-first", "shortest-first"
  int key_tile = 0, consumers = 0;  // 0: the launcher's
  bool sums_on_tensor = false;
  double hbm_bytes = 0;
  double clock_mhz = 0;
  bool clock_given = false;  // --clock-mhz on the command line (else the preset's clock)
  std::vector<std::string> unit_overrides;  // --unit NAME:rate=R,latency=L
  std::string trace_out;
};

const isa::GpuPreset& preset(const std::string& name) {
  const isa::GpuPreset* g = isa::find_gpu_preset(name);
  if (!g) throw std::invalid_argument("unknown --gpu '" + name + "' (known: " + isa::gpu_preset_names() + ")");
  return *g;
}

std::optional<bool> on_off(const std::string& v, const char* option) {
  if (v.empty()) return std::nullopt;
  if (v == "on") return true;
  if (v == "off") return false;
  throw std::invalid_argument(std::string(option) + " takes on or off, not '" + v + "'");
}

// --unit NAME:rate=R,latency=L (either or both): one unit's figures over the preset's, as a
// trace's `.unit` line would set them
void apply_unit_override(isa::GpuPreset& g, const std::string& spec) {
  const std::string usage = "--unit takes NAME:rate=R,latency=L (e.g. tensor:latency=384), not '" + spec + "'";
  const std::size_t colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) throw std::invalid_argument(usage);
  const std::string name = spec.substr(0, colon);
  const auto u = isa::find_unit(name);
  if (!u) throw std::invalid_argument("--unit: unknown unit '" + name + "' (units: memory, tensor, special, vector)");
  isa::UnitRate& r = g.units[static_cast<std::size_t>(*u)];
  std::istringstream fields(spec.substr(colon + 1));
  for (std::string field; std::getline(fields, field, ',');) {
    const std::size_t eq = field.find('=');
    const std::string key = field.substr(0, eq);
    if (eq == std::string::npos || (key != "rate" && key != "latency")) throw std::invalid_argument(usage);
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(field.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != field.size() - eq - 1) throw std::invalid_argument(usage);
    if (const std::string why = isa::unit_figure_error(key, v); !why.empty())
      throw std::invalid_argument("--unit: " + why + ", not " + field.substr(eq + 1));
    (key == "rate" ? r.rate : r.latency) = v;
  }
}

std::string json_number(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";  // JSON has no NaN or infinity
  // every digit (as sim/report.cpp's): %.6g rounded the cycles and HBM bytes to 6 figures
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void print_text(const sim::TimeQuery& q, const sim::LaunchPrediction& p, const isa::GpuPreset& g, const std::string& what) {
  std::cout << what << " on " << g.name << " (" << g.description << ")\n";
  std::cout << "kernel      " << p.plan.name << "\n";
  for (const auto& [unit, preset] : isa::units_changed_from_preset(g)) {
    const isa::UnitRate& r = g.units[static_cast<std::size_t>(unit)];
    std::cout << "--unit      " << isa::unit_name(unit) << " rate " << r.rate << " latency " << r.latency
              << " (the preset's: rate " << preset.rate << " latency " << preset.latency << ")\n";
  }
  std::cout << "predicted   " << fixed(p.predicted_ms, 4) << " ms  (SMs " << fixed(p.sm_ms, 4) << " ms, HBM "
            << fixed(p.hbm_ms, 4) << " ms for " << fixed(p.hbm_bytes / (1 << 20), 1) << " MiB"
            << (p.extra_ms > 0 ? ", small launches " + fixed(p.extra_ms, 4) + " ms" : "") << ")\n";
  if (p.flops > 0) std::cout << "rate        " << fixed(p.flops / (p.predicted_ms * 1e-3) / 1e12, 1) << " TFLOP/s\n";
  std::cout << "cycles      " << fixed(p.cycles, 0) << " on the busiest SM at " << fixed(g.clock_ghz, 2) << " GHz ("
            << p.blocks << " blocks)\n";
  std::cout << "bound       " << p.bound << "\n";
  std::cout << "unit        busy cycles    busy   (one block on the busiest SM)\n";
  for (std::size_t u = 0; u < isa::kUnitCount; ++u) {
    std::string name(isa::kUnitNames[u]);
    name.resize(12, ' ');
    std::string busy = fixed(p.units[u].busy_cycles, 0);
    if (busy.size() < 12) busy.insert(0, 12 - busy.size(), ' ');
    std::cout << name << busy << "  " << fixed(100 * p.units[u].busy_fraction, 1) << " %\n";
  }
  (void)q;
}

void print_json(const sim::LaunchPrediction& p, const isa::GpuPreset& g) {
  std::ostringstream os;
  os << "{\"gpu\": \"" << g.name << "\", \"kernel\": " << sim::json_string(p.plan.name) << ", \"version\": " << p.plan.version
     << ", \"clock_ghz\": " << json_number(g.clock_ghz) << ", \"unit_figures\": {";
  for (std::size_t u = 0; u < isa::kUnitCount; ++u)
    os << (u ? ", " : "") << "\"" << isa::kUnitNames[u] << "\": {\"rate\": " << json_number(g.units[u].rate)
       << ", \"latency\": " << json_number(g.units[u].latency) << "}";
  os << "}"
     << ", \"predicted_ms\": " << json_number(p.predicted_ms) << ", \"sm_ms\": " << json_number(p.sm_ms)
     << ", \"hbm_ms\": " << json_number(p.hbm_ms) << ", \"extra_ms\": " << json_number(p.extra_ms)
     << ", \"hbm_bytes\": " << json_number(p.hbm_bytes) << ", \"cycles\": " << json_number(p.cycles)
     << ", \"blocks\": " << p.blocks << ", \"flops\": " << json_number(p.flops) << ", \"bound\": \"" << p.bound
     << "\", \"units\": {";
  for (std::size_t u = 0; u < isa::kUnitCount; ++u)
    os << (u ? ", " : "") << "\"" << isa::kUnitNames[u] << "\": {\"busy_cycles\": " << json_number(p.units[u].busy_cycles)
       << ", \"busy_fraction\": " << json_number(p.units[u].busy_fraction) << "}";
  os << "}, \"plan\": {\"br\": " << p.plan.br << ", \"bc\": " << p.plan.bc << ", \"consumers\": " << p.plan.consumers
     << ", \"stages\": " << p.plan.stages << ", \"warp_specialized\": " << (p.plan.warp_specialized ? "true" : "false")
     << ", \"intra_overlap\": " << (p.plan.intra_overlap ? "true" : "false")
     << ", \"rescale_under_s\": " << (p.plan.rescale_under_s ? "true" : "false")
     << ", \"softmax_under_pv\": " << (p.plan.softmax_under_pv ? "true" : "false")
     << ", \"split_tail\": " << (p.plan.split_tail ? "true" : "false")
     << ", \"pingpong\": " << (p.plan.pingpong ? "true" : "false") << ", \"persistent\": " << (p.plan.persistent ? "true" : "false")
     << ", \"blocks_per_sm\": " << p.plan.blocks_per_sm << "}}";
  std::cout << os.str() << "\n";
}

int run_time(sim::TimeQuery q, const TimeArgs& a, const std::string& what) {
  isa::GpuPreset g = preset(a.gpu);
  if (a.clock_given) {
    // the same cycles at another SM clock: the kernels do not all hold the preset's (kernels/RESULTS.md)
    if (!(a.clock_mhz >= 100 && a.clock_mhz <= 5000))
      throw std::invalid_argument("--clock-mhz must be between 100 and 5000, not " + fixed(a.clock_mhz, 1));
    g.clock_ghz = a.clock_mhz / 1000;
  }
  for (const std::string& spec : a.unit_overrides) apply_unit_override(g, spec);
  if (a.dtype != "bf16" && a.dtype != "fp16" && a.dtype != "fp8")
    throw std::invalid_argument("--dtype takes bf16, fp16 or fp8, not '" + a.dtype + "'");
  if (a.dtype == "fp8") {
    if (q.op != sim::TimedOp::AttnFwd) throw std::invalid_argument("--dtype fp8 is for the attention forward only");
    q.fp8 = true;
    q.elem_bytes = 1;
  }
  // !(x >= 0) also refuses nan, which would otherwise fall back to the compulsory bytes unsaid
  if (!std::isfinite(a.hbm_bytes) || a.hbm_bytes < 0)
    throw std::invalid_argument("--hbm-bytes must be a finite number of bytes, not negative");
  if (a.hbm_bytes > 0) q.hbm_bytes = a.hbm_bytes;
  q.pingpong = on_off(a.pingpong, "--pingpong");
  q.intra_overlap = on_off(a.overlap, "--overlap");
  q.warp_specialized = on_off(a.warp_specialized, "--warp-specialized");
  q.rescale_under_s = on_off(a.rescale_under_s, "--rescale-under-s");
  q.softmax_under_pv = on_off(a.softmax_under_pv, "--softmax-under-pv");
  q.split_tail = on_off(a.split_tail, "--split-tail");
  if (!a.kv_order.empty() && a.kv_order != "longest-first" && a.kv_order != "shortest-first")
    throw std::invalid_argument("--kv-order takes longest-first or shortest-first, not '" + a.kv_order + "'");
  q.shortest_first = a.kv_order == "shortest-first";
  if (a.key_tile) q.key_tile = a.key_tile;
  if (a.consumers) q.consumers = a.consumers;
  q.sums_on_tensor = a.sums_on_tensor;
  if (!a.trace_out.empty()) {
    std::ofstream out(a.trace_out);
    if (!out) throw std::invalid_argument("cannot write " + a.trace_out);
    out << sim::block_trace(q, g);
  }
  const sim::LaunchPrediction p = sim::predict_time(q, g);
  if (a.json) print_json(p, g);
  else print_text(q, p, g, what);
  return kExitOk;
}

void common_options(CLI::App* c, TimeArgs& a) {
  c->add_option("--gpu", a.gpu, "GPU preset: h100 or h200 (per-SM rates and sources: flashsim time gpus)");
  c->add_flag("--json", a.json, "One JSON object: predicted_ms, cycles, bound, units {name: {busy_cycles, busy_fraction}}, ...");
  c->add_option("--clock-mhz", a.clock_mhz,
                 "SM clock the cycles count at, in MHz (default: the preset's, a GEMM's clock under the power cap; "
                 "the fast attention kernels hold 1550-1830 on an H100, kernels/RESULTS.md)")
      ->each([&a](const std::string&) { a.clock_given = true; });
  c->add_option("--unit", a.unit_overrides,
                 "One unit's figures over the preset's, as a trace's .unit line: NAME:rate=R,latency=L (either or both; "
                 "e.g. tensor:latency=384); repeatable. The FP8 forward keeps the preset's FP8 tensor rate");
  c->add_option("--hbm-bytes", a.hbm_bytes, "HBM bytes of the launch (e.g. the L2 model's prediction); default: compulsory bytes");
  c->add_option("--trace", a.trace_out, "Write the timed trace of the busiest SM's block here (flashsim run / the viewer take it)");
}

}  // namespace

void register_time_command(CLI::App& app, int& exit_code) {
  CLI::App* t = app.add_subcommand("time", "Predicted time of the fast kernels on a GPU preset: units that overlap");
  t->require_subcommand(1);

  auto att = std::make_shared<TimeArgs>();
  CLI::App* ta = t->add_subcommand("attention", "Attention forward (or --backward) of the fast kernels");
  ta->add_option("--n", att->n, "Sequence length N")->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 22));
  ta->add_option("--d", att->d, "Head dimension (64 or 128)")->check(CLI::IsMember({64, 128}));
  ta->add_option("--heads", att->heads, "batch * heads")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16));
  ta->add_flag("--causal", att->causal, "Causal mask");
  ta->add_flag("--backward", att->backward, "The backward pass (versions 5, 6, 7)");
  ta->add_option("--version", att->version, "Kernel version (forward 5, 6 or 2 = FA2 order without overlap; backward 5, 6, 7); 0 or left out: the launcher's choice for the sizes")
      ->check(CLI::Range(0, 7));
  ta->add_option("--pingpong", att->pingpong, "Forward: ping-pong of the consumer warpgroups on or off (FA3's ablation)");
  ta->add_option("--warp-specialized", att->warp_specialized,
                 "Forward version 6: a producer warp issues the copies (on, default) or consumer 0 does, in order with its "
                 "products (off; FA3's ablation, ping-pong off unless asked)");
  ta->add_option("--overlap", att->overlap, "Forward: the intra-warpgroup overlap of S_{j+1} with the softmax of j on or off");
  ta->add_option("--rescale-under-s", att->rescale_under_s,
                 "Forward version 6: O's rescale issued under the next S (FA3's order) on or off; default: the launcher's "
                 "(on; off with --dtype fp8)");
  ta->add_option("--softmax-under-pv", att->softmax_under_pv,
                 "Forward version 6: the softmax of S_j under P_{j-1} V_{j-1} on, or only after it (off: where ptxas "
                 "puts the wait without a fence); default: the launcher's (on at d = 128, off at d = 64 and for fp8)");
  ta->add_option("--kv-order", att->kv_order,
                 "Backward, causal: the K/V blocks' launch order, longest-first (the launcher's since 2026-12-07) or "
                 "shortest-first (every backward measured before it)");
  ta->add_option("--split-tail", att->split_tail,
                 "Forward version 6, full mask: the persistent launch's last round split along the keys over every SM "
                 "(sim/split_tail.h) on or off; default: the launcher's (on at d = 128 from N = 8192; FLASHSIM_FWD_SPLIT=0/1 force it there)");
  ta->add_option("--key-tile", att->key_tile, "Forward version 6: keys a KV tile (a multiple of 16, FP8 32, up to 256); default: the launcher's")
      ->check(CLI::Range(16, 256));
  ta->add_option("--consumers", att->consumers, "Forward version 6: consumer warpgroups, 2 or 3 (64 query rows each); default: the launcher's")
      ->check(CLI::IsMember({2, 3}));
  ta->add_flag("--sums-on-tensor", att->sums_on_tensor,
               "Forward version 6: the softmax's row sums as P times ones on the tensor cores, not on the vector unit");
  ta->add_option("--dtype", att->dtype,
                 "bf16 or fp16 (the same rates), or fp8 (forward only: e4m3 Q, K, V and P at the FP8 tensor rate, "
                 "O in bf16)");
  common_options(ta, *att);
  ta->callback([att, &exit_code] {
    exit_code = guarded([&] {
      sim::TimeQuery q;
      q.op = att->backward ? sim::TimedOp::AttnBwd : sim::TimedOp::AttnFwd;
      q.n = att->n;
      q.d = att->d;
      q.heads = att->heads;
      q.causal = att->causal;
      q.version = att->version;
      const std::string what = std::string("attention ") + (att->backward ? "backward" : "forward") + ", N = " +
                               std::to_string(q.n) + ", d = " + std::to_string(q.d) + ", " + std::to_string(q.heads) +
                               " heads, " + (q.causal ? "causal" : "full") + ", " + att->dtype;
      return run_time(q, *att, what);
    });
  });

  auto mm = std::make_shared<TimeArgs>();
  CLI::App* tm = t->add_subcommand("matmul", "bf16 matmul, version 3 (warp-specialized, persistent)");
  tm->add_option("--m", mm->m, "Rows of A and C")->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  tm->add_option("--n", mm->n, "Columns of B and C")->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  tm->add_option("--k", mm->k, "Columns of A, rows of B")->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  common_options(tm, *mm);
  tm->callback([mm, &exit_code] {
    exit_code = guarded([&] {
      sim::TimeQuery q;
      q.op = sim::TimedOp::Matmul;
      q.m = mm->m;
      q.n = mm->n;
      q.k = mm->k;
      return run_time(q, *mm, "matmul " + std::to_string(q.m) + "x" + std::to_string(q.n) + "x" + std::to_string(q.k) + ", bf16");
    });
  });

  auto sm = std::make_shared<TimeArgs>();
  CLI::App* ts = t->add_subcommand("softmax", "Online softmax over fp32 rows, version 3");
  ts->add_option("--rows", sm->m, "Rows")->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  ts->add_option("--cols", sm->n, "Columns")->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  common_options(ts, *sm);
  ts->callback([sm, &exit_code] {
    exit_code = guarded([&] {
      sim::TimeQuery q;
      q.op = sim::TimedOp::Softmax;
      q.m = sm->m;
      q.n = sm->n;
      q.elem_bytes = 4;
      return run_time(q, *sm, "softmax " + std::to_string(q.m) + "x" + std::to_string(q.n) + ", fp32");
    });
  });

  CLI::App* tg = t->add_subcommand("gpus", "The GPU presets' figures and where each comes from");
  tg->callback([&exit_code] {
    std::cout << "figure | h100 | h200 | source\n--- | --- | --- | ---\n";
    for (const isa::PresetSource& s : isa::preset_sources())
      std::cout << s.figure << " | " << s.h100 << " | " << s.h200 << " | " << s.source << "\n";
    exit_code = kExitOk;
  });
}

}  // namespace flashsim::cli

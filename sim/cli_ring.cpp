#include "sim/cli_ring.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <random>

#include "isa/units.h"
#include "sim/cli.h"
#include "sim/gpu_time.h"
#include "sim/ring.h"

namespace flashsim::cli {
namespace {

struct RingArgs {
  std::int64_t n = 1024, d = 64, tile = 64;
  int p = 2, elem = 4, acc = 4;
  bool causal = false, backward = false, ops = false;
  std::string split = "contiguous";
  std::uint64_t seed = 1;
  // the ring against the all-gather alternative, timed (--gpu): heads, link rate
  std::string gpu;
  std::int64_t heads = 1;
  double link_gbs = 360;
};

const char* kind_name(sim::ring::OpKind k) {
  switch (k) {
    case sim::ring::OpKind::Compute: return "COMPUTE";
    case sim::ring::OpKind::Send: return "SEND";
    case sim::ring::OpKind::Recv: return "RECV";
  }
  return "?";
}

void print_allgather_comparison(const RingArgs& a, const sim::ring::RingMachine& ring);

int do_ring(const RingArgs& a) {
  namespace r = sim::ring;
  r::RingConfig cfg{a.n, a.d, a.p, a.causal, a.elem, a.acc, a.tile,
                    a.split == "zigzag" ? r::Split::Zigzag : r::Split::Contiguous};
  const r::RingSchedule sch = a.backward ? r::backward_schedule(cfg) : r::forward_schedule(cfg);
  std::cout << "ring attention " << (a.backward ? "backward" : "forward") << ": n = " << a.n << ", d = " << a.d
            << ", P = " << a.p << (a.causal ? ", causal" : "") << ", " << a.split << " split, " << a.elem << "-byte elements, " << sch.steps
            << " steps, " << sch.ops.size() << " device ops\n";
  if (a.ops) {
    std::cout << "\n| step | op | device | peer | block | payload | bytes |\n|---:|---|---:|---:|---:|---|---:|\n";
    for (const auto& op : sch.ops)
      std::cout << "| " << op.step << " | " << kind_name(op.kind) << (op.masked ? " (masked)" : "") << " | "
                << op.device << " | " << (op.peer < 0 ? std::string("-") : std::to_string(op.peer)) << " | "
                << op.block << " | " << (op.payload == r::Payload::KV ? "K,V" : "dK,dV") << " | " << op.bytes
                << " |\n";
  }
  // Values are computed in float64 for the forward; the backward is counted only.
  const bool values = !a.backward && a.n * a.n * a.d <= (std::int64_t{1} << 31);
  std::vector<double> q, k, v;
  if (values) {
    std::mt19937_64 rng(a.seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto* x : {&q, &k, &v}) {
      x->resize(static_cast<std::size_t>(a.n * a.d));
      for (auto& e : *x) e = u(rng);
    }
  }
  r::RingMachine m(cfg, q, k, v);
  m.execute(sch);
  std::cout << "\n" << r::traffic_table(sch, m);
  std::int64_t total = 0;
  for (auto b : m.link_bytes()) total += b;
  const std::int64_t closed = a.backward ? r::backward_total_link_bytes(cfg) : r::forward_total_link_bytes(cfg);
  const double kv = 2.0 * a.n * a.d * a.elem;
  std::cout << "\nlink bytes: counted " << total << ", closed form " << closed << " ("
            << (a.p > 1 ? total / kv / a.p : 0.0) << " of K and V per device)\n";
  int rc = total == closed ? kExitOk : kExitFault;
  if (values) {
    std::vector<double> lse;
    const auto ref = r::attention_reference(q, k, v, a.n, a.d, a.causal, &lse);
    double err = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) err = std::max(err, std::abs(ref[i] - m.output()[i]));
    for (std::size_t i = 0; i < lse.size(); ++i) err = std::max(err, std::abs(lse[i] - m.lse()[i]));
    std::cout << "float64 check: max |ring - reference| over O and lse = " << err << (err < 1e-9 ? " (ok)" : " (MISMATCH)")
              << "\n";
    if (err >= 1e-9) rc = kExitFault;
  } else if (!a.backward) {
    std::cout << "float64 check skipped: n*n*d is too large for a value run (counts only)\n";
  }
  if (a.backward) {
    bool home = true;
    for (int p = 0; p < a.p; ++p) home = home && m.held(r::Payload::dKV)[p] == p;
    std::cout << "dK/dV sums end at their owners (the last hop in the element type): " << (home ? "yes" : "NO") << "\n";
    if (!home) rc = kExitFault;
  }
  print_allgather_comparison(a, m);
  if (rc != kExitOk) std::cerr << "error: the ring run disagrees with its closed form or reference\n";
  return rc;
}

// Ring against all-gather: counted link bytes and peak bytes per device, and with --gpu the
// predicted time of each (sim::ring::predict_methods on the time model's pair times).
void print_allgather_comparison(const RingArgs& a, const sim::ring::RingMachine& ring) {
  namespace r = sim::ring;
  r::RingConfig cfg{a.n, a.d, a.p, a.causal, a.elem, a.acc, a.tile,
                    a.split == "zigzag" ? r::Split::Zigzag : r::Split::Contiguous};
  std::cout << "\nthe all-gather alternative (every device gathers all K/V" << (a.backward ? ", then reduce-scatters dK/dV" : "")
            << "), per device, one head of d values a row:\n| device | link sent B: ring | link sent B: all-gather | peak held B: ring | peak held B: all-gather |\n"
            << "|---:|---:|---:|---:|---:|\n";
  for (int p = 0; p < a.p; ++p)
    std::cout << "| " << p << " | " << ring.link_bytes()[p] << " | " << r::allgather_link_bytes(cfg, p, a.backward) << " | "
              << ring.devices()[p].resident_peak << " | " << r::allgather_resident_peak(cfg, p, a.backward) << " |\n";
  if (a.gpu.empty()) return;
  const isa::GpuPreset* gpu = isa::find_gpu_preset(a.gpu);
  if (!gpu) throw std::invalid_argument("unknown --gpu '" + a.gpu + "' (known: " + isa::gpu_preset_names() + ")");
  const std::int64_t parts = static_cast<std::int64_t>(a.p) * (a.split == "zigzag" ? 2 : 1);
  if (a.n % parts != 0) throw std::invalid_argument("--gpu: the prediction needs n divisible into equal chunks");
  sim::TimeQuery q;
  q.op = a.backward ? sim::TimedOp::AttnBwd : sim::TimedOp::AttnFwd;
  q.n = a.n / parts;
  q.d = a.d;
  q.heads = a.heads;
  q.elem_bytes = a.elem;
  const double full = sim::predict_time(q, *gpu).predicted_ms;
  q.causal = true;
  const double masked = sim::predict_time(q, *gpu).predicted_ms;
  r::RingConfig all = cfg;
  all.d = a.d * a.heads;  // bytes of every head
  const auto t = r::predict_methods(all, a.backward, full, masked, a.link_gbs * 1e6);
  cli::print_out("predicted (%s, %lld heads of d = %lld, pairs of %lld rows: %.3f ms full, %.3f ms masked; links %.0f GB/s "
                 "per device): ring %.3f ms, all-gather %.3f ms: %s\n",
                 std::string(gpu->name).c_str(), static_cast<long long>(a.heads), static_cast<long long>(a.d),
                 static_cast<long long>(q.n), full, masked, a.link_gbs, t.ring_ms, t.allgather_ms,
                 t.ring_ms < t.allgather_ms ? "the ring wins" : t.ring_ms > t.allgather_ms ? "the all-gather wins" : "a tie");
}

}  // namespace

void register_ring_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<RingArgs>();
  CLI::App* c = app.add_subcommand("ring", "Ring attention over P devices: schedule, float64 run, link bytes");
  c->add_option("--n", a->n, "Sequence length")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  c->add_option("--d", a->d, "Head dimension")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16));
  c->add_option("--p,--gpus", a->p, "Devices in the ring")->check(CLI::Range(1, 4096));
  c->add_option("--elem", a->elem, "Bytes per Q/K/V/O element")->check(CLI::Range(1, 16));
  c->add_option("--acc", a->acc, "Bytes per dK/dV accumulator element (backward)")->check(CLI::Range(1, 16));
  c->add_option("--tile", a->tile, "FA2 tile of each device's step (HBM model)")->check(CLI::Range(1, 1 << 16));
  c->add_option("--seed", a->seed, "Random Q, K, V seed");
  c->add_flag("--causal", a->causal, "Causal mask");
  c->add_option("--split", a->split,
                "How the sequence is split over devices: contiguous (device p: rows p n/P ..), or zigzag "
                "(2P chunks, device p: chunks p and 2P-1-p; balanced under a causal mask)")
      ->check(CLI::IsMember({"contiguous", "zigzag"}));
  c->add_flag("--backward", a->backward, "The backward schedule (counts only)");
  c->add_flag("--ops", a->ops, "Print every device op");
  c->add_option("--gpu", a->gpu,
                "Also predict the ring's and the all-gather's time on this GPU preset (the time model's pair times)");
  c->add_option("--heads", a->heads, "Heads (batch x heads) for --gpu's prediction")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  c->add_option("--link-gbs", a->link_gbs,
                "GB/s each device sends, for --gpu (default: the copy engines' 360, measured by flashsim-gpu ring on 4 x H100)")
      ->check(CLI::Range(1e-3, 1e6));
  c->callback([a, &exit_code] { exit_code = guarded([&] { return do_ring(*a); }); });
}

}  // namespace flashsim::cli

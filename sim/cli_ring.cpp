#include "sim/cli_ring.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <random>

#include "sim/cli.h"
#include "sim/ring.h"

namespace flashsim::cli {
namespace {

struct RingArgs {
  std::int64_t n = 1024, d = 64, tile = 64;
  int p = 2, elem = 4, acc = 4;
  bool causal = false, backward = false, ops = false;
  std::string split = "contiguous";
  std::uint64_t seed = 1;
};

const char* kind_name(sim::ring::OpKind k) {
  switch (k) {
    case sim::ring::OpKind::Compute: return "COMPUTE";
    case sim::ring::OpKind::Send: return "SEND";
    case sim::ring::OpKind::Recv: return "RECV";
  }
  return "?";
}

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
    std::cout << "dK/dV accumulators end at their owners: " << (home ? "yes" : "NO") << "\n";
    if (!home) rc = kExitFault;
  }
  if (rc != kExitOk) std::cerr << "error: the ring run disagrees with its closed form or reference\n";
  return rc;
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
  c->callback([a, &exit_code] { exit_code = guarded([&] { return do_ring(*a); }); });
}

}  // namespace flashsim::cli

// Predicted time of the SIMT kernels (versions 1-3 of kernels/*.cu): a throughput model from the
// GPU preset's per-SM rates, described in sim/gpu_time.h. The work of each block follows the
// kernel files' headers (tiles of 64 x 64 at d = 64, 256-thread blocks; matmul v2: 256 x 256 tiles,
// k-steps of 4; softmax: 4096-column chunks).
#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/gpu_time.h"

namespace flashsim::sim {

namespace {

std::int64_t cdiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// One block's work: FMAs and other fp32 operations (vector unit), exponentials (special unit),
// bytes between the SM and L2 (memory unit).
struct BlockWork {
  double vec = 0, exps = 0, bytes = 0;
  BlockWork& operator+=(const BlockWork& o) {
    vec += o.vec, exps += o.exps, bytes += o.bytes;
    return *this;
  }
  BlockWork operator*(double s) const { return {vec * s, exps * s, bytes * s}; }
};

struct Launch {
  std::string what;
  std::vector<BlockWork> blocks;  // in launch order
  double hbm_once = 0;            // bytes of the arrays it touches, each once
};

// The blocks of a uniform launch.
Launch uniform(std::string what, std::int64_t count, BlockWork w, double hbm_once) {
  return Launch{std::move(what), std::vector<BlockWork>(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)), w), hbm_once};
}

struct LaunchTime {
  double sm_cycles = 0;       // the longest SM
  std::array<double, 3> longest{};  // its vector, special, memory busy cycles
};

// Blocks in launch order to the SM that frees first; each SM runs its blocks at its full rates.
LaunchTime lay_out(const Launch& l, const isa::GpuPreset& gpu) {
  const auto& u = gpu.units;
  auto unit_cycles = [&](const BlockWork& w) {
    return std::array<double, 3>{w.vec / u[static_cast<std::size_t>(isa::Unit::Vector)].rate,
                                 w.exps / u[static_cast<std::size_t>(isa::Unit::Special)].rate,
                                 w.bytes / u[static_cast<std::size_t>(isa::Unit::Memory)].rate};
  };
  auto cycles = [&](const BlockWork& w) {
    const auto c = unit_cycles(w);
    return std::max({c[0], c[1], c[2]});
  };
  LaunchTime t;
  if (l.blocks.empty()) return t;
  const std::int64_t sms = gpu.sms;
  bool same = true;
  for (const BlockWork& w : l.blocks)
    same = same && w.vec == l.blocks[0].vec && w.exps == l.blocks[0].exps && w.bytes == l.blocks[0].bytes;
  if (same) {
    const double per = static_cast<double>(cdiv(static_cast<std::int64_t>(l.blocks.size()), sms));
    t.sm_cycles = per * cycles(l.blocks[0]);
    const auto c = unit_cycles(l.blocks[0]);
    for (int k = 0; k < 3; ++k) t.longest[static_cast<std::size_t>(k)] = per * c[static_cast<std::size_t>(k)];
    return t;
  }
  // (end, sm): the SM whose blocks end first takes the next one
  using Slot = std::pair<double, std::int64_t>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free;
  for (std::int64_t s = 0; s < sms; ++s) free.push({0.0, s});
  std::vector<std::array<double, 3>> busy(static_cast<std::size_t>(sms), std::array<double, 3>{});
  for (const BlockWork& w : l.blocks) {
    auto [end, s] = free.top();
    free.pop();
    const auto c = unit_cycles(w);
    for (int k = 0; k < 3; ++k) busy[static_cast<std::size_t>(s)][static_cast<std::size_t>(k)] += c[static_cast<std::size_t>(k)];
    end += cycles(w);
    free.push({end, s});
    if (end > t.sm_cycles) {
      t.sm_cycles = end;
      t.longest = busy[static_cast<std::size_t>(s)];
    }
  }
  return t;
}

std::vector<Launch> simt_launches(const SimtQuery& q, std::string* name, double* flops) {
  const double e = q.elem_bytes;
  const std::int64_t T = 64;  // attention tiles (br = bc = 64)
  std::vector<Launch> out;
  switch (q.kernel) {
    case SimtKernel::MatmulInner: {
      // 64x64 C tile per block, A and B panels streamed in k-steps of 16, fp32 C written once
      const std::int64_t blocks = cdiv(q.n, 64) * cdiv(q.m, 64), kp = cdiv(q.k, 16) * 16;
      const BlockWork w{64.0 * 64 * kp, 0, 2.0 * 64 * kp * e + 64.0 * 64 * 4};
      out.push_back(uniform("inner", blocks, w,
                            e * static_cast<double>(q.m) * q.k + e * static_cast<double>(q.k) * q.n + 4.0 * q.m * q.n));
      *name = "matmul version 1 (SIMT fp32 FMA, 64x64 C tiles in registers), 1 launch";
      *flops = 2.0 * q.m * q.n * q.k;
      break;
    }
    case SimtKernel::MatmulOuter: {
      // one launch per k-step of 4: 256x256 C tiles read (not at the first step) and written in fp32
      const std::int64_t blocks = cdiv(q.n, 256) * cdiv(q.m, 256);
      for (std::int64_t k0 = 0; k0 < q.k; k0 += 4) {
        const double kk = static_cast<double>(std::min<std::int64_t>(4, q.k - k0));
        const double c_trips = k0 == 0 ? 1 : 2;
        const BlockWork w{256.0 * 256 * kk, 0, 2.0 * 256 * kk * e + 256.0 * 256 * 4 * c_trips};
        out.push_back(uniform("outer step", blocks, w,
                              e * kk * (static_cast<double>(q.m) + q.n) + 4.0 * c_trips * q.m * q.n));
      }
      *name = "matmul version 2 (SIMT fp32 FMA, k-steps of 4 across launches, C read and written per step), " +
              std::to_string(out.size()) + " launches";
      *flops = 2.0 * q.m * q.n * q.k;
      break;
    }
    case SimtKernel::SoftmaxThreePass:
    case SimtKernel::SoftmaxOnline: {
      const std::int64_t nc = cdiv(q.n, 4096), blocks = nc * q.m;
      const double c = static_cast<double>(q.n) / static_cast<double>(nc);  // columns a block
      const double x = e * static_cast<double>(q.m) * q.n, part = 4.0 * static_cast<double>(q.m) * nc;
      if (q.kernel == SimtKernel::SoftmaxThreePass) {
        out.push_back(uniform("max pass", blocks, BlockWork{c, 0, c * e + 4}, x + part));
        out.push_back(uniform("sum pass", blocks, BlockWork{2 * c, c, c * e + 4.0 * nc + 4}, x + 2 * part));
        out.push_back(uniform("normalize pass", blocks, BlockWork{2 * c, c, 2 * c * e + 8.0 * nc}, 2 * x + 2 * part));
        *name = "softmax version 1 (three passes over X, 4096-column chunks), 3 launches";
      } else {
        out.push_back(uniform("online max+sum pass", blocks, BlockWork{3 * c, c, c * e + 8}, x + 2 * part));
        out.push_back(uniform("normalize pass", blocks, BlockWork{2 * c, c, 2 * c * e + 8.0 * nc}, 2 * x + 2 * part));
        *name = "softmax version 2 (online max+sum, then normalize; 4096-column chunks), 2 launches";
      }
      *flops = 0;
      break;
    }
    case SimtKernel::AttnNaive:
    case SimtKernel::AttnFA1:
    case SimtKernel::AttnFA2: {
      const std::int64_t t = cdiv(q.n, T), h = q.heads;
      const double d = static_cast<double>(q.d), n = static_cast<double>(q.n), hd = static_cast<double>(h);
      const double tile = static_cast<double>(T) * d;   // elements of a Q/K/V/O tile
      const double step_fma = 2.0 * T * T * d;          // S = Q K^T and P V of one tile pair
      const double qkvo = hd * n * d * e;               // one of Q, K, V, O
      *flops = 4.0 * n * n * d * hd * (q.causal ? 0.5 : 1.0);
      if (q.kernel == SimtKernel::AttnNaive) {
        // S = QK^T (fp32, every tile, no causal skipping), row statistics, P = exp(S - L), O = PV
        const double s_bytes = hd * n * n * 4;
        const double cols = static_cast<double>(t * T);
        out.push_back(uniform("scores", t * h, BlockWork{T * cols * d + T * cols, 0, (tile + cols * d) * e + T * cols * 4},
                              2 * qkvo + s_bytes));
        out.push_back(uniform("row statistics", h * q.n, BlockWork{3 * n, n, 4 * n + 4}, s_bytes + 4 * hd * n));
        out.push_back(uniform("normalize", h * q.n, BlockWork{n, n, 8 * n + 4}, 2 * s_bytes + 4 * hd * n));
        out.push_back(uniform("P V", t * h, BlockWork{T * cols * d, 0, T * cols * 4 + cols * d * e + tile * e},
                              s_bytes + 2 * qkvo));
        *name = "attention forward version 1 (naive: S and P in HBM, fp32 SIMT), 4 launches";
      } else if (q.kernel == SimtKernel::AttnFA1) {
        // one launch per K/V tile j; each block: its Q tile, K_j, V_j, O and m, l in and out
        for (std::int64_t j = 0; j < t; ++j) {
          const std::int64_t first = q.causal ? j : 0, blocks = (t - first) * h;
          const double in_o = j > 0 ? 1 : 0;
          const BlockWork w{step_fma + 4.0 * T * T + 3 * tile, static_cast<double>(T * T + T),
                            (3 * tile + (1 + in_o) * tile) * e + (2 + 2 * in_o) * T * 4};
          const double rows = static_cast<double>(blocks) * T;
          out.push_back(uniform("K/V tile " + std::to_string(j), blocks, w,
                                rows * d * e * (2 + in_o) + 2.0 * hd * tile * e + rows * 4 * (2 + 2 * in_o)));
        }
        *name = "attention forward version 2 (FA1 order: one launch per K/V tile, O/m/l round trips), " +
                std::to_string(out.size()) + " launches";
      } else {
        // one block per Q tile walking its visible K/V tiles, O and logsumexp written once
        Launch l{"FA2", {}, 4 * qkvo + 4 * hd * n};
        for (std::int64_t hh = 0; hh < h; ++hh)
          for (std::int64_t i = 0; i < t; ++i) {
            const double steps = static_cast<double>(q.causal ? std::min(t, i + 1) : t);
            const BlockWork step{step_fma + 4.0 * T * T + 2 * tile, static_cast<double>(T * T + T), 2 * tile * e};
            BlockWork w = step * steps;
            w += BlockWork{tile, 0, 2 * tile * e + 4.0 * T};
            l.blocks.push_back(w);
          }
        out.push_back(std::move(l));
        *name = "attention forward version 3 (FA2 order, fp32 SIMT), 1 launch";
      }
      break;
    }
    case SimtKernel::BwdTwoPass:
    case SimtKernel::BwdAtomic: {
      const std::int64_t t = cdiv(q.n, T), h = q.heads;
      const double d = static_cast<double>(q.d), n = static_cast<double>(q.n), hd = static_cast<double>(h);
      const double tile = static_cast<double>(T) * d, pair_fma = static_cast<double>(T) * T * d;
      const double arr = hd * n * d * e, stat = 4 * hd * n, acc = 4 * hd * n * d;
      const bool atomic = q.kernel == SimtKernel::BwdAtomic;
      *flops = 2.5 * 4.0 * n * n * d * hd * (q.causal ? 0.5 : 1.0);
      // D = rowsum(dO * O): one warp a row, 8 rows a block
      out.push_back(uniform("D = rowsum(dO O)", cdiv(h * q.n, 8), BlockWork{8 * d, 0, 16 * d * e + 32}, 2 * arr + stat));
      if (!atomic) {
        // dQ kernel: per visible K/V tile S, dP and dS K (3 products), exp of S - L
        Launch dq{"dQ", {}, 4 * arr + 2 * stat + arr};
        for (std::int64_t hh = 0; hh < h; ++hh)
          for (std::int64_t i = 0; i < t; ++i) {
            const double steps = static_cast<double>(q.causal ? std::min(t, i + 1) : t);
            BlockWork w = BlockWork{3 * pair_fma + 3.0 * T * T, static_cast<double>(T * T), 2 * tile * e} * steps;
            w += BlockWork{0, 0, 3 * tile * e + 2.0 * T * 4};
            dq.blocks.push_back(w);
          }
        out.push_back(std::move(dq));
      } else {
        out.push_back(Launch{"dQ accumulator zeroed", {}, acc});
      }
      // dK/dV kernel: per visible Q tile S, dV += P^T dO, dP, dK += dS^T Q (atomic: and dS K into dQ)
      Launch kv{atomic ? "dK/dV + atomic dQ" : "dK/dV", {}, 4 * arr + 2 * stat + 2 * arr + (atomic ? 2 * acc : 0)};
      for (std::int64_t hh = 0; hh < h; ++hh)
        for (std::int64_t j = 0; j < t; ++j) {
          const double steps = static_cast<double>(q.causal ? t - j : t);
          BlockWork w = BlockWork{(atomic ? 5 : 4) * pair_fma + 3.0 * T * T, static_cast<double>(T * T),
                                  2 * tile * e + 2.0 * T * 4 + (atomic ? tile * 4 : 0)} *
                        steps;
          w += BlockWork{0, 0, 4 * tile * e};
          kv.blocks.push_back(w);
        }
      out.push_back(std::move(kv));
      if (atomic) {
        const std::int64_t count = h * q.n * q.d, blocks = std::min<std::int64_t>(cdiv(count, 256), 65536);
        const double per = static_cast<double>(count) / static_cast<double>(blocks);
        out.push_back(uniform("dQ conversion", blocks, BlockWork{per, 0, per * (4 + e)}, acc + arr));
      }
      *name = atomic ? "attention backward version 2 (D, one dK/dV kernel with atomic fp32 dQ, conversion; fp32 SIMT), 4 launches"
                     : "attention backward version 1 (D, dQ kernel, dK/dV kernel; fp32 SIMT), 3 launches";
      break;
    }
  }
  return out;
}

}  // namespace

LaunchPrediction predict_time_simt(const SimtQuery& q, const isa::GpuPreset& gpu) {
  const bool attention = q.kernel == SimtKernel::AttnNaive || q.kernel == SimtKernel::AttnFA1 ||
                         q.kernel == SimtKernel::AttnFA2 || q.kernel == SimtKernel::BwdTwoPass ||
                         q.kernel == SimtKernel::BwdAtomic;
  if (attention ? (q.n < 1 || q.d < 1 || q.heads < 1)
                : (q.m < 1 || q.n < 1 || (q.kernel <= SimtKernel::MatmulOuter && q.k < 1)))
    throw std::invalid_argument("predict_time_simt: sizes must be >= 1");
  if (q.elem_bytes < 1) throw std::invalid_argument("predict_time_simt: element size must be >= 1");
  LaunchPrediction lp;
  std::string name;
  const std::vector<Launch> launches = simt_launches(q, &name, &lp.flops);
  lp.plan.name = name;
  lp.plan.version = q.kernel == SimtKernel::MatmulOuter || q.kernel == SimtKernel::SoftmaxOnline ||
                            q.kernel == SimtKernel::AttnFA1 || q.kernel == SimtKernel::BwdAtomic
                        ? 2
                    : q.kernel == SimtKernel::AttnFA2 ? 3
                                                      : 1;
  double once = 0;
  for (const Launch& l : launches) once += l.hbm_once;
  lp.hbm_bytes = q.hbm_bytes.value_or(once);
  const double scale = once > 0 ? lp.hbm_bytes / once : 0;
  const double clock_hz = gpu.simt_clock_ghz * 1e9;
  // time per bound: "vector", "special", "memory", "hbm"
  std::array<double, 4> by_bound{};
  std::array<double, 3> work{}, longest{};
  double cycles = 0, total_ms = 0;
  for (const Launch& l : launches) {
    const LaunchTime lt = lay_out(l, gpu);
    const double sm_ms = lt.sm_cycles / clock_hz * 1e3;
    const double hbm_ms = l.hbm_once * scale / gpu.hbm_bytes_per_s * 1e3;
    lp.sm_ms += sm_ms;
    lp.hbm_ms += hbm_ms;
    total_ms += std::max(sm_ms, hbm_ms);
    cycles += lt.sm_cycles;
    lp.blocks += static_cast<std::int64_t>(l.blocks.size());
    for (const BlockWork& w : l.blocks) {
      work[0] += w.vec;
      work[1] += w.exps;
      work[2] += w.bytes;
    }
    for (std::size_t k = 0; k < 3; ++k) longest[k] += lt.longest[k];
    if (hbm_ms >= sm_ms) {
      by_bound[3] += hbm_ms;
    } else {
      const std::size_t top = static_cast<std::size_t>(std::max_element(lt.longest.begin(), lt.longest.end()) - lt.longest.begin());
      by_bound[top] += sm_ms;
    }
  }
  lp.cycles = cycles;
  lp.extra_ms = static_cast<double>(launches.size()) * kSimtLaunchUs * 1e-3;
  lp.predicted_ms = total_ms + lp.extra_ms;
  const isa::Unit order[3] = {isa::Unit::Vector, isa::Unit::Special, isa::Unit::Memory};
  for (std::size_t k = 0; k < 3; ++k) {
    UnitUsage& u = lp.units[static_cast<std::size_t>(order[k])];
    u.work = work[k];
    u.busy_cycles = longest[k];
    u.busy_fraction = cycles > 0 ? longest[k] / cycles : 0;
  }
  static const char* names[4] = {"vector", "special", "memory", "hbm"};
  lp.bound = names[std::max_element(by_bound.begin(), by_bound.end()) - by_bound.begin()];
  lp.plan.blocks_per_sm = 0;
  return lp;
}

}  // namespace flashsim::sim

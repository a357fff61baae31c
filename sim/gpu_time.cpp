#include "sim/gpu_time.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "isa/assembler.h"
#include "sim/split_tail.h"

namespace flashsim::sim {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A trace being written: lines of text, the stream each line goes to.
class TraceText {
 public:
  void line(const std::string& s) { os_ << s << '\n'; }
  void stream(const std::string& name) {
    if (name != current_) line(".stream " + name);
    current_ = name;
  }
  std::string str() const { return os_.str(); }
  // `.units NAME`, then a `.unit` line for each unit whose figures differ from the named preset's
  // (`flashsim time --unit`), so that the trace carries the figures the prediction used
  void units(const isa::GpuPreset& gpu) {
    line(".units " + std::string(gpu.name));
    for (const auto& [unit, preset] : isa::units_changed_from_preset(gpu)) {
      const isa::UnitRate& r = gpu.units[static_cast<std::size_t>(unit)];
      std::ostringstream os;
      os.precision(10);
      os << ".unit " << isa::unit_name(unit) << " rate=" << r.rate << " latency=" << r.latency;
      line(os.str());
    }
  }

 private:
  std::ostringstream os_;
  std::string current_;
};
std::string R(int r) { return "R" + std::to_string(r); }

// ---- attention forward -----------------------------------------------------------------------

// One Q tile of a block: its index (rows t*br ..) and the K/V tiles it visits.
struct FwdTile {
  std::int64_t index;
  std::int64_t steps;
  bool causal_edge;  // its last K/V tiles straddle the diagonal: MASK on them
};

std::int64_t fwd_steps(const TimeQuery& q, const KernelPlan& p, std::int64_t i) {
  const std::int64_t tkv = ceil_div(q.n, p.bc);
  if (!q.causal) return tkv;
  return std::min(tkv, ceil_div(std::min(q.n, (i + 1) * p.br), p.bc));
}

std::string producer_name(const KernelPlan& p) { return p.warp_specialized ? "producer" : "consumer0"; }

// A tile the kernel's warps write into shared memory, `to` standing for the copy: for dS, the
// operand of dQ = dS K in the layout the tensor cores read. Shared memory takes 128 B a clock per
// SM (32 banks of 4 bytes, CUDA C++ Programming Guide) and the vector unit 128 lane-elements a
// clock, so the warps spend `elem_bytes` vector passes over the tile (a MOV each), with the vector
// unit's share beside products. The tile machine's values are unchanged.
void copy_to_shared(TraceText& tx, const std::string& from, const std::string& to, int elem_bytes) {
  for (int i = 0; i < elem_bytes; ++i) tx.line("MOV " + from + ", " + to);
}
// The same for a tile staged for a TMA store (O, dQ, dK, dV, C): the STORE reads the register.
void stage_in_shared(TraceText& tx, const std::string& reg, int elem_bytes) { copy_to_shared(tx, reg, reg, elem_bytes); }

// The forward block over its tiles: a producer stream (warp-specialized) or the consumer's own
// prefetch, K/V in a ring of `stages` buffers, each consumer on br / consumers rows.
std::string forward_trace(const TimeQuery& q, const KernelPlan& p, const isa::GpuPreset& gpu,
                          const std::vector<FwdTile>& tiles) {
  const int C = p.consumers, S = p.stages;
  const std::int64_t brc = p.br / C, d = q.d;
  std::int64_t max_steps = 1;
  for (const FwdTile& t : tiles) max_steps = std::max(max_steps, t.steps);
  const std::int64_t rows = static_cast<std::int64_t>(tiles.size()) * p.br;
  TraceText tx;
  tx.line("# attention forward block: " + p.name + ", d = " + std::to_string(d) + ", " +
          std::to_string(tiles.size()) + " tile(s)");
  tx.units(gpu);
  if (q.fp8) {  // e4m3 products at the FP8 rate; the other units as the preset has them
    std::ostringstream unit;
    unit.precision(10);
    unit << ".unit tensor rate=" << gpu.tensor_fp8_rate;
    tx.line(unit.str());
  }
  tx.line(".dtype f32");
  const std::string e = std::to_string(q.elem_bytes), out_e = q.fp8 ? "2" : e;  // FP8: O in bf16
  tx.line(".array Q[" + std::to_string(rows) + "][" + std::to_string(d) + "] tile[" + std::to_string(brc) + "][" + std::to_string(d) + "] elem " + e);
  tx.line(".array K[" + std::to_string(max_steps * p.bc) + "][" + std::to_string(d) + "] tile[" + std::to_string(p.bc) + "][" + std::to_string(d) + "] elem " + e);
  tx.line(".array V[" + std::to_string(max_steps * p.bc) + "][" + std::to_string(d) + "] tile[" + std::to_string(p.bc) + "][" + std::to_string(d) + "] elem " + e);
  tx.line(".array O[" + std::to_string(rows) + "][" + std::to_string(d) + "] tile[" + std::to_string(brc) + "][" + std::to_string(d) + "] elem " + out_e);
  tx.line(".array L[" + std::to_string(rows) + "] tile[" + std::to_string(brc) + "] elem 4");
  // sums_on_tensor: 8 columns of ones a key, read once into a register every consumer multiplies;
  // each consumer's sums in 8 equal columns (one register each), l = their row maximum at the end
  const std::string ones = R(2 * S + 10 * C);
  auto sums8 = [&](int c) { return R(2 * S + 10 * C + 1 + c); };
  if (p.sums_on_tensor) {
    tx.line(".array U[" + std::to_string(p.bc) + "][8] tile[" + std::to_string(p.bc) + "][8] elem " + e);
    tx.stream(producer_name(p));
    tx.line("LOAD U[0][0], " + ones);
  }
  const int kbase = 0, vbase = S;
  auto K = [&](std::int64_t g) { return R(kbase + static_cast<int>(g % S)); };
  auto V = [&](std::int64_t g) { return R(vbase + static_cast<int>(g % S)); };
  // Per consumer: Q, S, P0, P1, O, m0, m1, l, lt, alpha.
  auto reg = [&](int c, int k) { return R(2 * S + 10 * c + k); };
  enum { kQ, kS, kP0, kP1, kO, kM0, kM1, kL, kLt, kAlpha };
  auto P = [&](int c, std::int64_t j) { return reg(c, j % 2 ? kP1 : kP0); };
  auto M = [&](int c, std::int64_t j) { return reg(c, j % 2 ? kM1 : kM0); };
  const std::string producer = producer_name(p);
  auto consumer = [&](int c) { return "consumer" + std::to_string(c); };
  std::int64_t g0 = 0;          // global K/V step of the tile's first step
  std::vector<std::int64_t> turn_waits(C, 0);
  for (std::size_t ti = 0; ti < tiles.size(); ++ti) {
    const FwdTile& t = tiles[ti];
    const std::int64_t J = t.steps;
    auto load_one = [&](const char* a, std::int64_t j, const std::string& r) {
      tx.stream(producer);
      tx.line(std::string("LOAD ") + a + "[" + std::to_string(j) + "][0], " + r);
    };
    auto load_step = [&](std::int64_t j) {
      load_one("K", j, K(g0 + j));
      load_one("V", j, V(g0 + j));
    };
    for (int c = 0; c < C; ++c) {
      tx.stream(p.warp_specialized ? producer : consumer(c));
      tx.line("LOAD Q[" + std::to_string(static_cast<std::int64_t>(ti) * C + c) + "][0], " + reg(c, kQ));
    }
    // Loads run ahead of the products that read them by as many steps as the ring has free
    // buffers: stages - 1, one less when P V of the step before is still reading its buffer.
    const std::int64_t ahead = std::max(0, p.intra_overlap ? S - 2 : S - 1);
    std::int64_t loaded = 0;
    // O (+)= P_j V_j, and with sums_on_tensor l (+)= P_j times the ones
    auto pv = [&](int c, std::int64_t j) {
      const bool first = j == 0;
      tx.line(first ? "MAC_Z " + P(c, 0) + ", " + V(g0) + ", " + reg(c, kO)
                    : "MAC " + P(c, j) + ", " + V(g0 + j) + ", " + reg(c, kO) + ", " + reg(c, kO));
      if (p.sums_on_tensor)
        tx.line(first ? "MAC_Z " + P(c, 0) + ", " + ones + ", " + sums8(c)
                      : "MAC " + P(c, j) + ", " + ones + ", " + sums8(c) + ", " + sums8(c));
    };
    auto rescale_o = [&](int c) { tx.line("MUL " + reg(c, kO) + ", " + reg(c, kAlpha) + ", " + reg(c, kO)); };
    auto load_until = [&](std::int64_t j) {
      for (; loaded <= std::min(j, J - 1); ++loaded) load_step(loaded);
    };
    // Without a producer (v6 with warp specialization off) consumer 0 copies in its own stream, in
    // order with its products: K_{j+1} at the top of step j (its buffer's last reader, S_{j-1}, is
    // done) and V_{j+1} once every consumer has issued P_{j-1} V_{j-1}, the buffer's last reader, so
    // its stream waits there for those products: the handover a producer warp takes off it.
    const bool own_copies = !p.warp_specialized && p.intra_overlap;
    for (std::int64_t j = 0; j < J; ++j) {
      if (!own_copies) {
        load_until(j + ahead);
      } else {
        if (j == 0) load_step(0);
        if (j + 1 < J) load_one("K", j + 1, K(g0 + j + 1));
      }
      const bool mask = t.causal_edge && j >= J - ceil_div(p.br, p.bc) - 1;
      for (int c = 0; c < C; ++c) {
        tx.stream(consumer(c));
        const bool wait_turn = p.pingpong && !(c == 0 && turn_waits[0] == 0 && ti == 0 && j == 0);
        if (p.pingpong && wait_turn) {
          tx.line(".wait turn" + std::to_string(c));
          ++turn_waits[c];
        }
        if (p.pingpong && c == 0 && ti == 0 && j == 0) ++turn_waits[0];
        tx.line("MAC_Z " + reg(c, kQ) + ", " + K(g0 + j) + "^T, " + reg(c, kS));
        // the last tile's factor (none after the first tile: O is zero)
        if (p.rescale_under_s && j >= 2) rescale_o(c);
        if (p.intra_overlap && j >= 1) pv(c, j - 1);
        if (p.pingpong) tx.line(".arrive turn" + std::to_string((c + 1) % C));
        // as compiled, the consumer waits for P_{j-1} V_{j-1} before the softmax of S_j
        if (p.intra_overlap && !p.softmax_under_pv && j >= 1) tx.line(".wait_for " + reg(c, kO));
        if (mask) tx.line("MASK " + reg(c, kS) + ", " + reg(c, kS));
        if (j == 0) {
          tx.line("ROWMAX " + reg(c, kS) + ", " + M(c, 0));
          tx.line("EXPD " + reg(c, kS) + ", " + M(c, 0) + ", " + P(c, 0));
          if (!p.sums_on_tensor) tx.line("ROWSUM " + P(c, 0) + ", " + reg(c, kL));
          if (!p.intra_overlap) pv(c, 0);
          continue;
        }
        tx.line("ROWMAX " + reg(c, kS) + ", " + M(c, j));
        tx.line("MAX " + M(c, j - 1) + ", " + M(c, j) + ", " + M(c, j));
        tx.line("EXPD " + M(c, j - 1) + ", " + M(c, j) + ", " + reg(c, kAlpha));
        tx.line("EXPD " + reg(c, kS) + ", " + M(c, j) + ", " + P(c, j));
        if (!p.sums_on_tensor) {
          tx.line("ROWSUM " + P(c, j) + ", " + reg(c, kLt));
          tx.line("MUL " + reg(c, kL) + ", " + reg(c, kAlpha) + ", " + reg(c, kL));
          tx.line("ADD " + reg(c, kL) + ", " + reg(c, kLt) + ", " + reg(c, kL));
        } else {
          tx.line("MUL " + sums8(c) + ", " + reg(c, kAlpha) + ", " + sums8(c));  // O's 8 extra columns
        }
        if (!p.rescale_under_s) rescale_o(c);
        if (!p.intra_overlap) pv(c, j);
      }
      if (own_copies && j + 1 < J) load_one("V", j + 1, V(g0 + j + 1));
    }
    for (int c = 0; c < C; ++c) {
      tx.stream(consumer(c));
      if (p.rescale_under_s && J >= 2) rescale_o(c);
      if (p.intra_overlap) pv(c, J - 1);
      if (p.sums_on_tensor) tx.line("ROWMAX " + sums8(c) + ", " + reg(c, kL));
      tx.line("SDIV " + reg(c, kO) + ", " + reg(c, kL) + ", " + reg(c, kO));
      const std::string row = std::to_string(static_cast<std::int64_t>(ti) * C + c);
      stage_in_shared(tx, reg(c, kO), q.fp8 ? 2 : q.elem_bytes);  // the FP8 forward writes O in bf16
      tx.line("STORE " + reg(c, kO) + ", O[" + row + "][0]");
      tx.line("LOG " + reg(c, kL) + ", " + reg(c, kLt));
      tx.line("ADD " + M(c, J - 1) + ", " + reg(c, kLt) + ", " + reg(c, kLt));
      tx.line("STORE " + reg(c, kLt) + ", L[" + row + "]");
    }
    g0 += J;
  }
  return tx.str();
}

// ---- attention backward ----------------------------------------------------------------------

// One block: bc keys (consumers own bc / consumers each), looping over query tiles of br rows.
// Each step: S = Q K_c^T, P = exp(S - L), dV_c += P^T dO, dP = dO V_c^T, dS = P * (dP - D),
// dK_c += dS^T Q, and dQ += dS K. Version 5 adds each consumer's dQ part from its own warps;
// version 6 splits dQ's columns between the consumers, so both need both dS every step; version 7
// gives step t's whole dQ to consumer t % 2. The fp32 dQ reduction is a STORE into dQacc (the
// GPU's bulk reduce-add in L2): the trace times it, its values are not a sum.
std::string backward_trace(const TimeQuery& q, const KernelPlan& p, const isa::GpuPreset& gpu, std::int64_t first_step,
                           std::int64_t steps) {
  const int C = p.consumers;
  const std::int64_t kc = p.bc / C, d = q.d, br = p.br;
  const std::int64_t rows = (first_step + steps) * br;
  TraceText tx;
  tx.line("# attention backward block: " + p.name + ", d = " + std::to_string(d) + ", " + std::to_string(steps) +
          " query tile(s)");
  tx.units(gpu);
  const std::string e = std::to_string(q.elem_bytes);
  auto arr = [&](const std::string& name, std::int64_t r, std::int64_t tr, std::int64_t cols, std::int64_t tc,
                 const std::string& eb) {
    tx.line(".array " + name + "[" + std::to_string(r) + "][" + std::to_string(cols) + "] tile[" + std::to_string(tr) +
            "][" + std::to_string(tc) + "] elem " + eb);
  };
  arr("Q", rows, br, d, d, e);
  arr("dO", rows, br, d, d, e);
  tx.line(".array L[" + std::to_string(rows) + "] tile[" + std::to_string(br) + "] elem 4");
  tx.line(".array D[" + std::to_string(rows) + "] tile[" + std::to_string(br) + "] elem 4");
  arr("K", p.bc, kc, d, d, e);
  arr("V", p.bc, kc, d, d, e);
  arr("KH", p.bc, kc, d, d / 2, e);
  arr("dK", p.bc, kc, d, d, e);
  arr("dV", p.bc, kc, d, d, e);
  arr("dQacc", rows, br, d, p.version == 6 ? d / 2 : d, "4");
  // Shared: Q, dO, L, D per stage (2 stages); per consumer: K, V, KH0, KH1, S, P, dP, dS, dK, dV, dQ,
  // and dS's copy in shared memory (two buffers, as the kernels double-buffer it) that dQ = dS K reads.
  const int S = 2;
  auto shared = [&](int k, std::int64_t step) { return R(k * S + static_cast<int>(step % S)); };
  enum { kQ, kDO, kL, kD };
  auto reg = [&](int c, int k) { return R(4 * S + 13 * c + k); };
  enum { kK, kV, kKH0, kKH1, kSr, kPr, kDP, kDS, kDK, kDV, kDQ, kDSs0 };
  auto ds_smem = [&](int c, std::int64_t step) { return reg(c, kDSs0 + static_cast<int>(step % 2)); };
  const std::string producer = "producer";
  auto consumer = [&](int c) { return "consumer" + std::to_string(c); };
  tx.stream(producer);
  for (int c = 0; c < C; ++c) {
    tx.line("LOAD K[" + std::to_string(c) + "][0], " + reg(c, kK));
    tx.line("LOAD V[" + std::to_string(c) + "][0], " + reg(c, kV));
    if (p.version == 6) {
      tx.line("LOAD KH[" + std::to_string(c) + "][0], " + reg(c, kKH0));
      tx.line("LOAD KH[" + std::to_string(c) + "][1], " + reg(c, kKH1));
    }
  }
  for (std::int64_t t = 0; t < steps; ++t) {
    const std::int64_t row = first_step + t;
    tx.stream(producer);
    tx.line("LOAD Q[" + std::to_string(row) + "][0], " + shared(kQ, t));
    tx.line("LOAD dO[" + std::to_string(row) + "][0], " + shared(kDO, t));
    tx.line("LOAD L[" + std::to_string(row) + "], " + shared(kL, t));
    tx.line("LOAD D[" + std::to_string(row) + "], " + shared(kD, t));
    for (int c = 0; c < C; ++c) {
      tx.stream(consumer(c));
      const std::string acc = t == 0 ? "MAC_Z " : "MAC ";
      tx.line("MAC_Z " + shared(kQ, t) + ", " + reg(c, kK) + "^T, " + reg(c, kSr));
      if (q.causal && t == 0) tx.line("MASK " + reg(c, kSr) + ", " + reg(c, kSr));
      tx.line("EXPD " + reg(c, kSr) + ", " + shared(kL, t) + ", " + reg(c, kPr));
      tx.line("MAC_Z " + shared(kDO, t) + ", " + reg(c, kV) + "^T, " + reg(c, kDP));
      tx.line(acc + reg(c, kPr) + "^T, " + shared(kDO, t) + (t == 0 ? "" : ", " + reg(c, kDV)) + ", " + reg(c, kDV));
      tx.line("SUB " + reg(c, kDP) + ", " + shared(kD, t) + ", " + reg(c, kDS));
      tx.line("MUL " + reg(c, kPr) + ", " + reg(c, kDS) + ", " + reg(c, kDS));
      // the warps write dS to shared memory (stmatrix) before they issue dK's product, as the kernels do
      copy_to_shared(tx, reg(c, kDS), ds_smem(c, t), static_cast<int>(q.elem_bytes));
      tx.line(acc + reg(c, kDS) + "^T, " + shared(kQ, t) + (t == 0 ? "" : ", " + reg(c, kDK)) + ", " + reg(c, kDK));
      if (p.version == 5) {
        // the compute warps issue the fp32 atomic adds themselves: one vector instruction an element
        tx.line("MAC_Z " + ds_smem(c, t) + ", " + reg(c, kK) + ", " + reg(c, kDQ));
        tx.line("MOV " + reg(c, kDQ) + ", " + reg(c, kDQ));
        tx.line("STORE " + reg(c, kDQ) + ", dQacc[" + std::to_string(row) + "][0]");
      }
    }
    if (p.version == 6) {
      // Each consumer: its half of dQ's columns, over both consumers' dS.
      for (int c = 0; c < C; ++c) {
        tx.stream(consumer(c));
        const int half = c % 2 ? kKH1 : kKH0;
        for (int o = 0; o < C; ++o)
          tx.line((o == 0 ? "MAC_Z " + ds_smem(o, t) + ", " + reg(o, half) + ", " + reg(c, kDQ)
                          : "MAC " + ds_smem(o, t) + ", " + reg(o, half) + ", " + reg(c, kDQ) + ", " + reg(c, kDQ)));
        stage_in_shared(tx, reg(c, kDQ), 4);
        tx.line("STORE " + reg(c, kDQ) + ", dQacc[" + std::to_string(row) + "][" + std::to_string(c % 2) + "]");
      }
    } else if (p.version >= 7) {
      const int owner = static_cast<int>(t % C);
      tx.stream(consumer(owner));
      for (int o = 0; o < C; ++o)
        tx.line((o == 0 ? "MAC_Z " + ds_smem(o, t) + ", " + reg(o, kK) + ", " + reg(owner, kDQ)
                        : "MAC " + ds_smem(o, t) + ", " + reg(o, kK) + ", " + reg(owner, kDQ) + ", " + reg(owner, kDQ)));
      stage_in_shared(tx, reg(owner, kDQ), 4);
      tx.line("STORE " + reg(owner, kDQ) + ", dQacc[" + std::to_string(row) + "][0]");
    }
  }
  for (int c = 0; c < C; ++c) {
    tx.stream(consumer(c));
    stage_in_shared(tx, reg(c, kDK), static_cast<int>(q.elem_bytes));
    tx.line("STORE " + reg(c, kDK) + ", dK[" + std::to_string(c) + "][0]");
    stage_in_shared(tx, reg(c, kDV), static_cast<int>(q.elem_bytes));
    tx.line("STORE " + reg(c, kDV) + ", dV[" + std::to_string(c) + "][0]");
  }
  return tx.str();
}

// ---- matmul and softmax ----------------------------------------------------------------------

// Persistent warp-specialized matmul: per output tile, k / bk steps of A (bm x bk) and B (bk x bn)
// in a ring, two consumers on bm / 2 rows each, C stored at the end.
std::string matmul_trace(const TimeQuery& q, const KernelPlan& p, const isa::GpuPreset& gpu, std::int64_t tiles,
                         std::int64_t ksteps) {
  const int C = p.consumers, S = p.stages;
  const std::int64_t bmc = p.br / C, bk = 64;
  TraceText tx;
  tx.line("# matmul block: " + p.name + ", " + std::to_string(tiles) + " tile(s) of " + std::to_string(ksteps) + " k-steps");
  tx.units(gpu);
  const std::string e = std::to_string(q.elem_bytes);
  tx.line(".array A[" + std::to_string(tiles * p.br) + "][" + std::to_string(ksteps * bk) + "] tile[" + std::to_string(bmc) + "][" + std::to_string(bk) + "] elem " + e);
  tx.line(".array B[" + std::to_string(ksteps * bk) + "][" + std::to_string(p.bc) + "] tile[" + std::to_string(bk) + "][" + std::to_string(p.bc) + "] elem " + e);
  tx.line(".array C[" + std::to_string(tiles * p.br) + "][" + std::to_string(p.bc) + "] tile[" + std::to_string(bmc) + "][" + std::to_string(p.bc) + "] elem " + e);
  // Per stage: B, then A for each consumer; per consumer: the accumulator.
  auto breg = [&](std::int64_t g) { return R(static_cast<int>(g % S) * (C + 1)); };
  auto areg = [&](std::int64_t g, int c) { return R(static_cast<int>(g % S) * (C + 1) + 1 + c); };
  auto acc = [&](int c) { return R(S * (C + 1) + c); };
  std::int64_t g = 0;
  for (std::int64_t t = 0; t < tiles; ++t) {
    for (std::int64_t k = 0; k < ksteps; ++k, ++g) {
      tx.stream("producer");
      tx.line("LOAD B[" + std::to_string(k) + "][0], " + breg(g));
      for (int c = 0; c < C; ++c)
        tx.line("LOAD A[" + std::to_string(t * C + c) + "][" + std::to_string(k) + "], " + areg(g, c));
      for (int c = 0; c < C; ++c) {
        tx.stream("consumer" + std::to_string(c));
        tx.line(k == 0 ? "MAC_Z " + areg(g, c) + ", " + breg(g) + ", " + acc(c)
                       : "MAC " + areg(g, c) + ", " + breg(g) + ", " + acc(c) + ", " + acc(c));
      }
    }
    for (int c = 0; c < C; ++c) {
      tx.stream("consumer" + std::to_string(c));
      stage_in_shared(tx, acc(c), static_cast<int>(q.elem_bytes));
      tx.line("STORE " + acc(c) + ", C[" + std::to_string(t * C + c) + "][0]");
    }
  }
  return tx.str();
}

// Online softmax, one block on `rows` rows of `cols` fp32 columns: statistics pass, then
// normalize and write (the rows stay in registers when they fit, so X is read once).
std::string softmax_trace(const isa::GpuPreset& gpu, std::int64_t rows, std::int64_t cols) {
  TraceText tx;
  tx.line("# online softmax block: " + std::to_string(rows) + " row(s) of " + std::to_string(cols) + " columns");
  tx.units(gpu);
  tx.line(".array X[" + std::to_string(rows) + "][" + std::to_string(cols) + "] tile[1][" + std::to_string(cols) + "] elem 4");
  tx.line(".array Y[" + std::to_string(rows) + "][" + std::to_string(cols) + "] tile[1][" + std::to_string(cols) + "] elem 4");
  for (std::int64_t r = 0; r < rows; ++r) {
    const int b = static_cast<int>(r % 2) * 4;
    tx.line("LOAD X[" + std::to_string(r) + "][0], " + R(b));
    tx.line("ROWMAX " + R(b) + ", " + R(b + 1));
    tx.line("EXPD " + R(b) + ", " + R(b + 1) + ", " + R(b + 2));
    tx.line("ROWSUM " + R(b + 2) + ", " + R(b + 3));
    tx.line("SDIV " + R(b + 2) + ", " + R(b + 3) + ", " + R(b + 2));
    tx.line("STORE " + R(b + 2) + ", Y[" + std::to_string(r) + "][0]");
  }
  return tx.str();
}

// ---- launch ------------------------------------------------------------------------------------

TimingResult time_text(const std::string& text, int copies, double stagger = 0) {
  TimingOptions o;
  o.copies = copies;
  o.stagger = stagger;
  o.keep_steps = false;
  return time_program(isa::assemble(text, "<timed block>"), o);
}

// Blocks of known durations laid out over sms x per_sm slots in launch order (each starts when
// a slot frees): the longest slot's end.
double waves(const std::vector<double>& durations, std::int64_t slots) {
  std::priority_queue<double, std::vector<double>, std::greater<>> free;
  for (std::int64_t s = 0; s < slots; ++s) free.push(0);
  double end = 0;
  for (double d : durations) {
    double t = free.top();
    free.pop();
    free.push(t + d);
    end = std::max(end, t + d);
  }
  return end;
}

void validate_query(const TimeQuery& q) {
  if (q.op == TimedOp::AttnFwd || q.op == TimedOp::AttnBwd) {
    if (q.n < 1 || q.heads < 1) throw std::invalid_argument("attention needs --n >= 1 and --heads >= 1");
    if (q.d != 64 && q.d != 128) throw std::invalid_argument("the fast attention kernels take d = 64 or 128, not " + std::to_string(q.d));
  } else if (q.op == TimedOp::Matmul) {
    if (q.m < 1 || q.n < 1 || q.k < 1) throw std::invalid_argument("matmul needs --m, --n and --k >= 1");
  } else if (q.m < 1 || q.n < 1) {
    throw std::invalid_argument("softmax needs --rows and --cols >= 1");
  }
  if (q.elem_bytes != 1 && q.elem_bytes != 2 && q.elem_bytes != 4) throw std::invalid_argument("element size must be 1, 2 or 4 bytes");
  if (q.fp8 && (q.op != TimedOp::AttnFwd || q.elem_bytes != 1))
    throw std::invalid_argument("FP8 is the attention forward's only, with 1-byte Q, K and V");
}

}  // namespace

KernelPlan plan_for(const TimeQuery& q) {
  validate_query(q);
  KernelPlan p;
  switch (q.op) {
    case TimedOp::AttnFwd: {
      // The launcher's rule (kernels/launch_order.h attention_forward_fast_tiling).
      int v = q.version;
      const bool long_n = q.n >= (q.causal ? 4096 : 2048);
      if (v == 0) v = (q.d == 128 || long_n) ? 6 : 5;
      if (v != 5 && v != 6 && v != 2) throw std::invalid_argument("attention forward versions are 5 and 6 (2: the FA2 baseline)");
      if (q.shortest_first) throw std::invalid_argument("the shortest-first order is the causal backward's");
      p.version = v;
      if (v == 2) {
        p = KernelPlan{"FA2 order on one warpgroup, no overlap", 128, 128, 1, 2, false, false, false, false, false, 1, 2};
      } else if (v == 5) {
        // 64 x 128 tiles at d = 64; 64 x 64 at d = 128 (the d = 128 launcher before version 6)
        const int bc = q.d == 128 ? 64 : 128;
        p = KernelPlan{"version 5: one warpgroup per 64x" + std::to_string(bc) + " tile, 3 blocks per SM", 64, bc, 1, 2,
                       false, false, false, false, false, 3, 5};
      } else if (q.d == 128) {
        p = KernelPlan{"version 6: producer + 2 consumers, 128x128 tiles, persistent", 128, 128, 2, 2, true, true, false, true, q.causal, 1, 6};
      } else {
        p = KernelPlan{"version 6: producer + 3 consumers, 192x128 tiles, ping-pong, persistent", 192, 128, 3, q.causal ? 2 : 3,
                       true, true, true, true, q.causal, 1, 6};
      }
      if ((q.key_tile || q.consumers) && v != 6) throw std::invalid_argument("key tiles and consumers are version 6's variants");
      // the FP8 kernel (d = 128 only) takes 224 keys from n = 8192 (kernels/fp8_ref.h default_key_tile,
      // tested against this in test_kernels_cpu); FP8 at d = 64 is the lessons' what-if
      if (v == 6 && q.fp8 && q.d == 128 && !q.key_tile && q.n >= 8192) p.bc = 224;
      if (q.key_tile) {
        const int bc = *q.key_tile, step = q.fp8 ? 32 : 16;
        if (bc < step || bc > 256 || bc % step != 0)
          throw std::invalid_argument("a key tile is a multiple of " + std::to_string(step) + " from " + std::to_string(step) +
                                      " to 256, not " + std::to_string(bc));
        p.bc = bc;
      }
      if (q.consumers) {
        if (*q.consumers != 2 && *q.consumers != 3) throw std::invalid_argument("version 6 takes 2 or 3 consumer warpgroups");
        p.consumers = *q.consumers;
        p.br = 64 * p.consumers;
      }
      const bool ws_off = q.warp_specialized && !*q.warp_specialized;
      if (ws_off) {
        if (v != 6) throw std::invalid_argument("warp specialization on or off is version 6's ablation");
        p.warp_specialized = false;
        p.pingpong = false;
      }
      // before the name: the kernel line said ping-pong under --pingpong off (and not under on at d = 128)
      if (q.pingpong) p.pingpong = *q.pingpong && p.consumers > 1;
      if (ws_off)
        p.name = "version 6 without warp specialization: " + std::to_string(p.consumers) + " consumers, " +
                 std::to_string(p.br) + "x" + std::to_string(p.bc) + " tiles, consumer 0 issues the copies" +
                 (p.pingpong ? ", ping-pong" : "") + ", persistent";
      else if (v == 6 && (p.bc != 128 || q.consumers || q.pingpong))
        p.name = "version 6: producer + " + std::to_string(p.consumers) + " consumers, " + std::to_string(p.br) + "x" +
                 std::to_string(p.bc) + " tiles" + (p.pingpong ? ", ping-pong" : "") + ", persistent";
      if (q.sums_on_tensor) {
        if (v != 6) throw std::invalid_argument("the row sums on the tensor cores are version 6's variant");
        p.sums_on_tensor = true;
        p.name += ", row sums on the tensor cores";
      }
      if (q.intra_overlap) p.intra_overlap = *q.intra_overlap;
      // the launchers rescale O under S_{j+1} (kernels/attention_forward.cu WsTail); the FP8 forward not
      p.rescale_under_s = v == 6 && p.intra_overlap && q.rescale_under_s.value_or(!q.fp8);
      // the bf16/fp16 d = 128 launchers keep the softmax under P V with a fence; at d = 64 and in the
      // FP8 forward ptxas's wait for P V sits before it (TimeQuery::softmax_under_pv)
      p.softmax_under_pv = v == 6 && p.intra_overlap && q.softmax_under_pv.value_or(q.d == 128 && !q.fp8);
      if (q.softmax_under_pv.value_or(false) && !p.softmax_under_pv)
        throw std::invalid_argument("the softmax under P V is version 6's, with the intra-warpgroup overlap");
      // the launchers split the last round at d = 128 from N = 8192 up (sim::split_tail_by_default)
      p.split_tail = v == 6 && p.persistent && !q.causal && q.split_tail.value_or(split_tail_by_default(q.n, q.d));
      if (q.split_tail.value_or(false) && !p.split_tail)
        throw std::invalid_argument("the split tail is version 6's, under the full mask");
      if (q.rescale_under_s.value_or(false) && !p.rescale_under_s)
        throw std::invalid_argument("O's rescale under S is version 6's, with the intra-warpgroup overlap");
      break;
    }
    case TimedOp::AttnBwd: {
      // the forward's variants have no backward counterpart: say so rather than time without them
      const std::pair<bool, const char*> forward_only[] = {
          {q.pingpong.has_value(), "ping-pong"},
          {q.intra_overlap.has_value(), "the intra-warpgroup overlap"},
          {q.warp_specialized.has_value(), "warp specialization on or off"},
          {q.rescale_under_s.has_value(), "O's rescale under S"},
          {q.softmax_under_pv.has_value(), "the softmax under P V"},
          {q.split_tail.has_value(), "the split tail"},
          {q.key_tile.has_value(), "the key tile"},
          {q.consumers.has_value(), "the consumer count"},
          {q.sums_on_tensor, "the row sums on the tensor cores"}};
      for (const auto& [asked, what] : forward_only)
        if (asked) throw std::invalid_argument(std::string(what) + " is a forward variant: the backward has none");
      if (q.shortest_first && !q.causal) throw std::invalid_argument("the shortest-first order is the causal backward's");
      const int v = q.version ? q.version : 7;
      if (v < 5 || v > 7) throw std::invalid_argument("attention backward versions are 5, 6 and 7");
      p = KernelPlan{"backward version " + std::to_string(v) + ": producer + 2 consumers, 128 keys a block, " +
                         std::to_string(q.d == 128 ? 64 : 128) + " queries a step",
                     q.d == 128 ? 64 : 128, 128, 2, 2, true, false, v == 7, false, false, 1, v};
      break;
    }
    case TimedOp::Matmul:
      p = KernelPlan{"matmul version 3: producer + 2 consumers, persistent", 128, 256, 2, 4, true, false, false, true, false, 1, 3};
      break;
    case TimedOp::Softmax:
      p = KernelPlan{"softmax version 3: online, rows in registers", 1, static_cast<int>(std::min<std::int64_t>(q.n, 16384)), 1, 1,
                     false, false, false, false, false, 8, 3};
      break;
  }
  return p;
}

double compulsory_bytes(const TimeQuery& q) {
  const double e = q.elem_bytes, n = static_cast<double>(q.n), d = static_cast<double>(q.d), h = static_cast<double>(q.heads);
  switch (q.op) {
    case TimedOp::AttnFwd: return h * ((3 * e + (q.fp8 ? 2 : e)) * n * d + 4 * n);  // FP8: O in bf16
    case TimedOp::AttnBwd: return h * (6 * n * d * e + 8 * n + 4 * n * d);  // + the fp32 dQ accumulator once
    case TimedOp::Matmul: return e * (static_cast<double>(q.m) * q.k + static_cast<double>(q.k) * q.n + static_cast<double>(q.m) * q.n);
    case TimedOp::Softmax: return 3.0 * 4 * static_cast<double>(q.m) * n;  // version 3 reads X twice
  }
  return 0;
}

namespace {

struct BlockPlan {
  std::string trace;
  double cycles = 0;
  std::array<UnitUsage, isa::kUnitCount> units{};
  std::string bound;
};

// The model times one SM's trace, a few KB of memory a key-tile step: past this many steps on one
// SM (or this many blocks in a launch) it says so instead of taking gigabytes and minutes.
constexpr std::int64_t kMaxTracedSteps = std::int64_t{1} << 18;
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 24;
// The backward's statistics and fp32 dQ rows are padded to a multiple of this (kernels/
// attention_backward.cu kStatPad).
constexpr std::int64_t kBackwardStatPad = 128;
std::string whole(double x) {
  std::ostringstream os;
  os.precision(0);
  os << std::fixed << x;
  return os.str();
}
void check_traceable(double blocks, double steps_on_one_sm) {
  if (blocks > static_cast<double>(kMaxBlocks) || steps_on_one_sm > static_cast<double>(kMaxTracedSteps))
    throw std::invalid_argument("these sizes make " + whole(blocks) + " thread blocks and " + whole(steps_on_one_sm) +
                                " key-tile steps on the busiest SM; the time model traces at most " +
                                std::to_string(kMaxBlocks) + " blocks and " + std::to_string(kMaxTracedSteps) +
                                " steps on one SM (a few GB of memory): time fewer heads or a shorter n");
}

// The backward: a block of p.bc keys per head, each one trace of its n / p.br query steps.
void check_backward_traceable(const TimeQuery& q, const KernelPlan& p) {
  check_traceable(static_cast<double>(q.heads) * static_cast<double>(ceil_div(q.n, p.bc)),
                  static_cast<double>(ceil_div(q.n, p.br)));
}

// The forward's tiles in launch order, and the longest SM's share of them.
std::vector<std::vector<FwdTile>> forward_sm_work(const TimeQuery& q, const KernelPlan& p, int sms) {
  const std::int64_t tr = ceil_div(q.n, p.br);
  {
    // the busiest SM's steps, at most (persistent: its share of every tile's key tiles; else one tile)
    const double tiles = static_cast<double>(tr) * static_cast<double>(q.heads);
    const double share = p.persistent ? std::ceil(tiles / sms) : 1;
    check_traceable(tiles, share * static_cast<double>(ceil_div(q.n, p.bc)));
  }
  std::vector<FwdTile> order;
  for (std::int64_t h = 0; h < q.heads; ++h) {
    if (p.paired) {
      for (std::int64_t a = 0, b = tr - 1; a <= b; ++a, --b) {
        order.push_back({b, 0, false});
        if (a != b) order.push_back({a, 0, false});
      }
    } else {
      for (std::int64_t i = 0; i < tr; ++i) order.push_back({q.causal ? tr - 1 - i : i, 0, false});
    }
  }
  for (FwdTile& t : order) {
    t.steps = fwd_steps(q, p, t.index);
    t.causal_edge = q.causal;
  }
  std::vector<std::vector<FwdTile>> per_sm;
  const SplitTail split = split_tail_plan(static_cast<std::int64_t>(order.size()), ceil_div(q.n, p.bc), sms, p.split_tail);
  if (split.tail > 0) {
    // whole tiles b, b + sms, ..., then block b's parts of the tail's key tiles
    per_sm.resize(static_cast<std::size_t>(sms));
    for (int b = 0; b < sms; ++b) {
      for (int k = 0; k < split.whole; ++k) per_sm[b].push_back(order[static_cast<std::size_t>(b + k * sms)]);
      if (b >= split.tail_blocks) continue;
      for (int pos = split.start(b), end = split.start(b + 1); pos < end;) {
        const int u = pos / split.kv_tiles, stop = std::min(end, (u + 1) * split.kv_tiles);
        FwdTile part = order[static_cast<std::size_t>(split.whole * sms + u)];
        part.steps = stop - pos;
        per_sm[b].push_back(part);
        pos = stop;
      }
    }
  } else if (p.persistent) {
    // Static: block b takes tiles b, b + sms, ... (paired: pairs of tiles).
    const std::int64_t unit = p.paired ? 2 : 1;
    const std::int64_t units = ceil_div(static_cast<std::int64_t>(order.size()), unit);
    per_sm.resize(static_cast<std::size_t>(std::min<std::int64_t>(sms, units)));
    for (std::int64_t u = 0; u < units; ++u)
      for (std::int64_t k = 0; k < unit && u * unit + k < static_cast<std::int64_t>(order.size()); ++k)
        per_sm[static_cast<std::size_t>(u % sms)].push_back(order[static_cast<std::size_t>(u * unit + k)]);
  } else {
    for (const FwdTile& t : order) per_sm.push_back({t});
  }
  return per_sm;
}

void take_usage(LaunchPrediction& lp, const TimingResult& r) {
  lp.cycles = r.cycles;
  lp.units = r.units;
  lp.bound = r.bound;
}

// Row chunks of up to 16384 columns spread over the SMs, up to blocks_per_sm at a time; one
// block's rows are timed (at most 8, the rest scaled) with its neighbours sharing the SM.
struct SoftmaxChoice {
  std::int64_t cols = 0, rows = 0, per_copy = 0, timed = 0;
  int copies = 1;
};

SoftmaxChoice choose_softmax(const TimeQuery& q, const KernelPlan& p, const isa::GpuPreset& gpu) {
  SoftmaxChoice c;
  c.cols = std::min<std::int64_t>(q.n, 16384);
  c.rows = q.m * ceil_div(q.n, c.cols);
  const std::int64_t per_sm = ceil_div(c.rows, gpu.sms);
  c.copies = static_cast<int>(std::min<std::int64_t>(p.blocks_per_sm, per_sm));
  c.per_copy = ceil_div(per_sm, c.copies);
  c.timed = std::min<std::int64_t>(c.per_copy, 8);
  return c;
}

// The matmul launch's tile width and k split, and one SM's tiles as timed; predict_time and
// block_trace share it, so the written trace is the one the prediction timed.
struct MatmulChoice {
  KernelPlan plan;
  std::int64_t work_units = 0, per_sm = 0, ksteps = 0;
  TimingResult timed;
};

MatmulChoice choose_matmul(const TimeQuery& q, const KernelPlan& p, const isa::GpuPreset& gpu) {
  // 128x256 tiles, or 128x128 when those fill the last wave better (the kernel's own estimate
  // decides on the GPU); k split in two when the tiles fill at most half the SMs.
  MatmulChoice best;
  for (int bn : {256, 128}) {
    KernelPlan c = p;
    c.bc = bn;
    const std::int64_t tiles = ceil_div(q.m, c.br) * ceil_div(q.n, bn);
    std::int64_t ksteps = ceil_div(q.k, 64), split = 1;
    if (tiles * 2 <= gpu.sms && ksteps >= 2) split = std::min<std::int64_t>(gpu.sms / tiles, ksteps);
    const std::int64_t work_units = tiles * split;
    const std::int64_t per_sm = ceil_div(work_units, gpu.sms);
    // 65536^3 took seconds to fail inside the trace's assembler (its A or C past 2^31 elements),
    // 262144^3 minutes and gigabytes; refused when the wider tiles are past reach too (they come first)
    const double steps = static_cast<double>(per_sm) * static_cast<double>(ceil_div(ksteps, split));
    if (steps > static_cast<double>(kMaxTracedSteps) || per_sm > kMaxTracedSteps / 4) {
      if (best.work_units == 0)
        throw std::invalid_argument("these sizes make " + std::to_string(per_sm) + " output tiles and " + whole(steps) +
                                    " k steps on the busiest SM; the time model traces at most " +
                                    std::to_string(kMaxTracedSteps / 4) + " tiles and " + std::to_string(kMaxTracedSteps) +
                                    " steps on one SM (a few GB of memory): time a smaller m, n or k");
      continue;
    }
    TimingResult r = time_text(matmul_trace(q, c, gpu, per_sm, ceil_div(ksteps, split)), 1);
    if (best.work_units == 0 || r.cycles < best.timed.cycles) {
      c.name = "matmul version 3: producer + 2 consumers, 128x" + std::to_string(bn) + " tiles" +
               (split > 1 ? ", k split " + std::to_string(split) + " ways" : "") + ", persistent";
      best = {c, work_units, per_sm, ceil_div(ksteps, split), std::move(r)};
    }
  }
  return best;
}

}  // namespace

std::string block_trace(const TimeQuery& q, const isa::GpuPreset& gpu) {
  const KernelPlan p = plan_for(q);
  switch (q.op) {
    case TimedOp::AttnFwd: {
      auto work = forward_sm_work(q, p, gpu.sms);
      std::size_t longest = 0;
      std::int64_t most = -1;
      for (std::size_t s = 0; s < work.size(); ++s) {
        std::int64_t steps = 0;
        for (const FwdTile& t : work[s]) steps += t.steps;
        if (steps > most) most = steps, longest = s;
      }
      return forward_trace(q, p, gpu, work[longest]);
    }
    case TimedOp::AttnBwd:
      check_backward_traceable(q, p);
      return backward_trace(q, p, gpu, 0, ceil_div(q.n, p.br));
    case TimedOp::Matmul: {
      const MatmulChoice c = choose_matmul(q, p, gpu);
      return matmul_trace(q, c.plan, gpu, c.per_sm, c.ksteps);
    }
    case TimedOp::Softmax: {
      // A trace has no co-resident copies: say how the prediction uses this block.
      const SoftmaxChoice c = choose_softmax(q, p, gpu);
      std::string note;
      if (c.copies > 1) note = "# the prediction times " + std::to_string(c.copies) + " copies of this block at once on one SM";
      if (c.per_copy > c.timed)
        note += (note.empty() ? "# the prediction scales this block's time" : ", each copy's time scaled") + std::string(" by ") +
                std::to_string(c.per_copy) + " / " + std::to_string(c.timed) + " rows";
      return (note.empty() ? note : note + "\n") + softmax_trace(gpu, c.timed, c.cols);
    }
  }
  return {};
}

LaunchPrediction predict_time(const TimeQuery& q, const isa::GpuPreset& gpu) {
  LaunchPrediction lp;
  lp.plan = plan_for(q);
  const KernelPlan& p = lp.plan;
  const double clock_hz = gpu.clock_ghz * 1e9;
  double sm_cycles = 0;
  const double n = static_cast<double>(q.n), d = static_cast<double>(q.d), h = static_cast<double>(q.heads);
  switch (q.op) {
    case TimedOp::AttnFwd: {
      lp.flops = 4 * n * n * d * h * (q.causal ? 0.5 : 1);
      auto work = forward_sm_work(q, p, gpu.sms);
      lp.blocks = static_cast<std::int64_t>(ceil_div(q.n, p.br) * q.heads);
      if (p.persistent) {
        std::size_t longest = 0;
        std::int64_t most = -1;
        for (std::size_t s = 0; s < work.size(); ++s) {
          std::int64_t steps = 0;
          for (const FwdTile& t : work[s]) steps += t.steps;
          if (steps > most) most = steps, longest = s;
        }
        TimingResult r = time_text(forward_trace(q, p, gpu, work[longest]), 1);
        take_usage(lp, r);
        sm_cycles = r.cycles;
        // a split tail's merge: every part's fp32 O and logsumexp read once, at HBM's rate
        const SplitTail split = split_tail_plan(static_cast<std::int64_t>(lp.blocks), ceil_div(q.n, p.bc), gpu.sms, p.split_tail);
        lp.extra_ms = static_cast<double>(split.slots()) * p.br * (q.d + 1) * 4 / gpu.hbm_bytes_per_s * 1e3;
      } else {
        // Blocks of each length, timed with `blocks_per_sm` of them sharing the SM.
        std::map<std::int64_t, TimingResult> by_steps;
        std::vector<double> durations;
        for (const auto& blk : work) {
          auto it = by_steps.find(blk[0].steps);
          if (it == by_steps.end()) {
            // The co-resident blocks a step's time apart: the time of one alone over its steps,
            // spread over the blocks.
            const std::string trace = forward_trace(q, p, gpu, blk);
            const double step = time_text(trace, 1).cycles / static_cast<double>(blk[0].steps);
            it = by_steps.emplace(blk[0].steps, time_text(trace, p.blocks_per_sm, step / p.blocks_per_sm)).first;
          }
          durations.push_back(it->second.cycles);
        }
        sm_cycles = waves(durations, static_cast<std::int64_t>(gpu.sms) * p.blocks_per_sm);
        take_usage(lp, by_steps.rbegin()->second);
      }
      break;
    }
    case TimedOp::AttnBwd: {
      lp.flops = 2.5 * 4 * n * n * d * h * (q.causal ? 0.5 : 1);
      const std::int64_t tc = ceil_div(q.n, p.bc), tr = ceil_div(q.n, p.br);
      check_backward_traceable(q, p);
      lp.blocks = tc * q.heads;
      std::map<std::int64_t, TimingResult> by_steps;
      std::vector<double> durations;
      for (std::int64_t hh = 0; hh < q.heads; ++hh)
        for (std::int64_t j = 0; j < tc; ++j) {
          // causal: the key block j sees query tiles from its diagonal on; the launcher runs them in
          // order, the longest (j = 0) first (kernels/attention_backward.cu kv_block)
          const std::int64_t jj = q.shortest_first ? tc - 1 - j : j;
          const std::int64_t first = q.causal ? (jj * p.bc) / p.br : 0;
          const std::int64_t steps = tr - first;
          auto it = by_steps.find(steps);
          if (it == by_steps.end()) it = by_steps.emplace(steps, time_text(backward_trace(q, p, gpu, first, steps), 1)).first;
          durations.push_back(it->second.cycles);
        }
      sm_cycles = waves(durations, gpu.sms);
      take_usage(lp, by_steps.rbegin()->second);
      // Two HBM-bound launches. Before: O and dO and lse read, D and lse in log2 units written, and
      // the fp32 dQ accumulator zeroed, all of its rows padded to 128 (kernels/attention_backward.cu
      // bwd_fast_prep_kernel; ncu measured the zeroing's half of its bytes, 2026-11-25). After: the
      // fp32 dQ to bf16.
      const double padded = static_cast<double>(ceil_div(q.n, kBackwardStatPad) * kBackwardStatPad);
      const double prep_bytes = h * (n * (2 * d * q.elem_bytes + 4) + padded * (4 * d + 8));
      const double small_bytes = prep_bytes + h * (4 * n * d + n * d * q.elem_bytes);
      lp.extra_ms = small_bytes / gpu.hbm_bytes_per_s * 1e3;
      break;
    }
    case TimedOp::Matmul: {
      lp.flops = 2.0 * static_cast<double>(q.m) * q.n * q.k;
      const MatmulChoice c = choose_matmul(q, p, gpu);
      lp.blocks = c.work_units;
      take_usage(lp, c.timed);
      lp.plan = c.plan;
      sm_cycles = c.timed.cycles;
      break;
    }
    case TimedOp::Softmax: {
      const SoftmaxChoice c = choose_softmax(q, p, gpu);
      lp.blocks = c.rows;
      TimingResult r = time_text(softmax_trace(gpu, c.timed, c.cols), c.copies);
      take_usage(lp, r);
      sm_cycles = r.cycles * static_cast<double>(c.per_copy) / static_cast<double>(c.timed);
      break;
    }
  }
  lp.cycles = sm_cycles;
  lp.sm_ms = sm_cycles / clock_hz * 1e3;
  lp.hbm_bytes = q.hbm_bytes.value_or(compulsory_bytes(q));
  lp.hbm_ms = lp.hbm_bytes / gpu.hbm_bytes_per_s * 1e3;
  lp.predicted_ms = std::max(lp.sm_ms, lp.hbm_ms) + lp.extra_ms;
  if (lp.hbm_ms > lp.sm_ms) lp.bound = "hbm";
  return lp;
}

}  // namespace flashsim::sim

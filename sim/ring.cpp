#include "sim/ring.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace flashsim::sim::ring {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

void validate(const RingConfig& c) {
  if (c.p < 1) throw RingError("ring: P must be at least 1 (got " + std::to_string(c.p) + ")");
  if (c.n < c.p)
    throw RingError("ring: n = " + std::to_string(c.n) + " is smaller than P = " + std::to_string(c.p) +
                    "; every device needs at least one row");
  if (c.d < 1) throw RingError("ring: d must be at least 1");
  if (c.elem_bytes < 1 || c.acc_bytes < 1) throw RingError("ring: element sizes must be positive");
  if (c.tile < 1) throw RingError("ring: the tile must be at least 1");
  if (c.split == Split::Zigzag && c.n < 2 * static_cast<std::int64_t>(c.p))
    throw RingError("ring: the zig-zag split cuts n = " + std::to_string(c.n) + " into 2P = " +
                    std::to_string(2 * c.p) + " chunks; every chunk needs at least one row");
}

// What a device keeps at home: Q, the O state and O_b (three blocks), the lse state and lse_b, and
// dO in the backward.
std::int64_t home_bytes(const RingConfig& c, std::int64_t rows, bool backward) {
  return 3 * rows * c.d * c.elem_bytes + 2 * 4 * rows + (backward ? rows * c.d * c.elem_bytes : 0);
}

int next(int p, int n) { return (p + 1) % n; }
int prev(int p, int n) { return (p + n - 1) % n; }
// The block device p holds at step s: its own at step 0, then one device further back each step.
int block_at(int p, int s, int n) { return ((p - s) % n + n) % n; }
// The rows device p owns under cfg's split (all its segments).
std::int64_t rows_of(const RingConfig& cfg, int p) {
  const auto segs = device_segments(cfg);  // named: a temporary's element would dangle in the loop
  std::int64_t rows = 0;
  for (const auto& g : segs[static_cast<std::size_t>(p)]) rows += g.rows;
  return rows;
}

RingSchedule skeleton(const RingConfig& cfg, bool backward) {
  validate(cfg);
  RingSchedule s;
  s.cfg = cfg;
  s.backward = backward;
  s.steps = cfg.p;
  s.segments = device_segments(cfg);
  for (const auto& segs : s.segments) {
    std::int64_t rows = 0;
    for (const auto& g : segs) rows += g.rows;
    s.block_rows.push_back(rows);
  }
  return s;
}

void add_computes(RingSchedule& s, int step) {
  const int P = s.cfg.p;
  for (int dev = 0; dev < P; ++dev) {
    const int b = block_at(dev, step, P);
    bool any = false, masked = false;
    for (const auto& q : s.segments[dev])
      for (const auto& k : s.segments[b]) {
        const PairKind kind = pair_kind(q, k, s.cfg.causal);
        any = any || kind != PairKind::Skip;
        masked = masked || kind == PairKind::Masked;
      }
    if (!any) continue;  // every key of block b comes after every query of dev
    RingOp op;
    op.step = step;
    op.kind = OpKind::Compute;
    op.device = dev;
    op.block = b;
    op.masked = masked;
    s.ops.push_back(op);
  }
}

void add_exchange(RingSchedule& s, int step, Payload what, int bytes_per_elem) {
  const int P = s.cfg.p;
  for (int dev = 0; dev < P; ++dev) {  // each device posts its send, then its receive (ncclGroup)
    const int b = block_at(dev, step, P);
    const std::int64_t bytes = 2 * s.block_rows[b] * s.cfg.d * bytes_per_elem;
    s.ops.push_back({step, OpKind::Send, dev, next(dev, P), b, what, false, bytes});
  }
  for (int dev = 0; dev < P; ++dev) {
    const int b = block_at(prev(dev, P), step, P);
    const std::int64_t bytes = 2 * s.block_rows[b] * s.cfg.d * bytes_per_elem;
    s.ops.push_back({step, OpKind::Recv, dev, prev(dev, P), b, what, false, bytes});
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

PairKind pair_kind(const Segment& q, const Segment& k, bool causal) {
  if (!causal || k.start + k.rows - 1 <= q.start) return PairKind::Full;
  if (k.start > q.start + q.rows - 1) return PairKind::Skip;
  return PairKind::Masked;
}

std::int64_t pair_scores(const Segment& q, const Segment& k, bool causal) {
  if (!causal) return q.rows * k.rows;
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < q.rows; ++i)  // keys k.start .. min(row, last key)
    n += std::clamp<std::int64_t>(q.start + i - k.start + 1, 0, k.rows);
  return n;
}

std::vector<std::vector<Segment>> device_segments(const RingConfig& cfg) {
  validate(cfg);
  const int P = cfg.p;
  std::vector<std::vector<Segment>> segs(static_cast<std::size_t>(P));
  std::vector<std::int64_t> start, rows;
  if (cfg.split == Split::Contiguous) {
    split_rows(cfg.n, P, start, rows);
    for (int p = 0; p < P; ++p) segs[p] = {{start[p], rows[p]}};
  } else {
    split_rows(cfg.n, 2 * P, start, rows);
    for (int p = 0; p < P; ++p) segs[p] = {{start[p], rows[p]}, {start[2 * P - 1 - p], rows[2 * P - 1 - p]}};
  }
  return segs;
}

double score_imbalance(const std::vector<DeviceCounters>& devices) {
  std::int64_t most = 0, all = 0;
  for (const auto& d : devices) most = std::max(most, d.score_elems), all += d.score_elems;
  return all == 0 ? 1.0 : static_cast<double>(most) * static_cast<double>(devices.size()) / static_cast<double>(all);
}

void split_rows(std::int64_t n, int p, std::vector<std::int64_t>& start, std::vector<std::int64_t>& rows) {
  start.assign(static_cast<std::size_t>(p), 0);
  rows.assign(static_cast<std::size_t>(p), 0);
  std::int64_t at = 0;
  for (int i = 0; i < p; ++i) {
    rows[i] = n / p + (i < n % p ? 1 : 0);
    start[i] = at;
    at += rows[i];
  }
}

RingSchedule forward_schedule(const RingConfig& cfg) {
  RingSchedule s = skeleton(cfg, false);
  for (int step = 0; step < cfg.p; ++step) {
    add_computes(s, step);
    // The exchange is issued in the same step as the compute: on the GPU it runs on the
    // communication stream while the compute stream works on the block already held.
    if (step + 1 < cfg.p) add_exchange(s, step, Payload::KV, cfg.elem_bytes);
  }
  return s;
}

RingSchedule backward_schedule(const RingConfig& cfg) {
  RingSchedule s = skeleton(cfg, true);
  for (int step = 0; step < cfg.p; ++step) {
    add_computes(s, step);
    if (step + 1 < cfg.p) add_exchange(s, step, Payload::KV, cfg.elem_bytes);
    // dK/dV follow their K/V; after the last step one more hop brings each one to its owner. That
    // hop carries finished sums, rounded to the element type as the one-GPU backward's outputs
    // are: the same values at elem_bytes, not acc_bytes.
    if (cfg.p > 1) add_exchange(s, step, Payload::dKV, step + 1 < cfg.p ? cfg.acc_bytes : cfg.elem_bytes);
  }
  return s;
}

std::int64_t forward_link_bytes(const RingConfig& cfg, int link) {
  validate(cfg);
  if (cfg.p == 1) return 0;
  return 2 * cfg.d * cfg.elem_bytes * (cfg.n - rows_of(cfg, next(link, cfg.p)));
}

std::int64_t forward_total_link_bytes(const RingConfig& cfg) {
  validate(cfg);
  return 2 * cfg.d * cfg.elem_bytes * (cfg.p - 1) * cfg.n;
}

std::int64_t backward_link_bytes(const RingConfig& cfg, int link) {
  if (cfg.p == 1) return forward_link_bytes(cfg, link);
  // every dK/dV block crosses the link, block p+1 on its last hop (home), in the element type
  const std::int64_t home_rows = rows_of(cfg, next(link, cfg.p));
  return forward_link_bytes(cfg, link) + 2 * cfg.d * (cfg.acc_bytes * (cfg.n - home_rows) + cfg.elem_bytes * home_rows);
}

std::int64_t backward_total_link_bytes(const RingConfig& cfg) {
  validate(cfg);
  if (cfg.p == 1) return 0;
  return forward_total_link_bytes(cfg) + 2 * cfg.d * cfg.n * (cfg.acc_bytes * (cfg.p - 1) + cfg.elem_bytes);
}

std::int64_t allgather_link_bytes(const RingConfig& cfg, int link, bool backward) {
  validate(cfg);
  if (link < 0 || link >= cfg.p) throw RingError("ring: no link " + std::to_string(link));
  if (cfg.p == 1) return 0;
  const std::int64_t gather = 2 * cfg.d * cfg.elem_bytes * (cfg.n - rows_of(cfg, next(link, cfg.p)));
  return gather + (backward ? 2 * cfg.d * cfg.acc_bytes * (cfg.n - rows_of(cfg, link)) : 0);
}

std::int64_t allgather_total_link_bytes(const RingConfig& cfg, bool backward) {
  validate(cfg);
  return 2 * cfg.d * (cfg.p - 1) * cfg.n * (cfg.elem_bytes + (backward ? cfg.acc_bytes : 0));
}

MethodTimes predict_methods(const RingConfig& cfg, bool backward, double full_pair_ms, double masked_pair_ms,
                            double link_bytes_per_ms) {
  validate(cfg);
  if (!(link_bytes_per_ms > 0) || full_pair_ms < 0 || masked_pair_ms < 0)
    throw RingError("ring: the prediction needs a link rate > 0 and pair times >= 0");
  const int P = cfg.p;
  const auto segs = device_segments(cfg);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(P), 0);
  for (int p = 0; p < P; ++p)
    for (const auto& g : segs[p]) rows[p] += g.rows;
  // device p's compute with the block of device b
  auto compute = [&](int p, int b) {
    double ms = 0;
    for (const auto& q : segs[p])
      for (const auto& k : segs[b]) {
        const PairKind kind = pair_kind(q, k, cfg.causal);
        ms += kind == PairKind::Full ? full_pair_ms : kind == PairKind::Masked ? masked_pair_ms : 0.0;
      }
    return ms;
  };
  auto hop_ms = [&](int b, int bytes_per_elem) { return 2.0 * rows[b] * cfg.d * bytes_per_elem / link_bytes_per_ms; };
  MethodTimes t;
  for (int p = 0; p < P; ++p) {
    double ring = 0, gather = 0, scatter = 0, rest = 0;
    for (int s = 0; s < P; ++s) {
      const int b = block_at(p, s, P);
      double comm = 0;
      if (s + 1 < P) comm += hop_ms(b, cfg.elem_bytes);                     // K/V of block b on to p + 1
      if (backward && s > 0) comm += hop_ms(block_at(p, s - 1, P), cfg.acc_bytes);  // dK/dV of step s - 1
      ring += std::max(compute(p, b), P > 1 ? comm : 0.0);
      if (s > 0) rest += compute(p, b);
      if (b != p) gather += hop_ms(b, cfg.elem_bytes);
      if (backward && b != p) scatter += hop_ms(b, cfg.acc_bytes);
    }
    if (backward && P > 1) ring += hop_ms(block_at(p, P - 1, P), cfg.elem_bytes);  // the last hop home
    const double ag = std::max(gather, compute(p, p)) + rest + scatter;
    t.ring_ms = std::max(t.ring_ms, ring);
    t.allgather_ms = std::max(t.allgather_ms, ag);
  }
  return t;
}

std::int64_t allgather_resident_peak(const RingConfig& cfg, int device, bool backward) {
  validate(cfg);
  if (device < 0 || device >= cfg.p) throw RingError("ring: no device " + std::to_string(device));
  const std::int64_t rows = rows_of(cfg, device);
  const std::int64_t kv = 2 * cfg.n * cfg.d * cfg.elem_bytes;
  const std::int64_t dkv = backward ? 2 * cfg.n * cfg.d * cfg.acc_bytes + 2 * rows * cfg.d * cfg.acc_bytes : 0;
  return home_bytes(cfg, rows, backward) + kv + dkv;
}

RingMachine::RingMachine(const RingConfig& cfg, std::vector<double> q, std::vector<double> k, std::vector<double> v)
    : cfg_(cfg), q_(std::move(q)), k_(std::move(k)), v_(std::move(v)) {
  validate(cfg_);
  seg_ = device_segments(cfg_);
  rows_.assign(static_cast<std::size_t>(cfg_.p), 0);
  for (int p = 0; p < cfg_.p; ++p)
    for (const auto& g : seg_[p]) rows_[p] += g.rows;
  const auto nd = static_cast<std::size_t>(cfg_.n * cfg_.d);
  values_ = !q_.empty();
  if (values_ && (q_.size() != nd || k_.size() != nd || v_.size() != nd))
    throw RingError("ring: Q, K and V must each hold n x d = " + std::to_string(nd) + " values");
  dev_.assign(static_cast<std::size_t>(cfg_.p), {});
  link_.assign(static_cast<std::size_t>(cfg_.p), 0);
}

void RingMachine::count_pairs(const RingOp& op) {
  DeviceCounters& c = dev_[op.device];
  ++c.computes;
  for (const auto& q : seg_[op.device])
    for (const auto& k : seg_[op.block]) {
      const PairKind kind = pair_kind(q, k, cfg_.causal);
      if (kind == PairKind::Skip) continue;
      ++c.pairs;
      c.masked_pairs += kind == PairKind::Masked;
      c.score_elems += pair_scores(q, k, cfg_.causal);
    }
}

void RingMachine::compute(const RingOp& op) {
  const int dev = op.device, b = op.block;
  const std::int64_t d = cfg_.d, e = cfg_.elem_bytes, T = cfg_.tile;
  DeviceCounters& c = dev_[dev];
  // HBM, one FA2 call per (query chunk, key chunk) pair the mask keeps: Q once, K/V once per
  // query tile (only the key tiles at or before the tile's last query when masked), O_b and
  // lse_b written once. Every call but a query chunk's first merges O_b into that chunk's state:
  // read both (O, lse), write one.
  for (std::size_t qi = 0; qi < seg_[dev].size(); ++qi) {
    const Segment& q = seg_[dev][qi];
    const std::int64_t np = q.rows;
    for (const auto& k : seg_[b]) {
      const PairKind kind = pair_kind(q, k, cfg_.causal);
      if (kind == PairKind::Skip) continue;
      const std::int64_t nb = k.rows;
      std::int64_t kv_rows = 0;
      for (std::int64_t i = 0; i < ceil_div(np, T); ++i) {
        const std::int64_t last_row = q.start + std::min(np, (i + 1) * T) - 1;  // global row
        const std::int64_t need = kind == PairKind::Masked ? ceil_div(last_row - k.start + 1, T) * T : nb;
        kv_rows += std::clamp<std::int64_t>(need, 0, nb);
      }
      c.hbm_read += np * d * e + 2 * kv_rows * d * e;
      c.hbm_written += np * d * e + 4 * np;
      const auto key = std::make_pair(dev, static_cast<int>(qi));
      if (started_.count(key)) {
        c.hbm_read += 2 * (np * d * e + 4 * np);
        c.hbm_written += np * d * e + 4 * np;
      }
      started_.insert(key);
    }
  }
  count_pairs(op);
  if (!values_) return;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> s, ob(static_cast<std::size_t>(d));
  for (const auto& q : seg_[dev])
    for (const auto& k : seg_[b]) {
      if (pair_kind(q, k, cfg_.causal) == PairKind::Skip) continue;
      const std::int64_t nb = k.rows, k0 = k.start;
      s.resize(static_cast<std::size_t>(nb));
      for (std::int64_t i = 0; i < q.rows; ++i) {
        const std::int64_t row = q.start + i;
        // The pair's partial state (m_b, l_b, O_b) ...
        double mb = kNegInf;
        for (std::int64_t j = 0; j < nb; ++j) {
          const std::int64_t col = k0 + j;
          double dot = 0;
          for (std::int64_t t = 0; t < d; ++t) dot += q_[row * d + t] * k_[col * d + t];
          s[j] = (cfg_.causal && col > row) ? kNegInf : dot * scale;
          mb = std::max(mb, s[j]);
        }
        if (mb == kNegInf) continue;  // every key of this chunk is masked for this row
        double lb = 0;
        std::fill(ob.begin(), ob.end(), 0.0);
        for (std::int64_t j = 0; j < nb; ++j) {
          const double pj = std::exp(s[j] - mb);
          lb += pj;
          for (std::int64_t t = 0; t < d; ++t) ob[t] += pj * v_[(k0 + j) * d + t];
        }
        // ... merged into the running state exactly as two tiles merge on one device.
        double& m = m_[row];
        double& l = l_[row];
        const double mn = std::max(m, mb);
        const double a = m == kNegInf ? 0.0 : std::exp(m - mn), bb = std::exp(mb - mn);
        l = l * a + lb * bb;
        for (std::int64_t t = 0; t < d; ++t) o_[row * d + t] = o_[row * d + t] * a + ob[t] * bb;
        m = mn;
      }
    }
}

void RingMachine::execute(const RingSchedule& sch) {
  const RingConfig& c = sch.cfg;
  if (c.n != cfg_.n || c.d != cfg_.d || c.p != cfg_.p || c.causal != cfg_.causal || c.split != cfg_.split)
    throw RingError("ring: the schedule was made for another n, d, P, mask or split than this machine");
  const int P = cfg_.p;
  const auto n = static_cast<std::size_t>(cfg_.n), nd = static_cast<std::size_t>(cfg_.n * cfg_.d);
  o_.assign(nd, 0.0);
  m_.assign(n, kNegInf);
  l_.assign(n, 0.0);
  lse_.assign(n, kNegInf);
  for (auto& d : dev_) d = {};
  started_.clear();
  std::fill(link_.begin(), link_.end(), 0);
  kv_held_.resize(static_cast<std::size_t>(P));
  dkv_held_.resize(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p) kv_held_[p] = dkv_held_[p] = p;

  // In flight per (link, payload): the block sent and its bytes. Arrivals land in a second
  // buffer and replace the held block when the step ends (double buffering).
  struct Msg { int block; std::int64_t bytes; };
  std::map<std::pair<int, Payload>, std::vector<Msg>> flight;
  std::vector<int> kv_in(static_cast<std::size_t>(P), -1), dkv_in(static_cast<std::size_t>(P), -1);
  const std::int64_t e = cfg_.elem_bytes, d = cfg_.d;
  auto kv_bytes = [&](int b) { return b < 0 ? 0 : 2 * rows_[b] * d * e; };
  // dK/dV held and arriving, bytes: the accumulators, or the element type after the last hop
  std::vector<std::int64_t> dkv_held_bytes(static_cast<std::size_t>(P), 0), dkv_in_bytes(static_cast<std::size_t>(P), 0);
  if (sch.backward)
    for (int p = 0; p < P; ++p) dkv_held_bytes[p] = 2 * rows_[p] * d * cfg_.acc_bytes;
  auto note_resident = [&](int p) {
    // Home blocks (Q, O state, lse state, O_b, lse_b) + held and arriving K/V (and dK/dV).
    const std::int64_t home = home_bytes(cfg_, rows_[p], sch.backward);
    const std::int64_t r = home + kv_bytes(kv_held_[p]) + kv_bytes(kv_in[p]) + dkv_held_bytes[p] + dkv_in_bytes[p];
    dev_[p].resident_peak = std::max(dev_[p].resident_peak, r);
  };
  auto end_step = [&](int step) {
    for (const auto& [key, msgs] : flight)
      if (!msgs.empty())
        throw RingError("ring: step " + std::to_string(step) + ": device " + std::to_string(key.first) +
                        " sent block " + std::to_string(msgs.front().block) + " that device " +
                        std::to_string(next(key.first, P)) + " never receives");
    for (int p = 0; p < P; ++p) {
      if (kv_in[p] >= 0) kv_held_[p] = kv_in[p];
      if (dkv_in[p] >= 0) dkv_held_[p] = dkv_in[p], dkv_held_bytes[p] = dkv_in_bytes[p];
      kv_in[p] = dkv_in[p] = -1;
      dkv_in_bytes[p] = 0;
    }
  };
  for (int p = 0; p < P; ++p) note_resident(p);

  int step = sch.ops.empty() ? 0 : sch.ops.front().step;
  for (std::size_t i = 0; i < sch.ops.size(); ++i) {
    const RingOp& op = sch.ops[i];
    const std::string where = "ring: op " + std::to_string(i) + " (step " + std::to_string(op.step) + ", device " +
                              std::to_string(op.device) + "): ";
    if (op.device < 0 || op.device >= P) throw RingError(where + "no such device");
    if (op.step < step) throw RingError(where + "steps must not go back");
    while (step < op.step) end_step(step++);
    if (op.block < 0 || op.block >= P) throw RingError(where + "no such block " + std::to_string(op.block));
    std::vector<int>& held = op.payload == Payload::KV ? kv_held_ : dkv_held_;
    switch (op.kind) {
      case OpKind::Compute:
        if (kv_held_[op.device] != op.block)
          throw RingError(where + "computes with K/V block " + std::to_string(op.block) + " but holds block " +
                          std::to_string(kv_held_[op.device]));
        if (sch.backward && dkv_held_[op.device] != op.block)
          throw RingError(where + "accumulates dK/dV of block " + std::to_string(op.block) + " but holds block " +
                          std::to_string(dkv_held_[op.device]));
        if (sch.backward) {  // placement and counts only
          count_pairs(op);
        } else {
          compute(op);
        }
        break;
      case OpKind::Send:
        if (op.peer != next(op.device, P))
          throw RingError(where + "sends to device " + std::to_string(op.peer) + ", which is not the next on the ring");
        if (held[op.device] != op.block)
          throw RingError(where + "sends block " + std::to_string(op.block) + " but holds block " +
                          std::to_string(held[op.device]));
        if (P == 1) throw RingError(where + "a ring of one device has no link");
        flight[{op.device, op.payload}].push_back({op.block, op.bytes});
        link_[op.device] += op.bytes;
        dev_[op.device].link_sent += op.bytes;
        break;
      case OpKind::Recv: {
        if (op.peer != prev(op.device, P))
          throw RingError(where + "receives from device " + std::to_string(op.peer) +
                          ", which is not the previous on the ring");
        auto& q = flight[{op.peer, op.payload}];
        if (q.empty()) throw RingError(where + "receives block " + std::to_string(op.block) + " that nobody sent");
        const Msg msg = q.front();
        if (msg.block != op.block || msg.bytes != op.bytes)
          throw RingError(where + "expects block " + std::to_string(op.block) + " (" + std::to_string(op.bytes) +
                          " B) but block " + std::to_string(msg.block) + " (" + std::to_string(msg.bytes) +
                          " B) arrives");
        q.erase(q.begin());
        (op.payload == Payload::KV ? kv_in : dkv_in)[op.device] = op.block;
        if (op.payload == Payload::dKV) dkv_in_bytes[op.device] = op.bytes;
        dev_[op.device].link_received += op.bytes;
        note_resident(op.device);
        break;
      }
    }
  }
  end_step(step);
  if (!values_ || sch.backward) return;
  for (std::size_t r = 0; r < n; ++r) {
    if (l_[r] == 0) continue;
    for (std::size_t t = 0; t < static_cast<std::size_t>(d); ++t) o_[r * d + t] /= l_[r];
    lse_[r] = m_[r] + std::log(l_[r]);
  }
}

std::vector<double> attention_reference(const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, std::int64_t n, std::int64_t d, bool causal,
                                        std::vector<double>* lse) {
  std::vector<double> o(static_cast<std::size_t>(n * d), 0.0), s(static_cast<std::size_t>(n));
  if (lse) lse->assign(static_cast<std::size_t>(n), kNegInf);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t cols = causal ? i + 1 : n;
    double m = kNegInf;
    for (std::int64_t j = 0; j < cols; ++j) {
      double dot = 0;
      for (std::int64_t t = 0; t < d; ++t) dot += q[i * d + t] * k[j * d + t];
      s[j] = dot * scale;
      m = std::max(m, s[j]);
    }
    double l = 0;
    for (std::int64_t j = 0; j < cols; ++j) l += std::exp(s[j] - m);
    for (std::int64_t j = 0; j < cols; ++j) {
      const double pj = std::exp(s[j] - m) / l;
      for (std::int64_t t = 0; t < d; ++t) o[i * d + t] += pj * v[j * d + t];
    }
    if (lse) (*lse)[i] = m + std::log(l);
  }
  return o;
}

std::string traffic_table(const RingSchedule& sch, const RingMachine& ran) {
  const RingConfig& c = sch.cfg;
  std::ostringstream out;
  out << "| link | counted bytes | closed form | \n|---|---:|---:|\n";
  for (int p = 0; p < c.p; ++p) {
    if (c.p == 1) break;
    const std::int64_t closed = sch.backward ? backward_link_bytes(c, p) : forward_link_bytes(c, p);
    out << "| " << p << " -> " << next(p, c.p) << " | " << ran.link_bytes()[p] << " | " << closed << " |\n";
  }
  std::int64_t total = 0;
  for (auto b : ran.link_bytes()) total += b;
  out << "| all links | " << total << " | "
      << (sch.backward ? backward_total_link_bytes(c) : forward_total_link_bytes(c)) << " |\n\n";
  out << "| device | rows | computes | FA2 calls (masked) | scores | link sent | link received | HBM read | HBM written | HBM peak |\n"
         "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (int p = 0; p < c.p; ++p) {
    const auto& dv = ran.devices()[p];
    std::string rows;
    for (const auto& g : sch.segments[p])
      rows += (rows.empty() ? "" : " + ") + std::to_string(g.start) + ".." + std::to_string(g.start + g.rows - 1);
    out << "| " << p << " | " << rows << " | " << dv.computes << " | " << dv.pairs << " (" << dv.masked_pairs << ") | "
        << dv.score_elems << " | " << dv.link_sent << " | " << dv.link_received << " | " << dv.hbm_read << " | "
        << dv.hbm_written << " | " << dv.resident_peak << " |\n";
  }
  out << "\nload balance: the busiest device evaluates " << score_imbalance(ran.devices())
      << "x the mean device's scores\n";
  return out.str();
}

}  // namespace flashsim::sim::ring

#include "sim/timing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "sim/machine.h"

namespace flashsim::sim {

namespace {

using isa::Opcode;
using isa::Unit;
constexpr double kNever = std::numeric_limits<double>::infinity();
// A stream issues at most one asynchronous instruction a cycle.
constexpr double kIssueCycles = 1;

enum class DepKind : std::uint8_t { Raw, War, Waw };
struct Dep {
  std::uint32_t on;  // instruction index within the copy
  DepKind kind;
};

// Work and unit of every instruction, from a values-off run of the machine (tile shapes).
struct Costs {
  std::vector<double> work;
  std::vector<Unit> unit;
};

Costs measure_costs(const isa::Program& p) {
  MachineOptions mo;
  mo.compute_values = false;
  mo.history = false;
  Machine m(p, mo);
  Costs c;
  const std::size_t n = p.code.size();
  c.work.resize(n);
  c.unit.resize(n);
  auto rows = [&](int r, bool t) { return t ? m.reg(r).cols : m.reg(r).rows; };
  auto cols = [&](int r, bool t) { return t ? m.reg(r).rows : m.reg(r).cols; };
  for (std::size_t i = 0; i < n; ++i) {
    const isa::Instruction& in = p.code[i];
    const Unit u = isa::unit_of(in.op);
    c.unit[i] = u;
    double work = 0;
    const std::uint64_t read0 = m.counters().bytes_read, written0 = m.counters().bytes_written;
    if (u == Unit::Tensor && m.reg_written(in.reg(0)) && m.reg_written(in.reg(1)))
      work = 2.0 * rows(in.reg(0), in.transposed(0)) * cols(in.reg(0), in.transposed(0)) * cols(in.reg(1), in.transposed(1));
    else if ((in.op == Opcode::ROWMAX || in.op == Opcode::ROWSUM) && m.reg_written(in.reg(0)))
      work = static_cast<double>(m.reg(in.reg(0)).rows) * m.reg(in.reg(0)).cols;
    m.step();
    if (u == Unit::Memory) {
      work = static_cast<double>(m.counters().bytes_read - read0 + m.counters().bytes_written - written0);
    } else if (u != Unit::Tensor && work == 0) {
      const int d = in.reg(isa::info(in.op).operand_count - 1);
      work = static_cast<double>(m.reg(d).rows) * m.reg(d).cols;
    }
    c.work[i] = work;
  }
  return c;
}

// Register (and DRAM tile) dependencies in trace order: the order the values follow. wait_for:
// per sync point, the instruction a `.wait_for R` waits for (R's last writer before it), or -1.
void find_dependencies(const isa::Program& p, std::vector<std::uint32_t>& begin, std::vector<Dep>& deps,
                       std::vector<std::int64_t>& wait_for) {
  const std::size_t n = p.code.size();
  const int regs = std::max(p.register_count(), p.highest_reg + 1);
  std::vector<std::int64_t> writer(static_cast<std::size_t>(regs), -1);
  std::vector<std::vector<std::uint32_t>> readers(static_cast<std::size_t>(regs));
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> stored;  // DRAM tile -> last STORE
  begin.assign(n + 1, 0);
  const auto& syncs = p.timing.syncs;
  wait_for.assign(syncs.size(), -1);
  std::size_t next_sync = 0;
  auto waits_before = [&](std::size_t pc) {
    for (; next_sync < syncs.size() && syncs[next_sync].pc == pc; ++next_sync)
      if (syncs[next_sync].reg >= 0 && syncs[next_sync].reg < regs) wait_for[next_sync] = writer[syncs[next_sync].reg];
  };
  for (std::size_t i = 0; i < n; ++i) {
    waits_before(i);
    begin[i] = static_cast<std::uint32_t>(deps.size());
    const isa::Instruction& in = p.code[i];
    const isa::OpInfo& info = isa::info(in.op);
    int dst = -1;
    for (int k = 0; k < info.operand_count; ++k) {
      if (info.operands[k] == isa::OperandKind::SrcReg) {
        const int r = in.reg(k);
        if (writer[r] >= 0) deps.push_back({static_cast<std::uint32_t>(writer[r]), DepKind::Raw});
      } else if (info.operands[k] == isa::OperandKind::DstReg) {
        dst = in.reg(k);
      }
    }
    if (in.op == Opcode::LOAD) {
      auto it = stored.find({in.array(), in.row(), in.col()});
      if (it != stored.end()) deps.push_back({it->second, DepKind::Raw});
    }
    if (in.op == Opcode::STORE) stored[{in.array(), in.row(), in.col()}] = static_cast<std::uint32_t>(i);
    if (dst >= 0) {
      if (writer[dst] >= 0) deps.push_back({static_cast<std::uint32_t>(writer[dst]), DepKind::Waw});
      for (std::uint32_t r : readers[dst])
        if (r != i) deps.push_back({r, DepKind::War});
    }
    for (int k = 0; k < info.operand_count; ++k)
      if (info.operands[k] == isa::OperandKind::SrcReg) readers[in.reg(k)].push_back(static_cast<std::uint32_t>(i));
    if (dst >= 0) {
      writer[dst] = static_cast<std::int64_t>(i);
      readers[dst].clear();
    }
  }
  waits_before(n);
  begin[n] = static_cast<std::uint32_t>(deps.size());
}

// What a stream does next: an instruction, or an arrive/wait on a barrier.
struct Item {
  enum class Kind : std::uint8_t { Instr, Arrive, Wait, WaitFor } kind;
  std::uint32_t index;  // instruction index, or index into TimingSpec::syncs
};

struct Op {
  double remaining = 0;
  double issue = kNever, end = kNever, ready = kNever;
  std::int64_t pred = -1;  // the op whose time set this one's issue (the critical chain)
};

struct Arrival {
  double time;
  std::int64_t after;  // the arriving stream's last op before the arrive, or -1
};

class Simulator {
 public:
  Simulator(const isa::Program& p, const isa::UnitsConfig& units, int copies, double stagger)
      : p_(p), units_(units), copies_(copies), n_(p.code.size()) {
    costs_ = measure_costs(p);
    find_dependencies(p, dep_begin_, deps_, wait_for_writer_);
    const std::size_t nstreams = std::max<std::size_t>(1, p.timing.streams.size());
    items_.assign(nstreams, {});
    std::size_t next_sync = 0;
    const auto& syncs = p.timing.syncs;
    for (std::size_t i = 0; i <= n_; ++i) {
      for (; next_sync < syncs.size() && syncs[next_sync].pc == i; ++next_sync) {
        const isa::SyncPoint& sp = syncs[next_sync];
        const Item::Kind kind = sp.reg >= 0 ? Item::Kind::WaitFor : sp.wait ? Item::Kind::Wait : Item::Kind::Arrive;
        items_[sp.stream].push_back({kind, static_cast<std::uint32_t>(next_sync)});
      }
      if (i < n_) items_[p.timing.stream(i)].push_back({Item::Kind::Instr, static_cast<std::uint32_t>(i)});
    }
    ops_.assign(n_ * static_cast<std::size_t>(copies), Op{});
    for (int c = 0; c < copies; ++c)
      for (std::size_t i = 0; i < n_; ++i) ops_[c * n_ + i].remaining = costs_.work[i];
    for (int c = 0; c < copies; ++c)
      for (std::size_t s = 0; s < nstreams; ++s) {
        StreamState st;
        st.copy = c;
        st.free_at = c * stagger;
        st.stream = static_cast<std::uint16_t>(s);
        st.waits.assign(p.timing.barriers.size(), 0);
        streams_.push_back(std::move(st));
      }
    arrivals_.assign(static_cast<std::size_t>(copies) * p.timing.barriers.size(), {});
  }

  TimingResult run(bool keep_steps);

 private:
  struct StreamState {
    int copy = 0;
    std::uint16_t stream = 0;
    std::size_t pos = 0;
    double free_at = 0;        // when it can issue again (kNever while its warps run an op)
    std::int64_t last_op = -1; // the last op it issued
    std::vector<std::uint32_t> waits;  // phases of each barrier it has waited for
  };

  double rate(Unit u) const { return units_.units[static_cast<std::size_t>(u)].rate; }
  double latency(Unit u) const { return units_.units[static_cast<std::size_t>(u)].latency; }
  std::vector<Arrival>& arrivals(int copy, std::uint16_t barrier) {
    return arrivals_[static_cast<std::size_t>(copy) * p_.timing.barriers.size() + barrier];
  }
  // Advances stream s as far as it can at time t_; returns the time it may move again
  // (kNever: only a completion can unblock it).
  double advance(StreamState& s);
  void issue(StreamState& s, std::uint32_t i, std::int64_t pred);
  [[noreturn]] void deadlock();
  // The ops unit u works on now. The tensor unit takes products one at a time in the order they
  // were issued, whichever stream issued them; the other units share their rate among everything
  // in flight.
  std::vector<std::size_t> running(std::size_t u) const;
  // Unit u's rate now: the special and vector units lose part of theirs while products run (their
  // warps share a sub-partition's register file and issue slots with the tensor cores' traffic).
  double rate_now(std::size_t u) const;
  std::string stream_label(const StreamState& s) const;

  const isa::Program& p_;
  const isa::UnitsConfig& units_;
  int copies_;
  std::size_t n_;
  Costs costs_;
  std::vector<std::uint32_t> dep_begin_;
  std::vector<Dep> deps_;
  std::vector<std::vector<Item>> items_;
  std::vector<Op> ops_;
  std::vector<StreamState> streams_;
  std::vector<std::vector<Arrival>> arrivals_;
  std::vector<std::int64_t> wait_for_writer_;  // per sync point: the instruction a .wait_for waits for, or -1
  std::array<std::vector<std::size_t>, isa::kUnitCount> active_;  // ops in flight per unit
  std::vector<int> owner_;  // per op: index into streams_ (for vector/special completion)
  double t_ = 0;
};

std::string Simulator::stream_label(const StreamState& s) const {
  std::string name = p_.timing.streams.empty() ? "main" : p_.timing.streams[s.stream];
  return "stream '" + name + "'" + (copies_ > 1 ? " (block " + std::to_string(s.copy) + ")" : "");
}

void Simulator::issue(StreamState& s, std::uint32_t i, std::int64_t pred) {
  const std::size_t id = static_cast<std::size_t>(s.copy) * n_ + i;
  Op& op = ops_[id];
  op.issue = t_;
  op.pred = pred;
  const Unit u = costs_.unit[i];
  s.last_op = static_cast<std::int64_t>(id);
  owner_[id] = static_cast<int>(&s - streams_.data());
  if (op.remaining <= 0) {
    op.end = t_;
    op.ready = t_ + latency(u);
    s.free_at = t_;
    return;
  }
  active_[static_cast<std::size_t>(u)].push_back(id);
  s.free_at = isa::unit_is_async(u) ? t_ + kIssueCycles : kNever;
}

std::vector<std::size_t> Simulator::running(std::size_t u) const {
  const auto& act = active_[u];
  if (static_cast<Unit>(u) != Unit::Tensor || act.size() <= 1) return act;
  return {act.front()};  // act is in issue order
}

double Simulator::rate_now(std::size_t u) const {
  const bool beside = static_cast<Unit>(u) == Unit::Special || static_cast<Unit>(u) == Unit::Vector;
  const bool products = !active_[static_cast<std::size_t>(Unit::Tensor)].empty();
  return units_.units[u].rate * (beside && products ? units_.beside_tensor : 1.0);
}

double Simulator::advance(StreamState& s) {
  const auto& its = items_[s.stream];
  while (s.pos < its.size()) {
    if (s.free_at > t_) return s.free_at;
    const Item& it = its[s.pos];
    if (it.kind == Item::Kind::Arrive) {
      arrivals(s.copy, p_.timing.syncs[it.index].barrier).push_back({t_, s.last_op});
      ++s.pos;
      continue;
    }
    if (it.kind == Item::Kind::WaitFor) {
      // until the register's writer has its result (no writer before the wait: nothing pending)
      const std::int64_t w = wait_for_writer_[it.index];
      if (w >= 0) {
        const std::size_t id = static_cast<std::size_t>(s.copy) * n_ + static_cast<std::size_t>(w);
        const double ready = ops_[id].ready;
        if (ready == kNever) return kNever;  // not issued or not done: its completion wakes us
        if (ready > t_) return ready;
        s.last_op = std::max(s.last_op, static_cast<std::int64_t>(id));  // the chain continues through it
      }
      ++s.pos;
      continue;
    }
    if (it.kind == Item::Kind::Wait) {
      const std::uint16_t b = p_.timing.syncs[it.index].barrier;
      const std::uint32_t count = p_.timing.barriers[b].count;
      const auto& arr = arrivals(s.copy, b);
      const std::size_t need = static_cast<std::size_t>(s.waits[b] + 1) * count;
      if (arr.size() < need) return kNever;
      double phase = 0;
      std::int64_t by = -1;
      for (std::size_t k = need - count; k < need; ++k)
        if (arr[k].time >= phase) phase = arr[k].time, by = arr[k].after;
      if (phase > t_) return phase;
      ++s.waits[b];
      ++s.pos;
      if (by >= 0) s.last_op = std::max(s.last_op, by);  // the chain continues through the barrier
      continue;
    }
    const std::uint32_t i = it.index;
    // The stream's own previous op binds unless a dependency comes later.
    double earliest = s.free_at;
    std::int64_t pred = s.last_op;
    for (std::uint32_t k = dep_begin_[i]; k < dep_begin_[i + 1]; ++k) {
      const Op& d = ops_[static_cast<std::size_t>(s.copy) * n_ + deps_[k].on];
      const double at = deps_[k].kind == DepKind::War ? d.end : d.ready;
      if (at == kNever) return kNever;  // not done yet: its completion wakes us
      if (at > earliest) earliest = at, pred = static_cast<std::int64_t>(static_cast<std::size_t>(s.copy) * n_ + deps_[k].on);
    }
    if (earliest > t_) return earliest;
    issue(s, i, pred);
    ++s.pos;
  }
  return kNever;
}

void Simulator::deadlock() {
  std::string msg = "deadlock: no stream can go on";
  // The error points at a barrier's .wait when a stream is stuck at one (the cause), else at a
  // .wait_for, else at an instruction: stream order alone could name a producer's LOAD that only
  // waits for a buffer the stuck consumers never free.
  isa::SourceLoc where{};
  int rank = 3;
  auto locate = [&](const isa::SourceLoc& loc, int r) {
    if (r < rank) where = loc, rank = r;
  };
  for (const StreamState& s : streams_) {
    const auto& its = items_[s.stream];
    if (s.pos >= its.size()) continue;
    const Item& it = its[s.pos];
    msg += "; " + stream_label(s);
    if (it.kind == Item::Kind::WaitFor) {
      const isa::SyncPoint& sp = p_.timing.syncs[it.index];
      msg += " waits at line " + std::to_string(sp.loc.line) + " (.wait_for R" + std::to_string(sp.reg) +
             ") for a result that another stream's wait keeps from being computed";
      locate(sp.loc, 1);
    } else if (it.kind == Item::Kind::Wait) {
      const isa::SyncPoint& sp = p_.timing.syncs[it.index];
      const isa::BarrierDecl& b = p_.timing.barriers[sp.barrier];
      const auto have = arrivals(s.copy, sp.barrier).size();
      msg += " waits at line " + std::to_string(sp.loc.line) + " for phase " + std::to_string(s.waits[sp.barrier] + 1) +
             " of barrier '" + b.name + "' (" + std::to_string((s.waits[sp.barrier] + 1) * b.count) +
             " arrivals needed, " + std::to_string(have) + " made)";
      locate(sp.loc, 0);
    } else {
      const isa::SourceLoc loc = p_.loc(it.index);
      msg += " waits at line " + std::to_string(loc.line) + " for an instruction of another stream that cannot run";
      locate(loc, 2);
    }
  }
  throw TimingError(where, msg);
}

TimingResult Simulator::run(bool keep_steps) {
  owner_.assign(ops_.size(), -1);
  std::size_t done_streams = 0;
  for (;;) {
    // Until nothing moves: an arrive late in the list can release a wait early in it.
    double next = kNever;
    for (bool moved = true; moved;) {
      moved = false;
      next = kNever;
      done_streams = 0;
      for (StreamState& s : streams_) {
        const std::size_t before = s.pos;
        next = std::min(next, advance(s));
        moved |= s.pos != before;
        done_streams += s.pos >= items_[s.stream].size();
      }
    }
    // The next completion, with each unit's rate shared by the ops it runs now (the rates hold
    // until then: a product that ends at `next` ends the slowdown only after it).
    std::array<double, isa::kUnitCount> rates{};
    for (std::size_t u = 0; u < isa::kUnitCount; ++u) rates[u] = rate_now(u);
    for (std::size_t u = 0; u < isa::kUnitCount; ++u) {
      const auto run = running(u);
      if (run.empty()) continue;
      const double share = rates[u] / static_cast<double>(run.size());
      double least = kNever;
      for (std::size_t id : run) least = std::min(least, ops_[id].remaining);
      next = std::min(next, t_ + least / share);
    }
    if (next == kNever) {
      if (done_streams == streams_.size()) break;
      deadlock();
    }
    const double dt = next - t_;
    t_ = next;
    for (std::size_t u = 0; u < isa::kUnitCount; ++u) {
      auto& act = active_[u];
      if (act.empty()) continue;
      const auto run = running(u);
      const double share = rates[u] / static_cast<double>(run.size());
      for (std::size_t id : run) ops_[id].remaining -= share * dt;
      std::size_t keep = 0;
      // Done: its work is (to rounding) finished, or what is left would end within rounding of t_.
      // Without the second test a long trace stalls: at t_ ~ 2e7 cycles a remainder that needs less
      // than t_'s last bit moves the clock by nothing, for ever (found at N = 32768, 16 heads).
      const double resolution = 1e-12 * std::max(1.0, t_);
      for (std::size_t id : act) {
        Op& op = ops_[id];
        if (op.remaining <= 1e-9 * std::max(1.0, costs_.work[id % n_]) || op.remaining <= share * resolution) {
          op.remaining = 0;
          op.end = t_;
          op.ready = t_ + units_.units[u].latency;
          StreamState& s = streams_[static_cast<std::size_t>(owner_[id])];
          if (!isa::unit_is_async(static_cast<Unit>(u))) s.free_at = t_;
        } else {
          act[keep++] = id;
        }
      }
      act.resize(keep);
    }
  }

  TimingResult r;
  r.instructions = n_;
  r.streams = p_.timing.streams.empty() ? std::vector<std::string>{"main"} : p_.timing.streams;
  std::int64_t last = -1;
  for (std::size_t id = 0; id < ops_.size(); ++id) {
    if (ops_[id].ready > r.cycles || last < 0) r.cycles = std::max(r.cycles, ops_[id].ready), last = static_cast<std::int64_t>(id);
    const Unit u = costs_.unit[id % n_];
    r.units[static_cast<std::size_t>(u)].work += costs_.work[id % n_];
  }
  for (std::size_t u = 0; u < isa::kUnitCount; ++u) {
    UnitUsage& use = r.units[u];
    use.busy_cycles = use.work / units_.units[u].rate;
    use.busy_fraction = r.cycles > 0 ? use.busy_cycles / r.cycles : 0;
    if (use.busy_fraction > r.units[static_cast<std::size_t>(r.busiest)].busy_fraction) r.busiest = static_cast<Unit>(u);
  }
  r.bound = r.units[static_cast<std::size_t>(r.busiest)].busy_fraction >= 0.5 ? std::string(isa::unit_name(r.busiest))
                                                                             : std::string("latency");
  if (keep_steps) {
    std::vector<bool> critical(ops_.size(), false);
    for (std::int64_t id = last; id >= 0 && !critical[static_cast<std::size_t>(id)]; id = ops_[static_cast<std::size_t>(id)].pred)
      critical[static_cast<std::size_t>(id)] = true;
    r.steps.resize(ops_.size());
    for (std::size_t id = 0; id < ops_.size(); ++id) {
      const std::size_t i = id % n_;
      const StreamState& s = streams_[static_cast<std::size_t>(owner_[id])];
      r.steps[id] = TimedStep{i, static_cast<std::uint32_t>(id / n_), s.stream, costs_.unit[i], costs_.work[i],
                              ops_[id].issue, ops_[id].end, ops_[id].ready, critical[id]};
    }
  }
  return r;
}

}  // namespace

TimingResult time_program(const isa::Program& p, const TimingOptions& o) {
  const isa::UnitsConfig* units = o.units ? &*o.units : (p.timing.units ? &*p.timing.units : nullptr);
  if (!units) throw TimingError({}, "the program has no .units directive: nothing to time it with (e.g. .units h100)");
  if (o.copies < 1 || o.copies > 64) throw TimingError({}, "copies must be between 1 and 64");
  for (const isa::UnitRate& u : units->units)
    if (!(u.rate > 0) || !(u.latency >= 0)) throw TimingError({}, "a unit's rate must be positive and its latency not negative");
  if (p.code.empty()) return TimingResult{};
  if (!(o.stagger >= 0)) throw TimingError({}, "stagger must not be negative");
  Simulator sim(p, *units, o.copies, o.stagger);
  return sim.run(o.keep_steps);
}

}  // namespace flashsim::sim

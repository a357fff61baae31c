#include "sim/schedules/matmul.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "isa/assembler.h"
#include "sim/machine.h"

namespace flashsim::sim::schedules {

namespace {

// One multiply-add of the schedule: c[i][j] += a[i][kk] * b[kk][j].
struct Step {
  int i, kk, j;
  bool first = false;   // MAC_Z: the partial sum starts here
  bool reload = false;  // the partial sum was spilled: LOAD it from c first
  bool store = false;   // STORE the partial sum after this step (final or spill)
};

// Turns a step list into instructions, allocating registers with Belady's rule.
class Allocator {
 public:
  Allocator(int m, int k, int n, int regs) : m_(m), k_(k), n_(n), regs_(regs), holds_(regs, kFree) {}

  std::vector<std::string> emit(const std::vector<Step>& steps) {
    // Future uses of each operand, for Belady's rule.
    uses_.assign(static_cast<std::size_t>(m_ * k_ + k_ * n_), {});
    for (std::size_t t = 0; t < steps.size(); ++t) {
      uses_[a_id(steps[t].i, steps[t].kk)].push_back(t);
      uses_[b_id(steps[t].kk, steps[t].j)].push_back(t);
    }
    next_.assign(uses_.size(), 0);
    acc_reg_.assign(static_cast<std::size_t>(m_ * n_), -1);
    std::vector<std::string> out;
    for (std::size_t t = 0; t < steps.size(); ++t) {
      const Step& s = steps[t];
      int ai = a_id(s.i, s.kk), bi = b_id(s.kk, s.j);
      ++next_[ai];
      ++next_[bi];
      int ra = operand(ai, t, -1, out, "a[" + std::to_string(s.i) + "][" + std::to_string(s.kk) + "]");
      int rb = operand(bi, t, ra, out, "b[" + std::to_string(s.kk) + "][" + std::to_string(s.j) + "]");
      int o = s.i * n_ + s.j;
      std::string cell = "c[" + std::to_string(s.i) + "][" + std::to_string(s.j) + "]";
      if (s.first) {
        int rd = take(t, ra, rb, true);
        holds_[rd] = kAcc;
        acc_reg_[o] = rd;
        out.push_back("MAC_Z " + r(ra) + ", " + r(rb) + ", " + r(rd));
      } else {
        if (s.reload) {
          int rc = take(t, ra, rb, false);
          holds_[rc] = kAcc;
          acc_reg_[o] = rc;
          out.push_back("LOAD " + cell + ", " + r(rc));
        }
        int rc = acc_reg_[o];
        if (rc < 0) throw std::logic_error("matmul schedule: partial sum used before it exists");
        out.push_back("MAC " + r(ra) + ", " + r(rb) + ", " + r(rc) + ", " + r(rc));
      }
      if (s.store) {
        out.push_back("STORE " + r(acc_reg_[o]) + ", " + cell);
        holds_[acc_reg_[o]] = kFree;
        acc_reg_[o] = -1;
      }
    }
    return out;
  }

 private:
  static constexpr int kFree = -1, kAcc = -2;
  int a_id(int i, int kk) const { return i * k_ + kk; }
  int b_id(int kk, int j) const { return m_ * k_ + kk * n_ + j; }
  static std::string r(int x) { return "R" + std::to_string(x); }

  std::size_t next_use(int value) const {
    const auto& u = uses_[value];
    return next_[value] < u.size() ? u[next_[value]] : std::numeric_limits<std::size_t>::max();
  }

  // A register for a new value: a free one, else the operand used furthest ahead. The current
  // step's operands are kept unless `may_take_operands` and they have no later use.
  int take(std::size_t t, int keep1, int keep2, bool may_take_operands) {
    (void)t;
    for (int x = 0; x < regs_; ++x)
      if (holds_[x] == kFree) return x;
    int best = -1;
    std::size_t best_use = 0;
    for (int x = 0; x < regs_; ++x) {
      if (holds_[x] < 0) continue;
      std::size_t u = next_use(holds_[x]);
      if ((x == keep1 || x == keep2) && !(may_take_operands && u == std::numeric_limits<std::size_t>::max())) continue;
      if (best < 0 || u > best_use) {
        best = x;
        best_use = u;
      }
    }
    if (best < 0) throw std::invalid_argument("the schedule needs more registers than the machine has");
    return best;
  }

  int operand(int value, std::size_t t, int keep, std::vector<std::string>& out, const std::string& mem) {
    for (int x = 0; x < regs_; ++x)
      if (holds_[x] == value) return x;
    int x = take(t, keep, -1, false);
    holds_[x] = value;
    out.push_back("LOAD " + mem + ", " + r(x));
    return x;
  }

  int m_, k_, n_, regs_;
  std::vector<int> holds_;  // operand id, kFree or kAcc
  std::vector<std::vector<std::size_t>> uses_;
  std::vector<std::size_t> next_;
  std::vector<int> acc_reg_;
};

// k runs forward for one output and backward for the next, so the operand last loaded for one
// output is the first the next one needs.
std::vector<int> k_order(int k, bool reverse) {
  std::vector<int> ks(static_cast<std::size_t>(k));
  for (int x = 0; x < k; ++x) ks[static_cast<std::size_t>(x)] = reverse ? k - 1 - x : x;
  return ks;
}

// Outputs (i, j) of rows [i0, i1) x cols [j0, j1) in snake order.
std::vector<std::pair<int, int>> snake(int i0, int i1, int j0, int j1) {
  std::vector<std::pair<int, int>> out;
  for (int i = i0; i < i1; ++i)
    for (int x = j0; x < j1; ++x) out.emplace_back(i, (i - i0) % 2 == 0 ? x : j1 - 1 - (x - j0));
  return out;
}

// Outputs row by row (in snake order or not), k forward or alternating.
std::vector<Step> inner_steps(int m, int k, int n, bool snake_rows, bool alternate_k) {
  std::vector<Step> steps;
  int count = 0;
  auto order = snake(0, m, 0, n);
  if (!snake_rows) std::sort(order.begin(), order.end());
  for (auto [i, j] : order) {
    auto ks = k_order(k, alternate_k && count++ % 2 == 1);
    for (std::size_t x = 0; x < ks.size(); ++x)
      steps.push_back({i, ks[x], j, x == 0, false, x + 1 == ks.size()});
  }
  return steps;
}

// The first `resident` outputs (snake order) keep their partial sums in registers; the others
// are loaded, updated and stored back at every k.
std::vector<Step> outer_steps(int m, int k, int n, int resident) {
  std::vector<Step> steps;
  auto order = snake(0, m, 0, n);
  for (int kk = 0; kk < k; ++kk) {
    // Reverse the walk at odd k so the outputs last touched are touched first again.
    auto walk = order;
    if (kk % 2 == 1) std::reverse(walk.begin(), walk.end());
    for (auto [i, j] : walk) {
      auto pos = std::find(order.begin(), order.end(), std::make_pair(i, j)) - order.begin();
      bool res = pos < resident;
      steps.push_back({i, kk, j, kk == 0, !res && kk > 0, !res || kk == k - 1});
    }
  }
  // Resident sums are stored after the last k, in the order they finish.
  return steps;
}

std::vector<Step> blocked_steps(int m, int k, int n, int br, int bc) {
  std::vector<Step> steps;
  int block = 0;
  for (int i0 = 0; i0 < m; i0 += br) {
    // Blocks in snake order along the columns too.
    std::vector<int> j0s;
    for (int j0 = 0; j0 < n; j0 += bc) j0s.push_back(j0);
    if ((i0 / br) % 2 == 1) std::reverse(j0s.begin(), j0s.end());
    for (int j0 : j0s) {
      int i1 = std::min(m, i0 + br), j1 = std::min(n, j0 + bc);
      auto ks = k_order(k, block++ % 2 == 1);
      for (std::size_t x = 0; x < ks.size(); ++x) {
        auto walk = snake(i0, i1, j0, j1);
        if (x % 2 == 1) std::reverse(walk.begin(), walk.end());
        for (auto [i, j] : walk) steps.push_back({i, ks[x], j, x == 0, false, x + 1 == ks.size()});
      }
    }
  }
  return steps;
}

GeneratedTrace assemble_trace(const MatmulGenOptions& o, const std::vector<std::string>& code, const std::string& what) {
  std::ostringstream text;
  text << "# C = A x B, " << o.m << "x" << o.k << " times " << o.k << "x" << o.n << ", " << what << ", on " << o.regs
       << " registers (flashsim gen matmul)\n";
  text << ".regs " << o.regs << "\n";
  text << ".array a[" << o.m << "][" << o.k << "]\n.array b[" << o.k << "][" << o.n << "]\n.array c[" << o.m << "]["
       << o.n << "]\n";
  for (const auto& line : code) text << line << "\n";
  GeneratedTrace g;
  g.text = text.str();
  g.program = isa::assemble(g.text, "matmul.fsa");
  MachineOptions mo;
  mo.compute_values = false;
  mo.history = false;
  Machine machine(g.program, mo);
  machine.run();
  const auto& c = machine.counters();
  g.cycles = c.cycles;
  g.loads = c.count(isa::Opcode::LOAD);
  g.stores = c.count(isa::Opcode::STORE);
  g.macs = c.count(isa::Opcode::MAC) + c.count(isa::Opcode::MAC_Z);
  return g;
}

// variant (inner only): bit 0 row-major instead of snake, bit 1 k always forward.
GeneratedTrace build(const MatmulGenOptions& o, int resident, int br, int bc, int variant = 0) {
  Allocator alloc(o.m, o.k, o.n, o.regs);
  std::vector<Step> steps;
  std::string what;
  switch (o.schedule) {
    case MatmulSchedule::Inner:
      steps = inner_steps(o.m, o.k, o.n, !(variant & 1), !(variant & 2));
      what = std::string("inner products, outputs ") + (variant & 1 ? "row by row" : "in snake order") + (variant & 2 ? "" : ", k alternating");
      break;
    case MatmulSchedule::Outer:
      steps = outer_steps(o.m, o.k, o.n, resident);
      what = "outer products, " + std::to_string(resident) + " of " + std::to_string(o.m * o.n) + " partial sums in registers";
      break;
    case MatmulSchedule::Blocked:
      steps = blocked_steps(o.m, o.k, o.n, br, bc);
      what = std::to_string(br) + "x" + std::to_string(bc) + " register blocks";
      break;
  }
  GeneratedTrace g = assemble_trace(o, alloc.emit(steps), what);
  g.resident = resident;
  g.block_rows = br;
  g.block_cols = bc;
  std::ostringstream s;
  s << matmul_schedule_name(o.schedule) << " (" << what << "): " << g.cycles << " cycles, " << g.loads << " LOADs ("
    << compulsory_loads(o.m, o.k, o.n) << " compulsory), " << g.macs << " MACs, " << g.stores << " STOREs";
  g.summary = s.str();
  return g;
}

bool better(const GeneratedTrace& a, const GeneratedTrace& b) {
  return a.cycles != b.cycles ? a.cycles < b.cycles : a.loads < b.loads;
}

}  // namespace

std::optional<MatmulSchedule> parse_matmul_schedule(const std::string& name) {
  if (name == "inner") return MatmulSchedule::Inner;
  if (name == "outer") return MatmulSchedule::Outer;
  if (name == "blocked") return MatmulSchedule::Blocked;
  return std::nullopt;
}

const char* matmul_schedule_name(MatmulSchedule s) {
  switch (s) {
    case MatmulSchedule::Inner: return "inner";
    case MatmulSchedule::Outer: return "outer";
    case MatmulSchedule::Blocked: return "blocked";
  }
  return "?";
}

GeneratedTrace generate_matmul(const MatmulGenOptions& o) {
  if (o.m < 1 || o.k < 1 || o.n < 1) throw std::invalid_argument("matmul sizes must be at least 1");
  if (static_cast<long long>(o.m) * o.k * o.n > 2'000'000) throw std::invalid_argument("matmul too large to generate as a trace (m*k*n > 2,000,000)");
  if (o.regs < 3) throw std::invalid_argument("a matmul needs at least 3 registers: two operands and a partial sum");
  switch (o.schedule) {
    case MatmulSchedule::Inner: {
      // Snake or row-major outputs, alternating or forward k: the order decides the reuse.
      std::optional<GeneratedTrace> best;
      for (int variant = 0; variant < 4; ++variant) {
        auto g = build(o, 0, 1, 1, variant);
        if (!best || better(g, *best)) best = std::move(g);
      }
      return *best;
    }
    case MatmulSchedule::Outer: {
      int most = std::min(o.m * o.n, o.regs - 2);
      if (o.resident > 0) {
        // Spilled sums pass through one extra register.
        int cap = o.resident >= o.m * o.n ? o.regs - 2 : o.regs - 3;
        if (o.resident > cap)
          throw std::invalid_argument("outer: " + std::to_string(o.resident) + " resident partial sums do not fit in " +
                                      std::to_string(o.regs) + " registers (at most " + std::to_string(cap) + ")");
        return build(o, o.resident, 0, 0);
      }
      std::optional<GeneratedTrace> best;
      for (int res = 0; res <= most; ++res) {
        if (res < o.m * o.n && res > o.regs - 3) continue;
        auto g = build(o, res, 0, 0);
        if (!best || better(g, *best)) best = std::move(g);
      }
      return *best;
    }
    case MatmulSchedule::Blocked: {
      if (o.block_rows > 0 || o.block_cols > 0) {
        int br = std::max(1, o.block_rows), bc = std::max(1, o.block_cols);
        if (br * bc + 2 > o.regs)
          throw std::invalid_argument("blocked: a " + std::to_string(br) + "x" + std::to_string(bc) + " block needs " +
                                      std::to_string(br * bc + 2) + " registers; the machine has " + std::to_string(o.regs));
        return build(o, 0, std::min(br, o.m), std::min(bc, o.n));
      }
      std::optional<GeneratedTrace> best;
      for (int br = 1; br <= o.m; ++br)
        for (int bc = 1; bc <= o.n && br * bc + 2 <= o.regs; ++bc) {
          auto g = build(o, 0, br, bc);
          if (!best || better(g, *best)) best = std::move(g);
        }
      return *best;
    }
  }
  throw std::invalid_argument("unknown schedule");
}

}  // namespace flashsim::sim::schedules

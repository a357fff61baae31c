#include "sim/optimize.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <numeric>
#include <queue>
#include <sstream>
#include <vector>

#include "isa/assembler.h"

namespace flashsim::sim {

namespace {

constexpr int kMaxRegs = 16;
constexpr int kMaxCells = 16;

// Registers hold value ids: 0 empty, then A elements, B elements, and partial sums
// P(output, set of summation indices already added). dram[o] is the set stored in c[o].
struct State {
  std::array<std::uint8_t, kMaxRegs> reg{};
  std::array<std::uint8_t, kMaxCells> dram{};
};

struct Move {
  isa::Opcode op = isa::Opcode::LOAD;
  int ra = -1, rb = -1, rc = -1, rd = -1;  // register positions
  int array = -1, row = 0, col = 0;        // memory operand: 0 a, 1 b, 2 c
  std::uint64_t cost = 0;                  // packed (cycles, loads)
  State next;
};

// Costs are compared as (cycles, LOADs) lexicographically, packed into one integer.
constexpr int kLoadBits = 20;
std::uint64_t pack(std::uint64_t cycles, std::uint64_t loads) { return (cycles << kLoadBits) | loads; }
std::uint64_t cycles_of(std::uint64_t c) { return c >> kLoadBits; }
std::uint64_t loads_of(std::uint64_t c) { return c & ((1u << kLoadBits) - 1); }

// Open addressing: canonical key -> best cost and the state it was reached from.
class StateTable {
 public:
  struct Entry {
    std::uint64_t key, g, parent;
  };
  static constexpr std::uint64_t kEmpty = ~0ull;
  explicit StateTable(std::size_t cap = 1 << 16) : slots_(cap, Entry{kEmpty, 0, 0}) {}
  Entry* find(std::uint64_t key) {
    std::size_t i = hash(key) & (slots_.size() - 1);
    while (slots_[i].key != kEmpty) {
      if (slots_[i].key == key) return &slots_[i];
      i = (i + 1) & (slots_.size() - 1);
    }
    return nullptr;
  }
  // Inserts or lowers; true when the entry is new or improved.
  bool relax(std::uint64_t key, std::uint64_t g, std::uint64_t parent) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = hash(key) & (slots_.size() - 1);
    while (slots_[i].key != kEmpty) {
      if (slots_[i].key == key) {
        if (g >= slots_[i].g) return false;
        slots_[i].g = g;
        slots_[i].parent = parent;
        return true;
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = {key, g, parent};
    ++size_;
    return true;
  }
  std::size_t size() const { return size_; }

 private:
  static std::size_t hash(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return static_cast<std::size_t>(x);
  }
  void grow() {
    std::vector<Entry> old(slots_.size() * 2, Entry{kEmpty, 0, 0});
    old.swap(slots_);
    size_ = 0;
    for (const auto& e : old)
      if (e.key != kEmpty) relax(e.key, e.g, e.parent);
  }
  std::vector<Entry> slots_;
  std::size_t size_ = 0;
};

class MatmulEngine {
 public:
  explicit MatmulEngine(const MatmulSearch& p) : M(p.m), K(p.k), N(p.n), R(p.regs), p_(p) {
    if (M < 1 || K < 1 || N < 1) throw SearchError("the product needs m, k, n >= 1");
    if (R < 3) throw SearchError("no program exists with fewer than 3 registers: a MAC reads two operands and a partial sum");
    if (R > kMaxRegs) throw SearchError("the search handles at most " + std::to_string(kMaxRegs) + " registers");
    if (M * N > kMaxCells || K > 6) throw SearchError("the instance is too large for an exhaustive search");
    MN = M * N;
    full = (1 << K) - 1;
    nA = M * K;
    nB = K * N;
    nvals = 1 + nA + nB + MN * full;
    if (nvals > 256) throw SearchError("the instance is too large for an exhaustive search");
    vbits = std::bit_width(static_cast<unsigned>(nvals - 1));
    if (R * vbits + MN * K > 63)
      throw SearchError("the instance is too large for the search's 64-bit state (" + std::to_string(R) + " registers of " +
                        std::to_string(nvals) + " possible values)");
    build_tables();
    build_symmetries();
  }

  int symmetries() const { return static_cast<int>(vmap_.size()); }

  // --- values ---
  int A(int i, int kk) const { return 1 + i * K + kk; }
  int B(int kk, int j) const { return 1 + nA + kk * N + j; }
  int P(int o, int mask) const { return 1 + nA + nB + o * full + (mask - 1); }
  enum Kind : std::uint8_t { kEmptyV, kA, kB, kP };

  bool finished(const State& s, int o) const { return s.dram[o] == full; }

  // Values that can no longer matter become empty registers: operands whose outputs are all
  // stored, partial sums of stored outputs, and a partial sum when a register holds a larger
  // partial sum of the same output (continuing the larger one is never worse).
  void normalize(State& s) const {
    for (int r = 0; r < R; ++r) {
      int v = s.reg[r];
      if (!v) continue;
      bool dead = false;
      switch (kind_[v]) {
        case kA: {
          dead = true;
          for (int j = 0; j < N && dead; ++j) dead = finished(s, vi_[v] * N + j);
          break;
        }
        case kB: {
          dead = true;
          for (int i = 0; i < M && dead; ++i) dead = finished(s, i * N + vj_[v]);
          break;
        }
        case kP: {
          int o = vo_[v];
          dead = finished(s, o);
          for (int q = 0; q < R && !dead; ++q) {
            int w = s.reg[q];
            if (q != r && w && kind_[w] == kP && vo_[w] == o && (vmask_[w] & vmask_[v]) == vmask_[v] && vmask_[w] != vmask_[v])
              dead = true;
          }
          break;
        }
        default:
          break;
      }
      if (dead) s.reg[r] = 0;
    }
  }

  std::uint64_t encode(const std::array<std::uint8_t, kMaxRegs>& regs, const std::array<std::uint8_t, kMaxCells>& dram) const {
    std::uint64_t key = 0;
    for (int r = 0; r < R; ++r) key = (key << vbits) | regs[r];
    for (int o = 0; o < MN; ++o) key = (key << K) | dram[o];
    return key;
  }

  State decode(std::uint64_t key) const {
    State s;
    for (int o = MN - 1; o >= 0; --o) {
      s.dram[o] = static_cast<std::uint8_t>(key & static_cast<std::uint64_t>(full));
      key >>= K;
    }
    for (int r = R - 1; r >= 0; --r) {
      s.reg[r] = static_cast<std::uint8_t>(key & ((1ull << vbits) - 1));
      key >>= vbits;
    }
    return s;
  }

  // The smallest encoding over register orders and the product's symmetries.
  std::uint64_t canonical(const State& s) const {
    std::uint64_t best = ~0ull;
    std::array<std::uint8_t, kMaxRegs> regs{};
    std::array<std::uint8_t, kMaxCells> dram{};
    std::size_t gcount = p_.use_symmetry ? vmap_.size() : 1;
    for (std::size_t g = 0; g < gcount; ++g) {
      for (int r = 0; r < R; ++r) regs[r] = vmap_[g][s.reg[r]];
      std::sort(regs.begin(), regs.begin() + R);
      for (int o = 0; o < MN; ++o) dram[omap_[g][o]] = maskmap_[g][s.dram[o]];
      best = std::min(best, encode(regs, dram));
    }
    return best;
  }

  bool goal(const State& s) const {
    for (int o = 0; o < MN; ++o)
      if (!finished(s, o)) return false;
    return true;
  }

  // Lower bound on the remaining (cycles, LOADs): every output not yet stored owes a STORE and
  // the MACs its best partial sum lacks; every operand of a term no partial sum holds yet must
  // be loaded if it is not in a register.
  std::uint64_t bound(const State& s) const {
    std::uint64_t need = 0, have = 0, cyc = 0;
    for (int r = 0; r < R; ++r) {
      int v = s.reg[r];
      if (v && (kind_[v] == kA || kind_[v] == kB)) have |= 1ull << (v - 1);
    }
    const std::uint64_t cz = cost(isa::Opcode::MAC_Z), cm = cost(isa::Opcode::MAC);
    for (int o = 0; o < MN; ++o) {
      if (finished(s, o)) continue;
      int uni = s.dram[o], best = std::popcount(static_cast<unsigned>(s.dram[o]));
      for (int r = 0; r < R; ++r) {
        int v = s.reg[r];
        if (v && kind_[v] == kP && vo_[v] == o) {
          uni |= vmask_[v];
          best = std::max(best, std::popcount(static_cast<unsigned>(vmask_[v])));
        }
      }
      std::uint64_t fresh = cz + static_cast<std::uint64_t>(K - 1) * cm;
      cyc += best > 0 ? std::min(fresh, static_cast<std::uint64_t>(K - best) * cm) : fresh;
      cyc += cost(isa::Opcode::STORE);
      int i = o / N, j = o % N;
      for (int kk = 0; kk < K; ++kk)
        if (!(uni >> kk & 1)) need |= (1ull << (A(i, kk) - 1)) | (1ull << (B(kk, j) - 1));
    }
    std::uint64_t loads = static_cast<std::uint64_t>(std::popcount(need & ~have));
    return pack(cyc + loads * cost(isa::Opcode::LOAD), loads);
  }

  std::uint64_t cost(isa::Opcode op) const { return p_.cycles[static_cast<std::size_t>(op)]; }

  void moves(const State& s, std::vector<Move>& out) const {
    out.clear();
    int where[256];
    std::fill(where, where + nvals, -1);
    int first_empty = -1;
    for (int r = 0; r < R; ++r) {
      if (s.reg[r]) where[s.reg[r]] = r;
      else if (first_empty < 0) first_empty = r;
    }
    // With a free register, writing anywhere else only loses a value.
    auto for_targets = [&](int also, auto&& emit) {
      if (also >= 0) emit(also);
      if (first_empty >= 0) {
        if (first_empty != also) emit(first_empty);
        return;
      }
      for (int r = 0; r < R; ++r)
        if (r != also) emit(r);
    };
    auto bigger_partial_in_reg = [&](int o, int mask) {
      for (int r = 0; r < R; ++r) {
        int w = s.reg[r];
        if (w && kind_[w] == kP && vo_[w] == o && (vmask_[w] & mask) == mask) return true;
      }
      return false;
    };
    auto push = [&](Move mv, int target, int value) {
      mv.rd = target;
      mv.next = s;
      if (target >= 0) mv.next.reg[target] = static_cast<std::uint8_t>(value);
      normalize(mv.next);
      out.push_back(mv);
    };
    const std::uint64_t load_cost = pack(cost(isa::Opcode::LOAD), 1);

    // LOAD an operand.
    for (int v = 1; v <= nA + nB; ++v) {
      if (where[v] >= 0) continue;
      bool useful = false;
      if (kind_[v] == kA) {
        for (int j = 0; j < N && !useful; ++j) useful = !finished(s, vi_[v] * N + j);
      } else {
        for (int i = 0; i < M && !useful; ++i) useful = !finished(s, i * N + vj_[v]);
      }
      if (!useful) continue;
      Move mv;
      mv.op = isa::Opcode::LOAD;
      mv.cost = load_cost;
      mv.array = kind_[v] == kA ? 0 : 1;
      mv.row = kind_[v] == kA ? vi_[v] : vk_[v];
      mv.col = kind_[v] == kA ? vk_[v] : vj_[v];
      for_targets(-1, [&](int t) { push(mv, t, v); });
    }
    // LOAD a partial sum back from its C cell.
    for (int o = 0; o < MN; ++o) {
      int mask = s.dram[o];
      if (mask == 0 || mask == full || bigger_partial_in_reg(o, mask)) continue;
      Move mv;
      mv.op = isa::Opcode::LOAD;
      mv.cost = load_cost;
      mv.array = 2;
      mv.row = o / N;
      mv.col = o % N;
      for_targets(-1, [&](int t) { push(mv, t, P(o, mask)); });
    }
    // MAC_Z starts a partial sum; MAC extends one.
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        int o = i * N + j;
        if (finished(s, o)) continue;
        for (int kk = 0; kk < K; ++kk) {
          int pa = where[A(i, kk)], pb = where[B(kk, j)];
          if (pa < 0 || pb < 0) continue;
          int bit = 1 << kk;
          if (!bigger_partial_in_reg(o, bit)) {
            Move mv;
            mv.op = isa::Opcode::MAC_Z;
            mv.ra = pa;
            mv.rb = pb;
            mv.cost = pack(cost(isa::Opcode::MAC_Z), 0);
            for_targets(-1, [&](int t) { push(mv, t, P(o, bit)); });
          }
          for (int r = 0; r < R; ++r) {
            int w = s.reg[r];
            if (!w || kind_[w] != kP || vo_[w] != o || (vmask_[w] & bit)) continue;
            int mask = vmask_[w] | bit;
            if (bigger_partial_in_reg(o, mask)) continue;
            Move mv;
            mv.op = isa::Opcode::MAC;
            mv.ra = pa;
            mv.rb = pb;
            mv.rc = r;
            mv.cost = pack(cost(isa::Opcode::MAC), 0);
            for_targets(r, [&](int t) { push(mv, t, P(o, mask)); });
          }
        }
      }
    // STORE a finished output, or spill a partial sum to its own C cell.
    for (int r = 0; r < R; ++r) {
      int w = s.reg[r];
      if (!w || kind_[w] != kP) continue;
      int o = vo_[w], mask = vmask_[w];
      if (finished(s, o) || s.dram[o] == mask) continue;
      if (mask != full && !p_.allow_spills) continue;
      Move mv;
      mv.op = isa::Opcode::STORE;
      mv.ra = r;
      mv.array = 2;
      mv.row = o / N;
      mv.col = o % N;
      mv.cost = pack(cost(isa::Opcode::STORE), 0);
      mv.next = s;
      mv.next.dram[o] = static_cast<std::uint8_t>(mask);
      normalize(mv.next);
      out.push_back(mv);
    }
  }

  std::string instruction_text(const Move& mv) const {
    static const char* names[] = {"a", "b", "c"};
    std::string mem = mv.array >= 0 ? std::string(names[mv.array]) + "[" + std::to_string(mv.row) + "][" + std::to_string(mv.col) + "]" : "";
    auto reg = [](int r) { return "R" + std::to_string(r); };
    switch (mv.op) {
      case isa::Opcode::LOAD: return "LOAD " + mem + ", " + reg(mv.rd);
      case isa::Opcode::STORE: return "STORE " + reg(mv.ra) + ", " + mem;
      case isa::Opcode::MAC_Z: return "MAC_Z " + reg(mv.ra) + ", " + reg(mv.rb) + ", " + reg(mv.rd);
      default: return "MAC " + reg(mv.ra) + ", " + reg(mv.rb) + ", " + reg(mv.rc) + ", " + reg(mv.rd);
    }
  }

  std::string describe(int v) const {
    auto idx = [](int a, int b) { return std::to_string(a) + std::to_string(b); };
    switch (kind_[v]) {
      case kA: return "a" + idx(vi_[v], vk_[v]);
      case kB: return "b" + idx(vk_[v], vj_[v]);
      case kP: {
        std::string s;
        int o = vo_[v];
        for (int kk = 0; kk < K; ++kk)
          if (vmask_[v] >> kk & 1) s += (s.empty() ? "" : "+") + ("a" + idx(o / N, kk)) + "*" + ("b" + idx(kk, o % N));
        return s;
      }
      default: return "";
    }
  }

  int M, K, N, R;

 private:
  void build_tables() {
    kind_.assign(nvals, kEmptyV);
    vi_.assign(nvals, 0);
    vj_.assign(nvals, 0);
    vk_.assign(nvals, 0);
    vo_.assign(nvals, 0);
    vmask_.assign(nvals, 0);
    for (int i = 0; i < M; ++i)
      for (int kk = 0; kk < K; ++kk) {
        int v = A(i, kk);
        kind_[v] = kA;
        vi_[v] = i;
        vk_[v] = kk;
      }
    for (int kk = 0; kk < K; ++kk)
      for (int j = 0; j < N; ++j) {
        int v = B(kk, j);
        kind_[v] = kB;
        vk_[v] = kk;
        vj_[v] = j;
      }
    for (int o = 0; o < MN; ++o)
      for (int mask = 1; mask <= full; ++mask) {
        int v = P(o, mask);
        kind_[v] = kP;
        vo_[v] = o;
        vi_[v] = o / N;
        vj_[v] = o % N;
        vmask_[v] = mask;
      }
  }

  // Relabelling rows of A, columns of B and the summation index (and, when m == n, swapping
  // the roles of A and B by transposing C) maps programs to programs of equal cost.
  void build_symmetries() {
    std::vector<int> pi(M), pj(N), pk(K);
    std::iota(pi.begin(), pi.end(), 0);
    do {
      std::iota(pj.begin(), pj.end(), 0);
      do {
        std::iota(pk.begin(), pk.end(), 0);
        do {
          for (int t = 0; t < (M == N ? 2 : 1); ++t) add_symmetry(pi, pj, pk, t == 1);
        } while (std::next_permutation(pk.begin(), pk.end()));
      } while (std::next_permutation(pj.begin(), pj.end()));
    } while (std::next_permutation(pi.begin(), pi.end()));
  }

  void add_symmetry(const std::vector<int>& pi, const std::vector<int>& pj, const std::vector<int>& pk, bool transpose) {
    std::vector<std::uint8_t> vm(nvals, 0), mm(full + 1, 0);
    std::array<int, kMaxCells> om{};
    for (int mask = 0; mask <= full; ++mask) {
      int out = 0;
      for (int kk = 0; kk < K; ++kk)
        if (mask >> kk & 1) out |= 1 << pk[kk];
      mm[mask] = static_cast<std::uint8_t>(out);
    }
    auto out_of = [&](int i, int j) { return transpose ? pj[j] * N + pi[i] : pi[i] * N + pj[j]; };
    for (int o = 0; o < MN; ++o) om[o] = out_of(o / N, o % N);
    for (int v = 1; v < nvals; ++v) {
      int m2 = 0;
      switch (kind_[v]) {
        case kA: m2 = transpose ? B(pk[vk_[v]], pi[vi_[v]]) : A(pi[vi_[v]], pk[vk_[v]]); break;
        case kB: m2 = transpose ? A(pj[vj_[v]], pk[vk_[v]]) : B(pk[vk_[v]], pj[vj_[v]]); break;
        case kP: m2 = P(om[vo_[v]], mm[vmask_[v]]); break;
        default: break;
      }
      vm[v] = static_cast<std::uint8_t>(m2);
    }
    vmap_.push_back(std::move(vm));
    omap_.push_back(om);
    maskmap_.push_back(std::move(mm));
  }

  MatmulSearch p_;
  int MN = 0, full = 0, nA = 0, nB = 0, nvals = 0, vbits = 0;
  std::vector<std::uint8_t> kind_, vi_, vj_, vk_, vo_, vmask_;
  std::vector<std::vector<std::uint8_t>> vmap_;
  std::vector<std::array<int, kMaxCells>> omap_;
  std::vector<std::vector<std::uint8_t>> maskmap_;
};

}  // namespace

SearchWatch::SearchWatch(const SearchLimits& limits, const char* bound_unit)
    : limits_(limits), unit_(bound_unit), start_(std::chrono::steady_clock::now()), last_report_(start_) {}

void SearchWatch::check(std::uint64_t expanded, std::uint64_t stored, std::uint64_t bound) {
  auto now = std::chrono::steady_clock::now();
  SearchProgress p{expanded, stored, std::chrono::duration<double>(now - start_).count(), bound, unit_};
  if (limits_.time_limit_seconds > 0 && p.seconds >= limits_.time_limit_seconds) {
    std::ostringstream what;
    what << "the time limit of " << limits_.time_limit_seconds << " s passed before the search proved an optimum";
    throw SearchStopped(what.str(), p, true);
  }
  if (limits_.report && std::chrono::duration<double>(now - last_report_).count() >= limits_.report_every_seconds) {
    last_report_ = now;
    limits_.report(p);
  }
}

void SearchWatch::out_of_states(std::uint64_t expanded, std::uint64_t stored, std::uint64_t bound,
                                std::uint64_t max_states) {
  SearchProgress p{expanded, stored,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(), bound, unit_};
  throw SearchStopped("the search passed " + std::to_string(max_states) +
                          " states without finishing (raise --max-states or shrink the instance)",
                      p, false);
}

OptimalSchedule optimize_matmul(const MatmulSearch& problem) {
  auto t0 = std::chrono::steady_clock::now();
  MatmulEngine e(problem);
  OptimalSchedule result;
  result.stats.symmetries = problem.use_symmetry ? e.symmetries() : 1;

  State start;
  e.normalize(start);
  std::uint64_t start_key = e.canonical(start);
  std::uint64_t h0 = e.bound(start);
  result.start_bound_cycles = cycles_of(h0);
  result.start_bound_loads = loads_of(h0);

  struct Open {
    std::uint64_t f, g, key;
    bool operator>(const Open& o) const { return f != o.f ? f > o.f : g < o.g; }  // deeper first on ties
  };
  std::priority_queue<Open, std::vector<Open>, std::greater<Open>> open;
  StateTable table;
  table.relax(start_key, 0, start_key);
  open.push({h0, 0, start_key});
  std::vector<Move> mv;
  std::uint64_t goal_key = 0;
  bool found = false;
  SearchWatch watch(problem.limits);
  while (!open.empty()) {
    Open cur = open.top();
    open.pop();
    auto* entry = table.find(cur.key);
    if (entry->g < cur.g) continue;  // a cheaper way here was found after this was queued
    State s = e.decode(cur.key);
    if (e.goal(s)) {
      goal_key = cur.key;
      found = true;
      break;
    }
    ++result.stats.expanded;
    e.moves(s, mv);
    for (const auto& m : mv) {
      std::uint64_t key = e.canonical(m.next);
      std::uint64_t g = cur.g + m.cost;
      if (table.relax(key, g, cur.key)) open.push({g + e.bound(m.next), g, key});
    }
    // Nodes leave the open list in order of cost plus an admissible bound, so cur.f is proven.
    watch.tick(result.stats.expanded, table.size(), cycles_of(cur.f), problem.max_states);
  }
  result.stats.stored = table.size();
  if (!found) throw SearchError("no program computes the product on this machine");

  // The canonical path, then a concrete trace that follows it register by register.
  std::vector<std::uint64_t> path{goal_key};
  while (path.back() != start_key) path.push_back(table.find(path.back())->parent);
  std::reverse(path.begin(), path.end());

  std::ostringstream text;
  text << "# C = A x B (" << e.M << "x" << e.K << " times " << e.K << "x" << e.N << ") on " << e.R
       << " registers: an optimal trace found by exhaustive search\n";
  text << "# (flashsim optimize matmul). " << "Lower bound before searching: " << result.start_bound_cycles
       << " cycles, " << result.start_bound_loads << " LOADs.\n";
  text << ".regs " << e.R << "\n";
  text << ".array a[" << e.M << "][" << e.K << "]\n.array b[" << e.K << "][" << e.N << "]\n.array c[" << e.M << "]["
       << e.N << "]\n";
  State s = start;
  for (std::size_t t = 0; t + 1 < path.size(); ++t) {
    std::uint64_t g_here = table.find(path[t])->g, g_next = table.find(path[t + 1])->g;
    e.moves(s, mv);
    const Move* pick = nullptr;
    for (const auto& m : mv)
      if (g_here + m.cost == g_next && e.canonical(m.next) == path[t + 1]) {
        pick = &m;
        break;
      }
    if (!pick) throw SearchError("internal error: the optimal path could not be replayed");
    text << e.instruction_text(*pick);
    // Say what a STORE of an unfinished sum is: a spill that a later LOAD brings back.
    if (pick->op == isa::Opcode::STORE && pick->next.dram[pick->row * e.N + pick->col] != (1 << e.K) - 1)
      text << "    # spill " << e.describe(s.reg[pick->ra]);
    text << "\n";
    switch (pick->op) {
      case isa::Opcode::LOAD: ++result.loads; break;
      case isa::Opcode::STORE: ++result.stores; break;
      default: ++result.macs; break;
    }
    s = pick->next;
  }
  std::uint64_t g = table.find(goal_key)->g;
  result.cycles = cycles_of(g);
  result.trace = text.str();
  result.program = isa::assemble(result.trace, "optimal.fsa");
  result.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace flashsim::sim

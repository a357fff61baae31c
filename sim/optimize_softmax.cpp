#include "sim/optimize_softmax.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <random>
#include <sstream>

#include "isa/assembler.h"
#include "sim/machine.h"

namespace flashsim::sim {

namespace {

constexpr int kMaxN = 4;
constexpr int kMaxRegs = 8;
constexpr std::uint8_t kFinal = 255;  // an out cell that holds its final output

// The value algebra. Sets of indices are bit masks over 0..n-1.
//   kMax   m(a)                      a nonempty; m({i}) is x_i
//   kDiff  m(a) - m(b)               a strictly inside b, so the difference is <= 0
//   kZero  m(a) - m(a) = 0           only for n = 1, where it leads to out_0 = 1 / 1
//   kSum   s(a|b) = sum_{i in a} e^(x_i - m(b))   a inside b; one term when |a| = 1
//   kScale e^(m(a) - m(b))           |a| >= 2, a strictly inside b (the rescale factor)
//   kOne   1 = e^0 = s({i}|{i})      only for n = 1
//   kOut   out_a = s({a}|all) / s(all|all)
// Operations (anything else is outside the model and never generated):
//   MAX  m(a), m(b)            -> m(a|b)
//   SUB  m(a) - m(b), a in b   -> m(a) - m(b)
//   EXP  m(a) - m(b)           -> s(a|b) when |a| = 1, else e^(m(a) - m(b))
//   ADD  s(a|c) + s(b|c), a and b disjoint -> s(a|b | c)
//   MUL  s(a|b) * e^(m(b) - m(c)) -> s(a|c);  e^(m(a)-m(b)) * e^(m(b)-m(c)) -> e^(m(a)-m(c))
//   DIV  s({i}|all) / s(all|all) -> out_i
//   MOV  copies a value: a copy is never better than an empty register (any instruction may
//        write any register), so the search merges it away and never emits one.
enum Kind : std::uint8_t { kNone, kMax, kZero, kDiff, kOne, kSum, kScale, kOut };

struct Value {
  Kind kind = kNone;
  std::uint8_t a = 0, b = 0;
};

struct State {
  std::array<std::uint8_t, kMaxRegs> reg{};
  std::array<std::uint8_t, kMaxN> cell{};  // 0: nothing usable, kFinal, or a spilled value
};

using Key = unsigned __int128;

enum class Mem : std::uint8_t { None, X, Out };

struct Move {
  isa::Opcode op = isa::Opcode::LOAD;
  int ra = -1, rb = -1, rd = -1;
  Mem mem = Mem::None;
  int index = 0;
  int value = 0;           // what the instruction leaves in rd
  std::uint64_t cost = 0;  // packed (objective order)
  State next;
};

// Canonical key -> node (best cost, parent node). Nodes live in a vector; the hash slots
// hold node indices, so a node's index never changes.
class NodeTable {
 public:
  struct Node {
    Key key;
    std::uint64_t g;
    std::uint32_t parent;
  };
  static constexpr std::uint32_t kNil = ~0u;

  NodeTable() : slots_(1 << 16, kNil) {}

  std::uint32_t find(Key key) const {
    std::size_t i = hash(key) & (slots_.size() - 1);
    while (slots_[i] != kNil) {
      if (nodes_[slots_[i]].key == key) return slots_[i];
      i = (i + 1) & (slots_.size() - 1);
    }
    return kNil;
  }
  // Inserts or lowers; returns the node's index when it is new or improved, else kNil.
  std::uint32_t relax(Key key, std::uint64_t g, std::uint32_t parent) {
    if ((nodes_.size() + 1) * 2 > slots_.size()) grow();
    std::size_t i = hash(key) & (slots_.size() - 1);
    while (slots_[i] != kNil) {
      Node& nd = nodes_[slots_[i]];
      if (nd.key == key) {
        if (g >= nd.g) return kNil;
        nd.g = g;
        nd.parent = parent;
        return slots_[i];
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back({key, g, parent});
    return slots_[i];
  }
  const Node& node(std::uint32_t i) const { return nodes_[i]; }
  std::size_t size() const { return nodes_.size(); }

 private:
  static std::size_t hash(Key k) {
    std::uint64_t x = static_cast<std::uint64_t>(k) ^ (static_cast<std::uint64_t>(k >> 64) * 0x9e3779b97f4a7c15ull);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return static_cast<std::size_t>(x);
  }
  void grow() {
    std::vector<std::uint32_t> fresh(slots_.size() * 2, kNil);
    for (std::uint32_t idx = 0; idx < nodes_.size(); ++idx) {
      std::size_t i = hash(nodes_[idx].key) & (fresh.size() - 1);
      while (fresh[i] != kNil) i = (i + 1) & (fresh.size() - 1);
      fresh[i] = idx;
    }
    slots_.swap(fresh);
  }
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> slots_;
};

int pop(unsigned m) { return std::popcount(m); }
bool inside(unsigned a, unsigned b) { return (a & ~b) == 0; }

// Binary operations tabulated over value pairs.
enum BinOp { kOpMax, kOpSub, kOpAdd, kOpMul, kOpDiv, kBinOps };
constexpr isa::Opcode kBinOpcode[kBinOps] = {isa::Opcode::MAX, isa::Opcode::SUB, isa::Opcode::ADD, isa::Opcode::MUL,
                                             isa::Opcode::DIV};

class SoftmaxEngine {
 public:
  explicit SoftmaxEngine(const SoftmaxSearch& p) : N(p.n), R(p.regs), p_(p) {
    if (N < 1 || N > kMaxN)
      throw SearchError("the softmax search handles n = 1.." + std::to_string(kMaxN) + " elements, not " + std::to_string(N));
    if (R < 1 || R > kMaxRegs)
      throw SearchError("the softmax search handles 1.." + std::to_string(kMaxRegs) + " registers, not " + std::to_string(R));
    all = (1u << N) - 1;
    build_values();
    build_ops();
    build_symmetries();
  }

  int symmetries() const { return static_cast<int>(vmap_.size()); }
  int values() const { return static_cast<int>(val_.size()) - 1; }

  std::uint64_t pack(std::uint64_t cycles, std::uint64_t loads) const {
    return p_.objective == SoftmaxSearch::Objective::Cycles ? (cycles << 24) | loads : (loads << 40) | cycles;
  }
  std::uint64_t cycles_of(std::uint64_t c) const {
    return p_.objective == SoftmaxSearch::Objective::Cycles ? c >> 24 : c & ((1ull << 40) - 1);
  }
  std::uint64_t loads_of(std::uint64_t c) const {
    return p_.objective == SoftmaxSearch::Objective::Cycles ? c & ((1ull << 24) - 1) : c >> 40;
  }
  std::uint64_t cost(isa::Opcode op) const { return p_.cycles[static_cast<std::size_t>(op)]; }

  // --- value ids ---
  int term(int i, unsigned ref) const { return sum_id_[1u << i][ref]; }  // e^(x_i - m(ref))
  int total() const { return sum_id_[all][all]; }                        // S = s(all|all)

  bool goal(const State& s) const {
    for (int i = 0; i < N; ++i)
      if (s.cell[i] != kFinal) return false;
    return true;
  }

  // Values that can no longer matter become empty: an output already stored, a second copy
  // of a value, and, once every missing output's numerator and the sum S sit in registers,
  // everything else (what remains is DIVs and STOREs).
  void normalize(State& s) const {
    for (int r = 0; r < R; ++r) {
      int v = s.reg[r];
      if (v && val_[v].kind == kOut && s.cell[val_[v].a] == kFinal) s.reg[r] = 0;
      for (int q = 0; q < r && s.reg[r]; ++q)
        if (s.reg[q] == s.reg[r]) s.reg[r] = 0;
    }
    bool inreg[256] = {};
    for (int r = 0; r < R; ++r) inreg[s.reg[r]] = true;
    bool keep[256] = {};
    unsigned missing = 0;
    for (int i = 0; i < N; ++i)
      if (s.cell[i] != kFinal) {
        keep[out_id_[i]] = true;
        if (!inreg[out_id_[i]]) missing |= 1u << i;
      }
    bool ready = true;
    for (int i = 0; i < N; ++i)
      if (missing >> i & 1) {
        keep[term(i, all)] = true;
        ready = ready && inreg[term(i, all)];
      }
    if (missing) {
      keep[total()] = true;
      ready = ready && inreg[total()];
    }
    if (!ready) return;
    for (int r = 0; r < R; ++r)
      if (!keep[s.reg[r]]) s.reg[r] = 0;
    for (int i = 0; i < N; ++i)
      if (s.cell[i] != kFinal) s.cell[i] = 0;
  }

  Key encode(const std::array<std::uint8_t, kMaxRegs>& regs, const std::array<std::uint8_t, kMaxN>& cells) const {
    Key k = 0;
    for (int r = 0; r < R; ++r) k = (k << 8) | regs[r];
    for (int i = 0; i < N; ++i) k = (k << 8) | cells[i];
    return k;
  }
  State decode(Key k) const {
    State s;
    for (int i = N - 1; i >= 0; --i) {
      s.cell[i] = static_cast<std::uint8_t>(k & 0xff);
      k >>= 8;
    }
    for (int r = R - 1; r >= 0; --r) {
      s.reg[r] = static_cast<std::uint8_t>(k & 0xff);
      k >>= 8;
    }
    return s;
  }

  // How index i appears in a state, summed over registers and cells so that it does not
  // depend on their order; a permutation of the indices carries it along with i.
  std::array<std::uint64_t, kMaxN> signatures(const State& s) const {
    std::array<std::uint64_t, kMaxN> sig{};
    auto mix = [](std::uint64_t x) {
      x ^= x >> 31;
      x *= 0x7fb5d329728ea185ull;
      x ^= x >> 27;
      x *= 0x81dadef4bc2dd44dull;
      return x ^ (x >> 33);
    };
    auto feature = [&](int v, int i, std::uint64_t place) {
      const Value& x = val_[v];
      std::uint64_t f = place << 20 | std::uint64_t{x.kind} << 12;
      if (x.kind == kOut) f |= x.a == i ? 1 : 0;  // a is an index here, not a set
      else f |= std::uint64_t(pop(x.a)) << 8 | std::uint64_t(pop(x.b)) << 4 | (x.a >> i & 1) << 1 | (x.b >> i & 1);
      return mix(f);
    };
    for (int i = 0; i < N; ++i) {
      std::uint64_t h = 0;
      for (int r = 0; r < R; ++r)
        if (s.reg[r]) h += feature(s.reg[r], i, 1);
      for (int j = 0; j < N; ++j) {
        if (s.cell[j] == kFinal) h += mix((j == i ? 2u : 3u) << 28);
        else if (s.cell[j]) h += feature(s.cell[j], i, j == i ? 4 : 5);
      }
      sig[i] = h;
    }
    return sig;
  }

  // The smallest encoding over register orders and index permutations. Only permutations
  // that sort the indices by signature can reach it, so the others are skipped; the set
  // they form moves with the state, so the minimum is the same for every image of it.
  Key canonical(const State& s) const {
    Key best = ~Key{0};
    std::array<std::uint8_t, kMaxRegs> regs{};
    std::array<std::uint8_t, kMaxN> cells{};
    std::size_t gcount = p_.use_symmetry ? vmap_.size() : 1;
    std::array<std::uint64_t, kMaxN> sig{};
    if (gcount > 1) sig = signatures(s);
    for (std::size_t g = 0; g < gcount; ++g) {
      const auto& pi = perm_[g];
      bool sorted = true;
      for (int i = 0; i < N && sorted; ++i)
        for (int j = 0; j < N && sorted; ++j) sorted = !(sig[i] < sig[j] && pi[i] > pi[j]);
      if (!sorted) continue;
      const auto& vm = vmap_[g];
      for (int r = 0; r < R; ++r) regs[r] = vm[s.reg[r]];
      std::sort(regs.begin(), regs.begin() + R);
      for (int i = 0; i < N; ++i) cells[perm_[g][i]] = vm[s.cell[i]];
      best = std::min(best, encode(regs, cells));
    }
    return best;
  }

  // A lower bound on the remaining (cycles, LOADs). Each counted instruction produces a
  // different value, so none is counted twice:
  //   a STORE per output not stored, a DIV per output not in a register;
  //   per missing numerator e^(x_i - m): an EXP or MUL (or a LOAD of its spill), and a SUB
  //     when no value yet carries x_i's own term (m({i}) - m(B) or e^(x_i - m(B)));
  //   for the sum S when nothing holds it: ADDs to join the pieces that exist and one new term
  //     (EXP, and SUB as above) per index no partial sum covers;
  //   when no value refers to the global max yet: the MAXes that build m(all) from pieces of
  //     at most t elements (a tree of k MAXes joins at most k + 1 pieces) and one SUB;
  //   one LOAD per x_j that some still-missing value depends on and no value present does.
  std::uint64_t bound(const State& s) const {
    bool inreg[256] = {}, indram[256] = {};
    for (int r = 0; r < R; ++r) inreg[s.reg[r]] = true;
    for (int i = 0; i < N; ++i)
      if (s.cell[i] != kFinal) indram[s.cell[i]] = true;
    inreg[0] = indram[0] = false;
    std::uint64_t cyc = 0, loads = 0;
    unsigned missing = 0;
    for (int i = 0; i < N; ++i)
      if (s.cell[i] != kFinal) {
        cyc += cost(isa::Opcode::STORE);
        if (!inreg[out_id_[i]]) missing |= 1u << i;
      }
    if (!missing) return pack(cyc, 0);
    cyc += static_cast<std::uint64_t>(pop(missing)) * cost(isa::Opcode::DIV);

    // What the present values (registers and spills) already provide.
    unsigned own_term = 0, covered = 0, depends = 0;
    int widest_max = 1;
    bool refers_to_all = false;
    for (int v = 1; v < static_cast<int>(val_.size()); ++v) {
      if (!inreg[v] && !indram[v]) continue;
      const Value& x = val_[v];
      switch (x.kind) {
        case kMax:
          widest_max = std::max(widest_max, pop(x.a));
          depends |= x.a;
          refers_to_all |= x.a == all;
          break;
        case kDiff:
          if (pop(x.a) == 1) own_term |= x.a;
          depends |= x.b;
          refers_to_all |= x.b == all;
          break;
        case kSum:
          if (pop(x.a) == 1) own_term |= x.a;
          covered |= x.a;
          depends |= x.b;
          refers_to_all |= x.b == all;
          break;
        case kScale:
          depends |= x.b;
          refers_to_all |= x.b == all;
          break;
        case kZero:
        case kOne:  // n = 1 only: 0 = m({0}) - m({0}), 1 = s({0}|{0})
          own_term |= 1;
          covered |= x.kind == kOne ? 1u : 0u;
          depends |= 1;
          refers_to_all = true;
          break;
        default:
          break;
      }
    }
    const std::uint64_t make_term = p_.allow_rescale ? std::min(cost(isa::Opcode::EXP), cost(isa::Opcode::MUL)) : cost(isa::Opcode::EXP);
    std::uint64_t subs = 0;
    unsigned fresh_terms = 0;
    for (int i = 0; i < N; ++i) {
      if (!(missing >> i & 1)) continue;
      int v = term(i, all);
      if (inreg[v]) continue;
      if (indram[v]) {
        cyc += std::min(cost(isa::Opcode::LOAD), make_term);
        continue;
      }
      fresh_terms |= 1u << i;
      cyc += make_term;
      if (!(own_term >> i & 1)) ++subs;
    }
    bool fresh_sum = false;
    if (N >= 2 && !inreg[total()]) {
      if (indram[total()]) {
        cyc += std::min(cost(isa::Opcode::LOAD), cost(isa::Opcode::ADD));
      } else {
        fresh_sum = true;
        unsigned uncovered = all & ~covered;
        int pieces = pop(uncovered) + (covered ? 1 : 0);
        cyc += static_cast<std::uint64_t>(std::max(1, pieces - 1)) * cost(isa::Opcode::ADD);
        for (int j = 0; j < N; ++j)
          if ((uncovered >> j & 1) && !(fresh_terms >> j & 1)) {
            cyc += cost(isa::Opcode::EXP);
            if (!(own_term >> j & 1)) ++subs;
          }
      }
    }
    bool needs_global = fresh_terms || fresh_sum;
    if (needs_global && N >= 2 && !refers_to_all) {
      int maxes = (N + widest_max - 1) / widest_max - 1;
      cyc += static_cast<std::uint64_t>(maxes) * cost(isa::Opcode::MAX);
      subs = std::max<std::uint64_t>(subs, 1);
    }
    cyc += subs * cost(isa::Opcode::SUB);
    if (needs_global) {
      loads = static_cast<std::uint64_t>(pop(all & ~depends));
      cyc += loads * cost(isa::Opcode::LOAD);
    }
    return pack(cyc, loads);
  }

  void moves(const State& s, std::vector<Move>& out) const {
    out.clear();
    int where[256];
    std::fill(where, where + 256, -1);
    int first_empty = -1;
    for (int r = 0; r < R; ++r) {
      if (s.reg[r]) where[s.reg[r]] = r;
      else if (first_empty < 0) first_empty = r;
    }
    bool in_cell[256] = {};
    for (int i = 0; i < N; ++i)
      if (s.cell[i] != kFinal) in_cell[s.cell[i]] = true;
    // With a free register, writing any other one only loses a value.
    auto emit = [&](Move mv, int value) {
      mv.value = value;
      auto put = [&](int t) {
        mv.rd = t;
        mv.next = s;
        mv.next.reg[t] = static_cast<std::uint8_t>(value);
        normalize(mv.next);
        out.push_back(mv);
      };
      if (first_empty >= 0) put(first_empty);
      else
        for (int r = 0; r < R; ++r) put(r);
    };
    const std::uint64_t load_cost = pack(cost(isa::Opcode::LOAD), 1);

    for (int i = 0; i < N; ++i) {
      int v = max_id_[1u << i];
      if (where[v] >= 0) continue;
      Move mv;
      mv.op = isa::Opcode::LOAD;
      mv.mem = Mem::X;
      mv.index = i;
      mv.cost = load_cost;
      emit(mv, v);
    }
    for (int i = 0; i < N; ++i) {
      int v = s.cell[i];
      if (!v || v == kFinal || where[v] >= 0) continue;
      Move mv;
      mv.op = isa::Opcode::LOAD;
      mv.mem = Mem::Out;
      mv.index = i;
      mv.cost = load_cost;
      emit(mv, v);
    }
    for (int r = 0; r < R; ++r) {
      int v = exp_of_[s.reg[r]];
      if (!v || where[v] >= 0) continue;
      Move mv;
      mv.op = isa::Opcode::EXP;
      mv.ra = r;
      mv.cost = pack(cost(isa::Opcode::EXP), 0);
      emit(mv, v);
    }
    const std::size_t nv = val_.size();
    for (int op = 0; op < kBinOps; ++op) {
      const auto& table = bin_[op];
      for (int ra = 0; ra < R; ++ra) {
        if (!s.reg[ra]) continue;
        for (int rb = 0; rb < R; ++rb) {
          if (!s.reg[rb]) continue;
          int v = table[s.reg[ra] * nv + s.reg[rb]];
          if (!v || where[v] >= 0) continue;
          // MAX, ADD and MUL commute: one operand order is enough.
          if ((op == kOpMax || op == kOpAdd || op == kOpMul) && rb < ra) continue;
          Move mv;
          mv.op = kBinOpcode[op];
          mv.ra = ra;
          mv.rb = rb;
          mv.cost = pack(cost(mv.op), 0);
          emit(mv, v);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      int v = s.reg[r];
      if (!v) continue;
      Move mv;
      mv.op = isa::Opcode::STORE;
      mv.ra = r;
      mv.mem = Mem::Out;
      mv.cost = pack(cost(isa::Opcode::STORE), 0);
      if (val_[v].kind == kOut) {
        mv.index = val_[v].a;
        mv.next = s;
        mv.next.cell[mv.index] = kFinal;
        normalize(mv.next);
        out.push_back(mv);
        continue;
      }
      // A spill: x is in DRAM already, and a second copy of a spilled value gains nothing.
      if (!p_.allow_spills || (val_[v].kind == kMax && pop(val_[v].a) == 1) || in_cell[v]) continue;
      for (int i = 0; i < N; ++i) {
        if (s.cell[i] == kFinal) continue;
        mv.index = i;
        mv.next = s;
        mv.next.cell[i] = static_cast<std::uint8_t>(v);
        normalize(mv.next);
        out.push_back(mv);
      }
    }
  }

  std::string set_digits(unsigned m) const {
    std::string s;
    for (int i = 0; i < N; ++i)
      if (m >> i & 1) s += std::to_string(i);
    return s;
  }
  // m is the global max; m012 the max over x0, x1, x2.
  std::string max_name(unsigned m) const {
    if (pop(m) == 1) return "x" + set_digits(m);
    return m == all ? "m" : "m" + set_digits(m);
  }
  std::string describe(int v) const {
    const Value& x = val_[v];
    switch (x.kind) {
      case kMax: return max_name(x.a);
      case kZero: return "0";
      case kOne: return "1";
      case kDiff: return max_name(x.a) + " - " + max_name(x.b);
      case kScale: return "e^(" + max_name(x.a) + " - " + max_name(x.b) + ")";
      case kSum:
        if (pop(x.a) == 1) return "e^(" + max_name(x.a) + " - " + max_name(x.b) + ")";
        if (x.a == all && x.b == all) return "S = sum_i e^(x_i - m)";
        return "sum_{i in " + set_digits(x.a) + "} e^(x_i - " + max_name(x.b) + ")";
      case kOut: return "softmax_" + std::to_string(x.a);
      default: return "";
    }
  }

  std::string instruction_text(const Move& mv) const {
    auto reg = [](int r) { return "R" + std::to_string(r); };
    std::string mem = mv.mem == Mem::X ? "x[" + std::to_string(mv.index) + "]" : "out[" + std::to_string(mv.index) + "]";
    switch (mv.op) {
      case isa::Opcode::LOAD: return "LOAD " + mem + ", " + reg(mv.rd);
      case isa::Opcode::STORE: return "STORE " + reg(mv.ra) + ", " + mem;
      case isa::Opcode::EXP: return "EXP " + reg(mv.ra) + ", " + reg(mv.rd);
      default:
        return std::string(isa::info(mv.op).mnemonic) + " " + reg(mv.ra) + ", " + reg(mv.rb) + ", " + reg(mv.rd);
    }
  }

  const Value& value(int v) const { return val_[v]; }
  int out_id(int i) const { return out_id_[i]; }

  const int N, R;
  unsigned all = 0;

 private:
  int add_value(Kind k, unsigned a, unsigned b) {
    if (val_.size() >= kFinal) throw SearchError("internal error: too many values for a byte");
    val_.push_back({k, static_cast<std::uint8_t>(a), static_cast<std::uint8_t>(b)});
    return static_cast<int>(val_.size()) - 1;
  }

  void build_values() {
    val_.assign(1, Value{});  // id 0: empty register / nothing in a cell
    for (unsigned t = 1; t <= all; ++t) max_id_[t] = add_value(kMax, t, 0);
    if (N == 1) zero_id_ = add_value(kZero, 0, 0);
    for (unsigned b = 1; b <= all; ++b)
      for (unsigned a = 1; a <= all; ++a)
        if (inside(a, b) && a != b) diff_id_[a][b] = add_value(kDiff, a, b);
    if (N == 1) one_id_ = add_value(kOne, 0, 0);
    for (unsigned b = 1; b <= all; ++b)
      for (unsigned a = 1; a <= all; ++a) {
        if (!inside(a, b)) continue;
        // s({i}|{i}) = e^0 = 1: the constant, useful only when n = 1.
        if (a == b && pop(a) == 1) sum_id_[a][b] = N == 1 ? one_id_ : 0;
        else sum_id_[a][b] = add_value(kSum, a, b);
      }
    for (unsigned b = 1; b <= all; ++b)
      for (unsigned a = 1; a <= all; ++a)
        if (inside(a, b) && a != b && pop(a) >= 2) scale_id_[a][b] = add_value(kScale, a, b);
    for (int i = 0; i < N; ++i) out_id_[i] = add_value(kOut, static_cast<unsigned>(i), 0);
  }

  // e^(m(a) - m(b)) in the algebra's canonical form.
  int exp_value(unsigned a, unsigned b) const {
    if (a == b) return one_id_;  // 0 unless n = 1
    return pop(a) == 1 ? sum_id_[a][b] : scale_id_[a][b];
  }

  void build_ops() {
    const std::size_t nv = val_.size();
    exp_of_.assign(256, 0);
    for (auto& t : bin_) t.assign(nv * nv, 0);
    for (std::size_t v = 1; v < nv; ++v) {
      const Value& x = val_[v];
      if (x.kind == kDiff) exp_of_[v] = static_cast<std::uint8_t>(exp_value(x.a, x.b));
      if (x.kind == kZero) exp_of_[v] = static_cast<std::uint8_t>(one_id_);
    }
    for (std::size_t u = 1; u < nv; ++u)
      for (std::size_t v = 1; v < nv; ++v) {
        const Value &x = val_[u], &y = val_[v];
        auto set = [&](BinOp op, int w) { bin_[op][u * nv + v] = static_cast<std::uint8_t>(w); };
        if (x.kind == kMax && y.kind == kMax) {
          int w = max_id_[x.a | y.a];
          if (w != static_cast<int>(u) && w != static_cast<int>(v)) set(kOpMax, w);
          if (inside(x.a, y.a)) set(kOpSub, x.a == y.a ? zero_id_ : diff_id_[x.a][y.a]);
        }
        if (x.kind == kSum && y.kind == kSum && x.b == y.b && !(x.a & y.a)) set(kOpAdd, sum_id_[x.a | y.a][x.b]);
        if (p_.allow_rescale && y.kind == kScale) {
          if (x.kind == kSum && x.b == y.a) set(kOpMul, sum_id_[x.a][y.b]);
          if (x.kind == kScale && x.b == y.a) set(kOpMul, scale_id_[x.a][y.b]);
        }
        if (p_.allow_rescale && x.kind == kScale) {
          if (y.kind == kSum && y.b == x.a) set(kOpMul, sum_id_[y.a][x.b]);
          if (y.kind == kScale && y.b == x.a) set(kOpMul, scale_id_[y.a][x.b]);
        }
        if (static_cast<int>(v) == total())
          for (int i = 0; i < N; ++i)
            if (static_cast<int>(u) == term(i, all)) set(kOpDiv, out_id_[i]);
      }
  }

  // Permuting the indices of x (and of out alike) maps programs to programs of equal cost.
  void build_symmetries() {
    std::array<int, kMaxN> pi{};
    std::iota(pi.begin(), pi.begin() + N, 0);
    do {
      auto pm = [&](unsigned m) {
        unsigned r = 0;
        for (int i = 0; i < N; ++i)
          if (m >> i & 1) r |= 1u << pi[i];
        return r;
      };
      std::array<std::uint8_t, 256> vm{};
      for (std::size_t v = 1; v < val_.size(); ++v) {
        const Value& x = val_[v];
        int w = 0;
        switch (x.kind) {
          case kMax: w = max_id_[pm(x.a)]; break;
          case kDiff: w = diff_id_[pm(x.a)][pm(x.b)]; break;
          case kSum: w = sum_id_[pm(x.a)][pm(x.b)]; break;
          case kScale: w = scale_id_[pm(x.a)][pm(x.b)]; break;
          case kOut: w = out_id_[pi[x.a]]; break;
          default: w = static_cast<int>(v); break;
        }
        vm[v] = static_cast<std::uint8_t>(w);
      }
      vm[kFinal] = kFinal;
      vmap_.push_back(vm);
      perm_.push_back(pi);
    } while (p_.use_symmetry && std::next_permutation(pi.begin(), pi.begin() + N));
  }

  SoftmaxSearch p_;
  std::vector<Value> val_;
  int max_id_[16] = {}, diff_id_[16][16] = {}, sum_id_[16][16] = {}, scale_id_[16][16] = {}, out_id_[kMaxN] = {};
  int zero_id_ = 0, one_id_ = 0;
  std::vector<std::uint8_t> exp_of_;
  std::array<std::vector<std::uint8_t>, kBinOps> bin_;
  std::vector<std::array<std::uint8_t, 256>> vmap_;
  std::vector<std::array<int, kMaxN>> perm_;
};

}  // namespace

SoftmaxSchedule optimize_softmax(const SoftmaxSearch& problem) {
  auto t0 = std::chrono::steady_clock::now();
  SoftmaxEngine e(problem);
  SoftmaxSchedule result;
  result.stats.symmetries = e.symmetries();

  State start;
  std::uint64_t h0 = e.bound(start);
  result.start_bound_cycles = e.cycles_of(h0);
  result.start_bound_loads = e.loads_of(h0);
  Key start_key = e.canonical(start);

  struct Open {
    std::uint64_t f, g;
    std::uint32_t node;
    bool operator>(const Open& o) const { return f != o.f ? f > o.f : g < o.g; }  // deeper first on ties
  };
  std::priority_queue<Open, std::vector<Open>, std::greater<Open>> open;
  NodeTable table;
  std::uint32_t start_node = table.relax(start_key, 0, NodeTable::kNil);
  open.push({h0, 0, start_node});
  std::vector<Move> mv;
  std::uint32_t goal_node = NodeTable::kNil;
  const bool by_loads = problem.objective == SoftmaxSearch::Objective::Loads;
  SearchWatch watch(problem.limits, by_loads ? "LOADs" : "cycles");
  while (!open.empty()) {
    Open cur = open.top();
    open.pop();
    const auto& nd = table.node(cur.node);
    if (nd.g < cur.g) continue;  // reached more cheaply after this entry was queued
    State s = e.decode(nd.key);
    if (e.goal(s)) {
      goal_node = cur.node;
      break;
    }
    ++result.stats.expanded;
    e.moves(s, mv);
    for (const auto& m : mv) {
      std::uint64_t g = cur.g + m.cost;
      std::uint32_t idx = table.relax(e.canonical(m.next), g, cur.node);
      if (idx != NodeTable::kNil) open.push({g + e.bound(m.next), g, idx});
    }
    // Nodes leave the open list in order of cost plus an admissible bound, so cur.f is proven.
    watch.tick(result.stats.expanded, table.size(), by_loads ? e.loads_of(cur.f) : e.cycles_of(cur.f), problem.max_states);
  }
  result.stats.stored = table.size();
  result.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (goal_node == NodeTable::kNil) {
    std::string why = problem.allow_spills ? "" : " without spills";
    throw NoProgramError("no program computes the softmax of n = " + std::to_string(problem.n) + " on " +
                      std::to_string(problem.regs) + (problem.regs == 1 ? " register" : " registers") + why +
                      ": the search exhausted all " + std::to_string(result.stats.stored) + " reachable states",
                         result.stats.stored);
  }

  // The canonical path, then a concrete trace that follows it register by register.
  std::vector<std::uint32_t> path{goal_node};
  while (path.back() != start_node) path.push_back(table.node(path.back()).parent);
  std::reverse(path.begin(), path.end());

  const int n = problem.n;
  std::ostringstream body;
  result.x_reads.assign(static_cast<std::size_t>(n), 0);
  State s = start;
  for (std::size_t t = 0; t + 1 < path.size(); ++t) {
    std::uint64_t g_here = table.node(path[t]).g, g_next = table.node(path[t + 1]).g;
    Key want = table.node(path[t + 1]).key;
    e.moves(s, mv);
    const Move* pick = nullptr;
    for (const auto& m : mv)
      if (g_here + m.cost == g_next && e.canonical(m.next) == want) {
        pick = &m;
        break;
      }
    if (!pick) throw SearchError("internal error: the optimal path could not be replayed");
    std::string line = e.instruction_text(*pick);
    std::string note;
    ++result.per_op[static_cast<std::size_t>(pick->op)];
    switch (pick->op) {
      case isa::Opcode::LOAD:
        ++result.loads;
        if (pick->mem == Mem::X) {
          ++result.x_loads;
          ++result.x_reads[static_cast<std::size_t>(pick->index)];
        } else {
          ++result.spill_loads;
          note = "reload " + e.describe(s.cell[pick->index]);
        }
        break;
      case isa::Opcode::STORE:
        ++result.stores;
        if (e.value(s.reg[pick->ra]).kind != kOut) {
          ++result.spill_stores;
          note = "spill " + e.describe(s.reg[pick->ra]);
        }
        break;
      case isa::Opcode::MUL: result.rescales = true; break;
      default: break;
    }
    if (note.empty() && pick->op != isa::Opcode::STORE) note = "R" + std::to_string(pick->rd) + " = " + e.describe(pick->value);
    line.resize(std::max<std::size_t>(line.size(), 24), ' ');
    body << line << (note.empty() ? "" : "# " + note) << "\n";
    s = pick->next;
  }
  std::uint64_t g = table.node(goal_node).g;
  result.cycles = e.cycles_of(g);
  if (e.loads_of(g) != result.loads) throw SearchError("internal error: the replayed trace's LOADs differ from the search's");

  std::ostringstream text;
  auto plural = [](std::uint64_t k, const char* what) { return std::to_string(k) + " " + what + (k == 1 ? "" : "s"); };
  text << "# Safe softmax of n = " << n << " on " << plural(static_cast<std::uint64_t>(problem.regs), "register")
       << ": an optimal trace found by\n"
       << "# exhaustive search (flashsim optimize softmax), minimum "
       << (problem.objective == SoftmaxSearch::Objective::Cycles ? "cycles, then LOADs" : "LOADs, then cycles") << ".\n"
       << "# " << result.cycles << " cycles, " << plural(result.loads, "LOAD") << " (" << result.x_loads << " of x, "
       << result.spill_loads << " of spills); the bound before searching was " << result.start_bound_cycles
       << " cycles, " << result.start_bound_loads << " LOADs.\n";
  text << ".regs " << problem.regs << "\n.array x[" << n << "]\n.array out[" << n << "]\n" << body.str();
  result.trace = text.str();
  result.program = isa::assemble(result.trace, "optimal-softmax.fsa");
  result.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

SoftmaxVerification verify_softmax_trace(const isa::Program& program, int n) {
  auto x_id = program.find_array("x");
  auto out_id = program.find_array("out");
  if (!x_id || !out_id) throw SearchError("the trace has no x or out array");
  std::vector<std::vector<double>> inputs;
  std::mt19937_64 rng(20261122);
  std::uniform_real_distribution<double> uni(-4.0, 4.0);
  for (int t = 0; t < 4; ++t) {
    std::vector<double> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = static_cast<float>(uni(rng));  // exact in float32 too
    inputs.push_back(x);
  }
  std::vector<double> big(static_cast<std::size_t>(n)), huge(static_cast<std::size_t>(n)), neg(static_cast<std::size_t>(n)),
      same(static_cast<std::size_t>(n), 7.0), tie(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    big[static_cast<std::size_t>(i)] = 90.0 + 10.0 * i;  // e^x alone overflows float32 from 88.7
    huge[static_cast<std::size_t>(i)] = 1000.0 - 3.0 * i;
    neg[static_cast<std::size_t>(i)] = -1000.0 + 2.0 * i;
    tie[static_cast<std::size_t>(i)] = (i % 2 == 0) ? 3.0 : 1.5 * i;  // repeated maxima
  }
  for (auto* v : {&big, &huge, &neg, &same, &tie}) inputs.push_back(*v);

  SoftmaxVerification result;
  for (const auto& x : inputs) {
    double mx = *std::max_element(x.begin(), x.end()), sum = 0;
    for (double v : x) sum += std::exp(v - mx);
    for (bool f64 : {true, false}) {
      MachineOptions o;
      o.f64 = f64;
      o.history = false;
      o.inputs["x"] = x;
      Machine m(program, o);
      m.run();
      const auto& got = m.array(*out_id).values;
      if (result.trials == 0) {
        result.reads = m.counters().elem_reads;
        result.writes = m.counters().elem_writes;
      }
      ++result.trials;
      for (int i = 0; i < n; ++i) {
        double want = std::exp(x[static_cast<std::size_t>(i)] - mx) / sum;
        double g = got[static_cast<std::size_t>(i)];
        double err = std::abs(g - want) / want;
        double tol = f64 ? 1e-12 : 1e-5;
        if (!(err <= tol)) {
          std::ostringstream msg;
          msg << "the trace computes out[" << i << "] = " << g << " instead of " << want << " (" << (f64 ? "float64" : "float32")
              << ", x =";
          for (double v : x) msg << " " << v;
          msg << ")";
          throw SearchError(msg.str());
        }
        if (f64) result.max_rel_error = std::max(result.max_rel_error, err);
      }
    }
  }
  return result;
}

}  // namespace flashsim::sim

#include "sim/tile/schedules.h"

#include "sim/split_tail.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>

namespace flashsim::tile {

using isa::Opcode;
using isa::Operand;
using namespace flashsim::traffic;

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Reg {
  int r;
  bool t = false;  // transposed source (Rn^T)
};
Reg T(int r) { return Reg{r, true}; }

// Builds a Program directly (no text), which keeps generation fast for long traces.
class Builder {
 public:
  explicit Builder(std::string name) { p_.name = std::move(name); }

  void configure(int elem_bytes, std::uint64_t sram, std::optional<std::int64_t> causal) {
    p_.config.elem_bytes = elem_bytes;
    p_.config.f64 = true;  // values are checked against float64 references
    if (sram) p_.config.sram_bytes = sram;
    p_.config.causal_diag = causal;
  }
  void stream_to(const ChunkSink* sink, std::size_t min_chunk) {
    sink_ = sink;
    min_chunk_ = min_chunk;
    p_.code.reserve(min_chunk + 4096);
  }
  // A point where no register value is live: a streaming builder may hand the code over here.
  void boundary() {
    if (sink_ && p_.code.size() >= min_chunk_) flush();
  }
  // A GPU thread block starts at the next instruction (see BlockStart); only streaming keeps it.
  void begin_block(std::uint64_t launch, std::uint64_t order) {
    if (sink_) blocks_.push_back(BlockStart{p_.code.size(), launch, order});
  }

  std::uint32_t array(const std::string& name, int rank, std::int64_t rows, std::int64_t cols, std::int64_t tr,
                      std::int64_t tc, int elem) {
    isa::ArrayDecl a;
    a.name = name;
    a.rank = rank;
    a.rows = rows;
    a.cols = cols;
    a.tile_rows = tr;
    a.tile_cols = tc;
    a.elem_bytes = elem;
    a.declared = true;
    p_.arrays.push_back(std::move(a));
    return static_cast<std::uint32_t>(p_.arrays.size() - 1);
  }
  void fill(std::uint32_t a, double v) { p_.arrays[a].fill = v; }

  void load(std::uint32_t a, std::int64_t row, std::int64_t col, int reg) {
    isa::Instruction& in = p_.code.emplace_back();
    in.op = Opcode::LOAD;
    in.set_operand(0, mem(a, row, col));
    in.set_operand(1, regop(Reg{reg}));
  }
  void store(int reg, std::uint32_t a, std::int64_t row, std::int64_t col) {
    isa::Instruction& in = p_.code.emplace_back();
    in.op = Opcode::STORE;
    in.set_operand(0, regop(Reg{reg}));
    in.set_operand(1, mem(a, row, col));
  }
  void op(Opcode o, std::initializer_list<Reg> regs) {
    isa::Instruction& in = p_.code.emplace_back();
    in.op = o;
    int k = 0;
    for (Reg r : regs) in.set_operand(k++, regop(r));
  }
  void reserve(std::size_t n) {
    if (!sink_) p_.code.reserve(n);
  }

  isa::Program finish() {
    p_.config.regs = highest_ + 1;
    p_.highest_reg = highest_;
    if (sink_ && !p_.code.empty()) flush();
    return std::move(p_);
  }

 private:
  Operand regop(Reg r) {
    highest_ = std::max(highest_, r.r);
    Operand o;
    o.kind = Operand::Kind::Reg;
    o.reg = static_cast<std::uint16_t>(r.r);
    o.transposed = r.t;
    return o;
  }
  static Operand mem(std::uint32_t a, std::int64_t row, std::int64_t col) {
    Operand o;
    o.kind = Operand::Kind::Mem;
    o.array = a;
    o.row = row;
    o.col = col;
    return o;
  }
  void flush() {
    p_.config.regs = highest_ + 1;
    (*sink_)(p_.arrays, p_.config, p_.code, blocks_);
    p_.code.clear();
    blocks_.clear();
  }
  isa::Program p_;
  int highest_ = 0;
  const ChunkSink* sink_ = nullptr;
  std::size_t min_chunk_ = 0;
  std::vector<BlockStart> blocks_;
};

// Register roles shared by the attention schedules.
enum : int {
  rQ = 0, rK = 1, rV = 2, rS = 3, rP = 4, rM = 5, rL = 6, rO = 7, rMnew = 8, rAlpha = 9, rTmp = 10,
  rdO = 11, rProd = 12, rD = 13, rdV = 14, rdK = 15, rdQ = 16, rdP = 17
};

}  // namespace

std::string head_array(const std::string& base, std::int64_t h, std::int64_t heads) {
  return heads == 1 ? base : base + "_h" + std::to_string(h);
}

std::int64_t kv_length(const AttentionParams& p) { return p.n_kv > 0 ? p.n_kv : p.n; }

static void check_bytes(int b, const char* what) {
  if (b != 1 && b != 2 && b != 4 && b != 8)
    throw std::invalid_argument(std::string(what) + " must be 1, 2, 4 or 8 bytes, got " + std::to_string(b));
}
static void check_positive(std::int64_t v, const char* what) {
  if (v <= 0) throw std::invalid_argument(std::string(what) + " must be positive, got " + std::to_string(v));
}

void validate(const AttentionParams& p) {
  check_positive(p.batch_heads, "batch*heads");
  check_positive(p.n, "N");
  check_positive(p.d, "d");
  check_positive(p.br, "Br");
  check_positive(p.bc, "Bc");
  if (p.n_kv < 0) throw std::invalid_argument("N_kv must not be negative");
  for (auto [b, w] : {std::pair{p.elem_bytes, "element size"}, std::pair{p.score_bytes, "score element size"},
                      std::pair{p.stat_bytes, "statistics element size"}, std::pair{p.accum_bytes, "accumulator element size"}})
    check_bytes(b, w);
  if (p.out_bytes != 0) check_bytes(p.out_bytes, "output element size");
}
void validate(const MatmulParams& p) {
  check_positive(p.m, "M");
  check_positive(p.n, "N");
  check_positive(p.k, "K");
  check_positive(p.bm, "BM");
  check_positive(p.bn, "BN");
  check_positive(p.bk, "BK");
  if (p.k_chunk < 0) throw std::invalid_argument("k_chunk must not be negative");
  if (p.c_strip_rows < 0 || (p.c_strip_rows > 0 && p.bm % p.c_strip_rows != 0))
    throw std::invalid_argument("the C strip rows (" + std::to_string(p.c_strip_rows) + ") must divide BM (" +
                                std::to_string(p.bm) + ")");
  check_bytes(p.in_bytes, "input element size");
  check_bytes(p.out_bytes, "output element size");
}
void validate(const SoftmaxParams& p) {
  check_positive(p.rows, "rows");
  check_positive(p.cols, "cols");
  check_positive(p.chunk, "chunk");
  check_bytes(p.elem_bytes, "element size");
}

std::string to_string(AttentionForward s) {
  switch (s) {
    case AttentionForward::Naive: return "naive";
    case AttentionForward::FA1: return "fa1";
    case AttentionForward::FA2: return "fa2";
  }
  return "?";
}
std::string to_string(AttentionBackward s) {
  switch (s) {
    case AttentionBackward::TwoPass: return "two-pass";
    case AttentionBackward::AtomicDQ: return "atomic-dq";
    case AttentionBackward::RowWise: return "row-wise";
    case AttentionBackward::RowWiseNoD: return "row-wise-no-d";
  }
  return "?";
}
std::string to_string(MatmulSchedule s) { return s == MatmulSchedule::Inner ? "inner" : "outer"; }
std::string to_string(SoftmaxSchedule s) { return s == SoftmaxSchedule::ThreePass ? "three-pass" : "online"; }

// ---- matmul -------------------------------------------------------------------------------

static isa::Program matmul_impl(const MatmulParams& p, MatmulSchedule s, const ChunkSink* sink, std::size_t min_chunk) {
  validate(p);
  const std::int64_t tm = ceil_div(p.m, p.bm), tn = ceil_div(p.n, p.bn), tk = ceil_div(p.k, p.bk);
  Builder b("matmul-" + to_string(s));
  b.configure(4, p.sram_bytes, std::nullopt);
  b.stream_to(sink, min_chunk);
  const bool strips = s == MatmulSchedule::Outer && p.c_strip_rows > 0 && p.c_strip_rows < p.bm;
  const std::int64_t row_tile = strips ? p.c_strip_rows : p.bm;  // A and C tiles' rows
  auto A = b.array("A", 2, p.m, p.k, row_tile, p.bk, p.in_bytes);
  auto B = b.array("B", 2, p.k, p.n, p.bk, p.bn, p.in_bytes);
  auto C = b.array("C", 2, p.m, p.n, row_tile, p.bn, p.out_bytes);
  enum : int { rB = 0, rC = 1, rA0 = 2 };
  if (s == MatmulSchedule::Inner) {
    b.reserve(static_cast<std::size_t>(tm * tn * (3 * tk + 1)));
    for (std::int64_t i = 0; i < tm; ++i)
      for (std::int64_t j = 0; j < tn; ++j) {
        b.boundary();
        b.begin_block(0, static_cast<std::uint64_t>(i * tn + j));
        for (std::int64_t k = 0; k < tk; ++k) {
          b.load(A, i, k, rA0);
          b.load(B, k, j, rB);
          if (k == 0) b.op(Opcode::MAC_Z, {{rA0}, {rB}, {rC}});
          else b.op(Opcode::MAC, {{rA0}, {rB}, {rC}, {rC}});
        }
        b.store(rC, C, i, j);
      }
  } else if (strips) {
    // Block (i, j) walks the strips i * spb ... of its bm rows, A's strips loaded once per i.
    const std::int64_t spb = p.bm / p.c_strip_rows, all_strips = ceil_div(p.m, p.c_strip_rows);
    const std::int64_t kc = std::min(tk, p.k_chunk > 0 ? p.k_chunk : 1);
    const int rS = 0, rB0 = 1, rAS = static_cast<int>(1 + kc);
    for (std::int64_t k0 = 0; k0 < tk; k0 += kc) {
      const std::int64_t k1 = std::min(tk, k0 + kc);
      for (std::int64_t i = 0; i < tm; ++i) {
        const std::int64_t s0 = i * spb, s1 = std::min(all_strips, s0 + spb);
        b.boundary();
        b.begin_block(static_cast<std::uint64_t>(k0 / kc), static_cast<std::uint64_t>(i * tn));
        for (std::int64_t st = s0; st < s1; ++st)
          for (std::int64_t k = k0; k < k1; ++k) b.load(A, st, k, static_cast<int>(rAS + (st - s0) * kc + (k - k0)));
        for (std::int64_t j = 0; j < tn; ++j) {
          if (j > 0) b.begin_block(static_cast<std::uint64_t>(k0 / kc), static_cast<std::uint64_t>(i * tn + j));
          for (std::int64_t k = k0; k < k1; ++k) b.load(B, k, j, static_cast<int>(rB0 + (k - k0)));
          for (std::int64_t st = s0; st < s1; ++st) {
            if (k0 > 0) b.load(C, st, j, rS);
            for (std::int64_t k = k0; k < k1; ++k) {
              const int ra = static_cast<int>(rAS + (st - s0) * kc + (k - k0)), rb = static_cast<int>(rB0 + (k - k0));
              if (k == 0) b.op(Opcode::MAC_Z, {{ra}, {rb}, {rS}});
              else b.op(Opcode::MAC, {{ra}, {rb}, {rS}, {rS}});
            }
            b.store(rS, C, st, j);
          }
        }
      }
    }
    return b.finish();
  } else {
    const std::int64_t kc = std::min(tk, p.k_chunk > 0 ? p.k_chunk : 1);
    for (std::int64_t k0 = 0; k0 < tk; k0 += kc) {
      const std::int64_t k1 = std::min(tk, k0 + kc);
      for (std::int64_t i = 0; i < tm; ++i) {
        b.boundary();
        // Each (i, j) block of the pass's launch loads the A tiles; the trace loads them once per i.
        b.begin_block(static_cast<std::uint64_t>(k0 / kc), static_cast<std::uint64_t>(i * tn));
        for (std::int64_t k = k0; k < k1; ++k) b.load(A, i, k, static_cast<int>(rA0 + (k - k0)));
        for (std::int64_t j = 0; j < tn; ++j) {
          if (j > 0) b.begin_block(static_cast<std::uint64_t>(k0 / kc), static_cast<std::uint64_t>(i * tn + j));
          if (k0 > 0) b.load(C, i, j, rC);  // the partial sum comes back from DRAM
          for (std::int64_t k = k0; k < k1; ++k) {
            int ra = static_cast<int>(rA0 + (k - k0));
            b.load(B, k, j, rB);
            if (k == 0) b.op(Opcode::MAC_Z, {{ra}, {rB}, {rC}});
            else b.op(Opcode::MAC, {{ra}, {rB}, {rC}, {rC}});
          }
          b.store(rC, C, i, j);
        }
      }
    }
  }
  return b.finish();
}
isa::Program matmul_program(const MatmulParams& p, MatmulSchedule s) { return matmul_impl(p, s, nullptr, 0); }
void stream_matmul(const MatmulParams& p, MatmulSchedule s, std::size_t min_chunk, const ChunkSink& sink) {
  matmul_impl(p, s, &sink, min_chunk);
}

// ---- softmax ------------------------------------------------------------------------------

static isa::Program softmax_impl(const SoftmaxParams& p, SoftmaxSchedule s, const ChunkSink* sink, std::size_t min_chunk) {
  validate(p);
  const std::int64_t chunks = ceil_div(p.cols, p.chunk);
  const bool ragged = p.cols % p.chunk != 0;  // the last chunk carries padding columns
  Builder b("softmax-" + to_string(s));
  b.configure(p.elem_bytes, p.sram_bytes, std::nullopt);
  b.stream_to(sink, min_chunk);
  auto X = b.array("X", 2, p.rows, p.cols, 1, p.chunk, p.elem_bytes);
  auto Y = b.array("Y", 2, p.rows, p.cols, 1, p.chunk, p.elem_bytes);
  enum : int { rX = 0, rE = 1, rMax = 2, rSum = 3, rT = 4, rNew = 5, rA = 6 };
  std::uint64_t pass = 0;  // the launch of the current pass
  auto load = [&](std::int64_t r, std::int64_t c) {
    b.begin_block(pass, static_cast<std::uint64_t>(r * chunks + c));
    b.load(X, r, c, rX);
    if (ragged && c == chunks - 1) b.op(Opcode::MASK, {{rX}, {rX}});  // padding must not win the max
  };
  for (std::int64_t r = 0; r < p.rows; ++r) {
    b.boundary();
    pass = 0;
    if (s == SoftmaxSchedule::ThreePass) {
      for (std::int64_t c = 0; c < chunks; ++c) {
        load(r, c);
        if (c == 0) b.op(Opcode::ROWMAX, {{rX}, {rMax}});
        else {
          b.op(Opcode::ROWMAX, {{rX}, {rT}});
          b.op(Opcode::MAX, {{rMax}, {rT}, {rMax}});
        }
      }
      pass = 1;
      for (std::int64_t c = 0; c < chunks; ++c) {
        load(r, c);
        b.op(Opcode::EXPD, {{rX}, {rMax}, {rE}});
        if (c == 0) b.op(Opcode::ROWSUM, {{rE}, {rSum}});
        else {
          b.op(Opcode::ROWSUM, {{rE}, {rT}});
          b.op(Opcode::ADD, {{rSum}, {rT}, {rSum}});
        }
      }
    } else {
      for (std::int64_t c = 0; c < chunks; ++c) {
        load(r, c);
        if (c == 0) {
          b.op(Opcode::ROWMAX, {{rX}, {rMax}});
          b.op(Opcode::EXPD, {{rX}, {rMax}, {rE}});
          b.op(Opcode::ROWSUM, {{rE}, {rSum}});
        } else {  // merge the chunk's (max, sum) into the running state
          b.op(Opcode::ROWMAX, {{rX}, {rNew}});
          b.op(Opcode::MAX, {{rMax}, {rNew}, {rNew}});
          b.op(Opcode::EXPD, {{rMax}, {rNew}, {rA}});
          b.op(Opcode::EXPD, {{rX}, {rNew}, {rE}});
          b.op(Opcode::ROWSUM, {{rE}, {rT}});
          b.op(Opcode::MUL, {{rSum}, {rA}, {rSum}});
          b.op(Opcode::ADD, {{rSum}, {rT}, {rSum}});
          b.op(Opcode::MOV, {{rNew}, {rMax}});
        }
      }
    }
    ++pass;
    for (std::int64_t c = 0; c < chunks; ++c) {
      load(r, c);
      b.op(Opcode::EXPD, {{rX}, {rMax}, {rE}});
      b.op(Opcode::DIV, {{rE}, {rSum}, {rE}});
      b.store(rE, Y, r, c);
    }
  }
  return b.finish();
}
isa::Program softmax_program(const SoftmaxParams& p, SoftmaxSchedule s) { return softmax_impl(p, s, nullptr, 0); }
void stream_softmax(const SoftmaxParams& p, SoftmaxSchedule s, std::size_t min_chunk, const ChunkSink& sink) {
  softmax_impl(p, s, &sink, min_chunk);
}

// ---- attention ----------------------------------------------------------------------------

namespace {

struct Geometry {
  std::int64_t nq, nk, tr, tc, diag;
};
Geometry geometry(const AttentionParams& p) {
  Geometry g;
  g.nq = p.n;
  g.nk = kv_length(p);
  g.tr = ceil_div(g.nq, p.br);
  g.tc = ceil_div(g.nk, p.bc);
  g.diag = g.nk - g.nq;
  return g;
}

struct HeadArrays {
  std::uint32_t Q, K, V, O, L, dO, D, dQ, dK, dV, m, l, S, P, dQacc, dKacc, dVacc;
};

}  // namespace

bool attention_tile_visited(const AttentionParams& p, std::int64_t i, std::int64_t j) {
  if (!p.causal || j == 0) return true;
  Geometry g = geometry(p);
  std::int64_t last_row = std::min((i + 1) * p.br, g.nq) - 1;
  return j * p.bc <= last_row + g.diag;
}

bool attention_tile_needs_mask(const AttentionParams& p, std::int64_t i, std::int64_t j) {
  Geometry g = geometry(p);
  if (g.nk % p.bc != 0 && j == g.tc - 1) return true;  // padding keys
  if (!p.causal) return false;
  std::int64_t last_col = std::min((j + 1) * p.bc, g.nk) - 1;
  return last_col > i * p.br + g.diag;  // the tile's first row cannot see its last key
}

namespace {

class AttentionGen {
 public:
  AttentionGen(const AttentionParams& p, const std::string& name) : p_(p), g_(geometry(p)), b_(name) {
    std::optional<std::int64_t> diag;
    if (p_.causal) diag = g_.diag;
    b_.configure(4, p_.sram_bytes, diag);
    if (p_.split_tail_sms > 0 && !p_.causal)
      split_ = sim::split_tail_plan(g_.tr * p_.batch_heads, g_.tc, p_.split_tail_sms);
  }

  HeadArrays declare(std::int64_t h, bool forward, AttentionForward fs, AttentionBackward bs) {
    auto nm = [&](const char* base) { return head_array(base, h, p_.batch_heads); };
    HeadArrays a{};
    const std::int64_t nq = g_.nq, nk = g_.nk, d = p_.d;
    a.Q = b_.array(nm("Q"), 2, nq, d, p_.br, d, p_.elem_bytes);
    a.K = b_.array(nm("K"), 2, nk, d, p_.bc, d, p_.elem_bytes);
    a.V = b_.array(nm("V"), 2, nk, d, p_.bc, d, p_.elem_bytes);
    if (forward) {
      a.O = b_.array(nm("O"), 2, nq, d, p_.br, d, p_.out_bytes ? p_.out_bytes : p_.elem_bytes);
      if (fs == AttentionForward::FA1) {
        a.m = b_.array(nm("m"), 1, nq, 1, p_.br, 1, p_.stat_bytes);
        a.l = b_.array(nm("l"), 1, nq, 1, p_.br, 1, p_.stat_bytes);
      } else {
        a.L = b_.array(nm("L"), 1, nq, 1, p_.br, 1, p_.stat_bytes);
      }
      if (fs == AttentionForward::Naive) {
        a.S = b_.array(nm("S"), 2, nq, nk, p_.br, p_.bc, p_.score_bytes);
        a.P = b_.array(nm("P"), 2, nq, nk, p_.br, p_.bc, p_.score_bytes);
      }
      return a;
    }
    if (bs != AttentionBackward::RowWiseNoD) a.O = b_.array(nm("O"), 2, nq, d, p_.br, d, p_.elem_bytes);
    a.dO = b_.array(nm("dO"), 2, nq, d, p_.br, d, p_.elem_bytes);
    a.L = b_.array(nm("L"), 1, nq, 1, p_.br, 1, p_.stat_bytes);
    if (bs != AttentionBackward::RowWiseNoD) a.D = b_.array(nm("D"), 1, nq, 1, p_.br, 1, p_.stat_bytes);
    a.dQ = b_.array(nm("dQ"), 2, nq, d, p_.br, d, p_.elem_bytes);
    a.dK = b_.array(nm("dK"), 2, nk, d, p_.bc, d, p_.elem_bytes);
    a.dV = b_.array(nm("dV"), 2, nk, d, p_.bc, d, p_.elem_bytes);
    if (bs == AttentionBackward::AtomicDQ) {
      a.dQacc = b_.array(nm("dQacc"), 2, nq, d, p_.br, d, p_.accum_bytes);
      b_.fill(a.dQacc, 0.0);  // zeroed before the kernel (a memset, not counted)
    }
    if (bs == AttentionBackward::RowWise || bs == AttentionBackward::RowWiseNoD) {
      a.dKacc = b_.array(nm("dKacc"), 2, nk, d, p_.bc, d, p_.accum_bytes);
      a.dVacc = b_.array(nm("dVacc"), 2, nk, d, p_.bc, d, p_.accum_bytes);
      b_.fill(a.dKacc, 0.0);
      b_.fill(a.dVacc, 0.0);
    }
    return a;
  }

  bool visited(std::int64_t i, std::int64_t j) const { return attention_tile_visited(p_, i, j); }

  // Block `index` of `per_head` blocks of head h in a launch whose grid is (per_head, heads).
  void block(std::uint64_t launch, std::int64_t h, std::int64_t index, std::int64_t per_head) {
    b_.begin_block(launch, static_cast<std::uint64_t>(h * per_head + index));
  }
  // Q tiles of the fast forward kernel run the heaviest (latest) first under causal.
  std::int64_t q_order(std::int64_t i) const { return p_.causal && p_.heavy_first ? g_.tr - 1 - i : i; }
  // paired_tiles: the k-th Q tile a head's blocks take, pairs (last, first), (last - 1, second), ...
  std::int64_t paired_tile(std::int64_t k) const { return (k & 1) ? k / 2 : g_.tr - 1 - k / 2; }
  // The dK/dV blocks of the atomic-dq backward: (head, K/V tile) in grid order, or the fast
  // kernel's groups of heads_per_group heads with the K/V tile outer inside a group.
  void kv_block(std::uint64_t launch, std::int64_t h, std::int64_t j) {
    const std::int64_t group = p_.heads_per_group;
    if (group <= 0) return block(launch, h, j, g_.tc);
    const std::int64_t first = h / group * group, heads = std::min(group, p_.batch_heads - first);
    // under the causal mask K/V tile 0 is the longest (every Q tile sees it): it runs first
    const std::int64_t step = p_.causal && p_.kv_shortest_first ? g_.tc - 1 - j : j;
    b_.begin_block(launch, static_cast<std::uint64_t>(first * g_.tc + step * heads + (h - first)));
  }

  // S = Q_i K_j^T, masked where needed.
  void scores(std::int64_t i, std::int64_t j) {
    b_.op(Opcode::MAC_Z, {{rQ}, T(rK), {rS}});
    if (attention_tile_needs_mask(p_, i, j)) b_.op(Opcode::MASK, {{rS}, {rS}});
  }
  // A score tile read back from DRAM has zeros in its padding columns: mask them again.
  void reload_scores(std::uint32_t S, std::int64_t i, std::int64_t j) {
    b_.load(S, i, j, rS);
    if (attention_tile_needs_mask(p_, i, j)) b_.op(Opcode::MASK, {{rS}, {rS}});
  }
  Opcode expd() const { return p_.base2 ? Opcode::EXP2D : Opcode::EXPD; }
  Opcode log() const { return p_.base2 ? Opcode::LOG2 : Opcode::LOG; }

  // Online-softmax step over the scores in rS: the first block starts the state (m, l, O = P V),
  // later blocks merge into it. `normalized` keeps O divided by l (FA1 stores O that way).
  // The running max alternates between rM and rMnew (no copy per block); m_ names the current one.
  void online_step(bool first, bool normalized) {
    if (first) {
      m_ = rM;
      b_.op(Opcode::ROWMAX, {{rS}, {rM}});
      b_.op(expd(), {{rS}, {rM}, {rP}});
      b_.op(Opcode::ROWSUM, {{rP}, {rL}});
      b_.op(Opcode::MAC_Z, {{rP}, {rV}, {rO}});
      if (normalized) b_.op(Opcode::SDIV, {{rO}, {rL}, {rO}});
      return;
    }
    const int m_old = m_, m_new = m_ == rM ? rMnew : rM;
    b_.op(Opcode::ROWMAX, {{rS}, {m_new}});
    b_.op(Opcode::MAX, {{m_old}, {m_new}, {m_new}});
    b_.op(expd(), {{m_old}, {m_new}, {rAlpha}});  // rescale factor of the old state
    b_.op(expd(), {{rS}, {m_new}, {rP}});
    b_.op(Opcode::ROWSUM, {{rP}, {rTmp}});
    m_ = m_new;
    if (normalized) {
      b_.op(Opcode::MUL, {{rL}, {rAlpha}, {rAlpha}});  // l * alpha: un-normalizes and rescales O
      b_.op(Opcode::ADD, {{rAlpha}, {rTmp}, {rL}});
      b_.op(Opcode::MUL, {{rO}, {rAlpha}, {rO}});
      b_.op(Opcode::MAC, {{rP}, {rV}, {rO}, {rO}});
      b_.op(Opcode::SDIV, {{rO}, {rL}, {rO}});
    } else {
      b_.op(Opcode::MUL, {{rL}, {rAlpha}, {rL}});
      b_.op(Opcode::ADD, {{rL}, {rTmp}, {rL}});
      b_.op(Opcode::MUL, {{rO}, {rAlpha}, {rO}});
      b_.op(Opcode::MAC, {{rP}, {rV}, {rO}, {rO}});
    }
  }

  // logsumexp = m + log(l): -inf for a row that saw no key (m = -inf, l = 0).
  void store_lse(std::uint32_t L, std::int64_t i) {
    b_.op(log(), {{rL}, {rTmp}});
    b_.op(Opcode::ADD, {{m_}, {rTmp}, {rTmp}});
    b_.store(rTmp, L, i, 0);
  }

  // The split tail (split_tail_sms): tail tile t's key tiles [t kv, (t + 1) kv) in the plan's
  // tile-major numbering, dealt to blocks first..last; one block: the tile runs whole.
  std::int64_t tail_tile(std::int64_t h, std::int64_t i) const {
    if (split_.tail == 0) return -1;
    const std::int64_t t = h * g_.tr + i - static_cast<std::int64_t>(split_.whole) * split_.blocks;
    return t >= 0 ? t : -1;
  }
  std::pair<int, int> tail_blocks(std::int64_t t) const {
    const int p0 = static_cast<int>(t) * split_.kv_tiles;
    return {split_.block_at(p0), split_.block_at(p0 + split_.kv_tiles - 1)};
  }
  // Each part of a split tile is a block of its own, ordered after every whole tile by its slot
  // (t + b, as the kernel's scratch): S, the online softmax over its keys, a normalized partial O
  // and its logsumexp to the scratch.
  void forward_split_parts(const HeadArrays& a, std::int64_t i, std::int64_t t, int first, int last) {
    if (!split_declared_) {
      const std::int64_t rows = static_cast<std::int64_t>(split_.slots()) * p_.br;
      opart_ = b_.array("Opart", 2, rows, p_.d, p_.br, p_.d, 4);
      lpart_ = b_.array("Lpart", 1, rows, 1, p_.br, 1, 4);
      split_declared_ = true;
    }
    const int p0 = static_cast<int>(t) * split_.kv_tiles;
    for (int blk = first; blk <= last; ++blk) {
      const std::int64_t j0 = std::max(split_.start(blk), p0) - p0;
      const std::int64_t j1 = std::min(split_.start(blk + 1), p0 + split_.kv_tiles) - p0;
      const std::int64_t slot = t + blk;
      b_.boundary();
      b_.begin_block(0, static_cast<std::uint64_t>(g_.tr * p_.batch_heads + slot));
      b_.load(a.Q, i, 0, rQ);
      for (std::int64_t j = j0; j < j1; ++j) {
        b_.load(a.K, j, 0, rK);
        b_.load(a.V, j, 0, rV);
        scores(i, j);
        online_step(j == j0, false);
      }
      b_.op(Opcode::SDIV, {{rO}, {rL}, {rO}});
      b_.store(rO, opart_, slot, 0);
      store_lse(lpart_, slot);
    }
    merges_.push_back({a.O, a.L, i, t});
  }
  // The merge launch: a block per split tile reads its parts and writes O and logsumexp
  // (kernels/attention_tile.cuh merge_split_parts): O = sum_b exp(lse_b - m) O_b / sum_b exp(lse_b - m).
  void merge_split_tiles() {
    for (const SplitMerge& mg : merges_) {
      const auto [first, last] = tail_blocks(mg.tail);
      b_.boundary();
      b_.begin_block(1, static_cast<std::uint64_t>(mg.tail));
      m_ = rM;
      b_.load(lpart_, mg.tail + first, 0, rM);
      b_.load(opart_, mg.tail + first, 0, rO);
      b_.op(expd(), {{rM}, {rM}, {rL}});  // the first part's weight, 1
      for (int blk = first + 1; blk <= last; ++blk) {
        const int m_new = m_ == rM ? rMnew : rM;
        b_.load(lpart_, mg.tail + blk, 0, rTmp);
        b_.load(opart_, mg.tail + blk, 0, rP);
        b_.op(Opcode::MAX, {{m_}, {rTmp}, {m_new}});
        b_.op(expd(), {{m_}, {m_new}, {rAlpha}});
        b_.op(expd(), {{rTmp}, {m_new}, {rTmp}});
        b_.op(Opcode::MUL, {{rL}, {rAlpha}, {rL}});
        b_.op(Opcode::ADD, {{rL}, {rTmp}, {rL}});
        b_.op(Opcode::MUL, {{rO}, {rAlpha}, {rO}});
        b_.op(Opcode::MUL, {{rP}, {rTmp}, {rP}});
        b_.op(Opcode::ADD, {{rO}, {rP}, {rO}});
        m_ = m_new;
      }
      b_.op(Opcode::SDIV, {{rO}, {rL}, {rO}});
      b_.store(rO, mg.o, mg.row_tile, 0);
      store_lse(mg.l, mg.row_tile);
    }
    merges_.clear();
  }

  void forward(std::int64_t h, AttentionForward s) {
    HeadArrays a = declare(h, true, s, AttentionBackward::TwoPass);
    if (s == AttentionForward::FA2) {
      for (std::int64_t k = 0; k < g_.tr; ++k) {
        const std::int64_t i = p_.paired_tiles ? paired_tile(k) : k;
        if (const std::int64_t t = tail_tile(h, i); t >= 0) {
          const auto [first, last] = tail_blocks(t);
          if (first != last) {
            forward_split_parts(a, i, t, first, last);
            continue;
          }
        }
        b_.boundary();
        if (!p_.paired_tiles) block(0, h, q_order(i), g_.tr);
        else if (k % 2 == 0) block(0, h, k / 2, (g_.tr + 1) / 2);  // the pair's second tile: the same block
        b_.load(a.Q, i, 0, rQ);
        bool first = true;
        for (std::int64_t j = 0; j < g_.tc; ++j) {
          if (!visited(i, j)) continue;  // entirely above the diagonal: never loaded
          b_.load(a.K, j, 0, rK);
          b_.load(a.V, j, 0, rV);
          scores(i, j);
          online_step(first, false);
          first = false;
        }
        b_.op(Opcode::SDIV, {{rO}, {rL}, {rO}});
        b_.store(rO, a.O, i, 0);
        store_lse(a.L, i);
      }
    } else if (s == AttentionForward::FA1) {
      for (std::int64_t j = 0; j < g_.tc; ++j) {
        b_.boundary();
        // Launch j has a block per visited (head, Q tile); the first of them carries the K/V
        // loads, which the trace makes once per j.
        std::int64_t first_i = 0;
        while (first_i + 1 < g_.tr && !visited(first_i, j)) ++first_i;
        block(static_cast<std::uint64_t>(j), h, first_i, g_.tr);
        b_.load(a.K, j, 0, rK);
        b_.load(a.V, j, 0, rV);
        for (std::int64_t i = 0; i < g_.tr; ++i) {
          if (!visited(i, j)) continue;
          if (i != first_i) block(static_cast<std::uint64_t>(j), h, i, g_.tr);
          b_.load(a.Q, i, 0, rQ);
          if (j > 0) {  // the running state of these queries comes back from DRAM
            m_ = rM;
            b_.load(a.O, i, 0, rO);
            b_.load(a.m, i, 0, rM);
            b_.load(a.l, i, 0, rL);
          }
          scores(i, j);
          online_step(j == 0, true);
          b_.store(rO, a.O, i, 0);
          b_.store(m_, a.m, i, 0);
          b_.store(rL, a.l, i, 0);
        }
      }
    } else {  // naive: S and P go through DRAM
      for (std::int64_t i = 0; i < g_.tr; ++i) {
        b_.boundary();
        block(0, h, i, g_.tr);
        b_.load(a.Q, i, 0, rQ);
        for (std::int64_t j = 0; j < g_.tc; ++j) {
          b_.load(a.K, j, 0, rK);
          scores(i, j);
          b_.store(rS, a.S, i, j);
        }
      }
      for (std::int64_t i = 0; i < g_.tr; ++i) {
        b_.boundary();
        block(1, h, i, g_.tr);  // the row-statistics kernel
        for (std::int64_t j = 0; j < g_.tc; ++j) {  // pass 1: row max and sum (online)
          reload_scores(a.S, i, j);
          if (j == 0) {
            m_ = rM;
            b_.op(Opcode::ROWMAX, {{rS}, {rM}});
            b_.op(expd(), {{rS}, {rM}, {rP}});
            b_.op(Opcode::ROWSUM, {{rP}, {rL}});
          } else {
            const int m_old = m_, m_new = m_ == rM ? rMnew : rM;
            b_.op(Opcode::ROWMAX, {{rS}, {m_new}});
            b_.op(Opcode::MAX, {{m_old}, {m_new}, {m_new}});
            b_.op(expd(), {{m_old}, {m_new}, {rAlpha}});
            b_.op(expd(), {{rS}, {m_new}, {rP}});
            b_.op(Opcode::ROWSUM, {{rP}, {rTmp}});
            b_.op(Opcode::MUL, {{rL}, {rAlpha}, {rL}});
            b_.op(Opcode::ADD, {{rL}, {rTmp}, {rL}});
            m_ = m_new;
          }
        }
        store_lse(a.L, i);
        block(2, h, i, g_.tr);  // the normalization kernel
        for (std::int64_t j = 0; j < g_.tc; ++j) {  // pass 2: P = exp(S - m) / l
          reload_scores(a.S, i, j);
          b_.op(expd(), {{rS}, {m_}, {rP}});
          b_.op(Opcode::SDIV, {{rP}, {rL}, {rP}});
          b_.store(rP, a.P, i, j);
        }
      }
      for (std::int64_t i = 0; i < g_.tr; ++i) {
        b_.boundary();
        block(3, h, i, g_.tr);
        for (std::int64_t j = 0; j < g_.tc; ++j) {
          b_.load(a.P, i, j, rP);
          b_.load(a.V, j, 0, rV);
          if (j == 0) b_.op(Opcode::MAC_Z, {{rP}, {rV}, {rO}});
          else b_.op(Opcode::MAC, {{rP}, {rV}, {rO}, {rO}});
        }
        b_.store(rO, a.O, i, 0);
      }
    }
  }

  // ---- backward ----

  void mac_into(bool first, Reg x, Reg y, int acc) {
    if (first) b_.op(Opcode::MAC_Z, {x, y, {acc}});
    else b_.op(Opcode::MAC, {x, y, {acc}, {acc}});
  }
  // With Q_i, dO_i, L_i, D_i, K_j, V_j in registers: P (rP) and dS (rdP).
  void recompute_p(std::int64_t i, std::int64_t j) {
    scores(i, j);
    b_.op(expd(), {{rS}, {rM}, {rP}});  // P = exp(S - logsumexp): no max or sum needed
  }
  void ds_from_p() {
    b_.op(Opcode::MAC_Z, {{rdO}, T(rV), {rdP}});  // dP = dO V^T
    b_.op(Opcode::SUB, {{rdP}, {rD}, {rdP}});
    b_.op(Opcode::MUL, {{rP}, {rdP}, {rdP}});     // dS = P * (dP - D)
  }
  void load_q_side(const HeadArrays& a, std::int64_t i, bool with_d) {
    b_.load(a.Q, i, 0, rQ);
    b_.load(a.dO, i, 0, rdO);
    b_.load(a.L, i, 0, rM);
    if (with_d) b_.load(a.D, i, 0, rD);
  }
  // Accumulator in DRAM: read, add, write back (an atomic add's traffic).
  void accumulate(std::uint32_t arr, std::int64_t t, Reg x, Reg y, int reg) {
    b_.load(arr, t, 0, reg);
    b_.op(Opcode::MAC, {x, y, {reg}, {reg}});
    b_.store(reg, arr, t, 0);
  }
  void convert(std::uint32_t from, std::uint32_t to, std::int64_t tiles, int reg, std::uint64_t launch,
               std::int64_t h) {
    for (std::int64_t t = 0; t < tiles; ++t) {
      b_.boundary();
      block(launch, h, t, tiles);
      b_.load(from, t, 0, reg);
      b_.store(reg, to, t, 0);
    }
  }

  void backward(std::int64_t h, AttentionBackward s) {
    HeadArrays a = declare(h, false, AttentionForward::FA2, s);
    if (s != AttentionBackward::RowWiseNoD) {
      for (std::int64_t i = 0; i < g_.tr; ++i) {  // D = rowsum(dO * O)
        b_.boundary();
        block(0, h, i, g_.tr);
        b_.load(a.O, i, 0, rO);
        b_.load(a.dO, i, 0, rdO);
        b_.op(Opcode::MUL, {{rdO}, {rO}, {rProd}});
        b_.op(Opcode::ROWSUM, {{rProd}, {rD}});
        b_.store(rD, a.D, i, 0);
      }
    }
    switch (s) {
      case AttentionBackward::TwoPass:
      case AttentionBackward::AtomicDQ: {
        for (std::int64_t j = 0; j < g_.tc; ++j) {  // column-wise: dK_j, dV_j resident
          b_.boundary();
          if (s == AttentionBackward::AtomicDQ) kv_block(1, h, j);
          else block(2, h, j, g_.tc);  // the two-pass kernels run the dQ launch first
          b_.load(a.K, j, 0, rK);
          b_.load(a.V, j, 0, rV);
          bool first = true;
          for (std::int64_t i = 0; i < g_.tr; ++i) {
            if (!visited(i, j)) continue;
            load_q_side(a, i, true);
            recompute_p(i, j);
            mac_into(first, T(rP), {rdO}, rdV);  // dV += P^T dO
            ds_from_p();
            mac_into(first, T(rdP), {rQ}, rdK);  // dK += dS^T Q
            if (s == AttentionBackward::AtomicDQ) accumulate(a.dQacc, i, {rdP}, {rK}, rdQ);
            first = false;
          }
          b_.store(rdK, a.dK, j, 0);
          b_.store(rdV, a.dV, j, 0);
        }
        if (s == AttentionBackward::AtomicDQ) {
          convert(a.dQacc, a.dQ, g_.tr, rdQ, 2, h);
          break;
        }
        for (std::int64_t i = 0; i < g_.tr; ++i) {  // row-wise: dQ_i resident
          b_.boundary();
          block(1, h, i, g_.tr);
          load_q_side(a, i, true);
          bool first = true;
          for (std::int64_t j = 0; j < g_.tc; ++j) {
            if (!visited(i, j)) continue;
            b_.load(a.K, j, 0, rK);
            b_.load(a.V, j, 0, rV);
            recompute_p(i, j);
            ds_from_p();
            mac_into(first, {rdP}, {rK}, rdQ);  // dQ += dS K
            first = false;
          }
          b_.store(rdQ, a.dQ, i, 0);
        }
        break;
      }
      case AttentionBackward::RowWise:
      case AttentionBackward::RowWiseNoD: {
        const bool no_d = s == AttentionBackward::RowWiseNoD;
        for (std::int64_t i = 0; i < g_.tr; ++i) {
          b_.boundary();
          block(1, h, i, g_.tr);
          load_q_side(a, i, !no_d);
          if (no_d) {
            // Sweep 1: D_i = rowsum(P * dP) needs the whole row before any dS exists.
            bool first = true;
            for (std::int64_t j = 0; j < g_.tc; ++j) {
              if (!visited(i, j)) continue;
              b_.load(a.K, j, 0, rK);
              b_.load(a.V, j, 0, rV);
              recompute_p(i, j);
              accumulate(a.dVacc, j, T(rP), {rdO}, rdV);
              b_.op(Opcode::MAC_Z, {{rdO}, T(rV), {rdP}});
              b_.op(Opcode::MUL, {{rP}, {rdP}, {rProd}});
              if (first) b_.op(Opcode::ROWSUM, {{rProd}, {rD}});
              else {
                b_.op(Opcode::ROWSUM, {{rProd}, {rTmp}});
                b_.op(Opcode::ADD, {{rD}, {rTmp}, {rD}});
              }
              first = false;
            }
          }
          bool first = true;
          for (std::int64_t j = 0; j < g_.tc; ++j) {  // K and V again when there is no D
            if (!visited(i, j)) continue;
            b_.load(a.K, j, 0, rK);
            b_.load(a.V, j, 0, rV);
            recompute_p(i, j);
            if (!no_d) accumulate(a.dVacc, j, T(rP), {rdO}, rdV);
            ds_from_p();
            accumulate(a.dKacc, j, T(rdP), {rQ}, rdK);
            mac_into(first, {rdP}, {rK}, rdQ);
            first = false;
          }
          b_.store(rdQ, a.dQ, i, 0);
        }
        convert(a.dKacc, a.dK, g_.tc, rdK, 2, h);
        convert(a.dVacc, a.dV, g_.tc, rdV, 3, h);
        break;
      }
    }
  }

  isa::Program finish() { return b_.finish(); }
  Builder& builder() { return b_; }
  const Geometry& geo() const { return g_; }

 private:
  struct SplitMerge {
    std::uint32_t o, l;
    std::int64_t row_tile, tail;
  };
  AttentionParams p_;
  Geometry g_;
  Builder b_;
  int m_ = rM;  // register holding the current running max
  sim::SplitTail split_;  // tail 0: no split
  bool split_declared_ = false;
  std::uint32_t opart_ = 0, lpart_ = 0;
  std::vector<SplitMerge> merges_;
};

std::size_t estimate_pairs(const Geometry& g, std::int64_t heads) {
  return static_cast<std::size_t>(g.tr * g.tc * heads);
}

}  // namespace

isa::Program attention_forward_program(const AttentionParams& p, AttentionForward s) {
  validate(p);
  AttentionGen gen(p, "attention-forward-" + to_string(s));
  gen.builder().reserve(estimate_pairs(gen.geo(), p.batch_heads) * (s == AttentionForward::Naive ? 20 : 15));
  for (std::int64_t h = 0; h < p.batch_heads; ++h) gen.forward(h, s);
  gen.merge_split_tiles();
  return gen.finish();
}

void stream_attention_forward(const AttentionParams& p, AttentionForward s, std::size_t min_chunk, const ChunkSink& sink) {
  validate(p);
  AttentionGen gen(p, "attention-forward-" + to_string(s));
  gen.builder().stream_to(&sink, min_chunk);
  for (std::int64_t h = 0; h < p.batch_heads; ++h) gen.forward(h, s);
  gen.merge_split_tiles();
  gen.finish();
}

void stream_attention_backward(const AttentionParams& p, AttentionBackward s, std::size_t min_chunk, const ChunkSink& sink) {
  validate(p);
  AttentionGen gen(p, "attention-backward-" + to_string(s));
  gen.builder().stream_to(&sink, min_chunk);
  for (std::int64_t h = 0; h < p.batch_heads; ++h) gen.backward(h, s);
  gen.finish();
}

isa::Program attention_backward_program(const AttentionParams& p, AttentionBackward s) {
  validate(p);
  AttentionGen gen(p, "attention-backward-" + to_string(s));
  gen.builder().reserve(estimate_pairs(gen.geo(), p.batch_heads) * 30);
  for (std::int64_t h = 0; h < p.batch_heads; ++h) gen.backward(h, s);
  return gen.finish();
}

}  // namespace flashsim::tile

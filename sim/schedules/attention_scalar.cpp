#include "sim/schedules/attention_scalar.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace flashsim::sim::schedules {

namespace {

// Register map. Both orders: R0 score / probability, R1 a loaded element, R2 m, R3 l (the
// state being updated when it is not resident), R4 the rescale factor e^(m_old - m_new).
// Inner order: q_i in R5.., o accumulator in R(5+d)..
// Outer order: K_j in R5.., V_j in R(5+d).., visiting query's o in R(5+2d)..,
//              resident slot i: m, l, o at R(5+3d+i(d+2)) onwards.
constexpr const char* kInnerO = "5+d+k";
constexpr const char* kOuterO = "5+2*d+k";
constexpr const char* kSlot = "5+3*d+i*(d+2)";

std::string reg(const std::string& expr) { return "R{" + expr + "}"; }

// One step of the online update for query i and key j, on state registers (m, l, o(k)).
void emit_update(std::ostringstream& s, const std::string& ind, LoopOrder order, const std::string& m,
                 const std::string& l, const std::string& o) {
  const bool inner = order == LoopOrder::InnerProduct;
  s << ind << "# score x = q_i . k_j (d MACs into R0)\n";
  if (inner) {
    s << ind << "LOAD K[j][0], R1\n"
      << ind << "MAC_Z R5, R1, R0\n"
      << ind << ".for k in 1..d\n"
      << ind << "  LOAD K[j][k], R1\n"
      << ind << "  MAC R{5+k}, R1, R0, R0\n"
      << ind << ".end\n";
  } else {
    s << ind << "LOAD q[i][0], R1\n"
      << ind << "MAC_Z R1, R5, R0\n"
      << ind << ".for k in 1..d\n"
      << ind << "  LOAD q[i][k], R1\n"
      << ind << "  MAC R1, R{5+k}, R0, R0\n"
      << ind << ".end\n";
  }
  s << ind << "MOV " << m << ", R4\n"
    << ind << "MAX " << m << ", R0, " << m << "      # new running max\n"
    << ind << "SUB R4, " << m << ", R4        # m_old - m_new <= 0\n"
    << ind << "SUB R0, " << m << ", R0\n"
    << ind << "EXP R4, R4            # rescale factor\n"
    << ind << "EXP R0, R0            # p = e^(x - m_new), used once and dropped\n"
    << ind << "MUL " << l << ", R4, " << l << "\n"
    << ind << "ADD " << l << ", R0, " << l << "\n"
    << ind << ".for k in 0..d\n"
    << ind << "  MUL " << reg(o) << ", R4, " << reg(o) << "\n";
  if (inner)
    s << ind << "  LOAD V[j][k], R1\n" << ind << "  MAC R0, R1, " << reg(o) << ", " << reg(o) << "\n";
  else
    s << ind << "  MAC R0, R{5+d+k}, " << reg(o) << ", " << reg(o) << "\n";
  s << ind << ".end\n";
}

void emit_load_state(std::ostringstream& s, const std::string& ind, const std::string& m, const std::string& l,
                     const std::string& o) {
  s << ind << "LOAD m[i], " << m << "\n"
    << ind << "LOAD l[i], " << l << "\n"
    << ind << ".for k in 0..d\n"
    << ind << "  LOAD o[i][k], " << reg(o) << "\n"
    << ind << ".end\n";
}

void emit_store_state(std::ostringstream& s, const std::string& ind, const std::string& m, const std::string& l,
                      const std::string& o) {
  s << ind << "STORE " << m << ", m[i]\n"
    << ind << "STORE " << l << ", l[i]\n"
    << ind << ".for k in 0..d\n"
    << ind << "  STORE " << reg(o) << ", o[i][k]\n"
    << ind << ".end\n";
}

// o_i = numerator / denominator, stored once.
void emit_finish(std::ostringstream& s, const std::string& ind, const std::string& l, const std::string& o) {
  s << ind << ".for k in 0..d\n"
    << ind << "  DIV " << reg(o) << ", " << l << ", " << reg(o) << "\n"
    << ind << "  STORE " << reg(o) << ", o[i][k]\n"
    << ind << ".end\n";
}

void emit_load_kv(std::ostringstream& s, const std::string& ind) {
  s << ind << ".for k in 0..d\n"
    << ind << "  LOAD K[j][k], R{5+k}\n"
    << ind << "  LOAD V[j][k], R{5+d+k}\n"
    << ind << ".end\n";
}

// The keys j in [from, to) of the outer order; `last` marks the final key, after which the
// visiting queries' results are final.
void emit_outer_keys(std::ostringstream& s, const std::string& from, const std::string& to, bool last) {
  const std::string slot_m = reg(kSlot), slot_l = reg(std::string(kSlot) + "+1");
  const std::string slot_o = std::string(kSlot) + "+2+k";
  s << ".for j in " << from << ".." << to << "\n";
  emit_load_kv(s, "  ");
  s << "  # resident queries: their state never leaves the registers\n"
    << "  .for i in 0..s\n";
  emit_update(s, "    ", LoopOrder::OuterProduct, slot_m, slot_l, slot_o);
  s << "  .end\n"
    << "  # visiting queries: state loaded, updated, stored back\n"
    << "  .for i in s..nq\n";
  emit_load_state(s, "    ", "R2", "R3", kOuterO);
  emit_update(s, "    ", LoopOrder::OuterProduct, "R2", "R3", kOuterO);
  if (last) emit_finish(s, "    ", "R3", kOuterO);
  else emit_store_state(s, "    ", "R2", "R3", kOuterO);
  s << "  .end\n"
    << ".end\n";
}

}  // namespace

void validate(const AttentionParams& p) {
  if (p.n < 1) throw std::invalid_argument("n (keys) must be at least 1, got " + std::to_string(p.n));
  if (p.d < 1) throw std::invalid_argument("d must be at least 1, got " + std::to_string(p.d));
  if (p.queries != -1 && p.queries < 1)
    throw std::invalid_argument("the number of queries must be at least 1, got " + std::to_string(p.queries));
  if (p.order == LoopOrder::InnerProduct && p.slots != 0)
    throw std::invalid_argument("slots apply to the outer-product order only");
  if (p.slots < 0 || p.slots > p.nq())
    throw std::invalid_argument("slots must be between 0 and the number of queries (" + std::to_string(p.nq()) +
                                "), got " + std::to_string(p.slots));
  if (p.n > 1'000'000 || p.d > 4096 || p.nq() > 1'000'000 || attention_scalar_registers(p) > 65535)
    throw std::invalid_argument("n, d or slots are too large for the scalar machine (at most 65535 registers)");
}

std::int64_t attention_scalar_registers(const AttentionParams& p) {
  if (p.order == LoopOrder::InnerProduct) return 2 * p.d + 5;
  return 3 * p.d + 5 + p.slots * (p.d + 2);
}

std::string attention_scalar_source(const AttentionParams& p) {
  validate(p);
  const bool inner = p.order == LoopOrder::InnerProduct;
  std::ostringstream s;
  s << "# Scalar attention o = softmax(q K^T) V, " << (inner ? "inner-product" : "outer-product")
    << " order: the outer loop runs over " << (inner ? "queries" : "keys/values") << ".\n"
    << "# Online softmax keeps (m, l, o) per query; no score or probability is ever stored.\n"
    << "# Generated by flashsim; --param n=.. d=.. nq=.. s=.. re-sizes it.\n"
    << ".param n = " << p.n << "      # keys / values\n"
    << ".param d = " << p.d << "      # head dimension\n"
    << ".param nq = " << p.nq() << "     # queries\n";
  if (!inner) s << ".param s = " << p.slots << "      # queries whose state stays in registers\n";
  s << ".regs " << (inner ? "2*d+5" : "3*d+5+s*(d+2)") << "\n"
    << ".array q[nq][d]\n"
    << ".array K[n][d]\n"
    << ".array V[n][d]\n"
    << ".array o[nq][d]\n"
    << ".array m[nq]\n"
    << ".array l[nq]\n"
    << "# Initial state per query: m = -inf, l = 0, o = 0\n"
    << ".fill o 0\n"
    << ".fill m -inf\n"
    << ".fill l 0\n";
  if (inner) {
    s << ".for i in 0..nq\n"
      << "  .for k in 0..d\n"
      << "    LOAD q[i][k], R{5+k}\n"
      << "  .end\n";
    emit_load_state(s, "  ", "R2", "R3", kInnerO);
    s << "  .for j in 0..n\n";
    emit_update(s, "    ", LoopOrder::InnerProduct, "R2", "R3", kInnerO);
    s << "  .end\n";
    emit_finish(s, "  ", "R3", kInnerO);
    s << ".end\n";
    return s.str();
  }
  const std::string slot_m = reg(kSlot), slot_l = reg(std::string(kSlot) + "+1");
  const std::string slot_o = std::string(kSlot) + "+2+k";
  s << "# Resident queries load their state once\n"
    << ".for i in 0..s\n";
  emit_load_state(s, "  ", slot_m, slot_l, slot_o);
  s << ".end\n";
  emit_outer_keys(s, "0", "n-1", false);
  s << "# The last key/value: every result is final after it\n";
  emit_outer_keys(s, "n-1", "n", true);
  s << ".for i in 0..s\n";
  emit_finish(s, "  ", slot_l, slot_o);
  s << ".end\n";
  return s.str();
}

AttentionTraffic attention_scalar_traffic(const AttentionParams& p) {
  validate(p);
  const auto n = static_cast<std::uint64_t>(p.n), nq = static_cast<std::uint64_t>(p.nq()),
             s = static_cast<std::uint64_t>(p.slots);
  AttentionTraffic t;
  if (p.order == LoopOrder::InnerProduct) {
    t.q_row_loads = nq;
    t.k_row_loads = t.v_row_loads = n * nq;
    t.o_row_loads = t.o_row_stores = nq;
    t.stat_loads = nq;
    t.stat_stores = 0;
  } else {
    t.q_row_loads = nq * n;
    t.k_row_loads = t.v_row_loads = n;
    t.o_row_loads = t.o_row_stores = s + (nq - s) * n;
    t.stat_loads = s + (nq - s) * n;
    t.stat_stores = (nq - s) * (n - 1);
  }
  return t;
}

std::vector<double> attention_reference(const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, std::int64_t d) {
  if (d < 1 || q.size() % static_cast<std::size_t>(d) || k.size() % static_cast<std::size_t>(d) ||
      k.size() != v.size() || k.empty())
    throw std::invalid_argument("attention_reference: q, K, V must be non-empty rows of d values");
  const std::size_t D = static_cast<std::size_t>(d), nq = q.size() / D, n = k.size() / D;
  std::vector<double> o(nq * D, 0.0), score(n);
  for (std::size_t i = 0; i < nq; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < n; ++j) {
      double x = 0;
      for (std::size_t c = 0; c < D; ++c) x += q[i * D + c] * k[j * D + c];
      score[j] = x;
      m = std::max(m, x);
    }
    double l = 0;
    for (std::size_t j = 0; j < n; ++j) {
      double p = std::exp(score[j] - m);
      l += p;
      for (std::size_t c = 0; c < D; ++c) o[i * D + c] += p * v[j * D + c];
    }
    for (std::size_t c = 0; c < D; ++c) o[i * D + c] /= l;
  }
  return o;
}

const char* loop_order_name(LoopOrder o) { return o == LoopOrder::InnerProduct ? "inner" : "outer"; }

}  // namespace flashsim::sim::schedules

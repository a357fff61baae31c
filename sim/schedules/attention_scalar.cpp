#include "sim/schedules/attention_scalar.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "isa/assembler.h"
#include "sim/machine.h"
#include "sim/schedules/softmax.h"

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
    << "# Generated by flashsim; --param n=.. d=.. nq=.." << (inner ? "" : " s=..") << " re-sizes it.\n"
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

std::string attention_traffic_table(std::int64_t n, std::int64_t d) {
  struct Column {
    std::string name;
    AttentionParams p;
  };
  std::vector<Column> cols;
  auto make = [&](LoopOrder o, std::int64_t s) {
    AttentionParams p;
    p.n = n;
    p.d = d;
    p.order = o;
    p.slots = s;
    validate(p);
    return p;
  };
  cols.push_back({"inner product", make(LoopOrder::InnerProduct, 0)});
  cols.push_back({"outer, 0 slots", make(LoopOrder::OuterProduct, 0)});
  if (n > 2) cols.push_back({"outer, " + std::to_string(n / 2) + " slots", make(LoopOrder::OuterProduct, n / 2)});
  if (n > 1) cols.push_back({"outer, " + std::to_string(n) + " slots", make(LoopOrder::OuterProduct, n)});

  std::vector<Counters> counted;
  std::vector<std::map<std::string, std::uint64_t>> reads(cols.size()), writes(cols.size());
  for (std::size_t c = 0; c < cols.size(); ++c) {
    MachineOptions o;
    o.compute_values = false;
    o.history = false;
    Machine m(isa::assemble(attention_scalar_source(cols[c].p), "<generated>"), o);
    m.run();
    counted.push_back(m.counters());
    for (std::uint32_t a = 0; a < m.program().arrays.size(); ++a) {
      reads[c][m.program().arrays[a].name] = m.array(a).elem_reads;
      writes[c][m.program().arrays[a].name] = m.array(a).elem_writes;
    }
  }
  const auto ud = static_cast<std::uint64_t>(d), un = static_cast<std::uint64_t>(n);
  // "16 = n^2" when the count is a recognisable closed form.
  auto form = [&](std::uint64_t v) {
    std::string f;
    if (v == un) f = "n";
    else if (v == un * un) f = "n^2";
    else if (v == 0) f = "0";
    return f.empty() || std::to_string(v) == f ? std::to_string(v) : std::to_string(v) + " = " + f;
  };
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head{""};
  for (const auto& c : cols) head.push_back(c.name);
  rows.push_back(head);
  auto row = [&](const std::string& label, auto cell) {
    std::vector<std::string> r{label};
    for (std::size_t c = 0; c < cols.size(); ++c) r.push_back(cell(c));
    rows.push_back(std::move(r));
  };
  row("outer loop over", [&](std::size_t c) { return std::string(c == 0 ? "queries" : "keys/values"); });
  row("registers", [&](std::size_t c) { return std::to_string(attention_scalar_registers(cols[c].p)); });
  row("q row loads", [&](std::size_t c) { return form(reads[c]["q"] / ud); });
  row("K row loads", [&](std::size_t c) { return form(reads[c]["K"] / ud); });
  row("V row loads", [&](std::size_t c) { return form(reads[c]["V"] / ud); });
  row("o row loads", [&](std::size_t c) { return form(reads[c]["o"] / ud); });
  row("o row stores", [&](std::size_t c) { return form(writes[c]["o"] / ud); });
  row("m, l loads (each)", [&](std::size_t c) { return form(reads[c]["m"]); });
  row("m, l stores (each)", [&](std::size_t c) { return form(writes[c]["m"]); });
  row("DRAM elements moved", [&](std::size_t c) { return std::to_string(counted[c].elem_reads + counted[c].elem_writes); });
  row("cycles", [&](std::size_t c) { return std::to_string(counted[c].cycles); });

  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::ostringstream os;
  os << "Attention, n = " << n << " queries and keys, d = " << d
     << ": counted on the scalar machine (a row is d elements)\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::string line;
    for (std::size_t c = 0; c < rows[i].size(); ++c)
      line += (c ? " | " : "") + rows[i][c] + std::string(width[c] - rows[i][c].size(), ' ');
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << "\n";
    if (i == 0) {
      std::string rule;
      for (std::size_t c = 0; c < width.size(); ++c) rule += (c ? "-+-" : "") + std::string(width[c], '-');
      os << rule << "\n";
    }
  }
  return os.str();
}

std::vector<std::string> scalar_schedule_names() {
  return {"softmax-unsafe",    "softmax-3pass",    "softmax-online", "softmax-online-ratio", "variance-two-pass",
          "variance-welford", "variance-naive",   "attention-inner", "attention-outer"};
}

std::string scalar_schedule_source(const std::string& name, const std::map<std::string, std::int64_t>& params) {
  for (const auto& [k, v] : params)
    if (k != "n" && k != "d" && k != "nq" && k != "slots")
      throw std::invalid_argument("unknown parameter '" + k + "' (known: n, d, nq, slots)");
  auto get = [&](const char* k, std::int64_t dflt) {
    auto it = params.find(k);
    return it == params.end() ? dflt : it->second;
  };
  const std::int64_t n = get("n", 8);
  if (name == "softmax-unsafe") return softmax_unsafe_source(n);
  if (name == "softmax-3pass") return softmax_three_pass_source(n);
  if (name == "softmax-online") return online_softmax_source(n);
  if (name == "softmax-online-ratio") return online_softmax_source(n, Rescale::Ratio);
  if (name == "variance-two-pass") return variance_two_pass_source(n);
  if (name == "variance-welford") return variance_welford_source(n);
  if (name == "variance-naive") return variance_naive_source(n);
  if (name == "attention-inner" || name == "attention-outer") {
    AttentionParams p;
    p.n = n;
    p.d = get("d", 2);
    p.queries = get("nq", -1);
    p.order = name == "attention-inner" ? LoopOrder::InnerProduct : LoopOrder::OuterProduct;
    p.slots = get("slots", 0);
    return attention_scalar_source(p);
  }
  std::string known;
  for (const auto& k : scalar_schedule_names()) known += (known.empty() ? "" : ", ") + k;
  throw std::invalid_argument("unknown schedule '" + name + "' (known: " + known + ")");
}

const char* loop_order_name(LoopOrder o) { return o == LoopOrder::InnerProduct ? "inner" : "outer"; }

}  // namespace flashsim::sim::schedules

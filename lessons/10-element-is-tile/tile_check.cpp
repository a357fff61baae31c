#include "lessons/10-element-is-tile/tile_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "isa/assembler.h"

namespace flashsim::lessons::tile {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

std::string bytes_text(std::uint64_t b) { return std::to_string(b) + (b == 1 ? " byte" : " bytes"); }

std::string shape_text(int rank, std::int64_t rows, std::int64_t cols) {
  return rank == 1 ? "[" + std::to_string(rows) + "]" : "[" + std::to_string(rows) + "][" + std::to_string(cols) + "]";
}

// Row-softmax pieces shared by the forward and backward references.
struct Rows {
  std::vector<std::vector<double>> p;  // P per row (0 for hidden keys)
  Mat L;
};

Rows softmax_rows(const Mat& Q, const Mat& K, std::int64_t nq, std::int64_t nk, std::int64_t d, bool causal) {
  Rows r;
  r.p.assign(static_cast<std::size_t>(nq), std::vector<double>(static_cast<std::size_t>(nk), 0.0));
  r.L.assign(static_cast<std::size_t>(nq), kNegInf);
  for (std::int64_t i = 0; i < nq; ++i) {
    std::vector<double> s(static_cast<std::size_t>(nk), kNegInf);
    double mx = kNegInf;
    for (std::int64_t j = 0; j < nk; ++j) {
      if (causal && j > i + (nk - nq)) continue;
      double acc = 0;
      for (std::int64_t k = 0; k < d; ++k)
        acc += Q[static_cast<std::size_t>(i * d + k)] * K[static_cast<std::size_t>(j * d + k)];
      s[static_cast<std::size_t>(j)] = acc;
      mx = std::max(mx, acc);
    }
    if (mx == kNegInf) continue;  // the row sees no key
    double l = 0;
    for (double v : s) l += v == kNegInf ? 0.0 : std::exp(v - mx);
    r.L[static_cast<std::size_t>(i)] = mx + std::log(l);
    auto& p = r.p[static_cast<std::size_t>(i)];
    for (std::int64_t j = 0; j < nk; ++j) {
      double v = s[static_cast<std::size_t>(j)];
      p[static_cast<std::size_t>(j)] = v == kNegInf ? 0.0 : std::exp(v - mx) / l;
    }
  }
  return r;
}

}  // namespace

Forward attention_forward(const Mat& Q, const Mat& K, const Mat& V, std::int64_t nq, std::int64_t nk, std::int64_t d,
                          bool causal) {
  Rows rows = softmax_rows(Q, K, nq, nk, d, causal);
  Forward f;
  f.L = rows.L;
  f.O.assign(static_cast<std::size_t>(nq * d), 0.0);
  for (std::int64_t i = 0; i < nq; ++i)
    for (std::int64_t j = 0; j < nk; ++j) {
      double p = rows.p[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      for (std::int64_t k = 0; k < d; ++k) f.O[static_cast<std::size_t>(i * d + k)] += p * V[static_cast<std::size_t>(j * d + k)];
    }
  return f;
}

Backward attention_backward(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, std::int64_t nq, std::int64_t nk,
                            std::int64_t d, bool causal) {
  Rows rows = softmax_rows(Q, K, nq, nk, d, causal);
  Backward b;
  b.dQ.assign(static_cast<std::size_t>(nq * d), 0.0);
  b.dK.assign(static_cast<std::size_t>(nk * d), 0.0);
  b.dV.assign(static_cast<std::size_t>(nk * d), 0.0);
  auto at = [d](const Mat& m, std::int64_t i, std::int64_t k) { return m[static_cast<std::size_t>(i * d + k)]; };
  for (std::int64_t i = 0; i < nq; ++i) {
    const auto& p = rows.p[static_cast<std::size_t>(i)];
    std::vector<double> dp(static_cast<std::size_t>(nk), 0.0);
    double D = 0;  // rowsum(P * dP), computed the long way: the reference does not use the trick it grades
    for (std::int64_t j = 0; j < nk; ++j) {
      for (std::int64_t k = 0; k < d; ++k) dp[static_cast<std::size_t>(j)] += at(dO, i, k) * at(V, j, k);
      D += p[static_cast<std::size_t>(j)] * dp[static_cast<std::size_t>(j)];
    }
    for (std::int64_t j = 0; j < nk; ++j) {
      double pj = p[static_cast<std::size_t>(j)];
      double ds = pj * (dp[static_cast<std::size_t>(j)] - D);
      for (std::int64_t k = 0; k < d; ++k) {
        b.dV[static_cast<std::size_t>(j * d + k)] += pj * at(dO, i, k);
        b.dQ[static_cast<std::size_t>(i * d + k)] += ds * at(K, j, k);
        b.dK[static_cast<std::size_t>(j * d + k)] += ds * at(Q, i, k);
      }
    }
  }
  return b;
}

std::string size_label(const Params& params) {
  // Lesson order: sizes first, tiles last, whatever the map's order.
  static const std::vector<std::string> order = {"N", "n", "Nkv", "d", "B", "Br", "Bc"};
  std::string s;
  auto add = [&s](const std::string& k, std::int64_t v) { s += (s.empty() ? "" : ", ") + k + " = " + std::to_string(v); };
  for (const auto& k : order)
    if (auto it = params.find(k); it != params.end()) add(k, it->second);
  for (const auto& [k, v] : params)
    if (std::find(order.begin(), order.end(), k) == order.end()) add(k, v);
  return s;
}

Mat random_mat(std::mt19937_64& rng, std::int64_t rows, std::int64_t cols, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Mat m(static_cast<std::size_t>(rows * cols));
  for (auto& x : m) x = dist(rng);
  return m;
}

bool run_case(const sim::Machine& ran, const Part& part, const Case& c, std::vector<std::string>& problems) {
  const std::string with = "with " + size_label(c.params) + (c.what.empty() ? "" : " (" + c.what + ")");
  auto fail = [&](const std::string& msg) {
    problems.push_back(with + ": " + msg);
    return false;
  };
  std::string text;
  for (const auto& line : ran.program().source_lines) text += line + "\n";
  isa::AssembleOptions ao;
  ao.params = part.params;
  for (const auto& [k, v] : c.params) ao.params[k] = v;
  std::optional<isa::Program> prog;
  try {
    prog = isa::assemble(text, ran.program().name, ao);
  } catch (const isa::AsmError& e) {
    return fail(std::string("your trace does not assemble: ") + e.what());
  }
  if (prog->highest_reg >= part.regs)
    return fail("your trace uses R" + std::to_string(prog->highest_reg) + ", but the machine has " +
                std::to_string(part.regs) + " registers");
  if (part.reg_elem_bytes && prog->config.elem_bytes != part.reg_elem_bytes)
    return fail("your trace declares .elem " + std::to_string(prog->config.elem_bytes) + "; leave .elem out");

  // Every array exactly as the machine has it at this size: a trace sized by hand, or with its
  // own tiles, would pass the lesson's one size and nothing else.
  for (const auto& a : prog->arrays) {
    auto s = std::find_if(c.arrays.begin(), c.arrays.end(), [&](const ArraySpec& x) { return x.name == a.name; });
    if (s == c.arrays.end()) return fail("your trace uses an array '" + a.name + "' that this machine does not have");
    if (a.rank != s->rank || a.rows != s->rows || a.cols != s->cols)
      return fail("your trace's '" + a.name + "' is " + a.name + shape_text(a.rank, a.rows, a.cols) + " instead of " +
                  a.name + shape_text(s->rank, s->rows, s->cols) +
                  ": size every array with the .param names so the trace works at every size");
    if (a.tile_rows != s->tile_rows || a.tile_cols != s->tile_cols)
      return fail("your trace splits '" + a.name + "' into tile" + shape_text(a.rank, a.tile_rows, a.tile_cols) +
                  " instead of tile" + shape_text(s->rank, s->tile_rows, s->tile_cols) + " (use the tile .params)");
    const int elem = a.elem_bytes ? a.elem_bytes : prog->config.elem_bytes;
    if (elem != s->elem_bytes)
      return fail("your trace gives '" + a.name + "' " + std::to_string(elem) + "-byte elements instead of " +
                  std::to_string(s->elem_bytes));
  }
  for (const auto& [name, values] : c.expected)
    if (!prog->find_array(name)) return fail("your trace never stores to " + name);

  sim::MachineOptions mo;
  mo.regs = part.regs;
  mo.f64 = part.f64;
  mo.history = false;
  for (const auto& [name, values] : c.inputs)
    if (prog->find_array(name)) mo.inputs[name] = values;
  std::optional<sim::Machine> m;
  try {
    m.emplace(std::move(*prog), mo);
    m->run();
  } catch (const sim::MachineFault& e) {
    return fail(std::string("the machine faults: ") + e.what());
  } catch (const isa::AsmError& e) {
    return fail(e.what());
  }

  for (const auto& [name, want] : c.expected) {
    auto id = *m->program().find_array(name);
    const auto& decl = m->program().arrays[id];
    const auto& state = m->array(id);
    int wrong = 0;
    std::string first;
    for (std::size_t k = 0; k < want.size(); ++k) {
      std::int64_t r = static_cast<std::int64_t>(k) / decl.cols, col = static_cast<std::int64_t>(k) % decl.cols;
      std::int64_t tr = r / decl.tile_rows, tc = col / decl.tile_cols;
      std::string cell = decl.rank == 1 ? name + "[" + std::to_string(r) + "] (in tile " + name + "[" + std::to_string(tr) + "])"
                                        : name + "[" + std::to_string(r) + "][" + std::to_string(col) + "] (in tile " + name +
                                              "[" + std::to_string(tr) + "][" + std::to_string(tc) + "])";
      if (state.tile_writes[static_cast<std::size_t>(tr * decl.tile_grid_cols() + tc)] == 0) {
        if (wrong++ == 0) first = cell + " is never stored";
        continue;
      }
      double got = state.values[k], exp = want[k];
      if (std::isinf(exp) && got == exp) continue;
      if (std::isfinite(got) && std::fabs(got - exp) <= part.tolerance * std::max(1.0, std::fabs(exp))) continue;
      if (wrong++ == 0) first = cell + ": expected " + number(exp) + ", got " + number(got);
    }
    if (wrong > 0)
      return fail(first + (wrong > 1 ? " (and " + std::to_string(wrong - 1) + " more wrong cells)" : ""));
  }

  for (const auto& b : c.budgets) {
    auto id = m->program().find_array(b.array);
    std::uint64_t got = !id ? 0 : b.written ? m->array(*id).bytes_written : m->array(*id).bytes_read;
    if (got > b.limit)
      return fail("your trace " + std::string(b.written ? "writes " : "reads ") + bytes_text(got) + " of " + b.array +
                  "; the budget is " + bytes_text(b.limit) + (b.why.empty() ? "" : " (" + b.why + ")"));
  }
  for (const auto& b : c.op_budgets) {
    auto op = isa::find_mnemonic(b.mnemonic);
    std::uint64_t got = op ? m->counters().count(*op) : 0;
    if (got > b.limit)
      return fail("your trace executes " + std::to_string(got) + " " + b.mnemonic + " instructions; the budget is " +
                  std::to_string(b.limit) + (b.why.empty() ? "" : " (" + b.why + ")"));
  }
  return true;
}

}  // namespace flashsim::lessons::tile

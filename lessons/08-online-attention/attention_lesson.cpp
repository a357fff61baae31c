// Lessons 08 and 09: the float64 attention reference and the checks that re-run an attention
// trace for several n and d: one pass for one query (08), the traffic of each loop order (09).
#include <map>
#include <random>

#include "lessons/05-safe-softmax/scalar_check.h"
#include "lessons/lesson.h"
#include "sim/schedules/attention_scalar.h"

namespace flashsim::lessons {
namespace {

using sim::schedules::LoopOrder;

void attention_reference(ArraySet& arrays) {
  const Matrix& q = arrays.at("q");
  arrays.at("o").v = sim::schedules::attention_reference(q.v, arrays.at("K").v, arrays.at("V").v, q.cols);
}

struct Scale {
  double lo, hi;
  const char* what;
};
// Moderate scores, and scores in the thousands: only the running-max form survives the latter.
const Scale kScales[] = {{-2, 2, "q, K in -2..2"}, {-30, 30, "q, K in -30..30 (scores in the thousands)"}};

struct Run {
  std::optional<sim::Machine> machine;
  std::string with;
};

// One re-run at (n, d, nq) on random q, K, V; checks the values. Empty machine on failure.
Run run_attention(const sim::Machine& ran, const Part& part, std::int64_t n, std::int64_t d, std::int64_t nq,
                  const Scale& scale, int regs, std::mt19937_64& rng, std::vector<std::string>& problems) {
  Run r;
  auto q = scalar::random_values(rng, static_cast<std::size_t>(nq * d), scale.lo, scale.hi, part.f64);
  auto k = scalar::random_values(rng, static_cast<std::size_t>(n * d), scale.lo, scale.hi, part.f64);
  auto v = scalar::random_values(rng, static_cast<std::size_t>(n * d), -1, 1, part.f64);
  scalar::Params params{{"n", n}, {"d", d}};
  if (nq != 1 || part.params.count("nq")) params["nq"] = nq;
  r.with = "with " + scalar::size_label(params) + " and " + scale.what;
  auto m = scalar::run_resized(ran, part, params, {{"q", q}, {"K", k}, {"V", v}}, regs, problems);
  if (!m) return r;
  if (!scalar::outputs_match(*m, "o", sim::schedules::attention_reference(q, k, v, d), part.tolerance, r.with, problems))
    return r;
  r.machine = std::move(m);
  return r;
}

// Every element of `array` read exactly `times` times.
bool read_each(const sim::Machine& m, const std::string& array, std::uint32_t times, const std::string& with,
               const std::string& why, std::vector<std::string>& problems) {
  auto id = m.program().find_array(array);
  if (!id) return true;
  const auto& decl = m.program().arrays[*id];
  const auto& reads = m.array(*id).tile_reads;
  for (std::size_t t = 0; t < reads.size(); ++t)
    if (reads[t] != times) {
      auto cols = static_cast<std::size_t>(decl.cols);
      problems.push_back(with + ", " + array + "[" + std::to_string(t / cols) + "][" + std::to_string(t % cols) +
                         "] is read " + std::to_string(reads[t]) + " times; " + why);
      return false;
    }
  return true;
}

void check_one_query(const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{1, 1}, {1, 3}, {2, 2}, {5, 1}, {8, 4}, {16, 2}, {33, 3}};
  std::mt19937_64 rng(8);
  std::map<std::int64_t, std::pair<std::int64_t, int>> regs_at_d;  // d -> (first n, highest register)
  for (auto [n, d] : sizes) {
    for (const auto& scale : kScales) {
      auto r = run_attention(ran, part, n, d, 1, scale, static_cast<int>(2 * d + 5), rng, problems);
      if (!r.machine) return;
      const sim::Machine& m = *r.machine;
      const std::string once = "a single pass reads every key and value once";
      if (!read_each(m, "K", 1, r.with, once, problems) || !read_each(m, "V", 1, r.with, once, problems)) return;
      for (const auto& a : m.program().arrays)
        if (a.name != "o" && scalar::writes_of(m, a.name) > 0) {
          problems.push_back(r.with + ", your trace stores to '" + a.name +
                             "': scores and probabilities must stay in registers (P is never materialized)");
          return;
        }
      auto oid = *m.program().find_array("o");
      for (auto w : m.array(oid).tile_writes)
        if (w != 1) {
          problems.push_back(r.with + ", an element of o is stored " + std::to_string(w) +
                             " times: store only the final numerator / l, once; a score or probability must never "
                             "reach DRAM (P is never materialized)");
          return;
        }
      int high = m.program().highest_reg;
      auto [it, fresh] = regs_at_d.try_emplace(d, n, high);
      if (!fresh && it->second.second != high) {
        problems.push_back("with d = " + std::to_string(d) + " your trace uses up to R" + std::to_string(it->second.second) +
                           " for n = " + std::to_string(it->second.first) + " but up to R" + std::to_string(high) +
                           " for n = " + std::to_string(n) + ": the running state (m, l, numerator) must not grow with n");
        return;
      }
    }
  }
}

// Lesson 09: each order's defining traffic, for several sizes (nq = n queries).
void check_order(const sim::Machine& ran, const Part& part, std::vector<std::string>& problems, LoopOrder order) {
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{1, 1}, {2, 3}, {3, 2}, {5, 2}};
  std::mt19937_64 rng(9);
  const bool inner = order == LoopOrder::InnerProduct;
  for (auto [n, d] : sizes) {
    for (const auto& scale : kScales) {
      int regs = static_cast<int>(inner ? 2 * d + 5 : 3 * d + 5);
      auto r = run_attention(ran, part, n, d, n, scale, regs, rng, problems);
      if (!r.machine) return;
      const sim::Machine& m = *r.machine;
      const auto un = static_cast<std::uint32_t>(n);
      if (inner) {
        if (!read_each(m, "q", 1, r.with, "the inner-product order loads each query once and keeps it in registers",
                       problems) ||
            !read_each(m, "K", un, r.with, "the inner-product order streams every key once per query (n times)",
                       problems))
          return;
      } else {
        const std::string once = "the outer-product order loads each key and value once and keeps it in registers";
        if (!read_each(m, "K", 1, r.with, once, problems) || !read_each(m, "V", 1, r.with, once, problems)) return;
      }
      auto o_rows = scalar::writes_of(m, "o") / static_cast<std::uint64_t>(d);
      std::uint64_t limit = inner ? static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n * n);
      if (o_rows > limit) {
        problems.push_back(r.with + ", your trace stores " + std::to_string(o_rows) + " rows of o; the " +
                           (inner ? "inner" : "outer") + "-product order needs " + std::to_string(limit) +
                           (inner ? " (n: once per query)" : " (n^2: once per query per key/value)"));
        return;
      }
    }
  }
}

}  // namespace

FLASHSIM_LESSON_REFERENCE("attention", attention_reference);
FLASHSIM_LESSON_CHECK("attention-one-query", check_one_query);
FLASHSIM_LESSON_CHECK("attention-inner-order",
                      [](const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
                        check_order(ran, part, problems, LoopOrder::InnerProduct);
                      });
FLASHSIM_LESSON_CHECK("attention-outer-order",
                      [](const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
                        check_order(ran, part, problems, LoopOrder::OuterProduct);
                      });

}  // namespace flashsim::lessons

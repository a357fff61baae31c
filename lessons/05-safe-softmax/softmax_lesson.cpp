// Lessons 05 and 06: the float64 softmax reference and the checks that re-run a softmax trace
// for several n and for large inputs, holding it to the lesson's closed-form traffic.
#include <random>

#include "lessons/05-safe-softmax/scalar_check.h"
#include "lessons/lesson.h"
#include "sim/schedules/softmax.h"

namespace flashsim::lessons {
namespace {

void softmax_reference(ArraySet& arrays) {
  const Matrix& x = arrays.at("x");
  Matrix& out = arrays.at("out");
  out.v = sim::schedules::softmax_reference(x.v);
}

// Runs the trace for n = 1, 2, 3, 5, 16 on moderate and large inputs; the reads may not exceed
// reads_per_element * n, the writes n.
void check_softmax_sizes(const sim::Machine& ran, const Part& part, std::vector<std::string>& problems,
                         std::uint64_t reads_per_element) {
  struct Range {
    double lo, hi;
    const char* what;
    const char* hint;
  };
  const Range ranges[] = {
      {-20, 20, "inputs in -20..20", ""},
      {100, 1000, "large inputs in 100..1000",
       "; e^v overflows float32 beyond v = 88.7, so every exponent must be a difference that is <= 0 "
       "(x - m, m_old - m_new)"},
      {-1000, 1000, "inputs in -1000..1000", "; every exponent must be x - max <= 0"}};
  std::mt19937_64 rng(2024);
  for (std::int64_t n : {1, 2, 3, 5, 16}) {
    for (const auto& r : ranges) {
      auto x = scalar::random_values(rng, static_cast<std::size_t>(n), r.lo, r.hi, part.f64);
      scalar::Params params{{"n", n}};
      auto m = scalar::run_resized(ran, part, params, {{"x", x}}, part.regs, problems);
      if (!m) return;
      std::string context = "with n = " + std::to_string(n) + " and " + r.what;
      if (!scalar::outputs_match(*m, "out", sim::schedules::softmax_reference(x), part.tolerance, context, problems)) {
        problems.back() += r.hint;
        return;
      }
      const auto& c = m->counters();
      const auto un = static_cast<std::uint64_t>(n);
      if (c.elem_reads > reads_per_element * un) {
        problems.push_back("with n = " + std::to_string(n) + " your trace reads " + std::to_string(c.elem_reads) +
                           " DRAM elements; the lesson's budget is " + std::to_string(reads_per_element) + "n = " +
                           std::to_string(reads_per_element * un));
        return;
      }
      if (c.elem_writes > un) {
        problems.push_back("with n = " + std::to_string(n) + " your trace writes " + std::to_string(c.elem_writes) +
                           " DRAM elements; the budget is n = " + std::to_string(n));
        return;
      }
    }
  }
}

}  // namespace

FLASHSIM_LESSON_REFERENCE("softmax", softmax_reference);
FLASHSIM_LESSON_CHECK("softmax-three-pass", [](const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
  check_softmax_sizes(ran, part, problems, 3);
});
FLASHSIM_LESSON_CHECK("softmax-online", [](const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
  check_softmax_sizes(ran, part, problems, 2);
});

}  // namespace flashsim::lessons

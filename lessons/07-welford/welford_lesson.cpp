// Lesson 07: the float64 mean/variance reference and the single-pass check.
#include <random>

#include "lessons/05-safe-softmax/scalar_check.h"
#include "lessons/lesson.h"
#include "sim/schedules/softmax.h"

namespace flashsim::lessons {
namespace {

void moments_reference(ArraySet& arrays) {
  auto mo = sim::schedules::moments_reference(arrays.at("x").v);
  arrays.at("mean").v.assign(1, mo.mean);
  arrays.at("var").v.assign(1, mo.variance);
}

// For several n, on centred data and on data offset by 1000 (where E[x^2] - E[x]^2 cancels
// catastrophically in float32): correct mean and variance, every x[i] read exactly once.
void check_welford(const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
  struct Data {
    double lo, hi;
    const char* what;
  };
  const Data data[] = {{-10, 10, "inputs in -10..10"}, {1000, 1001, "inputs in 1000..1001"}};
  std::mt19937_64 rng(77);
  for (std::int64_t n : {1, 2, 3, 10, 64}) {
    for (const auto& d : data) {
      auto x = scalar::random_values(rng, static_cast<std::size_t>(n), d.lo, d.hi, part.f64);
      auto m = scalar::run_resized(ran, part, {{"n", n}}, {{"x", x}}, part.regs, problems);
      if (!m) return;
      const std::string with = "with n = " + std::to_string(n) + " and " + d.what;
      auto ref = sim::schedules::moments_reference(x);
      if (!scalar::outputs_match(*m, "mean", {ref.mean}, part.tolerance, with, problems)) return;
      if (!scalar::outputs_match(*m, "var", {ref.variance}, part.tolerance, with, problems)) {
        if (d.lo > 0)
          problems.back() += "; subtracting two large, nearly equal numbers (E[x^2] - E[x]^2) loses every digit: "
                             "update the mean and M2 with deviations instead";
        return;
      }
      auto id = m->program().find_array("x");
      const auto& reads = m->array(*id).tile_reads;
      for (std::size_t i = 0; i < reads.size(); ++i)
        if (reads[i] != 1) {
          problems.push_back(with + ", x[" + std::to_string(i) + "] is read " + std::to_string(reads[i]) +
                             " times; a single pass reads every element exactly once");
          return;
        }
      if (m->counters().elem_reads > static_cast<std::uint64_t>(n) + 2 || m->counters().elem_writes > 2) {
        problems.push_back(with + " your trace reads " + std::to_string(m->counters().elem_reads) + " and writes " +
                           std::to_string(m->counters().elem_writes) +
                           " DRAM elements; the budget is n + 2 reads (x and the two constants) and 2 writes");
        return;
      }
    }
  }
}

}  // namespace

FLASHSIM_LESSON_REFERENCE("moments", moments_reference);
FLASHSIM_LESSON_CHECK("welford-single-pass", check_welford);

}  // namespace flashsim::lessons

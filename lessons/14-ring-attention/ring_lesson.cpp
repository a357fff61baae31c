// Lesson 14: the float64 reference of one ring step's merge of two (O, logsumexp) states.
#include <algorithm>
#include <cmath>

#include "lessons/lesson.h"

namespace {

void ring_merge_reference(flashsim::lessons::ArraySet& a) {
  const auto& oa = a.at("oa");
  const auto& ob = a.at("ob");
  const double sa = a.at("sa").v[0], sb = a.at("sb").v[0];
  const double m = std::max(sa, sb), wa = std::exp(sa - m), wb = std::exp(sb - m);
  auto& o = a.at("o");
  for (std::size_t k = 0; k < o.v.size(); ++k) o.v[k] = (wa * oa.v[k] + wb * ob.v[k]) / (wa + wb);
  a.at("s").v[0] = m + std::log(wa + wb);
}

}  // namespace

FLASHSIM_LESSON_REFERENCE("ring-merge", ring_merge_reference);

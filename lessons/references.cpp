// Float64 references of the matmul lessons.
#include <stdexcept>

#include "lessons/lesson.h"

namespace flashsim::lessons {
namespace {

// c = a x b; shapes come from the spec (a: m x k, b: k x n, c: m x n).
void matmul_reference(ArraySet& arrays) {
  const Matrix& a = arrays.at("a");
  const Matrix& b = arrays.at("b");
  Matrix& c = arrays.at("c");
  if (a.cols != b.rows || c.rows != a.rows || c.cols != b.cols)
    throw std::invalid_argument("matmul reference: shapes of a, b and c do not fit c = a x b");
  for (std::int64_t i = 0; i < c.rows; ++i)
    for (std::int64_t j = 0; j < c.cols; ++j) {
      double s = 0.0;
      for (std::int64_t k = 0; k < a.cols; ++k) s += a.at(i, k) * b.at(k, j);
      c.at(i, j) = s;
    }
}

}  // namespace

FLASHSIM_LESSON_REFERENCE("matmul", matmul_reference);

}  // namespace flashsim::lessons

// Float64 references of the matmul lessons.
#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "lessons/lesson.h"
#include "sim/machine.h"

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

namespace flashsim::lessons {
namespace {

// The lesson 03 quiz asks for an inner-product scheme: each output's MACs form one run, so
// an output is finished before the next one starts. Operands are tracked through LOADs.
void inner_product_order(const sim::Machine& ran, const Part&, std::vector<std::string>& problems) {
  const isa::Program& p = ran.program();
  struct Tag {
    char array = 0;  // 'a', 'b', or 0 for anything else
    std::int64_t row = 0, col = 0;
  };
  std::vector<Tag> regs(static_cast<std::size_t>(std::max(0, p.highest_reg + 1)));
  std::set<std::pair<std::int64_t, std::int64_t>> done;
  std::optional<std::pair<std::int64_t, std::int64_t>> current;
  for (std::size_t s = 0; s < p.code.size(); ++s) {
    const auto& in = p.code[s];
    const std::array<isa::Operand, 4> ops{in.operand(0), in.operand(1), in.operand(2), in.operand(3)};
    if (in.op == isa::Opcode::LOAD) {
      const auto& name = p.arrays[ops[0].array].name;
      regs[ops[1].reg] = {name == "a" ? 'a' : name == "b" ? 'b' : '\0', ops[0].row, ops[0].col};
      continue;
    }
    if (in.op != isa::Opcode::MAC_Z && in.op != isa::Opcode::MAC) continue;
    const Tag& x = regs[ops[0].reg];
    const Tag& y = regs[ops[1].reg];
    const Tag* a = x.array == 'a' ? &x : y.array == 'a' ? &y : nullptr;
    const Tag* b = x.array == 'b' ? &x : y.array == 'b' ? &y : nullptr;
    int dst = in.op == isa::Opcode::MAC_Z ? 2 : 3;
    if (a && b) {
      std::pair<std::int64_t, std::int64_t> out{a->row, b->col};
      if (current && *current != out) done.insert(*current);
      if (done.count(out)) {
        problems.push_back("the quiz asks for an inner-product scheme, one output at a time, but step " +
                           std::to_string(s + 1) + " (line " + std::to_string(p.loc(s).line) + ") goes back to c[" +
                           std::to_string(out.first) + "][" + std::to_string(out.second) + "] after starting another output");
        return;
      }
      current = out;
    }
    regs[ops[dst].reg] = {};
  }
}

}  // namespace

FLASHSIM_LESSON_CHECK("inner-product-order", inner_product_order);

}  // namespace flashsim::lessons

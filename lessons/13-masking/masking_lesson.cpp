// Lesson 13: re-runs a causal attention trace for other N, d, B and holds it to the causal
// closed form: only the key blocks at or left of the diagonal are loaded.
#include <algorithm>
#include <random>

#include "lessons/10-element-is-tile/tile_check.h"
#include "lessons/lesson.h"

namespace flashsim::lessons {
namespace {

// Bytes of K (or V) a causal square-tiled schedule reads: query block i loads key blocks 0..i.
std::uint64_t causal_kv_bytes(std::int64_t n, std::int64_t d, std::int64_t b, int elem) {
  const std::int64_t t = tile::ceil_div(n, b);
  std::uint64_t total = 0;
  for (std::int64_t j = 0; j < t; ++j) total += tile::bytes(std::min(b, n - j * b), d, elem) * static_cast<std::uint64_t>(t - j);
  return total;
}

void check_causal(const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
  struct Size {
    std::int64_t n, d, b;
  };
  const Size sizes[] = {{7, 2, 2}, {13, 3, 4}, {3, 2, 4}, {16, 4, 4}, {9, 2, 3}, {5, 3, 1}};
  std::mt19937_64 rng(13);
  for (const auto& s : sizes) {
    tile::Case c;
    c.params = {{"N", s.n}, {"d", s.d}, {"B", s.b}};
    c.what = "random inputs";
    c.arrays = {{"Q", 2, s.n, s.d, s.b, s.d, 2},
                {"K", 2, s.n, s.d, s.b, s.d, 2},
                {"V", 2, s.n, s.d, s.b, s.d, 2},
                {"O", 2, s.n, s.d, s.b, s.d, 2},
                {"L", 1, s.n, 1, s.b, 1, 4}};
    c.inputs["Q"] = tile::random_mat(rng, s.n, s.d, -3, 3);
    c.inputs["K"] = tile::random_mat(rng, s.n, s.d, -3, 3);
    c.inputs["V"] = tile::random_mat(rng, s.n, s.d);
    auto f = tile::attention_forward(c.inputs["Q"], c.inputs["K"], c.inputs["V"], s.n, s.n, s.d, true);
    c.expected = {{"O", f.O}, {"L", f.L}};
    const std::uint64_t nd = tile::bytes(s.n, s.d, 2), kv = causal_kv_bytes(s.n, s.d, s.b, 2);
    const std::string why = "causal: only the key blocks at or left of the diagonal, d*2*sum_j r_j*(T-j)";
    c.budgets = {{"K", false, kv, why},
                 {"V", false, kv, why},
                 {"Q", false, nd, "Q read once: N*d*2"},
                 {"O", true, nd, "O written once: N*d*2"},
                 {"L", true, tile::bytes(s.n, 1, 4), "L written once: N*4"}};
    c.op_budgets = {{"MASK", static_cast<std::uint64_t>(tile::ceil_div(s.n, s.b)), "one diagonal tile per query block needs it"}};
    if (!tile::run_case(ran, part, c, problems)) return;
  }
}

}  // namespace

FLASHSIM_LESSON_CHECK("causal-fa2", check_causal);

}  // namespace flashsim::lessons

// Lesson 10: the float64 attention reference of the tile lessons and the check that re-runs the
// two-state merge for other tile shapes and for scores in the thousands.
#include <random>

#include "lessons/10-element-is-tile/tile_check.h"
#include "lessons/lesson.h"

namespace flashsim::lessons {
namespace {

// O and L (whichever the lesson has) of Q against K, V; the sizes come from the arrays.
void attention_reference(ArraySet& a, bool causal) {
  const Matrix& q = a.at("Q");
  const Matrix& k = a.at("K");
  auto f = tile::attention_forward(q.v, k.v, a.at("V").v, q.rows, k.rows, q.cols, causal);
  if (auto o = a.find("O"); o != a.end()) o->second.v = f.O;
  if (auto l = a.find("L"); l != a.end()) l->second.v = f.L;
}

void check_merge(const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
  struct Size {
    std::int64_t br, bc, d;
    double score;  // Q and K uniform in -score..score
    const char* what;
  };
  const Size sizes[] = {{2, 3, 5, 3, "random inputs"},
                        {8, 2, 3, 3, "random inputs"},
                        {1, 1, 2, 3, "random inputs"},
                        {3, 5, 4, 3, "random inputs"},
                        {4, 4, 8, 30, "Q, K in -30..30: scores in the thousands, so every exponent must be <= 0"}};
  std::mt19937_64 rng(10);
  for (const auto& s : sizes) {
    tile::Case c;
    c.params = {{"Br", s.br}, {"Bc", s.bc}, {"d", s.d}};
    c.what = s.what;
    const std::int64_t nk = 2 * s.bc;
    c.arrays = {{"Q", 2, s.br, s.d, s.br, s.d, 2},
                {"K", 2, nk, s.d, s.bc, s.d, 2},
                {"V", 2, nk, s.d, s.bc, s.d, 2},
                {"O", 2, s.br, s.d, s.br, s.d, 2},
                {"L", 1, s.br, 1, s.br, 1, 4}};
    c.inputs["Q"] = tile::random_mat(rng, s.br, s.d, -s.score, s.score);
    c.inputs["K"] = tile::random_mat(rng, nk, s.d, -s.score, s.score);
    c.inputs["V"] = tile::random_mat(rng, nk, s.d);
    auto f = tile::attention_forward(c.inputs["Q"], c.inputs["K"], c.inputs["V"], s.br, nk, s.d, false);
    c.expected = {{"O", f.O}, {"L", f.L}};
    c.budgets = {{"Q", false, tile::bytes(s.br, s.d, 2), "Q read once: Br*d*2"},
                 {"K", false, tile::bytes(nk, s.d, 2), "K read once: 2*Bc*d*2"},
                 {"V", false, tile::bytes(nk, s.d, 2), "V read once: 2*Bc*d*2"},
                 {"O", true, tile::bytes(s.br, s.d, 2), "O written once: Br*d*2"},
                 {"L", true, tile::bytes(s.br, 1, 4), "L written once: Br*4"}};
    if (!tile::run_case(ran, part, c, problems)) return;
  }
}

}  // namespace

FLASHSIM_LESSON_REFERENCE("tile-attention", [](ArraySet& a) { attention_reference(a, false); });
FLASHSIM_LESSON_REFERENCE("tile-attention-causal", [](ArraySet& a) { attention_reference(a, true); });
FLASHSIM_LESSON_CHECK("tile-merge", check_merge);

}  // namespace flashsim::lessons

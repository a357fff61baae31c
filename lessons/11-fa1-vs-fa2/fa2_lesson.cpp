// Lesson 11: re-runs an attention trace for other N, d, Br, Bc and holds it to FlashAttention
// 2's counted traffic: O written once and never read, Q read once, K and V once per query block.
#include <random>

#include "lessons/10-element-is-tile/tile_check.h"
#include "lessons/lesson.h"

namespace flashsim::lessons {
namespace {

void check_fa2_order(const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
  struct Size {
    std::int64_t n, d, br, bc;
  };
  // N a multiple of Br and Bc (padding is lesson 13's subject); Br != Bc both ways; one block.
  const Size sizes[] = {{8, 4, 4, 4}, {12, 2, 4, 6}, {12, 3, 6, 4}, {6, 2, 3, 2}, {8, 4, 8, 8}, {4, 2, 1, 2}};
  std::mt19937_64 rng(11);
  for (const auto& s : sizes) {
    tile::Case c;
    c.params = {{"N", s.n}, {"d", s.d}, {"Br", s.br}, {"Bc", s.bc}};
    c.what = "random inputs";
    c.arrays = {{"Q", 2, s.n, s.d, s.br, s.d, 2}, {"K", 2, s.n, s.d, s.bc, s.d, 2}, {"V", 2, s.n, s.d, s.bc, s.d, 2},
                {"O", 2, s.n, s.d, s.br, s.d, 2}, {"L", 1, s.n, 1, s.br, 1, 4},     {"m", 1, s.n, 1, s.br, 1, 4},
                {"l", 1, s.n, 1, s.br, 1, 4}};
    c.inputs["Q"] = tile::random_mat(rng, s.n, s.d, -3, 3);
    c.inputs["K"] = tile::random_mat(rng, s.n, s.d, -3, 3);
    c.inputs["V"] = tile::random_mat(rng, s.n, s.d);
    auto f = tile::attention_forward(c.inputs["Q"], c.inputs["K"], c.inputs["V"], s.n, s.n, s.d, false);
    c.expected = {{"O", f.O}, {"L", f.L}};
    const std::uint64_t nd = tile::bytes(s.n, s.d, 2), tr = static_cast<std::uint64_t>(tile::ceil_div(s.n, s.br));
    c.budgets = {{"O", true, nd, "FA2 writes O once: N*d*2"},
                 {"O", false, 0, "FA2 never reads O back"},
                 {"Q", false, nd, "Q read once: N*d*2"},
                 {"K", false, tr * nd, "K read once per query block: Tr*N*d*2"},
                 {"V", false, tr * nd, "V read once per query block: Tr*N*d*2"},
                 {"L", true, tile::bytes(s.n, 1, 4), "L written once: N*4"},
                 {"m", true, 0, "FA2 keeps m in a register"},
                 {"l", true, 0, "FA2 keeps l in a register"}};
    if (!tile::run_case(ran, part, c, problems)) return;
  }
}

}  // namespace

FLASHSIM_LESSON_CHECK("fa2-order", check_fa2_order);

}  // namespace flashsim::lessons

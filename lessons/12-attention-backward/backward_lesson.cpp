// Lesson 12: the float64 gradients of attention and the check that re-runs a dK/dV pass for
// other N, d, Br, Bc: K and V loaded once, dK and dV written once, D from dO and O.
#include <random>

#include "lessons/10-element-is-tile/tile_check.h"
#include "lessons/lesson.h"

namespace flashsim::lessons {
namespace {

// Derived inputs O and L (the forward pass of the random Q, K, V), then dK, dV (and dQ when
// the lesson has it) in closed form.
void backward_reference(ArraySet& a) {
  const Matrix& q = a.at("Q");
  const Matrix& k = a.at("K");
  const auto& v = a.at("V").v;
  auto f = tile::attention_forward(q.v, k.v, v, q.rows, k.rows, q.cols, false);
  a.at("O").v = f.O;
  a.at("L").v = f.L;
  auto g = tile::attention_backward(q.v, k.v, v, a.at("dO").v, q.rows, k.rows, q.cols, false);
  a.at("dK").v = g.dK;
  a.at("dV").v = g.dV;
  if (auto dq = a.find("dQ"); dq != a.end()) dq->second.v = g.dQ;
}

void check_dkdv(const sim::Machine& ran, const Part& part, std::vector<std::string>& problems) {
  struct Size {
    std::int64_t n, d, br, bc;
  };
  const Size sizes[] = {{12, 2, 4, 6}, {12, 3, 6, 4}, {6, 2, 3, 2}, {16, 4, 8, 4}, {4, 2, 4, 4}};
  std::mt19937_64 rng(12);
  for (const auto& s : sizes) {
    tile::Case c;
    c.params = {{"N", s.n}, {"d", s.d}, {"Br", s.br}, {"Bc", s.bc}};
    c.what = "random inputs";
    auto qtile = [&](const char* name) { return tile::ArraySpec{name, 2, s.n, s.d, s.br, s.d, 2}; };
    auto ktile = [&](const char* name) { return tile::ArraySpec{name, 2, s.n, s.d, s.bc, s.d, 2}; };
    auto stat = [&](const char* name) { return tile::ArraySpec{name, 1, s.n, 1, s.br, 1, 4}; };
    c.arrays = {qtile("Q"), ktile("K"), ktile("V"), qtile("O"), qtile("dO"), stat("L"), stat("D"), ktile("dK"), ktile("dV")};
    auto& Q = c.inputs["Q"] = tile::random_mat(rng, s.n, s.d, -2, 2);
    auto& K = c.inputs["K"] = tile::random_mat(rng, s.n, s.d, -2, 2);
    auto& V = c.inputs["V"] = tile::random_mat(rng, s.n, s.d);
    auto& dO = c.inputs["dO"] = tile::random_mat(rng, s.n, s.d);
    auto f = tile::attention_forward(Q, K, V, s.n, s.n, s.d, false);
    c.inputs["O"] = f.O;
    c.inputs["L"] = f.L;
    c.inputs["D"] = tile::random_mat(rng, s.n, 1, -100, 100);  // scratch: garbage until written
    auto g = tile::attention_backward(Q, K, V, dO, s.n, s.n, s.d, false);
    c.expected = {{"dK", g.dK}, {"dV", g.dV}};
    const std::uint64_t nd = tile::bytes(s.n, s.d, 2), ns = tile::bytes(s.n, 1, 4);
    const auto tc = static_cast<std::uint64_t>(tile::ceil_div(s.n, s.bc));
    c.budgets = {{"K", false, nd, "K read once: N*d*2; a second sweep over K is what the D trick saves"},
                 {"V", false, nd, "V read once: N*d*2"},
                 {"O", false, nd, "O read once, for D: N*d*2"},
                 {"Q", false, tc * nd, "Q read once per key block: Tc*N*d*2"},
                 {"dO", false, (tc + 1) * nd, "dO read once for D and once per key block: (Tc+1)*N*d*2"},
                 {"L", false, tc * ns, "L read once per key block: Tc*N*4"},
                 {"D", false, tc * ns, "D read once per key block: Tc*N*4"},
                 {"D", true, ns, "D written once: N*4"},
                 {"dK", true, nd, "dK written once: N*d*2"},
                 {"dV", true, nd, "dV written once: N*d*2"}};
    if (!tile::run_case(ran, part, c, problems)) return;
  }
}

}  // namespace

FLASHSIM_LESSON_REFERENCE("tile-attention-backward", backward_reference);
FLASHSIM_LESSON_CHECK("backward-dkdv", check_dkdv);

}  // namespace flashsim::lessons

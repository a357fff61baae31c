// Values: every tile schedule against a float64 reference, including ragged sizes
// (N % Br != 0), causal masks and rows that see no key at all.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <algorithm>

#include "sim/tile/schedules.h"
#include "tile_helpers.h"

using namespace flashsim;
using namespace tiletest;
using traffic::AttentionBackward;
using traffic::AttentionForward;
using traffic::AttentionParams;

namespace {

struct Case {
  std::int64_t n, n_kv, d, br, bc;
  bool causal;
};

// Sizes with ragged tiles, Br != Bc, and n > n_kv with causal (the first n - n_kv rows and, for
// the last case, whole query blocks see no key).
const Case kCases[] = {
    {8, 0, 4, 4, 4, false},   {13, 0, 5, 4, 3, false}, {13, 0, 5, 4, 3, true},  {17, 0, 3, 8, 4, true},
    {10, 0, 4, 2, 6, true},   {12, 7, 4, 4, 3, true},  {11, 3, 2, 2, 2, true},  {9, 14, 3, 4, 5, true},
    {9, 14, 3, 4, 5, false},
};

AttentionParams params(const Case& c) {
  AttentionParams p;
  p.n = c.n;
  p.n_kv = c.n_kv;
  p.d = c.d;
  p.br = c.br;
  p.bc = c.bc;
  p.causal = c.causal;
  return p;
}

std::string describe(const Case& c) {
  return "n=" + std::to_string(c.n) + " n_kv=" + std::to_string(c.n_kv) + " d=" + std::to_string(c.d) +
         " br=" + std::to_string(c.br) + " bc=" + std::to_string(c.bc) + (c.causal ? " causal" : "");
}

}  // namespace

TEST_CASE("attention forward schedules match the float64 reference", "[tile][values]") {
  for (const Case& c : kCases) {
    AttentionParams p = params(c);
    const std::int64_t nk = tile::kv_length(p);
    Mat Q = random_mat(c.n, c.d, 1), K = random_mat(nk, c.d, 2), V = random_mat(nk, c.d, 3);
    Attention ref = attention_reference(Q, K, V, {}, c.n, nk, c.d, c.causal);
    for (auto s : {AttentionForward::Naive, AttentionForward::FA1, AttentionForward::FA2}) {
      INFO(describe(c) << " schedule " << tile::to_string(s));
      auto m = run_values(tile::attention_forward_program(p, s), {{"Q", Q}, {"K", K}, {"V", V}});
      CHECK(max_error(values(m, "O"), ref.O) < 1e-12);
      Mat L;
      if (s == AttentionForward::FA1) {  // FA1 keeps m and l; the logsumexp is m + ln l
        const Mat &mx = values(m, "m"), &l = values(m, "l");
        for (std::size_t i = 0; i < mx.size(); ++i) L.push_back(mx[i] + std::log(l[i]));
      } else {
        L = values(m, "L");
      }
      CHECK(max_error(L, ref.L) < 1e-12);
    }
  }
}

TEST_CASE("fully masked rows give output 0 and logsumexp -inf without a division fault", "[tile][values]") {
  AttentionParams p = params({11, 3, 2, 2, 2, true});  // rows 0..7 see no key
  Mat Q = random_mat(11, 2, 4), K = random_mat(3, 2, 5), V = random_mat(3, 2, 6);
  auto m = run_values(tile::attention_forward_program(p, AttentionForward::FA2), {{"Q", Q}, {"K", K}, {"V", V}});
  const Mat& O = values(m, "O");
  const Mat& L = values(m, "L");
  for (int r = 0; r < 8; ++r) {
    CHECK(L[static_cast<std::size_t>(r)] == -std::numeric_limits<double>::infinity());
    CHECK(O[static_cast<std::size_t>(2 * r)] == 0.0);
    CHECK(O[static_cast<std::size_t>(2 * r + 1)] == 0.0);
  }
  CHECK(std::isfinite(L[8]));
}

TEST_CASE("the base-2 variant equals the natural one with Q scaled by log2(e)", "[tile][values]") {
  for (const Case& c : {kCases[1], kCases[2], kCases[5]}) {
    AttentionParams p = params(c);
    p.base2 = true;
    const std::int64_t nk = tile::kv_length(p);
    Mat Q = random_mat(c.n, c.d, 7), K = random_mat(nk, c.d, 8), V = random_mat(nk, c.d, 9);
    Attention ref = attention_reference(Q, K, V, {}, c.n, nk, c.d, c.causal);
    Mat Q2 = Q;
    for (auto& v : Q2) v *= 1.0 / std::log(2.0);  // fold log2(e) into Q
    auto m = run_values(tile::attention_forward_program(p, AttentionForward::FA2), {{"Q", Q2}, {"K", K}, {"V", V}});
    INFO(describe(c));
    CHECK(max_error(values(m, "O"), ref.O) < 1e-12);
    Mat L2 = ref.L;
    for (auto& v : L2) v /= std::log(2.0);  // logsumexp in base 2
    CHECK(max_error(values(m, "L"), L2) < 1e-12);
    // The trace really uses the base-2 opcodes.
    std::uint64_t exp2 = m.counters().count(isa::Opcode::EXP2D), expe = m.counters().count(isa::Opcode::EXPD);
    CHECK(exp2 > 0);
    CHECK(expe == 0);
  }
}

TEST_CASE("attention backward schedules match the closed-form gradients", "[tile][values]") {
  for (const Case& c : kCases) {
    AttentionParams p = params(c);
    const std::int64_t nk = tile::kv_length(p);
    Mat Q = random_mat(c.n, c.d, 11), K = random_mat(nk, c.d, 12), V = random_mat(nk, c.d, 13),
        dO = random_mat(c.n, c.d, 14);
    Attention ref = attention_reference(Q, K, V, dO, c.n, nk, c.d, c.causal);
    for (auto s : {AttentionBackward::TwoPass, AttentionBackward::AtomicDQ, AttentionBackward::RowWise,
                   AttentionBackward::RowWiseNoD}) {
      INFO(describe(c) << " schedule " << tile::to_string(s));
      std::map<std::string, Mat> in{{"Q", Q}, {"K", K}, {"V", V}, {"dO", dO}, {"L", ref.L}};
      if (s != AttentionBackward::RowWiseNoD) in["O"] = ref.O;
      auto m = run_values(tile::attention_backward_program(p, s), in);
      CHECK(max_error(values(m, "dQ"), ref.dQ) < 1e-11);
      CHECK(max_error(values(m, "dK"), ref.dK) < 1e-11);
      CHECK(max_error(values(m, "dV"), ref.dV) < 1e-11);
    }
  }
}

namespace {

// Random Q, K, V for heads 0 and 1 ("Q_h0", ...) and each head's float64 reference.
struct TwoHeads {
  std::map<std::string, Mat> in;
  Attention ref[2];
};
TwoHeads two_heads(std::int64_t n, std::int64_t d, bool causal, std::uint32_t seed) {
  TwoHeads t;
  for (int h = 0; h < 2; ++h) {
    Mat Q = random_mat(n, d, seed + h), K = random_mat(n, d, seed + 10 + h), V = random_mat(n, d, seed + 20 + h);
    t.ref[h] = attention_reference(Q, K, V, {}, n, n, d, causal);
    const std::string sfx = "_h" + std::to_string(h);
    t.in["Q" + sfx] = Q;
    t.in["K" + sfx] = K;
    t.in["V" + sfx] = V;
  }
  return t;
}

}  // namespace

TEST_CASE("two heads compute two independent attentions", "[tile][values]") {
  AttentionParams p = params({13, 0, 5, 4, 3, true});
  p.batch_heads = 2;
  const TwoHeads t = two_heads(13, 5, true, 20);
  auto m = run_values(tile::attention_forward_program(p, AttentionForward::FA2), t.in);
  CHECK(max_error(values(m, "O_h0"), t.ref[0].O) < 1e-12);
  CHECK(max_error(values(m, "O_h1"), t.ref[1].O) < 1e-12);
}

TEST_CASE("the split tail: parts through the scratch and the merge give the same attention", "[tile][values]") {
  // Two heads of 7 Q tiles (the last 3 rows) and 14 key tiles (the last 1 key): over 3, 4 and 5 SMs
  // the last round's 2, 2 and 4 tiles are split over 3, 4 and 5 blocks.
  AttentionParams p = params({27, 0, 3, 4, 2, false});
  p.batch_heads = 2;
  const TwoHeads t = two_heads(27, 3, false, 50);
  for (int sms : {3, 4, 5}) {
    INFO("split over " << sms << " SMs");
    p.split_tail_sms = sms;
    const auto program = tile::attention_forward_program(p, AttentionForward::FA2);
    REQUIRE(std::any_of(program.arrays.begin(), program.arrays.end(), [](const auto& a) { return a.name == "Opart"; }));
    auto m = run_values(program, t.in);
    for (int h = 0; h < 2; ++h) {
      const std::string sfx = "_h" + std::to_string(h);
      CHECK(max_error(values(m, "O" + sfx), t.ref[h].O) < 1e-12);
      CHECK(max_error(values(m, "L" + sfx), t.ref[h].L) < 1e-12);
    }
  }
}

TEST_CASE("tiled matmul schedules compute A*B", "[tile][values]") {
  for (auto [mm, nn, kk, bm, bn, bk] : {std::array<std::int64_t, 6>{8, 8, 8, 4, 4, 4},
                                        std::array<std::int64_t, 6>{7, 9, 10, 3, 4, 3}}) {
    traffic::MatmulParams p;
    p.m = mm;
    p.n = nn;
    p.k = kk;
    p.bm = bm;
    p.bn = bn;
    p.bk = bk;
    Mat A = random_mat(mm, kk, 50), B = random_mat(kk, nn, 51), C(static_cast<std::size_t>(mm * nn), 0.0);
    for (std::int64_t i = 0; i < mm; ++i)
      for (std::int64_t j = 0; j < nn; ++j)
        for (std::int64_t k = 0; k < kk; ++k)
          C[static_cast<std::size_t>(i * nn + j)] += A[static_cast<std::size_t>(i * kk + k)] * B[static_cast<std::size_t>(k * nn + j)];
    for (std::int64_t chunk : {0, 2, 100}) {
      for (auto s : {traffic::MatmulSchedule::Inner, traffic::MatmulSchedule::Outer}) {
        p.k_chunk = chunk;
        INFO(tile::to_string(s) << " k_chunk " << chunk << " m " << mm);
        auto m = run_values(tile::matmul_program(p, s), {{"A", A}, {"B", B}});
        CHECK(max_error(values(m, "C"), C) < 1e-12);
      }
      // The outer product with C streamed in strips of rows (the GPU kernel's order): same C.
      for (std::int64_t strip : {std::int64_t{1}, bm}) {
        if (bm % strip) continue;
        p.c_strip_rows = strip;
        INFO("outer, C strips of " << strip << " rows, k_chunk " << chunk << " m " << mm);
        auto m = run_values(tile::matmul_program(p, traffic::MatmulSchedule::Outer), {{"A", A}, {"B", B}});
        CHECK(max_error(values(m, "C"), C) < 1e-12);
        p.c_strip_rows = 0;
      }
    }
  }
}

TEST_CASE("long-row softmax schedules compute softmax, padding masked", "[tile][values]") {
  for (auto [rows, cols, chunk] : {std::array<std::int64_t, 3>{3, 12, 4}, std::array<std::int64_t, 3>{2, 11, 4},
                                   std::array<std::int64_t, 3>{1, 5, 8}}) {
    traffic::SoftmaxParams p;
    p.rows = rows;
    p.cols = cols;
    p.chunk = chunk;
    Mat X = random_mat(rows, cols, 60, 5.0), Y(X.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      double mx = -1e300, l = 0;
      for (std::int64_t c = 0; c < cols; ++c) mx = std::max(mx, X[static_cast<std::size_t>(r * cols + c)]);
      for (std::int64_t c = 0; c < cols; ++c) l += std::exp(X[static_cast<std::size_t>(r * cols + c)] - mx);
      for (std::int64_t c = 0; c < cols; ++c)
        Y[static_cast<std::size_t>(r * cols + c)] = std::exp(X[static_cast<std::size_t>(r * cols + c)] - mx) / l;
    }
    for (auto s : {traffic::SoftmaxSchedule::ThreePass, traffic::SoftmaxSchedule::Online}) {
      INFO(tile::to_string(s) << " cols " << cols);
      auto m = run_values(tile::softmax_program(p, s), {{"X", X}});
      CHECK(max_error(values(m, "Y"), Y) < 1e-12);
    }
  }
}

TEST_CASE("MASK reads the tile's origin: padded keys and the causal diagonal become -inf", "[tile][values]") {
  auto prog = tile::attention_forward_program(params({6, 0, 2, 3, 4, true}), AttentionForward::FA2);
  bool has_mask = false;
  for (const auto& in : prog.code) has_mask = has_mask || in.op == isa::Opcode::MASK;
  CHECK(has_mask);
  REQUIRE(prog.config.causal_diag.has_value());
  CHECK(*prog.config.causal_diag == 0);
}

TEST_CASE("a program holding more tiles than the SRAM faults with a clear message", "[tile][values]") {
  AttentionParams p = params({64, 0, 16, 16, 16, false});
  p.sram_bytes = 2048;  // a single 16x16 fp32 tile is 1024 bytes
  auto prog = tile::attention_forward_program(p, AttentionForward::FA2);
  sim::MachineOptions o;
  o.compute_values = false;
  o.history = false;
  sim::Machine m(std::move(prog), o);
  try {
    m.run();
    FAIL("no fault");
  } catch (const sim::MachineFault& f) {
    CHECK(f.message.find("more than the SRAM's 2048 bytes") != std::string::npos);
  }
}

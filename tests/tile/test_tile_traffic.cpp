// Counted bytes: every schedule's per-array DRAM traffic, counted by running it on the machine,
// equals a closed-form formula written here independently of the generators.
#include <catch2/catch.hpp>

#include "sim/tile/schedules.h"
#include "tile_helpers.h"

using namespace flashsim;
using namespace flashsim::traffic;

namespace {

using Expected = std::map<std::string, std::pair<std::uint64_t, std::uint64_t>>;  // name -> (read, written)

void check_matches(const Traffic& t, const Expected& want) {
  for (const auto& [name, rw] : want) {
    INFO("array " << name);
    const ArrayTraffic* a = t.find(name);
    REQUIRE(a != nullptr);
    CHECK(a->bytes_read == rw.first);
    CHECK(a->bytes_written == rw.second);
  }
  CHECK(t.arrays.size() == want.size());
}

// Geometry written out again (not taken from the generators).
struct G {
  std::int64_t nq, nk, d, br, bc, tr, tc;
  bool causal;
  explicit G(const AttentionParams& p)
      : nq(p.n), nk(p.n_kv ? p.n_kv : p.n), d(p.d), br(p.br), bc(p.bc), tr((nq + br - 1) / br),
        tc((nk + bc - 1) / bc), causal(p.causal) {}
  std::int64_t rows_q(std::int64_t i) const { return std::min(br, nq - i * br); }
  std::int64_t rows_k(std::int64_t j) const { return std::min(bc, nk - j * bc); }
  // A tile is visited when some query in it may see some key in it (key block 0 always).
  bool vis(std::int64_t i, std::int64_t j) const {
    return !causal || j == 0 || j * bc <= std::min((i + 1) * br, nq) - 1 + (nk - nq);
  }
  // Sums over visited tiles of rows_k (per query block) and rows_q (per key block).
  std::uint64_t kv_rows_seen() const {
    std::uint64_t s = 0;
    for (std::int64_t i = 0; i < tr; ++i)
      for (std::int64_t j = 0; j < tc; ++j)
        if (vis(i, j)) s += static_cast<std::uint64_t>(rows_k(j));
    return s;
  }
  std::uint64_t q_rows_seen(bool skip_first_kv_block) const {
    std::uint64_t s = 0;
    for (std::int64_t j = skip_first_kv_block ? 1 : 0; j < tc; ++j)
      for (std::int64_t i = 0; i < tr; ++i)
        if (vis(i, j)) s += static_cast<std::uint64_t>(rows_q(i));
    return s;
  }
};

Expected forward_formula(const AttentionParams& p, AttentionForward s) {
  G g(p);
  const std::uint64_t e = static_cast<std::uint64_t>(p.elem_bytes), st = static_cast<std::uint64_t>(p.stat_bytes),
                      sc = static_cast<std::uint64_t>(p.score_bytes), d = static_cast<std::uint64_t>(g.d);
  const std::uint64_t nq = static_cast<std::uint64_t>(g.nq), nk = static_cast<std::uint64_t>(g.nk),
                      tr = static_cast<std::uint64_t>(g.tr);
  switch (s) {
    case AttentionForward::Naive:
      return {{"Q", {nq * d * e, 0}},       {"K", {tr * nk * d * e, 0}},  {"V", {tr * nk * d * e, 0}},
              {"S", {2 * nq * nk * sc, nq * nk * sc}}, {"P", {nq * nk * sc, nq * nk * sc}},
              {"O", {0, nq * d * e}},       {"L", {0, nq * st}}};
    case AttentionForward::FA1: {
      std::uint64_t all = g.q_rows_seen(false), later = g.q_rows_seen(true);
      return {{"Q", {all * d * e, 0}},   {"K", {nk * d * e, 0}},       {"V", {nk * d * e, 0}},
              {"O", {later * d * e, all * d * e}}, {"m", {later * st, all * st}}, {"l", {later * st, all * st}}};
    }
    case AttentionForward::FA2: {
      std::uint64_t kv = g.kv_rows_seen();
      return {{"Q", {nq * d * e, 0}}, {"K", {kv * d * e, 0}}, {"V", {kv * d * e, 0}},
              {"O", {0, nq * d * e}}, {"L", {0, nq * st}}};
    }
  }
  return {};
}

Expected backward_formula(const AttentionParams& p, AttentionBackward s) {
  G g(p);
  const std::uint64_t e = static_cast<std::uint64_t>(p.elem_bytes), st = static_cast<std::uint64_t>(p.stat_bytes),
                      ac = static_cast<std::uint64_t>(p.accum_bytes), d = static_cast<std::uint64_t>(g.d);
  const std::uint64_t nq = static_cast<std::uint64_t>(g.nq), nk = static_cast<std::uint64_t>(g.nk);
  const std::uint64_t qrows = g.q_rows_seen(false);  // Q-side rows loaded by a column-wise pass
  const std::uint64_t krows = g.kv_rows_seen();      // K-side rows loaded by a row-wise pass
  Expected x;
  const bool with_d = s != AttentionBackward::RowWiseNoD;
  if (with_d) {  // D = rowsum(dO * O): one read of O and dO, one write of D
    x["O"] = {nq * d * e, 0};
    x["D"] = {0, nq * st};
  }
  x["dO"] = {with_d ? nq * d * e : 0, 0};
  x["dQ"] = {0, nq * d * e};
  x["dK"] = {0, nk * d * e};
  x["dV"] = {0, nk * d * e};
  auto add_r = [&](const char* n, std::uint64_t v) { x[n].first += v; };
  switch (s) {
    case AttentionBackward::TwoPass:
      // dK/dV pass: K, V once; Q, dO, L, D per visited tile. dQ pass: Q, dO, L, D once; K, V per tile.
      add_r("K", nk * d * e + krows * d * e);
      add_r("V", nk * d * e + krows * d * e);
      add_r("Q", qrows * d * e + nq * d * e);
      add_r("dO", qrows * d * e + nq * d * e);
      add_r("L", qrows * st + nq * st);
      add_r("D", qrows * st + nq * st);
      break;
    case AttentionBackward::AtomicDQ:
      add_r("K", nk * d * e);
      add_r("V", nk * d * e);
      add_r("Q", qrows * d * e);
      add_r("dO", qrows * d * e);
      add_r("L", qrows * st);
      add_r("D", qrows * st);
      // read + write per update, then one read to convert into dQ
      x["dQacc"] = {qrows * d * ac + nq * d * ac, qrows * d * ac};
      break;
    case AttentionBackward::RowWise:
    case AttentionBackward::RowWiseNoD: {
      const std::uint64_t sweeps = with_d ? 1 : 2;  // without D, K and V come twice
      add_r("K", sweeps * krows * d * e);
      add_r("V", sweeps * krows * d * e);
      add_r("Q", nq * d * e);
      add_r("dO", nq * d * e);
      add_r("L", nq * st);
      if (with_d) add_r("D", nq * st);
      x["dKacc"] = {krows * d * ac + nk * d * ac, krows * d * ac};
      x["dVacc"] = {krows * d * ac + nk * d * ac, krows * d * ac};
      break;
    }
  }
  return x;
}

AttentionParams sizes(std::int64_t n, std::int64_t n_kv, std::int64_t d, std::int64_t br, std::int64_t bc, bool causal) {
  AttentionParams p;
  p.n = n;
  p.n_kv = n_kv;
  p.d = d;
  p.br = br;
  p.bc = bc;
  p.causal = causal;
  return p;
}

const AttentionParams kSizes[] = {
    sizes(256, 0, 64, 64, 64, false), sizes(1000, 0, 64, 64, 32, false), sizes(1000, 0, 64, 64, 32, true),
    sizes(77, 0, 16, 16, 8, true),    sizes(77, 0, 16, 8, 16, true),     sizes(100, 30, 8, 16, 16, true),
    sizes(40, 90, 8, 16, 8, true),    sizes(129, 0, 128, 128, 64, false),
};

}  // namespace

TEST_CASE("forward traffic equals the closed forms", "[tile][traffic]") {
  for (AttentionParams p : kSizes) {
    for (int mix = 0; mix < 2; ++mix) {
      if (mix) {  // other element sizes
        p.elem_bytes = 4;
        p.score_bytes = 2;
        p.stat_bytes = 8;
      }
      for (auto s : {AttentionForward::Naive, AttentionForward::FA1, AttentionForward::FA2}) {
        INFO("n=" << p.n << " n_kv=" << p.n_kv << " d=" << p.d << " br=" << p.br << " bc=" << p.bc
                  << (p.causal ? " causal " : " ") << tile::to_string(s) << " mix " << mix);
        check_matches(count_attention_forward(p, s), forward_formula(p, s));
      }
    }
  }
}

TEST_CASE("the split tail adds its parts' Q loads and the partial O's round trip", "[tile][traffic]") {
  // One head, n = 1024, d = 64, 64 x 64 tiles: 16 Q tiles of 16 key tiles on 3 SMs. Each block takes
  // 5 whole tiles; the last tile's 16 key tiles go to 3 blocks (spans 5, 5, 6), so it has 3 parts.
  AttentionParams p;
  p.n = 1024;
  p.d = 64;
  p.br = 64;
  p.bc = 64;
  const auto whole = count_attention_forward(p, AttentionForward::FA2);
  p.split_tail_sms = 3;
  const auto split = count_attention_forward(p, AttentionForward::FA2);
  const std::uint64_t tile = 64 * 64 * 2, part_o = 64 * 64 * 4, part_lse = 64 * 4;
  // 15 whole tiles read Q once each, the 3 parts of the last once each
  CHECK(split.find("Q")->bytes_read == whole.find("Q")->bytes_read + 2 * tile);
  CHECK(whole.find("Q")->bytes_read == 16 * tile);
  for (const char* name : {"K", "V", "O", "L"}) {
    INFO(name);
    CHECK(split.find(name)->bytes_read == whole.find(name)->bytes_read);
    CHECK(split.find(name)->bytes_written == whole.find(name)->bytes_written);
  }
  // each part writes its normalized O and logsumexp in fp32; the merge reads every part back
  REQUIRE(split.find("Opart") != nullptr);
  CHECK(split.find("Opart")->bytes_written == 3 * part_o);
  CHECK(split.find("Opart")->bytes_read == 3 * part_o);
  CHECK(split.find("Lpart")->bytes_written == 3 * part_lse);
  CHECK(split.find("Lpart")->bytes_read == 3 * part_lse);
  CHECK(whole.find("Opart") == nullptr);
  // two heads on 5 SMs: 6 whole tiles each, then the second head's last 2 tiles, whose 32 key tiles
  // go to the 5 blocks in spans of 6, 6, 7, 6, 7: 3 parts each (the first head has none)
  p.batch_heads = 2;
  p.split_tail_sms = 5;
  const auto two = count_attention_forward(p, AttentionForward::FA2);
  CHECK(two.find("Q")->bytes_read == (30 + 6) * tile);
  CHECK(two.find("K")->bytes_read == 2 * whole.find("K")->bytes_read);
  CHECK(two.find("Opart")->bytes_written == 6 * part_o);
  CHECK(two.find("Opart")->bytes_read == 6 * part_o);
  p.batch_heads = 1;
  // 4 SMs: 4 whole tiles each and no tail; under the causal mask the split is never taken
  p.split_tail_sms = 4;
  CHECK(count_attention_forward(p, AttentionForward::FA2).find("Opart") == nullptr);
  p.split_tail_sms = 3;
  p.causal = true;
  CHECK(count_attention_forward(p, AttentionForward::FA2).find("Opart") == nullptr);
}

TEST_CASE("backward traffic equals the closed forms", "[tile][traffic]") {
  for (AttentionParams p : kSizes) {
    p.accum_bytes = 4;
    for (auto s : {AttentionBackward::TwoPass, AttentionBackward::AtomicDQ, AttentionBackward::RowWise,
                   AttentionBackward::RowWiseNoD}) {
      INFO("n=" << p.n << " n_kv=" << p.n_kv << " d=" << p.d << " br=" << p.br << " bc=" << p.bc
                << (p.causal ? " causal " : " ") << tile::to_string(s));
      check_matches(count_attention_backward(p, s), backward_formula(p, s));
    }
  }
}

TEST_CASE("the textbook non-causal formulas: FA2 reads K and V once per Q block, FA1 moves O once per K block",
          "[tile][traffic]") {
  AttentionParams p = sizes(1024, 0, 64, 64, 64, false);
  const std::uint64_t N = 1024, d = 64, e = 2, st = 4, Tr = 16, Tc = 16;
  Traffic fa2 = count_attention_forward(p, AttentionForward::FA2);
  CHECK(fa2.find("K")->bytes_read == Tr * N * d * e);
  CHECK(fa2.bytes_read() == N * d * e + 2 * Tr * N * d * e);
  CHECK(fa2.bytes_written() == N * d * e + N * st);
  Traffic fa1 = count_attention_forward(p, AttentionForward::FA1);
  CHECK(fa1.find("O")->bytes_written == Tc * N * d * e);
  CHECK(fa1.find("O")->bytes_read == (Tc - 1) * N * d * e);
  CHECK(fa1.find("Q")->bytes_read == Tc * N * d * e);
  // Causal FA2 visits Tr(Tr+1)/2 tiles: K traffic is (Tr+1)/(2Tr) of the full one.
  p.causal = true;
  CHECK(count_attention_forward(p, AttentionForward::FA2).find("K")->bytes_read == Tr * (Tr + 1) / 2 * 64 * d * e);
}

TEST_CASE("one head times batch*heads equals running every head", "[tile][traffic]") {
  AttentionParams p = sizes(77, 0, 16, 16, 8, true);
  p.batch_heads = 2;
  for (auto s : {AttentionForward::Naive, AttentionForward::FA1, AttentionForward::FA2}) {
    Traffic counted = count_attention_forward(p, s);
    sim::MachineOptions o;
    o.compute_values = false;
    o.history = false;
    sim::Machine m(tile::attention_forward_program(p, s), o);  // both heads, one machine
    m.run();
    CHECK(counted.bytes_read() == m.counters().bytes_read);
    CHECK(counted.bytes_written() == m.counters().bytes_written);
    CHECK(counted.instructions == m.counters().instructions);
    auto q0 = m.program().find_array("Q_h0"), q1 = m.program().find_array("Q_h1");
    REQUIRE(q0);
    REQUIRE(q1);
    CHECK(counted.find("Q")->bytes_read == m.array(*q0).bytes_read + m.array(*q1).bytes_read);
  }
  for (auto s : {AttentionBackward::TwoPass, AttentionBackward::AtomicDQ}) {
    Traffic counted = count_attention_backward(p, s);
    sim::MachineOptions o;
    o.compute_values = false;
    o.history = false;
    sim::Machine m(tile::attention_backward_program(p, s), o);
    m.run();
    CHECK(counted.bytes_read() == m.counters().bytes_read);
    CHECK(counted.bytes_written() == m.counters().bytes_written);
  }
}

TEST_CASE("streamed counting equals one run of the whole trace", "[tile][traffic]") {
  // count_* cuts long traces into pieces; a size big enough to be cut several times.
  AttentionParams p = sizes(2048, 0, 64, 32, 32, true);
  for (auto s : {AttentionForward::Naive, AttentionForward::FA1, AttentionForward::FA2}) {
    sim::MachineOptions o;
    o.compute_values = false;
    o.history = false;
    sim::Machine m(tile::attention_forward_program(p, s), o);
    m.run();
    Traffic t = count_attention_forward(p, s);
    CHECK(t.bytes_read() == m.counters().bytes_read);
    CHECK(t.bytes_written() == m.counters().bytes_written);
    CHECK(t.instructions == m.counters().instructions);
  }
}

TEST_CASE("matmul traffic: inner vs outer product and the spectrum between", "[tile][traffic]") {
  for (auto [M, N, K, b] : {std::array<std::int64_t, 4>{256, 256, 256, 64}, std::array<std::int64_t, 4>{200, 130, 300, 64}}) {
    MatmulParams p;
    p.m = M;
    p.n = N;
    p.k = K;
    p.bm = p.bn = p.bk = b;
    p.in_bytes = 2;
    p.out_bytes = 4;
    const std::uint64_t tm = static_cast<std::uint64_t>((M + b - 1) / b), tn = static_cast<std::uint64_t>((N + b - 1) / b),
                        tk = static_cast<std::uint64_t>((K + b - 1) / b);
    const std::uint64_t a = static_cast<std::uint64_t>(M * K) * 2, bb = static_cast<std::uint64_t>(K * N) * 2,
                        c = static_cast<std::uint64_t>(M * N) * 4;
    check_matches(count_matmul(p, MatmulSchedule::Inner), {{"A", {a * tn, 0}}, {"B", {bb * tm, 0}}, {"C", {0, c}}});
    for (std::int64_t chunk = 1; chunk <= static_cast<std::int64_t>(tk); ++chunk) {
      p.k_chunk = chunk;
      const std::uint64_t passes = (tk + static_cast<std::uint64_t>(chunk) - 1) / static_cast<std::uint64_t>(chunk);
      INFO("k_chunk " << chunk);
      check_matches(count_matmul(p, MatmulSchedule::Outer),
                    {{"A", {a, 0}}, {"B", {bb * tm, 0}}, {"C", {(passes - 1) * c, passes * c}}});
      // C in strips of 8 rows: another order, the same bytes.
      p.c_strip_rows = 8;
      check_matches(count_matmul(p, MatmulSchedule::Outer),
                    {{"A", {a, 0}}, {"B", {bb * tm, 0}}, {"C", {(passes - 1) * c, passes * c}}});
      p.c_strip_rows = 0;
    }
  }
  MatmulParams bad;
  bad.m = bad.n = bad.k = 64;
  bad.bm = 64;
  bad.c_strip_rows = 24;
  CHECK_THROWS_WITH(count_matmul(bad, MatmulSchedule::Outer), Catch::Contains("must divide BM"));
}

TEST_CASE("matmul outer through an L2: C strips read and written in turn lose what rmw sweeps lose", "[tile][traffic][l2]") {
  // C of 48 KiB, swept read-modify-write by 4 launches through a 64 KiB L2 of 4-way sets split in
  // two slices. Whole tiles read all of C before writing any of it; strips alternate reads and
  // writes, as the kernel does. The requested bytes are the same either way; the strips keep fewer
  // of C's lines between launches (the far slice's copies and the dirty lines compete) - the order
  // alone moves the HBM bytes.
  MatmulParams p;
  p.m = 96;
  p.n = 128;
  p.k = 16;
  p.bm = 32;
  p.bn = 128;
  p.bk = 4;
  p.k_chunk = 1;
  p.in_bytes = 4;
  p.out_bytes = 4;
  sim::GpuModel g;
  g.l2.capacity_bytes = 64 << 10;
  g.l2.ways = 4;
  g.l2.dirty_ways = 2;
  g.sms = 2;
  g.blocks_per_sm = 2;
  g.l2_partitions = 2;
  const auto whole = count_matmul(p, MatmulSchedule::Outer, &g);
  p.c_strip_rows = 4;
  const auto strips = count_matmul(p, MatmulSchedule::Outer, &g);
  CHECK(strips.bytes_read() == whole.bytes_read());
  CHECK(strips.bytes_written() == whole.bytes_written());
  CHECK(strips.hbm_bytes_read() > whole.hbm_bytes_read());
}

TEST_CASE("softmax traffic: three passes read X three times, online two", "[tile][traffic]") {
  for (auto [rows, cols, chunk] : {std::array<std::int64_t, 3>{64, 8192, 1024}, std::array<std::int64_t, 3>{5, 3000, 1024}}) {
    SoftmaxParams p;
    p.rows = rows;
    p.cols = cols;
    p.chunk = chunk;
    p.elem_bytes = 2;
    const std::uint64_t x = static_cast<std::uint64_t>(rows * cols) * 2;
    check_matches(count_softmax(p, SoftmaxSchedule::ThreePass), {{"X", {3 * x, 0}}, {"Y", {0, x}}});
    check_matches(count_softmax(p, SoftmaxSchedule::Online), {{"X", {2 * x, 0}}, {"Y", {0, x}}});
  }
}

TEST_CASE("bad sizes are rejected with a clear message", "[tile][traffic]") {
  AttentionParams p = sizes(0, 0, 64, 64, 64, false);
  CHECK_THROWS_WITH(count_attention_forward(p, AttentionForward::FA2), Catch::Contains("N must be positive"));
  p = sizes(64, 0, 64, 64, 64, false);
  p.elem_bytes = 3;
  CHECK_THROWS_WITH(count_attention_forward(p, AttentionForward::FA2), Catch::Contains("element size"));
}

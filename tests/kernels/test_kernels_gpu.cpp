// GPU tests: every schedule validates against the CPU reference at small sizes (N not a multiple of
// the tile, partial k-tiles and chunks), both dtypes, both masks. They skip with a message on
// machines without a CUDA device. Nothing touches the GPU before a test case runs.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/fast.h"
#include "kernels/fp8.h"
#include "kernels/fp8_ref.h"
#include "kernels/launch_order.h"
#include "kernels/reference.h"
#ifdef FLASHSIM_HAVE_NCCL
#include "kernels/ring_run.h"
#endif
#include "kernels/runner.h"
#include "kernels/workload.h"

using namespace flashsim::gpu;

namespace {

bool have_gpu() {
  auto d = device_info();
  if (!d.have_device) {
    WARN("no CUDA device (" << d.why << "): skipping GPU test");
    std::fprintf(stderr, "no CUDA device (%s): skipping GPU test\n", d.why.c_str());
  }
  return d.have_device;
}

// Runs each spec once, unprofiled, and checks it against the CPU reference.
void check_against_reference(const std::vector<Spec>& specs, std::uint64_t seed) {
  RunOptions opt;
  opt.profile = false;
  opt.warmup = 0;
  opt.repeats = 1;
  Runner runner(opt);
  for (const auto& s : specs) {
    Row r = runner.run(s, seed++);
    INFO(info(s.schedule).id << " " << s.size_label() << " " << dtype_name(s.dtype) << ": rel err " << r.rel_err
                             << " tol " << r.tol << " (" << r.note << ")");
    CHECK(r.validated);
    CHECK(r.ok());
  }
}

// A backward's bf16 inputs: Q, K uniform in [-2, 2], V, dO in [-1, 1], seeds seed .. seed + 3.
void fill_backward_inputs(DevBuf& q, DevBuf& k, DevBuf& v, DevBuf& dout, std::size_t n, std::uint64_t seed) {
  fill_uniform(q.get(), n, Dtype::BF16, seed, -2.f, 2.f);
  fill_uniform(k.get(), n, Dtype::BF16, seed + 1, -2.f, 2.f);
  fill_uniform(v.get(), n, Dtype::BF16, seed + 2, -1.f, 1.f);
  fill_uniform(dout.get(), n, Dtype::BF16, seed + 3, -1.f, 1.f);
}

// Relative L2 error of dQ, dK, dV over the elements compared.
struct GradientError {
  double err[3] = {0, 0, 0}, norm[3] = {0, 0, 0};
  void add(std::array<double, 3> got, std::array<double, 3> want) {
    for (int g = 0; g < 3; ++g) {
      err[g] += (got[g] - want[g]) * (got[g] - want[g]);
      norm[g] += want[g] * want[g];
    }
  }
  void check(double tol) const {
    for (int g = 0; g < 3; ++g) {
      INFO("gradient " << "QKV"[g] << ": relative L2 " << std::sqrt(err[g] / norm[g]));
      CHECK(norm[g] > 0);
      CHECK(std::sqrt(err[g] / norm[g]) < tol);
    }
  }
};

}  // namespace

TEST_CASE("every schedule matches the CPU reference at small sizes", "[kernels][gpu]") {
  if (!have_gpu()) return;
  auto sizes = parse_sizes("tiny,matmul:65x130x7,softmax:2x4096,attn:1x64x64,attn:3x1x64,attn:1x129x64");
  check_against_reference(expand(parse_schedules("all"), sizes, {Dtype::F32, Dtype::BF16}, {false, true}), 12345);
}

TEST_CASE("the fast versions match the CPU reference in fp16 and at d = 128", "[kernels][gpu]") {
  if (!have_gpu()) return;
  auto sizes = parse_sizes("attn:2x100x128,attn:1x1x128,attn:3x200x64,softmax:3x50000,softmax:2x16387");
  auto specs = expand(parse_schedules("softmax-fast,attn-fa2-mma,bwd-mma"), sizes,
                      {Dtype::F32, Dtype::BF16, Dtype::F16}, {false, true});
  REQUIRE(specs.size() == 2 + 2 * 3 * 2 * 2);  // softmax fp32; attention x {bf16, fp16} x 3 sizes x masks
  check_against_reference(specs, 777);
}

TEST_CASE("the fast forward's persistent d = 64 path (192-row tiles) matches the CPU reference", "[kernels][gpu]") {
  if (!have_gpu()) return;
  // N past the launcher's thresholds (full from 2048, causal from 8192) and no multiple of 192
  REQUIRE(attention_forward_fast_tiling(2100, 64, false).br == 192);
  REQUIRE(attention_forward_fast_tiling(8300, 64, true).paired);
  auto specs = expand({Schedule::AttnFA2Mma}, parse_sizes("attn:3x2100x64,attn:1x8300x64"), {Dtype::BF16, Dtype::F16},
                      {false, true});
  REQUIRE(specs.size() == 8);
  check_against_reference(specs, 4242);
}

TEST_CASE("the fast forward's split tail (parts of the last round's tiles, merged) matches the CPU reference",
          "[kernels][gpu]") {
  if (!have_gpu()) return;
  // the launchers split only from N = 8192 at d = 128 (kernels/launch_order.h fwd_split_enabled):
  // forced on for this case's small sizes
  struct SplitOn {
    SplitOn() { setenv("FLASHSIM_FWD_SPLIT", "1", 1); }
    ~SplitOn() { unsetenv("FLASHSIM_FWD_SPLIT"); }
  } split_on;
  int dev = 0, sms = 0;
  REQUIRE(cudaGetDevice(&dev) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess);
  // d = 128: 3 x 8 tiles of 8 key tiles (each split in two); 33 tiles of 33 key tiles, the last one
  // partly past n; d = 64: 9 x 11 tiles of 192 rows, 17 key tiles each
  REQUIRE(split_tail_plan(3 * 8, 8, sms).tail > 0);
  REQUIRE(split_tail_plan(33, 33, sms).tail > 0);
  REQUIRE(split_tail_plan(9 * 11, 17, sms).tail > 0);
  auto specs = expand({Schedule::AttnFA2Mma}, parse_sizes("attn:3x1000x128,attn:1x4100x128,attn:9x2100x64"),
                      {Dtype::BF16, Dtype::F16}, {false});
  REQUIRE(specs.size() == 6);
  // and the FP8 forward's (checked against its emulation)
  for (const auto& s8 : expand({Schedule::AttnFP8}, parse_sizes("attn-fwd:3x1000x128"), {}, {false})) specs.push_back(s8);
  check_against_reference(specs, 5151);
}

// attn-fp8 through the Runner as compare runs it: quantized in setup, the forward checked against the
// FP8 emulation; n not a multiple of 128 nor of 32 (V^T's padding keys), one key, both masks, a split tail.
TEST_CASE("attn-fp8 runs through the Runner and passes its check", "[kernels][gpu][fp8]") {
  if (!have_gpu()) return;
  // 3 x 1000: 24 Q tiles of 8 key tiles, the last round split (full mask) and merged
  auto specs = expand({Schedule::AttnFP8},
                      parse_sizes("attn-fwd:2x300x128,attn-fwd:1x1x128,attn-fwd:3x200x128,attn-fwd:3x1000x128"), {},
                      {false, true});
  REQUIRE(specs.size() == 8);
  for (const auto& s : specs) CHECK(s.dtype == Dtype::E4M3);
  check_against_reference(specs, 8088);
  // and a forward that never ran fails it
  auto w = make_workload(specs.front());
  w->setup(9);
  w->poison_outputs();
  std::string note;
  CHECK_FALSE(within_tolerance(w->check(&note), tolerance(specs.front())));
}

TEST_CASE("an output that was never written fails the check", "[kernels][gpu]") {
  if (!have_gpu()) return;
  auto specs = expand({Schedule::SoftmaxOnline, Schedule::AttnFA2}, parse_sizes("tiny"), {Dtype::F32}, {false});
  for (const auto& s : specs) {
    auto w = make_workload(s);
    w->setup(7);
    w->poison_outputs();  // and do not run
    std::string note;
    CHECK_FALSE(within_tolerance(w->check(&note), tolerance(s)));
  }
}

// The ring backward's form (kernels/fast.h attention_backward_fast_accumulate): the gradients of a
// sequence cut in chunks, summed pair by pair (dQ in the kernel's fp32 workspace, dK / dV added in
// fp32 by its epilogue), equal one backward over the whole sequence. Chunks of 200 rows (no
// multiple of any tile), three of them, both masks (causal: pairs above the diagonal skipped, the
// diagonal pair masked), d = 64 and 128.
TEST_CASE("a ring step in one launch equals attention over the key chunks its kinds allow", "[kernels][gpu][ring]") {
  if (!have_gpu()) return;
  using T = __nv_bfloat16;
  const int heads = 3, c = 200;  // 200 rows: a partial tile at either size
  // kinds, two bits at 2 (2i + j): 0 none, 1 every key, 2 the diagonal. A zig-zag step 0 (both
  // diagonals, chunk 1 sees chunk 0 whole), a later step where chunk 0 sees nothing, the full mask.
  for (int kinds : {2 | (1 << 4) | (2 << 6), (1 << 4) | (1 << 6), 0x55})
    for (int d : {64, 128}) {
      INFO("kinds " << kinds << ", d = " << d);
      const std::size_t elems = 2ull * heads * c * d;
      DevBuf q(elems * 2), k(elems * 2), v(elems * 2), o(elems * 2), lse(2ull * heads * c * 4);
      fill_uniform(q.get(), elems, Dtype::BF16, 21, -2.f, 2.f);
      fill_uniform(k.get(), elems, Dtype::BF16, 22, -2.f, 2.f);
      fill_uniform(v.get(), elems, Dtype::BF16, 23, -1.f, 1.f);
      attention_forward_fast_ring_step<T>(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(), heads, c, d, kinds,
                                          nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      const auto hq = to_host(q.get(), 0, elems, Dtype::BF16), hk = to_host(k.get(), 0, elems, Dtype::BF16),
                 hv = to_host(v.get(), 0, elems, Dtype::BF16), ho = to_host(o.get(), 0, elems, Dtype::BF16),
                 hl = to_host(lse.get(), 0, 2ull * heads * c, Dtype::F32);
      const double scale = 1.0 / std::sqrt(static_cast<double>(d));
      double err = 0, norm = 0, lse_err = 0;
      int empty_rows = 0;
      for (int i = 0; i < 2; ++i)
        for (int h = 0; h < heads; ++h)
          for (int r = 0; r < c; ++r) {
            const std::size_t row = (static_cast<std::size_t>(i) * heads + h) * c + r;
            std::vector<double> s, w;
            std::vector<std::size_t> keys;
            for (int j = 0; j < 2; ++j) {
              const int kind = (kinds >> (2 * (2 * i + j))) & 3;
              for (int key = 0; kind != 0 && key < (kind == 2 ? r + 1 : c); ++key)
                keys.push_back((static_cast<std::size_t>(j) * heads + h) * c + key);
            }
            if (keys.empty()) {  // no key: O = 0, lse = -inf
              ++empty_rows;
              CHECK(std::isinf(hl[row]));
              CHECK(hl[row] < 0);
              for (int x = 0; x < d; ++x) CHECK(ho[row * d + x] == 0.f);
              continue;
            }
            double mx = -INFINITY;
            for (std::size_t key : keys) {
              double dot = 0;
              for (int x = 0; x < d; ++x) dot += double(hq[row * d + x]) * hk[key * d + x];
              s.push_back(dot * scale);
              mx = std::max(mx, dot * scale);
            }
            double sum = 0;
            for (double x : s) sum += std::exp(x - mx);
            lse_err = std::max(lse_err, std::fabs(hl[row] - (mx + std::log(sum))));
            for (int x = 0; x < d; ++x) {
              double want = 0;
              for (std::size_t kk = 0; kk < keys.size(); ++kk) want += std::exp(s[kk] - mx) / sum * hv[keys[kk] * d + x];
              err += (ho[row * d + x] - want) * (ho[row * d + x] - want);
              norm += want * want;
            }
          }
      CHECK(empty_rows == ((kinds & 0xf) == 0 ? heads * c : 0));
      CHECK(std::sqrt(err / norm) < 1e-2);
      CHECK(lse_err < 1e-3);
    }
}

TEST_CASE("the accumulating backward over chunk pairs equals one backward over the sequence", "[kernels][gpu][ring]") {
  if (!have_gpu()) return;
  using T = __nv_bfloat16;
  const int bh = 2, c = 200, chunks = 3, n = c * chunks;
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      INFO("d = " << d << (causal ? ", causal" : ", full"));
      const std::size_t all = static_cast<std::size_t>(bh) * n * d, part = static_cast<std::size_t>(bh) * c * d;
      DevBuf q(all * 2), k(all * 2), v(all * 2), o(all * 2), dout(all * 2), lse(static_cast<std::size_t>(bh) * n * 4);
      DevBuf dq(all * 2), dk(all * 2), dv(all * 2), ws(attention_backward_fast_workspace_bytes(bh, n, d));
      fill_backward_inputs(q, k, v, dout, all, 11);
      attention_forward_fast<T>(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(), bh, n, d, causal, nullptr);
      attention_backward_fast<T>(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), dout.as<T>(), lse.as<float>(), dq.as<T>(),
                                 dk.as<T>(), dv.as<T>(), ws.get(), bh, n, d, causal, nullptr);
      // chunk x of a [bh][n][cols] tensor as its own [bh][c][cols]
      auto cut = [&](const DevBuf& from, std::size_t elem, int cols, int x) {
        DevBuf to(static_cast<std::size_t>(bh) * c * cols * elem);
        const std::size_t row = cols * elem;
        CUDA_CHECK(cudaMemcpy2D(to.get(), c * row, static_cast<const char*>(from.get()) + x * c * row, n * row, c * row,
                                bh, cudaMemcpyDeviceToDevice));
        return to;
      };
      std::vector<DevBuf> qc, kc, vc, oc, doc, lc, dkc, dvc, dqc;
      for (int x = 0; x < chunks; ++x) {
        qc.push_back(cut(q, 2, d, x));
        kc.push_back(cut(k, 2, d, x));
        vc.push_back(cut(v, 2, d, x));
        oc.push_back(cut(o, 2, d, x));
        doc.push_back(cut(dout, 2, d, x));
        lc.push_back(cut(lse, 4, 1, x));
        dkc.emplace_back(part * 4);
        dvc.emplace_back(part * 4);
        dqc.emplace_back(part * 2);
      }
      std::vector<char> wrote(chunks, 0);
      for (int i = 0; i < chunks; ++i) {
        DevBuf wsi(attention_backward_fast_workspace_bytes(bh, c, d));
        bool first = true;  // the chunk's first pair clears the dQ accumulator itself
        for (int j = 0; j < chunks; ++j) {
          if (causal && j > i) continue;
          attention_backward_fast_accumulate<T>(qc[i].as<T>(), kc[j].as<T>(), vc[j].as<T>(), oc[i].as<T>(),
                                                doc[i].as<T>(), lc[i].as<float>(), dkc[j].as<float>(),
                                                dvc[j].as<float>(), !wrote[j], wsi.get(), first, bh, c, d,
                                                causal && j == i, nullptr);
          wrote[j] = 1;
          first = false;
        }
        attention_backward_fast_finish_dq<T>(wsi.get(), dqc[i].as<T>(), bh, c, d, nullptr);
        CUDA_CHECK(cudaDeviceSynchronize());  // wsi goes out of scope
      }
      CUDA_CHECK(cudaDeviceSynchronize());
      const auto ref_q = to_host(dq.get(), 0, all, Dtype::BF16), ref_k = to_host(dk.get(), 0, all, Dtype::BF16),
                 ref_v = to_host(dv.get(), 0, all, Dtype::BF16);
      GradientError e;
      for (int x = 0; x < chunks; ++x) {
        const auto gq = to_host(dqc[x].get(), 0, part, Dtype::BF16), gk = to_host(dkc[x].get(), 0, part, Dtype::F32),
                   gv = to_host(dvc[x].get(), 0, part, Dtype::F32);
        for (int h = 0; h < bh; ++h)
          for (std::size_t r = 0; r < static_cast<std::size_t>(c) * d; ++r) {
            const std::size_t at = (static_cast<std::size_t>(h) * n + static_cast<std::size_t>(x) * c) * d + r;
            const std::size_t loc = static_cast<std::size_t>(h) * c * d + r;
            e.add({gq[loc], gk[loc], gv[loc]}, {ref_q[at], ref_k[at], ref_v[at]});
          }
      }
      e.check(1e-2);
    }
}

TEST_CASE("the ring backward in one launch a step equals one backward over the sequence", "[kernels][gpu][ring]") {
  if (!have_gpu()) return;
  using T = __nv_bfloat16;
  const int bh = 2, c = 200, gpus = 2;  // two GPUs' steps on one device; 200 rows: partial tiles
  // split: a launch per query chunk, as for chunks too long for both to stay in L2
  for (bool split : {false, true})
  for (int chunks : {1, 2})  // the contiguous split, and the zig-zag one (GPU p holds chunks p and 3 - p)
    for (int d : {64, 128})
      for (bool causal : {false, true}) {
        if (split && chunks == 1) continue;
        setenv("FLASHSIM_RING_BWD_SPLIT", split ? "1" : "0", 1);
        INFO((chunks == 2 ? "zig-zag" : "contiguous") << ", d = " << d << (causal ? ", causal" : ", full")
                                                      << (split ? ", a launch per query chunk" : ""));
        const int parts = gpus * chunks, n = parts * c;
        auto seg = [&](int p, int i) { return i == 0 ? p : parts - 1 - p; };  // sequence chunk i of GPU p
        const std::size_t all = static_cast<std::size_t>(bh) * n * d, part = static_cast<std::size_t>(bh) * c * d;
        const std::size_t local = chunks * part;
        DevBuf q(all * 2), k(all * 2), v(all * 2), o(all * 2), dout(all * 2), lse(static_cast<std::size_t>(bh) * n * 4);
        DevBuf dq(all * 2), dk(all * 2), dv(all * 2), ws(attention_backward_fast_workspace_bytes(bh, n, d));
        fill_backward_inputs(q, k, v, dout, all, 31);
        attention_forward_fast<T>(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(), bh, n, d, causal, nullptr);
        attention_backward_fast<T>(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), dout.as<T>(), lse.as<float>(),
                                   dq.as<T>(), dk.as<T>(), dv.as<T>(), ws.get(), bh, n, d, causal, nullptr);
        // GPU p's chunks of a [bh][n][cols] tensor as [chunks][bh][c][cols]
        auto gather = [&](const DevBuf& from, std::size_t elem, int cols, int p) {
          DevBuf to(chunks * static_cast<std::size_t>(bh) * c * cols * elem);
          const std::size_t row = cols * elem;
          for (int i = 0; i < chunks; ++i)
            CUDA_CHECK(cudaMemcpy2D(static_cast<char*>(to.get()) + i * bh * c * row, c * row,
                                    static_cast<const char*>(from.get()) + seg(p, i) * c * row, n * row, c * row, bh,
                                    cudaMemcpyDeviceToDevice));
          return to;
        };
        // the ring's kinds (kernels/ring.cpp RingRun::step_kinds): GPU p's chunk i against block b's chunk j
        auto kinds_of = [&](int p, int b) {
          int kinds = 0;
          for (int i = 0; i < chunks; ++i)
            for (int j = 0; j < chunks; ++j) {
              const int qs = seg(p, i), ks = seg(b, j);
              const int code = !causal || qs > ks ? 1 : qs == ks ? 2 : 0;
              kinds |= code << (2 * (2 * i + j));
            }
          return kinds;
        };
        std::vector<std::vector<float>> dq_got(gpus), dk_sum(gpus, std::vector<float>(local, 0.f)),
            dv_sum(gpus, std::vector<float>(local, 0.f));
        for (int p = 0; p < gpus; ++p) {
          const DevBuf qp = gather(q, 2, d, p), op = gather(o, 2, d, p), dop = gather(dout, 2, d, p),
                       lp = gather(lse, 4, 1, p);
          DevBuf wsp(attention_backward_fast_workspace_bytes(chunks * bh, c, d)), dqp(local * 2);
          DevBuf dkp(local * 4), dvp(local * 4);
          attention_backward_fast_ring_prepare<T>(op.as<T>(), dop.as<T>(), lp.as<float>(), wsp.get(), chunks * bh, c, d,
                                                  nullptr);
          for (int b = 0; b < gpus; ++b) {
            const DevBuf kb = gather(k, 2, d, b), vb = gather(v, 2, d, b);
            CUDA_CHECK(cudaMemset(dkp.get(), 0xff, local * 4));  // written, not added: NaN would stay
            CUDA_CHECK(cudaMemset(dvp.get(), 0xff, local * 4));
            attention_backward_fast_ring_step<T>(qp.as<T>(), kb.as<T>(), vb.as<T>(), dop.as<T>(), dkp.as<float>(),
                                                 dvp.as<float>(), wsp.get(), bh, c, d, chunks, kinds_of(p, b), nullptr);
            const auto hk = to_host(dkp.get(), 0, local, Dtype::F32), hv = to_host(dvp.get(), 0, local, Dtype::F32);
            for (std::size_t x = 0; x < local; ++x) {
              dk_sum[b][x] += hk[x];
              dv_sum[b][x] += hv[x];
            }
          }
          attention_backward_fast_finish_dq<T>(wsp.get(), dqp.as<T>(), chunks * bh, c, d, nullptr);
          dq_got[p] = to_host(dqp.get(), 0, local, Dtype::BF16);
        }
        const auto ref_q = to_host(dq.get(), 0, all, Dtype::BF16), ref_k = to_host(dk.get(), 0, all, Dtype::BF16),
                   ref_v = to_host(dv.get(), 0, all, Dtype::BF16);
        GradientError e;
        for (int p = 0; p < gpus; ++p)
          for (int i = 0; i < chunks; ++i)
            for (int h = 0; h < bh; ++h)
              for (std::size_t r = 0; r < static_cast<std::size_t>(c) * d; ++r) {
                const std::size_t at = (static_cast<std::size_t>(h) * n + static_cast<std::size_t>(seg(p, i)) * c) * d + r;
                const std::size_t loc = (static_cast<std::size_t>(i) * bh + h) * c * d + r;
                e.add({dq_got[p][loc], dk_sum[p][loc], dv_sum[p][loc]}, {ref_q[at], ref_k[at], ref_v[at]});
              }
        e.check(1e-2);
      }
  unsetenv("FLASHSIM_RING_BWD_SPLIT");
}

TEST_CASE("the ring backward's step launch refuses what it cannot do", "[kernels][gpu][ring]") {
  if (!have_gpu()) return;
  using T = __nv_bfloat16;
  DevBuf buf(1 << 20);
  const T* t = buf.as<T>();
  float* f = buf.as<float>();
  auto step = [&](int chunks, int d, int kinds) {
    attention_backward_fast_ring_step<T>(t, t, t, t, f, f, buf.get(), 1, 16, d, chunks, kinds, nullptr);
  };
  CHECK_THROWS_WITH(step(3, 64, 1), Catch::Contains("chunks must be 1 or 2"));
  CHECK_THROWS_WITH(step(2, 96, 1), Catch::Contains("head dimension must be 64 or 128"));
  CHECK_THROWS_WITH(step(1, 64, 1 << 2), Catch::Contains("kinds has bits past the chunks' pairs"));
  CHECK_THROWS_WITH(step(2, 64, 3), Catch::Contains("a pair's kind must be 0, 1 or 2"));
  CHECK_NOTHROW(step(2, 64, 0));  // nobody sees anything: both key chunks' gradients are zeros
  CUDA_CHECK(cudaDeviceSynchronize());
}

namespace {

std::vector<float> to_floats_bf16(const DevBuf& b, std::size_t count) {
  std::vector<std::uint16_t> raw(count);
  CUDA_CHECK(cudaMemcpy(raw.data(), b.get(), count * 2, cudaMemcpyDeviceToHost));
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = ref::bf16_bits_to_float(raw[i]);
  return out;
}
std::vector<float> to_floats(const void* p, std::size_t count) {
  std::vector<float> out(count);
  CUDA_CHECK(cudaMemcpy(out.data(), p, count * 4, cudaMemcpyDeviceToHost));
  return out;
}
std::vector<std::uint8_t> bytes(const std::uint8_t* p, std::size_t count) {
  std::vector<std::uint8_t> out(count);
  CUDA_CHECK(cudaMemcpy(out.data(), p, count, cudaMemcpyDeviceToHost));
  return out;
}

// One FP8 forward at d = 128 on uniform bf16 inputs (Q, K in [-2, 2], V in [-1, 1]): quantize, run
// with O poisoned to NaN first, and read the operands back as the kernel saw them.
struct Fp8Run {
  static constexpr int d = 128;
  int bh, n;
  std::size_t all;
  DevBuf q, k, v, o, lse, ws;
  fp8::Operands ops;
  Fp8Run(int bh_, int n_, std::uint64_t seed)
      : bh(bh_), n(n_), all(static_cast<std::size_t>(bh_) * n_ * d), q(all * 2), k(all * 2), v(all * 2), o(all * 2),
        lse(static_cast<std::size_t>(bh_) * n_ * 4), ws(fp8::workspace_bytes(bh_, n_, d)) {
    fill_uniform(q.get(), all, Dtype::BF16, seed, -2.f, 2.f);
    fill_uniform(k.get(), all, Dtype::BF16, seed + 1, -2.f, 2.f);
    fill_uniform(v.get(), all, Dtype::BF16, seed + 2, -1.f, 1.f);
    ops = fp8::operands_in(ws.get(), bh, n, d);
  }
  void run(const fp8::QuantOptions& opt, bool causal, const fp8::Variant& variant) {
    fp8::quantize(q.as<__nv_bfloat16>(), k.as<__nv_bfloat16>(), v.as<__nv_bfloat16>(), ops, opt, nullptr);
    CUDA_CHECK(cudaMemset(o.get(), 0xff, all * 2));
    fp8::attention_forward_variant(ops, o.as<__nv_bfloat16>(), lse.as<float>(), causal, variant, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  // (fp8_ref.h: a padding key of V^T that is not zero makes every v8 NaN)
  fp8::Dequantized read_back() const {
    return fp8::dequantize_operands(
        bh, n, d, bytes(ops.q, all), bytes(ops.k, all), bytes(ops.vt, static_cast<std::size_t>(bh) * d * ops.n_keys),
        to_floats(ops.q_scale, bh * fp8::q_scale_blocks(n)), to_floats(ops.k_scale, bh * fp8::k_scale_blocks(n)),
        to_floats(ops.v_scale, bh));
  }
};

}  // namespace

TEST_CASE("the FP8 forward computes its own arithmetic and stays near float64 attention", "[kernels][gpu][fp8]") {
  if (!have_gpu()) return;
  const int bh = 3, d = Fp8Run::d;
  for (int n : {77, 333})
    for (bool causal : {false, true})
      for (auto scaling : {fp8::Scaling::PerBlock, fp8::Scaling::PerTensor}) {
        INFO("n = " << n << (causal ? ", causal" : ", full") << (scaling == fp8::Scaling::PerBlock ? ", per block + Hadamard" : ", per tensor"));
        Fp8Run r(bh, n, 21);
        fp8::QuantOptions opt;
        opt.scaling = scaling;
        opt.hadamard = scaling == fp8::Scaling::PerBlock;
        r.run(opt, causal, fp8::Variant{});
        const fp8::Dequantized x = r.read_back();
        CHECK(std::all_of(x.v8.begin(), x.v8.end(), [](float e) { return std::isfinite(e); }));  // padding keys are zeros
        const std::size_t all = r.all;
        const auto go = to_floats_bf16(r.o, all), gl = to_floats(r.lse.get(), static_cast<std::size_t>(bh) * n);
        const auto hq = to_floats_bf16(r.q, all), hk = to_floats_bf16(r.k, all), hv = to_floats_bf16(r.v, all);
        std::vector<std::int64_t> rows;
        for (int i = 0; i < n; ++i) rows.push_back(i);
        for (int h = 0; h < bh; ++h) {
          std::vector<float> eo(static_cast<std::size_t>(n) * d), el(n), sa(n), ro(eo.size()), rl(n);
          fp8::attention_fp8_emulated_rows(x, h, causal, fp8::key_tile_for(n, fp8::Variant{}), rows, eo.data(), el.data(), sa.data());
          const std::size_t off = static_cast<std::size_t>(h) * n * d;
          ref::attention_forward(hq.data() + off, hk.data() + off, hv.data() + off, n, d, causal, ro.data(), rl.data());
          double worst = 0, sq = 0, worst_lse = 0;
          for (std::size_t i = 0; i < eo.size(); ++i) {
            const double e = std::fabs(static_cast<double>(go[off + i]) - eo[i]);
            worst = std::max(worst, std::isnan(e) ? INFINITY : e);
            sq += e * e;
          }
          for (int i = 0; i < n; ++i)
            worst_lse = std::max(worst_lse, std::fabs(static_cast<double>(gl[h * n + i]) - el[i]) / fp8::fp8_lse_tolerance(sa[i]));
          // |V| <= 1: one rounding flip moves a weight by one e4m3 step (2^-3); most entries agree
          CHECK(worst <= 1.0 / 8);
          CHECK(std::sqrt(sq / eo.size()) <= 1.0 / 256);
          CHECK(worst_lse <= 1.0);  // in units of fp8_lse_tolerance (the tensor cores' FP8 sums)
          // against exact attention on the bf16 inputs: e4m3's 2^-4 relative step, averaged
          std::vector<float> got(go.begin() + off, go.begin() + off + eo.size());
          CHECK(ref::rel_error(got, ro) < 0.1);
        }
      }
}

TEST_CASE("the FP8 forward's wider key tiles compute their own arithmetic", "[kernels][gpu][fp8]") {
  if (!have_gpu()) return;
  const int bh = 3, d = Fp8Run::d;
  for (int key_tile : {192, 224})
    for (int n : {77, 333, 700})  // one tile; a partial last tile; tiles whose V boxes cross into the next
      for (bool causal : {false, true}) {
        INFO("key tile " << key_tile << ", n = " << n << (causal ? ", causal" : ", full"));
        Fp8Run r(bh, n, 31);
        fp8::Variant variant;
        variant.key_tile = key_tile;
        r.run(fp8::QuantOptions{}, causal, variant);
        const fp8::Dequantized x = r.read_back();
        const auto go = to_floats_bf16(r.o, r.all), gl = to_floats(r.lse.get(), static_cast<std::size_t>(bh) * n);
        std::vector<std::int64_t> rows;
        for (int i = 0; i < n; ++i) rows.push_back(i);
        fp8::OutputCheck check(key_tile);
        for (int h = 0; h < bh; ++h)
          check.add_head(x, h, causal, rows, go.data() + static_cast<std::size_t>(h) * n * d, gl.data() + h * n);
        const fp8::OutputErrors e = check.result();
        INFO("max |dO| " << e.max_o << ", rms " << e.rms_o << ", lse / tolerance " << e.lse);
        CHECK(e.ok());
      }
  CHECK(fp8::key_tile_for(4096, fp8::Variant{}) == 128);
  CHECK(fp8::key_tile_for(8192, fp8::Variant{}) == 224);
  CHECK(fp8::key_tile_for(16384, fp8::Variant{true, false}) == 128);  // ping-pong: 128-key tiles only
  CHECK_THROWS_AS(fp8::key_tile_for(16384, fp8::Variant{true, false, false, 224}), std::invalid_argument);
  fp8::Variant bad;
  bad.key_tile = 256;
  DevBuf ws(fp8::workspace_bytes(1, 64, 128));
  const fp8::Operands ops = fp8::operands_in(ws.get(), 1, 64, 128);
  CHECK_THROWS_AS(fp8::attention_forward_variant(ops, nullptr, nullptr, false, bad, nullptr), std::invalid_argument);
}

#ifdef FLASHSIM_HAVE_NCCL
TEST_CASE("the ring's finishing sums: out = dt(acc + in), in place too", "[kernels][gpu][ring]") {
  if (!have_gpu()) return;
  namespace rd = ring_detail;
  const std::size_t elems = 4 * 1000 + 4 * 257;  // 1257 float4s: a last block of the grid only partly used
  std::vector<float> acc(elems), in(elems);
  for (std::size_t i = 0; i < elems; ++i) {
    acc[i] = 0.25f * static_cast<float>(i % 97) - 7.f;
    in[i] = 0.5f * static_cast<float>(i % 13) + 0.125f;
  }
  DevBuf dacc(elems * 4), din(elems * 4), dout16(elems * 2);
  CUDA_CHECK(cudaMemcpy(dacc.get(), acc.data(), elems * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(din.get(), in.data(), elems * 4, cudaMemcpyHostToDevice));
  // bf16 out of acc + in; then bf16 of acc alone (the one-GPU path); both exact in bf16 for these values
  rd::ring_sum_to(dout16.get(), dacc.as<float>(), din.as<float>(), elems, Dtype::BF16, nullptr);
  auto got = to_host(dout16.get(), 0, elems, Dtype::BF16);
  for (std::size_t i = 0; i < elems; ++i) REQUIRE(got[i] == acc[i] + in[i]);
  rd::ring_sum_to(dout16.get(), dacc.as<float>(), nullptr, elems, Dtype::BF16, nullptr);
  got = to_host(dout16.get(), 0, elems, Dtype::BF16);
  for (std::size_t i = 0; i < elems; ++i) REQUIRE(got[i] == acc[i]);
  // W += R: the accumulator is also the output (the review mend of 281989c folded two kernels into this)
  rd::ring_add_f32(dacc.as<float>(), din.as<float>(), elems, nullptr);
  rd::ring_add_f32(dacc.as<float>(), din.as<float>(), elems, nullptr);
  got = to_host(dacc.get(), 0, elems, Dtype::F32);
  for (std::size_t i = 0; i < elems; ++i) REQUIRE(got[i] == acc[i] + 2 * in[i]);
  CHECK_THROWS_AS(rd::ring_sum_to(dout16.get(), dacc.as<float>(), nullptr, 6, Dtype::BF16, nullptr), std::invalid_argument);
}
#endif  // FLASHSIM_HAVE_NCCL

// Matmul version 3 (kernels/matmul.cu, matmul_bf16_fast) against cuBLAS: correctness on odd and
// edge shapes, then a timing table. Standalone: compiles matmul.cu in this translation unit with
// FLASHSIM_MATMUL_FAST_ONLY (no runner, no other ops) and reference.cpp for the CPU check.
//
// Build: `ninja -C build/default bench_matmul_fast`, or by hand from the repository root:
//   mkdir -p build/mmfast-bin && /usr/local/cuda/bin/nvcc -std=c++20 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I. kernels/tools/bench_matmul_fast.cu kernels/reference.cpp -lcublas -o build/mmfast-bin/bench_matmul_fast
// Run:
//   ./bench_matmul_fast                 correctness sweep (aligned, ragged, misaligned; every shape
//                                       with stream-k off, auto and forced) + timing table
//   ./bench_matmul_fast --check M N K   one shape's checks in every plan mode, aligned and with
//                                       misaligned pointers, no cuBLAS (for compute-sanitizer)
//   ./bench_matmul_fast --time M N K    one timing row
//   ./bench_matmul_fast --ab [M N K]    per shape one line: ours with stream-k off, ours auto, cuBLAS
//                                       (the timed list without M N K)
//   ./bench_matmul_fast --plans M N K   every candidate plan (tile width x stream-k grid) timed, with
//                                       the heuristic's estimate beside it (to fit its constants)
//   ./bench_matmul_fast --pads M N K    auto's plan with the optional 64-column padding of B, A, both
//                                       and neither (matmul.cu's OptPad) against cuBLAS
//   ./bench_matmul_fast --clusters      per shape the auto plan with clusters 1x1, 1x2, 2x1, 2x2 and the
//                                       rule (matmul.cu's cluster_shape) against cuBLAS
//   ./bench_matmul_fast --clusters M N K the same for every tile width, and with A and B copied
//   ./bench_matmul_fast --explain [SMS] the plan chosen for each listed shape at SMS multiprocessors
//                                       (default 132); host only, needs no GPU
// FLASHSIM_MATMUL_SPLITK and FLASHSIM_MATMUL_CLUSTER (matmul.cu's header) apply to the default run
// and --time; --ab, --plans, --clusters and the checks set the mode themselves.
//
// Checks: fresh random inputs in [-1, 1) for every shape, C (NaN) and the workspace (0xff) poisoned
// before each run, every element of C must be finite, sampled rows against the float64 CPU reference
// (relative L2 <= 1e-2, bf16's tolerance), the whole of C against cuBLAS's C (1e-2), and every
// stream-k plan's C against the plan without it element by element: |x - y| <= 2^-7 |y| + 1e-4 rms
// (the two round fp32 sums of different order to bf16: at most an ulp apart), plus bitwise equality
// of two runs of the same plan (the fixup adds partials in a fixed order). Timing: 10 warm-up
// calls, then the contenders alternate for 30 repetitions, each timed with CUDA events; medians.
// TFLOP/s counts 2mnk.
#define FLASHSIM_MATMUL_FAST_ONLY
#include "kernels/matmul.cu"

#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sim/main_guard.h"

namespace flashsim::gpu {
// util.cu's definition comes with every workload; this driver links none of them
[[noreturn]] void cuda_fail(cudaError_t e, const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: CUDA error %s: %s\n", file, line, cudaGetErrorString(e), what);
  std::exit(1);
}
}  // namespace flashsim::gpu

namespace {

namespace fg = flashsim::gpu;
using bf16 = __nv_bfloat16;

void cublas_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cuBLAS error %d: %s\n", static_cast<int>(st), what);
    std::exit(1);
  }
}

__global__ void fill_kernel(bf16* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;  // splitmix64
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    p[i] = __float2bfloat16_rn(static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f);
  }
}

struct Buf {
  void* p = nullptr;
  explicit Buf(std::size_t bytes) { CUDA_CHECK(cudaMalloc(&p, bytes < 16 ? 16 : bytes)); }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  bf16* h() const { return static_cast<bf16*>(p); }
};

std::uint64_t fresh_seed() {
  static std::uint64_t counter = 0;
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^ (++counter << 48);
}

void fill_ptr(bf16* p, std::size_t n) {
  if (n == 0) return;
  fill_kernel<<<1024, 256>>>(p, n, fresh_seed());
  CUDA_CHECK_LAUNCH();
}
void fill(const Buf& b, std::size_t n) { fill_ptr(b.h(), n); }

std::vector<float> to_float_ptr(const bf16* p, std::size_t n) {
  std::vector<std::uint16_t> raw(n);
  if (n) CUDA_CHECK(cudaMemcpy(raw.data(), p, n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = fg::ref::bf16_bits_to_float(raw[i]);
  return f;
}
std::vector<float> to_float(const Buf& b, std::size_t n) { return to_float_ptr(b.h(), n); }

void cublas_matmul(cublasHandle_t h, const bf16* a, const bf16* b, bf16* c, int m, int n, int k) {
  // row-major C = A B is column-major C^T = B^T A^T
  const float alpha = 1.f, beta = 0.f;
  cublas_check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_16BF, n, a, CUDA_R_16BF, k, &beta,
                            c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

// Plan modes: the FLASHSIM_MATMUL_SPLITK values (-1 auto, 0 off, s >= 2 forced), a tile width, and
// the optional 64-column padding (-1 the rule, else bit 0 B, bit 1 A: g_pad_override).
// cl: the cluster shape as 10 cm + cn (-1 the rule; matmul.cu's FLASHSIM_MATMUL_CLUSTER).
// round: the optional copy's row multiple (matmul.cu's g_pad_round).
struct Mode {
  int splitk = -1, bn = 0, pad = -1, cl = -1, round = 16;
};
constexpr Mode kOff{0, 0}, kAuto{-1, 0};

void set_mode(Mode md) {
  fg::g_splitk_override = md.splitk;
  fg::g_bn_override = md.bn;
  fg::g_pad_override = md.pad;
  fg::g_cluster_override = md.cl;
  fg::g_pad_round = md.round;
}
void clear_mode() {
  fg::g_splitk_override = fg::kSplitkFromEnv;
  fg::g_bn_override = 0;
  fg::g_pad_override = -1;
  fg::g_cluster_override = fg::kSplitkFromEnv;
  fg::g_pad_round = 16;
}

int device_sms() {
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// the plan and the optional padding (matmul.cu's OptPad) in the current mode
std::string plan_text(int m, int n, int k, int sms) {
  const auto p = fg::matmul_fast_plan(m, n, k, sms);
  const fg::OptPad w = fg::opt_pad(m, n, k, p.est);
  return fg::describe(p) + (w.a || w.b ? std::string(" +pad") + (w.a ? "A" : "") + (w.b ? "B" : "") : "");
}

std::string plan_of(Mode md, int m, int n, int k) {
  set_mode(md);
  const std::string d = plan_text(m, n, k, device_sms());
  clear_mode();
  return d;
}

std::string mode_name(Mode md) {
  std::string s = md.splitk < 0 ? "auto" : md.splitk == 0 ? "off" : "s=" + std::to_string(md.splitk);
  if (md.bn) s += " bn" + std::to_string(md.bn);
  if (md.pad >= 0) s += " pad" + std::to_string(md.pad);
  if (md.cl >= 0) s += " c" + std::to_string(md.cl / 10) + "x" + std::to_string(md.cl % 10);
  if (md.round != 16) s += " r" + std::to_string(md.round);
  return s;
}

// The workspace that fits every listed mode.
std::size_t workspace_for(const std::vector<Mode>& modes, int m, int n, int k) {
  std::size_t w = 16;
  for (Mode md : modes) {
    set_mode(md);
    w = std::max(w, fg::matmul_bf16_fast_workspace_bytes(m, n, k));
  }
  clear_mode();
  return w;
}

// One shape's checks on one set of fresh inputs, in each of `modes` (modes[0] must be kOff: the
// others are compared with it element by element); h == nullptr skips cuBLAS. `shift` > 0 offsets
// A, B and C by that many elements (2 bytes each), off TMA's 16-byte alignment.
bool check_shape_modes(cublasHandle_t h, int m, int n, int k, const std::vector<Mode>& modes, int shift = 0) {
  const std::size_t na = std::size_t(m) * k, nb = std::size_t(k) * n, nc = std::size_t(m) * n;
  Buf a_buf((na + shift) * 2), b_buf((nb + shift) * 2), c_buf((nc + shift) * 2);
  const std::size_t ws_bytes = workspace_for(modes, m, n, k);
  Buf ws(ws_bytes);
  bf16 *pa = a_buf.h() + shift, *pb = b_buf.h() + shift, *pc = c_buf.h() + shift;
  fill_ptr(pa, na);
  fill_ptr(pb, nb);
  const auto ha = to_float_ptr(pa, na), hb = to_float_ptr(pb, nb);
  // the float64 reference on sampled rows: at most ~5e8 multiply-adds
  const long long max_rows = std::max<long long>(4, std::min<long long>(256, 500000000LL / std::max<long long>(1, (long long)n * k)));
  const auto rows = fg::ref::pick_indices(m, max_rows);
  std::vector<float> want(rows.size() * n);
  fg::ref::matmul_rows(ha.data(), hb.data(), n, k, rows, want.data());
  std::vector<float> cublas_c;
  if (h && nc > 0) {  // cuBLAS refuses leading dimensions of 0
    Buf c2(nc * 2);
    CUDA_CHECK(cudaMemset(c2.p, 0xff, nc * 2));
    cublas_matmul(h, pa, pb, c2.h(), m, n, k);
    CUDA_CHECK(cudaDeviceSynchronize());
    cublas_c = to_float(c2, nc);
  }
  auto run = [&](Mode md, bool with_ws) {
    CUDA_CHECK(cudaMemset(c_buf.p, 0xff, (nc + shift) * 2));  // NaN everywhere
    CUDA_CHECK(cudaMemset(ws.p, 0xff, ws_bytes));             // garbage partials and counters
    set_mode(md);
    if (with_ws)
      fg::matmul_bf16_fast(pa, pb, pc, m, n, k, ws.p, ws_bytes, nullptr);
    else
      fg::matmul_bf16_fast(pa, pb, pc, m, n, k, nullptr);  // its own stream-ordered workspace
    clear_mode();
    CUDA_CHECK(cudaDeviceSynchronize());
    return to_float_ptr(pc, nc);
  };
  bool all_ok = true;
  std::vector<float> base;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    const Mode md = modes[i];
    const auto got_all = run(md, true);
    std::size_t nonfinite = 0;
    for (float v : got_all) nonfinite += !std::isfinite(v);
    std::vector<float> got;
    for (auto row : rows) got.insert(got.end(), got_all.begin() + row * n, got_all.begin() + (row + 1) * n);
    const double err_ref = fg::ref::rel_error(got, want);
    const double err_cublas = cublas_c.empty() ? -1 : fg::ref::rel_error(got_all, cublas_c);
    bool ok = nonfinite == 0 && err_ref <= 1e-2 && (err_cublas < 0 || err_cublas <= 1e-2);
    std::string extra;
    if (i == 0) {
      base = got_all;
    } else {
      // against the data-parallel plan: at most an ulp apart, element by element
      double ss = 0;
      for (float v : base) ss += double(v) * v;
      const double rms = nc ? std::sqrt(ss / nc) : 0;
      std::size_t off = 0;
      for (std::size_t e = 0; e < nc; ++e)
        off += !(std::fabs(double(got_all[e]) - base[e]) <= std::ldexp(std::fabs(double(base[e])), -7) + 1e-4 * rms);
      // the same plan again, and through the form that allocates its own workspace: same bits
      const auto again = run(md, i % 2 == 1);
      const bool same = nc == 0 || std::memcmp(again.data(), got_all.data(), nc * sizeof(float)) == 0;
      ok &= off == 0 && same;
      extra = ", " + std::to_string(off) + " elements off the no-split C, rerun " + (same ? "identical" : "DIFFERS");
    }
    std::printf("check %5dx%5dx%5d%s %-8s %-26s: %zu non-finite, rel err vs fp64 ref %.2e (%zu rows), vs cuBLAS %.2e%s  %s\n",
                m, n, k, shift ? " (+2 B)" : "", mode_name(md).c_str(), plan_of(md, m, n, k).c_str(), nonfinite,
                err_ref, rows.size(), err_cublas, extra.c_str(), ok ? "PASS" : "FAIL");
    all_ok &= ok;
  }
  return all_ok;
}

// A workspace sized without stream-k's partials: the launcher must fall back to whole tiles.
bool check_small_workspace(int m, int n, int k) {
  const std::size_t nc = std::size_t(m) * n;
  Buf a(std::size_t(m) * k * 2), b(std::size_t(k) * n * 2), c(nc * 2), c_off(nc * 2);
  fill(a, std::size_t(m) * k);
  fill(b, std::size_t(k) * n);
  set_mode(kOff);
  const std::size_t small = fg::matmul_bf16_fast_workspace_bytes(m, n, k);
  Buf ws(small);
  fg::matmul_bf16_fast(a.h(), b.h(), c_off.h(), m, n, k, ws.p, small, nullptr);
  set_mode(Mode{4, 0});
  CUDA_CHECK(cudaMemset(c.p, 0xff, nc * 2));
  fg::matmul_bf16_fast(a.h(), b.h(), c.h(), m, n, k, ws.p, small, nullptr);
  clear_mode();
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto x = to_float(c, nc), y = to_float(c_off, nc);
  const bool ok = nc == 0 || std::memcmp(x.data(), y.data(), nc * sizeof(float)) == 0;
  std::printf("check %dx%dx%d s=4 with a workspace without room for partials runs whole tiles: %s\n", m, n, k,
              ok ? "PASS" : "FAIL");
  return ok;
}

// A size argument: a whole decimal number >= 0 (atoi would take "12x" or "-1" quietly).
int parse_size(const char* s) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno || v < 0 || v > 1000000)
    throw std::invalid_argument(std::string("size must be a whole number in 0..1000000, got '") + s + "'");
  return static_cast<int>(v);
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Medians (ms) of the contenders, timed alternately: each contender is a plan mode (nullopt:
// whatever FLASHSIM_MATMUL_SPLITK says), the last one cuBLAS.
struct Inputs {
  int m, n, k;
  Buf a, b, c, c2;
  Inputs(int m_, int n_, int k_)
      : m(m_), n(n_), k(k_), a(std::size_t(m_) * k_ * 2), b(std::size_t(k_) * n_ * 2), c(std::size_t(m_) * n_ * 2),
        c2(std::size_t(m_) * n_ * 2) {
    fill(a, std::size_t(m) * k);
    fill(b, std::size_t(k) * n);
  }
};

std::vector<double> time_modes(cublasHandle_t h, Inputs& in, const std::vector<Mode>& modes, bool env_mode) {
  const int m = in.m, n = in.n, k = in.k;
  std::vector<Mode> for_ws = modes;
  std::size_t ws_bytes = workspace_for(for_ws, m, n, k);
  if (env_mode) ws_bytes = std::max(ws_bytes, fg::matmul_bf16_fast_workspace_bytes(m, n, k));
  Buf ws(ws_bytes);
  const int contenders = static_cast<int>(modes.size()) + 1;
  auto call = [&](int i) {
    if (i + 1 == contenders) {
      cublas_matmul(h, in.a.h(), in.b.h(), in.c2.h(), m, n, k);
      return;
    }
    if (!env_mode) set_mode(modes[i]);
    fg::matmul_bf16_fast(in.a.h(), in.b.h(), in.c.h(), m, n, k, ws.p, ws_bytes, nullptr);
    if (!env_mode) clear_mode();
  };
  for (int w = 0; w < 10; ++w)
    for (int i = 0; i < contenders; ++i) call(i);
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<std::vector<float>> t(contenders);
  for (int rep = 0; rep < 30; ++rep) {
    for (int i = 0; i < contenders; ++i) {
      CUDA_CHECK(cudaEventRecord(e0));
      call(i);
      CUDA_CHECK(cudaEventRecord(e1));
      CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      t[i].push_back(ms);
    }
  }
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  std::vector<double> med;
  for (auto& v : t) med.push_back(median(v));
  return med;
}

std::string shape_name(int m, int n, int k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// ours as FLASHSIM_MATMUL_SPLITK says (default: auto) against cuBLAS
void time_row(cublasHandle_t h, int m, int n, int k) {
  Inputs in(m, n, k);
  const auto med = time_modes(h, in, {kAuto}, true);
  const double mo = med[0], mc = med[1], flop = 2.0 * m * n * k;
  std::printf("%-16s %9.3f %9.1f %11.3f %11.1f %7.3f  %s\n", shape_name(m, n, k).c_str(), mo, flop / (mo * 1e-3) / 1e12,
              mc, flop / (mc * 1e-3) / 1e12, mc / mo, plan_text(m, n, k, device_sms()).c_str());
}

void ab_header() {
  std::printf("\n%-16s %-26s %9s %9s %9s %8s %8s\n", "m x n x k", "auto plan", "off ms", "auto ms", "cuBLAS ms",
              "off/cub", "auto/cub");
}
// one line: stream-k off, auto, cuBLAS
void ab_row(cublasHandle_t h, int m, int n, int k) {
  Inputs in(m, n, k);
  const auto med = time_modes(h, in, {kOff, kAuto}, false);
  std::printf("%-16s %-26s %9.4f %9.4f %9.4f %8.3f %8.3f\n", shape_name(m, n, k).c_str(), plan_of(kAuto, m, n, k).c_str(),
              med[0], med[1], med[2], med[2] / med[0], med[2] / med[1]);
}

// the optional 64-column padding of B and A (none, B, A, both; the plan as auto picks it), timed
void pads_row(cublasHandle_t h, int m, int n, int k) {
  Inputs in(m, n, k);
  const std::vector<Mode> modes = {Mode{-1, 0, 0}, Mode{-1, 0, 1}, Mode{-1, 0, 2}, Mode{-1, 0, 3}, kAuto};
  const auto med = time_modes(h, in, modes, false);
  std::printf("%-16s %-26s", shape_name(m, n, k).c_str(), plan_of(kAuto, m, n, k).c_str());
  for (std::size_t i = 0; i < modes.size(); ++i) std::printf(" %8.4f", med[i]);
  std::printf(" %8.4f", med.back());
  for (std::size_t i = 0; i < modes.size(); ++i) std::printf(" %6.3f", med.back() / med[i]);
  std::printf("\n");
}

// every candidate plan of one shape, timed, with the model's estimate
void plans_table(cublasHandle_t h, int m, int n, int k) {
  const int sms = device_sms();
  std::vector<Mode> modes;
  for (int bn : {256, 192, 128})
    for (int s : {0, 2, 3, 4, 6, 8, 1024}) modes.push_back(Mode{s, bn});
  modes.push_back(kAuto);
  Inputs in(m, n, k);
  const auto med = time_modes(h, in, modes, false);
  const double cub = med.back();
  std::printf("\n%s on %d SMs; est = the heuristic's estimate (k-iterations of a 128x256 tile); est/ms compares them\n",
              shape_name(m, n, k).c_str(), sms);
  std::printf("%-12s %-26s %8s %9s %8s %9s\n", "mode", "plan", "est", "ms", "est/ms", "vs cuBLAS");
  for (std::size_t i = 0; i < modes.size(); ++i) {
    set_mode(modes[i]);
    const auto p = fg::matmul_fast_plan(m, n, k, sms);
    clear_mode();
    std::printf("%-12s %-26s %8.1f %9.4f %8.1f %9.3f\n", mode_name(modes[i]).c_str(), fg::describe(p).c_str(), p.est,
                med[i], p.est / med[i], cub / med[i]);
  }
  std::printf("%-12s %-26s %8s %9.4f\n", "cuBLAS", "", "", cub);
}

// cluster shapes against none: per shape, the rule's plan with clusters 1x1 / 1x2 / 2x1 / 2x2 and
// the rule itself, then cuBLAS; with `widths`, every tile width x cluster shape.
void clusters_row(cublasHandle_t h, int m, int n, int k, bool widths) {
  std::vector<Mode> modes;
  for (int bn : widths ? std::vector<int>{0, 256, 192, 128} : std::vector<int>{0})
    for (int cl : {11, 12, 21, 22}) modes.push_back(Mode{-1, bn, -1, cl});
  if (widths) {  // and with the optional copies of A and B, rows of 16 or 64 elements
    for (int cl : {11, 12, 21, 22}) modes.push_back(Mode{-1, 0, 3, cl});
    for (int cl : {11, 21, 22}) modes.push_back(Mode{-1, 0, -1, cl, 64});
    for (int cl : {11, 21, 22}) modes.push_back(Mode{-1, 0, 3, cl, 64});
  }
  modes.push_back(kAuto);
  Inputs in(m, n, k);
  const auto med = time_modes(h, in, modes, false);
  const double cub = med.back();
  if (!widths) {
    std::printf("%-16s", shape_name(m, n, k).c_str());
    for (std::size_t i = 0; i < modes.size(); ++i) std::printf(" %8.4f", med[i]);
    std::printf(" %8.4f", cub);
    for (std::size_t i = 0; i < modes.size(); ++i) std::printf(" %6.3f", cub / med[i]);
    std::printf("  %s\n", plan_of(kAuto, m, n, k).c_str());
    return;
  }
  std::printf("\n%s\n", shape_name(m, n, k).c_str());
  for (std::size_t i = 0; i < modes.size(); ++i)
    std::printf("%-16s %-30s %9.4f %7.3f\n", mode_name(modes[i]).c_str(), plan_of(modes[i], m, n, k).c_str(), med[i],
                cub / med[i]);
  std::printf("%-16s %-30s %9.4f\n", "cuBLAS", "", cub);
}

const std::vector<std::array<int, 3>> kTimed = {
    {8192, 8192, 8192}, {4096, 4096, 4096}, {8192, 8192, 1024}, {4000, 3000, 2048}, {5120, 1000, 3000},
    {3000, 8192, 1000}, {1000, 1000, 8192}, {1000, 777, 300},   {2048, 512, 16384}, {777, 4096, 4096},
    {3840, 2560, 1024}, {2048, 2048, 2048}};

void explain(int sms) {
  std::vector<std::array<int, 3>> shapes = kTimed;
  for (auto s : std::vector<std::array<int, 3>>{{1024, 1024, 1024}, {1536, 1536, 1536}, {3072, 3072, 3072},
                                                {6144, 6144, 6144}, {16384, 16384, 1024}, {200, 136, 72},
                                                {1000, 1000, 1000}, {512, 512, 65536}, {128, 128, 100000}})
    shapes.push_back(s);
  std::printf("plans at %d SMs (est: k-iterations of a 128x256 tile)\n", sms);
  std::printf("%-18s %-24s %8s %-32s %8s\n", "m x n x k", "off", "est", "auto (+pad: optional copy)", "est");
  for (auto [m, n, k] : shapes) {
    set_mode(kOff);
    const auto off = fg::matmul_fast_plan(m, n, k, sms);
    set_mode(kAuto);
    const auto au = fg::matmul_fast_plan(m, n, k, sms);
    clear_mode();
    set_mode(kAuto);
    const std::string au_text = plan_text(m, n, k, sms);
    clear_mode();
    std::printf("%-18s %-24s %8.1f %-32s %8.1f\n", shape_name(m, n, k).c_str(), fg::describe(off).c_str(), off.est,
                au_text.c_str(), au.est);
  }
}

}  // namespace

static int run_main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  const bool sized = argc == 5 && (cmd == "--check" || cmd == "--time" || cmd == "--ab" || cmd == "--plans" ||
                                   cmd == "--pads" || cmd == "--clusters");
  const bool ok_args = argc == 1 || sized || (argc == 2 && (cmd == "--ab" || cmd == "--clusters")) ||
                       (cmd == "--explain" && argc <= 3);
  if (!ok_args)
    throw std::invalid_argument(
        "usage: bench_matmul_fast [--check M N K | --time M N K | --ab [M N K] | --plans M N K | --pads M N K | "
        "--clusters [M N K] | --explain [SMS]]");
  if (cmd == "--explain") {
    explain(argc == 3 ? std::max(1, parse_size(argv[2])) : 132);
    return 0;
  }
  int dims[3] = {0, 0, 0};
  if (sized)
    for (int i = 0; i < 3; ++i) dims[i] = parse_size(argv[2 + i]);
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, cc %d.%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
  const std::vector<Mode> all_modes = {kOff,         kAuto,        Mode{2, 0},     Mode{3, 0},      Mode{2, 128},
                                       Mode{0, 192}, Mode{2, 192}, Mode{1024, 256}, Mode{0, 0, 3}, Mode{2, 0, 3},
                                       // clusters: data-parallel and plain splits
                                       Mode{0, 0, -1, 12}, Mode{0, 192, -1, 21}, Mode{0, 128, 3, 22},
                                       Mode{2, 128, -1, 12}, Mode{3, 0, -1, 22}, Mode{2, 192, 3, 21},
                                       Mode{-1, 0, 3, 22, 64}};
  if (cmd == "--check") {
    // fewer modes than the sweep: compute-sanitizer runs this
    const std::vector<Mode> modes = {kOff,         kAuto,          Mode{3, 0},          Mode{0, 192},
                                     Mode{3, 192}, Mode{-1, 0, 3}, Mode{0, 0, -1, 22},  Mode{0, 192, -1, 12},
                                     Mode{2, 128, -1, 21}, Mode{3, 0, 3, 22}, Mode{-1, 0, 3, 21, 64}};
    const bool ok = check_shape_modes(nullptr, dims[0], dims[1], dims[2], modes) &&
                    check_shape_modes(nullptr, dims[0], dims[1], dims[2], modes, 1);
    return ok ? 0 : 1;
  }

  cublasHandle_t h;
  cublas_check(cublasCreate(&h), "cublasCreate");
  if (cmd == "--time") {
    time_row(h, dims[0], dims[1], dims[2]);
    return 0;
  }
  if (cmd == "--ab") {
    ab_header();
    if (sized)
      ab_row(h, dims[0], dims[1], dims[2]);
    else
      for (const auto& s : kTimed) ab_row(h, s[0], s[1], s[2]);
    std::printf("ratios = cuBLAS ms / ours ms (ours' speed over cuBLAS's); median of 30, CUDA events, alternating\n");
    return 0;
  }
  if (cmd == "--pads") {
    std::printf("%-16s %-26s %8s %8s %8s %8s %8s %8s   ratios cuBLAS/ours in the same order\n", "m x n x k", "auto plan",
                "none", "B", "A", "A+B", "rule", "cuBLAS");
    pads_row(h, dims[0], dims[1], dims[2]);
    return 0;
  }
  if (cmd == "--clusters") {
    if (sized) {
      clusters_row(h, dims[0], dims[1], dims[2], true);
    } else {
      std::printf("%-16s %8s %8s %8s %8s %8s %8s   ratios cuBLAS/ours in the same order, auto plan\n", "m x n x k", "c1x1",
                  "c1x2", "c2x1", "c2x2", "rule", "cuBLAS");
      for (const auto& s : kTimed) clusters_row(h, s[0], s[1], s[2], false);
    }
    return 0;
  }
  if (cmd == "--plans") {
    plans_table(h, dims[0], dims[1], dims[2]);
    return 0;
  }

  bool ok = true;
  const int shapes[][3] = {{200, 136, 72},  {8, 8, 8},         {128, 256, 64},   {136, 264, 520}, {1000, 4104, 40},
                           {8, 4096, 1024}, {4096, 8, 8},      {4000, 3000, 2048}, {4096, 4096, 4096},
                           {8192, 8192, 1024}, {8192, 8192, 8192},
                           // ragged: no multiple of 8 (padded copies), single rows/columns, empty C
                           {1000, 777, 300}, {1, 1, 1}, {3, 5, 7}, {129, 257, 65}, {77, 1000, 13}, {1000, 9, 4097},
                           {5120, 1000, 3000}, {3000, 8192, 1000}, {1000, 1000, 8192}, {0, 8, 8}, {8, 0, 8},
                           // stream-k: k not a multiple of the split (8200 = 128 x 64 + 8), k below a split
                           // (64 and 100: one or two k-iterations), m and n off multiples of 8 and 16,
                           // a grid with data-parallel waves before the stream-k ones (3840x2560)
                           {2048, 512, 16384}, {777, 4096, 4096}, {1000, 1000, 8200}, {300, 200, 100},
                           {256, 256, 64}, {1001, 999, 1000}, {999, 1000, 3001}, {3840, 2560, 1024},
                           {520, 1000, 4104}};
  for (const auto& s : shapes) ok &= check_shape_modes(h, s[0], s[1], s[2], all_modes);
  for (const auto& s : {std::array<int, 3>{200, 136, 72}, std::array<int, 3>{129, 257, 65},
                        std::array<int, 3>{1000, 1000, 4096}})
    ok &= check_shape_modes(h, s[0], s[1], s[2], all_modes, 1);  // misaligned pointers take the padded path
  ok &= check_small_workspace(1000, 1000, 1024);
  // k = 0 is an empty sum: C must come back all zeros
  {
    Buf a(16), b(16), c(64 * 2);
    CUDA_CHECK(cudaMemset(c.p, 0xff, 128));
    fg::matmul_bf16_fast(a.h(), b.h(), c.h(), 8, 8, 0, nullptr);
    const auto z = to_float(c, 64);
    bool zeros = true;
    for (float v : z) zeros &= v == 0.f;
    std::printf("check k=0 gives zeros: %s\n", zeros ? "PASS" : "FAIL");
    ok &= zeros;
  }
  const std::array<int, 3> bad_shapes[] = {{-8, 8, 8}, {8, -1, 8}, {8, 8, -3}};
  for (const auto& bad : bad_shapes) {
    bool threw = false;
    try {
      fg::matmul_bf16_fast(nullptr, nullptr, nullptr, bad[0], bad[1], bad[2], nullptr);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    std::printf("check %dx%dx%d rejected: %s\n", bad[0], bad[1], bad[2], threw ? "PASS" : "FAIL");
    ok &= threw;
  }

  std::printf("\n%-16s %9s %9s %11s %11s %7s  %s\n", "m x n x k", "ours ms", "TFLOP/s", "cuBLAS ms", "TFLOP/s", "ratio",
              "plan");
  for (const auto& s : kTimed) time_row(h, s[0], s[1], s[2]);
  std::printf("ratio = ours speed / cuBLAS speed (cuBLAS ms / ours ms); median of 30, CUDA events\n");
  cublas_check(cublasDestroy(h), "cublasDestroy");
  std::printf("%s\n", ok ? "ALL CHECKS PASS" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) { return flashsim::guard_main("bench_matmul_fast", [&] { return run_main(argc, argv); }); }

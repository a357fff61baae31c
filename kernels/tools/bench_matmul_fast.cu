// Matmul version 3 (kernels/matmul.cu, matmul_bf16_fast) against cuBLAS: correctness on odd and
// edge shapes, then a timing table. Standalone: compiles matmul.cu in this translation unit with
// FLASHSIM_MATMUL_FAST_ONLY (no runner, no other ops) and reference.cpp for the CPU check.
//
// Build: `ninja -C build/default bench_matmul_fast`, or by hand from the repository root:
//   mkdir -p build/mmfast-bin && /usr/local/cuda/bin/nvcc -std=c++20 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I. kernels/tools/bench_matmul_fast.cu kernels/reference.cpp -lcublas -o build/mmfast-bin/bench_matmul_fast
// Run:
//   ./bench_matmul_fast                 correctness sweep (aligned, ragged and misaligned) + timing table
//   ./bench_matmul_fast --check M N K   one correctness check, no cuBLAS (for compute-sanitizer); any M, N, K >= 0
//   ./bench_matmul_fast --time M N K    one timing row
//
// Checks: fresh random inputs in [-1, 1) for every check, C poisoned (NaN) before each run, every
// element of C must be finite, sampled rows against the float64 CPU reference (relative L2 <= 1e-2),
// and the whole of C against cuBLAS's C. Timing: 10 warm-up calls, then ours and cuBLAS alternate
// for 30 repetitions, each timed with CUDA events; medians. TFLOP/s counts 2mnk.
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

struct CheckResult {
  std::size_t nonfinite = 0;
  double err_ref = 0, err_cublas = -1;
  std::size_t rows = 0;
};

// One correctness check on fresh inputs; h == nullptr skips cuBLAS. `shift` > 0 offsets A, B and C
// by that many elements (2 bytes each), off TMA's 16-byte alignment.
CheckResult check(cublasHandle_t h, int m, int n, int k, int shift = 0) {
  const std::size_t na = std::size_t(m) * k, nb = std::size_t(k) * n, nc = std::size_t(m) * n;
  Buf a_buf((na + shift) * 2), b_buf((nb + shift) * 2), c_buf((nc + shift) * 2);
  Buf ws(fg::matmul_bf16_fast_workspace_bytes(m, n, k));
  bf16 *pa = a_buf.h() + shift, *pb = b_buf.h() + shift, *pc = c_buf.h() + shift;
  fill_ptr(pa, na);
  fill_ptr(pb, nb);
  CUDA_CHECK(cudaMemset(c_buf.p, 0xff, (nc + shift) * 2));  // NaN everywhere
  fg::matmul_bf16_fast(pa, pb, pc, m, n, k, ws.p, fg::matmul_bf16_fast_workspace_bytes(m, n, k), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  CheckResult r;
  const auto got_all = to_float_ptr(pc, nc);
  for (float v : got_all) r.nonfinite += !std::isfinite(v);
  const auto ha = to_float_ptr(pa, na), hb = to_float_ptr(pb, nb);
  const auto rows = fg::ref::pick_indices(m, nc > (1u << 22) ? 16 : 256);
  r.rows = rows.size();
  std::vector<float> want(rows.size() * n), got;
  fg::ref::matmul_rows(ha.data(), hb.data(), n, k, rows, want.data());
  for (auto row : rows) got.insert(got.end(), got_all.begin() + row * n, got_all.begin() + (row + 1) * n);
  r.err_ref = fg::ref::rel_error(got, want);
  if (h && nc > 0) {  // cuBLAS refuses leading dimensions of 0
    Buf c2(nc * 2);
    CUDA_CHECK(cudaMemset(c2.p, 0xff, nc * 2));
    cublas_matmul(h, pa, pb, c2.h(), m, n, k);
    CUDA_CHECK(cudaDeviceSynchronize());
    r.err_cublas = fg::ref::rel_error(got_all, to_float(c2, nc));
  }
  return r;
}

bool report_check(cublasHandle_t h, int m, int n, int k, int shift = 0) {
  const CheckResult r = check(h, m, n, k, shift);
  // an empty C (m or n = 0) has nothing to compare; rel_error of empty vectors is 0
  const bool ok = r.nonfinite == 0 && r.err_ref <= 1e-2 && (r.err_cublas < 0 || r.err_cublas <= 1e-2);
  std::printf("check %5dx%5dx%5d%s: %zu non-finite, rel err vs fp64 ref %.2e (%zu rows), vs cuBLAS %.2e  %s\n", m, n,
              k, shift ? " (pointers +2 bytes)" : "", r.nonfinite, r.err_ref, r.rows, r.err_cublas, ok ? "PASS" : "FAIL");
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

void time_row(cublasHandle_t h, int m, int n, int k) {
  const std::size_t na = std::size_t(m) * k, nb = std::size_t(k) * n, nc = std::size_t(m) * n;
  Buf a(na * 2), b(nb * 2), c(nc * 2), c2(nc * 2);
  fill(a, na);
  fill(b, nb);
  Buf ws(fg::matmul_bf16_fast_workspace_bytes(m, n, k));
  auto ours = [&] {
    fg::matmul_bf16_fast(a.h(), b.h(), c.h(), m, n, k, ws.p, fg::matmul_bf16_fast_workspace_bytes(m, n, k), nullptr);
  };
  auto theirs = [&] { cublas_matmul(h, a.h(), b.h(), c2.h(), m, n, k); };
  for (int i = 0; i < 10; ++i) {
    ours();
    theirs();
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> t_ours, t_cublas;
  for (int rep = 0; rep < 30; ++rep) {
    for (int which = 0; which < 2; ++which) {
      CUDA_CHECK(cudaEventRecord(e0));
      which == 0 ? ours() : theirs();
      CUDA_CHECK(cudaEventRecord(e1));
      CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      (which == 0 ? t_ours : t_cublas).push_back(ms);
    }
  }
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  const double mo = median(t_ours), mc = median(t_cublas), flop = 2.0 * m * n * k;
  std::printf("%-16s %9.3f %9.1f %11.3f %11.1f %7.3f\n",
              (std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k)).c_str(), mo,
              flop / (mo * 1e-3) / 1e12, mc, flop / (mc * 1e-3) / 1e12, mc / mo);
}

}  // namespace

static int run_main(int argc, char** argv) {
  const bool one = argc == 5 && (std::strcmp(argv[1], "--check") == 0 || std::strcmp(argv[1], "--time") == 0);
  if (argc != 1 && !one)
    throw std::invalid_argument("usage: bench_matmul_fast [--check M N K | --time M N K]");
  int dims[3] = {0, 0, 0};
  if (one)
    for (int i = 0; i < 3; ++i) dims[i] = parse_size(argv[2 + i]);
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, cc %d.%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
  if (one && std::strcmp(argv[1], "--check") == 0) {
    const bool ok = report_check(nullptr, dims[0], dims[1], dims[2]) && report_check(nullptr, dims[0], dims[1], dims[2], 1);
    return ok ? 0 : 1;
  }

  cublasHandle_t h;
  cublas_check(cublasCreate(&h), "cublasCreate");
  if (one) {
    time_row(h, dims[0], dims[1], dims[2]);
    return 0;
  }

  bool ok = true;
  const int shapes[][3] = {{200, 136, 72},  {8, 8, 8},         {128, 256, 64},   {136, 264, 520}, {1000, 4104, 40},
                           {8, 4096, 1024}, {4096, 8, 8},      {4000, 3000, 2048}, {4096, 4096, 4096},
                           {8192, 8192, 1024}, {8192, 8192, 8192},
                           // ragged: no multiple of 8 (padded copies), single rows/columns, empty C
                           {1000, 777, 300}, {1, 1, 1}, {3, 5, 7}, {129, 257, 65}, {77, 1000, 13}, {1000, 9, 4097},
                           {5120, 1000, 3000}, {3000, 8192, 1000}, {1000, 1000, 8192}, {0, 8, 8}, {8, 0, 8}};
  for (const auto& s : shapes) ok &= report_check(h, s[0], s[1], s[2]);
  for (const auto& s : {std::array<int, 3>{200, 136, 72}, std::array<int, 3>{129, 257, 65}})
    ok &= report_check(h, s[0], s[1], s[2], 1);  // misaligned pointers take the padded path
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

  std::printf("\n%-16s %9s %9s %11s %11s %7s\n", "m x n x k", "ours ms", "TFLOP/s", "cuBLAS ms", "TFLOP/s",
              "ratio");
  for (const auto& s : {std::array<int, 3>{8192, 8192, 8192}, std::array<int, 3>{4096, 4096, 4096},
                        std::array<int, 3>{8192, 8192, 1024}, std::array<int, 3>{4000, 3000, 2048},
                        std::array<int, 3>{5120, 1000, 3000}, std::array<int, 3>{3000, 8192, 1000},
                        std::array<int, 3>{1000, 1000, 8192}, std::array<int, 3>{1000, 777, 300}})
    time_row(h, s[0], s[1], s[2]);
  std::printf("ratio = ours speed / cuBLAS speed (cuBLAS ms / ours ms); median of 30, CUDA events\n");
  cublas_check(cublasDestroy(h), "cublasDestroy");
  std::printf("%s\n", ok ? "ALL CHECKS PASS" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) { return flashsim::guard_main("bench_matmul_fast", [&] { return run_main(argc, argv); }); }

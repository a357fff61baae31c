/*
Kernels for matmul C[M,N] = A[M,K] B[K,N] (row-major), fp32 or bf16 inputs, fp32 accumulation
and fp32 C. Same schedules as the tile machine's MatmulSchedule.

Build: part of the CMake build (target `matmul`); run ./matmul [version] [size...]
  e.g. ./matmul 2 matmul:8192x8192x256

version 1 is the inner-product / output-stationary order (MatmulSchedule::Inner): each 256-thread
block owns a 64x64 tile of C in registers (4x4 per thread) and streams 64x16 panels of A and
16x64 panels of B through shared memory over k. C is written once. Tiles bm=bn=64, bk=16.
./matmul 1

version 2 is the outer-product order (MatmulSchedule::Outer): k is the outermost loop, across
launches: launch s adds A[:, 4s:4s+4] B[4s:4s+4, :] to every C tile, so C (fp32) is read from and
written back to HBM at every k-step (the first step only writes). Logical tiles bm=bn=256, bk=4;
a block keeps the 256x4 and 4x256 panels in shared memory and streams its C tile row by row.
./matmul 2

CPU reference: kernels/reference.cpp matmul_rows (double accumulation), checked on up to 64 rows
spread over C (all rows when M <= 64); tolerance fp32 1e-4, bf16 1e-2 (relative L2 error).
*/
#include <algorithm>
#include <sstream>

#include "kernels/cuda_util.cuh"
#include "kernels/reference.h"

namespace flashsim::gpu {

// ----------------------------------------------------------------------------
// GPU kernels

template <class T>
__global__ void __launch_bounds__(256) matmul_inner_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                                           float* __restrict__ c, int m, int n, int k) {
  constexpr int BM = 64, BN = 64, BK = 16;
  __shared__ float as[BK][BM + 4];  // transposed A panel: as[kk][row]
  __shared__ float bs[BK][BN + 4];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int t = threadIdx.x; t < BM * BK; t += blockDim.x) {
      const int r = t / BK, kk = t % BK, gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? to_f(a[static_cast<std::size_t>(gr) * k + gk]) : 0.f;
    }
    for (int t = threadIdx.x; t < BK * BN; t += blockDim.x) {
      const int kk = t / BN, cc = t % BN, gk = k0 + kk, gc = col0 + cc;
      bs[kk][cc] = (gk < k && gc < n) ? to_f(b[static_cast<std::size_t>(gk) * n + gc]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i;
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int cc = col0 + tx + 16 * j;
      if (cc < n) c[static_cast<std::size_t>(r) * n + cc] = acc[i][j];
    }
  }
}

// One k-step of the outer product: C[tile] (+)= A[tile rows, k0:k0+kb] B[k0:k0+kb, tile cols].
template <class T>
__global__ void __launch_bounds__(256) matmul_outer_step_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                                                float* __restrict__ c, int m, int n, int k, int k0,
                                                                int kb, int first) {
  constexpr int BM = 256, BN = 256, BK = 4;
  __shared__ float as[BK][BM];
  __shared__ float bs[BK][BN];
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  for (int t = threadIdx.x; t < BM * BK; t += blockDim.x) {
    const int r = t / BK, kk = t % BK, gr = row0 + r;
    as[kk][r] = (gr < m && kk < kb) ? to_f(a[static_cast<std::size_t>(gr) * k + k0 + kk]) : 0.f;
  }
  for (int t = threadIdx.x; t < BK * BN; t += blockDim.x) {
    const int kk = t / BN, cc = t % BN, gc = col0 + cc;
    bs[kk][cc] = (kk < kb && gc < n) ? to_f(b[static_cast<std::size_t>(k0 + kk) * n + gc]) : 0.f;
  }
  __syncthreads();
  const int col = col0 + threadIdx.x;
  if (col >= n) return;
  const float b0 = bs[0][threadIdx.x], b1 = bs[1][threadIdx.x], b2 = bs[2][threadIdx.x], b3 = bs[3][threadIdx.x];
  const int rows = min(BM, m - row0);
  float* cp = c + static_cast<std::size_t>(row0) * n + col;
  int r = 0;
  for (; r + 8 <= rows; r += 8) {
    float v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = first ? 0.f : cp[static_cast<std::size_t>(r + u) * n];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int rr = r + u;
      v[u] += as[0][rr] * b0 + as[1][rr] * b1 + as[2][rr] * b2 + as[3][rr] * b3;
      cp[static_cast<std::size_t>(rr) * n] = v[u];
    }
  }
  for (; r < rows; ++r) {
    float v = first ? 0.f : cp[static_cast<std::size_t>(r) * n];
    v += as[0][r] * b0 + as[1][r] * b1 + as[2][r] * b2 + as[3][r] * b3;
    cp[static_cast<std::size_t>(r) * n] = v;
  }
}

// ----------------------------------------------------------------------------
// kernel launchers

template <class T>
void matmul_inner(const T* a, const T* b, float* c, int m, int n, int k) {
  dim3 grid((n + 63) / 64, (m + 63) / 64);
  matmul_inner_kernel<T><<<grid, 256>>>(a, b, c, m, n, k);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void matmul_outer(const T* a, const T* b, float* c, int m, int n, int k) {
  dim3 grid((n + 255) / 256, (m + 255) / 256);
  for (int k0 = 0; k0 < k; k0 += 4) {
    matmul_outer_step_kernel<T><<<grid, 256>>>(a, b, c, m, n, k, k0, std::min(4, k - k0), k0 == 0);
    CUDA_CHECK_LAUNCH();
  }
}

// ----------------------------------------------------------------------------
// workload: random inputs, poisoned output, CPU check

namespace {

class MatmulWorkload : public Workload {
 public:
  using Workload::Workload;

  void setup(std::uint64_t seed) override {
    const auto& s = spec_;
    const int e = dtype_bytes(s.dtype);
    ia_ = add_input(static_cast<std::size_t>(s.m * s.k) * e);
    ib_ = add_input(static_cast<std::size_t>(s.k * s.n) * e);
    c_ = DevBuf(static_cast<std::size_t>(s.m * s.n) * 4);
    fill_uniform(in(0, ia_), s.m * s.k, s.dtype, seed, -1.f, 1.f);
    fill_uniform(in(0, ib_), s.k * s.n, s.dtype, seed + 1, -1.f, 1.f);
  }
  void poison_outputs() override { poison(c_); }
  void run(int set) override {
    const auto& s = spec_;
    const bool inner = s.schedule == Schedule::MatmulInner;
    if (s.dtype == Dtype::F32) {
      auto a = static_cast<const float*>(in(set, ia_)), b = static_cast<const float*>(in(set, ib_));
      inner ? matmul_inner(a, b, c_.as<float>(), s.m, s.n, s.k) : matmul_outer(a, b, c_.as<float>(), s.m, s.n, s.k);
    } else {
      auto a = static_cast<const __nv_bfloat16*>(in(set, ia_)), b = static_cast<const __nv_bfloat16*>(in(set, ib_));
      inner ? matmul_inner(a, b, c_.as<float>(), s.m, s.n, s.k) : matmul_outer(a, b, c_.as<float>(), s.m, s.n, s.k);
    }
  }
  double check(std::string* note) override {
    const auto& s = spec_;
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::uint64_t bad = count_nonfinite(c_.get(), s.m * s.n, Dtype::F32);
    auto a = to_host(in(0, ia_), 0, s.m * s.k, s.dtype);
    auto b = to_host(in(0, ib_), 0, s.k * s.n, s.dtype);
    auto rows = ref::pick_indices(s.m, 64);
    std::vector<float> want(rows.size() * s.n), got;
    ref::matmul_rows(a.data(), b.data(), s.n, s.k, rows, want.data());
    for (auto r : rows) {
      auto row = to_host(c_.get(), static_cast<std::size_t>(r * s.n), s.n, Dtype::F32);
      got.insert(got.end(), row.begin(), row.end());
    }
    std::ostringstream o;
    o << rows.size() << " of " << s.m << " rows checked; " << bad << " non-finite outputs";
    if (note) *note = o.str();
    const double err = ref::rel_error(got, want);
    return bad ? INFINITY : err;
  }

 private:
  int ia_ = 0, ib_ = 0;
  DevBuf c_;
};

}  // namespace

std::unique_ptr<Workload> make_matmul(const Spec& s) {
  if (s.schedule == Schedule::MatmulInner && !(s.bm == 64 && s.bn == 64 && s.bk == 16))
    throw std::invalid_argument("matmul-inner is compiled for 64x64x16 tiles");
  if (s.schedule == Schedule::MatmulOuter && !(s.bm == 256 && s.bn == 256 && s.bk == 4))
    throw std::invalid_argument("matmul-outer is compiled for 256x256x4 tiles");
  return std::make_unique<MatmulWorkload>(s);
}

}  // namespace flashsim::gpu

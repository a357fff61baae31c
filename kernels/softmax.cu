/*
Kernels for row softmax Y = softmax(X) over rows far longer than shared memory (fp32 or bf16 in
and out, fp32 statistics). Same schedules as the tile machine's SoftmaxSchedule.

Build: part of the CMake build (target `softmax`); run ./softmax [version] [size...]
  e.g. ./softmax 1 softmax:256x524288

Every kernel launches a (chunks, rows) grid: a 256-thread block handles `chunk` = 4096 columns of
one row and writes per-chunk partial statistics (m_partial, l_partial: rows x chunks fp32); the
next pass's blocks first combine their row's partials. X is re-read from HBM by every pass.

version 1 is the 3-pass softmax (SoftmaxSchedule::ThreePass):
  pass 1 partial max, pass 2 partial sum of exp(x - m), pass 3 y = exp(x - m) / l.
  X read 3 times, Y written once.
./softmax 1

version 2 is the online softmax (SoftmaxSchedule::Online, Milakov & Gimelshein 2018):
  pass 1 keeps a running (max, sum) and rescales the sum when the max grows, pass 2 normalizes.
  X read 2 times, Y written once.
./softmax 2

CPU reference: kernels/reference.cpp softmax_row (double), on up to 16 rows spread over X;
tolerance fp32 1e-4, bf16 1e-2 (relative L2 error).
*/
#include <sstream>

#include "kernels/cuda_util.cuh"
#include "kernels/fast.h"
#include "kernels/reference.h"

namespace flashsim::gpu {

// ----------------------------------------------------------------------------
// GPU kernels

namespace {

constexpr int kChunk = 4096;
constexpr int kThreads = 256;

// Row maximum from the row's per-chunk partials.
__device__ __forceinline__ float row_max(const float* pm, int nc, float* sh) {
  float m = -INFINITY;
  for (int t = threadIdx.x; t < nc; t += blockDim.x) m = fmaxf(m, pm[t]);
  return block_max(m, sh);
}

}  // namespace

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_max_kernel(const T* __restrict__ x, float* __restrict__ pm,
                                                                 long long cols, int nc) {
  __shared__ float sh[64];
  const long long row = blockIdx.y;
  const long long begin = static_cast<long long>(blockIdx.x) * kChunk, end = min(cols, begin + kChunk);
  const T* xr = x + row * cols;
  float m = -INFINITY;
#pragma unroll 4
  for (long long j = begin + threadIdx.x; j < end; j += kThreads) m = fmaxf(m, to_f(xr[j]));
  m = block_max(m, sh);
  if (threadIdx.x == 0) pm[row * nc + blockIdx.x] = m;
}

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_sum_kernel(const T* __restrict__ x, const float* __restrict__ pm,
                                                                 float* __restrict__ pl, long long cols, int nc) {
  __shared__ float sh[64];
  const long long row = blockIdx.y;
  const float m = row_max(pm + row * nc, nc, sh);
  const long long begin = static_cast<long long>(blockIdx.x) * kChunk, end = min(cols, begin + kChunk);
  const T* xr = x + row * cols;
  float l = 0.f;
#pragma unroll 4
  for (long long j = begin + threadIdx.x; j < end; j += kThreads) l += __expf(to_f(xr[j]) - m);
  l = block_sum(l, sh);
  if (threadIdx.x == 0) pl[row * nc + blockIdx.x] = l;
}

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_norm3_kernel(const T* __restrict__ x, const float* __restrict__ pm,
                                                                   const float* __restrict__ pl, T* __restrict__ y,
                                                                   long long cols, int nc) {
  __shared__ float sh[64];
  const long long row = blockIdx.y;
  const float m = row_max(pm + row * nc, nc, sh);
  float l = 0.f;
  for (int t = threadIdx.x; t < nc; t += blockDim.x) l += pl[row * nc + t];
  l = block_sum(l, sh);
  const float inv = 1.f / l;
  const long long begin = static_cast<long long>(blockIdx.x) * kChunk, end = min(cols, begin + kChunk);
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
#pragma unroll 4
  for (long long j = begin + threadIdx.x; j < end; j += kThreads) yr[j] = from_f<T>(__expf(to_f(xr[j]) - m) * inv);
}

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_online_kernel(const T* __restrict__ x, float* __restrict__ pm,
                                                                    float* __restrict__ pl, long long cols, int nc) {
  __shared__ float sh[64];
  const long long row = blockIdx.y;
  const long long begin = static_cast<long long>(blockIdx.x) * kChunk, end = min(cols, begin + kChunk);
  const T* xr = x + row * cols;
  float m = -INFINITY, l = 0.f;
#pragma unroll 4
  for (long long j = begin + threadIdx.x; j < end; j += kThreads) {
    const float v = to_f(xr[j]);
    if (v > m) {
      l = l * __expf(m - v) + 1.f;  // exp(-inf) = 0 on the first element
      m = v;
    } else if (v > -INFINITY) {  // a masked -inf adds nothing (and -inf - -inf would be NaN)
      l += __expf(v - m);
    }
  }
  block_combine_ml(m, l, sh);
  if (threadIdx.x == 0) {
    pm[row * nc + blockIdx.x] = m;
    pl[row * nc + blockIdx.x] = l;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_norm_online_kernel(const T* __restrict__ x,
                                                                         const float* __restrict__ pm,
                                                                         const float* __restrict__ pl,
                                                                         T* __restrict__ y, long long cols, int nc) {
  __shared__ float sh[64];
  const long long row = blockIdx.y;
  float m = -INFINITY, l = 0.f;
  for (int t = threadIdx.x; t < nc; t += blockDim.x) combine_ml(m, l, pm[row * nc + t], pl[row * nc + t]);
  block_combine_ml(m, l, sh);
  const float inv = 1.f / l;
  const long long begin = static_cast<long long>(blockIdx.x) * kChunk, end = min(cols, begin + kChunk);
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
#pragma unroll 4
  for (long long j = begin + threadIdx.x; j < end; j += kThreads) yr[j] = from_f<T>(__expf(to_f(xr[j]) - m) * inv);
}

// ----------------------------------------------------------------------------
// kernel launchers

template <class T>
void softmax_three_pass(const T* x, T* y, float* pm, float* pl, long long rows, long long cols) {
  const int nc = static_cast<int>((cols + kChunk - 1) / kChunk);
  dim3 grid(nc, static_cast<unsigned>(rows));
  record_occupancy(reinterpret_cast<const void*>(softmax_max_kernel<T>), kThreads, 0);
  softmax_max_kernel<T><<<grid, kThreads>>>(x, pm, cols, nc);
  CUDA_CHECK_LAUNCH();
  softmax_sum_kernel<T><<<grid, kThreads>>>(x, pm, pl, cols, nc);
  CUDA_CHECK_LAUNCH();
  softmax_norm3_kernel<T><<<grid, kThreads>>>(x, pm, pl, y, cols, nc);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void softmax_online(const T* x, T* y, float* pm, float* pl, long long rows, long long cols) {
  const int nc = static_cast<int>((cols + kChunk - 1) / kChunk);
  dim3 grid(nc, static_cast<unsigned>(rows));
  record_occupancy(reinterpret_cast<const void*>(softmax_online_kernel<T>), kThreads, 0);
  softmax_online_kernel<T><<<grid, kThreads>>>(x, pm, pl, cols, nc);
  CUDA_CHECK_LAUNCH();
  softmax_norm_online_kernel<T><<<grid, kThreads>>>(x, pm, pl, y, cols, nc);
  CUDA_CHECK_LAUNCH();
}

// ---- version 3: online softmax at the memory bandwidth ---------------------------------------
//
// Same two passes as version 2, built for bandwidth: 16-byte loads, several in flight per thread
// before the first use, exp2 with log2 e folded in, and streaming (evict-first) stores for Y so it
// does not push X's lines out of L2 early. Pass 1 writes one (max, sum) pair per chunk; pass 2
// merges its row's pairs, then normalizes. Two layouts of the same schedule:
//  - long rows (cols > kFastChunk): a (chunks, rows) grid of 512-thread blocks, one 16384-column
//    chunk each, so that a few very long rows still spread over the whole GPU;
//  - short rows (one chunk): G = 1, 2 or 4 warps per row and 8 / G rows per 256-thread block, no
//    block-wide barrier in pass 2 and only warp shuffles in pass 1 when G = 1 (a 512-thread block
//    on a 4096-column row held 2 loads a thread and spent its time in barriers: 0.78x the copy).
// Rows need not be 16-byte aligned: each span is split into a scalar head, float4 body and
// scalar tail by global address, so odd column counts (7 x 1000003) still stream float4s.

namespace fast {

constexpr int kFastThreads = 512;
constexpr int kUnroll = 4;                                  // float4 loads in flight per thread
constexpr int kFastChunk = kFastThreads * 4 * kUnroll * 2;  // 16384 columns per block
constexpr int kRowThreads = 256;                            // short-row blocks
constexpr int kRowUnroll = 8;                               // more in flight: fewer threads per row
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ void merge(float& m, float& l, float m2, float l2) {
  const float mx = fmaxf(m, m2);
  if (mx == -INFINITY) return;  // both empty
  l = l * exp2f(m - mx) + l2 * exp2f(m2 - mx);
  m = mx;
}

__device__ __forceinline__ void warp_merge(float& m, float& l) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), l2 = __shfl_xor_sync(0xffffffffu, l, o);
    merge(m, l, m2, l2);
  }
}

// (max, sum) in log2 units of one block's chunk; every thread gets the block's pair.
__device__ __forceinline__ void block_merge(float& m, float& l, float2* sh) {
  warp_merge(m, l);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = make_float2(m, l);
  __syncthreads();
  m = -INFINITY;
  l = 0.f;
  if (lane < kFastThreads / 32) { m = sh[lane].x; l = sh[lane].y; }
  warp_merge(m, l);
}

// Elements [g0, g1) of x by global index: [head0, head1) and [tail0, tail1) scalar, float4s
// [b0, b1) (indices of float4). x itself is 16-byte aligned (cudaMalloc).
struct Span {
  long long head0, head1, b0, b1, tail0, tail1;
};
__device__ __forceinline__ Span split16(long long g0, long long g1) {
  const long long a = (g0 + 3) & ~3LL, b = g1 & ~3LL;
  if (a >= b) return {g0, g1, 0, 0, g1, g1};
  return {g0, a, a / 4, b / 4, b, g1};
}

// Thread t of T running (max, sum) over a span, in log2 units.
template <int T, int U>
__device__ __forceinline__ void span_stats(const float* __restrict__ x, const Span& s, int t, float& m, float& l) {
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (long long base = s.b0 + t; base < s.b1; base += U * T) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long i = base + static_cast<long long>(u) * T;
      v[u] = i < s.b1 ? __ldg(x4 + i) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    }
    float mx = m;
#pragma unroll
    for (int u = 0; u < U; ++u) mx = fmaxf(mx, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)) * kLog2e);
    if (mx == -INFINITY) continue;  // nothing visible yet
    float sum = l * exp2f(m - mx);  // m = -inf, l = 0 at the start: exp2(-inf) = 0
#pragma unroll
    for (int u = 0; u < U; ++u)
      sum += exp2f(fmaf(v[u].x, kLog2e, -mx)) + exp2f(fmaf(v[u].y, kLog2e, -mx)) +
             exp2f(fmaf(v[u].z, kLog2e, -mx)) + exp2f(fmaf(v[u].w, kLog2e, -mx));
    m = mx;
    l = sum;
  }
  for (long long g = s.head0 + t; g < s.head1; g += T) merge(m, l, x[g] * kLog2e, 1.f);
  for (long long g = s.tail0 + t; g < s.tail1; g += T) merge(m, l, x[g] * kLog2e, 1.f);
}

// Thread t of T writing y = 2^(x log2 e - m) * inv over a span.
template <int T, int U>
__device__ __forceinline__ void span_norm(const float* __restrict__ x, float* __restrict__ y, const Span& s, int t,
                                          float m, float inv) {
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (long long base = s.b0 + t; base < s.b1; base += U * T) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long i = base + static_cast<long long>(u) * T;
      if (i < s.b1) v[u] = __ldg(x4 + i);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long i = base + static_cast<long long>(u) * T;
      if (i >= s.b1) break;
      float4 r;
      r.x = exp2f(fmaf(v[u].x, kLog2e, -m)) * inv;
      r.y = exp2f(fmaf(v[u].y, kLog2e, -m)) * inv;
      r.z = exp2f(fmaf(v[u].z, kLog2e, -m)) * inv;
      r.w = exp2f(fmaf(v[u].w, kLog2e, -m)) * inv;
      __stcs(y4 + i, r);
    }
  }
  for (long long g = s.head0 + t; g < s.head1; g += T) y[g] = exp2f(fmaf(x[g], kLog2e, -m)) * inv;
  for (long long g = s.tail0 + t; g < s.tail1; g += T) y[g] = exp2f(fmaf(x[g], kLog2e, -m)) * inv;
}

// ---- long rows: one block per (chunk, row)

__global__ void __launch_bounds__(kFastThreads) softmax_fast_stats_kernel(const float* __restrict__ x,
                                                                           float2* __restrict__ partial,
                                                                           long long cols) {
  __shared__ float2 sh[kFastThreads / 32];
  const long long row = blockIdx.y, c0 = static_cast<long long>(blockIdx.x) * kFastChunk;
  const long long c1 = min(cols, c0 + kFastChunk);
  float m = -INFINITY, l = 0.f;
  span_stats<kFastThreads, kUnroll>(x, split16(row * cols + c0, row * cols + c1), threadIdx.x, m, l);
  block_merge(m, l, sh);
  if (threadIdx.x == 0) partial[row * gridDim.x + blockIdx.x] = make_float2(m, l);
}

__global__ void __launch_bounds__(kFastThreads) softmax_fast_norm_kernel(const float* __restrict__ x,
                                                                          const float2* __restrict__ partial,
                                                                          float* __restrict__ y, long long cols) {
  __shared__ float2 sh[kFastThreads / 32];
  const long long row = blockIdx.y, c0 = static_cast<long long>(blockIdx.x) * kFastChunk;
  float m = -INFINITY, l = 0.f;
  for (int i = threadIdx.x; i < static_cast<int>(gridDim.x); i += kFastThreads) {
    const float2 p = partial[row * gridDim.x + i];
    merge(m, l, p.x, p.y);
  }
  block_merge(m, l, sh);
  const long long c1 = min(cols, c0 + kFastChunk);
  span_norm<kFastThreads, kUnroll>(x, y, split16(row * cols + c0, row * cols + c1), threadIdx.x, m, 1.f / l);
}

// ---- short rows: G warps per row, kRowThreads / (32 G) rows per block

template <int G>
__global__ void __launch_bounds__(kRowThreads) softmax_rows_stats_kernel(const float* __restrict__ x,
                                                                          float2* __restrict__ partial, long long rows,
                                                                          long long cols) {
  __shared__ float2 sh[kRowThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long row = static_cast<long long>(blockIdx.x) * (kRowThreads / 32 / G) + warp / G;
  float m = -INFINITY, l = 0.f;
  if (row < rows)
    span_stats<32 * G, kRowUnroll>(x, split16(row * cols, row * cols + cols), (warp % G) * 32 + lane, m, l);
  warp_merge(m, l);
  if constexpr (G > 1) {
    if (lane == 0) sh[warp] = make_float2(m, l);
    __syncthreads();
    if (warp % G == 0 && lane == 0)
      for (int i = 1; i < G; ++i) merge(m, l, sh[warp + i].x, sh[warp + i].y);
  }
  if (row < rows && warp % G == 0 && lane == 0) partial[row] = make_float2(m, l);
}

template <int G>
__global__ void __launch_bounds__(kRowThreads) softmax_rows_norm_kernel(const float* __restrict__ x,
                                                                         const float2* __restrict__ partial,
                                                                         float* __restrict__ y, long long rows,
                                                                         long long cols) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long row = static_cast<long long>(blockIdx.x) * (kRowThreads / 32 / G) + warp / G;
  if (row >= rows) return;  // no barrier below
  const float2 p = partial[row];
  span_norm<32 * G, kRowUnroll>(x, y, split16(row * cols, row * cols + cols), (warp % G) * 32 + lane, p.x, 1.f / p.y);
}

template <int G>
void launch_rows(const float* x, float* y, float2* part, long long rows, long long cols, cudaStream_t stream) {
  const long long per_block = kRowThreads / 32 / G;
  const long long blocks = (rows + per_block - 1) / per_block;
  if (blocks > 0x7fffffffLL) throw std::invalid_argument("softmax_online_fast: too many rows");
  record_occupancy(reinterpret_cast<const void*>(softmax_rows_stats_kernel<G>), kRowThreads, 0);
  softmax_rows_stats_kernel<G><<<static_cast<unsigned>(blocks), kRowThreads, 0, stream>>>(x, part, rows, cols);
  CUDA_CHECK_LAUNCH();
  softmax_rows_norm_kernel<G><<<static_cast<unsigned>(blocks), kRowThreads, 0, stream>>>(x, part, y, rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace fast

std::size_t softmax_fast_partials_bytes(int rows, long long cols) {
  if (rows < 0 || cols < 0) throw std::invalid_argument("softmax_fast_partials_bytes: negative size");
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>((cols + fast::kFastChunk - 1) / fast::kFastChunk) *
         sizeof(float2);
}

void softmax_online_fast(const float* x, float* y, int rows, long long cols, float* partials, cudaStream_t stream) {
  if (rows < 1 || cols < 1) throw std::invalid_argument("softmax_online_fast: need rows >= 1, cols >= 1");
  if (x == nullptr || y == nullptr || partials == nullptr) throw std::invalid_argument("softmax_online_fast: null pointer");
  auto* part = reinterpret_cast<float2*>(partials);
  // one chunk per row: warps per row so that each lane keeps <= 32 float4s of it
  if (cols <= 4096) return fast::launch_rows<1>(x, y, part, rows, cols, stream);
  if (cols <= 8192) return fast::launch_rows<2>(x, y, part, rows, cols, stream);
  if (cols <= fast::kFastChunk) return fast::launch_rows<4>(x, y, part, rows, cols, stream);
  if (rows > 65535) throw std::invalid_argument("softmax_online_fast: rows longer than 16384 columns: at most 65535 rows");
  const long long chunks = (cols + fast::kFastChunk - 1) / fast::kFastChunk;
  if (chunks > 0x7fffffffLL) throw std::invalid_argument("softmax_online_fast: rows too long");
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(rows));
  record_occupancy(reinterpret_cast<const void*>(fast::softmax_fast_stats_kernel), fast::kFastThreads, 0);
  fast::softmax_fast_stats_kernel<<<grid, fast::kFastThreads, 0, stream>>>(x, part, cols);
  CUDA_CHECK_LAUNCH();
  fast::softmax_fast_norm_kernel<<<grid, fast::kFastThreads, 0, stream>>>(x, part, y, cols);
  CUDA_CHECK_LAUNCH();
}

// ----------------------------------------------------------------------------
// workload

namespace {

class SoftmaxWorkload : public Workload {
 public:
  using Workload::Workload;
  void setup(std::uint64_t seed) override {
    const auto& s = spec_;
    const std::size_t n = static_cast<std::size_t>(s.rows * s.cols);
    const long long nc = (s.cols + kChunk - 1) / kChunk;
    ix_ = add_input(n * dtype_bytes(s.dtype));
    y_ = DevBuf(n * dtype_bytes(s.dtype));
    if (s.schedule == Schedule::SoftmaxFast) {  // one (max, sum) float2 per chunk
      pm_ = DevBuf(softmax_fast_partials_bytes(static_cast<int>(s.rows), s.cols));
    } else {
      pm_ = DevBuf(static_cast<std::size_t>(s.rows * nc) * 4);
      pl_ = DevBuf(static_cast<std::size_t>(s.rows * nc) * 4);
    }
    // a wide range so that the max matters: exp would overflow in fp32 without it
    fill_uniform(in(0, ix_), n, s.dtype, seed, -40.f, 40.f);
  }
  void poison_outputs() override {
    poison(y_);
    poison(pm_);
    if (pl_.get()) poison(pl_);
  }
  void run(int set) override {
    const auto& s = spec_;
    if (s.schedule == Schedule::SoftmaxFast) {
      softmax_online_fast(static_cast<const float*>(in(set, ix_)), y_.as<float>(), static_cast<int>(s.rows), s.cols,
                          pm_.as<float>(), nullptr);
      return;
    }
    const bool three = s.schedule == Schedule::SoftmaxThree;
    if (s.dtype == Dtype::F32) {
      auto x = static_cast<const float*>(in(set, ix_));
      three ? softmax_three_pass(x, y_.as<float>(), pm_.as<float>(), pl_.as<float>(), s.rows, s.cols)
            : softmax_online(x, y_.as<float>(), pm_.as<float>(), pl_.as<float>(), s.rows, s.cols);
    } else {
      auto x = static_cast<const __nv_bfloat16*>(in(set, ix_));
      auto y = y_.as<__nv_bfloat16>();
      three ? softmax_three_pass(x, y, pm_.as<float>(), pl_.as<float>(), s.rows, s.cols)
            : softmax_online(x, y, pm_.as<float>(), pl_.as<float>(), s.rows, s.cols);
    }
  }
  double check(std::string* note) override {
    const auto& s = spec_;
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::uint64_t bad = count_nonfinite(y_.get(), s.rows * s.cols, s.dtype);
    auto rows = ref::pick_indices(s.rows, 16);
    std::vector<float> got, want;
    for (auto r : rows) {
      auto x = to_host(in(0, ix_), r * s.cols, s.cols, s.dtype);
      auto y = to_host(y_.get(), r * s.cols, s.cols, s.dtype);
      std::vector<float> w(s.cols);
      ref::softmax_row(x.data(), w.data(), s.cols);
      got.insert(got.end(), y.begin(), y.end());
      want.insert(want.end(), w.begin(), w.end());
    }
    std::ostringstream o;
    o << rows.size() << " of " << s.rows << " rows checked; " << bad << " non-finite outputs";
    if (note) *note = o.str();
    const double err = ref::rel_error(got, want);
    return bad ? INFINITY : err;
  }

 private:
  int ix_ = 0;
  DevBuf y_, pm_, pl_;
};

}  // namespace

std::unique_ptr<Workload> make_softmax(const Spec& s) {
  if (auto why = unsupported(s.schedule, s.dtype, 0)) throw std::invalid_argument(*why);
  const long long chunk = s.schedule == Schedule::SoftmaxFast ? fast::kFastChunk : kChunk;
  if (s.chunk != chunk)
    throw std::invalid_argument("this softmax kernel is compiled for chunk = " + std::to_string(chunk));
  return std::make_unique<SoftmaxWorkload>(s);
}

}  // namespace flashsim::gpu

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
// Same two passes as version 2, built for bandwidth: 16-byte loads, four of them in flight per
// thread before the first use, chunks of kFastChunk columns per block (so a long row is spread
// over many blocks and the grid covers the GPU many times over), exp2 with log2 e folded in,
// and streaming (evict-first) stores for Y so it does not push X's lines out of L2 early.
// Pass 1 writes one (max, sum) pair per chunk; pass 2 merges its row's pairs, then normalizes.

namespace fast {

constexpr int kFastThreads = 512;
constexpr int kUnroll = 4;                                  // float4 loads in flight per thread
constexpr int kFastChunk = kFastThreads * 4 * kUnroll * 2;  // 16384 columns per block
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ void merge(float& m, float& l, float m2, float l2) {
  const float mx = fmaxf(m, m2);
  if (mx == -INFINITY) return;  // both empty
  l = l * exp2f(m - mx) + l2 * exp2f(m2 - mx);
  m = mx;
}

// (max, sum) in log2 units of one block's chunk; every thread gets the block's pair.
__device__ __forceinline__ void block_merge(float& m, float& l, float2* sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), l2 = __shfl_xor_sync(0xffffffffu, l, o);
    merge(m, l, m2, l2);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = make_float2(m, l);
  __syncthreads();
  m = -INFINITY;
  l = 0.f;
  if (lane < kFastThreads / 32) { m = sh[lane].x; l = sh[lane].y; }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), l2 = __shfl_xor_sync(0xffffffffu, l, o);
    merge(m, l, m2, l2);
  }
}

__global__ void __launch_bounds__(kFastThreads) softmax_fast_stats_kernel(const float* __restrict__ x,
                                                                           float2* __restrict__ partial,
                                                                           long long cols) {
  __shared__ float2 sh[kFastThreads / 32];
  const long long row = blockIdx.y, c0 = static_cast<long long>(blockIdx.x) * kFastChunk;
  const float* xr = x + row * cols;
  const long long c1 = min(cols, c0 + kFastChunk);
  float m = -INFINITY, l = 0.f;
  if ((cols % 4) == 0) {  // 16-byte rows: float4 loads, kUnroll in flight, -inf past the end
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const long long e4 = c1 / 4;
    for (long long base = c0 / 4 + threadIdx.x; base < e4; base += kUnroll * kFastThreads) {
      float4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const long long i = base + static_cast<long long>(u) * kFastThreads;
        v[u] = i < e4 ? __ldg(x4 + i) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      }
      float mx = m;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) mx = fmaxf(mx, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)) * kLog2e);
      if (mx == -INFINITY) continue;  // nothing visible yet
      float sum = l * exp2f(m - mx);  // m = -inf, l = 0 at the start: exp2(-inf) = 0
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        sum += exp2f(fmaf(v[u].x, kLog2e, -mx)) + exp2f(fmaf(v[u].y, kLog2e, -mx)) +
               exp2f(fmaf(v[u].z, kLog2e, -mx)) + exp2f(fmaf(v[u].w, kLog2e, -mx));
      m = mx;
      l = sum;
    }
  } else {  // rows not a multiple of 16 bytes: scalar loads
    for (long long c = c0 + threadIdx.x; c < c1; c += kFastThreads) merge(m, l, xr[c] * kLog2e, 1.f);
  }
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
  const float inv = 1.f / l;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  const long long c1 = min(cols, c0 + kFastChunk);
  if ((cols % 4) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float4* y4 = reinterpret_cast<float4*>(yr);
    const long long e4 = c1 / 4;
    for (long long base = c0 / 4 + threadIdx.x; base < e4; base += kUnroll * kFastThreads) {
      float4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const long long i = base + static_cast<long long>(u) * kFastThreads;
        if (i < e4) v[u] = __ldg(x4 + i);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const long long i = base + static_cast<long long>(u) * kFastThreads;
        if (i >= e4) break;
        float4 r;
        r.x = exp2f(fmaf(v[u].x, kLog2e, -m)) * inv;
        r.y = exp2f(fmaf(v[u].y, kLog2e, -m)) * inv;
        r.z = exp2f(fmaf(v[u].z, kLog2e, -m)) * inv;
        r.w = exp2f(fmaf(v[u].w, kLog2e, -m)) * inv;
        __stcs(y4 + i, r);
      }
    }
  } else {
    for (long long c = c0 + threadIdx.x; c < c1; c += kFastThreads) yr[c] = exp2f(fmaf(xr[c], kLog2e, -m)) * inv;
  }
}

}  // namespace fast

std::size_t softmax_fast_partials_bytes(int rows, long long cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>((cols + fast::kFastChunk - 1) / fast::kFastChunk) *
         sizeof(float2);
}

void softmax_online_fast(const float* x, float* y, int rows, long long cols, float* partials, cudaStream_t stream) {
  if (rows < 1 || rows > 65535 || cols < 1) throw std::invalid_argument("softmax_online_fast: need 1 <= rows <= 65535, cols >= 1");
  const long long chunks = (cols + fast::kFastChunk - 1) / fast::kFastChunk;
  if (chunks > 0x7fffffffLL) throw std::invalid_argument("softmax_online_fast: rows too long");
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(rows));
  auto* part = reinterpret_cast<float2*>(partials);
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

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
  softmax_online_kernel<T><<<grid, kThreads>>>(x, pm, pl, cols, nc);
  CUDA_CHECK_LAUNCH();
  softmax_norm_online_kernel<T><<<grid, kThreads>>>(x, pm, pl, y, cols, nc);
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
    pm_ = DevBuf(static_cast<std::size_t>(s.rows * nc) * 4);
    pl_ = DevBuf(static_cast<std::size_t>(s.rows * nc) * 4);
    // a wide range so that the max matters: exp would overflow in fp32 without it
    fill_uniform(in(0, ix_), n, s.dtype, seed, -40.f, 40.f);
  }
  void poison_outputs() override {
    poison(y_);
    poison(pm_);
    poison(pl_);
  }
  void run(int set) override {
    const auto& s = spec_;
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
  if (s.chunk != kChunk) throw std::invalid_argument("softmax kernels are compiled for chunk = 4096");
  return std::make_unique<SoftmaxWorkload>(s);
}

}  // namespace flashsim::gpu

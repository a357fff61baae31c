// Device helpers shared by the kernel files: allocation, random fill, poisoning, NaN scan,
// host copies, L2 flush, input rotation.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <utility>

#include "kernels/cuda_util.cuh"
#include "kernels/reference.h"
#include "kernels/sm_clock.cuh"

namespace flashsim::gpu {

void cuda_fail(cudaError_t e, const char* what, const char* file, int line) {
  std::ostringstream o;
  o << "CUDA error " << cudaGetErrorName(e) << " (" << cudaGetErrorString(e) << ") at " << file << ":" << line
    << ": " << what;
  throw std::runtime_error(o.str());
}

DevBuf::DevBuf(std::size_t bytes) : bytes_(bytes) {
  if (bytes) CUDA_CHECK(cudaMalloc(&p_, bytes));
}
DevBuf::~DevBuf() {
  if (p_) cudaFree(p_);
}
DevBuf::DevBuf(DevBuf&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
DevBuf& DevBuf::operator=(DevBuf&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

namespace {

__device__ __forceinline__ std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

template <class T>
__global__ void fill_uniform_kernel(T* p, std::size_t n, std::uint64_t seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t h = mix64(seed ^ mix64(i + 0x9e3779b97f4a7c15ull));
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    p[i] = from_f<T>(lo + (hi - lo) * u);
  }
}

template <class T>
__global__ void count_nonfinite_kernel(const T* p, std::size_t n, unsigned long long* out) {
  unsigned long long c = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    c += isfinite(to_f(p[i])) ? 0 : 1;
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(out, c);
}

__global__ void flush_kernel(const float4* p, std::size_t n, float* sink) {
  float acc = 0.f;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) *sink = acc;  // practically never true; keeps the loads alive
}

int grid_for(std::size_t n) {
  std::size_t g = (n + 255) / 256;
  return static_cast<int>(g < 65536 ? (g ? g : 1) : 65536);
}

}  // namespace

void fill_uniform(void* p, std::size_t n, Dtype dt, std::uint64_t seed, float lo, float hi) {
  if (dt == Dtype::F32)
    fill_uniform_kernel<<<grid_for(n), 256>>>(static_cast<float*>(p), n, seed, lo, hi);
  else if (dt == Dtype::F16)
    fill_uniform_kernel<<<grid_for(n), 256>>>(static_cast<__half*>(p), n, seed, lo, hi);
  else
    fill_uniform_kernel<<<grid_for(n), 256>>>(static_cast<__nv_bfloat16*>(p), n, seed, lo, hi);
  CUDA_CHECK_LAUNCH();
}

SmClockLog::SmClockLog(unsigned capacity)
    : log_(capacity * sizeof(SmClockSample)), count_(sizeof(unsigned)), capacity_(capacity) {
  reset();
}

void SmClockLog::sample(unsigned window_us, cudaStream_t stream) {
  sm_clock_sample_kernel<<<1, 32, 0, stream>>>(log_.as<SmClockSample>(), count_.as<unsigned>(), capacity_,
                                               window_us * 1000u);
  CUDA_CHECK_LAUNCH();
}

void SmClockLog::reset() {
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemset(count_.get(), 0, sizeof(unsigned)));
  CUDA_CHECK(cudaDeviceSynchronize());
}

std::vector<double> SmClockLog::mhz() const {
  return read_sm_clock_mhz(log_.as<SmClockSample>(), count_.as<unsigned>(), capacity_);
}

void poison(const DevBuf& b) { CUDA_CHECK(cudaMemset(b.get(), 0xff, b.bytes())); }

std::uint64_t count_nonfinite(const void* p, std::size_t n, Dtype dt) {
  DevBuf out(sizeof(unsigned long long));
  CUDA_CHECK(cudaMemset(out.get(), 0, out.bytes()));
  if (dt == Dtype::F32)
    count_nonfinite_kernel<<<grid_for(n), 256>>>(static_cast<const float*>(p), n, out.as<unsigned long long>());
  else if (dt == Dtype::F16)
    count_nonfinite_kernel<<<grid_for(n), 256>>>(static_cast<const __half*>(p), n, out.as<unsigned long long>());
  else
    count_nonfinite_kernel<<<grid_for(n), 256>>>(static_cast<const __nv_bfloat16*>(p), n,
                                                 out.as<unsigned long long>());
  CUDA_CHECK_LAUNCH();
  unsigned long long h = 0;
  CUDA_CHECK(cudaMemcpy(&h, out.get(), sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

std::vector<float> to_host(const void* p, std::size_t offset, std::size_t n, Dtype dt) {
  std::vector<float> out(n);
  if (dt == Dtype::F32) {
    CUDA_CHECK(cudaMemcpy(out.data(), static_cast<const float*>(p) + offset, n * 4, cudaMemcpyDeviceToHost));
  } else {
    std::vector<std::uint16_t> raw(n);
    CUDA_CHECK(cudaMemcpy(raw.data(), static_cast<const std::uint16_t*>(p) + offset, n * 2, cudaMemcpyDeviceToHost));
    if (dt == Dtype::F16)
      for (std::size_t i = 0; i < n; ++i) {
        __half h;
        std::memcpy(&h, &raw[i], 2);
        out[i] = __half2float(h);
      }
    else
      for (std::size_t i = 0; i < n; ++i) out[i] = ref::bf16_bits_to_float(raw[i]);
  }
  return out;
}

L2Flusher::L2Flusher(std::size_t l2_bytes) : buf_((2 * l2_bytes + 15) / 16 * 16), sink_(sizeof(float)) {
  CUDA_CHECK(cudaMemset(buf_.get(), 0, buf_.bytes()));
  CUDA_CHECK(cudaDeviceSynchronize());
}

void L2Flusher::flush() {
  const std::size_t n = buf_.bytes() / 16;
  flush_kernel<<<grid_for(n), 256>>>(buf_.as<const float4>(), n, sink_.as<float>());
  CUDA_CHECK_LAUNCH();
}

int Workload::add_input(std::size_t bytes) {
  if (sets_.empty()) sets_.emplace_back();
  sets_[0].emplace_back(bytes);
  return static_cast<int>(sets_[0].size()) - 1;
}

std::size_t Workload::input_bytes() const {
  std::size_t b = 0;
  if (!sets_.empty())
    for (const auto& d : sets_[0]) b += d.bytes();
  return b;
}

void Workload::make_sets(int n) {
  while (static_cast<int>(sets_.size()) > std::max(n, 1)) sets_.pop_back();
  while (static_cast<int>(sets_.size()) < n) {
    std::vector<DevBuf> copy;
    for (const auto& d : sets_[0]) {
      copy.emplace_back(d.bytes());
      CUDA_CHECK(cudaMemcpy(copy.back().get(), d.get(), d.bytes(), cudaMemcpyDeviceToDevice));
    }
    sets_.push_back(std::move(copy));
  }
}

std::unique_ptr<Workload> make_workload(const Spec& s) {
  if (auto why = unsupported(s.schedule, s.dtype, s.op() == Op::AttnFwd || s.op() == Op::AttnBwd ? s.d : 0))
    throw std::invalid_argument(*why);
  switch (s.op()) {
    case Op::Matmul: return make_matmul(s);
    case Op::Softmax: return make_softmax(s);
    case Op::AttnFwd: return s.schedule == Schedule::AttnFP8 ? make_attention_fp8(s) : make_attention_forward(s);
    case Op::AttnBwd: return make_attention_backward(s);
  }
  throw std::logic_error("unknown op");
}

DeviceInfo device_info() {
  DeviceInfo d;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    d.why = e != cudaSuccess ? std::string(cudaGetErrorString(e)) : "no devices";
    cudaGetLastError();  // clear the sticky-free error state
    return d;
  }
  cudaDeviceProp p{};
  e = cudaGetDeviceProperties(&p, 0);
  if (e != cudaSuccess) {
    d.why = cudaGetErrorString(e);
    return d;
  }
  d.have_device = true;
  d.name = p.name;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  d.sms = p.multiProcessorCount;
  d.l2_partitions = p.major >= 8 ? 2 : 1;
  if (p.major == 9) {
    d.l2_ways = kHopperL2Ways;
    d.l2_dirty_ways = kHopperL2DirtyWays;
    d.l2_dirty_group = kHopperL2DirtyGroup;
  }
  return d;
}

}  // namespace flashsim::gpu


// How many bytes a clock the L2 gives each SM when every SM streams from it with TMA copies, the
// figure the time model's memory unit charges (docs/TIME_MODEL.md, "The GPU presets": 42.3 B/clk
// from a published full-chip number, which the large matmuls beat: at 801 TFLOP/s they need at
// least 47).
//
// One block per SM (the shared-memory request keeps a second one out); one thread keeps IN_FLIGHT
// copies of CHUNK bytes going into a shared-memory ring, each waited for on its own mbarrier
// before its slot is reused, as the fast kernels' producers do. The copies walk a buffer that the
// L2 holds (read once before the timed launch), block b taking chunks b, b + grid, ... so that all
// SMs read different lines (or, in groups, the same lines at about the same time, as the tiles of
// one wave of a matmul share A and B panels). Two copy kinds: plain bulk copies (cp.async.bulk) and 2-D tensor-map
// boxes with the 128-byte swizzle, 64 bf16 columns x CHUNK / 128 rows (the matmul's and the
// attention kernels' loads). A buffer far larger than the L2 gives the same path from HBM.
// Prints per configuration: GB/s over all SMs (bytes / event time), the SMs' mean clock over the
// loop (clock64 / event time), bytes a clock per SM at that clock and at the presets' clocks under
// a tensor load (1.476 GHz H100, 1.457 GHz H200).
// CMake builds it as probe_l2_bandwidth; by hand:
//   (links the kernels library for DevBuf and CUDA_CHECK)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_util.cuh"
#include "kernels/mma.cuh"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"
#include "sim/main_guard.h"

namespace {

namespace tma = flashsim::gpu::tma;
namespace wg = flashsim::gpu::wgmma;

constexpr int kSmemBytes = 200 * 1024;  // one block per SM

enum CopyKind { kBulk = 0, kTensor = 1 };

// Each thread 0 of a block: `iters` copies of `chunk` bytes, `in_flight` at a time. cycles[b] gets
// the block's clock64 span of the loop.
template <int KIND>
__global__ void __launch_bounds__(32, 1) stream_l2(const char* __restrict__ src, std::size_t chunks, int chunk,
                                                   int in_flight, int iters, int groups, long long* cycles,
                                                   const __grid_constant__ CUtensorMap map) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const std::uint32_t base = (flashsim::gpu::mma::smem_addr(smem) + 1023) & ~1023u;
  const std::uint32_t bars = base + static_cast<std::uint32_t>(in_flight * chunk);
  if (threadIdx.x != 0) return;
  for (int s = 0; s < in_flight; ++s) tma::mbar_init(bars + 8 * s, 1);
  tma::mbar_init_fence();
  const int rows = chunk / 128;  // tensor boxes: 64 bf16 columns (128 bytes) a row
  auto issue = [&](int it) {
    const int s = it % in_flight;
    // the blocks of a group read the same chunks in the same order (a panel several tiles share)
    const std::size_t c = (blockIdx.x % groups + static_cast<std::size_t>(it) * groups) % chunks;
    tma::mbar_arrive_expect_tx(bars + 8 * s, chunk);
    if constexpr (KIND == kBulk) tma::copy(base + s * chunk, src + c * chunk, chunk, bars + 8 * s);
    else tma::load_2d(base + s * chunk, &map, bars + 8 * s, 0, static_cast<int>(c) * rows);
  };
  const long long t0 = clock64();
  for (int it = 0; it < in_flight && it < iters; ++it) issue(it);
  for (int it = 0; it < iters; ++it) {
    const int s = it % in_flight;
    tma::mbar_wait(bars + 8 * s, (it / in_flight) & 1);
    if (it + in_flight < iters) issue(it + in_flight);
  }
  cycles[blockIdx.x] = clock64() - t0;
}

// The same copies (tensor boxes) while warpgroup 1 keeps the tensor cores busy with kGroups groups
// of eight bf16 m64n128k16 products (A in registers, B from shared memory), so that the SMs run at
// the clock a tensor load holds: whether the per-SM limit is bytes per SM clock or per second.
// The copier issues until the products are done and counts the copies that completed by then.
constexpr int kGroups = 4096;  // about 2 M clocks
constexpr int kBBytes = 128 * 128 * 2, kABytes = 64 * 128 * 2;
// SS: A from shared memory too (a matmul's products), else from registers (the attention forward's
// P V); WGS warpgroups of products.
template <bool SS, int WGS>
__global__ void __launch_bounds__(128 * (WGS + 1), 1)
    stream_l2_beside_products(std::size_t chunks, int chunk, int in_flight, int groups, long long* cycles,
                              long long* copied, float* sink, const __grid_constant__ CUtensorMap map) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const std::uint32_t base = (flashsim::gpu::mma::smem_addr(smem) + 1023) & ~1023u;
  const std::uint32_t b_tile = base + static_cast<std::uint32_t>(in_flight * chunk), a_tile = b_tile + kBBytes;
  const std::uint32_t bars = a_tile + kABytes, flag = bars + 8 * in_flight;
  if (threadIdx.x == 0) {
    for (int s = 0; s < in_flight; ++s) tma::mbar_init(bars + 8 * s, 1);
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(flag), "r"(0));
    tma::mbar_init_fence();
  }
  __syncthreads();
  if (threadIdx.x >= 128) {  // the products
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.f;
    std::uint32_t a[8][4];
#pragma unroll
    for (int kk = 0; kk < 8; ++kk)
#pragma unroll
      for (int e = 0; e < 4; ++e) a[kk][e] = 0x3c003c00u ^ static_cast<std::uint32_t>(threadIdx.x * (kk + e));
    for (int g = 0; g < kGroups; ++g) {
#pragma unroll
      for (int i = 0; i < 64; ++i) wg::reg_fence(d[i]);
      wg::fence();
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        const std::uint64_t desc_b = wg::desc128(b_tile + (kk / 4) * (128 * 128) + (kk % 4) * 32, 16, 1024);
        if constexpr (SS)
          wg::wgmma_ss<0>(wg::WgmmaN<128>{}, __nv_bfloat16{}, d,
                          wg::desc128(a_tile + (kk / 4) * (64 * 128) + (kk % 4) * 32, 16, 1024), desc_b, 1);
        else
          wg::wgmma_rs<0>(wg::WgmmaN<128>{}, __nv_bfloat16{}, d, a[kk], desc_b, 1);
      }
      wg::commit();
      wg::wait<1>();
#pragma unroll
      for (int i = 0; i < 64; ++i) wg::reg_fence(d[i]);
    }
    wg::wait<0>();
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) acc += d[i];
    sink[blockIdx.x * 128 * WGS + threadIdx.x - 128] = acc;
    if (threadIdx.x == 128) asm volatile("st.volatile.shared.b32 [%0], %1;" ::"r"(flag), "r"(1) : "memory");
    return;
  }
  if (threadIdx.x != 0) return;
  const int rows = chunk / 128;
  auto issue = [&](long long it) {
    const int s = static_cast<int>(it % in_flight);
    const std::size_t c = (blockIdx.x % groups + static_cast<std::size_t>(it) * groups) % chunks;
    tma::mbar_arrive_expect_tx(bars + 8 * s, chunk);
    tma::load_2d(base + s * chunk, &map, bars + 8 * s, 0, static_cast<int>(c) * rows);
  };
  const long long t0 = clock64();
  for (int it = 0; it < in_flight; ++it) issue(it);
  long long done = 0, t1 = t0;
  bool stop = false;
  for (long long it = 0;; ++it) {
    tma::mbar_wait(bars + 8 * (it % in_flight), (it / in_flight) & 1);
    if (!stop) {
      int v;
      asm volatile("ld.volatile.shared.b32 %0, [%1];" : "=r"(v) : "r"(flag));
      stop = v != 0;
      if (stop) t1 = clock64();
      else ++done;
    }
    if (!stop) issue(it + in_flight);
    else if (it + 1 >= done + in_flight) break;  // every issued copy has landed
  }
  cycles[blockIdx.x] = t1 - t0;
  copied[blockIdx.x] = done;
}

// The buffer as rows of 64 bf16 (128 bytes), in boxes of `chunk` bytes with the 128-byte swizzle.
CUtensorMap row_boxes(const flashsim::gpu::DevBuf& buf, int chunk) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {64, buf.bytes() / 128};
  const cuuint64_t strides[1] = {128};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(chunk / 128)};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = tma::tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, buf.get(), dims, strides, box,
                                               elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed: " + std::to_string(r));
  return map;
}

struct Config {
  CopyKind kind;
  std::size_t buffer;
  int chunk, in_flight;
  int groups = 0;  // blocks reading distinct chunks; 0: every block its own
};

void run(const Config& cfg, int sms, int iters, const std::vector<double>& preset_ghz) {
  if (cfg.in_flight * cfg.chunk + 8 * cfg.in_flight + 1024 > kSmemBytes || cfg.chunk % 128 != 0 || cfg.chunk / 128 > 256)
    throw std::invalid_argument("in_flight x chunk must fit the shared memory, chunk a multiple of 128 up to 32 KB");
  flashsim::gpu::DevBuf buf(cfg.buffer);
  CUDA_CHECK(cudaMemset(buf.get(), 1, cfg.buffer));
  flashsim::gpu::DevBuf cycles(sms * sizeof(long long));
  const std::size_t chunks = cfg.buffer / cfg.chunk;
  const int groups = cfg.groups > 0 ? cfg.groups : sms;
  const CUtensorMap map = cfg.kind == kTensor ? row_boxes(buf, cfg.chunk) : CUtensorMap{};
  auto kernel = cfg.kind == kBulk ? stream_l2<kBulk> : stream_l2<kTensor>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  auto launch = [&](int n) {
    kernel<<<sms, 32, kSmemBytes>>>(buf.as<char>(), chunks, cfg.chunk, cfg.in_flight, n, groups,
                                    cycles.as<long long>(), map);
    CUDA_CHECK_LAUNCH();
  };
  launch(static_cast<int>(std::min<std::size_t>(chunks / sms + 1, 4096)));  // the buffer into L2 (when it fits)
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> gbs, clk;
  for (int rep = 0; rep < 5; ++rep) {
    CUDA_CHECK(cudaEventRecord(a));
    launch(iters);
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    std::vector<long long> c(sms);
    CUDA_CHECK(cudaMemcpy(c.data(), cycles.get(), sms * sizeof(long long), cudaMemcpyDeviceToHost));
    double mean = 0;
    for (long long x : c) mean += static_cast<double>(x) / sms;
    gbs.push_back(static_cast<double>(sms) * iters * cfg.chunk / (ms * 1e-3) / 1e9);
    clk.push_back(mean / (ms * 1e-3) / 1e9);
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(gbs.begin(), gbs.end());
  std::sort(clk.begin(), clk.end());
  const double g = gbs[2], ghz = clk[2], per_sm = g / sms;
  std::printf("%-6s buffer %5zu MB chunk %2d KB in flight %d, %3d SMs a chunk: %7.0f GB/s (%5.1f per SM), SM clock "
              "%.3f GHz, %5.1f B/clk/SM at it",
              cfg.kind == kBulk ? "bulk" : "tensor", cfg.buffer >> 20, cfg.chunk >> 10, cfg.in_flight,
              (sms + groups - 1) / groups, g, per_sm, ghz, per_sm / ghz);
  for (double p : preset_ghz) std::printf(", %5.1f at %.3f", per_sm / p, p);
  std::printf("\n");
}

// The beside-products form of run(): per SM bytes a clock at the clock the products hold.
template <bool SS, int WGS>
void run_beside_products(int chunk, int in_flight, int sharing, int sms, const std::vector<double>& preset_ghz) {
  const std::size_t buffer = 16u << 20, chunks = buffer / chunk;
  const int groups = (sms + sharing - 1) / sharing;
  const int smem = in_flight * chunk + kBBytes + kABytes + 8 * in_flight + 16 + 1024;
  if (smem > kSmemBytes) throw std::invalid_argument("beside products: in_flight x chunk too large");
  flashsim::gpu::DevBuf buf(buffer), cycles(sms * 8), copied(sms * 8), sink(sms * 128 * WGS * 4);
  CUDA_CHECK(cudaMemset(buf.get(), 1, buffer));
  const CUtensorMap map = row_boxes(buf, chunk);
  auto kernel = stream_l2_beside_products<SS, WGS>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  std::vector<double> per_clk, ghz, gbs;
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  for (int rep = 0; rep < 4; ++rep) {  // the first one warms the L2 and the clock
    CUDA_CHECK(cudaEventRecord(a));
    kernel<<<sms, 128 * (WGS + 1), kSmemBytes>>>(chunks, chunk, in_flight, groups, cycles.as<long long>(),
                                                 copied.as<long long>(), sink.as<float>(), map);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    std::vector<long long> c(sms), n(sms);
    CUDA_CHECK(cudaMemcpy(c.data(), cycles.get(), sms * 8, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(n.data(), copied.get(), sms * 8, cudaMemcpyDeviceToHost));
    double bytes = 0, clk = 0, cyc = 0;
    for (int i = 0; i < sms; ++i) {
      bytes += static_cast<double>(n[i]) * chunk;
      cyc += static_cast<double>(c[i]) / sms;
    }
    clk = cyc / (ms * 1e-3) / 1e9;  // the products span the launch
    if (rep == 0) continue;
    per_clk.push_back(bytes / sms / cyc);
    ghz.push_back(clk);
    gbs.push_back(bytes / (ms * 1e-3) / 1e9);
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(per_clk.begin(), per_clk.end());
  std::sort(ghz.begin(), ghz.end());
  std::sort(gbs.begin(), gbs.end());
  std::printf("beside %d warpgroup%s products (%s): chunk %2d KB in flight %d, %3d SMs a chunk: %7.0f GB/s (%5.1f per SM), "
              "SM clock %.3f GHz, %5.1f B/clk/SM at it",
              WGS, WGS > 1 ? "s'" : "'s", SS ? "ss" : "rs", chunk >> 10, in_flight, (sms + groups - 1) / groups, gbs[1],
              gbs[1] / sms, ghz[1], per_clk[1]);
  for (double p : preset_ghz) std::printf(", %5.1f at %.3f", gbs[1] / sms / p, p);
  std::printf("\n");
}

int run_main() {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("probe_l2_bandwidth on %s: %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  const int sms = prop.multiProcessorCount;
  const std::vector<double> preset_ghz = {1.476, 1.457};  // the time model's H100 and H200 clocks
  const std::size_t l2_sized = 16u << 20, hbm_sized = 2048u << 20;
  for (CopyKind kind : {kBulk, kTensor})
    for (int chunk : {16 << 10, 32 << 10})
      for (int in_flight : {2, 4, 6})
        run({kind, l2_sized, chunk, in_flight}, sms, 4096, preset_ghz);
  run({kTensor, l2_sized, 16 << 10, 6}, sms / 2, 4096, preset_ghz);  // half the SMs: per-SM limit or shared?
  run({kTensor, l2_sized, 32 << 10, 4}, sms / 2, 4096, preset_ghz);
  // several SMs reading the same lines at once, as a matmul's tiles in one wave share A and B panels
  for (int sharing : {2, 4, 16, 33, 132})
    run({kTensor, l2_sized, 32 << 10, 4, (sms + sharing - 1) / sharing}, sms, 4096, preset_ghz);
  for (int sharing : {1, 33}) {
    run_beside_products<false, 1>(32 << 10, 4, sharing, sms, preset_ghz);
    run_beside_products<true, 1>(32 << 10, 4, sharing, sms, preset_ghz);
    run_beside_products<true, 2>(32 << 10, 4, sharing, sms, preset_ghz);  // a matmul's two consumers
  }
  run({kBulk, hbm_sized, 32 << 10, 4}, sms, 4096, preset_ghz);       // from HBM, for scale
  run({kTensor, hbm_sized, 32 << 10, 4}, sms, 4096, preset_ghz);
  return 0;
}

}  // namespace

int main() { return flashsim::guard_main("probe_l2_bandwidth", run_main); }

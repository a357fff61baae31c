// The d = 128 forward's consumer loop without its producer: where the cycles the time model does not
// have are lost. The kernel (attention_forward.cu version 6: two consumer warpgroups, Q in
// registers, 128-key tiles, exponentials first) takes about 2770 SM clocks a tile and consumer at
// the clock ncu locks, the model about 2070 (kernels/RESULTS.md, "The time model's cycles at a
// locked clock"). This probe runs the same loop on K and V tiles that stay in shared memory: no
// TMA, no producer warp, no mbarrier. If it still takes ~2770, the missing cycles are in the
// consumers' own loop; if it takes ~2070, they are in what it leaves out.
//
// Cases (one block of two warpgroups per SM, each a consumer of 64 query rows, bf16):
//   kernel order: S_j and P_{j-1} V_{j-1} issued together, wait for S_j, softmax, wait for P V,
//                 rescale O, pack P (the kernel's steady state)
//   turns:        the same, the consumers taking turns to issue (the kernel's PINGPONG variant)
//   FA2 order:    S_j, wait, softmax, rescale, P_j V_j, wait: no overlap inside a warpgroup
//   products only: the kernel order's products with no softmax (the tensor pipe with two issuers)
//   384 threads:  the kernel order in the kernel's block layout (a producer warpgroup that gives its
//                 registers away with setmaxnreg, consumers at 240 registers); then the same with the
//                 mask test on run-time values, as the kernel compiles it (nothing is masked); then
//                 also with K and V from two buffers in turn, as the kernel's two-stage ring
//   tile stamps:  kernel order, FA2 order and turns with two consumers, each consumer's clock at the
//                 top of 512 tiles: where consumer 1's tiles start inside consumer 0's (0: lockstep,
//                 0.5: alternation). The time model's tensor rule puts both orders in alternation (its
//                 products in issue order) or, shared between the streams, in lockstep; the probe's
//                 clocks a tile lie between the two (docs/TIME_MODEL.md). H200, 2026-12-01: kernel order
//                 0.67, FA2 order 0.82, turns 0.28, each steady to 0.01 over 512 tiles.
// and each with one consumer. The "timers" rows repeat the kernel order with clock64 read around
// each part (a few instructions more a tile), splitting a tile's clocks into issue, waiting for
// S, softmax, and waiting for P V with the rescale and the packing. The last table times
// products issued back to back on an idle pipe: how many the pipe queues before the warp waits.
// H100, 2026-11-27 (kernels/RESULTS.md): the kernel's order 2394 clocks a tile with two consumers
// (the time model 2048), 1890 with one (1482); the pipe queues six to seven products.
// CMake builds it as probe_consumer_loop; by hand:
//   nvcc -O3 -std=c++20 -I. -gencode arch=compute_90a,code=sm_90a -o probe_consumer_loop kernels/tools/probe_consumer_loop.cu
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/attention_tile.cuh"
#include "kernels/mma.cuh"
#include "kernels/tools/probe_common.cuh"
#include "kernels/tools/tile_phase.h"
#include "kernels/wgmma.cuh"
#include "sim/main_guard.h"

namespace {

namespace wg = flashsim::gpu::wgmma;
namespace tile = flashsim::gpu::tile;
namespace mma = flashsim::gpu::mma;
using T = __nv_bfloat16;

constexpr int kD = 128, kBC = 128;
constexpr int kKVBytes = kBC * kD * 2;      // one K or V tile, [keys][d] in 128-byte boxes
constexpr int kSmemBytes = 4 * kKVBytes + 1024;  // two K/V pairs: the ALT_BUFFERS case alternates them
constexpr int kTiles = 2048;                // KV tiles a consumer walks a launch (about 6 M clocks)
constexpr double kTileFlops = 2.0 * 2 * 64 * kBC * kD;  // S and P V of one consumer's 64 rows
enum Mode { kKernelOrder = 0, kTurns = 1, kFa2Order = 2, kProductsOnly = 3 };
enum Part { kIssue = 0, kWaitS = 1, kSoftmax = 2, kWaitPvRescalePack = 3, kParts = 4 };
// STAMPS: each consumer's clock at the top of tiles kStampFrom.. (after the start's transient), stored
// after the per-consumer slots of `out`: out[slots + (block * 2 + consumer) * kStampTiles + i].
constexpr int kStampFrom = 256, kStampTiles = 512;

__device__ __forceinline__ void named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ void issue_s(float (&s)[kBC / 2], const std::uint32_t (&qa)[kD / 16][4], std::uint32_t ks) {
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk)
    wg::wgmma_rs<0>(wg::WgmmaN<kBC>{}, T{}, s, qa[kk], wg::desc128(ks + (kk / 4) * (kBC * 128) + (kk % 4) * 32, 16, 1024),
                    kk > 0);
}
__device__ __forceinline__ void issue_pv(float (&o)[kD / 2], const std::uint32_t (&pa)[kBC / 16][4], std::uint32_t vs) {
#pragma unroll
  for (int kk = 0; kk < kBC / 16; ++kk)
    wg::wgmma_rs<1>(wg::WgmmaN<kD>{}, T{}, o, pa[kk], wg::desc128(vs + kk * 16 * 128, kBC * 128, 1024), 1);
}
__device__ __forceinline__ void pack(const float (&s)[kBC / 2], std::uint32_t (&pa)[kBC / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < kBC / 16; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) pa[kk][e] = mma::pack2<T>(s[8 * kk + 2 * e], s[8 * kk + 2 * e + 1]);
}

// out[(block * 2 + consumer) * (2 + kParts) + {0: tiles, 1: clocks, 2..: clocks a part}]
// PRODUCER_WG: the block is laid out as the kernel's (384 threads: warpgroup 0 gives its registers
// away with setmaxnreg and leaves, the consumers are warpgroups 1 and 2 at 240 registers each)
// instead of two warpgroups that may use 255 registers a thread.
// RUNTIME_MASK: the mask test on values the compiler cannot fold (the kernel's: key tile, row, n and
// the causal flag at run time; here nothing is ever masked), instead of constants it removes.
// ALT_BUFFERS: K_j and V_j from one of two buffer pairs by the parity of j, as the kernel's two-stage
// ring has them (descriptors from a run-time address each tile), instead of one pair for every tile.
template <int MODE, bool TIMERS, bool PRODUCER_WG = false, bool RUNTIME_MASK = false, bool ALT_BUFFERS = false,
          bool STAMPS = false>
__global__ void __launch_bounds__(PRODUCER_WG ? 384 : 256, 1) consumer_loop_kernel(int consumers, long long* out, float* sink) {
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t ks = (mma::smem_addr(smem_raw) + 1023) & ~1023u, vs = ks + kKVBytes;
  for (int i = threadIdx.x; i < 4 * kKVBytes / 4; i += blockDim.x)  // bf16 pairs near 0.5, varying
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(ks + 4 * i), "r"(0x3f003f00u + (i % 61) * 0x00010001u));
  wg::fence_proxy_async();
  __syncthreads();
  if constexpr (PRODUCER_WG) {
    if (threadIdx.x < 128) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
      return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
  }
  const int c = threadIdx.x / 128 - (PRODUCER_WG ? 1 : 0), lane = threadIdx.x % 32;
  if (c >= consumers) return;
  const bool turns = MODE == kTurns && consumers == 2;
  std::uint32_t qa[kD / 16][4];
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) qa[kk][e] = 0x3e803e80u + ((threadIdx.x * 7 + kk * 4 + e) % 29) * 0x00010001u;
  float s[kBC / 2], o[kD / 2];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f}, alpha[2] = {1.f, 1.f};
  std::uint32_t pa[kBC / 16][4];
  long long part[kParts] = {0, 0, 0, 0};
  long long mark = 0;
  auto lap = [&](int p) {
    if constexpr (TIMERS) {
      const long long now = clock64();
      part[p] += now - mark;
      mark = now;
    }
  };
  // RUNTIME_MASK: n beyond every key and no causal mask, from the launch's argument
  const int mask_n = RUNTIME_MASK ? consumers << 28 : 1 << 30;
  const bool mask_causal = RUNTIME_MASK && consumers > 8;
  int mask_kv0 = 0;
  auto softmax = [&] {
    if constexpr (MODE != kProductsOnly) {
      if constexpr (RUNTIME_MASK) tile::mask_scores<kBC>(s, mask_kv0 += kBC, (threadIdx.x % 128) / 32 * 16 + lane / 4 + 4096, mask_n, mask_causal);
      else tile::mask_scores<kBC>(s, 0, 1 << 30, 1 << 30, false);
      tile::online_softmax<kBC, tile::kExpsFirst>(s, row_max, row_sum, alpha, 0.127f);
    }
  };
  auto rescale_and_pack = [&] {
    if constexpr (MODE != kProductsOnly) {
      tile::rescale_rows(o, alpha);
      pack(s, pa);
    } else {  // S read once, so that ptxas keeps its products (it drops products nobody reads)
#pragma unroll
      for (int kk = 0; kk < kBC / 16; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) pa[kk][e] = qa[kk % (kD / 16)][e] ^ (__float_as_uint(s[8 * kk + e]) & 1u);
    }
  };
  if (turns && c == 1) named_bar_arrive(1, 256);  // consumer 0 goes first
  long long* const stamp_row = out + static_cast<std::size_t>(gridDim.x) * 2 * (2 + kParts) +
                               (static_cast<std::size_t>(blockIdx.x) * 2 + c) * kStampTiles;
  auto stamp = [&](int j) {
    if constexpr (STAMPS)
      if (threadIdx.x % 128 == 0 && j >= kStampFrom && j < kStampFrom + kStampTiles) stamp_row[j - kStampFrom] = clock64();
  };

  const long long t0 = clock64();
  mark = t0;
  if constexpr (MODE == kFa2Order) {
    for (int j = 0; j < kTiles; ++j) {
      stamp(j);
      wg::fence();
      issue_s(s, qa, ks);
      wg::commit();
      lap(kIssue);
      wg::wait<0>();
      tile::pin(s);
      lap(kWaitS);
      softmax();
      lap(kSoftmax);
      rescale_and_pack();
      tile::pin(o);
      tile::pin(pa);
      wg::fence();
      issue_pv(o, pa, vs);
      wg::commit();
      wg::wait<0>();
      tile::pin(o);
      lap(kWaitPvRescalePack);
    }
  } else {
    wg::fence();
    issue_s(s, qa, ks);
    wg::commit();
    wg::wait<0>();
    tile::pin(s);
    softmax();
    rescale_and_pack();
    for (int j = 1; j < kTiles; ++j) {
      stamp(j);
      tile::pin(o);
      tile::pin(pa);
      if (turns) named_bar_sync(1 + c, 256);
      // ALT_BUFFERS: pair j % 2 holds K_j, pair (j - 1) % 2 V_{j-1} (a pair is K then V, 2 kKVBytes)
      const std::uint32_t kj = ALT_BUFFERS ? ks + (j & 1) * 2 * kKVBytes : ks;
      const std::uint32_t vj = ALT_BUFFERS ? vs + ((j - 1) & 1) * 2 * kKVBytes : vs;
      wg::fence();
      issue_s(s, qa, kj);
      wg::commit();
      issue_pv(o, pa, vj);
      wg::commit();
      if (turns) named_bar_arrive(1 + (c + 1) % 2, 256);
      lap(kIssue);
      wg::wait<1>();  // S_j done; P V may still run
      tile::pin(s);
      lap(kWaitS);
      softmax();
      lap(kSoftmax);
      wg::wait<0>();
      tile::pin(o);
      tile::pin(pa);
      rescale_and_pack();
      lap(kWaitPvRescalePack);
    }
    wg::fence();
    issue_pv(o, pa, vs);
    wg::commit();
    wg::wait<0>();
    tile::pin(o);
  }
  const long long took = clock64() - t0;
  if (turns && c == 0) named_bar_sync(1, 256);  // the other consumer's last pass
  float acc = row_sum[0] + row_sum[1];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) acc += o[i];
  sink[blockIdx.x * 256 + c * 128 + threadIdx.x % 128] = acc;
  if (lane == 0 && threadIdx.x % 128 == 0) {
    long long* r = out + (blockIdx.x * 2 + c) * (2 + kParts);
    r[0] = kTiles;
    r[1] = took;
    for (int p = 0; p < kParts; ++p) r[2 + p] = part[p];
  }
}

// How many products the tensor pipe takes before the issuing warp stalls: one warpgroup issues
// kQueueProbe m64n128k16 products back to back on an idle pipe and reads clock64 after each; the
// stamps step by the products' own 64 clocks once the queue is full. stamps[block * kQueueProbe + i]
constexpr int kQueueProbe = 24;
__global__ void __launch_bounds__(128, 1) issue_queue_kernel(long long* stamps, float* sink) {
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t ks = (mma::smem_addr(smem_raw) + 1023) & ~1023u;
  for (int i = threadIdx.x; i < kKVBytes / 4; i += blockDim.x)
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(ks + 4 * i), "r"(0x3f003f00u + (i % 61) * 0x00010001u));
  wg::fence_proxy_async();
  __syncthreads();
  std::uint32_t qa[kD / 16][4];
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) qa[kk][e] = 0x3e803e80u + ((threadIdx.x * 7 + kk * 4 + e) % 29) * 0x00010001u;
  float s[kBC / 2];
#pragma unroll
  for (int i = 0; i < kBC / 2; ++i) s[i] = 0.f;
  long long t[kQueueProbe + 1];
  wg::fence();
  t[0] = clock64();
#pragma unroll
  for (int i = 0; i < kQueueProbe; ++i) {
    wg::wgmma_rs<0>(wg::WgmmaN<kBC>{}, T{}, s, qa[i % (kD / 16)],
                    wg::desc128(ks + ((i % 8) / 4) * (kBC * 128) + (i % 4) * 32, 16, 1024), 1);
    t[i + 1] = clock64();
  }
  wg::commit();
  wg::wait<0>();
  tile::pin(s);
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < kBC / 2; ++i) acc += s[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x == 0)
    for (int i = 0; i < kQueueProbe; ++i) stamps[blockIdx.x * kQueueProbe + i] = t[i + 1] - t[0];
}

int check(cudaError_t e, const char* what) { return flashsim::gpu::probe::check(e, "probe_consumer_loop", what); }

using Kernel = void (*)(int, long long*, float*);
struct Case {
  Kernel kernel;
  int consumers;
  bool timers;
  const char* name;
  int threads = 256;
  bool stamps = false;
};

// consumer 1's tile starts inside consumer 0's tiles over the stamped tiles of every SM: quartiles
std::array<double, 3> phase_quartiles(const std::vector<long long>& host, std::size_t slots, int sms) {
  std::vector<double> frac;
  for (int b = 0; b < sms; ++b) {
    const long long* t0 = &host[slots + static_cast<std::size_t>(b) * 2 * kStampTiles];
    flashsim::gpu::probe::add_tile_phases(t0, t0 + kStampTiles, kStampTiles, frac);
  }
  return flashsim::gpu::probe::quartiles(std::move(frac));
}

int run_main() {
  flashsim::gpu::probe::Device dev;
  if (!flashsim::gpu::probe::device_zero("probe_consumer_loop", dev)) return 1;
  const int sms = dev.sms;
  const cudaDeviceProp& prop = dev.prop;
  float* sink = nullptr;
  long long* out = nullptr;
  const std::size_t slots = static_cast<std::size_t>(sms) * 2 * (2 + kParts);
  const std::size_t stamp_slots = static_cast<std::size_t>(sms) * 2 * kStampTiles;
  if (check(cudaMalloc(&sink, static_cast<size_t>(sms) * 256 * sizeof(float)), "cudaMalloc") ||
      check(cudaMalloc(&out, std::max<std::size_t>(slots + stamp_slots, static_cast<std::size_t>(sms) * kQueueProbe) *
                                 sizeof(long long)),
            "cudaMalloc"))
    return 1;
  const Case cases[] = {
      {consumer_loop_kernel<kKernelOrder, false>, 1, false, "kernel order, one consumer"},
      {consumer_loop_kernel<kKernelOrder, false>, 2, false, "kernel order, two consumers"},
      {consumer_loop_kernel<kTurns, false>, 2, false, "turns, two consumers"},
      {consumer_loop_kernel<kFa2Order, false>, 1, false, "FA2 order, one consumer"},
      {consumer_loop_kernel<kFa2Order, false>, 2, false, "FA2 order, two consumers"},
      {consumer_loop_kernel<kProductsOnly, false>, 1, false, "products only, one consumer"},
      {consumer_loop_kernel<kProductsOnly, false>, 2, false, "products only, two consumers"},
      {consumer_loop_kernel<kKernelOrder, true>, 1, true, "kernel order + timers, one consumer"},
      {consumer_loop_kernel<kKernelOrder, true>, 2, true, "kernel order + timers, two consumers"},
      {consumer_loop_kernel<kFa2Order, true>, 2, true, "FA2 order + timers, two consumers"},
      {consumer_loop_kernel<kKernelOrder, false, true>, 2, false, "kernel order, two consumers, 384 threads", 384},
      {consumer_loop_kernel<kKernelOrder, true, true>, 2, true, "the same + timers", 384},
      {consumer_loop_kernel<kKernelOrder, false, true, true>, 2, false, "the same, the mask test at run time", 384},
      {consumer_loop_kernel<kKernelOrder, true, true, true>, 2, true, "the same + timers", 384},
      {consumer_loop_kernel<kKernelOrder, false, true, true, true>, 2, false, "the same, two K/V buffers in turn", 384},
      {consumer_loop_kernel<kKernelOrder, false, false, false, false, true>, 2, false, "kernel order, two, tile stamps", 256, true},
      {consumer_loop_kernel<kFa2Order, false, false, false, false, true>, 2, false, "FA2 order, two, tile stamps", 256, true},
      {consumer_loop_kernel<kTurns, false, false, false, false, true>, 2, false, "turns, two, tile stamps", 256, true},
  };
  for (const Case& c : cases)
    if (check(cudaFuncSetAttribute(c.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes), "smem")) return 1;
  std::printf("device: %s, %d SMs; %d KV tiles of 128 keys a consumer, d = 128, bf16; means over the SMs\n", prop.name,
              sms, kTiles);
  std::printf("%-40s %12s %12s %8s %8s %8s %12s\n", "case", "clk/tile", "FLOP/clk/SM", "issue", "wait S", "softmax",
              "wait PV+pack");
  std::vector<long long> host(slots + stamp_slots);
  std::vector<std::pair<const char*, std::array<double, 3>>> phases;
  for (const Case& c : cases) {
    for (int rep = 0; rep < 2; ++rep) c.kernel<<<sms, c.threads, kSmemBytes>>>(c.consumers, out, sink);  // the second is read
    if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "kernel")) return 1;
    if (check(cudaMemcpy(host.data(), out, host.size() * sizeof(long long), cudaMemcpyDeviceToHost), "cudaMemcpy")) return 1;
    if (c.stamps) phases.emplace_back(c.name, phase_quartiles(host, slots, sms));
    double clk_per_tile = 0, flops_per_clk = 0, parts[kParts] = {0, 0, 0, 0};
    for (int b = 0; b < sms; ++b) {
      double slowest = 0;
      for (int k = 0; k < c.consumers; ++k) {
        const long long* r = &host[(static_cast<std::size_t>(b) * 2 + k) * (2 + kParts)];
        const double tiles = static_cast<double>(r[0]), clocks = static_cast<double>(r[1]);
        clk_per_tile += clocks / tiles / c.consumers;
        slowest = std::max(slowest, clocks);
        for (int p = 0; p < kParts; ++p) parts[p] += static_cast<double>(r[2 + p]) / tiles / c.consumers;
      }
      flops_per_clk += c.consumers * kTiles * kTileFlops / slowest;
    }
    auto part = [&](int p) {
      static char buf[kParts][16];
      if (c.timers) std::snprintf(buf[p], 16, "%.0f", parts[p] / sms);
      else std::snprintf(buf[p], 16, "-");
      return buf[p];
    };
    std::printf("%-40s %12.1f %12.1f %8s %8s %8s %12s\n", c.name, clk_per_tile / sms, flops_per_clk / sms, part(kIssue),
                part(kWaitS), part(kSoftmax), part(kWaitPvRescalePack));
  }
  // lockstep (0) or alternation (0.5): what the time model's tensor rule decides (docs/TIME_MODEL.md)
  std::printf("where consumer 1's tile starts in consumer 0's (0: lockstep, 0.5: alternation), tiles %d-%d, all SMs\n",
              kStampFrom, kStampFrom + kStampTiles - 1);
  for (const auto& [name, q] : phases)
    std::printf("  %-38s median %.3f, quartiles %.3f-%.3f\n", name, q[1], q[0], q[2]);
  // the issue queue: mean over the SMs of the clocks from the first issue to after the i-th
  if (check(cudaFuncSetAttribute(issue_queue_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes), "smem"))
    return 1;
  std::vector<long long> stamps(static_cast<std::size_t>(sms) * kQueueProbe);
  for (int rep = 0; rep < 2; ++rep) issue_queue_kernel<<<sms, 128, kSmemBytes>>>(out, sink);
  if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "kernel") ||
      check(cudaMemcpy(stamps.data(), out, stamps.size() * sizeof(long long), cudaMemcpyDeviceToHost), "cudaMemcpy"))
    return 1;
  std::printf("issue queue: clocks after the i-th of %d m64n128k16 products issued back to back on an idle pipe "
              "(64 clocks of work each)\n", kQueueProbe);
  for (int i = 0; i < kQueueProbe; ++i) {
    double mean = 0;
    for (int b = 0; b < sms; ++b) mean += static_cast<double>(stamps[static_cast<std::size_t>(b) * kQueueProbe + i]);
    std::printf("  product %2d issued after %8.1f clk\n", i + 1, mean / sms);
  }
  return 0;
}

}  // namespace

int main() { return flashsim::guard_main("probe_consumer_loop", run_main); }

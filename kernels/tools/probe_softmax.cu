// How long one consumer warpgroup takes for the forward's online softmax of a 64 x 128 score tile
// (kernels/attention_tile.cuh online_softmax, both instruction orders), alone, beside a second
// softmax and beside the tensor cores; and whether the special-function unit keeps its rate while
// products run. These are the per-SM figures under the time model's softmax (docs/TIME_MODEL.md):
// the model charges a softmax its exponentials at the unit's rate, the kernels' traces say one
// takes twice that and more (kernels/RESULTS.md, "The FP8 forward").
//
// One block per SM (a large shared-memory request keeps a second one out). Warpgroup 0 issues
// bf16 m64n128k16 products, eight a group as S = Q K^T at d = 128, with A from shared memory (ss)
// or registers (rs, as the forward's S and P V), at most two groups in flight, a fixed number of
// groups (every warp of a warpgroup must issue the same products: a loop on each warp's own clock
// would not do). Warpgroups 1 and 2 run the softmax on a register tile, or 16 independent exp2
// chains a thread (f32, or f16x2: two exponentials an instruction), until the products are done
// (or a fixed count without products), and count what they finished in their own SM clocks
// (clock64). H100 and H200, 2026-11-27: 4094 FLOP/clk/SM; a softmax 744 clocks alone, 1206 beside
// products; exp2 13.5 (f16x2: 13.9) a clock per SM with one warpgroup, 9.0 (9.5) beside products.
// The "waited for" cases issue each group of eight products (512 clocks of work at the per-clock
// peak) only once the one before is done: their clocks a group minus the pipelined cases' give the
// round trip the time model's tensor latency stands for; kernels/tools/tensor_round_trip.py reads
// the difference off this program's output. H100, 2026-11-27: 569.1 (A in registers) and 576.3
// (A in shared memory) against 512.2 pipelined, a round trip of 57-64 clocks (the preset's 60).
// CMake builds it as probe_softmax; by hand:
//   nvcc -O3 -std=c++20 -I. -gencode arch=compute_90a,code=sm_90a -o probe_softmax kernels/tools/probe_softmax.cu
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/attention_tile.cuh"
#include "kernels/mma.cuh"
#include "kernels/tools/probe_common.cuh"
#include "kernels/wgmma.cuh"
#include "sim/main_guard.h"

namespace {

namespace wg = flashsim::gpu::wgmma;
namespace tile = flashsim::gpu::tile;

// ...Serial: each group is waited for (wgmma wait 0) before the next is issued, as a consumer waits
// for its S before the softmax: clocks a group minus the pipelined ones are the round trip
enum Products { kNoProducts = 0, kProductsSS = 1, kProductsRS = 2, kProductsSSSerial = 3, kProductsRSSerial = 4 };
__host__ __device__ constexpr bool a_in_smem(int products) { return products == kProductsSS || products == kProductsSSSerial; }
__host__ __device__ constexpr bool serial(int products) { return products == kProductsSSSerial || products == kProductsRSSerial; }
enum Work { kIdle = 0, kSoftmaxExpThenAdd = 1, kSoftmaxExpsFirst = 2, kExp2Chains = 3, kExp2HalfChains = 4 };

constexpr int kBC = 128;                        // keys a score tile
constexpr int kABytes = 64 * 128 * 2;           // A: 64 x 128 bf16, two 64-row boxes of 128 bytes
constexpr int kBBytes = kBC * 128 * 2;          // B: 128 keys x 128 bf16, two 128-row boxes
constexpr int kSmemBytes = 160 * 1024;          // one block per SM
constexpr long long kGroupFlops = 8LL * 2 * 64 * kBC * 16;
constexpr int kGroups = 4096;       // product groups a launch (about 2.5 M clocks)
constexpr int kTilesAlone = 2048;   // softmax tiles a warpgroup without products
constexpr int kRoundsAlone = 8192;  // exp2 rounds (16 a thread each) without products

__device__ __forceinline__ void pin(float& x) { asm volatile("" : "+f"(x)); }

__device__ __forceinline__ bool products_done(std::uint32_t flag) {
  int v;
  asm volatile("ld.volatile.shared.b32 %0, [%1];" : "=r"(v) : "r"(flag));
  return v != 0;
}

template <int PRODUCTS>
__device__ long long run_products(std::uint32_t base, float* sink) {
  float d[kBC / 2];
#pragma unroll
  for (int i = 0; i < kBC / 2; ++i) d[i] = 0.f;
  std::uint32_t a[8][4];
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[kk][e] = 0x3c003c00u ^ static_cast<std::uint32_t>(threadIdx.x * (kk + e));
  const std::uint32_t bbase = base + kABytes;
  long long groups = 0;
  for (int g = 0; g < kGroups; ++g) {
    tile::pin(d);
    wg::fence();
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      const std::uint64_t desc_b = wg::desc128(bbase + (kk / 4) * (kBC * 128) + (kk % 4) * 32, 16, 1024);
      if constexpr (a_in_smem(PRODUCTS))
        wg::wgmma_ss<0>(wg::WgmmaN<kBC>{}, __nv_bfloat16{}, d, wg::desc128(base + (kk / 4) * (64 * 128) + (kk % 4) * 32, 16, 1024),
                        desc_b, 1);
      else
        wg::wgmma_rs<0>(wg::WgmmaN<kBC>{}, __nv_bfloat16{}, d, a[kk], desc_b, 1);
    }
    wg::commit();
    if constexpr (serial(PRODUCTS)) wg::wait<0>();
    else wg::wait<1>();
    tile::pin(d);
    ++groups;
  }
  wg::wait<0>();
  tile::pin(d);
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < kBC / 2; ++i) acc += d[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  return groups;
}

// until the products are done (flag), or kTilesAlone tiles without products
template <int WORK, bool WITH_PRODUCTS>
__device__ long long run_softmax(std::uint32_t flag, float* sink) {
  float s0[kBC / 2], s[kBC / 2];
#pragma unroll
  for (int i = 0; i < kBC / 2; ++i) s0[i] = static_cast<float>((threadIdx.x * 7 + i * 13) % 61) * 0.25f - 7.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f}, alpha[2];
  long long tiles = 0;
  while (WITH_PRODUCTS ? !products_done(flag) : tiles < kTilesAlone) {
#pragma unroll
    for (int i = 0; i < kBC / 2; ++i) {
      pin(s0[i]);  // a fresh tile each time: nothing of the softmax can leave the loop
      s[i] = s0[i];
    }
    tile::online_softmax<kBC, WORK == kSoftmaxExpsFirst ? tile::kExpsFirst : tile::kExpThenAdd>(s, row_max, row_sum,
                                                                                              alpha, 0.127f);
    ++tiles;
  }
  float acc = row_sum[0] + row_sum[1] + alpha[0] + alpha[1];
#pragma unroll
  for (int i = 0; i < kBC / 2; ++i) acc += s[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  return tiles;
}

// 16 chains of ex2.approx.f16x2 (two exponentials an instruction) and a packed subtract
template <bool WITH_PRODUCTS>
__device__ long long run_exp2_half_chains(std::uint32_t flag, float* sink) {
  std::uint32_t x[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) x[i] = 0xbc00bc00u ^ static_cast<std::uint32_t>(threadIdx.x + i);  // about -1
  const std::uint32_t one = 0x3c003c00u;
  long long rounds = 0;
  while (WITH_PRODUCTS ? !products_done(flag) : rounds < kRoundsAlone) {
#pragma unroll 1
    for (int r = 0; r < 32; ++r)
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        asm volatile("ex2.approx.f16x2 %0, %0;" : "+r"(x[i]));
        asm volatile("sub.rn.f16x2 %0, %0, %1;" : "+r"(x[i]) : "r"(one));
      }
    rounds += 32;
  }
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < 16; ++i) acc += __uint_as_float(x[i]);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  return rounds;
}

template <bool WITH_PRODUCTS>
__device__ long long run_exp2_chains(std::uint32_t flag, float* sink) {
  float x[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) x[i] = -0.001f * static_cast<float>(threadIdx.x + i);
  long long rounds = 0;
  while (WITH_PRODUCTS ? !products_done(flag) : rounds < kRoundsAlone) {
#pragma unroll 1
    for (int r = 0; r < 32; ++r)
#pragma unroll
      for (int i = 0; i < 16; ++i) x[i] = tile::fast_exp2(x[i]) - 1.0f;
    rounds += 32;
  }
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < 16; ++i) acc += x[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  return rounds;
}

// counts[(block * 3 + warpgroup) * 2 + {0, 1}] = {work items finished, clocks taken}
template <int PRODUCTS, int WORK>
__global__ void __launch_bounds__(384, 1) probe_kernel(int workers, long long* counts, float* sink) {
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (flashsim::gpu::mma::smem_addr(smem_raw) + 1023) & ~1023u;
  const std::uint32_t flag = base + kABytes + kBBytes;
  for (int i = threadIdx.x; i < (kABytes + kBBytes) / 4; i += blockDim.x)
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(base + 4 * i), "r"(0x3c003c00u));
  if (threadIdx.x == 0) asm volatile("st.shared.b32 [%0], %1;" ::"r"(flag), "r"(0));
  wg::fence_proxy_async();
  __syncthreads();
  const int group = threadIdx.x / 128;
  const long long t0 = clock64();
  long long done = 0;
  constexpr bool kWithProducts = PRODUCTS != kNoProducts;
  if (group == 0) {
    if constexpr (kWithProducts) {
      done = run_products<PRODUCTS>(base, sink);
      if (threadIdx.x == 0) asm volatile("st.volatile.shared.b32 [%0], %1;" ::"r"(flag), "r"(1));
    }
  } else if (group <= workers) {
    if constexpr (WORK == kSoftmaxExpThenAdd || WORK == kSoftmaxExpsFirst)
      done = run_softmax<WORK, kWithProducts>(flag, sink);
    else if constexpr (WORK == kExp2Chains)
      done = run_exp2_chains<kWithProducts>(flag, sink);
    else if constexpr (WORK == kExp2HalfChains)
      done = run_exp2_half_chains<kWithProducts>(flag, sink);
  }
  const long long took = clock64() - t0;
  if (threadIdx.x % 128 == 0) {
    counts[(blockIdx.x * 3 + group) * 2] = done;
    counts[(blockIdx.x * 3 + group) * 2 + 1] = took;
  }
}

int check(cudaError_t e, const char* what) { return flashsim::gpu::probe::check(e, "probe_softmax", what); }

struct Case {
  int products, work, workers;
  const char* name;
};

using Kernel = void (*)(int, long long*, float*);
template <int P, int W>
Kernel kernel_of() {
  return probe_kernel<P, W>;
}
Kernel pick(int products, int work) {
  const Kernel table[5][5] = {
      {kernel_of<0, 0>(), kernel_of<0, 1>(), kernel_of<0, 2>(), kernel_of<0, 3>(), kernel_of<0, 4>()},
      {kernel_of<1, 0>(), kernel_of<1, 1>(), kernel_of<1, 2>(), kernel_of<1, 3>(), kernel_of<1, 4>()},
      {kernel_of<2, 0>(), kernel_of<2, 1>(), kernel_of<2, 2>(), kernel_of<2, 3>(), kernel_of<2, 4>()},
      {kernel_of<3, 0>(), nullptr, nullptr, nullptr, nullptr},
      {kernel_of<4, 0>(), kernel_of<4, 1>(), nullptr, nullptr, nullptr},
  };
  return table[products][work];
}

int run_main() {
  flashsim::gpu::probe::Device dev;
  if (!flashsim::gpu::probe::device_zero("probe_softmax", dev)) return 1;
  const int sms = dev.sms;
  const cudaDeviceProp& prop = dev.prop;
  float* sink = nullptr;
  long long* counts = nullptr;
  if (check(cudaMalloc(&sink, static_cast<size_t>(sms) * 384 * sizeof(float)), "cudaMalloc") ||
      check(cudaMalloc(&counts, static_cast<size_t>(sms) * 6 * sizeof(long long)), "cudaMalloc"))
    return 1;
  for (int p = 0; p < 5; ++p)
    for (int w = 0; w < 5; ++w)
      if (pick(p, w) &&
          check(cudaFuncSetAttribute(pick(p, w), cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes), "smem"))
        return 1;
  const Case cases[] = {
      {kProductsSS, kIdle, 0, "products (A in smem) alone"},
      {kProductsRS, kIdle, 0, "products (A in registers) alone"},
      {kNoProducts, kExp2Chains, 1, "exp2 chains, one warpgroup"},
      {kNoProducts, kSoftmaxExpThenAdd, 1, "softmax exp-then-add, one warpgroup"},
      {kNoProducts, kSoftmaxExpThenAdd, 2, "softmax exp-then-add, two warpgroups"},
      {kNoProducts, kSoftmaxExpsFirst, 1, "softmax exps-first, one warpgroup"},
      {kNoProducts, kSoftmaxExpsFirst, 2, "softmax exps-first, two warpgroups"},
      {kProductsSS, kExp2Chains, 1, "products (smem) + exp2 chains"},
      {kProductsRS, kExp2Chains, 1, "products (regs) + exp2 chains"},
      {kNoProducts, kExp2Chains, 2, "exp2 chains, two warpgroups"},
      {kNoProducts, kExp2HalfChains, 1, "exp2 f16x2 chains, one warpgroup"},
      {kNoProducts, kExp2HalfChains, 2, "exp2 f16x2 chains, two warpgroups"},
      {kProductsRS, kExp2HalfChains, 1, "products (regs) + exp2 f16x2 chains"},
      {kProductsSS, kSoftmaxExpThenAdd, 1, "products (smem) + softmax exp-then-add"},
      {kProductsRS, kSoftmaxExpThenAdd, 1, "products (regs) + softmax exp-then-add"},
      {kProductsRS, kSoftmaxExpThenAdd, 2, "products (regs) + 2 softmax exp-then-add"},
      {kProductsSS, kSoftmaxExpsFirst, 1, "products (smem) + softmax exps-first"},
      {kProductsRS, kSoftmaxExpsFirst, 1, "products (regs) + softmax exps-first"},
      {kProductsRS, kSoftmaxExpsFirst, 2, "products (regs) + 2 softmax exps-first"},
      {kProductsSSSerial, kIdle, 0, "products (smem), each group waited for"},
      {kProductsRSSerial, kIdle, 0, "products (regs), each group waited for"},
      {kProductsRSSerial, kSoftmaxExpThenAdd, 1, "products (regs) waited for + softmax"},
  };
  std::printf("device: %s, %d SMs; %d product groups a launch, means over the SMs\n", prop.name, sms, kGroups);
  std::printf("%-44s %16s %14s %22s %16s\n", "case", "FLOP/clk/SM", "clk/group", "softmax clk/tile/wg", "exp2/clk/SM");
  std::vector<long long> host(static_cast<size_t>(sms) * 6);
  for (const Case& c : cases) {
    Kernel k = pick(c.products, c.work);
    for (int rep = 0; rep < 2; ++rep) k<<<sms, 384, kSmemBytes>>>(c.workers, counts, sink);  // the second is read
    if (check(cudaDeviceSynchronize(), "kernel")) return 1;
    if (check(cudaMemcpy(host.data(), counts, host.size() * sizeof(long long), cudaMemcpyDeviceToHost), "cudaMemcpy"))
      return 1;
    double flops_per_clk = 0, group_clk = 0, softmax_clk = 0, exp2_per_clk = 0;
    for (int b = 0; b < sms; ++b) {
      const long long* g = &host[static_cast<size_t>(b) * 6];
      if (c.products != kNoProducts) {
        flops_per_clk += static_cast<double>(g[0]) * kGroupFlops / static_cast<double>(g[1]);
        group_clk += static_cast<double>(g[1]) / static_cast<double>(g[0]);
      }
      for (int w = 1; w <= c.workers; ++w) {
        const double items = static_cast<double>(g[2 * w]), clocks = static_cast<double>(g[2 * w + 1]);
        if (c.work == kExp2Chains) exp2_per_clk += items * 16 * 128 / clocks;
        else if (c.work == kExp2HalfChains) exp2_per_clk += items * 16 * 2 * 128 / clocks;  // two a lane
        else if (c.work != kIdle) softmax_clk += clocks / items / c.workers;
      }
    }
    auto cell = [](double v, bool on) {
      static char buf[8][32];
      static int k = 0;
      char* b = buf[k++ % 8];
      if (on) std::snprintf(b, 32, "%.1f", v);
      else std::snprintf(b, 32, "-");
      return b;
    };
    std::printf("%-44s %16s %14s %22s %16s\n", c.name, cell(flops_per_clk / sms, c.products != kNoProducts),
                cell(group_clk / sms, c.products != kNoProducts),
                cell(softmax_clk / sms, c.work == kSoftmaxExpThenAdd || c.work == kSoftmaxExpsFirst),
                cell(exp2_per_clk / sms, c.work == kExp2Chains || c.work == kExp2HalfChains));
  }
  return 0;
}

}  // namespace

int main() { return flashsim::guard_main("probe_softmax", run_main); }

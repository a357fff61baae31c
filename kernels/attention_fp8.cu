// FP8 (e4m3) attention forward on Hopper: kernels/fp8.h says what it computes. Two parts:
//
// 1. The quantize pass (quantize_rows_kernel, quantize_v_kernel, amax_kernel): one warp a row, a
//    lane holding d / 32 entries; the optional random Hadamard transform of Q and K is a
//    Walsh-Hadamard butterfly, in registers for the lane's own entries and through shuffles beyond.
//    V is written transposed (8-bit wgmma operands must be K-major, and in P V the keys are k), its
//    keys permuted within groups of 32 (fp8_ref.h vt_key_of_position), so that a thread's S
//    accumulators, converted to e4m3 in place, already are its A fragment of P V: no shuffles, no
//    trip through shared memory.
// 2. The forward: version 6's warp-specialized FA2 loop (attention_forward.cu: a producer warp
//    issues every TMA load into a ring of K and V^T tiles, two consumer warpgroups own 64 rows of a
//    128-row Q tile each, S_j and P_{j-1} V_{j-1} in flight together, persistent blocks; causal
//    tiles in pairs of equal work) on m64nNk32 e4m3 products. The scales enter where they cost
//    nothing: Q's and K's in the factor that turns S into log2 units (one per consumer and tile),
//    V's in the final normalization of O. P is quantized as 2^8 P, which keeps probabilities down
//    to 2^-17 (e4m3's smallest subnormal is 2^-9) and cancels in O / l.
// Shared memory (d = 128, 2 stages): Q 16 KB, O staging 32 KB, K and V^T rings 64 KB with 128 x 128
// tiles, 120 KB with the 128 x 224 tiles taken from N = 8192 (fp8.h key_tile_for).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/attention_tile.cuh"
#include "kernels/cuda_util.cuh"
#include "kernels/fp8.h"
#include "kernels/fp8_ref.h"
#include "kernels/mma.cuh"
#include "kernels/reference.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma_fp8.cuh"

namespace flashsim::gpu::fp8 {

namespace {

constexpr int kD = 128;  // the only head dimension so far: a row of e4m3 is one 128-byte swizzle row

// ---- the quantize pass -----------------------------------------------------------------------

__device__ __forceinline__ std::uint64_t splitmix_dev(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Row `row` of x (d entries) into the lane's D / 32 registers (columns lane * D / 32 + e), through
// the transform x D H when `hadamard` (the same signs as fp8_ref.cpp hadamard_sign).
template <int D, class T>
__device__ __forceinline__ void load_row(const T* x, float (&v)[D / 32], bool hadamard, std::uint64_t seed, int lane) {
  constexpr int V = D / 32;
#pragma unroll
  for (int e = 0; e < V; ++e) v[e] = to_f(x[lane * V + e]);
  if (!hadamard) return;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const std::uint64_t col = static_cast<std::uint64_t>(lane * V + e);
    if (splitmix_dev(seed * 0x100000001b3ULL + col) >> 63) v[e] = -v[e];
  }
#pragma unroll
  for (int h = 1; h < V; h <<= 1)
#pragma unroll
    for (int e = 0; e < V; ++e)
      if (!(e & h)) {
        const float a = v[e], b = v[e | h];
        v[e] = a + b;
        v[e | h] = a - b;
      }
#pragma unroll
  for (int m = 1; m < 32; m <<= 1)
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float other = __shfl_xor_sync(0xffffffffu, v[e], m);
      v[e] = (lane & m) ? other - v[e] : v[e] + other;
    }
  const float norm = rsqrtf(static_cast<float>(D));
#pragma unroll
  for (int e = 0; e < V; ++e) v[e] *= norm;
}

__device__ __forceinline__ float scale_of(float amax) { return amax > 0.f ? amax / kE4m3Max : 1.f; }

// atomicMax of a non-negative float through its bit pattern (ordered like the value).
__device__ __forceinline__ void atomic_max_pos(unsigned* slot, float value) { atomicMax(slot, __float_as_uint(value)); }

// Largest |x| (after the transform when `hadamard`) per head (per_head) or over the tensor, into
// out[head] or out[0]; grid (row chunks of 64, bh), 256 threads.
template <int D, class T>
__global__ void __launch_bounds__(256) amax_kernel(const T* __restrict__ x, int n, bool hadamard, std::uint64_t seed,
                                                   bool per_head, unsigned* __restrict__ out) {
  const int head = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float mx = 0.f;
  for (int r = blockIdx.x * 64 + warp; r < min(n, (blockIdx.x + 1) * 64); r += 8) {
    float v[D / 32];
    load_row<D>(x + (static_cast<std::size_t>(head) * n + r) * D, v, hadamard, seed, lane);
#pragma unroll
    for (int e = 0; e < D / 32; ++e) mx = fmaxf(mx, fabsf(v[e]));
  }
  mx = warp_max(mx);
  if (lane == 0) atomic_max_pos(out + (per_head ? head : 0), mx);
}

// Q or K rows to e4m3, one scale per block of `block_rows` rows (grid (blocks, bh), 256 threads):
// the block's own maximum, or *fixed_amax when given (per-tensor scaling).
template <int D, class T>
__global__ void __launch_bounds__(256) quantize_rows_kernel(const T* __restrict__ x, std::uint8_t* __restrict__ out,
                                                            float* __restrict__ scale_out, int n, int block_rows,
                                                            bool hadamard, std::uint64_t seed,
                                                            const unsigned* __restrict__ fixed_amax) {
  __shared__ float red[32];
  const int head = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r0 = blockIdx.x * block_rows, r1 = min(n, r0 + block_rows);
  const T* xh = x + static_cast<std::size_t>(head) * n * D;
  float amax;
  if (fixed_amax) {
    amax = __uint_as_float(*fixed_amax);
  } else {
    float mx = 0.f;
    for (int r = r0 + warp; r < r1; r += 8) {
      float v[D / 32];
      load_row<D>(xh + static_cast<std::size_t>(r) * D, v, hadamard, seed, lane);
#pragma unroll
      for (int e = 0; e < D / 32; ++e) mx = fmaxf(mx, fabsf(v[e]));
    }
    amax = block_max(mx, red);
  }
  const float scale = scale_of(amax), inv = 1.f / scale;
  if (threadIdx.x == 0) scale_out[head * gridDim.x + blockIdx.x] = scale;
  static_assert(D / 32 == 4, "a lane writes one 4-byte word of its row");
  for (int r = r0 + warp; r < r1; r += 8) {
    float v[D / 32];
    load_row<D>(xh + static_cast<std::size_t>(r) * D, v, hadamard, seed, lane);
    const std::uint32_t word = wgmma::pack4_e4m3(v[0] * inv, v[1] * inv, v[2] * inv, v[3] * inv);
    reinterpret_cast<std::uint32_t*>(out + (static_cast<std::size_t>(head) * n + r) * D)[lane] = word;
  }
}

// V [bh][n][D] -> V^T [bh][D][n_keys] e4m3 with keys permuted within groups of 32; one block per
// 128 keys of a head (grid (n_keys / 128 rounded up, bh), 256 threads); keys >= n become 0.
template <int D, class T>
__global__ void __launch_bounds__(256) quantize_v_kernel(const T* __restrict__ v, std::uint8_t* __restrict__ vt,
                                                         float* __restrict__ v_scale, const unsigned* __restrict__ amax,
                                                         bool per_head, int n, int n_keys) {
  __shared__ std::uint8_t tile[128][D + 4];
  const int head = blockIdx.y, key0 = blockIdx.x * 128;
  const float scale = scale_of(__uint_as_float(amax[per_head ? head : 0])), inv = 1.f / scale;
  if (blockIdx.x == 0 && threadIdx.x == 0) v_scale[head] = scale;
  const T* vh = v + static_cast<std::size_t>(head) * n * D;
  for (int i = threadIdx.x; i < 128 * D / 2; i += 256) {
    const int key = (2 * i) / D, c = (2 * i) % D;
    float a = 0.f, b = 0.f;
    if (key0 + key < n) {
      a = to_f(vh[static_cast<std::size_t>(key0 + key) * D + c]) * inv;
      b = to_f(vh[static_cast<std::size_t>(key0 + key) * D + c + 1]) * inv;
    }
    const std::uint16_t pair = wgmma::pack2_e4m3(a, b);
    tile[key][c] = static_cast<std::uint8_t>(pair & 0xff);
    tile[key][c + 1] = static_cast<std::uint8_t>(pair >> 8);
  }
  __syncthreads();
  std::uint8_t* vth = vt + static_cast<std::size_t>(head) * D * n_keys;
  for (int i = threadIdx.x; i < 128 * D; i += 256) {
    const int c = i / 128, p = i % 128;
    if (key0 + p >= n_keys) continue;
    const int q = p % kKeyGroup;  // vt_key_of_position, on the device
    const int key = (p - q) + (q & 16) + 2 * ((q & 15) >> 2) + (q & 1) + 8 * ((q >> 1) & 1);
    vth[static_cast<std::size_t>(c) * n_keys + key0 + p] = tile[key][c];
  }
}

// ---- the forward ----------------------------------------------------------------------------

using tile::fast_exp2;
using tile::kPaired;
using tile::kStatic;

template <int BC, int STAGES>
struct Config {
  static constexpr int kBR = 128;  // two consumer warpgroups of 64 rows
  static constexpr int kThreads = 384;
  static constexpr int kConsumerRegs = 240;
  static constexpr int kQBytes = kBR * kD;       // e4m3
  static constexpr int kOBytes = kBR * kD * 2;   // bf16 staging of O
  static constexpr int kKBytes = BC * kD;  // a K tile, [BC][128 bytes]
  // a V^T tile is whole boxes of d rows x 128 keys (one 128-byte swizzle row each); with BC = 192
  // or 224 the last box also holds the next tile's first keys, loaded and not used
  static constexpr int kVBoxes = (BC + 127) / 128;
  static constexpr int kVBytes = kD * 128 * kVBoxes;
  static constexpr int kBars = 2 + 4 * STAGES;
  static constexpr int kSmem = kQBytes + kOBytes + STAGES * (kKBytes + kVBytes) + 8 * kBars + 1024;
  static_assert(BC % 32 == 0 && BC % kKBlockRows == 0 && BC <= 224, "k32 steps, whole K scale blocks");
  static_assert(kSmem <= 227 * 1024, "shared memory per block");
  // (ptxas allocates the consumers' code within setmaxnreg's 240 registers, not the launch's 168:
  // BC = 224 holds S 112, O 64, P 28 and Q 16. BC = 256 spills: S 128 + O 64 + P 32 + Q 16)
};

// What a launch does besides its work: kPlain; kNoExp leaves the exponentials out (a timing
// diagnostic: how long the loop takes without the special-function unit; wrong output); kTrace
// records clock64 at the phases of each KV tile for block 0's first Q tile (kernels/fp8.h);
// kExpsFirst is kPlain with the softmax's exponentials issued before its sums (fp8.h Variant).
enum Mode { kPlain = 0, kNoExp = 1, kTrace = 2, kExpsFirst = 3 };
constexpr int kTraceEvents = 6;  // start, products issued, S done, softmax done, P V done, P packed

// One consumer warpgroup's work on a KV tile.
template <int BC, bool NO_EXP = false, int ORDER = tile::kExpThenAdd>
struct Fp8Tile {
  // s = Q K^T (both K-major: rows of 128 bytes), Q from registers
  __device__ __forceinline__ static void issue_s(float (&s)[BC / 2], const std::uint32_t (&qa)[kD / 32][4],
                                                 std::uint32_t ks) {
#pragma unroll
    for (int kk = 0; kk < kD / 32; ++kk)
      wgmma::wgmma_rs_e4m3(wgmma::WgmmaN<BC>{}, s, qa[kk], wgmma::desc128(ks + kk * 32, 16, 1024), kk > 0);
  }
  // the same with Q read from shared memory
  __device__ __forceinline__ static void issue_s(float (&s)[BC / 2], std::uint32_t qsm, std::uint32_t ks) {
#pragma unroll
    for (int kk = 0; kk < kD / 32; ++kk)
      wgmma::wgmma_ss_e4m3(wgmma::WgmmaN<BC>{}, s, wgmma::desc128(qsm + kk * 32, 16, 1024),
                           wgmma::desc128(ks + kk * 32, 16, 1024), kk > 0);
  }
  // o += P V^T-tile (rows of d, keys contiguous: K-major; 128 keys a box, box b at vs + b d 128)
  __device__ __forceinline__ static void issue_pv(float (&o)[kD / 2], const std::uint32_t (&pa)[BC / 32][4],
                                                  std::uint32_t vs) {
#pragma unroll
    for (int kk = 0; kk < BC / 32; ++kk)
      wgmma::wgmma_rs_e4m3(wgmma::WgmmaN<kD>{}, o, pa[kk],
                           wgmma::desc128(vs + (kk / 4) * (kD * 128) + (kk % 4) * 32, 16, 1024), 1);
  }
  // masks, then the online softmax in log2 units (factor[b] = scale_log2 * q scale * the scale of
  // K's block b of the tile, 128 keys each): s becomes 2^8 P; returns the factors the old O needs
  static constexpr int kKBlocks = BC / kKBlockRows;
  __device__ __forceinline__ static void softmax(float (&s)[BC / 2], float (&row_max)[2], float (&row_sum)[2],
                                                 float (&alpha)[2], int kv0, int q_row, int n, bool causal,
                                                 const float (&factor)[kKBlocks]) {
    constexpr int kTilesPerBlock = kKBlockRows / 8;  // n8 column tiles
    tile::mask_scores<BC>(s, kv0, q_row, n, causal);
    float shifts[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = -INFINITY;
#pragma unroll
      for (int b = 0; b < kKBlocks; ++b) {
        float mb = -INFINITY;
#pragma unroll
        for (int nt = b * kTilesPerBlock; nt < (b + 1) * kTilesPerBlock; ++nt)
          mb = fmaxf(mb, fmaxf(s[4 * nt + 2 * h], s[4 * nt + 2 * h + 1]));
        mx = fmaxf(mx, mb * factor[b]);
      }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(row_max[h], mx);
      const float base = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet
      alpha[h] = fast_exp2(row_max[h] - base);
      row_max[h] = m_new;
      const float shift = kPShift - base;
      shifts[h] = shift;
      if constexpr (ORDER == tile::kExpsFirst) continue;
      // (one chain of dependent FMNMX / FADD per row: four independent ones measured 1-8 % slower,
      // here and in the bf16 forward, H100 2026-11-26)
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float x = fmaf(s[4 * nt + 2 * h + e], factor[nt / kTilesPerBlock], shift);
          const float p = NO_EXP ? x : fast_exp2(x);
          s[4 * nt + 2 * h + e] = p;
          sum += p;
        }
      row_sum[h] = row_sum[h] * alpha[h] + sum;
    }
    if constexpr (ORDER == tile::kExpsFirst) {
#pragma unroll
      for (int i = 0; i < BC / 2; ++i) {
        const float x = fmaf(s[i], factor[i / 4 / kTilesPerBlock], shifts[(i / 2) % 2]);
        s[i] = NO_EXP ? x : fast_exp2(x);
      }
      tile::add_row_sums<BC>(s, row_sum, alpha);
    }
  }
  static constexpr float kPShift = 8.f;
  // 2^8 P (fp32, accumulator layout) -> e4m3 A fragments. For keys 32 kk .. 32 kk + 31 a thread
  // holds columns 2t, 2t+1 of the four n8 tiles: byte i of a[0] (row g) is the column
  // {2t, 2t+1, 2t+8, 2t+9}[i], of a[2] the same + 16; a[1], a[3] are row g + 8. V^T's keys are
  // stored in exactly that order (vt_key_of_position).
  __device__ __forceinline__ static void pack(const float (&s)[BC / 2], std::uint32_t (&pa)[BC / 32][4]) {
#pragma unroll
    for (int kk = 0; kk < BC / 32; ++kk) {
      const float* x = s + 16 * kk;
      pa[kk][0] = wgmma::pack4_e4m3(x[0], x[1], x[4], x[5]);
      pa[kk][1] = wgmma::pack4_e4m3(x[2], x[3], x[6], x[7]);
      pa[kk][2] = wgmma::pack4_e4m3(x[8], x[9], x[12], x[13]);
      pa[kk][3] = wgmma::pack4_e4m3(x[10], x[11], x[14], x[15]);
    }
  }
};


// PINGPONG: the two consumers issue their products in turns (named barriers 1 and 2), so that one's
// softmax runs under the other's products.
template <int BC, int STAGES, bool PINGPONG, int SCHED, bool QSMEM, int MODE>
__global__ void __launch_bounds__(384, 1)
    attn_fwd_fp8_kernel(__nv_bfloat16* __restrict__ o, float* __restrict__ lse, const float* __restrict__ q_scale,
                        const float* __restrict__ k_scale, const float* __restrict__ v_scale, int bh, int n,
                        bool causal, float scale_log2, long long* __restrict__ trace, int trace_tiles,
                        const __grid_constant__ CUtensorMap map_q,
                        const __grid_constant__ CUtensorMap map_k, const __grid_constant__ CUtensorMap map_vt,
                        const __grid_constant__ SplitTail split, float* __restrict__ part_o,
                        float* __restrict__ part_lse) {
  using C = Config<BC, STAGES>;
  using W = Fp8Tile<BC, MODE == kNoExp, MODE == kExpsFirst ? tile::kExpsFirst : tile::kExpThenAdd>;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t qs = (mma::smem_addr(smem_raw) + 1023) & ~1023u, os = qs + C::kQBytes;
  const std::uint32_t ks0 = os + C::kOBytes, vs0 = ks0 + STAGES * C::kKBytes;
  const std::uint32_t bars = vs0 + STAGES * C::kVBytes;
  const std::uint32_t q_full = bars, q_empty = bars + 8;
  auto k_full = [&](int s) { return bars + 8 * (2 + s); };
  auto v_full = [&](int s) { return bars + 8 * (2 + STAGES + s); };
  auto k_empty = [&](int s) { return bars + 8 * (2 + 2 * STAGES + s); };
  auto v_empty = [&](int s) { return bars + 8 * (2 + 3 * STAGES + s); };
  auto kbuf = [&](int it) { return ks0 + (it % STAGES) * C::kKBytes; };
  auto vbuf = [&](int it) { return vs0 + (it % STAGES) * C::kVBytes; };

  // persistent blocks over the (head, Q tile) slots; kPaired: a head's heaviest causal tile with
  // its lightest (kStatic runs the full mask only, so its causal order never matters)
  // kSplitTail: kStatic's whole rounds, then the last round's tiles in parts along the keys
  const tile::QTileWalk<SCHED, C::kBR> walk(n, bh, causal);
  const tile::SplitTailWalk<C::kBR> split_walk(split, n);
  auto kv_tiles = [&](int q0, int) { return ((causal ? min(n, q0 + C::kBR) : n) + BC - 1) / BC; };
  auto next_item = [&](int& k, tile::WorkItem& w) { return tile::next_work_item(walk, split_walk, k, w, kv_tiles); };

  if (threadIdx.x == 0) {
    tma::mbar_init(q_full, 1);
    tma::mbar_init(q_empty, 256);  // every consumer thread, once its reads of Q are done
    for (int s = 0; s < STAGES; ++s) {
      tma::mbar_init(k_full(s), 1);
      tma::mbar_init(v_full(s), 1);
      tma::mbar_init(k_empty(s), 256);
      tma::mbar_init(v_empty(s), 256);
    }
    tma::mbar_init_fence();
  }
  __syncthreads();

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    if (threadIdx.x != 0) return;
    int it = 0, cursor = 0;
    tile::WorkItem w;
    for (int local = 0; next_item(cursor, w); ++local) {
      tma::mbar_wait(q_empty, (local & 1) ^ 1);
      const int tiles = w.kv_count, q0 = w.q0, head = w.head, kv0 = w.kv_begin * BC;
      tma::mbar_arrive_expect_tx(q_full, C::kQBytes);
#pragma unroll
      for (int h = 0; h < 2; ++h) tma::load_3d(qs + h * (64 * kD), &map_q, q_full, 0, q0 + 64 * h, head);
      for (int j = 0; j < tiles; ++j, ++it) {
        const int s = it % STAGES;
        const std::uint32_t parity = ((it / STAGES) & 1) ^ 1;
        tma::mbar_wait(k_empty(s), parity);
        tma::mbar_arrive_expect_tx(k_full(s), C::kKBytes);
        tma::load_3d(kbuf(it), &map_k, k_full(s), 0, kv0 + j * BC, head);
        tma::mbar_wait(v_empty(s), parity);
        tma::mbar_arrive_expect_tx(v_full(s), C::kVBytes);
#pragma unroll
        for (int b = 0; b < C::kVBoxes; ++b)
          tma::load_3d(vbuf(it) + b * (kD * 128), &map_vt, v_full(s), kv0 + j * BC + 128 * b, 0, head);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(C::kConsumerRegs));
  const int c = wg - 1;
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const std::uint32_t qc = qs + c * (64 * kD), oc = os + c * (64 * kD * 2);
  const int row_w = warp * 16;
  const int q_blocks = (n + kQBlockRows - 1) / kQBlockRows, k_blocks = (n + kKBlockRows - 1) / kKBlockRows;
  auto full_parity = [](int it) { return static_cast<std::uint32_t>((it / STAGES) & 1); };
  auto release = [&](std::uint32_t bar) { tma::mbar_arrive(bar); };
  auto turn_wait = [&] {
    if constexpr (PINGPONG) tma::named_bar_sync(1 + c, 256);
  };
  auto turn_pass = [&] {
    if constexpr (PINGPONG) tma::named_bar_arrive(1 + (c + 1) % 2, 256);
  };
  if constexpr (PINGPONG) {
    if (c == 1) tma::named_bar_arrive(1, 256);
  }

  // kTrace: thread 0 of each consumer of block 0 stamps its first Q tile's KV tiles; `after` makes
  // the stamp wait for a value the phase computed, so the compiler cannot hoist it above the phase
  const bool tracing = MODE == kTrace && blockIdx.x == 0 && threadIdx.x % 128 == 0;
  auto stamp = [&](int local, int j, int event, float after) {
    if constexpr (MODE == kTrace) {
      if (tracing && local == 0 && j < trace_tiles) {
        long long t;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) : "f"(after) : "memory");
        trace[(static_cast<long long>(c) * trace_tiles + j) * kTraceEvents + event] = t;
      }
    }
  };
  int it = 0, cursor = 0;
  tile::WorkItem w;
  for (int local = 0; next_item(cursor, w); ++local) {
    tma::mbar_wait(q_full, local & 1);
    const int tiles = w.kv_count, q0 = w.q0, head = w.head, j0 = w.kv_begin;
    const int q0c = q0 + 64 * c;
    const int q_row = q0c + row_w + g;
    const float q_factor = scale_log2 * q_scale[head * q_blocks + min(q0c / kQBlockRows, q_blocks - 1)];
    const float* k_scale_h = k_scale + head * k_blocks;

    float s[BC / 2];
    std::uint32_t qa[QSMEM ? 1 : kD / 32][4];
    if constexpr (!QSMEM) {
#pragma unroll
      for (int kk = 0; kk < kD / 32; ++kk)
        mma::ldmatrix_x4(qa[kk], wgmma::sw128<64>(qc, row_w + (lane % 8) + ((lane / 8) & 1) * 8, kk * 2 + lane / 16));
    }
    auto issue_s = [&](std::uint32_t kb) {
      if constexpr (QSMEM) W::issue_s(s, qc, kb);
      else W::issue_s(s, qa, kb);
    };

    float acc_o[kD / 2];
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) acc_o[i] = 0.f;
    float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f}, alpha[2];
    std::uint32_t pa[BC / 32][4];

    stamp(local, 0, 0, 0.f);
    tma::mbar_wait(k_full(it % STAGES), full_parity(it));
    turn_wait();
    wgmma::fence();
    issue_s(kbuf(it));
    wgmma::commit();
    turn_pass();
    stamp(local, 0, 1, 0.f);
    wgmma::wait<0>();
    tile::pin(s);
    stamp(local, 0, 2, s[0]);
    release(k_empty(it % STAGES));
    if (!QSMEM || tiles == 1) release(q_empty);
    auto factors = [&](int j, float (&f)[W::kKBlocks]) {  // K's scales of tile j (past n: unused)
#pragma unroll
      for (int b = 0; b < W::kKBlocks; ++b) f[b] = q_factor * k_scale_h[min((j0 + j) * W::kKBlocks + b, k_blocks - 1)];
    };
    float f[W::kKBlocks];
    factors(0, f);
    W::softmax(s, row_max, row_sum, alpha, j0 * BC, q_row, n, causal, f);
    stamp(local, 0, 3, row_sum[0] + row_sum[1]);
    stamp(local, 0, 4, 0.f);
    W::pack(s, pa);
    stamp(local, 0, 5, __uint_as_float(pa[BC / 32 - 1][3]));
    for (int j = 1; j < tiles; ++j) {
      const int cur = it + j, prev = cur - 1;
      stamp(local, j, 0, 0.f);
      factors(j, f);
      tma::mbar_wait(k_full(cur % STAGES), full_parity(cur));
      tma::mbar_wait(v_full(prev % STAGES), full_parity(prev));
      tile::pin(acc_o);
      tile::pin(pa);
      turn_wait();
      wgmma::fence();
      issue_s(kbuf(cur));
      wgmma::commit();
      W::issue_pv(acc_o, pa, vbuf(prev));
      wgmma::commit();
      turn_pass();
      stamp(local, j, 1, 0.f);
      wgmma::wait<1>();
      tile::pin(s);
      stamp(local, j, 2, s[0]);
      release(k_empty(cur % STAGES));
      if constexpr (QSMEM) if (j == tiles - 1) release(q_empty);
      W::softmax(s, row_max, row_sum, alpha, (j0 + j) * BC, q_row, n, causal, f);
      stamp(local, j, 3, row_sum[0] + row_sum[1]);
      wgmma::wait<0>();
      tile::pin(acc_o);
      tile::pin(pa);
      stamp(local, j, 4, acc_o[0]);
      release(v_empty(prev % STAGES));
      tile::rescale_rows(acc_o, alpha);
      W::pack(s, pa);
      stamp(local, j, 5, __uint_as_float(pa[BC / 32 - 1][3]));
    }
    const int lastv = it + tiles - 1;
    tma::mbar_wait(v_full(lastv % STAGES), full_parity(lastv));
    tile::pin(acc_o);
    tile::pin(pa);
    turn_wait();
    wgmma::fence();
    W::issue_pv(acc_o, pa, vbuf(lastv));
    wgmma::commit();
    turn_pass();
    wgmma::wait<0>();
    tile::pin(acc_o);
    tile::pin(pa);
    release(v_empty(lastv % STAGES));
    it += tiles;

    const float sv = v_scale[head];
    // a part of a split tile (kSplitTail): O over its keys, descaled and normalized, in fp32, and its
    // logsumexp in log2 units (tile::merge_split_parts); the shuffles and warp syncs outside the branch
    const bool partial = SCHED == tile::kSplitTail && w.part >= 0;
    float* po = part_o + static_cast<std::size_t>(partial ? w.part : 0) * C::kBR * kD;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = row_sum[h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.f ? sv / l : 0.f;
      const int r = row_w + g + 8 * h;
      if (partial) {
#pragma unroll
        for (int dt = 0; dt < kD / 8; ++dt)
          *reinterpret_cast<float2*>(po + (64 * c + r) * kD + dt * 8 + t4 * 2) =
              make_float2(acc_o[4 * dt + 2 * h] * inv, acc_o[4 * dt + 2 * h + 1] * inv);
        if (t4 == 0) part_lse[w.part * C::kBR + 64 * c + r] = l > 0.f ? row_max[h] + log2f(l) - W::kPShift : -INFINITY;
      } else {
#pragma unroll
        for (int dt = 0; dt < kD / 8; ++dt) {
          const std::uint32_t packed =
              mma::pack2<__nv_bfloat16>(acc_o[4 * dt + 2 * h] * inv, acc_o[4 * dt + 2 * h + 1] * inv);
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(wgmma::sw128<64>(oc, r, dt) + t4 * 4), "r"(packed));
        }
        if (t4 == 0 && q0c + r < n)
          lse[static_cast<std::size_t>(head) * n + q0c + r] =
              l > 0.f ? (row_max[h] + log2f(l) - W::kPShift) * 0.69314718055994531f : -INFINITY;
      }
    }
    __syncwarp();
    // the warp's own 16 staged rows out, 16 bytes a lane
    __nv_bfloat16* oh = o + static_cast<std::size_t>(head) * n * kD;
    for (int i = lane; i < 16 * (kD / 8) && !partial; i += 32) {
      const int r = row_w + i / (kD / 8), ch = i % (kD / 8);
      if (q0c + r >= n) continue;
      uint4 val;
      asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(val.x), "=r"(val.y), "=r"(val.z), "=r"(val.w)
                   : "r"(wgmma::sw128<64>(oc, r, ch)));
      *reinterpret_cast<uint4*>(oh + static_cast<std::size_t>(q0c + r) * kD + ch * 8) = val;
    }
    __syncwarp();
  }
  if constexpr (PINGPONG) {
    if (c == 0) tma::named_bar_sync(1, 256);
  }
}

// [outer][mid][inner] bytes as a 3-D tensor map of box_inner x box_mid boxes, 128-byte swizzle.
CUtensorMap byte_tensor_map(const std::uint8_t* p, int inner, int mid, int outer, int box_inner, int box_mid) {
  CUtensorMap map{};
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(mid),
                              static_cast<cuuint64_t>(outer)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(inner) * mid};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_inner), static_cast<cuuint32_t>(box_mid), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = tma::tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<std::uint8_t*>(p),
                                               dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(r));
  return map;
}

template <int BC, int STAGES, bool PINGPONG, int SCHED, bool QSMEM, int MODE>
void launch(const Operands& ops, __nv_bfloat16* o, float* lse, bool causal, cudaStream_t stream,
            long long* trace = nullptr, int trace_tiles = 0) {
  using C = Config<BC, STAGES>;
  auto kernel = attn_fwd_fp8_kernel<BC, STAGES, PINGPONG, SCHED, QSMEM, MODE>;
  static std::uint64_t smem_set = 0;
  static int sms_of[64] = {};
  int dev = 0;
  if (first_launch_on_this_device(smem_set, &dev)) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms_of[dev & 63], cudaDevAttrMultiProcessorCount, dev));
  }
  const CUtensorMap map_q = byte_tensor_map(ops.q, kD, ops.n, ops.bh, kD, 64);
  const CUtensorMap map_k = byte_tensor_map(ops.k, kD, ops.n, ops.bh, kD, BC);
  const CUtensorMap map_vt = byte_tensor_map(ops.vt, ops.n_keys, kD, ops.bh, 128, kD);
  const int q_tiles = (ops.n + C::kBR - 1) / C::kBR;
  const int units = SCHED == kPaired ? (q_tiles + 1) / 2 * ops.bh : q_tiles * ops.bh;
  dim3 grid(std::min(units, sms_of[dev & 63]));
  SplitTail split;
  tile::SplitScratch scratch;
  if constexpr (SCHED == tile::kSplitTail) {
    split = split_tail_plan(units, (ops.n + BC - 1) / BC, sms_of[dev & 63]);
    grid = dim3(split.blocks);
    scratch = tile::split_scratch<kD, C::kBR>(split, stream);
  }
  const float scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(kD));
  kernel<<<grid, C::kThreads, C::kSmem, stream>>>(o, lse, ops.q_scale, ops.k_scale, ops.v_scale, ops.bh, ops.n, causal,
                                                  scale_log2, trace, trace_tiles, map_q, map_k, map_vt, split,
                                                  scratch.part_o, scratch.part_lse);
  CUDA_CHECK_LAUNCH();
  tile::merge_split<__nv_bfloat16, kD, C::kBR>(o, lse, ops.n, split, scratch, stream);
  record_occupancy(reinterpret_cast<const void*>(kernel), C::kThreads, C::kSmem);  // compare's L2 model
}

// causal tiles in pairs of equal work, as the bf16 forward at d = 128; full: one tile after another
// (from N = 8192 the last round split along the keys, as the bf16 forward's: launch_order.h)
template <bool PINGPONG, bool QSMEM, int MODE = kPlain, int BC = 128>
void launch_masked(const Operands& ops, __nv_bfloat16* o, float* lse, bool causal, cudaStream_t stream,
                   long long* trace = nullptr, int trace_tiles = 0) {
  if (causal) launch<BC, 2, PINGPONG, kPaired, QSMEM, MODE>(ops, o, lse, causal, stream, trace, trace_tiles);
  else if (fwd_split_enabled(ops.n, kD)) launch<BC, 2, PINGPONG, tile::kSplitTail, QSMEM, MODE>(ops, o, lse, causal, stream, trace, trace_tiles);
  else launch<BC, 2, PINGPONG, kStatic, QSMEM, MODE>(ops, o, lse, causal, stream, trace, trace_tiles);
}

void check_args(const char* who, int bh, int n, int d) {
  if (bh < 1 || n < 1) throw std::invalid_argument(std::string(who) + ": need bh >= 1, n >= 1");
  if (d != kD) throw std::invalid_argument(std::string(who) + ": the FP8 forward supports head dimension 128 only");
}

std::size_t round_up(std::size_t x) { return (x + 255) / 256 * 256; }

}  // namespace

std::size_t workspace_bytes(int bh, int n, int d) {
  check_args("fp8::workspace_bytes", bh, n, d);
  const std::size_t rows = static_cast<std::size_t>(bh) * n;
  const std::size_t qb = (n + kQBlockRows - 1) / kQBlockRows, kb = (n + kKBlockRows - 1) / kKBlockRows;
  return 2 * round_up(rows * d) + round_up(static_cast<std::size_t>(bh) * d * padded_keys(n)) +
         round_up(bh * qb * 4) + round_up(bh * kb * 4) + round_up(static_cast<std::size_t>(bh) * 4) +
         round_up((3 + static_cast<std::size_t>(bh)) * 4);
}

Operands operands_in(void* workspace, int bh, int n, int d) {
  check_args("fp8::operands_in", bh, n, d);
  if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0)
    throw std::invalid_argument("fp8::operands_in: the workspace must be 256-byte aligned");
  Operands ops;
  ops.bh = bh;
  ops.n = n;
  ops.d = d;
  ops.n_keys = padded_keys(n);
  auto* p = static_cast<unsigned char*>(workspace);
  const std::size_t rows = static_cast<std::size_t>(bh) * n;
  const std::size_t qb = (n + kQBlockRows - 1) / kQBlockRows, kb = (n + kKBlockRows - 1) / kKBlockRows;
  ops.q = p;
  p += round_up(rows * d);
  ops.k = p;
  p += round_up(rows * d);
  ops.vt = p;
  p += round_up(static_cast<std::size_t>(bh) * d * ops.n_keys);
  ops.q_scale = reinterpret_cast<float*>(p);
  p += round_up(bh * qb * 4);
  ops.k_scale = reinterpret_cast<float*>(p);
  p += round_up(bh * kb * 4);
  ops.v_scale = reinterpret_cast<float*>(p);
  p += round_up(static_cast<std::size_t>(bh) * 4);
  ops.amax = reinterpret_cast<unsigned*>(p);
  return ops;
}

template <class T>
void quantize(const T* q, const T* k, const T* v, const Operands& ops, const QuantOptions& opt, cudaStream_t stream) {
  check_args("fp8::quantize", ops.bh, ops.n, ops.d);
  const int n = ops.n, bh = ops.bh;
  const bool per_tensor = opt.scaling == Scaling::PerTensor;
  CUDA_CHECK(cudaMemsetAsync(ops.amax, 0, (3 + static_cast<std::size_t>(bh)) * 4, stream));
  const dim3 chunks((n + 63) / 64, bh);
  if (per_tensor) {
    amax_kernel<kD><<<chunks, 256, 0, stream>>>(q, n, opt.hadamard, opt.seed, false, ops.amax + 0);
    amax_kernel<kD><<<chunks, 256, 0, stream>>>(k, n, opt.hadamard, opt.seed, false, ops.amax + 1);
    amax_kernel<kD><<<chunks, 256, 0, stream>>>(v, n, false, 0, false, ops.amax + 2);
  } else {
    amax_kernel<kD><<<chunks, 256, 0, stream>>>(v, n, false, 0, true, ops.amax + 3);
  }
  CUDA_CHECK_LAUNCH();
  const dim3 qgrid((n + kQBlockRows - 1) / kQBlockRows, bh), kgrid((n + kKBlockRows - 1) / kKBlockRows, bh);
  quantize_rows_kernel<kD><<<qgrid, 256, 0, stream>>>(q, ops.q, ops.q_scale, n, kQBlockRows, opt.hadamard, opt.seed,
                                                      per_tensor ? ops.amax + 0 : nullptr);
  quantize_rows_kernel<kD><<<kgrid, 256, 0, stream>>>(k, ops.k, ops.k_scale, n, kKBlockRows, opt.hadamard, opt.seed,
                                                      per_tensor ? ops.amax + 1 : nullptr);
  const dim3 vgrid((ops.n_keys + 127) / 128, bh);
  quantize_v_kernel<kD><<<vgrid, 256, 0, stream>>>(v, ops.vt, ops.v_scale, per_tensor ? ops.amax + 2 : ops.amax + 3,
                                                   !per_tensor, n, ops.n_keys);
  CUDA_CHECK_LAUNCH();
}

template void quantize<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*,
                                      const Operands&, const QuantOptions&, cudaStream_t);
template void quantize<__half>(const __half*, const __half*, const __half*, const Operands&, const QuantOptions&,
                               cudaStream_t);

int key_tile_for(int n, const Variant& v) {
  const bool tile_128_only = v.pingpong || v.qsmem || v.no_exponentials;
  if (v.key_tile == 0) return tile_128_only ? 128 : default_key_tile(n);
  if (v.key_tile != 128 && v.key_tile != 192 && v.key_tile != 224)
    throw std::invalid_argument("fp8::attention_forward: key_tile must be 0, 128, 192 or 224, not " + std::to_string(v.key_tile));
  if (v.key_tile != 128 && tile_128_only)
    throw std::invalid_argument("fp8::attention_forward: ping-pong, qsmem and no_exponentials take 128-key tiles only");
  return v.key_tile;
}

void attention_forward_variant(const Operands& ops, __nv_bfloat16* o, float* lse, bool causal, Variant variant,
                               cudaStream_t stream) {
  check_args("fp8::attention_forward", ops.bh, ops.n, ops.d);
  if (ops.q == nullptr || ops.k == nullptr || ops.vt == nullptr || ops.n_keys != padded_keys(ops.n))
    throw std::invalid_argument("fp8::attention_forward: operands not laid out by fp8::operands_in");
  const Variant v = variant;
  const int key_tile = key_tile_for(ops.n, v);
  if (v.exps_first) {
    if (v.pingpong || v.qsmem || v.no_exponentials)
      throw std::invalid_argument("fp8::attention_forward: exps_first goes with the key tile alone");
    if (key_tile == 224) launch_masked<false, true, kExpsFirst, 224>(ops, o, lse, causal, stream);
    else if (key_tile == 192) launch_masked<false, false, kExpsFirst, 192>(ops, o, lse, causal, stream);
    else launch_masked<false, false, kExpsFirst>(ops, o, lse, causal, stream);
  } else if (key_tile == 192) {
    launch_masked<false, false, kPlain, 192>(ops, o, lse, causal, stream);
  } else if (key_tile == 224) {  // Q from shared memory: with Q in registers the products serialize (C7512)
    launch_masked<false, true, kPlain, 224>(ops, o, lse, causal, stream);
  } else if (v.no_exponentials) {
    if (v.pingpong || v.qsmem) throw std::invalid_argument("fp8::attention_forward: no_exponentials alone only");
    launch_masked<false, false, kNoExp>(ops, o, lse, causal, stream);
  } else if (v.pingpong && v.qsmem) {
    launch_masked<true, true>(ops, o, lse, causal, stream);
  } else if (v.pingpong) {
    launch_masked<true, false>(ops, o, lse, causal, stream);
  } else if (v.qsmem) {
    launch_masked<false, true>(ops, o, lse, causal, stream);
  } else {
    launch_masked<false, false>(ops, o, lse, causal, stream);
  }
}

void attention_forward_trace(const Operands& ops, __nv_bfloat16* o, float* lse, bool causal, bool pingpong,
                             long long* trace, int trace_tiles, cudaStream_t stream) {
  check_args("fp8::attention_forward_trace", ops.bh, ops.n, ops.d);
  if (trace == nullptr || trace_tiles < 1) throw std::invalid_argument("fp8::attention_forward_trace: no trace buffer");
  if (pingpong) launch_masked<true, false, kTrace>(ops, o, lse, causal, stream, trace, trace_tiles);
  else launch_masked<false, false, kTrace>(ops, o, lse, causal, stream, trace, trace_tiles);
}

void attention_forward(const Operands& ops, __nv_bfloat16* o, float* lse, bool causal, cudaStream_t stream) {
  attention_forward_variant(ops, o, lse, causal, Variant{}, stream);
}

}  // namespace flashsim::gpu::fp8

#ifndef FLASHSIM_ATTN_FWD_FAST_ONLY
// ----------------------------------------------------------------------------
// workload (flashsim-gpu compare, schedule attn-fp8)

namespace flashsim::gpu {

namespace {

// bf16 Q, K, V drawn as AttnFwdWorkload draws them and quantized once in setup (not measured, as
// a model would keep its FP8 weights); the inputs the runs read, and rotate, are the quantized
// operands (the workspace); run() is fp8::attention_forward alone.
class AttnFp8Workload : public Workload {
 public:
  using Workload::Workload;
  void setup(std::uint64_t seed) override {
    const std::size_t elems = static_cast<std::size_t>(bh()) * n() * d();
    DevBuf q(elems * 2), k(elems * 2), v(elems * 2);
    fill_uniform(q.get(), elems, Dtype::BF16, seed, -2.f, 2.f);
    fill_uniform(k.get(), elems, Dtype::BF16, seed + 1, -2.f, 2.f);
    fill_uniform(v.get(), elems, Dtype::BF16, seed + 2, -1.f, 1.f);
    iws_ = add_input(fp8::workspace_bytes(bh(), n(), d()));
    fp8::quantize(q.as<__nv_bfloat16>(), k.as<__nv_bfloat16>(), v.as<__nv_bfloat16>(), ops(0), fp8::QuantOptions{},
                  nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());  // before q, k, v go
    o_ = DevBuf(elems * 2);
    lse_ = DevBuf(static_cast<std::size_t>(bh()) * n() * 4);
  }
  void poison_outputs() override {
    poison(o_);
    poison(lse_);
  }
  void run(int set) override { fp8::attention_forward(ops(set), o_.as<__nv_bfloat16>(), lse_.as<float>(), spec_.causal, nullptr); }
  // The bench driver's check (fp8_ref.h OutputCheck) on the operands read back: the worst fraction
  // of its allowances, which tolerance() compares with 1.
  double check(std::string* note) override {
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::size_t per = static_cast<std::size_t>(n()) * d(), elems = per * bh();
    std::uint64_t bad = count_nonfinite(o_.get(), elems, Dtype::BF16) +
                        count_nonfinite(lse_.get(), static_cast<std::size_t>(bh()) * n(), Dtype::F32);
    const fp8::Operands x = ops(0);
    auto bytes = [](const std::uint8_t* p, std::size_t count) {
      std::vector<std::uint8_t> out(count);
      CUDA_CHECK(cudaMemcpy(out.data(), p, count, cudaMemcpyDeviceToHost));
      return out;
    };
    auto floats = [](const float* p, std::size_t count) { return to_host(p, 0, count, Dtype::F32); };
    const fp8::Dequantized dq = fp8::dequantize_operands(
        bh(), n(), d(), bytes(x.q, elems), bytes(x.k, elems), bytes(x.vt, static_cast<std::size_t>(bh()) * d() * x.n_keys),
        floats(x.q_scale, static_cast<std::size_t>(bh()) * fp8::q_scale_blocks(n())),
        floats(x.k_scale, static_cast<std::size_t>(bh()) * fp8::k_scale_blocks(n())), floats(x.v_scale, bh()));
    const auto heads = ref::pick_indices(bh(), 2);
    const auto rows = ref::pick_indices(n(), 256);
    fp8::OutputCheck oc(fp8::key_tile_for(n(), fp8::Variant{}));
    for (auto h : heads) {
      const auto go = to_host(o_.get(), h * per, per, Dtype::BF16);
      const auto gl = to_host(lse_.get(), h * n(), n(), Dtype::F32);
      oc.add_head(dq, static_cast<int>(h), spec_.causal, rows, go.data(), gl.data());
    }
    const fp8::OutputErrors e = oc.result();
    std::ostringstream o;
    o.precision(3);
    o << heads.size() << " of " << bh() << " heads, " << rows.size() << " rows each, against the FP8 emulation: max |dO| "
      << e.max_o << ", rms " << e.rms_o << " (max|V| " << e.vmax << "), lse/tol " << e.lse
      << "; rel err = worst fraction of max|V|/8, max|V|/256, the lse tolerance; " << bad << " non-finite outputs";
    if (note) *note = o.str();
    return bad ? INFINITY : e.worst_fraction();
  }

 private:
  int bh() const { return static_cast<int>(spec_.bh); }
  int n() const { return static_cast<int>(spec_.seq); }
  int d() const { return static_cast<int>(spec_.d); }
  fp8::Operands ops(int set) const { return fp8::operands_in(in(set, iws_), bh(), n(), d()); }
  int iws_ = 0;
  DevBuf o_, lse_;
};

}  // namespace

std::unique_ptr<Workload> make_attention_fp8(const Spec& s) {
  if (auto why = unsupported(s.schedule, s.dtype, s.d)) throw std::invalid_argument(*why);
  if (s.schedule != Schedule::AttnFP8) throw std::invalid_argument("make_attention_fp8: not attn-fp8");
  return std::make_unique<AttnFp8Workload>(s);
}

}  // namespace flashsim::gpu
#endif  // FLASHSIM_ATTN_FWD_FAST_ONLY

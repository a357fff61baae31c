// Pieces of a consumer warpgroup's work on one KV tile that the bf16 / fp16 forward
// (attention_forward.cu) and the FP8 forward (attention_fp8.cu) share: S and O are wgmma
// accumulators of a 64-row slab (kernels/wgmma.cuh's layout: thread t of quad g holds rows g and
// g + 8, columns 8j + 2t + {0, 1}).
#pragma once

#include <cstdint>

#include "kernels/cuda_util.cuh"
#include "kernels/launch_order.h"
#include "kernels/mma.cuh"
#include "kernels/wgmma.cuh"

namespace flashsim::gpu::tile {

// Registers that wgmma reads or writes asynchronously are pinned with empty asm statements on both
// sides of the fence ... wait window, so that the compiler neither moves their writes past
// wgmma.fence nor reuses them while a product is in flight.
template <int N>
__device__ __forceinline__ void pin(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) wgmma::reg_fence(x[i]);
}
template <int K>
__device__ __forceinline__ void pin(std::uint32_t (&x)[K][4]) {
#pragma unroll
  for (int i = 0; i < K; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(x[i][e])::"memory");
}

// -inf for the keys past n and, under the causal mask, the keys after the query, in a 64 x BC
// score tile whose first key is kv0; q_row is the thread's first row. Tiles wholly inside skip it.
template <int BC>
__device__ __forceinline__ void mask_scores(float (&s)[BC / 2], int kv0, int q_row, int n, bool causal) {
  const int t = threadIdx.x % 4;
  const int warp_row0 = q_row - (threadIdx.x % 32) / 4;  // the same test for the whole warp
  if (kv0 + BC > n || (causal && kv0 + BC - 1 > warp_row0)) {
#pragma unroll
    for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = kv0 + nt * 8 + 2 * t + (e & 1);
        const int row = q_row + (e / 2) * 8;
        if (key >= n || (causal && key > row)) s[4 * nt + e] = -INFINITY;
      }
  }
}

// 2^x on the special-function unit (MUFU.EX2); flushes denormal results to zero, which only ever
// meets probabilities below 2^-126 (they vanish in the sum anyway).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The order of a softmax's instructions within one warp. kExpThenAdd: each probability is added
// to its row's sum as it is made (one dependent chain a row, the kernels' order). kExpsFirst: every
// exponential of the thread's two rows first, then the sums as four chains a row, so that no
// FADD waits on the exponential just issued (kernels/tools/probe_softmax.cu measures both). The
// ...TreeMax orders take each row's maximum as a tree of depth log2(BC / 4) instead of a chain of
// BC / 8 dependent FMNMX (the same value: max does not depend on the order).
enum SoftmaxOrder { kExpThenAdd = 0, kExpsFirst = 1, kExpThenAddTreeMax = 2, kExpsFirstTreeMax = 3 };
__host__ __device__ constexpr bool exps_first(int order) { return (order & 1) != 0; }
__host__ __device__ constexpr bool tree_max(int order) { return (order & 2) != 0; }

// row_sum = row_sum * alpha + the sum of each of the thread's two rows of P (four chains a row, so
// that no FADD waits for the one before it): the sums of the kExpsFirst order.
template <int BC>
__device__ __forceinline__ void add_row_sums(const float (&p)[BC / 2], float (&row_sum)[2], const float (&alpha)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float part[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < BC / 8; ++nt) part[nt % 4] += p[4 * nt + 2 * h] + p[4 * nt + 2 * h + 1];
    row_sum[h] = row_sum[h] * alpha[h] + ((part[0] + part[1]) + (part[2] + part[3]));
  }
}

// t[0] = the maximum of t[0 .. 2W): a tree, each level folding the upper half onto the lower
template <int W, int N>
__device__ __forceinline__ void fold_max(float (&t)[N]) {
#pragma unroll
  for (int i = 0; i < W; ++i) t[i] = fmaxf(t[i], t[i + W]);
  if constexpr (W > 1) fold_max<W / 2>(t);
}

// The online softmax of a 64 x BC score tile (already masked) in log2 units: s becomes P, row_max
// and row_sum move on (row_sum per thread; the quad sums at the end), alpha gets the factors the
// old O needs.
template <int BC, int ORDER = kExpThenAdd>
__device__ __forceinline__ void online_softmax(float (&s)[BC / 2], float (&row_max)[2], float (&row_sum)[2],
                                               float (&alpha)[2], float scale_log2) {
  static_assert(!tree_max(ORDER) || ((BC / 8) & (BC / 8 - 1)) == 0, "the tree maximum needs BC / 8 a power of two");
  float base[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = -INFINITY;
    if constexpr (tree_max(ORDER)) {
      float t[BC / 8];
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt) t[nt] = fmaxf(s[4 * nt + 2 * h], s[4 * nt + 2 * h + 1]);
      fold_max<BC / 16>(t);
      mx = t[0];
    } else {
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt) mx = fmaxf(mx, fmaxf(s[4 * nt + 2 * h], s[4 * nt + 2 * h + 1]));
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(row_max[h], mx * scale_log2);
    base[h] = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet
    alpha[h] = fast_exp2(row_max[h] - base[h]);
    row_max[h] = m_new;
    if constexpr (!exps_first(ORDER)) {
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float p = fast_exp2(fmaf(s[4 * nt + 2 * h + e], scale_log2, -base[h]));
          s[4 * nt + 2 * h + e] = p;
          sum += p;
        }
      row_sum[h] = row_sum[h] * alpha[h] + sum;
    }
  }
  if constexpr (exps_first(ORDER)) {
#pragma unroll
    for (int i = 0; i < BC / 2; ++i) s[i] = fast_exp2(fmaf(s[i], scale_log2, -base[(i / 2) % 2]));
    add_row_sums<BC>(s, row_sum, alpha);
  }
}

// ptxas (nvcc 13.0) schedules wgmma.wait_group 0 at the top of its basic block: a wait for P V
// written after the softmax of the next S lands before it, and the softmax no longer runs under
// the product (cuobjdump, kernels/tools/sass_wait_placement.py, H200 2026-12-02). A divergent branch
// on the softmax's row sums ends the block after every exponential (a convergence region the wait
// is not hoisted into, as the FP8 forward's kTrace stamps had it). It is never taken (a sum of
// exponentials is not below -1, and NaN compares false), so nothing is ever stored to sink.
__device__ __forceinline__ void fence_softmax(const float (&row_sum)[2], float* sink) {
  if (row_sum[0] < -1.f || row_sum[1] < -1.f) {
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    reinterpret_cast<long long*>(sink)[threadIdx.x] = t;
  }
}

// O's rows times the online softmax's factors. Once the running max settles it rarely moves: the
// rescale is skipped when no row of the warp moved.
template <int N>
__device__ __forceinline__ void rescale_rows(float (&o)[N], const float (&alpha)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h)
    if (__any_sync(0xffffffffu, alpha[h] != 1.f)) {
#pragma unroll
      for (int dt = 0; dt < N / 4; ++dt) {
        o[4 * dt + 2 * h] *= alpha[h];
        o[4 * dt + 2 * h + 1] *= alpha[h];
      }
    }
}

// Which Q tiles a block of a warp-specialized forward takes (attention_forward.cu version 6 says why
// each exists): kOneTile = one block per 128-row tile (blockIdx.x the tile, blockIdx.y the head);
// kStatic = persistent blocks walking the tiles blockIdx.x, + gridDim.x, ... head-major; kPaired =
// the same over pairs of equal work, a head's heaviest causal tile with its lightest; kSplitTail =
// kStatic's whole rounds, then the last round's tiles split along the keys over every block
// (sim/split_tail.h SplitTail; full mask only).
enum WsSched { kOneTile = 0, kStatic = 1, kPaired = 2, kSplitTail = 3 };

template <int SCHED, int BR>
struct QTileWalk {
  int q_tiles, head_slots, end;
  bool causal;
  __device__ __forceinline__ QTileWalk(int n, int bh, bool causal_)
      : q_tiles((n + BR - 1) / BR),
        // kPaired numbers each head's tiles in slots of two, padded to an even count
        head_slots(SCHED == kPaired ? q_tiles + (q_tiles & 1) : q_tiles),
        end(SCHED != kOneTile ? head_slots * bh : 1),
        causal(causal_) {}
  // this block's k-th slot
  __device__ __forceinline__ int slot(int k) const {
    if constexpr (SCHED == kOneTile) return k == 0 ? 0 : end;
    else if constexpr (SCHED == kStatic || SCHED == kSplitTail)
      return static_cast<int>(blockIdx.x) + k * static_cast<int>(gridDim.x);
    else return 2 * (static_cast<int>(blockIdx.x) + (k >> 1) * static_cast<int>(gridDim.x)) + (k & 1);
  }
  // the Q tile of slot t; false for kPaired's padding slot
  __device__ __forceinline__ bool coords(int t, int& q0, int& head) const {
    if constexpr (SCHED == kPaired) {
      head = t / head_slots;
      const int r = t % head_slots, p = r >> 1, heavy = q_tiles - 1 - p;
      if ((r & 1) && p == heavy) return false;
      q0 = ((r & 1) ? p : heavy) * BR;  // causal: the heavy tile first, then its light partner
    } else {
      constexpr bool kPersist = SCHED != kOneTile;
      const int qt = kPersist ? t % q_tiles : blockIdx.x;
      head = kPersist ? t / q_tiles : blockIdx.y;
      q0 = (causal ? q_tiles - 1 - qt : qt) * BR;  // heavy causal tiles first
    }
    return true;
  }
  // advances cursor k past padding slots; false once the block's slots are done
  __device__ __forceinline__ bool next(int& k, int& q0, int& head) const {
    for (;; ++k) {
      const int t = slot(k);
      if (t >= end) return false;
      if (coords(t, q0, head)) {
        ++k;
        return true;
      }
    }
  }
};

// One piece of a block's work: the Q tile at (q0, head) over its key tiles [kv_begin, kv_begin +
// kv_count); part < 0 writes O and logsumexp, else a partial to scratch slot `part`.
struct WorkItem {
  int q0, head, kv_begin, kv_count, part;
};

// kSplitTail's walk (full mask): the block's `whole` tiles, then the parts of its span of the tail
template <int BR>
struct SplitTailWalk {
  const SplitTail& plan;  // the kernel's __grid_constant__ parameter: its tables read in place
  int q_tiles;
  __device__ __forceinline__ SplitTailWalk(const SplitTail& p, int n) : plan(p), q_tiles((n + BR - 1) / BR) {}
  __device__ __forceinline__ void place(int unit, WorkItem& w) const {
    w.head = unit / q_tiles;
    w.q0 = unit % q_tiles * BR;
  }
  __device__ __forceinline__ bool next(int& k, WorkItem& w) const {
    const int b = static_cast<int>(blockIdx.x);
    if (k < plan.whole || plan.tail == 0) {
      const int unit = b + k * plan.blocks;
      if (unit >= plan.units) return false;
      place(unit, w);
      w.kv_begin = 0;
      w.kv_count = plan.kv_tiles;
      w.part = -1;
      ++k;
      return true;
    }
    if (b >= plan.tail_blocks) return false;
    const int lo = plan.begin[b], hi = plan.begin[b + 1];
    const int i = k - plan.whole, u = plan.first[b] + i;  // the i-th part of the span: tail tile u
    const int p = i == 0 ? lo : u * plan.kv_tiles;
    if (p >= hi) return false;
    const int end = min(hi, (u + 1) * plan.kv_tiles);
    place(plan.whole * plan.blocks + u, w);
    w.kv_begin = p - u * plan.kv_tiles;
    w.kv_count = end - p;
    w.part = w.kv_count == plan.kv_tiles ? -1 : u + b;
    ++k;
    return true;
  }
};

// The block's next piece of work under SCHED: a whole Q tile of `walk`, kv_tiles(q0, head) key tiles
// from the first, or (kSplitTail) the next part of its span
template <int SCHED, int BR, class KvTiles>
__device__ __forceinline__ bool next_work_item(const QTileWalk<SCHED, BR>& walk, const SplitTailWalk<BR>& split_walk,
                                               int& k, WorkItem& w, KvTiles kv_tiles) {
  if constexpr (SCHED == kSplitTail) {
    return split_walk.next(k, w);
  } else {
    if (!walk.next(k, w.q0, w.head)) return false;
    w.kv_begin = 0;
    w.kv_count = kv_tiles(w.q0, w.head);
    w.part = -1;
    return true;
  }
}

// kSplitTail: a split tail tile's parts into its O and logsumexp, as the ring merges its steps
// (weights 2^(lse_part - lse)); a tile one block took whole was written by that block. A warp per
// row at d = 128 (two rows at d = 64), four columns a lane, 16-byte loads.
template <class T, int D, int BR>
__global__ void __launch_bounds__(256) merge_split_parts(T* __restrict__ o, float* __restrict__ lse, int n,
                                                         const __grid_constant__ SplitTail split, const float* __restrict__ part_o,
                                                         const float* __restrict__ part_lse) {
  const int u = blockIdx.x;
  const int first = split.block_at(u * split.kv_tiles);
  const int last = split.block_at((u + 1) * split.kv_tiles - 1);
  if (first == last) return;
  const int q_tiles = (n + BR - 1) / BR, unit = split.whole * split.blocks + u;
  const int head = unit / q_tiles, q0 = unit % q_tiles * BR;
  constexpr int kLanesPerRow = D / 4, kRowsPerWarp = 32 / kLanesPerRow;
  const int lane = threadIdx.x % 32, col = lane % kLanesPerRow * 4;
  for (int r = threadIdx.x / 32 * kRowsPerWarp + lane / kLanesPerRow; r < BR && q0 + r < n;
       r += blockDim.x / 32 * kRowsPerWarp) {
    float m = -INFINITY;
    for (int b = first; b <= last; ++b) m = fmaxf(m, part_lse[(u + b) * BR + r]);
    float sum = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
    if (m != -INFINITY)
      for (int b = first; b <= last; ++b) {
        const float weight = exp2f(part_lse[(u + b) * BR + r] - m);
        const float4 x = *reinterpret_cast<const float4*>(part_o + (static_cast<std::size_t>(u + b) * BR + r) * D + col);
        sum += weight;
        acc[0] += weight * x.x;
        acc[1] += weight * x.y;
        acc[2] += weight * x.z;
        acc[3] += weight * x.w;
      }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const std::size_t row = static_cast<std::size_t>(head) * n + q0 + r;
    *reinterpret_cast<uint2*>(o + row * D + col) =
        make_uint2(mma::pack2<T>(acc[0] * inv, acc[1] * inv), mma::pack2<T>(acc[2] * inv, acc[3] * inv));
    if (col == 0) lse[row] = sum > 0.f ? (m + log2f(sum)) * 0.69314718055994531f : -INFINITY;
  }
}

// kSplitTail's scratch: every part's fp32 O, then their logsumexps (log2 units), in stream order
// from flashsim's pool (kernels/cuda_util.cuh); nothing where the plan splits nothing.
struct SplitScratch {
  float* part_o = nullptr;
  float* part_lse = nullptr;
};
template <int D, int BR>
SplitScratch split_scratch(const SplitTail& split, cudaStream_t stream) {
  SplitScratch s;
  if (split.tail == 0) return s;
  const std::size_t parts = static_cast<std::size_t>(split.slots());
  CUDA_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&s.part_o), parts * BR * (D + 1) * sizeof(float),
                                     scratch_pool(), stream));
  s.part_lse = s.part_o + parts * BR * D;
  return s;
}
// after the forward: the split tiles' parts merged into O and logsumexp, the scratch returned
template <class T, int D, int BR>
void merge_split(T* o, float* lse, int n, const SplitTail& split, const SplitScratch& s, cudaStream_t stream) {
  if (!s.part_o) return;
  merge_split_parts<T, D, BR><<<split.tail, 256, 0, stream>>>(o, lse, n, split, s.part_o, s.part_lse);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(s.part_o, stream));
}

}  // namespace flashsim::gpu::tile

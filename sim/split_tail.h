// The persistent full-mask forward's split tail: which key tiles of which Q tiles each block takes.
// Plain C++ shared by the kernels (kernels/attention_tile.cuh walks it on the device) and the time
// model (sim/gpu_time.cpp lays the same parts out over the SMs).
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__CUDACC__)
#define FLASHSIM_HOST_DEVICE __host__ __device__
#else
#define FLASHSIM_HOST_DEVICE
#endif

namespace flashsim::sim {

// The persistent full-mask forward's last round, split along the keys (Stream-K's hybrid, Osama
// et al. 2023). With U Q tiles on B blocks, whole-tile blocks take U / B or U / B + 1 tiles: the
// last round leaves SMs idle (2048 tiles on 132 SMs: 68 do 16, 64 do 15, 3 % of the clocks, H200
// 2026-12-02). Split: every block takes `whole` = U / B tiles, then the `tail` = U % B tiles' key
// tiles are dealt out in even, contiguous spans over `tail_blocks` blocks; a span that covers only
// part of a Q tile writes a partial O (fp32, normalized) and logsumexp to a scratch slot, and a
// merge kernel combines a tile's partials as the ring merges its steps.
constexpr int kMaxSplitBlocks = 160;  // more SMs than this: no split
struct SplitTail {
  int units = 0;        // Q tiles, all heads
  int kv_tiles = 0;     // key tiles per Q tile
  int blocks = 0;       // the persistent grid
  int whole = 0;        // whole Q tiles every block takes first (as kStatic does)
  int tail = 0;         // Q tiles left after them; 0: no split, the blocks walk the tiles as kStatic
  int tail_blocks = 0;  // blocks that share the tail's key tiles
  // block b's key tiles of the tail, [begin[b], begin[b + 1]), numbered tile-major, and the tail tile
  // begin[b] falls in: worked out on the host, so that the device walk divides nothing (kept
  // uniform; what had taken the kernels' wgmma descriptors off the uniform registers was a
  // branch with warp shuffles, kernels/RESULTS.md "The last round split along the keys")
  int begin[kMaxSplitBlocks + 1] = {};
  int first[kMaxSplitBlocks + 1] = {};
  // 32-bit arithmetic: the plan splits only where span() * tail_blocks fits in an int
  FLASHSIM_HOST_DEVICE int span() const { return tail * kv_tiles; }
  FLASHSIM_HOST_DEVICE int start(int b) const { return begin[b]; }
  // the block whose span holds tail key tile p (the largest b with start(b) <= p)
  FLASHSIM_HOST_DEVICE int block_at(int p) const { return ((p + 1) * tail_blocks + span() - 1) / span() - 1; }
  // tail tile u's part in block b goes to slot u + b: parts are ordered both by tile and by block,
  // so no two share a slot
  int slots() const { return tail > 0 ? tail + tail_blocks - 1 : 0; }
};

// A span is at least kMinSplitKeyTiles key tiles (each part costs a pipeline fill and drain, and
// its partial O's write and read); the split is taken only where it spreads the tail over more
// blocks than it has tiles. allow = false: whole tiles only (kStatic's walk).
constexpr int kMinSplitKeyTiles = 4;

// The launchers' default (kernels/launch_order.h; the time model's too): the split at d = 128 from
// N = 8192 up, where it measured 1-1.5 % fewer clocks than whole tiles (H100 2026-12-07: 16 heads at
// N = 16384, 2048 tiles, the last round 68 of 132 SMs). Not below: each part's fill, drain and merge
// cost more than the idle SMs save (2-11 % slower at N <= 4096, H200 2026-12-02); not at d = 64,
// whose 192-row tiles left the last round 85 % full at the rows measured (32 heads at N = 16384:
// 1.3 % more clocks split). kernels/RESULTS.md "The split tail as the default".
constexpr std::int64_t kSplitTailFromN = 8192;
FLASHSIM_HOST_DEVICE constexpr bool split_tail_by_default(std::int64_t n, std::int64_t d) {
  return d == 128 && n >= kSplitTailFromN;
}
inline SplitTail split_tail_plan(std::int64_t q_tiles_total, std::int64_t kv_tiles, int sms, bool allow = true) {
  SplitTail p;
  p.units = static_cast<int>(q_tiles_total);
  p.kv_tiles = static_cast<int>(kv_tiles);
  p.blocks = static_cast<int>(std::min<std::int64_t>(q_tiles_total, sms));
  p.whole = static_cast<int>(q_tiles_total / p.blocks);
  if (!allow) return p;
  const int tail = static_cast<int>(q_tiles_total % sms);
  if (tail == 0 || kv_tiles < 2 || sms > kMaxSplitBlocks ||
      static_cast<std::int64_t>(tail) * kv_tiles * (sms + 1) >= (std::int64_t{1} << 31))
    return p;
  const int tail_blocks = static_cast<int>(std::min<std::int64_t>(sms, tail * kv_tiles / kMinSplitKeyTiles));
  if (tail_blocks <= tail) return p;
  p.blocks = sms;
  p.whole = static_cast<int>(q_tiles_total / sms);
  p.tail = tail;
  p.tail_blocks = tail_blocks;
  for (int b = 0; b <= tail_blocks; ++b) {
    p.begin[b] = p.span() * b / tail_blocks;
    p.first[b] = p.begin[b] / p.kv_tiles;
  }
  return p;
}

}  // namespace flashsim::sim

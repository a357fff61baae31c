// Launch-order choices shared by the kernels and the L2 model's prediction of them (plain C++).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "sim/split_tail.h"

namespace flashsim::gpu {

// bwd-mma runs its K/V-tile blocks in groups of heads, the K/V tile outer inside a group, so
// that a group's Q, dO and fp32 dQ accumulator stay in L2 while all its blocks sweep them. The
// group holds as many heads as fit in about 20 MB (a margin under the 50 MB of an H100: the
// hardware L2 is two partitions, so far less than its size holds data shared by every SM).
// FLASHSIM_BWD_HEAD_GROUP=N overrides it (an experiment knob: the prediction follows it too).
inline int bwd_mma_heads_per_group(std::int64_t n, std::int64_t d, int elem_bytes, std::int64_t bh) {
  if (const char* env = std::getenv("FLASHSIM_BWD_HEAD_GROUP")) {
    const long v = std::strtol(env, nullptr, 10);
    if (v > 0) return static_cast<int>(std::min<std::int64_t>(v, bh));
  }
  const auto head_bytes = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(d) *
                          (2 * static_cast<std::uint64_t>(elem_bytes) + 4);  // Q, dO and the dQ accumulator
  return static_cast<int>(std::clamp<std::uint64_t>((20u << 20) / head_bytes, 1, static_cast<std::uint64_t>(bh)));
}

// The fast forward's Q-tile rows and block order at head dimension d (attention_forward_fast's
// launcher and the L2 model's prediction of it). Chosen by measurement on an H100
// (kernels/RESULTS.md, 2026-11-25): d = 128, version 6 on 128-row tiles, one persistent block per
// SM, causal tiles in pairs of equal work; d = 64, version 6 with three consumer warpgroups on
// 192-row tiles, persistent, where N is long enough that the last tile's padding costs little
// (full mask from N = 2048, causal from N = 4096; below that version 5's 64-row tiles, one block
// each, three per SM, are as fast or faster). The causal bound was 8192 until version 6 rescaled O
// under S_j: then it ran N = 4096 causal 6 % faster than version 5 (H200, 2026-12-01, two runs).
struct AttnFwdTiling {
  int br;            // Q-tile rows
  int bc;            // K/V-tile rows
  bool persistent;   // one block per SM walking the tiles in order
  bool paired;       // causal: a head's heaviest tile with its lightest, then the next pair
};
inline AttnFwdTiling attention_forward_fast_tiling(std::int64_t n, std::int64_t d, bool causal) {
  if (d == 128) return {128, 128, true, causal};
  if (n >= (causal ? 4096 : 2048)) return {192, 128, true, causal};
  return {64, 128, false, false};
}

// The full-mask forward's split tail (sim/split_tail.h): the launchers take the kSplitTail kernels
// at d = 128 from N = 8192 up (sim::split_tail_by_default, which the time model shares). FLASHSIM_FWD_SPLIT=1
// forces the split at every N, =0 forces whole tiles (kStatic's kernels): the experiment knobs.
using sim::SplitTail;
using sim::split_tail_plan;
inline bool fwd_split_enabled(std::int64_t n, std::int64_t d) {
  const char* env = std::getenv("FLASHSIM_FWD_SPLIT");
  if (env && *env) return std::strtol(env, nullptr, 10) == 1;
  return sim::split_tail_by_default(n, d);
}

}  // namespace flashsim::gpu

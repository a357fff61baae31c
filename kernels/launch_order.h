// Launch-order choices shared by the kernels and the L2 model's prediction of them (plain C++).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

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

}  // namespace flashsim::gpu

// Where one consumer's tiles start inside another's (probe_consumer_loop's "tile stamps"): 0 when the
// two run in lockstep, 0.5 when they alternate. Host code, so that the CPU tests check it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace flashsim::gpu::probe {

// Appends, for each of b's stamps that falls inside one of a's tiles, how far into it (0..1). a and b
// hold n clock stamps each, increasing: the starts of consecutive tiles.
inline void add_tile_phases(const long long* a, const long long* b, int n, std::vector<double>& out) {
  int k = 0;
  for (int i = 0; i < n; ++i) {
    while (k + 1 < n && a[k + 1] <= b[i]) ++k;
    if (k + 1 >= n || b[i] < a[k]) continue;
    out.push_back(static_cast<double>(b[i] - a[k]) / static_cast<double>(a[k + 1] - a[k]));
  }
}

// The lower quartile, the median and the upper quartile; zeros when there is nothing.
inline std::array<double, 3> quartiles(std::vector<double> v) {
  if (v.empty()) return {0, 0, 0};
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]; };
  return {at(0.25), at(0.5), at(0.75)};
}

}  // namespace flashsim::gpu::probe

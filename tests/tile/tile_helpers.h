// Shared by the tile tests: a float64 attention reference and a runner for generated programs.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/machine.h"
#include "sim/traffic.h"

namespace tiletest {

using Mat = std::vector<double>;  // row-major

inline Mat random_mat(std::int64_t rows, std::int64_t cols, std::uint32_t seed, double scale = 1.0) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Mat m(static_cast<std::size_t>(rows * cols));
  for (auto& v : m) v = u(g) * scale;
  return m;
}

// Closed-form attention in float64: S = Q K^T, masked bottom-right causal, P = softmax(S),
// O = P V, L = logsumexp; gradients dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dP * P)),
// dQ = dS K, dK = dS^T Q. Rows with no visible key: O = 0, L = -inf, zero gradients.
struct Attention {
  Mat O, L, dQ, dK, dV;
};

inline Attention attention_reference(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, std::int64_t nq,
                                     std::int64_t nk, std::int64_t d, bool causal) {
  const double ninf = -std::numeric_limits<double>::infinity();
  Attention r;
  r.O.assign(static_cast<std::size_t>(nq * d), 0.0);
  r.L.assign(static_cast<std::size_t>(nq), ninf);
  r.dQ.assign(static_cast<std::size_t>(nq * d), 0.0);
  r.dK.assign(static_cast<std::size_t>(nk * d), 0.0);
  r.dV.assign(static_cast<std::size_t>(nk * d), 0.0);
  auto at = [d](const Mat& m, std::int64_t i, std::int64_t k) { return m[static_cast<std::size_t>(i * d + k)]; };
  for (std::int64_t i = 0; i < nq; ++i) {
    std::vector<double> s(static_cast<std::size_t>(nk), ninf);
    double mx = ninf;
    for (std::int64_t j = 0; j < nk; ++j) {
      if (causal && j > i + (nk - nq)) continue;
      double acc = 0;
      for (std::int64_t k = 0; k < d; ++k) acc += at(Q, i, k) * at(K, j, k);
      s[static_cast<std::size_t>(j)] = acc;
      mx = std::max(mx, acc);
    }
    if (mx == ninf) continue;  // no visible key
    double l = 0;
    for (double v : s) l += v == ninf ? 0.0 : std::exp(v - mx);
    r.L[static_cast<std::size_t>(i)] = mx + std::log(l);
    std::vector<double> p(static_cast<std::size_t>(nk));
    for (std::int64_t j = 0; j < nk; ++j) p[static_cast<std::size_t>(j)] = s[static_cast<std::size_t>(j)] == ninf ? 0.0 : std::exp(s[static_cast<std::size_t>(j)] - mx) / l;
    for (std::int64_t j = 0; j < nk; ++j)
      for (std::int64_t k = 0; k < d; ++k) r.O[static_cast<std::size_t>(i * d + k)] += p[static_cast<std::size_t>(j)] * at(V, j, k);
    if (dO.empty()) continue;
    std::vector<double> dp(static_cast<std::size_t>(nk), 0.0);
    double D = 0;
    for (std::int64_t j = 0; j < nk; ++j) {
      for (std::int64_t k = 0; k < d; ++k) dp[static_cast<std::size_t>(j)] += at(dO, i, k) * at(V, j, k);
      D += dp[static_cast<std::size_t>(j)] * p[static_cast<std::size_t>(j)];
    }
    for (std::int64_t j = 0; j < nk; ++j) {
      double pj = p[static_cast<std::size_t>(j)];
      double ds = pj * (dp[static_cast<std::size_t>(j)] - D);
      for (std::int64_t k = 0; k < d; ++k) {
        r.dV[static_cast<std::size_t>(j * d + k)] += pj * at(dO, i, k);
        r.dQ[static_cast<std::size_t>(i * d + k)] += ds * at(K, j, k);
        r.dK[static_cast<std::size_t>(j * d + k)] += ds * at(Q, i, k);
      }
    }
  }
  return r;
}

// Runs a program with values and the given inputs; returns the machine for inspection.
inline flashsim::sim::Machine run_values(flashsim::isa::Program prog, std::map<std::string, Mat> inputs) {
  flashsim::sim::MachineOptions o;
  o.history = false;
  o.inputs = std::move(inputs);
  flashsim::sim::Machine m(std::move(prog), o);
  m.run();
  return m;
}

inline const Mat& values(const flashsim::sim::Machine& m, const std::string& name) {
  auto id = m.program().find_array(name);
  if (!id) throw std::runtime_error("no array " + name);
  return m.array(*id).values;
}

// Largest |a - b| relative to max(1, |b|); equal infinities count as 0.
inline double max_error(const Mat& a, const Mat& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isnan(a[i]) || std::isnan(b[i])) return std::numeric_limits<double>::infinity();
    e = std::max(e, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i])));
  }
  return e;
}

}  // namespace tiletest

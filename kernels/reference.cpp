#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace flashsim::gpu::ref {

std::uint16_t float_to_bf16_bits(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  std::uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  return static_cast<std::uint16_t>(bits >> 16);
}

float bf16_bits_to_float(std::uint16_t b) {
  std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

float bf16_round(float x) { return bf16_bits_to_float(float_to_bf16_bits(x)); }

double rel_error(const float* out, const float* ref, std::size_t n) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    double d = static_cast<double>(out[i]) - static_cast<double>(ref[i]);
    num += d * d;
    den += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

double rel_error(const std::vector<float>& out, const std::vector<float>& ref) {
  if (out.size() != ref.size()) return std::numeric_limits<double>::infinity();
  return rel_error(out.data(), ref.data(), out.size());
}

void matmul_rows(const float* a, const float* b, std::int64_t n, std::int64_t k,
                 const std::vector<std::int64_t>& rows, float* c_out) {
  std::vector<double> acc(static_cast<std::size_t>(n));
  for (std::size_t ri = 0; ri < rows.size(); ++ri) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const float* arow = a + rows[ri] * k;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const double av = arow[kk];
      const float* brow = b + kk * n;
      for (std::int64_t j = 0; j < n; ++j) acc[j] += av * brow[j];
    }
    for (std::int64_t j = 0; j < n; ++j) c_out[ri * n + j] = static_cast<float>(acc[j]);
  }
}

void softmax_row(const float* x, float* y, std::int64_t cols) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < cols; ++j) m = std::max(m, static_cast<double>(x[j]));
  double l = 0.0;
  for (std::int64_t j = 0; j < cols; ++j) l += std::exp(static_cast<double>(x[j]) - m);
  for (std::int64_t j = 0; j < cols; ++j) y[j] = static_cast<float>(std::exp(static_cast<double>(x[j]) - m) / l);
}

namespace {

// Row i of P = softmax(scale * q_i K^T) in double, masked keys get 0. Returns the logsumexp.
double prob_row(const float* q, const float* k, std::int64_t n, std::int64_t d, bool causal, std::int64_t i,
                std::vector<double>& p) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const std::int64_t last = causal ? i : n - 1;
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < n; ++j) {
    if (j > last) {
      p[j] = 0.0;
      continue;
    }
    double s = 0.0;
    for (std::int64_t c = 0; c < d; ++c) s += static_cast<double>(q[i * d + c]) * k[j * d + c];
    p[j] = s * scale;
    m = std::max(m, p[j]);
  }
  double l = 0.0;
  for (std::int64_t j = 0; j <= last; ++j) {
    p[j] = std::exp(p[j] - m);
    l += p[j];
  }
  for (std::int64_t j = 0; j <= last; ++j) p[j] /= l;
  return m + std::log(l);
}

}  // namespace

void attention_forward(const float* q, const float* k, const float* v, std::int64_t n, std::int64_t d,
                       bool causal, float* o, float* lse) {
  std::vector<double> p(static_cast<std::size_t>(n)), acc(static_cast<std::size_t>(d));
  for (std::int64_t i = 0; i < n; ++i) {
    double l = prob_row(q, k, n, d, causal, i, p);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int64_t j = 0; j < n; ++j)
      if (p[j] != 0.0)
        for (std::int64_t c = 0; c < d; ++c) acc[c] += p[j] * v[j * d + c];
    for (std::int64_t c = 0; c < d; ++c) o[i * d + c] = static_cast<float>(acc[c]);
    if (lse) lse[i] = static_cast<float>(l);
  }
}

void attention_backward(const float* q, const float* k, const float* v, const float* dout, std::int64_t n,
                        std::int64_t d, bool causal, float* dq, float* dk, float* dv) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> p(static_cast<std::size_t>(n)), dp(static_cast<std::size_t>(n));
  std::vector<double> o(static_cast<std::size_t>(d));
  std::vector<double> gk(static_cast<std::size_t>(n * d), 0.0), gv(static_cast<std::size_t>(n * d), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    prob_row(q, k, n, d, causal, i, p);
    const std::int64_t last = causal ? i : n - 1;
    // o_i and D_i = dO_i . o_i
    std::fill(o.begin(), o.end(), 0.0);
    for (std::int64_t j = 0; j <= last; ++j)
      for (std::int64_t c = 0; c < d; ++c) o[c] += p[j] * v[j * d + c];
    double big_d = 0.0;
    for (std::int64_t c = 0; c < d; ++c) big_d += static_cast<double>(dout[i * d + c]) * o[c];
    std::vector<double> gq(static_cast<std::size_t>(d), 0.0);
    for (std::int64_t j = 0; j <= last; ++j) {
      double dpij = 0.0;
      for (std::int64_t c = 0; c < d; ++c) dpij += static_cast<double>(dout[i * d + c]) * v[j * d + c];
      const double ds = p[j] * (dpij - big_d);
      for (std::int64_t c = 0; c < d; ++c) {
        gv[j * d + c] += p[j] * dout[i * d + c];
        gk[j * d + c] += ds * scale * q[i * d + c];
        gq[c] += ds * scale * k[j * d + c];
      }
    }
    for (std::int64_t c = 0; c < d; ++c) dq[i * d + c] = static_cast<float>(gq[c]);
  }
  for (std::int64_t x = 0; x < n * d; ++x) {
    dk[x] = static_cast<float>(gk[x]);
    dv[x] = static_cast<float>(gv[x]);
  }
}

void attention_forward_rows(const float* q, const float* k, const float* v, std::int64_t n, std::int64_t d,
                            bool causal, const std::vector<std::int64_t>& rows, float* o_out, float* lse_out) {
  std::vector<double> p(static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::int64_t i = rows[r];
    const double l = prob_row(q, k, n, d, causal, i, p);
    for (std::int64_t c = 0; c < d; ++c) {
      double acc = 0.0;
      for (std::int64_t j = 0; j < n; ++j)
        if (p[j] != 0.0) acc += p[j] * v[j * d + c];
      o_out[r * d + c] = static_cast<float>(acc);
    }
    if (lse_out) lse_out[r] = static_cast<float>(l);
  }
}

void attention_backward_rows(const float* q, const float* k, const float* v, const float* o, const float* dout,
                             const float* lse, std::int64_t n, std::int64_t d, bool causal,
                             const std::vector<std::int64_t>& rows, float* dq_out, float* dk_out, float* dv_out) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto dot = [d](const float* a, const float* b) {
    double s = 0.0;
    for (std::int64_t c = 0; c < d; ++c) s += static_cast<double>(a[c]) * b[c];
    return s;
  };
  std::vector<double> big_d(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) big_d[i] = dot(dout + i * d, o + i * d);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::int64_t x = rows[r];
    std::vector<double> gq(static_cast<std::size_t>(d), 0.0), gk(gq), gv(gq);
    for (std::int64_t j = 0; j < n && (!causal || j <= x); ++j) {  // dQ row x: keys j seen by query x
      const double p = std::exp(scale * dot(q + x * d, k + j * d) - lse[x]);
      const double ds = p * (dot(dout + x * d, v + j * d) - big_d[x]);
      for (std::int64_t c = 0; c < d; ++c) gq[c] += ds * scale * k[j * d + c];
    }
    for (std::int64_t i = causal ? x : 0; i < n; ++i) {  // dK, dV row x: queries i that see key x
      const double p = std::exp(scale * dot(q + i * d, k + x * d) - lse[i]);
      const double ds = p * (dot(dout + i * d, v + x * d) - big_d[i]);
      for (std::int64_t c = 0; c < d; ++c) {
        gk[c] += ds * scale * q[i * d + c];
        gv[c] += p * dout[i * d + c];
      }
    }
    for (std::int64_t c = 0; c < d; ++c) {
      dq_out[r * d + c] = static_cast<float>(gq[c]);
      dk_out[r * d + c] = static_cast<float>(gk[c]);
      dv_out[r * d + c] = static_cast<float>(gv[c]);
    }
  }
}

std::vector<std::int64_t> pick_indices(std::int64_t count, std::int64_t max_pick) {
  std::vector<std::int64_t> out;
  if (count <= 0) return out;
  if (count <= max_pick) {
    for (std::int64_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  if (max_pick < 2) return {0};
  for (std::int64_t t = 0; t < max_pick; ++t) out.push_back(t * (count - 1) / (max_pick - 1));
  return out;
}

}  // namespace flashsim::gpu::ref

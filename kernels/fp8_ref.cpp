#include "kernels/fp8_ref.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace flashsim::gpu::fp8 {

std::uint8_t float_to_e4m3(float x) {
  if (std::isnan(x)) return 0x7F;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  double a = std::fabs(static_cast<double>(x));
  if (a >= kE4m3Max) return sign | 0x7E;  // satfinite
  if (a < std::ldexp(1.0, -6)) {         // subnormal: steps of 2^-9 (8 rounds up into the first normal)
    const double q = std::nearbyint(a * 512.0);
    return sign | static_cast<std::uint8_t>(q);
  }
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  int exp = e - 1;                     // a = (2m) 2^exp, 2m in [1, 2)
  double q = std::nearbyint((2.0 * m - 1.0) * 8.0);
  if (q == 8.0) {
    q = 0.0;
    ++exp;
  }
  if (exp > 8 || (exp == 8 && q > 6.0)) return sign | 0x7E;
  return sign | static_cast<std::uint8_t>(((exp + 7) << 3) | static_cast<int>(q));
}

float e4m3_to_float(std::uint8_t code) {
  const int exp = (code >> 3) & 15, man = code & 7;
  if (exp == 15 && man == 7) return std::numeric_limits<float>::quiet_NaN();
  const double mag = exp == 0 ? std::ldexp(man, -9) : std::ldexp(8 + man, exp - 10);
  return static_cast<float>(code & 0x80 ? -mag : mag);
}

int vt_key_of_position(int p) {
  if (p < 0 || p >= kKeyGroup) throw std::out_of_range("vt_key_of_position: p outside 0..31");
  // position 16h + 4t + i is thread t's byte i of the k-half h: its accumulator columns 2t, 2t + 1,
  // 2t + 8, 2t + 9 of that 16-key half
  return (p & 16) + 2 * ((p & 15) >> 2) + (p & 1) + 8 * ((p >> 1) & 1);
}

namespace {
std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

float hadamard_sign(std::uint64_t seed, int i) {
  return (splitmix(seed * 0x100000001b3ULL + static_cast<std::uint64_t>(i)) >> 63) ? -1.f : 1.f;
}

namespace {
void require_power_of_two(std::size_t d, const char* who) {
  if (d == 0 || (d & (d - 1)) != 0) throw std::invalid_argument(std::string(who) + ": d must be a power of two");
}
// x <- x H, H the normalized Walsh-Hadamard matrix (its own inverse); d a power of two
void walsh_hadamard(std::vector<double>& x) {
  const std::size_t d = x.size();
  for (std::size_t h = 1; h < d; h <<= 1)
    for (std::size_t i = 0; i < d; ++i)
      if (!(i & h)) {
        const double a = x[i], b = x[i | h];
        x[i] = a + b;
        x[i | h] = a - b;
      }
  const double norm = 1.0 / std::sqrt(static_cast<double>(d));
  for (auto& e : x) e *= norm;
}
}  // namespace

void hadamard_row(std::vector<double>& x, std::uint64_t seed) {
  require_power_of_two(x.size(), "hadamard_row");
  for (std::size_t i = 0; i < x.size(); ++i) x[i] *= hadamard_sign(seed, static_cast<int>(i));
  walsh_hadamard(x);
}

void hadamard_row_inverse(std::vector<double>& x, std::uint64_t seed) {
  require_power_of_two(x.size(), "hadamard_row_inverse");
  walsh_hadamard(x);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] *= hadamard_sign(seed, static_cast<int>(i));
}

namespace {
std::size_t at(const Dequantized& x, int h, int i, int c) {
  return (static_cast<std::size_t>(h) * x.n + i) * x.d + c;
}
int q_blocks(int n) { return (n + kQBlockRows - 1) / kQBlockRows; }
int k_blocks(int n) { return (n + kKBlockRows - 1) / kKBlockRows; }
}  // namespace

float Dequantized::q(int h, int i, int c) const { return q8[at(*this, h, i, c)] * q_scale[h * q_blocks(n) + i / kQBlockRows]; }
float Dequantized::k(int h, int i, int c) const { return k8[at(*this, h, i, c)] * k_scale[h * k_blocks(n) + i / kKBlockRows]; }
float Dequantized::v(int h, int i, int c) const { return v8[at(*this, h, i, c)] * v_scale[h]; }

void attention_fp8_emulated_rows(const Dequantized& x, int head, bool causal, int bc,
                                 const std::vector<std::int64_t>& rows, float* o, float* lse, float* s_abs) {
  if (bc < kKBlockRows || bc % kKBlockRows != 0)
    throw std::invalid_argument("attention_fp8_emulated_rows: bc must be a positive multiple of kKBlockRows");
  const int n = x.n, d = x.d;
  const double scale_log2 = 1.4426950408889634 / std::sqrt(static_cast<double>(d));
  constexpr double kShift = 8.0;  // P enters P V as 2^8 P
  std::vector<double> acc(d), s(bc);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int i = static_cast<int>(rows[r]);
    const double sq = x.q_scale[head * q_blocks(n) + i / kQBlockRows];
    double m = -INFINITY, l = 0.0, abs_max = 0.0;
    std::fill(acc.begin(), acc.end(), 0.0);
    // the kernel's tiles: a 128-row Q tile (two 64-row halves) sees keys < min(n, its end) when causal
    const int q_tile_end = (i / 128 + 1) * 128;
    const int visible = causal ? std::min(n, q_tile_end) : n;
    for (int j0 = 0; j0 < visible; j0 += bc) {
      double mx = -INFINITY;
      for (int kk = 0; kk < bc; ++kk) {
        const int key = j0 + kk;
        if (key >= n || (causal && key > i)) {
          s[kk] = -INFINITY;
          continue;
        }
        double dot = 0.0, abs_dot = 0.0;
        for (int c = 0; c < d; ++c) {
          const double prod = static_cast<double>(x.q8[at(x, head, i, c)]) * x.k8[at(x, head, key, c)];
          dot += prod;
          abs_dot += std::fabs(prod);
        }
        const double sk = x.k_scale[head * k_blocks(n) + key / kKBlockRows];
        s[kk] = dot * sq * sk * scale_log2;
        abs_max = std::max(abs_max, abs_dot * sq * sk / std::sqrt(static_cast<double>(d)));
        mx = std::max(mx, s[kk]);
      }
      const double m_new = std::max(m, mx);
      const double base = m_new == -INFINITY ? 0.0 : m_new;
      const double alpha = std::exp2(m - base);
      l *= alpha;
      for (auto& a : acc) a *= alpha;
      for (int kk = 0; kk < bc; ++kk) {
        if (s[kk] == -INFINITY) continue;
        const double p = std::exp2(s[kk] - base + kShift);
        l += p;
        const double pq = e4m3_to_float(float_to_e4m3(static_cast<float>(p)));
        for (int c = 0; c < d; ++c) acc[c] += pq * x.v8[at(x, head, j0 + kk, c)];
      }
      m = m_new;
    }
    for (int c = 0; c < d; ++c) o[r * d + c] = l > 0.0 ? static_cast<float>(acc[c] * x.v_scale[head] / l) : 0.f;
    lse[r] = l > 0.0 ? static_cast<float>((m + std::log2(l) - kShift) * 0.6931471805599453) : -INFINITY;
    if (s_abs) s_abs[r] = static_cast<float>(abs_max);
  }
}

namespace {
// f on each row of d entries of x, in place
template <class F>
void each_row(std::vector<double>& x, int d, F&& f) {
  std::vector<double> row(d);
  for (std::size_t off = 0; off + d <= x.size(); off += static_cast<std::size_t>(d)) {
    std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(off), d, row.begin());
    f(row);
    std::copy(row.begin(), row.end(), x.begin() + static_cast<std::ptrdiff_t>(off));
  }
}

// x (n x d) through the transform (rows: x D H) and e4m3 with one scale, as asked
std::vector<double> prepare(std::vector<double> x, int d, bool transform, bool round, std::uint64_t seed) {
  if (transform) each_row(x, d, [&](std::vector<double>& row) { hadamard_row(row, seed); });
  if (round) {
    double amax = 0;
    for (double e : x) amax = std::max(amax, std::fabs(e));
    const double scale = amax > 0 ? amax / kE4m3Max : 1.0;
    for (auto& e : x) e = e4m3_to_float(float_to_e4m3(static_cast<float>(e / scale))) * scale;
  }
  return x;
}

// O's rows of softmax(q k^T / sqrt(d)) v, P rounded as the kernel rounds it when asked
std::vector<double> attention_rows(const std::vector<double>& q, const std::vector<double>& k,
                                   const std::vector<double>& v, int n, int d, const std::vector<int>& rows,
                                   bool round_p) {
  std::vector<double> o, s(n), acc(d);
  for (int i : rows) {
    double m = -INFINITY;
    for (int j = 0; j < n; ++j) {
      double dot = 0;
      for (int c = 0; c < d; ++c) dot += q[static_cast<std::size_t>(i) * d + c] * k[static_cast<std::size_t>(j) * d + c];
      s[j] = dot / std::sqrt(static_cast<double>(d));
      m = std::max(m, s[j]);
    }
    double l = 0;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int j = 0; j < n; ++j) {
      double p = std::exp(s[j] - m);
      l += p;
      if (round_p) p = e4m3_to_float(float_to_e4m3(static_cast<float>(256.0 * p))) / 256.0;
      for (int c = 0; c < d; ++c) acc[c] += p * v[static_cast<std::size_t>(j) * d + c];
    }
    for (int c = 0; c < d; ++c) o.push_back(acc[c] / l);
  }
  return o;
}
}  // namespace

double fp8_rounding_error(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                          int n, int d, const Roundings& r, const std::vector<int>& rows, std::uint64_t seed) {
  const std::size_t elems = static_cast<std::size_t>(n) * d;
  if (n < 1 || d < 1 || q.size() != elems || k.size() != elems || v.size() != elems)
    throw std::invalid_argument("fp8_rounding_error: q, k, v must be n x d");
  for (int i : rows)
    if (i < 0 || i >= n) throw std::invalid_argument("fp8_rounding_error: a row outside 0..n-1");
  const auto exact = attention_rows(q, k, v, n, d, rows, false);
  auto o = attention_rows(prepare(q, d, r.hadamard_qk, r.qk, seed), prepare(k, d, r.hadamard_qk, r.qk, seed),
                          prepare(v, d, r.hadamard_v, r.v, seed), n, d, rows, r.p);
  if (r.hadamard_v) each_row(o, d, [&](std::vector<double>& row) { hadamard_row_inverse(row, seed); });
  double sq = 0;
  for (std::size_t i = 0; i < o.size(); ++i) sq += (o[i] - exact[i]) * (o[i] - exact[i]);
  return o.empty() ? 0.0 : std::sqrt(sq / o.size());
}

int q_scale_blocks(int n) { return (n + kQBlockRows - 1) / kQBlockRows; }
int k_scale_blocks(int n) { return (n + kKBlockRows - 1) / kKBlockRows; }

Dequantized dequantize_operands(int bh, int n, int d, const std::vector<std::uint8_t>& q,
                                const std::vector<std::uint8_t>& k, const std::vector<std::uint8_t>& vt,
                                std::vector<float> q_scale, std::vector<float> k_scale, std::vector<float> v_scale) {
  const std::size_t elems = static_cast<std::size_t>(bh) * n * d;
  const int n_keys = padded_keys(n);
  if (q.size() != elems || k.size() != elems || vt.size() != static_cast<std::size_t>(bh) * d * n_keys ||
      q_scale.size() != static_cast<std::size_t>(bh) * q_scale_blocks(n) ||
      k_scale.size() != static_cast<std::size_t>(bh) * k_scale_blocks(n) || v_scale.size() != static_cast<std::size_t>(bh))
    throw std::invalid_argument("dequantize_operands: sizes do not match bh, n, d");
  Dequantized x;
  x.bh = bh;
  x.n = n;
  x.d = d;
  auto decode = [](const std::vector<std::uint8_t>& b) {
    std::vector<float> out(b.size());
    for (std::size_t i = 0; i < b.size(); ++i) out[i] = e4m3_to_float(b[i]);
    return out;
  };
  x.q8 = decode(q);
  x.k8 = decode(k);
  x.v8.assign(elems, 0.f);
  for (int h = 0; h < bh; ++h)
    for (int c = 0; c < d; ++c)
      for (int pos = 0; pos < n_keys; ++pos) {
        const int key = pos - pos % kKeyGroup + vt_key_of_position(pos % kKeyGroup);
        const float val = e4m3_to_float(vt[(static_cast<std::size_t>(h) * d + c) * n_keys + pos]);
        if (key < n) x.v8[(static_cast<std::size_t>(h) * n + key) * d + c] = val;
        else if (val != 0.f) x.v8.assign(elems, std::numeric_limits<float>::quiet_NaN());  // padding keys must be zero
      }
  x.q_scale = std::move(q_scale);
  x.k_scale = std::move(k_scale);
  x.v_scale = std::move(v_scale);
  return x;
}

double OutputErrors::worst_fraction() const {
  const double vm = vmax > 0 ? vmax : 1e-300;  // V all zero: O must be exactly zero
  const double w = std::max({max_o / (vm / 8), rms_o / (vm / 256), lse});
  return std::isnan(w) ? std::numeric_limits<double>::infinity() : w;
}

void OutputCheck::add_head(const Dequantized& x, int head, bool causal, const std::vector<std::int64_t>& rows,
                           const float* o, const float* lse) {
  const int d = x.d;
  std::vector<float> eo(rows.size() * d), el(rows.size()), sa(rows.size());
  attention_fp8_emulated_rows(x, head, causal, bc_, rows, eo.data(), el.data(), sa.data());
  for (int i = 0; i < x.n; ++i)
    for (int c = 0; c < d; ++c) e_.vmax = std::max(e_.vmax, std::fabs(static_cast<double>(x.v(head, i, c))));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (int c = 0; c < d; ++c) {
      const double e = std::fabs(static_cast<double>(o[rows[r] * d + c]) - eo[r * d + c]);
      e_.max_o = std::max(e_.max_o, std::isnan(e) ? INFINITY : e);
      sq_ += e * e;
      ++count_;
    }
    const double le = std::fabs(static_cast<double>(lse[rows[r]]) - el[r]) / fp8_lse_tolerance(sa[r]);
    e_.lse = std::max(e_.lse, std::isnan(le) ? INFINITY : le);
  }
}

OutputErrors OutputCheck::result() const {
  OutputErrors r = e_;
  r.rms_o = std::sqrt(sq_ / std::max<std::size_t>(count_, 1));
  if (std::isnan(r.rms_o)) r.rms_o = INFINITY;
  return r;
}

}  // namespace flashsim::gpu::fp8

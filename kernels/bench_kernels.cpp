// bench_kernels: the fast (tensor-core) versions against the references on the same GPU, one table.
//
//   bench_kernels [--ops attn-fwd,attn-bwd,softmax,matmul] [--ref sdpa.tsv] [--quick] [--csv FILE]
//
// attention: ours vs PyTorch SDPA's FlashAttention-2 and cuDNN backends, read from --ref (a TSV that
//   kernels/tools/sdpa_reference.py writes on the same GPU; without it those columns stay empty).
//   TFLOP/s = 4·N²·d·bh forward, 2.5x that backward, halved under the causal mask.
// softmax: ours (online, two passes: 2 reads + 1 write of X's size) vs a device-to-device copy
//   (1 read + 1 write); both as bytes moved / time.
// matmul: ours vs cublasGemmEx (bf16 in and out, fp32 compute), TFLOP/s = 2mnk.
// Every row is validated against the CPU reference (float64) on sampled rows with a dtype-scaled
// tolerance (bf16 1e-2, fp16 5e-3, fp32 1e-4), on fresh random inputs with poisoned outputs.
// Times: CUDA events, 3 warm-ups, median of 10 (5 with --quick). After each timed run of ours, one
//   SM counts its clock over --sm-clock us (outside the timed span): the sm_mhz column, and the
//   cycles ms x MHz beside the model's pred ms x the preset's clock, so that a row's time error
//   splits into a cycle error and a clock error.
// pred ms: the time model (sim/gpu_time.h predict_time) on the preset named by the device (H100 ->
//   h100, H200 -> h200, --gpu-preset overrides), with the compulsory HBM bytes (no L2 model here);
//   meas/pred = ms / pred ms. A line under the table counts the rows within 15 %.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>

#include "sim/cli.h"
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "kernels/event_timing.h"
#include "kernels/fast.h"
#include "kernels/reference.h"
#include "kernels/report.h"
#include "kernels/spec.h"
#include "kernels/workload.h"
#include "sim/gpu_time.h"
#include "sim/main_guard.h"

namespace fg = flashsim::gpu;
using fg::DevBuf;
using fg::Dtype;

namespace {

struct Row {
  std::string op, shape, dtype, mask;
  double ms = 0, rate = 0;  // TFLOP/s or GB/s
  std::string unit;
  std::vector<std::pair<std::string, double>> refs;  // name -> rate (NaN when missing)
  double err = NAN, tol = 0;
  double sm_mhz = NAN;  // median SM clock after the timed runs of ours (--sm-clock)
  // The time model's query for this row and its answer (predict_row_time).
  flashsim::sim::TimeQuery query;
  std::optional<double> pred_ms;
  std::string pred_bound;
  bool bound_row = false;  // attention at N >= 4096, matmul with m and n >= 4096 (the 15 % bound)
};

// pred_ms and pred_bound from predict_time on `preset` with the compulsory HBM bytes.
void predict_row_time(Row& r, const flashsim::isa::GpuPreset& preset) {
  try {
    const auto lp = flashsim::sim::predict_time(r.query, preset);
    r.pred_ms = lp.predicted_ms;
    r.pred_bound = lp.bound;
  } catch (const std::exception&) {
    r.pred_ms.reset();
  }
}

flashsim::sim::TimeQuery attn_query(bool backward, int bh, int n, int d, bool causal) {
  flashsim::sim::TimeQuery q;
  q.op = backward ? flashsim::sim::TimedOp::AttnBwd : flashsim::sim::TimedOp::AttnFwd;
  q.n = n;
  q.d = d;
  q.heads = bh;
  q.causal = causal;
  q.elem_bytes = 2;
  if (backward)
    if (const char* v = std::getenv("FLASHSIM_BWD_VERSION")) {  // as the launcher reads it
      const int ver = std::atoi(v);
      if (ver >= 5 && ver <= 7) q.version = ver;
    }
  return q;
}

// median of `reps` event-timed runs after 3 warm-ups
double median_ms(const std::function<void()>& run, int reps) {
  const std::vector<float> t = fg::sorted_times_ms(run, 3, reps);
  return t[t.size() / 2];
}

// --sm-clock: the log and its window (us); off when null
fg::SmClockLog* g_clock = nullptr;
unsigned g_clock_us = 0;

// median_ms for ours: row.ms, and row.sm_mhz from one clock sample after each timed run
void time_ours(Row& row, const std::function<void()>& run, int reps) {
  if (!g_clock) {
    row.ms = median_ms(run, reps);
    return;
  }
  g_clock->reset();
  const std::vector<float> t = fg::sorted_times_ms(run, 3, reps, [] { g_clock->sample(g_clock_us, nullptr); });
  row.ms = t[t.size() / 2];
  std::vector<double> mhz = g_clock->mhz();
  std::sort(mhz.begin(), mhz.end());
  if (!mhz.empty()) row.sm_mhz = mhz[mhz.size() / 2];
}

double tolerance(Dtype d) { return d == Dtype::F32 ? 1e-4 : d == Dtype::BF16 ? 1e-2 : 5e-3; }

// Reference rates from sdpa_reference.py: "op dtype d n causal backend ms tflops" per line.
using RefKey = std::string;
RefKey ref_key(const std::string& op, const std::string& dt, int d, int n, bool causal, const std::string& backend) {
  std::ostringstream o;
  o << op << ' ' << dt << ' ' << d << ' ' << n << ' ' << (causal ? 1 : 0) << ' ' << backend;
  return o.str();
}
std::map<RefKey, double> read_refs(const std::string& path) {
  std::map<RefKey, double> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string op, dt, backend;
    int d = 0, n = 0, c = 0;
    double ms = 0, tf = 0;
    if (!(f >> op >> dt >> d >> n >> c >> backend >> ms >> tf))
      throw std::runtime_error(path + ":" + std::to_string(lineno) + ": expected 'op dtype d n causal backend ms tflops'");
    out[ref_key(op, dt, d, n, c != 0, backend)] = tf;
  }
  return out;
}

template <class T>
Dtype dtype_of() {
  return std::is_same_v<T, __half> ? Dtype::F16 : Dtype::BF16;
}

// Host copy of head h of a [bh, n, d] tensor.
std::vector<float> head(const DevBuf& b, int h, int n, int d, Dtype dt) {
  const std::size_t per = static_cast<std::size_t>(n) * d;
  return fg::to_host(b.get(), h * per, per, dt);
}
std::vector<float> rows_of(const std::vector<float>& full, const std::vector<std::int64_t>& rows, int d) {
  std::vector<float> out;
  for (auto r : rows) out.insert(out.end(), full.begin() + r * d, full.begin() + (r + 1) * d);
  return out;
}

struct AttnShape {
  int bh, n, d;
  bool causal;
};

// Forward: ours, validated on sampled rows of the first and last head; returns the row.
template <class T>
Row bench_attn_fwd(const AttnShape& s, int reps, const std::map<RefKey, double>& refs, bool with_bwd, Row* bwd_row) {
  const Dtype dt = dtype_of<T>();
  const std::size_t elems = static_cast<std::size_t>(s.bh) * s.n * s.d;
  DevBuf q(elems * 2), k(elems * 2), v(elems * 2), o(elems * 2), lse(static_cast<std::size_t>(s.bh) * s.n * 4);
  const std::uint64_t seed = 0x5eed0000ull + s.n * 131 + s.d * 7 + s.causal;
  fg::fill_uniform(q.get(), elems, dt, seed, -2.f, 2.f);
  fg::fill_uniform(k.get(), elems, dt, seed + 1, -2.f, 2.f);
  fg::fill_uniform(v.get(), elems, dt, seed + 2, -1.f, 1.f);
  fg::poison(o);
  fg::poison(lse);
  auto fwd = [&] {
    fg::attention_forward_fast(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(), s.bh, s.n, s.d, s.causal,
                               nullptr);
  };
  fwd();
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::uint64_t bad = fg::count_nonfinite(o.get(), elems, dt);
  const auto rows = fg::ref::pick_indices(s.n, 24);
  std::vector<float> got_o, want_o, got_l, want_l;
  for (int h : {0, s.bh - 1}) {
    auto hq = head(q, h, s.n, s.d, dt), hk = head(k, h, s.n, s.d, dt), hv = head(v, h, s.n, s.d, dt);
    std::vector<float> ro(rows.size() * s.d), rl(rows.size());
    fg::ref::attention_forward_rows(hq.data(), hk.data(), hv.data(), s.n, s.d, s.causal, rows, ro.data(), rl.data());
    auto go = rows_of(head(o, h, s.n, s.d, dt), rows, s.d);
    auto gl_all = fg::to_host(lse.get(), static_cast<std::size_t>(h) * s.n, s.n, Dtype::F32);
    got_o.insert(got_o.end(), go.begin(), go.end());
    want_o.insert(want_o.end(), ro.begin(), ro.end());
    for (std::size_t r = 0; r < rows.size(); ++r) got_l.push_back(gl_all[rows[r]]);
    want_l.insert(want_l.end(), rl.begin(), rl.end());
    if (s.bh == 1) break;
  }
  Row row;
  row.op = "attn-fwd";
  row.shape = std::to_string(s.bh) + "x" + std::to_string(s.n) + "x" + std::to_string(s.d);
  row.dtype = fg::dtype_name(dt);
  row.mask = s.causal ? "causal" : "full";
  row.query = attn_query(false, s.bh, s.n, s.d, s.causal);
  row.bound_row = s.n >= 4096;
  row.tol = tolerance(dt);
  row.err = bad ? INFINITY : std::max(fg::ref::rel_error(got_o, want_o), fg::ref::rel_error(got_l, want_l));
  time_ours(row, fwd, reps);
  const double pairs = static_cast<double>(s.n) * s.n * (s.causal ? 0.5 : 1.0);
  const double flop = 4.0 * pairs * s.d * s.bh;
  row.rate = flop / (row.ms * 1e-3) / 1e12;
  row.unit = "TFLOP/s";
  for (const char* b : {"flash", "cudnn"}) {
    auto it = refs.find(ref_key("fwd", row.dtype, s.d, s.n, s.causal, b));
    row.refs.push_back({std::string("sdpa-") + b, it == refs.end() ? NAN : it->second});
  }

  if (with_bwd && bwd_row) {
    DevBuf dout(elems * 2), dq(elems * 2), dk(elems * 2), dv(elems * 2);
    DevBuf ws(fg::attention_backward_fast_workspace_bytes(s.bh, s.n, s.d));
    fg::fill_uniform(dout.get(), elems, dt, seed + 3, -1.f, 1.f);
    fg::poison(dq);
    fg::poison(dk);
    fg::poison(dv);
    fg::poison(ws);
    auto bwd = [&] {
      fg::attention_backward_fast(q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), dout.as<T>(), lse.as<float>(),
                                  dq.as<T>(), dk.as<T>(), dv.as<T>(), ws.get(), s.bh, s.n, s.d, s.causal, nullptr);
    };
    bwd();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::uint64_t bbad = fg::count_nonfinite(dq.get(), elems, dt) + fg::count_nonfinite(dk.get(), elems, dt) +
                         fg::count_nonfinite(dv.get(), elems, dt);
    std::vector<float> got, want;
    for (int h : {0, s.bh - 1}) {
      auto hq = head(q, h, s.n, s.d, dt), hk = head(k, h, s.n, s.d, dt), hv = head(v, h, s.n, s.d, dt);
      auto ho = head(o, h, s.n, s.d, dt), hdo = head(dout, h, s.n, s.d, dt);
      auto hl = fg::to_host(lse.get(), static_cast<std::size_t>(h) * s.n, s.n, Dtype::F32);
      const std::size_t m = rows.size() * s.d;
      std::vector<float> rq(m), rk(m), rv(m);
      fg::ref::attention_backward_rows(hq.data(), hk.data(), hv.data(), ho.data(), hdo.data(), hl.data(), s.n, s.d,
                                       s.causal, rows, rq.data(), rk.data(), rv.data());
      for (const DevBuf* b : {&dq, &dk, &dv}) {
        auto g = rows_of(head(*b, h, s.n, s.d, dt), rows, s.d);
        got.insert(got.end(), g.begin(), g.end());
      }
      want.insert(want.end(), rq.begin(), rq.end());
      want.insert(want.end(), rk.begin(), rk.end());
      want.insert(want.end(), rv.begin(), rv.end());
      if (s.bh == 1) break;
    }
    Row& b = *bwd_row;
    b = row;
    b.op = "attn-bwd";
    b.query = attn_query(true, s.bh, s.n, s.d, s.causal);
    b.refs.clear();
    b.err = bbad ? INFINITY : fg::ref::rel_error(got, want);
    time_ours(b, bwd, reps);
    b.rate = 2.5 * flop / (b.ms * 1e-3) / 1e12;
    for (const char* be : {"flash", "cudnn"}) {
      auto it = refs.find(ref_key("bwd", row.dtype, s.d, s.n, s.causal, be));
      b.refs.push_back({std::string("sdpa-") + be, it == refs.end() ? NAN : it->second});
    }
  }
  return row;
}

Row bench_softmax(int rows, long long cols, int reps) {
  const std::size_t elems = static_cast<std::size_t>(rows) * cols;
  DevBuf x(elems * 4), y(elems * 4), part(fg::softmax_fast_partials_bytes(rows, cols)), copy(elems * 4);
  fg::fill_uniform(x.get(), elems, Dtype::F32, 77 + cols, -8.f, 8.f);
  fg::poison(y);
  auto run = [&] { fg::softmax_online_fast(x.as<float>(), y.as<float>(), rows, cols, part.as<float>(), nullptr); };
  run();
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::uint64_t bad = fg::count_nonfinite(y.get(), elems, Dtype::F32);
  std::vector<float> got, want;
  for (auto r : fg::ref::pick_indices(rows, 8)) {
    auto hx = fg::to_host(x.get(), r * cols, cols, Dtype::F32);
    auto hy = fg::to_host(y.get(), r * cols, cols, Dtype::F32);
    std::vector<float> w(cols);
    fg::ref::softmax_row(hx.data(), w.data(), cols);
    got.insert(got.end(), hy.begin(), hy.end());
    want.insert(want.end(), w.begin(), w.end());
  }
  Row row;
  row.op = "softmax";
  row.shape = std::to_string(rows) + "x" + std::to_string(cols);
  row.dtype = "fp32";
  row.mask = "-";
  row.query.op = flashsim::sim::TimedOp::Softmax;
  row.query.m = rows;
  row.query.n = cols;
  row.query.elem_bytes = 4;
  row.tol = tolerance(Dtype::F32);
  row.err = bad ? INFINITY : fg::ref::rel_error(got, want);
  time_ours(row, run, reps);
  const double bytes = 3.0 * elems * 4;  // X read twice, Y written once
  row.rate = bytes / (row.ms * 1e-3) / 1e9;
  row.unit = "GB/s";
  const double copy_ms = median_ms(
      [&] { CUDA_CHECK(cudaMemcpyAsync(copy.get(), x.get(), elems * 4, cudaMemcpyDeviceToDevice, nullptr)); }, reps);
  row.refs.push_back({"d2d-copy", 2.0 * elems * 4 / (copy_ms * 1e-3) / 1e9});
  return row;
}

void cublas_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string("cuBLAS error ") + std::to_string(st) + ": " + what);
}

Row bench_matmul(cublasHandle_t h, int m, int n, int k, int reps) {
  DevBuf a(static_cast<std::size_t>(m) * k * 2), b(static_cast<std::size_t>(k) * n * 2),
      c(static_cast<std::size_t>(m) * n * 2), c2(static_cast<std::size_t>(m) * n * 2),
      ws(std::max<std::size_t>(fg::matmul_bf16_fast_workspace_bytes(m, n, k), 16));
  fg::fill_uniform(a.get(), static_cast<std::size_t>(m) * k, Dtype::BF16, 11 + m, -1.f, 1.f);
  fg::fill_uniform(b.get(), static_cast<std::size_t>(k) * n, Dtype::BF16, 12 + n, -1.f, 1.f);
  fg::poison(c);
  auto ours = [&] {
    fg::matmul_bf16_fast(a.as<__nv_bfloat16>(), b.as<__nv_bfloat16>(), c.as<__nv_bfloat16>(), m, n, k, ws.get(),
                         fg::matmul_bf16_fast_workspace_bytes(m, n, k), nullptr);
  };
  ours();
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::uint64_t bad = fg::count_nonfinite(c.get(), static_cast<std::size_t>(m) * n, Dtype::BF16);
  auto rows = fg::ref::pick_indices(m, 16);
  auto ha = fg::to_host(a.get(), 0, static_cast<std::size_t>(m) * k, Dtype::BF16);
  auto hb = fg::to_host(b.get(), 0, static_cast<std::size_t>(k) * n, Dtype::BF16);
  std::vector<float> want(rows.size() * n), got;
  fg::ref::matmul_rows(ha.data(), hb.data(), n, k, rows, want.data());
  for (auto r : rows) {
    auto g = fg::to_host(c.get(), static_cast<std::size_t>(r) * n, n, Dtype::BF16);
    got.insert(got.end(), g.begin(), g.end());
  }
  Row row;
  row.op = "matmul";
  row.shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  row.dtype = "bf16";
  row.mask = "-";
  row.query.op = flashsim::sim::TimedOp::Matmul;
  row.query.m = m;
  row.query.n = n;
  row.query.k = k;
  row.query.elem_bytes = 2;
  row.bound_row = m >= 4096 && n >= 4096;
  row.tol = tolerance(Dtype::BF16);
  row.err = bad ? INFINITY : fg::ref::rel_error(got, want);
  time_ours(row, ours, reps);
  const double flop = 2.0 * m * n * k;
  row.rate = flop / (row.ms * 1e-3) / 1e12;
  row.unit = "TFLOP/s";
  // row-major C = A B is column-major C^T = B^T A^T
  const float alpha = 1.f, beta = 0.f;
  auto theirs = [&] {
    cublas_check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b.get(), CUDA_R_16BF, n, a.get(),
                              CUDA_R_16BF, k, &beta, c2.get(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  };
  const double cms = median_ms(theirs, reps);
  row.refs.push_back({"cublas", flop / (cms * 1e-3) / 1e12});
  return row;
}

std::string fmt(double v, int prec) {
  if (std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

void print(const std::vector<Row>& rows, std::FILE* out) {
  std::fprintf(out, "%-9s %-14s %-5s %-6s %9s %9s %9s %10s   %-22s %-22s %8s %s\n", "op", "shape", "dtype", "mask", "ms",
               "pred ms", "meas/pred", "ours", "reference 1 (ours/ref)", "reference 2 (ours/ref)", "rel err", "check");
  for (const auto& r : rows) {
    std::string refs[2];
    for (std::size_t i = 0; i < r.refs.size() && i < 2; ++i) {
      const auto& [name, rate] = r.refs[i];
      refs[i] = name + " " + fmt(rate, 0) + (std::isnan(rate) ? "" : " (" + fmt(r.rate / rate, 2) + ")");
    }
    char e[32];
    std::snprintf(e, sizeof e, "%.1e", r.err);
    const bool ok = std::isfinite(r.err) && r.err <= r.tol;
    const double tr = fg::time_ratio(r.ms, r.pred_ms);
    std::fprintf(out, "%-9s %-14s %-5s %-6s %9.3f %9s %9s %7.0f %-3s   %-22s %-22s %8s %s\n", r.op.c_str(), r.shape.c_str(),
                 r.dtype.c_str(), r.mask.c_str(), r.ms, r.pred_ms ? fmt(*r.pred_ms, 3).c_str() : "-", fmt(tr, 2).c_str(),
                 r.rate, r.unit == "GB/s" ? "GB/s" : "TF", refs[0].c_str(), refs[1].c_str(), e, ok ? "ok" : "FAILED");
  }
}

double cycle_ratio(const Row& r, const flashsim::isa::GpuPreset& preset) {
  return fg::cycle_ratio(r.ms, r.sm_mhz, r.pred_ms, preset.clock_ghz);
}

// Under the table: the clock the bound rows ran at, and their cycles against the model's.
void print_clock_lines(const std::vector<Row>& rows, const flashsim::isa::GpuPreset& preset) {
  std::vector<double> mhz, cycles;
  for (const auto& r : rows) {
    if (!r.bound_row || !std::isfinite(r.sm_mhz)) continue;
    mhz.push_back(r.sm_mhz);
    if (const double c = cycle_ratio(r, preset); std::isfinite(c)) cycles.push_back(c);
  }
  if (mhz.empty()) return;
  std::sort(mhz.begin(), mhz.end());
  std::printf("SM clock after the timed runs of the %zu rows at N >= 4096: %.0f-%.0f MHz, median %.0f (the preset "
              "counts cycles at %.0f MHz)\n",
              mhz.size(), mhz.front(), mhz.back(), mhz[mhz.size() / 2], preset.clock_ghz * 1e3);
  if (cycles.empty()) return;
  double log_sum = 0;
  int inside = 0;
  for (double c : cycles) log_sum += std::log(c), inside += std::abs(c - 1) <= 0.15;
  std::sort(cycles.begin(), cycles.end());
  std::printf("cycles meas/pred (ms x that clock against pred ms x the preset's): %.2f-%.2f, geometric mean %.2f; "
              "within 15 %%: %d of %zu\n",
              cycles.front(), cycles.back(), std::exp(log_sum / static_cast<double>(cycles.size())), inside,
              cycles.size());
}

void write_csv(const std::vector<Row>& rows, const std::string& path, const flashsim::isa::GpuPreset* preset) {
  std::ofstream csv(path);
  csv << "op,shape,dtype,mask,ms,rate,unit,ref1,ref1_rate,ref2,ref2_rate,rel_err,tolerance,pred_ms,time_meas_over_pred,"
         "pred_bound,sm_mhz,cycles_meas_over_pred\n";
  for (const auto& r : rows) {
    csv << r.op << ',' << r.shape << ',' << r.dtype << ',' << r.mask << ',' << r.ms << ',' << r.rate << ',' << r.unit;
    for (std::size_t i = 0; i < 2; ++i)
      csv << ',' << (i < r.refs.size() ? r.refs[i].first : "") << ','
          << (i < r.refs.size() ? fmt(r.refs[i].second, 3) : "");
    const double tr = fg::time_ratio(r.ms, r.pred_ms);
    const double cr = preset ? cycle_ratio(r, *preset) : NAN;
    csv << ',' << r.err << ',' << r.tol << ',' << (r.pred_ms ? fmt(*r.pred_ms, 5) : "") << ','
        << (std::isfinite(tr) ? fmt(tr, 4) : "") << ',' << r.pred_bound << ','
        << (std::isfinite(r.sm_mhz) ? fmt(r.sm_mhz, 0) : "") << ',' << (std::isfinite(cr) ? fmt(cr, 4) : "") << '\n';
  }
}

}  // namespace

static int run_main(int argc, char** argv) {
  CLI::App app{"bench_kernels: the fast kernels against PyTorch SDPA, a device copy and cuBLAS on this GPU"};
  std::string ops = "attn-fwd,attn-bwd,softmax,matmul", ref_path, csv_path;
  bool quick = false;
  app.add_option("--ops", ops, "comma-separated: attn-fwd, attn-bwd, softmax, matmul");
  app.add_option("--ref", ref_path, "TSV of PyTorch SDPA rates from kernels/tools/sdpa_reference.py");
  app.add_option("--csv", csv_path, "also write the table as CSV");
  app.add_flag("--quick", quick, "fewer shapes and repeats");
  int clock_us = 20;
  app.add_option("--sm-clock", clock_us,
                 "after each timed run of ours, one SM counts its clock over this many us (not timed); 0: off")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  std::string gpu_preset;
  app.add_option("--gpu-preset", gpu_preset,
                 "the time model's GPU preset for the pred ms column (h100, h200; default: from the device name)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints the message, or the help
    return rc == 0 ? 0 : flashsim::cli::kExitBadInput;
  }
  if (!gpu_preset.empty()) {
    try {
      fg::gpu_preset_for("", gpu_preset);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "bench_kernels: %s\n", e.what());
      return flashsim::cli::kExitBadInput;
    }
  }
  auto want = [&](const char* op) { return ("," + ops + ",").find(std::string(",") + op + ",") != std::string::npos; };

  auto dev = fg::device_info();
  if (!dev.have_device) {
    std::fprintf(stderr, "bench_kernels: no CUDA device: %s\n", dev.why.c_str());
    return 1;
  }
  try {
    const auto refs = read_refs(ref_path);
    std::unique_ptr<fg::SmClockLog> clock_log;
    if (clock_us > 0) {
      clock_log = std::make_unique<fg::SmClockLog>();
      g_clock = clock_log.get();
      g_clock_us = static_cast<unsigned>(clock_us);
    }
    const int reps = quick ? 5 : 10;
    std::printf("GPU: %s, %d SMs, L2 %.1f MB%s\n", dev.name.c_str(), dev.sms, dev.l2_bytes / 1e6,
                ref_path.empty() ? "; no --ref: SDPA columns empty" : "");
    const fg::PresetPick pick = fg::gpu_preset_for(dev.name, gpu_preset);
    const flashsim::isa::GpuPreset* preset = flashsim::isa::find_gpu_preset(pick.name);
    std::printf("time model: preset %s (%s; HBM bytes: compulsory, bench_kernels has no L2 model)%s%s\n", pick.name.c_str(),
                gpu_preset.empty() ? "from the device name" : "--gpu-preset", pick.note.empty() ? "" : "; ",
                pick.note.c_str());
    std::vector<Row> rows;
    auto emit = [&](Row r) {
      if (preset) predict_row_time(r, *preset);
      rows.push_back(r);
      print({r}, stderr);  // progress
    };
    if (want("attn-fwd") || want("attn-bwd")) {
      const std::vector<int> ns = quick ? std::vector<int>{1024, 8192} : std::vector<int>{1024, 2048, 4096, 8192, 16384};
      for (int d : {64, 128})
        for (int n : ns)
          for (bool causal : {false, true})
            for (int half = 0; half < 2; ++half) {
              // batch x heads filling the GPU: 16k tokens per batch row group, 2048 / d heads
              const AttnShape s{(16384 / n) * (2048 / d), n, d, causal};
              Row b;
              Row f = half ? bench_attn_fwd<__half>(s, reps, refs, want("attn-bwd"), &b)
                           : bench_attn_fwd<__nv_bfloat16>(s, reps, refs, want("attn-bwd"), &b);
              if (want("attn-fwd")) emit(f);
              if (want("attn-bwd")) emit(b);
            }
      // odd sizes: validation of the padding masks (not timed for the table's ratios)
      for (const AttnShape& s : {AttnShape{3, 1000, 64, false}, AttnShape{3, 1000, 64, true},
                                 AttnShape{2, 77, 128, false}, AttnShape{2, 77, 128, true}, AttnShape{1, 1, 64, true}}) {
        Row b;
        Row f = bench_attn_fwd<__nv_bfloat16>(s, 3, refs, want("attn-bwd"), &b);
        if (want("attn-fwd")) emit(f);
        if (want("attn-bwd")) emit(b);
      }
    }
    if (want("softmax")) {
      emit(bench_softmax(256, 524288, reps));
      emit(bench_softmax(4096, 32768, reps));
      emit(bench_softmax(32768, 4096, reps));
      emit(bench_softmax(7, 1000003, reps));
    }
    if (want("matmul")) {
      cublasHandle_t h;
      cublas_check(cublasCreate(&h), "cublasCreate");
      // ragged: shapes that leave the last tiles and the last wave of the grid part-empty; 1000x777x300
      // and 200x136x72 are not multiples of the tile (the former takes the padded copies)
      for (auto [m, n, k] : std::vector<std::array<int, 3>>{{8192, 8192, 8192}, {4096, 4096, 4096}, {8192, 8192, 1024},
                                                            {4000, 3000, 2048}, {5120, 1000, 3000}, {3000, 8192, 1000},
                                                            {1000, 1000, 8192}, {1000, 777, 300}, {200, 136, 72}})
        emit(bench_matmul(h, m, n, k, reps));
      cublasDestroy(h);
    }
    std::printf("\n");
    print(rows, stdout);
    {
      std::vector<fg::TimeCheck> checks;
      for (const auto& r : rows) checks.push_back(fg::TimeCheck{r.op + " " + r.shape + " " + r.dtype + " " + r.mask, r.bound_row, r.ms, r.pred_ms});
      const std::string line = fg::time_summary(checks);
      if (!line.empty()) std::printf("%s (preset %s)\n", line.c_str(), pick.name.c_str());
    }
    if (preset) print_clock_lines(rows, *preset);
    g_clock = nullptr;
    if (!csv_path.empty()) write_csv(rows, csv_path, preset);
    bool all_ok = true;
    for (const auto& r : rows) all_ok = all_ok && std::isfinite(r.err) && r.err <= r.tol;
    if (!all_ok) std::printf("\nsome rows FAILED validation\n");
    return all_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels: %s\n", e.what());
    return 1;
  }
}

int main(int argc, char** argv) { return flashsim::guard_main("bench_kernels", [&] { return run_main(argc, argv); }); }

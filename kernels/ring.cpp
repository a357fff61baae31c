#include "kernels/ring.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "kernels/attention.h"
#include "kernels/workload.h"
#include "sim/ring.h"

namespace flashsim::gpu {
namespace {

constexpr int kD = 64;

#define NCCL_CHECK(x)                                                                         \
  do {                                                                                        \
    ncclResult_t r_ = (x);                                                                    \
    if (r_ != ncclSuccess) {                                                                  \
      std::fprintf(stderr, "flashsim-gpu ring: %s failed: %s\n", #x, ncclGetErrorString(r_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

struct Gpu {
  int id = 0;
  DevBuf q, k[2], v[2], o, lse, ob, lseb;
  cudaStream_t comm = nullptr;  // non-blocking: the legacy default stream (compute) does not wait on it
  ncclComm_t nccl = nullptr;
  std::vector<cudaEvent_t> comp_start, comp_end, comm_start, comm_end;
  std::int64_t posted_sent = 0, posted_recv = 0;  // bytes handed to ncclSend / ncclRecv
};

void fa2(bool bf16, const void* q, const void* k, const void* v, void* o, float* lse, int bh, int n, bool causal) {
  if (bf16)
    attention_fa2(static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
                  static_cast<const __nv_bfloat16*>(v), static_cast<__nv_bfloat16*>(o), lse, bh, n, causal);
  else
    attention_fa2(static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v),
                  static_cast<float*>(o), lse, bh, n, causal);
}

float ms_between(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int ring_main(const RingOptions& opt) {
  const int P = opt.gpus, H = opt.heads;
  const std::int64_t N = opt.n;
  if (P < 1 || N % P != 0 || (N / P) < 1) {
    std::fprintf(stderr, "flashsim-gpu ring: n = %lld must be a positive multiple of --gpus %d\n",
                 static_cast<long long>(N), P);
    return 2;
  }
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess || have < P) {
    std::fprintf(stderr, "flashsim-gpu ring: %d GPUs asked for, %d present; nothing was run\n", P, have);
    return 2;
  }
  const std::int64_t nl = N / P;  // rows per GPU
  const Dtype dt = opt.bf16 ? Dtype::BF16 : Dtype::F32;
  const std::size_t e = opt.bf16 ? 2 : 4;
  const std::size_t blk = static_cast<std::size_t>(H) * nl * kD;  // elements of one Q/K/V block
  const ncclDataType_t nt = opt.bf16 ? ncclBfloat16 : ncclFloat32;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("ring attention on %d x %s: %d heads, n = %lld (%lld per GPU), d = 64, %s, %s, NCCL %d.%d.%d\n", P,
              prop.name, H, static_cast<long long>(N), static_cast<long long>(nl), opt.bf16 ? "bf16" : "fp32",
              opt.causal ? "causal" : "full", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);

  // Global Q, K, V on GPU 0: the one-GPU run and the source of every GPU's block.
  CUDA_CHECK(cudaSetDevice(0));
  const std::size_t all = static_cast<std::size_t>(H) * N * kD;
  DevBuf gq(all * e), gk(all * e), gv(all * e), go(all * e), glse(static_cast<std::size_t>(H) * N * 4);
  fill_uniform(gq.get(), all, dt, opt.seed, -1.f, 1.f);
  fill_uniform(gk.get(), all, dt, opt.seed + 1, -1.f, 1.f);
  fill_uniform(gv.get(), all, dt, opt.seed + 2, -1.f, 1.f);
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<Gpu> g(static_cast<std::size_t>(P));
  std::vector<int> ids(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p) ids[p] = p;
  for (int p = 0; p < P; ++p) {
    Gpu& x = g[p];
    x.id = p;
    CUDA_CHECK(cudaSetDevice(p));
    x.q = DevBuf(blk * e);
    for (int b = 0; b < 2; ++b) x.k[b] = DevBuf(blk * e), x.v[b] = DevBuf(blk * e);
    x.o = DevBuf(blk * e);
    x.ob = DevBuf(blk * e);
    x.lse = DevBuf(static_cast<std::size_t>(H) * nl * 4);
    x.lseb = DevBuf(static_cast<std::size_t>(H) * nl * 4);
    CUDA_CHECK(cudaStreamCreateWithFlags(&x.comm, cudaStreamNonBlocking));
    for (auto* ev : {&x.comp_start, &x.comp_end, &x.comm_start, &x.comm_end}) {
      ev->resize(static_cast<std::size_t>(P));
      for (auto& t : *ev) CUDA_CHECK(cudaEventCreate(&t));
    }
    // head h of GPU p: rows [p*nl, (p+1)*nl) of head h of the global arrays
    for (int h = 0; h < H; ++h) {
      const std::size_t src = (static_cast<std::size_t>(h) * N + p * nl) * kD * e, dst = static_cast<std::size_t>(h) * nl * kD * e;
      const std::size_t bytes = static_cast<std::size_t>(nl) * kD * e;
      CUDA_CHECK(cudaMemcpyPeer(static_cast<char*>(x.q.get()) + dst, p, static_cast<char*>(gq.get()) + src, 0, bytes));
      CUDA_CHECK(cudaMemcpyPeer(static_cast<char*>(x.k[0].get()) + dst, p, static_cast<char*>(gk.get()) + src, 0, bytes));
      CUDA_CHECK(cudaMemcpyPeer(static_cast<char*>(x.v[0].get()) + dst, p, static_cast<char*>(gv.get()) + src, 0, bytes));
    }
  }
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(P));
  NCCL_CHECK(ncclCommInitAll(comms.data(), P, ids.data()));
  for (int p = 0; p < P; ++p) g[p].nccl = comms[p];
  for (int p = 0; p < P; ++p) { CUDA_CHECK(cudaSetDevice(p)); CUDA_CHECK(cudaDeviceSynchronize()); }

  // mode: 0 = ring (compute and exchange overlapped), 1 = compute only, 2 = exchange only.
  // Returns the wall time in ms (host clock around the whole ring, all GPUs synchronised).
  auto run = [&](int mode) {
    for (int p = 0; p < P; ++p) { CUDA_CHECK(cudaSetDevice(p)); CUDA_CHECK(cudaDeviceSynchronize()); }
    for (auto& x : g) x.posted_sent = x.posted_recv = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < P; ++s) {
      const int cur = s % 2, nxt = 1 - cur;
      const bool exchange = s + 1 < P && mode != 1;
      if (exchange) {
        // The receive overwrites the buffer the compute of step s-1 read: wait for it.
        for (auto& x : g) {
          CUDA_CHECK(cudaSetDevice(x.id));
          if (s > 0 && mode == 0) CUDA_CHECK(cudaStreamWaitEvent(x.comm, x.comp_end[s - 1], 0));
          CUDA_CHECK(cudaEventRecord(x.comm_start[s], x.comm));
        }
        NCCL_CHECK(ncclGroupStart());
        for (auto& x : g) {
          const int to = (x.id + 1) % P, from = (x.id + P - 1) % P;
          NCCL_CHECK(ncclSend(x.k[cur].get(), blk, nt, to, x.nccl, x.comm));
          NCCL_CHECK(ncclSend(x.v[cur].get(), blk, nt, to, x.nccl, x.comm));
          NCCL_CHECK(ncclRecv(x.k[nxt].get(), blk, nt, from, x.nccl, x.comm));
          NCCL_CHECK(ncclRecv(x.v[nxt].get(), blk, nt, from, x.nccl, x.comm));
          x.posted_sent += static_cast<std::int64_t>(2 * blk * e);
          x.posted_recv += static_cast<std::int64_t>(2 * blk * e);
        }
        NCCL_CHECK(ncclGroupEnd());
        for (auto& x : g) { CUDA_CHECK(cudaSetDevice(x.id)); CUDA_CHECK(cudaEventRecord(x.comm_end[s], x.comm)); }
      }
      if (mode != 2) {
        for (auto& x : g) {
          CUDA_CHECK(cudaSetDevice(x.id));
          if (s > 0 && mode == 0) CUDA_CHECK(cudaStreamWaitEvent(nullptr, x.comm_end[s - 1], 0));
          CUDA_CHECK(cudaEventRecord(x.comp_start[s], nullptr));
          const int b = ((x.id - s) % P + P) % P;  // the block in hand (sim::ring's schedule)
          const bool skip = opt.causal && b > x.id;
          if (!skip) {
            const bool diag = opt.causal && b == x.id;
            if (s == 0) {
              fa2(opt.bf16, x.q.get(), x.k[cur].get(), x.v[cur].get(), x.o.get(), x.lse.as<float>(), H,
                  static_cast<int>(nl), diag);
            } else {
              fa2(opt.bf16, x.q.get(), x.k[cur].get(), x.v[cur].get(), x.ob.get(), x.lseb.as<float>(), H,
                  static_cast<int>(nl), diag);
              ring_merge(x.o.get(), x.lse.as<float>(), x.ob.get(), x.lseb.as<float>(), H * nl, opt.bf16, nullptr);
            }
            CUDA_CHECK_LAUNCH();
          }
          CUDA_CHECK(cudaEventRecord(x.comp_end[s], nullptr));
        }
      }
    }
    for (int p = 0; p < P; ++p) { CUDA_CHECK(cudaSetDevice(p)); CUDA_CHECK(cudaDeviceSynchronize()); }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  auto reset_kv = [&] {
    for (auto& x : g)
      for (int h = 0; h < H; ++h) {
        const std::size_t src = (static_cast<std::size_t>(h) * N + x.id * nl) * kD * e,
                          dst = static_cast<std::size_t>(h) * nl * kD * e, bytes = static_cast<std::size_t>(nl) * kD * e;
        CUDA_CHECK(cudaMemcpyPeer(static_cast<char*>(x.k[0].get()) + dst, x.id, static_cast<char*>(gk.get()) + src, 0, bytes));
        CUDA_CHECK(cudaMemcpyPeer(static_cast<char*>(x.v[0].get()) + dst, x.id, static_cast<char*>(gv.get()) + src, 0, bytes));
      }
  };

  // --- validation: one ring run against one-GPU FA2 over the whole sequence, and float64 rows.
  run(0);
  CUDA_CHECK(cudaSetDevice(0));
  fa2(opt.bf16, gq.get(), gk.get(), gv.get(), go.get(), glse.as<float>(), H, static_cast<int>(N), opt.causal);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  double err_gpu = 0, err_lse = 0, err_ref = 0;
  const auto hq = to_host(gq.get(), 0, all, dt), hk = to_host(gk.get(), 0, all, dt), hv = to_host(gv.get(), 0, all, dt);
  const auto h_one = to_host(go.get(), 0, all, dt), h_one_lse = to_host(glse.get(), 0, static_cast<std::size_t>(H) * N, Dtype::F32);
  const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
  for (auto& x : g) {
    CUDA_CHECK(cudaSetDevice(x.id));
    const auto ho = to_host(x.o.get(), 0, blk, dt);
    const auto hl = to_host(x.lse.get(), 0, static_cast<std::size_t>(H) * nl, Dtype::F32);
    for (int h = 0; h < H; ++h)
      for (std::int64_t r = 0; r < nl; ++r) {
        const std::int64_t row = x.id * nl + r;
        const std::size_t mine = (static_cast<std::size_t>(h) * nl + r), one = static_cast<std::size_t>(h) * N + row;
        err_lse = std::max(err_lse, static_cast<double>(std::abs(hl[mine] - h_one_lse[one])));
        for (int c = 0; c < kD; ++c)
          err_gpu = std::max(err_gpu, static_cast<double>(std::abs(ho[mine * kD + c] - h_one[one * kD + c])));
        // float64 reference on every 97th row (and the block edges)
        if (r % 97 != 0 && r != nl - 1) continue;
        const std::int64_t cols = opt.causal ? row + 1 : N;
        std::vector<double> s(static_cast<std::size_t>(cols));
        double m = -INFINITY;
        for (std::int64_t j = 0; j < cols; ++j) {
          double dot = 0;
          for (int t = 0; t < kD; ++t) dot += double(hq[one * kD + t]) * hk[(static_cast<std::size_t>(h) * N + j) * kD + t];
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        double l = 0;
        std::vector<double> acc(kD, 0.0);
        for (std::int64_t j = 0; j < cols; ++j) {
          const double pj = std::exp(s[j] - m);
          l += pj;
          for (int t = 0; t < kD; ++t) acc[t] += pj * hv[(static_cast<std::size_t>(h) * N + j) * kD + t];
        }
        for (int c = 0; c < kD; ++c) err_ref = std::max(err_ref, std::abs(acc[c] / l - ho[mine * kD + c]));
      }
  }
  const double tol = opt.bf16 ? 2e-2 : 1e-4;
  const bool ok = err_gpu <= tol && err_ref <= tol && err_lse <= 1e-3;
  std::printf("\nvalidation: max |ring - one-GPU FA2| = %.3g (O), %.3g (lse); max |ring - float64| on sampled rows = "
              "%.3g; tolerance %.0e: %s\n",
              err_gpu, err_lse, err_ref, tol, ok ? "PASS" : "FAIL");

  // --- timing: ring, compute only, exchange only, and one GPU on the whole sequence.
  std::vector<double> t_ring, t_comp, t_comm, t_one;
  std::vector<std::vector<double>> step_comp(static_cast<std::size_t>(P), std::vector<double>(P, 0)),
      step_comm(static_cast<std::size_t>(P), std::vector<double>(P, 0));
  for (int rep = 0; rep < opt.repeats + 1; ++rep) {  // the first round warms up
    reset_kv();
    const double r0 = run(0);
    if (rep == 0) continue;
    t_ring.push_back(r0);
    for (auto& x : g)
      for (int s = 0; s < P; ++s) {
        CUDA_CHECK(cudaSetDevice(x.id));
        step_comp[x.id][s] += ms_between(x.comp_start[s], x.comp_end[s]) / opt.repeats;
        if (s + 1 < P) step_comm[x.id][s] += ms_between(x.comm_start[s], x.comm_end[s]) / opt.repeats;
      }
    reset_kv();
    t_comp.push_back(run(1));
    reset_kv();
    t_comm.push_back(run(2));
    CUDA_CHECK(cudaSetDevice(0));
    const auto a = std::chrono::steady_clock::now();
    fa2(opt.bf16, gq.get(), gk.get(), gv.get(), go.get(), glse.as<float>(), H, static_cast<int>(N), opt.causal);
    CUDA_CHECK(cudaDeviceSynchronize());
    t_one.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  const double ring = median(t_ring), comp = median(t_comp), comm = median(t_comm), one = median(t_one);

  // --- counted (sim/ring.h, the same schedule) vs posted to NCCL
  sim::ring::RingConfig cfg{N, static_cast<std::int64_t>(kD) * H, P, opt.causal, static_cast<int>(e), 4, 64};
  sim::ring::RingMachine sim_ring(cfg);
  sim_ring.execute(sim::ring::forward_schedule(cfg));
  std::printf("\n| link | counted bytes (flashsim ring) | posted to NCCL | equal |\n|---|---:|---:|---|\n");
  bool bytes_ok = true;
  for (auto& x : g) {
    if (P == 1) break;
    const std::int64_t counted = sim_ring.link_bytes()[x.id];
    bytes_ok = bytes_ok && counted == x.posted_sent;
    std::printf("| GPU %d -> GPU %d | %lld | %lld | %s |\n", x.id, (x.id + 1) % P, static_cast<long long>(counted),
                static_cast<long long>(x.posted_sent), counted == x.posted_sent ? "yes" : "NO");
  }
  std::printf("\n| GPU | step | block | compute ms | exchange ms |\n|---:|---:|---:|---:|---:|\n");
  for (auto& x : g)
    for (int s = 0; s < P; ++s)
      std::printf("| %d | %d | %d | %.3f | %s |\n", x.id, s, ((x.id - s) % P + P) % P, step_comp[x.id][s],
                  s + 1 < P ? std::to_string(step_comm[x.id][s]).c_str() : "-");
  std::printf("\n| GPU | link sent B | link received B | HBM read B (model) | HBM written B (model) | HBM measured |\n"
              "|---:|---:|---:|---:|---:|---|\n");
  for (auto& x : g) {
    const auto& d = sim_ring.devices()[x.id];
    std::printf("| %d | %lld | %lld | %lld | %lld | not read (no per-GPU counters in this run) |\n", x.id,
                static_cast<long long>(x.posted_sent), static_cast<long long>(x.posted_recv),
                static_cast<long long>(d.hbm_read), static_cast<long long>(d.hbm_written));
  }
  const double hidden = comp + comm - ring;
  const double overlap = (P > 1 && std::min(comp, comm) > 0) ? std::clamp(hidden / std::min(comp, comm), 0.0, 1.0) : 0.0;
  const double link_bw = (P > 1 && comm > 0) ? double(g[0].posted_sent) / (comm * 1e-3) / 1e9 : 0.0;
  std::printf("\ntimes (median of %d): ring %.3f ms, compute only %.3f ms, exchange only %.3f ms (%.1f GB/s per link), "
              "one GPU on all n %.3f ms\n",
              opt.repeats, ring, comp, comm, link_bw, one);
  std::printf("overlap: %.3f ms of the shorter of compute/exchange hidden = %.0f%%\n", std::max(hidden, 0.0),
              100 * overlap);
  std::printf("scaling efficiency vs one GPU at the same n: %.1f%% (speed-up %.2fx on %d GPUs)\n",
              100 * one / (P * ring), one / ring, P);
  if (!bytes_ok) std::printf("error: NCCL-posted bytes differ from the counted bytes\n");
  for (auto& x : g) {
    CUDA_CHECK(cudaSetDevice(x.id));
    ncclCommDestroy(x.nccl);
    CUDA_CHECK(cudaStreamDestroy(x.comm));
  }
  return ok && bytes_ok ? 0 : 1;
}

}  // namespace flashsim::gpu

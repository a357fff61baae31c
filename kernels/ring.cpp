#include "kernels/ring.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kernels/fast.h"
#include "kernels/nvlink_counters.h"
#include "kernels/ring_run.h"
#include "kernels/workload.h"
#include "sim/ring.h"

namespace flashsim::gpu {
namespace ring_detail {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

float ms_between(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

namespace {
template <class T>
using FastFn = void (*)(const T*, const T*, const T*, T*, float*, int, int, int, bool, cudaStream_t);
}  // namespace

void fast_forward(Dtype dt, bool tiled, const void* q, const void* k, const void* v, void* o, float* lse, int bh, int n,
                  int d, bool causal, cudaStream_t s) {
  with_type(dt, [&](auto t) {
    using T = decltype(t);
    const FastFn<T> f = tiled ? FastFn<T>(&attention_forward_fast_tiled<T>) : FastFn<T>(&attention_forward_fast<T>);
    f(static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), static_cast<T*>(o), lse, bh, n, d,
      causal, s);
  });
}

void fast_ring_step(Dtype dt, const void* q, const void* k, const void* v, void* o, float* lse, int heads, int n, int d,
                    int kinds, cudaStream_t s) {
  with_type(dt, [&](auto t) {
    using T = decltype(t);
    attention_forward_fast_ring_step<T>(static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
                                        static_cast<T*>(o), lse, heads, n, d, kinds, s);
  });
}

void fast_backward(Dtype dt, const void* q, const void* k, const void* v, const void* o, const void* dout,
                   const float* lse, void* dq, void* dk, void* dv, void* ws, int bh, int n, int d, bool causal,
                   cudaStream_t s) {
  with_type(dt, [&](auto t) {
    using T = decltype(t);
    attention_backward_fast<T>(static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
                               static_cast<const T*>(o), static_cast<const T*>(dout), lse, static_cast<T*>(dq),
                               static_cast<T*>(dk), static_cast<T*>(dv), ws, bh, n, d, causal, s);
  });
}

void fast_backward_accumulate(Dtype dt, const void* q, const void* k, const void* v, const void* o, const void* dout,
                              const float* lse, float* dk_acc, float* dv_acc, bool assign_dkv, void* ws, bool first_dq,
                              int bh, int n, int d, bool causal, cudaStream_t s) {
  with_type(dt, [&](auto t) {
    using T = decltype(t);
    attention_backward_fast_accumulate<T>(static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
                                          static_cast<const T*>(o), static_cast<const T*>(dout), lse, dk_acc, dv_acc,
                                          assign_dkv, ws, first_dq, bh, n, d, causal, s);
  });
}

void fast_backward_finish_dq(Dtype dt, void* ws, void* dq, int bh, int n, int d, cudaStream_t s) {
  with_type(dt, [&](auto t) {
    using T = decltype(t);
    attention_backward_fast_finish_dq(ws, static_cast<T*>(dq), bh, n, d, s);
  });
}

int fail(const std::string& what) {
  std::fprintf(stderr, "flashsim-gpu ring: %s\n", what.c_str());
  return 2;
}

Shape::Shape(const RingOptions& opt)
    : P(opt.gpus), H(opt.heads), D(opt.d), nc(opt.split == "zigzag" ? 2 : 1), N(opt.n),
      parts(static_cast<std::int64_t>(P) * nc), c(N / parts),
      dt(opt.dtype == "bf16" ? Dtype::BF16 : Dtype::F16), nt(dt == Dtype::BF16 ? ncclBfloat16 : ncclFloat16),
      chunk(static_cast<std::size_t>(H) * c * D), blk(nc * chunk), lse_chunk(static_cast<std::size_t>(H) * c),
      all(static_cast<std::size_t>(H) * N * D), zigzag(nc == 2), copy(opt.transport == "copy"),
      backward(opt.backward), allgather(opt.method == "allgather"), streams(allgather ? 1 : opt.streams),
      // the tile machine counts all heads as one row of D * H values; its HBM model's tile is the
      // kernel's Q tile (64 rows at d = 64, 128 at d = 128); dK/dV travel as fp32
      cfg{N, static_cast<std::int64_t>(D) * H, P, opt.causal, static_cast<int>(e), 4, D == 64 ? 64 : 128,
          zigzag ? sim::ring::Split::Zigzag : sim::ring::Split::Contiguous},
      segs(sim::ring::device_segments(cfg)) {}

void RingRun::print_header() const {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s attention %s on %d x %s: %d heads, n = %lld (%lld rows per GPU in %d chunk%s of %lld), d = %d, %s, "
              "%s, %s split, transport %s%s, NCCL %d.%d.%d\n",
              s_.allgather ? "all-gather" : "ring", s_.backward ? "backward" : "forward", s_.P, prop.name, s_.H,
              static_cast<long long>(s_.N), static_cast<long long>(s_.N / s_.P), s_.nc,
              s_.nc > 1 ? "s" : "", static_cast<long long>(s_.c), s_.D, opt_.dtype.c_str(),
              opt_.causal ? "causal" : "full", opt_.split.c_str(), opt_.transport.c_str(),
              opt_.nccl_ctas > 0 ? (", NCCL maxCTAs " + std::to_string(opt_.nccl_ctas)).c_str() : "", NCCL_MAJOR,
              NCCL_MINOR, NCCL_PATCH);
  for (const char* v : {"NCCL_NVLS_ENABLE", "NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS", "NCCL_PROTO", "NCCL_P2P_LEVEL"})
    if (const char* s = std::getenv(v)) std::printf("  %s=%s\n", v, s);
}

// Global Q, K, V on GPU 0: the one-GPU run and the source of every GPU's chunks.
void RingRun::make_inputs() {
  CUDA_CHECK(cudaSetDevice(0));
  const std::size_t all = s_.all, e = s_.e;
  gq_ = DevBuf(all * e);
  gk_ = DevBuf(all * e);
  gv_ = DevBuf(all * e);
  go_ = DevBuf(all * e);
  glse_ = DevBuf(static_cast<std::size_t>(s_.H) * s_.N * 4);
  fill_uniform(gq_.get(), all, s_.dt, opt_.seed, -2.f, 2.f);
  fill_uniform(gk_.get(), all, s_.dt, opt_.seed + 1, -2.f, 2.f);
  fill_uniform(gv_.get(), all, s_.dt, opt_.seed + 2, -1.f, 1.f);
  CUDA_CHECK(cudaDeviceSynchronize());
}

// Copies GPU p's chunks of a tensor (layout [nc][H][c][D]) from / to the global [H][N][D] on GPU 0;
// elements of elem_bytes (0: the run's dtype).
void RingRun::chunk_copy(void* local, int p, const void* global, bool to_local, std::size_t elem_bytes) {
  const std::size_t row_bytes = static_cast<std::size_t>(s_.D) * (elem_bytes ? elem_bytes : s_.e), bytes = static_cast<std::size_t>(s_.c) * row_bytes;
  for (int i = 0; i < s_.nc; ++i)
    for (int h = 0; h < s_.H; ++h) {
      char* l = static_cast<char*>(local) + (static_cast<std::size_t>(i) * s_.H + h) * bytes;
      const char* gl =
          static_cast<const char*>(global) + (static_cast<std::size_t>(h) * s_.N + s_.segs[p][i].start) * row_bytes;
      if (to_local) CUDA_CHECK(cudaMemcpyPeer(l, p, gl, 0, bytes));
      else CUDA_CHECK(cudaMemcpyPeer(const_cast<char*>(gl), 0, l, p, bytes));
    }
}

// Every GPU's buffers, its compute and communication streams, its step events and its Q chunks.
void RingRun::setup_gpus() {
  int lo_prio = 0, hi_prio = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lo_prio, &hi_prio));
  const std::size_t e = s_.e;
  g_ = std::vector<Gpu>(static_cast<std::size_t>(s_.P));
  for (int p = 0; p < s_.P; ++p) {
    Gpu& x = g_[p];
    x.id = p;
    CUDA_CHECK(cudaSetDevice(p));
    x.q = DevBuf(s_.blk * e);
    for (auto& b : x.kv) b = DevBuf(2 * s_.blk * e);
    x.o = DevBuf(s_.blk * e);
    for (int k = 0; k < s_.streams; ++k) {  // a pair's partial, or a whole step's (--launch step)
      x.ob[k] = DevBuf(s_.blk * e);
      x.lseb[k] = DevBuf(s_.nc * s_.lse_chunk * 4);
    }
    x.lse = DevBuf(s_.nc * s_.lse_chunk * 4);
    for (int k = 0; k < s_.streams; ++k)
      CUDA_CHECK(cudaStreamCreateWithPriority(&x.comp[k], cudaStreamNonBlocking, lo_prio));
    // the exchange's kernels (NCCL's) get SMs first as compute blocks finish
    CUDA_CHECK(cudaStreamCreateWithPriority(&x.comm, cudaStreamNonBlocking, hi_prio));
    for (auto* ev : {&x.comp_start, &x.comp_end, &x.comm_start, &x.comm_end, &x.dkv_start, &x.dkv_end, &x.kv_free,
                     &x.acc_done}) {
      ev->resize(static_cast<std::size_t>(s_.P));
      for (auto& t : *ev) CUDA_CHECK(cudaEventCreate(&t));
    }
    if (s_.allgather && s_.P > 1) x.kv_all = DevBuf(static_cast<std::size_t>(s_.P) * 2 * s_.blk * e);
    if (opt_.sm_clock_us > 0) {
      x.clock = std::make_unique<SmClockLog>();
      CUDA_CHECK(cudaStreamCreateWithPriority(&x.clock_stream, cudaStreamNonBlocking, hi_prio));
      CUDA_CHECK(cudaEventCreateWithFlags(&x.clock_at, cudaEventDisableTiming));
    }
    chunk_copy(x.q.get(), p, gq_.get(), true);
  }
}

// The sample runs once cs gets here, beside whatever cs and the other streams run next (one warp:
// it fits beside a step kernel's block on an SM, or takes the first SM that frees).
void RingRun::clock_sample(const Gpu& x, cudaStream_t cs) {
  if (opt_.sm_clock_us <= 0) return;
  CUDA_CHECK(cudaEventRecord(x.clock_at, cs));
  CUDA_CHECK(cudaStreamWaitEvent(x.clock_stream, x.clock_at, 0));
  x.clock->sample(static_cast<unsigned>(opt_.sm_clock_us), x.clock_stream);
}

void RingRun::clock_reset() {
  if (opt_.sm_clock_us <= 0) return;
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    x.clock->reset();
  }
}

// --sm-clock: each GPU's samples of the batch just timed, one SMCLOCK line per GPU, kept in `all`
void RingRun::print_clocks(const char* mode, int rep, std::vector<double>* all) {
  if (opt_.sm_clock_us <= 0) return;
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    auto v = x.clock->mhz();
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf("SMCLOCK %s-%d gpu %d: %zu samples of %d us, median %.0f MHz (min %.0f, max %.0f)\n", mode, rep, x.id,
                v.size(), opt_.sm_clock_us, median(v), v.front(), v.back());
    if (all) all->insert(all->end(), v.begin(), v.end());
  }
}

// The buffer that holds step s's block: the two alternate over every run's steps, except on one
// GPU, where nothing arrives and buffer 1 is never filled (computing on it ran every second run on
// unset memory, 2026-11-27).
int RingRun::buffer_in_hand() const { return s_.P == 1 ? 0 : static_cast<int>(gstep_ % 2); }

void RingRun::reset_kv() {
  for (auto& x : g_) {
    chunk_copy(x.kv[0].get(), x.id, gk_.get(), true);
    chunk_copy(static_cast<char*>(x.kv[0].get()) + s_.blk * s_.e, x.id, gv_.get(), true);
  }
}

// --transport copy: each GPU may write into its ring neighbours' memory.
void RingRun::enable_peer_access() {
  const int P = s_.P;
  for (int p = 0; p < P; ++p)
    for (int q : {(p + 1) % P, (p + P - 1) % P}) {
      if (q == p) continue;
      int can = 0;
      CUDA_CHECK(cudaDeviceCanAccessPeer(&can, p, q));
      if (!can) continue;
      CUDA_CHECK(cudaSetDevice(p));
      const cudaError_t r = cudaDeviceEnablePeerAccess(q, 0);
      if (r != cudaSuccess && r != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(r);
      (void)cudaGetLastError();
    }
}

// --transport nccl: one communicator per GPU, with NCCL's CTAs capped by --nccl-ctas.
void RingRun::init_nccl() {
  const int P = s_.P;
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(P));
  if (opt_.nccl_ctas > 0) {
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id));
    NCCL_CHECK(ncclGroupStart());
    for (int p = 0; p < P; ++p) {
      CUDA_CHECK(cudaSetDevice(p));
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.minCTAs = 1;
      config.maxCTAs = opt_.nccl_ctas;
      NCCL_CHECK(ncclCommInitRankConfig(&comms[p], P, id, p, &config));
    }
    NCCL_CHECK(ncclGroupEnd());
  } else {
    std::vector<int> ids(static_cast<std::size_t>(P));
    for (int p = 0; p < P; ++p) ids[p] = p;
    NCCL_CHECK(ncclCommInitAll(comms.data(), P, ids.data()));
  }
  for (int p = 0; p < P; ++p) g_[p].nccl = comms[p];
}

void RingRun::sync_all() {
  for (int p = 0; p < s_.P; ++p) {
    CUDA_CHECK(cudaSetDevice(p));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
}

void RingRun::setup() {
  make_inputs();
  setup_gpus();
  if (s_.backward) setup_backward();
  reset_kv();
  if (s_.copy) enable_peer_access();
  else init_nccl();
  sync_all();
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaStreamCreateWithFlags(&one_stream_, cudaStreamNonBlocking));
}

RingRun::~RingRun() {
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    if (x.nccl) ncclCommDestroy(x.nccl);
    if (x.comm) CUDA_CHECK(cudaStreamDestroy(x.comm));
    for (cudaStream_t c : x.comp)
      if (c) CUDA_CHECK(cudaStreamDestroy(c));
    if (x.clock_stream) CUDA_CHECK(cudaStreamDestroy(x.clock_stream));
    if (x.clock_at) CUDA_CHECK(cudaEventDestroy(x.clock_at));
    for (auto* ev : {&x.comp_start, &x.comp_end, &x.comm_start, &x.comm_end, &x.dkv_start, &x.dkv_end, &x.kv_free,
                     &x.acc_done})
      for (auto& t : *ev) CUDA_CHECK(cudaEventDestroy(t));
  }
  for (Twin& t : twins_) {
    CUDA_CHECK(cudaSetDevice(t.id));
    if (t.stream) CUDA_CHECK(cudaStreamDestroy(t.stream));
  }
  CUDA_CHECK(cudaSetDevice(0));
  if (one_stream_) CUDA_CHECK(cudaStreamDestroy(one_stream_));
}

// Step s's exchange through NCCL: every GPU sends the block in hand (buffer cur) to the next GPU
// and receives the next block from the one before into buffer nxt, on its comm stream.
void RingRun::exchange_nccl(int s, int cur, int nxt, int mode) {
  const int P = s_.P;
  const int prev_s = (s + P - 1) % P;  // the step before, in this run or the one before
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    // the receive overwrites the buffer the compute of the step before read
    if (gstep_ > 0 && mode == 0) CUDA_CHECK(cudaStreamWaitEvent(x.comm, x.kv_free[prev_s], 0));
    CUDA_CHECK(cudaEventRecord(x.comm_start[s], x.comm));
  }
  NCCL_CHECK(ncclGroupStart());
  for (auto& x : g_) {
    const int to = (x.id + 1) % P, from = (x.id + P - 1) % P;
    NCCL_CHECK(ncclSend(x.kv[cur].get(), kv_elems_, s_.nt, to, x.nccl, x.comm));
    NCCL_CHECK(ncclRecv(x.kv[nxt].get(), kv_elems_, s_.nt, from, x.nccl, x.comm));
    x.posted_sent += kv_elems_ * static_cast<std::int64_t>(s_.e);
    x.posted_recv += kv_elems_ * static_cast<std::int64_t>(s_.e);
  }
  NCCL_CHECK(ncclGroupEnd());
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    CUDA_CHECK(cudaEventRecord(x.comm_end[s], x.comm));
  }
}

// Step s's exchange on the copy engines: GPU x pushes its block into GPU x+1's free buffer on x's
// comm stream, once x+1's compute and x+1's own push of the step before no longer need it.
void RingRun::exchange_copy(int s, int cur, int nxt, int mode) {
  const int P = s_.P;
  const int prev_s = (s + P - 1) % P;
  const bool prev_exchanged = gstep_ > 0 && prev_s + 1 < P;  // a send read buffer nxt at gstep - 1
  for (auto& x : g_) {
    Gpu& y = g_[(x.id + 1) % P];
    CUDA_CHECK(cudaSetDevice(x.id));
    if (gstep_ > 0 && mode == 0) CUDA_CHECK(cudaStreamWaitEvent(x.comm, y.kv_free[prev_s], 0));
    if (prev_exchanged) CUDA_CHECK(cudaStreamWaitEvent(x.comm, y.comm_end[prev_s], 0));
  }
  for (auto& x : g_) {  // all waits are posted before any copy records a new comm_end
    Gpu& y = g_[(x.id + 1) % P];
    CUDA_CHECK(cudaSetDevice(x.id));
    CUDA_CHECK(cudaEventRecord(x.comm_start[s], x.comm));
    CUDA_CHECK(cudaMemcpyPeerAsync(y.kv[nxt].get(), y.id, x.kv[cur].get(), x.id, kv_elems_ * s_.e, x.comm));
    CUDA_CHECK(cudaEventRecord(x.comm_end[s], x.comm));
    x.posted_sent += kv_elems_ * static_cast<std::int64_t>(s_.e);
    y.posted_recv += kv_elems_ * static_cast<std::int64_t>(s_.e);
  }
}

// A run's first step may not start before the run before has finished on the other stream.
void RingRun::wait_previous_run(Gpu& x, cudaStream_t cs) {
  if (gstep_ > 0 && s_.streams > 1) CUDA_CHECK(cudaStreamWaitEvent(cs, x.comp_end[s_.P - 1], 0));
}

// Step s's compute on every GPU: the pairs of the block in hand (buffer cur), on the step's stream.
// comp_end[s] waits for comp_end[s - 1], so that it marks every step up to s done.
void RingRun::compute_step(int s, int cur, int mode, std::vector<char>& started) {
  const int P = s_.P;
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    const cudaStream_t cs = step_stream(x, s);
    if (s > 0 && mode == 0) {  // the block of this step has arrived
      const Gpu& from = s_.copy ? g_[(x.id + P - 1) % P] : x;
      CUDA_CHECK(cudaStreamWaitEvent(cs, from.comm_end[s - 1], 0));
    }
    if (s == 0) wait_previous_run(x, cs);
    CUDA_CHECK(cudaEventRecord(x.comp_start[s], cs));
    const int b = ((x.id - s) % P + P) % P;  // the block in hand (sim::ring's schedule)
    cudaEvent_t before = s > 0 && s_.streams > 1 ? x.comp_end[s - 1] : nullptr;
    if (step_launch())
      forward_step_one_launch(x, s, b, static_cast<const char*>(x.kv[cur].get()), cs, s % s_.streams, before);
    else
      forward_pairs(x, b, static_cast<const char*>(x.kv[cur].get()), started, cs, s % s_.streams, before);
    if (!step_launch()) CUDA_CHECK(cudaEventRecord(x.kv_free[s], cs));  // after the pairs' merges too
    if (before) CUDA_CHECK(cudaStreamWaitEvent(cs, before, 0));
    CUDA_CHECK(cudaEventRecord(x.comp_end[s], cs));
    clock_sample(x, cs);
  }
}

int RingRun::step_kinds(int p, int b) const {
  int kinds = 0;
  for (int i = 0; i < s_.nc; ++i)
    for (int j = 0; j < s_.nc; ++j) {
      const auto kind = sim::ring::pair_kind(s_.segs[p][i], s_.segs[b][j], opt_.causal);
      const int code = kind == sim::ring::PairKind::Skip ? 0 : kind == sim::ring::PairKind::Masked ? 2 : 1;
      kinds |= code << (2 * (2 * i + j));
    }
  return kinds;
}

// --launch step: GPU x's step s with block b in one launch over both query chunks (each pair's kind
// two bits of `kinds`), then one merge over both; step 0, the GPU's own block, gives every chunk its
// diagonal, so it writes (O, lse) directly.
void RingRun::forward_step_one_launch(Gpu& x, int s, int b, const char* kbase, cudaStream_t cs, int slot,
                                      cudaEvent_t before_merge) {
  const int kinds = step_kinds(x.id, b);
  const char* v = kbase + s_.nc * s_.chunk * s_.e;
  const int rows = static_cast<int>(s_.c);
  if (s == 0) {
    fast_ring_step(s_.dt, x.q.get(), kbase, v, x.o.get(), x.lse.as<float>(), s_.H, rows, s_.D, kinds, cs);
    CUDA_CHECK(cudaEventRecord(x.kv_free[s], cs));
    return;
  }
  fast_ring_step(s_.dt, x.q.get(), kbase, v, x.ob[slot].get(), x.lseb[slot].as<float>(), s_.H, rows, s_.D, kinds, cs);
  // the next hop into this buffer waits for this, not for the merge: a merge queued behind the next
  // step's blocks would hold the hop back a whole step (4 x H200, 2026-11-27)
  CUDA_CHECK(cudaEventRecord(x.kv_free[s], cs));
  if (before_merge) CUDA_CHECK(cudaStreamWaitEvent(cs, before_merge, 0));
  ring_merge(x.o.get(), x.lse.as<float>(), x.ob[slot].get(), x.lseb[slot].as<float>(),
             static_cast<std::int64_t>(s_.nc * s_.lse_chunk), s_.D, s_.dt, cs);
  CUDA_CHECK_LAUNCH();
}

// Every (Q chunk, K chunk) pair of GPU x's rows with block b (K then V at kbase) is one call of the
// fast kernel on stream cs (pair outputs in ob[slot], lseb[slot]), merged into the chunk's (O, lse)
// unless it is the chunk's first; the merges wait for before_merge (the step before), if given.
void RingRun::forward_pairs(Gpu& x, int b, const char* kbase, std::vector<char>& started, cudaStream_t cs, int slot,
                            cudaEvent_t before_merge) {
  const int nc = s_.nc;
  const std::size_t e = s_.e, chunk = s_.chunk;
  for (int i = 0; i < nc; ++i)
    for (int j = 0; j < nc; ++j) {
      const auto kind = sim::ring::pair_kind(s_.segs[x.id][i], s_.segs[b][j], opt_.causal);
      if (kind == sim::ring::PairKind::Skip) continue;
      const void* qi = static_cast<const char*>(x.q.get()) + i * chunk * e;
      const void* kj = kbase + j * chunk * e;
      const void* vj = kbase + (nc + j) * chunk * e;
      void* oi = static_cast<char*>(x.o.get()) + i * chunk * e;
      float* li = x.lse.as<float>() + i * s_.lse_chunk;
      const bool masked = kind == sim::ring::PairKind::Masked;
      const int rows = static_cast<int>(s_.c);
      char& st = started[static_cast<std::size_t>(x.id * nc + i)];
      // NCCL's kernels need SMs while a step computes: the launch with one block per Q tile lets
      // them in as tiles finish. The copy engines need none, so the fastest launch is taken.
      const bool tiled = !s_.copy;
      if (!st) {  // the chunk's first pair writes its state directly
        fast_forward(s_.dt, tiled, qi, kj, vj, oi, li, s_.H, rows, s_.D, masked, cs);
        st = 1;
      } else {
        void* ob = x.ob[slot].get();
        float* lb = x.lseb[slot].as<float>();
        fast_forward(s_.dt, tiled, qi, kj, vj, ob, lb, s_.H, rows, s_.D, masked, cs);
        if (before_merge) CUDA_CHECK(cudaStreamWaitEvent(cs, before_merge, 0));
        ring_merge(oi, li, ob, lb, static_cast<std::int64_t>(s_.lse_chunk), s_.D, s_.dt, cs);
        CUDA_CHECK_LAUNCH();
      }
    }
}

// One run of what was asked: mode 0 = the exchange overlapped with compute, 1 = compute only,
// 2 = exchange only.
void RingRun::ring_once(int mode) {
  if (s_.allgather) allgather_once(mode);
  else if (run_backward_) ring_once_backward(mode);
  else ring_once_forward(mode);
}

// One forward ring: P steps.
void RingRun::ring_once_forward(int mode) {
  const int P = s_.P;
  std::vector<char> started(static_cast<std::size_t>(P * s_.nc), 0);  // O of chunk i holds a partial
  for (int s = 0; s < P; ++s, ++gstep_) {
    const int cur = buffer_in_hand(), nxt = 1 - cur;
    if (s + 1 < P && mode != 1) {
      if (s_.copy) exchange_copy(s, cur, nxt, mode);
      else exchange_nccl(s, cur, nxt, mode);
    }
    if (mode != 2) compute_step(s, cur, mode, started);
  }
}

// Host-timed (all GPUs synchronised before and after) back-to-back runs, ms per run.
double RingRun::timed(int mode, int iters) {
  sync_all();
  const auto t0 = Clock::now();
  for (int it = 0; it < iters; ++it) ring_once(mode);
  sync_all();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters;
}

// The baseline: the fastest one-GPU launch on all n rows, on GPU 0 (the backward takes the one-GPU
// forward's O and lse).
void RingRun::one_gpu() {
  CUDA_CHECK(cudaSetDevice(0));
  one_gpu_on({gq_.get(), gk_.get(), gv_.get(), go_.get(), glse_.as<float>(), gdo_.get(), gdq_.get(), gdk_.get(),
              gdv_.get(), gws_.get()},
             one_stream_);
}

// The one-GPU launch on the current device's copy of the problem (the backward takes o and lse).
void RingRun::one_gpu_on(const OneGpuBufs& b, cudaStream_t stream) {
  if (run_backward_)
    fast_backward(s_.dt, b.q, b.k, b.v, b.o, b.dout, b.lse, b.dq, b.dk, b.dv, b.ws, s_.H, static_cast<int>(s_.N), s_.D,
                  opt_.causal, stream);
  else
    fast_forward(s_.dt, false, b.q, b.k, b.v, b.o, b.lse, s_.H, static_cast<int>(s_.N), s_.D, opt_.causal, stream);
}

// --baseline all: GPUs 1..P-1 get copies of the one-GPU problem (after validation, so that the
// backward's copies hold the forward's O and lse).
void RingRun::make_twins() {
  if (opt_.baseline != "all" || s_.P == 1 || !twins_.empty()) return;
  const std::size_t bytes = s_.all * s_.e, lse_bytes = static_cast<std::size_t>(s_.H) * s_.N * 4;
  auto copy_of = [](const DevBuf& from, int to) {
    DevBuf b(from.bytes());
    CUDA_CHECK(cudaMemcpyPeer(b.get(), to, from.get(), 0, from.bytes()));
    return b;
  };
  for (int id = 1; id < s_.P; ++id) {
    CUDA_CHECK(cudaSetDevice(id));
    Twin t;
    t.id = id;
    t.q = copy_of(gq_, id), t.k = copy_of(gk_, id), t.v = copy_of(gv_, id);
    if (run_backward_) {
      t.o = copy_of(go_, id), t.lse = copy_of(glse_, id), t.dout = copy_of(gdo_, id);
      t.dq = DevBuf(bytes), t.dk = DevBuf(bytes), t.dv = DevBuf(bytes);
      t.ws = DevBuf(::flashsim::gpu::attention_backward_fast_workspace_bytes(s_.H, static_cast<int>(s_.N), s_.D));
    } else {
      t.o = DevBuf(bytes), t.lse = DevBuf(lse_bytes);
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(&t.stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaDeviceSynchronize());
    twins_.push_back(std::move(t));
  }
}

// GPU 0's time a run; with twins, every other GPU runs the same problem meanwhile (untimed)
double RingRun::timed_one(int iters) {
  sync_all();
  for (Twin& t : twins_) {
    CUDA_CHECK(cudaSetDevice(t.id));
    for (int it = 0; it < iters; ++it) {
      one_gpu_on({t.q.get(), t.k.get(), t.v.get(), t.o.get(), t.lse.as<float>(), t.dout.get(), t.dq.get(), t.dk.get(),
                  t.dv.get(), t.ws.get()},
                 t.stream);
      clock_sample(g_[static_cast<std::size_t>(t.id)], t.stream);
    }
  }
  const auto t0 = Clock::now();
  for (int it = 0; it < iters; ++it) {
    one_gpu();
    clock_sample(g_[0], one_stream_);
  }
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaStreamSynchronize(one_stream_));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters;
  for (Twin& t : twins_) {
    CUDA_CHECK(cudaSetDevice(t.id));
    CUDA_CHECK(cudaStreamSynchronize(t.stream));
  }
  return ms;
}

// The forward from fresh buffers; with --backward, then the backward on the forward's O and lse.
Validation RingRun::validate() {
  Validation v = validate_forward();
  if (!s_.backward) return v;
  run_backward_ = true;
  if (!v.ok) std::printf("the forward did not validate: the backward below takes its O and lse all the same\n");
  Validation b = validate_backward();
  b.ok = b.ok && v.ok;
  return b;
}

// One ring from fresh buffers, outputs poisoned, against one GPU on all n and float64 on sampled rows.
Validation RingRun::validate_forward() {
  const int P = s_.P, H = s_.H, nc = s_.nc;
  const std::int64_t N = s_.N, c = s_.c;
  const std::size_t all = s_.all, e = s_.e;
  Validation v;
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    CUDA_CHECK(cudaMemset(x.o.get(), 0xff, x.o.bytes()));  // NaN in bf16 and fp16
    CUDA_CHECK(cudaMemset(x.lse.get(), 0xff, x.lse.bytes()));
    x.posted_sent = x.posted_recv = 0;
  }
  sync_all();  // the memsets ran on the legacy stream, which the ring's non-blocking streams do not wait for
  gstep_ = 0;
  ring_once(0);
  sync_all();
  if (s_.backward) {  // the backward's inputs; its validation starts from fresh K/V blocks
    reset_kv();
    sync_all();
  }
  v.posted_sent.resize(static_cast<std::size_t>(P));
  v.posted_recv.resize(static_cast<std::size_t>(P));
  for (auto& x : g_) {
    v.posted_sent[x.id] = x.posted_sent;
    v.posted_recv[x.id] = x.posted_recv;
    CUDA_CHECK(cudaSetDevice(x.id));
    v.nonfinite += count_nonfinite(x.o.get(), s_.blk, s_.dt) + count_nonfinite(x.lse.get(), nc * s_.lse_chunk, Dtype::F32);
  }
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaMemset(go_.get(), 0xff, go_.bytes()));
  CUDA_CHECK(cudaDeviceSynchronize());
  one_gpu();
  CUDA_CHECK(cudaStreamSynchronize(one_stream_));
  // the ring's O and lse gathered into the global [H][N][D] order (on GPU 0's spare buffers)
  DevBuf ring_o(all * e), ring_lse(static_cast<std::size_t>(H) * N * 4);
  for (auto& x : g_) {
    chunk_copy(x.o.get(), x.id, ring_o.get(), false);
    for (int i = 0; i < nc; ++i)
      for (int h = 0; h < H; ++h)
        CUDA_CHECK(cudaMemcpyPeer(ring_lse.as<float>() + static_cast<std::size_t>(h) * N + s_.segs[x.id][i].start, 0,
                                  x.lse.as<float>() + (static_cast<std::size_t>(i) * H + h) * c, x.id,
                                  static_cast<std::size_t>(c) * 4));
  }
  const auto h_ring = to_host(ring_o.get(), 0, all, s_.dt), h_one = to_host(go_.get(), 0, all, s_.dt);
  const auto l_ring = to_host(ring_lse.get(), 0, static_cast<std::size_t>(H) * N, Dtype::F32),
             l_one = to_host(glse_.get(), 0, static_cast<std::size_t>(H) * N, Dtype::F32);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < all; ++i) {
    const double dlt = double(h_ring[i]) - h_one[i];
    num += dlt * dlt;
    den += double(h_one[i]) * h_one[i];
    v.err_one_max = std::max(v.err_one_max, std::abs(dlt));
  }
  for (std::size_t i = 0; i < l_ring.size(); ++i) {
    const double dlt = std::abs(double(l_ring[i]) - l_one[i]);
    v.err_lse = std::isfinite(dlt) ? std::max(v.err_lse, dlt) : INFINITY;
  }
  v.err_one = std::isfinite(num) && den > 0 ? std::sqrt(num / den) : INFINITY;
  reference_rows(h_ring, v);
  if (s_.backward) ring_o_ = h_ring, ring_lse_ = l_ring;  // the float64 backward rows take them
  const double tol = s_.dt == Dtype::BF16 ? 1e-2 : 5e-3;
  v.ok = v.nonfinite == 0 && v.err_one <= tol && v.err_ref <= tol && v.err_lse <= 1e-3;
  std::printf("\nvalidation (q, k uniform in [-2, 2], v in [-1, 1]; outputs poisoned first): %llu non-finite outputs;\n"
              "  ring vs one-GPU attention_forward_fast on all n: relative L2 %.3g, max |dO| %.3g, max |dlse| %.3g\n"
              "  ring vs float64 on %zu rows (chunk edges and inside, spread over heads): relative L2 %.3g, max |dO| "
              "%.3g\n  tolerance: relative %.0e, lse 1e-3: %s\n",
              static_cast<unsigned long long>(v.nonfinite), v.err_one, v.err_one_max, v.err_lse, v.ref_rows, v.err_ref,
              v.err_ref_max, tol, v.ok ? "PASS" : "FAIL");
  return v;
}

// The rows the float64 references check: the first and last row of every chunk and two rows
// inside it, each in its own head (spread over the heads).
std::vector<RingRun::RefRow> RingRun::reference_picks() const {
  const int P = s_.P, H = s_.H, nc = s_.nc;
  const std::int64_t c = s_.c;
  std::vector<RefRow> rows;
  for (int p = 0; p < P; ++p)
    for (int i = 0; i < nc; ++i) {
      const std::int64_t s0 = s_.segs[p][i].start;
      const std::int64_t pick[4] = {s0, s0 + c / 3, s0 + (2 * c) / 3, s0 + c - 1};
      for (int k = 0; k < 4; ++k) rows.push_back({(p * nc * 4 + i * 4 + k) % H, pick[k]});
    }
  return rows;
}

// float64 reference rows (reference_picks) on worker threads; sets v.err_ref, err_ref_max, ref_rows.
void RingRun::reference_rows(const std::vector<float>& h_ring, Validation& v) {
  const int D = s_.D;
  const std::int64_t N = s_.N;
  const std::vector<RefRow> rows = reference_picks();
  std::map<int, std::vector<float>> hk, hv, hq;
  for (const auto& r : rows)
    if (!hk.count(r.h)) {
      const std::size_t off = static_cast<std::size_t>(r.h) * N * D, len = static_cast<std::size_t>(N) * D;
      hk[r.h] = to_host(gk_.get(), off, len, s_.dt);
      hv[r.h] = to_host(gv_.get(), off, len, s_.dt);
      hq[r.h] = to_host(gq_.get(), off, len, s_.dt);
    }
  std::vector<double> rnum(rows.size()), rden(rows.size()), rmax(rows.size());
  {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < rows.size(); ++t)
      pool.emplace_back([&, t] {
        const auto& [h, row] = rows[t];
        const auto &K = hk.at(h), &V = hv.at(h), &Q = hq.at(h);
        const std::int64_t cols = opt_.causal ? row + 1 : N;
        const double scale = 1.0 / std::sqrt(static_cast<double>(D));
        std::vector<double> s(static_cast<std::size_t>(cols)), acc(static_cast<std::size_t>(D), 0.0);
        double m = -INFINITY, l = 0;
        for (std::int64_t j = 0; j < cols; ++j) {
          double dot = 0;
          for (int u = 0; u < D; ++u) dot += double(Q[row * D + u]) * K[j * D + u];
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        for (std::int64_t j = 0; j < cols; ++j) {
          const double pj = std::exp(s[j] - m);
          l += pj;
          for (int u = 0; u < D; ++u) acc[u] += pj * V[j * D + u];
        }
        double nn = 0, dd = 0, mx = 0;
        for (int u = 0; u < D; ++u) {
          const double ref = acc[u] / l, got = h_ring[(static_cast<std::size_t>(h) * N + row) * D + u];
          nn += (got - ref) * (got - ref);
          dd += ref * ref;
          mx = std::max(mx, std::abs(got - ref));
        }
        rnum[t] = nn;
        rden[t] = dd;
        rmax[t] = std::isfinite(nn) ? mx : INFINITY;
      });
    for (auto& th : pool) th.join();
  }
  double sn = 0, sd = 0;
  for (std::size_t t = 0; t < rows.size(); ++t) sn += rnum[t], sd += rden[t], v.err_ref_max = std::max(v.err_ref_max, rmax[t]);
  v.err_ref = std::isfinite(sn) && sd > 0 ? std::sqrt(sn / sd) : INFINITY;
  v.ref_rows = rows.size();
}

// GPU x's exchange time at step s of the last run, ms: the K/V hop (ring) or the all-gather (at step
// 0), plus backward the dK/dV hop (ring) or the reduce-scatter (at step 0).
double RingRun::step_exchange_ms(const Gpu& x, int s) const {
  const int P = s_.P;
  if (P == 1) return 0;
  double ms = 0;
  if (s_.allgather ? s == 0 : s + 1 < P) ms += ms_between(x.comm_start[s], x.comm_end[s]);
  if (run_backward_ && (!s_.allgather || s == 0)) ms += ms_between(x.dkv_start[s], x.dkv_end[s]);
  return ms;
}

// Warm-up, then back-to-back batches of runs per mode (ring, compute only, exchange only, one
// GPU), medians; each GPU's step times from the events of every batch's last ring.
Timing RingRun::time_modes() {
  const int P = s_.P;
  Timing t;
  make_twins();
  const double w_ring = timed(0, 1), w_comp = timed(1, 1), w_comm = P > 1 ? timed(2, 1) : 0.0, w_one = timed_one(1);
  auto iters_for = [](double ms) { return std::clamp(static_cast<int>(std::ceil(25.0 / std::max(ms, 1e-3))), 1, 200); };
  t.it_ring = iters_for(w_ring), t.it_comp = iters_for(w_comp), t.it_comm = iters_for(w_comm), t.it_one = iters_for(w_one);
  std::vector<double> t_ring, t_comp, t_comm, t_one;
  t.step_comp.assign(static_cast<std::size_t>(P), std::vector<double>(P, 0));
  t.step_comm.assign(static_cast<std::size_t>(P), std::vector<double>(P, 0));
  t.step_start.assign(static_cast<std::size_t>(P), std::vector<double>(P, 0));
  // Under the 700 W cap a GPU's clock follows its power over the last few hundred ms: a GPU that idled
  // through the one-GPU batch runs its next batch up to 7 % faster than GPU 0, which did not
  // (nvidia-smi at 20 ms, 2 x H200, 2026-11-27). Each batch therefore follows untimed runs of its
  // own mode, so that every mode is timed at the clock it holds when it runs on its own.
  const auto settle_iters = [&](double ms) {
    return opt_.settle_ms > 0 ? std::clamp(static_cast<int>(std::ceil(opt_.settle_ms / std::max(ms, 1e-3))), 1, 1000) : 0;
  };
  const int settle_ring = settle_iters(w_ring), settle_comp = settle_iters(w_comp), settle_comm = settle_iters(w_comm),
            settle_one = settle_iters(w_one);
  // each timed batch's wall-clock edges ("PHASE MODE-REP start|end EPOCH"), so that a clock log
  // (kernels/tools/clock_phases.py) can be read per mode
  const auto phase = [&](const char* mode, int rep, auto&& batch) {
    const auto epoch = [] {
      return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    };
    const double start = epoch();
    const double ms = batch();
    std::printf("PHASE %s-%d start %.6f\nPHASE %s-%d end %.6f\n", mode, rep, start, mode, rep, epoch());
    return ms;
  };
  static constexpr const char* kModeNames[] = {"ring", "compute", "exchange"};
  const auto settled = [&](int mode, int settle, int iters, int rep) {
    if (settle > 0) timed(mode, settle);
    clock_reset();
    const double ms = phase(kModeNames[mode], rep, [&] { return timed(mode, iters); });
    print_clocks(kModeNames[mode], rep, mode == 0 ? &t.mhz_ring : mode == 1 ? &t.mhz_comp : nullptr);
    return ms;
  };
  for (int rep = 0; rep < opt_.repeats; ++rep) {
    t_ring.push_back(settled(0, settle_ring, t.it_ring, rep));
    for (auto& x : g_) {  // the events hold the batch's last ring
      CUDA_CHECK(cudaSetDevice(x.id));
      for (int s = 0; s < P; ++s) {
        t.step_comp[x.id][s] += ms_between(x.comp_start[s], x.comp_end[s]) / opt_.repeats;
        t.step_comm[x.id][s] += step_exchange_ms(x, s) / opt_.repeats;
        t.step_start[x.id][s] += ms_between(x.comp_start[0], x.comp_start[s]) / opt_.repeats;
      }
    }
    t_comp.push_back(settled(1, settle_comp, t.it_comp, rep));
    if (P > 1) t_comm.push_back(settled(2, settle_comm, t.it_comm, rep));
    if (settle_one > 0) timed_one(settle_one);
    clock_reset();
    t_one.push_back(phase("one", rep, [&] { return timed_one(t.it_one); }));
    print_clocks("one", rep, &t.mhz_one);
  }
  t.ring = median(t_ring), t.comp = median(t_comp), t.comm = median(t_comm), t.one = median(t_one);
  return t;
}

// NVLink bytes from NVML around a batch of `rings` rings, per ring.
Nvlink RingRun::measure_nvlink(int rings) {
  const int P = s_.P;
  std::vector<std::string> bus;
  for (int p = 0; p < P; ++p) {
    char id[32] = {};
    CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof id, p));
    bus.emplace_back(id);
  }
  NvlinkCounters nvml(bus);
  Nvlink n;
  const auto per_gpu = static_cast<std::size_t>(P);
  n.tx.assign(per_gpu, -1), n.rx.assign(per_gpu, -1), n.tx_link0.assign(per_gpu, -1), n.tx_sum.assign(per_gpu, -1);
  n.links.assign(per_gpu, 0);
  n.equal.assign(per_gpu, 0);
  n.rings = rings;
  n.available = nvml.available();
  n.why = nvml.why();
  if (!n.available || P < 2) return n;
  sync_all();
  const auto before = nvml.read();
  for (int it = 0; it < rings; ++it) ring_once(0);
  sync_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto after = nvml.read();
  for (int p = 0; p < P; ++p) {
    if (!before[p].ok || !after[p].ok) continue;
    n.tx[p] = nvlink_tx_bytes(before[p], after[p]) / rings;
    n.rx[p] = nvlink_rx_bytes(before[p], after[p]) / rings;
    n.tx_link0[p] = static_cast<std::int64_t>(after[p].tx_link0 - before[p].tx_link0) * 1024 / rings;
    n.tx_sum[p] = static_cast<std::int64_t>(after[p].tx_sum - before[p].tx_sum) * 1024 / rings;
    n.links[p] = after[p].links_answered;
    n.equal[p] = before[p].per_link_equal && after[p].per_link_equal;
  }
  return n;
}

// Counted (sim/ring.h, the same schedule and split) vs posted vs NVLink bytes, per GPU; false when
// the posted bytes differ from the counted ones.
// Link p's bytes per run as the tile machine counts them for this run's method and direction.
std::int64_t counted_link_bytes(const Shape& s, const sim::ring::RingMachine& sim_ring, int p) {
  if (s.allgather) return sim::ring::allgather_link_bytes(s.cfg, p, s.backward);
  return sim_ring.link_bytes()[p];
}

bool print_bytes_table(const Shape& s, const sim::ring::RingMachine& sim_ring, const Validation& v, const Nvlink& nv) {
  const int P = s.P;
  std::printf("\n| GPU | rows | link sent: counted (flashsim ring%s) | posted to %s | NVLink TX measured (NVML) | "
              "NVLink RX measured | measured / counted |\n|---:|---|---:|---:|---:|---:|---:|\n",
              s.allgather ? ", all-gather" : "", s.copy ? "cudaMemcpyPeerAsync" : "NCCL");
  bool bytes_ok = true;
  for (int p = 0; p < P; ++p) {
    const std::int64_t counted = counted_link_bytes(s, sim_ring, p);
    if (P > 1) bytes_ok = bytes_ok && counted == v.posted_sent[p];
    std::string rws;
    for (const auto& sg : s.segs[p])
      rws += (rws.empty() ? "" : " + ") + std::to_string(sg.start) + ".." + std::to_string(sg.start + sg.rows - 1);
    char meas[64] = "-", meas_rx[64] = "-", ratio[32] = "-";
    if (nv.tx[p] >= 0) {
      std::snprintf(meas, sizeof meas, "%lld", static_cast<long long>(nv.tx[p]));
      std::snprintf(meas_rx, sizeof meas_rx, "%lld", static_cast<long long>(nv.rx[p]));
      if (counted > 0) std::snprintf(ratio, sizeof ratio, "%.3f", double(nv.tx[p]) / counted);
    }
    std::printf("| %d | %s | %lld | %lld | %s | %s | %s |\n", p, rws.c_str(), static_cast<long long>(counted),
                static_cast<long long>(v.posted_sent[p]), meas, meas_rx, ratio);
  }
  if (P > 1) {
    if (!nv.available)
      std::printf("NVLink not measured: %s\n", nv.why.c_str());
    else
      for (int p = 0; p < P; ++p)
        std::printf("NVML GPU %d: %d link scopes answered, %s; TX per ring: link-0 scope %lld B, sum over scopes %lld "
                    "B (%d rings)\n",
                    p, nv.links[p], nv.equal[p] ? "every scope reads the same (a GPU-wide counter)" : "scopes differ (per link)",
                    static_cast<long long>(nv.tx_link0[p]), static_cast<long long>(nv.tx_sum[p]), nv.rings);
  }
  return bytes_ok;
}

// Each GPU's work as the tile machine counts it, and its per-step compute and exchange times.
void print_work_tables(const Shape& s, const sim::ring::RingMachine& sim_ring, const Timing& t) {
  const int P = s.P;
  std::printf("\n| GPU | kernel calls (masked) | scores (flashsim ring) | HBM read B (model) | HBM written B (model) | "
              "peak held B: ring | peak held B: all-gather |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int p = 0; p < P; ++p) {
    const auto& dv = sim_ring.devices()[p];
    // the tile machine models the forward's HBM bytes only
    const std::string rd = s.backward ? "-" : std::to_string(dv.hbm_read), wr = s.backward ? "-" : std::to_string(dv.hbm_written);
    std::printf("| %d | %lld (%lld) | %lld | %s | %s | %lld | %lld |\n", p, static_cast<long long>(dv.pairs),
                static_cast<long long>(dv.masked_pairs), static_cast<long long>(dv.score_elems * s.H), rd.c_str(),
                wr.c_str(), static_cast<long long>(dv.resident_peak),
                static_cast<long long>(sim::ring::allgather_resident_peak(s.cfg, p, s.backward)));
  }
  std::printf("load balance (counted): busiest GPU %.3fx the mean GPU's scores\n",
              sim::ring::score_imbalance(sim_ring.devices()));
  // start: when the step's stream got past its waits (its block arrived), after the GPU's step 0 began;
  // compute: from there to the step's end, which also waits for the step before (the merges' order)
  std::printf("\n| GPU | step | block | start ms | compute ms | exchange ms |\n|---:|---:|---:|---:|---:|---:|\n");
  for (int p = 0; p < P; ++p)
    for (int st = 0; st < P; ++st) {
      char ex[32] = "-";
      if (t.step_comm[p][st] > 0) std::snprintf(ex, sizeof ex, "%.3f", t.step_comm[p][st]);
      std::printf("| %d | %d | %d | %.3f | %.3f | %s |\n", p, st, ((p - st) % P + P) % P, t.step_start[p][st],
                  t.step_comp[p][st], ex);
    }
}

// Times, overlap, scaling and the one-line RESULT.
void print_summary(const RingOptions& opt, const Shape& s, const sim::ring::RingMachine& sim_ring, const Validation& v,
                   const Timing& t, const Nvlink& nv, bool bytes_ok) {
  const int P = s.P;
  const double hidden = P > 1 ? std::clamp(t.comp + t.comm - t.ring, 0.0, t.comm) : 0.0;
  const double overlap = P > 1 && t.comm > 0 ? hidden / t.comm : 0.0;
  const double link_gbs = P > 1 && t.comm > 0 ? double(v.posted_sent[0]) / (t.comm * 1e-3) / 1e9 : 0.0;
  // the backward's five products against the forward's two
  const double flop = (s.backward ? 10.0 : 4.0) * s.H * double(s.N) * double(s.N) * s.D * (opt.causal ? 0.5 : 1.0);
  const char* what = s.allgather ? "all-gather" : "ring";
  const double eff = t.one / (P * t.ring);
  std::printf("\n%s times (median of %d batches; runs per batch: %s %d, compute %d, exchange %d, one GPU %d; each "
              "batch after %d ms of its mode untimed; the one-GPU baseline %s):\n"
              "  %s %.3f ms, compute only %.3f ms, exchange only %.3f ms (%.0f GB/s per GPU sent), one GPU on all n "
              "%.3f ms\n  %s %.0f TFLOP/s per GPU, one GPU %.0f TFLOP/s\n",
              s.backward ? "backward" : "forward", opt.repeats, what, t.it_ring, t.it_comp, t.it_comm, t.it_one,
              opt.settle_ms,
              opt.baseline == "all" && P > 1 ? "on every GPU at once, GPU 0's time" : "on GPU 0 alone", what, t.ring,
              t.comp, t.comm, link_gbs, t.one, what,
              flop / (t.ring * 1e-3) / P / 1e12, flop / (t.one * 1e-3) / 1e12);
  std::printf("overlap: %.3f ms of the %.3f ms exchange hidden = %.0f%% (hidden = compute + exchange - ring)\n", hidden,
              t.comm, 100 * overlap);
  std::printf("scaling efficiency vs one GPU at the same n: %.1f%% (speed-up %.2fx on %d GPUs)\n", 100 * eff,
              t.one / t.ring, P);
  if (!bytes_ok) std::printf("error: the posted bytes differ from the counted bytes\n");
  std::string clock_fields;  // --sm-clock: the median SM clock of each mode's timed batches, all GPUs
  if (opt.sm_clock_us > 0) {
    const auto mhz = [](const std::vector<double>& v) { return v.empty() ? 0.0 : median(v); };
    std::printf("SM clock between steps (median over every GPU and timed batch): ring %.0f MHz, compute only %.0f MHz, "
                "one GPU %.0f MHz\n",
                mhz(t.mhz_ring), mhz(t.mhz_comp), mhz(t.mhz_one));
    clock_fields = " sm_mhz_ring=" + std::to_string(static_cast<int>(mhz(t.mhz_ring) + 0.5)) +
                   " sm_mhz_comp=" + std::to_string(static_cast<int>(mhz(t.mhz_comp) + 0.5)) +
                   " sm_mhz_one=" + std::to_string(static_cast<int>(mhz(t.mhz_one) + 0.5));
  }
  const std::int64_t counted0 = P > 1 ? counted_link_bytes(s, sim_ring, 0) : 0;
  const std::int64_t held0 =
      s.allgather ? sim::ring::allgather_resident_peak(s.cfg, 0, s.backward) : sim_ring.devices()[0].resident_peak;
  std::printf("RESULT method=%s direction=%s gpus=%d n=%lld heads=%d d=%d dtype=%s mask=%s split=%s transport=%s ctas=%d valid=%s "
              "err_one=%.3g err_ref=%.3g err_lse=%.3g counted=%lld posted=%lld nvlink_tx=%lld nvlink_rx=%lld "
              "ring_ms=%.4f comp_ms=%.4f comm_ms=%.4f one_ms=%.4f overlap=%.3f eff=%.4f imbalance=%.3f held=%lld streams=%d launch=%s "
              "settle_ms=%d baseline=%s%s\n",
              opt.method.c_str(), s.backward ? "backward" : "forward", P, static_cast<long long>(s.N), s.H, s.D, opt.dtype.c_str(), opt.causal ? "causal" : "full",
              opt.split.c_str(), opt.transport.c_str(), opt.nccl_ctas, v.ok && bytes_ok ? "PASS" : "FAIL", v.err_one,
              v.err_ref, v.err_lse, static_cast<long long>(counted0), static_cast<long long>(v.posted_sent[0]),
              static_cast<long long>(nv.tx[0]), static_cast<long long>(nv.rx[0]), t.ring, t.comp, t.comm, t.one, overlap,
              eff, sim::ring::score_imbalance(sim_ring.devices()), static_cast<long long>(held0), s.streams,
              takes_step_launch(opt, s, s.backward) ? "step" : "pair", opt.settle_ms, opt.baseline.c_str(),
              clock_fields.c_str());
}

// --transport auto: the copy engines when every GPU reaches both ring neighbours by peer access
// (they moved the blocks 2.5x faster than NCCL and take no SMs), else NCCL; the all-gather is NCCL's.
RingOptions with_transport(const RingOptions& opt) {
  RingOptions r = opt;
  if (r.transport != "auto") return r;
  bool peers = r.method == "ring" && r.gpus > 1;
  for (int p = 0; peers && p < r.gpus; ++p)
    for (int q : {(p + 1) % r.gpus, (p + r.gpus - 1) % r.gpus}) {
      int can = 0;
      if (q != p && (cudaDeviceCanAccessPeer(&can, p, q) != cudaSuccess || !can)) peers = false;
    }
  (void)cudaGetLastError();
  r.transport = peers ? "copy" : "nccl";
  return r;
}

}  // namespace ring_detail

int ring_main(const RingOptions& opt) {
  // everything that cannot run is refused before any GPU is touched; the machine's GPU count is
  // checked before n is checked against --gpus (ring_options_error)
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess) have = 0;
  (void)cudaGetLastError();
  using namespace ring_detail;
  if (const std::string why = ring_options_error(opt, have); !why.empty()) return fail(why);

  const RingOptions resolved = with_transport(opt);
  const Shape shape(resolved);
  bool ok = false, bytes_ok = false;
  {
    RingRun run(resolved, shape);
    run.print_header();
    run.setup();
    const Validation v = run.validate();
    const Timing t = run.time_modes();
    const Nvlink nv = run.measure_nvlink(std::max(t.it_ring, 4));
    sim::ring::RingMachine sim_ring(shape.cfg);
    sim_ring.execute(resolved.backward ? sim::ring::backward_schedule(shape.cfg) : sim::ring::forward_schedule(shape.cfg));
    bytes_ok = print_bytes_table(shape, sim_ring, v, nv);
    print_work_tables(shape, sim_ring, t);
    print_summary(resolved, shape, sim_ring, v, t, nv, bytes_ok);
    ok = v.ok;
  }
  return ok && bytes_ok ? 0 : 1;
}

}  // namespace flashsim::gpu

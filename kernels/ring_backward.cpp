// `flashsim-gpu ring --backward` and `--method allgather` (kernels/ring.h): the ring backward on
// the fast backward kernel, and the all-gather alternative in both directions.
//
// Ring backward, GPU p at step s with K/V block b = p - s in hand: every (Q chunk, K chunk) pair
// is one call of attention_backward_fast_accumulate on the forward's O and lse (the global ones, so
// each pair's P = exp(S - lse) is the true probability and the gradients are plain sums over
// pairs). The kernel adds the pair's dQ into its query chunk's fp32 accumulator (it stays home)
// and its dK and dV into W, this step's fp32 partials of block b, in its own epilogue: no extra
// pass over the gradients. Then W += R (block b's partials from every GPU before p, which arrived
// from p - 1 while p computed) and W goes to p + 1. After step P - 1 each block has made P hops
// and lands at its owner: the schedule sim::ring::backward_schedule counts. The last hop carries
// finished sums, so the sender rounds them to the run's type as it adds (the values the one-GPU
// backward's outputs take) and the hop moves half the bytes of an fp32 one, straight into the
// owner's output.
//
// All-gather: each GPU gathers every K/V block by NCCL (computing its own block meanwhile), then
// computes all its pairs; the backward keeps every block's fp32 dK/dV partials and ends with one
// NCCL reduce-scatter that leaves each GPU its own block's sums, then rounds them to the run's type.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <thread>

#include "kernels/fast.h"
#include "kernels/ring_run.h"

namespace flashsim::gpu::ring_detail {

// Backward buffers: the global dO and the one-GPU gradients on GPU 0, and on every GPU its dO
// chunks, dQ, the fp32 dK/dV accumulators (the all-gather's for every block) and one backward
// workspace per query chunk (its fp32 dQ accumulator sums the chunk's pairs).
void RingRun::setup_backward() {
  const std::size_t e = s_.e, all = s_.all;
  CUDA_CHECK(cudaSetDevice(0));
  gdo_ = DevBuf(all * e);
  gdq_ = DevBuf(all * e);
  gdk_ = DevBuf(all * e);
  gdv_ = DevBuf(all * e);
  gws_ = DevBuf(::flashsim::gpu::attention_backward_fast_workspace_bytes(s_.H, static_cast<int>(s_.N), s_.D));
  fill_uniform(gdo_.get(), all, s_.dt, opt_.seed + 3, -1.f, 1.f);
  CUDA_CHECK(cudaDeviceSynchronize());
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    x.dout = DevBuf(s_.blk * e);
    x.dq = DevBuf(s_.blk * e);
    for (auto& b : x.dkv_w) b = DevBuf(2 * s_.blk * 4);
    x.dkv_out = DevBuf(2 * s_.blk * e);
    if (!s_.allgather) {
      for (auto& b : x.dkv_r) b = DevBuf(2 * s_.blk * 4);
      if (s_.P > 1) x.dkv_send = DevBuf(2 * s_.blk * e);
    }
    if (backward_step_launch())
      x.ws[0] = DevBuf(::flashsim::gpu::attention_backward_fast_workspace_bytes(s_.nc * s_.H, static_cast<int>(s_.c), s_.D));
    else
      for (int i = 0; i < s_.nc; ++i)
        x.ws[i] = DevBuf(::flashsim::gpu::attention_backward_fast_workspace_bytes(s_.H, static_cast<int>(s_.c), s_.D));
    if (s_.allgather) x.dkv_all = DevBuf(static_cast<std::size_t>(s_.P) * 2 * s_.blk * 4);
    chunk_copy(x.dout.get(), x.id, gdo_.get(), true);
  }
}

// GPU x's pairs with block b (K then V at kbase) on stream cs: dQ added into the chunks' workspaces
// (start_dq cleared them at the run's start), dK / dV into dkv (fp32, K part then V part, each
// [nc][H][c][D]). With the step launch one kernel does every pair of the step, each key tile
// summing its query chunks in registers; else a launch per pair, a chunk's first pair writing and
// the rest adding, all inside the backward kernel. A K chunk no pair of this step touches gets zeros.
void RingRun::backward_pairs(Gpu& x, int b, const char* kbase, float* dkv, cudaStream_t cs) {
  const int nc = s_.nc;
  const std::size_t e = s_.e, chunk = s_.chunk;
  if (backward_step_launch()) {
    const int kinds = step_kinds(x.id, b);
    with_type(s_.dt, [&](auto t) {
      using T = decltype(t);
      attention_backward_fast_ring_step<T>(static_cast<const T*>(x.q.get()), reinterpret_cast<const T*>(kbase),
                                           reinterpret_cast<const T*>(kbase + nc * chunk * e),
                                           static_cast<const T*>(x.dout.get()), dkv, dkv + nc * chunk, x.ws[0].get(),
                                           s_.H, static_cast<int>(s_.c), s_.D, nc, kinds, cs);
    });
    return;
  }
  std::vector<char> wrote(static_cast<std::size_t>(nc), 0);
  for (int i = 0; i < nc; ++i)
    for (int j = 0; j < nc; ++j) {
      const auto kind = sim::ring::pair_kind(s_.segs[x.id][i], s_.segs[b][j], opt_.causal);
      if (kind == sim::ring::PairKind::Skip) continue;
      const char* at_q = static_cast<const char*>(x.q.get()) + i * chunk * e;
      const char* at_o = static_cast<const char*>(x.o.get()) + i * chunk * e;
      const char* at_do = static_cast<const char*>(x.dout.get()) + i * chunk * e;
      const float* li = x.lse.as<float>() + i * s_.lse_chunk;
      fast_backward_accumulate(s_.dt, at_q, kbase + j * chunk * e, kbase + (nc + j) * chunk * e, at_o, at_do, li,
                               dkv + j * chunk, dkv + (nc + j) * chunk, !wrote[j], x.ws[i].get(), false, s_.H,
                               static_cast<int>(s_.c), s_.D, kind == sim::ring::PairKind::Masked, cs);
      wrote[j] = 1;
    }
  for (int j = 0; j < nc; ++j)
    if (!wrote[j]) {
      CUDA_CHECK(cudaMemsetAsync(dkv + j * chunk, 0, chunk * 4, cs));
      CUDA_CHECK(cudaMemsetAsync(dkv + (nc + j) * chunk, 0, chunk * 4, cs));
    }
}

// At a run's start: the query chunks' fp32 dQ accumulators (whole workspaces) to zero. The pairs of
// every step then add into them, on either stream, with the kernel's reductions. The step launch
// also computes the chunks' statistics here, once for the ring (the per-pair launches redo them).
void RingRun::start_dq(Gpu& x, cudaStream_t cs) {
  if (backward_step_launch()) {
    with_type(s_.dt, [&](auto t) {
      using T = decltype(t);
      attention_backward_fast_ring_prepare<T>(static_cast<const T*>(x.o.get()), static_cast<const T*>(x.dout.get()),
                                              x.lse.as<float>(), x.ws[0].get(), s_.nc * s_.H,
                                              static_cast<int>(s_.c), s_.D, cs);
    });
    return;
  }
  for (int i = 0; i < s_.nc; ++i) CUDA_CHECK(cudaMemsetAsync(x.ws[i].get(), 0, x.ws[i].bytes(), cs));
}

// After the last pair: each query chunk's fp32 dQ (in its workspace) into x.dq, type T.
void RingRun::finish_dq(Gpu& x, cudaStream_t cs) {
  if (backward_step_launch()) {
    fast_backward_finish_dq(s_.dt, x.ws[0].get(), x.dq.get(), s_.nc * s_.H, static_cast<int>(s_.c), s_.D, cs);
    return;
  }
  for (int i = 0; i < s_.nc; ++i)
    fast_backward_finish_dq(s_.dt, x.ws[i].get(), static_cast<char*>(x.dq.get()) + i * s_.chunk * s_.e, s_.H,
                            static_cast<int>(s_.c), s_.D, cs);
}

// Step s's dK/dV hop through NCCL: W (this step's sums) to the next GPU, the next step's R from
// the one before, once this step's compute (and its W += R) is done.
void RingRun::exchange_dkv_nccl(int s, int mode) {
  const int P = s_.P;
  const bool home = s == P - 1;  // the last hop: the rounded sums into the owner's output
  const std::int64_t elems = 2 * static_cast<std::int64_t>(s_.blk);
  const auto bytes = static_cast<std::int64_t>(dkv_hop_bytes(s));
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    if (mode == 0) CUDA_CHECK(cudaStreamWaitEvent(x.comm, x.comp_end[s], 0));
    CUDA_CHECK(cudaEventRecord(x.dkv_start[s], x.comm));
  }
  NCCL_CHECK(ncclGroupStart());
  for (auto& x : g_) {
    if (home) {
      NCCL_CHECK(ncclSend(x.dkv_send.get(), elems, s_.nt, (x.id + 1) % P, x.nccl, x.comm));
      NCCL_CHECK(ncclRecv(x.dkv_out.get(), elems, s_.nt, (x.id + P - 1) % P, x.nccl, x.comm));
    } else {
      NCCL_CHECK(ncclSend(x.dkv_w[s % 2].get(), elems, ncclFloat32, (x.id + 1) % P, x.nccl, x.comm));
      NCCL_CHECK(ncclRecv(x.dkv_r[(s + 1) % 2].get(), elems, ncclFloat32, (x.id + P - 1) % P, x.nccl, x.comm));
    }
    x.posted_sent += bytes;
    x.posted_recv += bytes;
  }
  NCCL_CHECK(ncclGroupEnd());
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    CUDA_CHECK(cudaEventRecord(x.dkv_end[s], x.comm));
  }
}

// The same hop on the copy engines: GPU x pushes W into GPU x+1's R buffer once x's compute is
// done and x+1 has added what that buffer held before (its step s-1, or its last step of the run
// before).
void RingRun::exchange_dkv_copy(int s, int mode) {
  const int P = s_.P;
  const bool home = s == P - 1;  // the last hop: the rounded sums into the owner's output
  const std::size_t bytes = dkv_hop_bytes(s);
  for (auto& x : g_) {
    Gpu& y = g_[(x.id + 1) % P];
    CUDA_CHECK(cudaSetDevice(x.id));
    if (mode != 0) continue;
    CUDA_CHECK(cudaStreamWaitEvent(x.comm, x.acc_done[s], 0));  // W final
    // R on y free: y's W += R of the step before read it
    if (s > 0) CUDA_CHECK(cudaStreamWaitEvent(x.comm, y.acc_done[s - 1], 0));
    else if (runs_ > 0) CUDA_CHECK(cudaStreamWaitEvent(x.comm, y.acc_done[P - 1], 0));
  }
  for (auto& x : g_) {
    Gpu& y = g_[(x.id + 1) % P];
    CUDA_CHECK(cudaSetDevice(x.id));
    CUDA_CHECK(cudaEventRecord(x.dkv_start[s], x.comm));
    if (home) CUDA_CHECK(cudaMemcpyPeerAsync(y.dkv_out.get(), y.id, x.dkv_send.get(), x.id, bytes, x.comm));
    else CUDA_CHECK(cudaMemcpyPeerAsync(y.dkv_r[(s + 1) % 2].get(), y.id, x.dkv_w[s % 2].get(), x.id, bytes, x.comm));
    CUDA_CHECK(cudaEventRecord(x.dkv_end[s], x.comm));
    x.posted_sent += static_cast<std::int64_t>(bytes);
    y.posted_recv += static_cast<std::int64_t>(bytes);
  }
}

// One backward ring: P steps, each a K/V hop (as the forward's), the step's pairs, W += R, and the
// dK/dV hop. Step s runs on stream comp[s % streams]; its comp_end waits for the step before, so
// that it marks every step up to s done (the last step's dQ conversion needs them all). mode as
// ring_once.
void RingRun::ring_once_backward(int mode) {
  const int P = s_.P;
  for (int s = 0; s < P; ++s, ++gstep_) {
    const int cur = buffer_in_hand(), nxt = 1 - cur;
    if (s + 1 < P && mode != 1) {
      if (s_.copy) exchange_copy(s, cur, nxt, mode);
      else exchange_nccl(s, cur, nxt, mode);
    }
    if (mode != 2)
      for (auto& x : g_) {
        CUDA_CHECK(cudaSetDevice(x.id));
        const cudaStream_t cs = step_stream(x, s);
        const Gpu& from = s_.copy ? g_[(x.id + P - 1) % P] : x;  // whose events mark an arrival at x
        if (mode == 0) {
          if (s > 0) CUDA_CHECK(cudaStreamWaitEvent(cs, from.comm_end[s - 1], 0));  // K/V of this step
          // W[s % 2] is free once its send of step s - 2 (or the whole run before) is done
          if (s >= 2) CUDA_CHECK(cudaStreamWaitEvent(cs, x.dkv_end[s - 2], 0));
          else if (runs_ > 0 && P > 1) CUDA_CHECK(cudaStreamWaitEvent(cs, x.dkv_end[P - 1], 0));
        }
        if (s == 0) {  // after the run before (its dQ conversion read the workspaces)
          if (runs_ > 0 && s_.streams > 1) CUDA_CHECK(cudaStreamWaitEvent(cs, x.comp_end[P - 1], 0));
          start_dq(x, cs);
        }
        CUDA_CHECK(cudaEventRecord(x.comp_start[s], cs));
        // the other stream's first step adds into the workspaces this one just cleared
        if (s == 1 && s_.streams > 1) CUDA_CHECK(cudaStreamWaitEvent(cs, x.comp_start[0], 0));
        const int b = ((x.id - s) % P + P) % P;
        float* w = x.dkv_w[s % 2].as<float>();
        backward_pairs(x, b, static_cast<const char*>(x.kv[cur].get()), w, cs);
        CUDA_CHECK(cudaEventRecord(x.kv_free[s], cs));
        if (s > 0) {  // plus block b's partials from the GPUs before
          if (mode == 0) CUDA_CHECK(cudaStreamWaitEvent(cs, from.dkv_end[s - 1], 0));
          // the last step's sums are final: rounded to the run's type as they are added, for the hop home
          if (s == P - 1) ring_sum_to(x.dkv_send.get(), w, x.dkv_r[s % 2].as<float>(), 2 * s_.blk, s_.dt, cs);
          else ring_add_f32(w, x.dkv_r[s % 2].as<float>(), 2 * s_.blk, cs);
        } else if (P == 1) {
          ring_sum_to(x.dkv_out.get(), w, nullptr, 2 * s_.blk, s_.dt, cs);  // one GPU: its own output
        }
        // W is final and R free here; the hops wait for this, not for the steps before (comp_end)
        CUDA_CHECK(cudaEventRecord(x.acc_done[s], cs));
        if (s > 0 && s_.streams > 1) CUDA_CHECK(cudaStreamWaitEvent(cs, x.comp_end[s - 1], 0));
        if (s == P - 1) finish_dq(x, cs);
        CUDA_CHECK(cudaEventRecord(x.comp_end[s], cs));
        clock_sample(x, cs);
      }
    if (P > 1 && mode != 1) {
      if (s_.copy) exchange_dkv_copy(s, mode);
      else exchange_dkv_nccl(s, mode);
    }
  }
  ++runs_;
}

// One all-gather run: the gather (NCCL) on the comm stream while the compute stream does the own
// block; then every other block from the gathered buffer; backward, a reduce-scatter of dK/dV.
void RingRun::allgather_once(int mode) {
  const int P = s_.P, nc = s_.nc;
  const std::size_t e = s_.e;
  std::vector<char> started(static_cast<std::size_t>(P * nc), 0);
  if (mode != 1 && P > 1) {
    for (auto& x : g_) {
      CUDA_CHECK(cudaSetDevice(x.id));
      // the gather overwrites what the run before computed with
      if (runs_ > 0 && mode == 0) CUDA_CHECK(cudaStreamWaitEvent(x.comm, x.comp_end[P - 1], 0));
      CUDA_CHECK(cudaEventRecord(x.comm_start[0], x.comm));
    }
    NCCL_CHECK(ncclGroupStart());
    for (auto& x : g_) {
      NCCL_CHECK(ncclAllGather(x.kv[0].get(), x.kv_all.get(), kv_elems_, s_.nt, x.nccl, x.comm));
      x.posted_sent += (P - 1) * kv_elems_ * static_cast<std::int64_t>(e);
      x.posted_recv += (P - 1) * kv_elems_ * static_cast<std::int64_t>(e);
    }
    NCCL_CHECK(ncclGroupEnd());
    for (auto& x : g_) {
      CUDA_CHECK(cudaSetDevice(x.id));
      CUDA_CHECK(cudaEventRecord(x.comm_end[0], x.comm));
    }
  }
  if (mode != 2)
    for (auto& x : g_) {
      CUDA_CHECK(cudaSetDevice(x.id));
      // backward: the partials are free once the run before's reduce-scatter has read them
      if (run_backward_ && runs_ > 0 && mode == 0 && P > 1) CUDA_CHECK(cudaStreamWaitEvent(x.comp[0], x.dkv_end[0], 0));
      for (int s = 0; s < P; ++s) {
        if (s == 1 && mode == 0 && P > 1) CUDA_CHECK(cudaStreamWaitEvent(x.comp[0], x.comm_end[0], 0));
        CUDA_CHECK(cudaEventRecord(x.comp_start[s], x.comp[0]));
        const int b = ((x.id - s) % P + P) % P;
        const char* kbase = s == 0 ? static_cast<const char*>(x.kv[0].get())
                                   : static_cast<const char*>(x.kv_all.get()) + b * kv_elems_ * e;
        if (run_backward_) {
          float* dkv = P > 1 ? x.dkv_all.as<float>() + b * 2 * s_.blk : x.dkv_w[0].as<float>();
          if (s == 0) start_dq(x, x.comp[0]);
          backward_pairs(x, b, kbase, dkv, x.comp[0]);
          if (P == 1) ring_sum_to(x.dkv_out.get(), dkv, nullptr, 2 * s_.blk, s_.dt, x.comp[0]);
          if (s == P - 1) finish_dq(x, x.comp[0]);
        } else {
          forward_pairs(x, b, kbase, started, x.comp[0], 0, nullptr);
        }
        CUDA_CHECK(cudaEventRecord(x.comp_end[s], x.comp[0]));
      }
    }
  if (run_backward_ && mode != 1 && P > 1) {
    const std::int64_t elems = 2 * static_cast<std::int64_t>(s_.blk);
    for (auto& x : g_) {
      CUDA_CHECK(cudaSetDevice(x.id));
      if (mode == 0) CUDA_CHECK(cudaStreamWaitEvent(x.comm, x.comp_end[P - 1], 0));
      CUDA_CHECK(cudaEventRecord(x.dkv_start[0], x.comm));
    }
    NCCL_CHECK(ncclGroupStart());
    for (auto& x : g_) {
      NCCL_CHECK(ncclReduceScatter(x.dkv_all.get(), x.dkv_w[0].get(), elems, ncclFloat32, ncclSum, x.nccl, x.comm));
      x.posted_sent += (P - 1) * elems * 4;
      x.posted_recv += (P - 1) * elems * 4;
    }
    NCCL_CHECK(ncclGroupEnd());
    for (auto& x : g_) {
      CUDA_CHECK(cudaSetDevice(x.id));
      ring_sum_to(x.dkv_out.get(), x.dkv_w[0].as<float>(), nullptr, 2 * s_.blk, s_.dt, x.comm);
      CUDA_CHECK(cudaEventRecord(x.dkv_end[0], x.comm));
    }
  }
  gstep_ += P;
  ++runs_;
}

// The backward from poisoned accumulators, against the one-GPU backward on all n and float64 rows.
Validation RingRun::validate_backward() {
  const int P = s_.P;
  const std::size_t all = s_.all;
  Validation v;
  for (auto& x : g_) {
    CUDA_CHECK(cudaSetDevice(x.id));
    for (DevBuf* b : {&x.dq, &x.dkv_w[0], &x.dkv_w[1], &x.dkv_r[0], &x.dkv_r[1], &x.dkv_all, &x.dkv_out, &x.dkv_send})
      if (b->get()) CUDA_CHECK(cudaMemset(b->get(), 0xff, b->bytes()));
    x.posted_sent = x.posted_recv = 0;
  }
  sync_all();
  gstep_ = 0;
  runs_ = 0;
  ring_once(0);
  sync_all();
  v.posted_sent.resize(static_cast<std::size_t>(P));
  v.posted_recv.resize(static_cast<std::size_t>(P));
  // each GPU's own block's dK / dV in the run's type: the last hop's arrival (ring), the
  // reduce-scatter's sums rounded (all-gather), or the only step's (one GPU)
  CUDA_CHECK(cudaSetDevice(0));
  DevBuf ring_dq(all * s_.e), ring_dk(all * s_.e), ring_dv(all * s_.e);
  for (auto& x : g_) {
    v.posted_sent[x.id] = x.posted_sent;
    v.posted_recv[x.id] = x.posted_recv;
    CUDA_CHECK(cudaSetDevice(x.id));
    const DevBuf& f = x.dkv_out;
    v.nonfinite += count_nonfinite(x.dq.get(), s_.blk, s_.dt) + count_nonfinite(f.get(), 2 * s_.blk, s_.dt);
    chunk_copy(x.dq.get(), x.id, ring_dq.get(), false);
    chunk_copy(f.get(), x.id, ring_dk.get(), false);
    chunk_copy(static_cast<char*>(f.get()) + s_.blk * s_.e, x.id, ring_dv.get(), false);
  }
  CUDA_CHECK(cudaSetDevice(0));
  for (DevBuf* b : {&gdq_, &gdk_, &gdv_}) CUDA_CHECK(cudaMemset(b->get(), 0xff, b->bytes()));
  CUDA_CHECK(cudaDeviceSynchronize());
  one_gpu();
  CUDA_CHECK(cudaStreamSynchronize(one_stream_));
  const auto h_dq = to_host(ring_dq.get(), 0, all, s_.dt), h_dk = to_host(ring_dk.get(), 0, all, s_.dt),
             h_dv = to_host(ring_dv.get(), 0, all, s_.dt);
  const std::vector<float>* ring[3] = {&h_dq, &h_dk, &h_dv};
  const DevBuf* one[3] = {&gdq_, &gdk_, &gdv_};
  const char* names[3] = {"dQ", "dK", "dV"};
  char buf[160];
  for (int t = 0; t < 3; ++t) {
    const auto h_one = to_host(one[t]->get(), 0, all, s_.dt);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < all; ++i) {
      const double dlt = double((*ring[t])[i]) - h_one[i];
      num += dlt * dlt;
      den += double(h_one[i]) * h_one[i];
      v.err_one_max = std::max(v.err_one_max, std::abs(dlt));
    }
    const double err = std::isfinite(num) && den > 0 ? std::sqrt(num / den) : INFINITY;
    v.err_one = std::max(v.err_one, err);
    std::snprintf(buf, sizeof buf, "%s%s vs one GPU %.3g", t ? ", " : "", names[t], err);
    v.grads += buf;
  }
  reference_grad_rows(h_dq, h_dk, h_dv, v);
  // dK / dV: each pair's part is rounded to the dtype before the fp32 sum, and the sum once more at the
  // end (the output's type); dQ sums in fp32
  const double tol = s_.dt == Dtype::BF16 ? 2e-2 : 1e-2;
  v.ok = v.nonfinite == 0 && v.err_one <= tol && v.err_ref <= tol;
  std::printf("\nbackward validation (dO uniform in [-1, 1]; O and lse from the forward above; accumulators poisoned "
              "first): %llu non-finite gradients;\n  %s (relative L2; max |d| %.3g)\n  ring vs float64 on %zu query "
              "rows (dQ) and as many key rows (dK, dV): worst relative L2 %.3g, max |d| %.3g\n  tolerance: relative "
              "%.0e: %s\n",
              static_cast<unsigned long long>(v.nonfinite), v.grads.c_str(), v.err_one_max, v.ref_rows, v.err_ref,
              v.err_ref_max, tol, v.ok ? "PASS" : "FAIL");
  return v;
}

// float64 gradient rows on the backward's own inputs (Q, K, V, dO, and the forward's O and lse):
// dQ of sampled query rows, dK and dV of as many key rows, picked as the forward's reference
// rows; sets v.err_ref (the worst of the three tensors), err_ref_max, ref_rows.
void RingRun::reference_grad_rows(const std::vector<float>& dq, const std::vector<float>& dk,
                                  const std::vector<float>& dv, Validation& v) {
  const int D = s_.D;
  const std::int64_t N = s_.N;
  const std::vector<RefRow> rows = reference_picks();
  struct Head {
    std::vector<float> q, k, v, dout;
    std::vector<double> dsum;  // D_i = dO_i . O_i
  };
  std::map<int, Head> heads;
  const std::size_t len = static_cast<std::size_t>(N) * D;
  for (const auto& r : rows)
    if (!heads.count(r.h)) {
      Head& hd = heads[r.h];
      const std::size_t off = static_cast<std::size_t>(r.h) * len;
      hd.q = to_host(gq_.get(), off, len, s_.dt);
      hd.k = to_host(gk_.get(), off, len, s_.dt);
      hd.v = to_host(gv_.get(), off, len, s_.dt);
      hd.dout = to_host(gdo_.get(), off, len, s_.dt);
      hd.dsum.assign(static_cast<std::size_t>(N), 0.0);
      for (std::int64_t i = 0; i < N; ++i)
        for (int u = 0; u < D; ++u) hd.dsum[i] += double(hd.dout[i * D + u]) * ring_o_[off + i * D + u];
    }
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  // per row and tensor (dQ, dK, dV): squared error, squared reference, max |error|
  std::vector<std::array<double, 9>> acc(rows.size());
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < rows.size(); ++t)
    pool.emplace_back([&, t] {
      const auto& [h, row] = rows[t];
      const Head& hd = heads.at(h);
      const float* lse = ring_lse_.data() + static_cast<std::size_t>(h) * N;
      auto dot = [&](const std::vector<float>& a, std::int64_t i, const std::vector<float>& b, std::int64_t j) {
        double s = 0;
        for (int u = 0; u < D; ++u) s += double(a[i * D + u]) * b[j * D + u];
        return s;
      };
      std::vector<double> gq(D, 0.0), gk(D, 0.0), gv(D, 0.0);
      // dQ_row = scale sum_j P_rj (dO_r . V_j - D_r) K_j over the keys the row sees
      const std::int64_t keys = opt_.causal ? row + 1 : N;
      for (std::int64_t j = 0; j < keys; ++j) {
        const double p = std::exp(scale * dot(hd.q, row, hd.k, j) - lse[row]);
        const double ds = p * (dot(hd.dout, row, hd.v, j) - hd.dsum[row]);
        for (int u = 0; u < D; ++u) gq[u] += ds * hd.k[j * D + u];
      }
      // key row j = row: dK_j = scale sum_i P_ij (dO_i . V_j - D_i) Q_i, dV_j = sum_i P_ij dO_i
      for (std::int64_t i = opt_.causal ? row : 0; i < N; ++i) {
        const double p = std::exp(scale * dot(hd.q, i, hd.k, row) - lse[i]);
        const double ds = p * (dot(hd.dout, i, hd.v, row) - hd.dsum[i]);
        for (int u = 0; u < D; ++u) {
          gk[u] += ds * hd.q[i * D + u];
          gv[u] += p * hd.dout[i * D + u];
        }
      }
      const std::size_t at = (static_cast<std::size_t>(h) * N + row) * D;
      std::array<double, 9> r{};
      for (int u = 0; u < D; ++u) {
        const double ref[3] = {scale * gq[u], scale * gk[u], gv[u]};
        const double got[3] = {dq[at + u], dk[at + u], dv[at + u]};
        for (int g = 0; g < 3; ++g) {
          const double d = got[g] - ref[g];
          r[3 * g] += d * d;
          r[3 * g + 1] += ref[g] * ref[g];
          r[3 * g + 2] = std::isfinite(d) ? std::max(r[3 * g + 2], std::abs(d)) : INFINITY;
        }
      }
      acc[t] = r;
    });
  for (auto& th : pool) th.join();
  for (int g = 0; g < 3; ++g) {
    double sn = 0, sd = 0;
    for (const auto& r : acc) sn += r[3 * g], sd += r[3 * g + 1], v.err_ref_max = std::max(v.err_ref_max, r[3 * g + 2]);
    v.err_ref = std::max(v.err_ref, std::isfinite(sn) && sd > 0 ? std::sqrt(sn / sd) : INFINITY);
  }
  v.ref_rows = rows.size();
}

}  // namespace flashsim::gpu::ring_detail

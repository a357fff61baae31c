/*
Kernels for the attention backward pass: given Q, K, V, O, dO ([bh, N, 64], bf16 or fp32) and the
forward's logsumexp (fp32), compute dQ, dK, dV. Same schedules as the tile machine's
AttentionBackward. P is never stored: every kernel recomputes P = exp(QK^T/sqrt(d) - lse).

Build: part of the CMake build (target `attention_backward`); run ./attention_backward [version] [size...]
  e.g. ./attention_backward 2 attn-bwd:128x2048x64

Both versions start with D = rowsum(dO * O) (fp32, one warp per row). 64 x 64 tiles, d = 64,
256 threads, 4 x 4 per thread as in attention_forward.cu.

version 1 is two passes (AttentionBackward::TwoPass):
  a dQ kernel, one block per Q tile looping over the visible KV tiles:
    dS = P * (dO V^T - D), dQ += dS K;
  then a dK/dV kernel, one block per KV tile looping over the visible Q tiles:
    dV += P^T dO, dK += dS^T Q.
  Both kernels run in one profiled range.
./attention_backward 1

version 2 is one kernel (AttentionBackward::AtomicDQ): the dK/dV kernel also adds dS K into an fp32
dQ accumulator in HBM with atomicAdd (zeroed first), and a last kernel converts it to dQ.
./attention_backward 2

Inputs O and logsumexp come from attention_forward.cu version 3 (run during setup, outside the
measured range). CPU reference: kernels/reference.cpp attention_backward (double) on up to
2 heads; outputs checked: dQ, dK, dV; tolerance fp32 1e-4, bf16 1e-2.

version 3 is FA2's backward on tensor cores (kernels/fast.h attention_backward_fast; bf16 or fp16,
d = 64 or 128, any n). A preprocessing kernel writes D = rowsum(dO * O) and lse * log2(e) into the
workspace (rows padded to 128, padding lse = +inf so P = 0 there) and zeroes an fp32 dQ
accumulator. The main kernel runs one block of 8 warps per 128-key tile; each warp owns 16 keys
and keeps their dK, dV accumulators in registers while the block walks the 64-query tiles that
see the keys (causal: tiles above the diagonal skipped, the diagonal masked). Per query tile:
S^T = K Q^T and dP^T = V dO^T, P^T = exp2(S^T scale log2e - lse2), dS^T = P^T (dP^T - D), all
in registers; dV += P^T dO and dK += dS^T Q take P^T, dS^T straight from the accumulators as the
A operand; dS^T goes through shared memory so that all 8 warps split dQ_tile = dS K, added to the
accumulator with float2 atomics. mma.sync m16n8k16 (fp32 accumulate) fed by ldmatrix (.trans for
the dO, Q, K and dS^T operands that are read along their rows), Q / dO / statistics tiles
double-buffered with cp.async, 16-byte chunks XOR-swizzled. A last kernel scales dQ and converts
it. Validated and timed by kernels/tools/bench_attention_backward_fast.cu (standalone nvcc build,
compiled with -DFLASHSIM_ATTN_BWD_FAST_ONLY, which leaves out versions 1-2 and their workload).
*/
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "kernels/attention.h"
#include "kernels/cuda_util.cuh"
#include "kernels/fast.h"
#include "kernels/mma.cuh"
#include "kernels/reference.h"

namespace flashsim::gpu {

#ifndef FLASHSIM_ATTN_BWD_FAST_ONLY

// ----------------------------------------------------------------------------
// GPU kernels

template <class T>
__global__ void __launch_bounds__(256) attn_bwd_dot_kernel(const T* __restrict__ o, const T* __restrict__ dout,
                                                           float* __restrict__ dsum, long long rows) {
  const long long row = blockIdx.x * 8LL + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const std::size_t off = static_cast<std::size_t>(row) * kHead;
  float acc = to_f(o[off + lane]) * to_f(dout[off + lane]) + to_f(o[off + lane + 32]) * to_f(dout[off + lane + 32]);
  acc = warp_sum(acc);
  if (lane == 0) dsum[row] = acc;
}

// One block per Q tile: dQ = scale * sum_j dS_ij K_j.
template <class T>
__global__ void __launch_bounds__(256) attn_bwd_dq_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                          const T* __restrict__ v, const T* __restrict__ dout,
                                                          const float* __restrict__ lse, const float* __restrict__ dsum,
                                                          T* __restrict__ dq, int n, bool causal, float scale) {
  extern __shared__ float smem[];
  float* qs = smem;
  float* dos = qs + kTileFloats;
  float* ks = dos + kTileFloats;
  float* vs = ks + kTileFloats;
  float* dss = vs + kTileFloats;
  const int i = blockIdx.x, bh = blockIdx.y;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const std::size_t base = static_cast<std::size_t>(bh) * n * kHead, sbase = static_cast<std::size_t>(bh) * n;
  load_tile(qs, q + base, i * kTile, n);
  load_tile(dos, dout + base, i * kTile, n);
  float l_r[4], d_r[4];
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int r = i * kTile + ty * 4 + a;
    l_r[a] = r < n ? lse[sbase + r] : 0.f;
    d_r[a] = r < n ? dsum[sbase + r] : 0.f;
  }
  float acc[4][4] = {};
  const int last_row = min(n, (i + 1) * kTile) - 1;
  const int tc = causal ? last_row / kTile + 1 : (n + kTile - 1) / kTile;
  for (int j = 0; j < tc; ++j) {
    __syncthreads();
    load_tile(ks, k + base, j * kTile, n);
    load_tile(vs, v + base, j * kTile, n);
    __syncthreads();
    float s[4][4] = {}, dp[4][4] = {};
#pragma unroll 8
    for (int kk = 0; kk < kHead; ++kk) {
      float qa[4], da[4], kb[4], vb[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        qa[a] = qs[(ty * 4 + a) * kLd + kk];
        da[a] = dos[(ty * 4 + a) * kLd + kk];
      }
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        kb[b] = ks[(tx + 16 * b) * kLd + kk];
        vb[b] = vs[(tx + 16 * b) * kLd + kk];
      }
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          s[a][b] += qa[a] * kb[b];
          dp[a][b] += da[a] * vb[b];
        }
    }
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int r = i * kTile + ty * 4 + a, c = j * kTile + tx + 16 * b;
        const bool ok = r < n && c < n && !(causal && c > r);
        const float p = ok ? __expf(s[a][b] * scale - l_r[a]) : 0.f;
        dss[(ty * 4 + a) * kLd + tx + 16 * b] = p * (dp[a][b] - d_r[a]);
      }
    __syncthreads();
#pragma unroll 8
    for (int c = 0; c < kTile; ++c) {
      float ds[4], kb[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) ds[a] = dss[(ty * 4 + a) * kLd + c];
#pragma unroll
      for (int b = 0; b < 4; ++b) kb[b] = ks[c * kLd + tx + 16 * b];
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) acc[a][b] += ds[a] * kb[b];
    }
  }
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int r = i * kTile + ty * 4 + a;
    if (r >= n) continue;
#pragma unroll
    for (int b = 0; b < 4; ++b) dq[base + static_cast<std::size_t>(r) * kHead + tx + 16 * b] = from_f<T>(acc[a][b] * scale);
  }
}

// One block per KV tile: dV = sum_i P_ij^T dO_i, dK = scale * sum_i dS_ij^T Q_i; with ATOMIC also
// dQ_accum[i] += dS_ij K_j (unscaled, fp32 atomics).
template <class T, bool ATOMIC>
__global__ void __launch_bounds__(256) attn_bwd_dkv_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                           const T* __restrict__ v, const T* __restrict__ dout,
                                                           const float* __restrict__ lse,
                                                           const float* __restrict__ dsum, T* __restrict__ dk,
                                                           T* __restrict__ dv, float* __restrict__ dq_acc, int n,
                                                           bool causal, float scale) {
  extern __shared__ float smem[];
  float* ks = smem;
  float* vs = ks + kTileFloats;
  float* qs = vs + kTileFloats;
  float* dos = qs + kTileFloats;
  float* pts = dos + kTileFloats;  // P^T tile: pts[c][r], c = key row, r = query row
  float* dsts = pts + kTileFloats; // dS^T tile
  float* stat = dsts + kTileFloats;  // lse[64], D[64] of the current Q tile
  const int j = blockIdx.x, bh = blockIdx.y;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const std::size_t base = static_cast<std::size_t>(bh) * n * kHead, sbase = static_cast<std::size_t>(bh) * n;
  load_tile(ks, k + base, j * kTile, n);
  load_tile(vs, v + base, j * kTile, n);
  float acc_k[4][4] = {}, acc_v[4][4] = {};
  const int tr = (n + kTile - 1) / kTile;
  const int i0 = causal ? (j * kTile) / kTile : 0;
  for (int i = i0; i < tr; ++i) {
    __syncthreads();
    load_tile(qs, q + base, i * kTile, n);
    load_tile(dos, dout + base, i * kTile, n);
    if (threadIdx.x < kTile) {
      const int r = i * kTile + threadIdx.x;
      stat[threadIdx.x] = r < n ? lse[sbase + r] : 0.f;
      stat[kTile + threadIdx.x] = r < n ? dsum[sbase + r] : 0.f;
    }
    __syncthreads();
    // this thread: key rows c = ty*4+a, query rows r = tx+16b
    float st[4][4] = {}, dpt[4][4] = {};
#pragma unroll 8
    for (int kk = 0; kk < kHead; ++kk) {
      float ka[4], va[4], qb[4], db[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        ka[a] = ks[(ty * 4 + a) * kLd + kk];
        va[a] = vs[(ty * 4 + a) * kLd + kk];
      }
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        qb[b] = qs[(tx + 16 * b) * kLd + kk];
        db[b] = dos[(tx + 16 * b) * kLd + kk];
      }
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          st[a][b] += ka[a] * qb[b];
          dpt[a][b] += va[a] * db[b];
        }
    }
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int c = j * kTile + ty * 4 + a, r = i * kTile + tx + 16 * b;
        const bool ok = r < n && c < n && !(causal && c > r);
        const float p = ok ? __expf(st[a][b] * scale - stat[tx + 16 * b]) : 0.f;
        pts[(ty * 4 + a) * kLd + tx + 16 * b] = p;
        dsts[(ty * 4 + a) * kLd + tx + 16 * b] = p * (dpt[a][b] - stat[kTile + tx + 16 * b]);
      }
    __syncthreads();
    // dV[c][col] += sum_r P^T[c][r] dO[r][col]; dK[c][col] += sum_r dS^T[c][r] Q[r][col]
#pragma unroll 4
    for (int r = 0; r < kTile; ++r) {
      float pa[4], da[4], dob[4], qb[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        pa[a] = pts[(ty * 4 + a) * kLd + r];
        da[a] = dsts[(ty * 4 + a) * kLd + r];
      }
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        dob[b] = dos[r * kLd + tx + 16 * b];
        qb[b] = qs[r * kLd + tx + 16 * b];
      }
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          acc_v[a][b] += pa[a] * dob[b];
          acc_k[a][b] += da[a] * qb[b];
        }
    }
    if (ATOMIC) {
      // dQ[r][col] += sum_c dS^T[c][r] K[c][col] for query rows r = ty*4+a
      float part[4][4] = {};
#pragma unroll 4
      for (int c = 0; c < kTile; ++c) {
        float da[4], kb[4];
#pragma unroll
        for (int a = 0; a < 4; ++a) da[a] = dsts[c * kLd + ty * 4 + a];
#pragma unroll
        for (int b = 0; b < 4; ++b) kb[b] = ks[c * kLd + tx + 16 * b];
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
          for (int b = 0; b < 4; ++b) part[a][b] += da[a] * kb[b];
      }
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        const int r = i * kTile + ty * 4 + a;
        if (r >= n) continue;
#pragma unroll
        for (int b = 0; b < 4; ++b) atomicAdd(dq_acc + base + static_cast<std::size_t>(r) * kHead + tx + 16 * b, part[a][b]);
      }
    }
  }
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int c = j * kTile + ty * 4 + a;
    if (c >= n) continue;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const std::size_t idx = base + static_cast<std::size_t>(c) * kHead + tx + 16 * b;
      dk[idx] = from_f<T>(acc_k[a][b] * scale);
      dv[idx] = from_f<T>(acc_v[a][b]);
    }
  }
}

template <class T>
__global__ void attn_bwd_convert_kernel(const float* __restrict__ acc, T* __restrict__ dq, std::size_t count,
                                        float scale) {
  for (std::size_t x = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; x < count;
       x += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dq[x] = from_f<T>(acc[x] * scale);
}

// ----------------------------------------------------------------------------
// kernel launchers

namespace {

float attn_scale() { return 1.f / std::sqrt(static_cast<float>(kHead)); }

template <class K>
void allow_smem(K kernel, int bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

template <class T>
void launch_dot(const T* o, const T* dout, float* dsum, int bh, int n) {
  const long long rows = static_cast<long long>(bh) * n;
  attn_bwd_dot_kernel<T><<<static_cast<unsigned>((rows + 7) / 8), 256>>>(o, dout, dsum, rows);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

template <class T>
void attention_backward_two_pass(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse,
                                 float* dsum, T* dq, T* dk, T* dv, int bh, int n, bool causal) {
  const int t = (n + kTile - 1) / kTile;
  launch_dot(o, dout, dsum, bh, n);
  const int smem_q = 5 * kTileFloats * 4, smem_kv = (6 * kTileFloats + 2 * kTile) * 4;
  allow_smem(attn_bwd_dq_kernel<T>, smem_q);
  attn_bwd_dq_kernel<T><<<dim3(t, bh), 256, smem_q>>>(q, k, v, dout, lse, dsum, dq, n, causal, attn_scale());
  CUDA_CHECK_LAUNCH();
  allow_smem(attn_bwd_dkv_kernel<T, false>, smem_kv);
  attn_bwd_dkv_kernel<T, false><<<dim3(t, bh), 256, smem_kv>>>(q, k, v, dout, lse, dsum, dk, dv, nullptr, n, causal,
                                                               attn_scale());
  CUDA_CHECK_LAUNCH();
}

template <class T>
void attention_backward_atomic(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse,
                               float* dsum, float* dq_acc, T* dq, T* dk, T* dv, int bh, int n, bool causal) {
  const int t = (n + kTile - 1) / kTile;
  const std::size_t count = static_cast<std::size_t>(bh) * n * kHead;
  launch_dot(o, dout, dsum, bh, n);
  CUDA_CHECK(cudaMemsetAsync(dq_acc, 0, count * 4));
  const int smem_kv = (6 * kTileFloats + 2 * kTile) * 4;
  allow_smem(attn_bwd_dkv_kernel<T, true>, smem_kv);
  attn_bwd_dkv_kernel<T, true><<<dim3(t, bh), 256, smem_kv>>>(q, k, v, dout, lse, dsum, dk, dv, dq_acc, n, causal,
                                                              attn_scale());
  CUDA_CHECK_LAUNCH();
  const std::size_t blocks = std::min<std::size_t>((count + 255) / 256, 65536);
  attn_bwd_convert_kernel<T><<<static_cast<unsigned>(blocks), 256>>>(dq_acc, dq, count, attn_scale());
  CUDA_CHECK_LAUNCH();
}

// ----------------------------------------------------------------------------
// workload

namespace {

class AttnBwdWorkload : public Workload {
 public:
  using Workload::Workload;
  void setup(std::uint64_t seed) override {
    const auto& s = spec_;
    const std::size_t elems = static_cast<std::size_t>(s.bh * s.seq * s.d);
    const std::size_t bytes = elems * dtype_bytes(s.dtype), stat = static_cast<std::size_t>(s.bh * s.seq) * 4;
    iq_ = add_input(bytes);
    ik_ = add_input(bytes);
    iv_ = add_input(bytes);
    io_ = add_input(bytes);
    ido_ = add_input(bytes);
    ilse_ = add_input(stat);
    dsum_ = DevBuf(stat);
    dq_ = DevBuf(bytes);
    dk_ = DevBuf(bytes);
    dv_ = DevBuf(bytes);
    if (s.schedule == Schedule::BwdAtomic) acc_ = DevBuf(elems * 4);
    fill_uniform(in(0, iq_), elems, s.dtype, seed, -2.f, 2.f);
    fill_uniform(in(0, ik_), elems, s.dtype, seed + 1, -2.f, 2.f);
    fill_uniform(in(0, iv_), elems, s.dtype, seed + 2, -1.f, 1.f);
    fill_uniform(in(0, ido_), elems, s.dtype, seed + 3, -1.f, 1.f);
    if (s.dtype == Dtype::F32) forward<float>(); else forward<__nv_bfloat16>();
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  void poison_outputs() override {
    poison(dsum_);
    poison(dq_);
    poison(dk_);
    poison(dv_);
    if (acc_.get()) poison(acc_);
  }
  void run(int set) override {
    if (spec_.dtype == Dtype::F32) go<float>(set); else go<__nv_bfloat16>(set);
  }
  double check(std::string* note) override {
    const auto& s = spec_;
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::size_t per_head = static_cast<std::size_t>(s.seq * s.d);
    std::uint64_t bad = 0;
    for (const DevBuf* b : {&dq_, &dk_, &dv_}) bad += count_nonfinite(b->get(), per_head * s.bh, s.dtype);
    auto heads = ref::pick_indices(s.bh, 2);
    const std::size_t nh = heads.size();
    std::vector<std::vector<float>> hq(nh), hk(nh), hv(nh), hdo(nh), wq(nh), wk(nh), wv(nh);
    for (std::size_t h = 0; h < nh; ++h) {
      hq[h] = to_host(in(0, iq_), heads[h] * per_head, per_head, s.dtype);
      hk[h] = to_host(in(0, ik_), heads[h] * per_head, per_head, s.dtype);
      hv[h] = to_host(in(0, iv_), heads[h] * per_head, per_head, s.dtype);
      hdo[h] = to_host(in(0, ido_), heads[h] * per_head, per_head, s.dtype);
      wq[h].resize(per_head);
      wk[h].resize(per_head);
      wv[h].resize(per_head);
    }
    std::vector<std::thread> th;
    for (std::size_t h = 0; h < nh; ++h)
      th.emplace_back([&, h] {
        ref::attention_backward(hq[h].data(), hk[h].data(), hv[h].data(), hdo[h].data(), s.seq, s.d, s.causal,
                                wq[h].data(), wk[h].data(), wv[h].data());
      });
    for (auto& t : th) t.join();
    double err = 0;
    const DevBuf* outs[3] = {&dq_, &dk_, &dv_};
    std::vector<std::vector<float>>* wants[3] = {&wq, &wk, &wv};
    for (int x = 0; x < 3; ++x) {
      std::vector<float> got, want;
      for (std::size_t h = 0; h < nh; ++h) {
        auto g = to_host(outs[x]->get(), heads[h] * per_head, per_head, s.dtype);
        got.insert(got.end(), g.begin(), g.end());
        want.insert(want.end(), (*wants[x])[h].begin(), (*wants[x])[h].end());
      }
      err = std::max(err, ref::rel_error(got, want));
    }
    std::ostringstream o;
    o << nh << " of " << s.bh << " heads checked (dQ, dK, dV); " << bad << " non-finite outputs";
    if (note) *note = o.str();
    return bad ? INFINITY : err;
  }

 private:
  template <class T>
  void forward() {
    const auto& s = spec_;
    attention_fa2(static_cast<const T*>(in(0, iq_)), static_cast<const T*>(in(0, ik_)),
                  static_cast<const T*>(in(0, iv_)), static_cast<T*>(in(0, io_)), static_cast<float*>(in(0, ilse_)),
                  static_cast<int>(s.bh), static_cast<int>(s.seq), s.causal);
  }
  template <class T>
  void go(int set) {
    const auto& s = spec_;
    auto q = static_cast<const T*>(in(set, iq_)), k = static_cast<const T*>(in(set, ik_)),
         v = static_cast<const T*>(in(set, iv_)), o = static_cast<const T*>(in(set, io_)),
         dout = static_cast<const T*>(in(set, ido_));
    auto lse = static_cast<const float*>(in(set, ilse_));
    const int bh = static_cast<int>(s.bh), n = static_cast<int>(s.seq);
    if (s.schedule == Schedule::BwdTwoPass)
      attention_backward_two_pass(q, k, v, o, dout, lse, dsum_.as<float>(), dq_.as<T>(), dk_.as<T>(), dv_.as<T>(), bh,
                                  n, s.causal);
    else
      attention_backward_atomic(q, k, v, o, dout, lse, dsum_.as<float>(), acc_.as<float>(), dq_.as<T>(), dk_.as<T>(),
                                dv_.as<T>(), bh, n, s.causal);
  }
  int iq_ = 0, ik_ = 0, iv_ = 0, io_ = 0, ido_ = 0, ilse_ = 0;
  DevBuf dsum_, dq_, dk_, dv_, acc_;
};

}  // namespace

std::unique_ptr<Workload> make_attention_backward(const Spec& s) {
  if (s.d != kHead || s.br != kTile || s.bc != kTile)
    throw std::invalid_argument("attention kernels are compiled for d = 64 and 64 x 64 tiles");
  return std::make_unique<AttnBwdWorkload>(s);
}

#endif  // FLASHSIM_ATTN_BWD_FAST_ONLY

// ----------------------------------------------------------------------------
// version 3: FA2 backward on tensor cores (kernels/fast.h attention_backward_fast)

namespace bwd_fast {

constexpr float kLog2e = 1.4426950408889634f;
// lse and D rows are padded to a multiple of this in the workspace, so a Q tile's statistics are
// always one aligned 16-byte-chunked run (no bounds checks in the main loop).
constexpr int kStatPad = 128;

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ void st_shared_b32(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v));
}

__device__ __forceinline__ void unpack8(const uint4& u, float (&f)[8], __nv_bfloat16) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = __bfloat1622float2(h[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}
__device__ __forceinline__ void unpack8(const uint4& u, float (&f)[8], __half) {
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = __half22float2(h[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}

std::size_t stat_rows(int n) { return (static_cast<std::size_t>(n) + kStatPad - 1) / kStatPad * kStatPad; }

// Preprocessing, D/8 threads per row of the padded [bh, n_pad] statistics: D = rowsum(dO * O) from
// 16-byte loads, lse copied in log2 units (+inf on padding rows, so that P = 0 there), and the
// fp32 dQ accumulator row zeroed.
template <class T, int D>
__global__ void __launch_bounds__(256) bwd_fast_prep_kernel(const T* __restrict__ o, const T* __restrict__ dout,
                                                            const float* __restrict__ lse, float* __restrict__ dq_acc,
                                                            float* __restrict__ lse2, float* __restrict__ dsum, int n,
                                                            int n_pad, long long rows) {
  constexpr int kLanes = D / 8;
  const long long id = blockIdx.x * 256LL + threadIdx.x;
  const long long row = id / kLanes;  // the grid covers whole rows, so groups of kLanes stay together
  const int part = static_cast<int>(id % kLanes);
  if (row >= rows) return;
  const long long head = row / n_pad;
  const int r = static_cast<int>(row % n_pad);
  float acc = 0.f;
  if (r < n) {
    const std::size_t off = (static_cast<std::size_t>(head) * n + r) * D + part * 8;
    const uint4 ov = *reinterpret_cast<const uint4*>(o + off);
    const uint4 dv = *reinterpret_cast<const uint4*>(dout + off);
    float a[8], b[8];
    unpack8(ov, a, T{});
    unpack8(dv, b, T{});
#pragma unroll
    for (int i = 0; i < 8; ++i) acc = fmaf(a[i], b[i], acc);
    float4* z = reinterpret_cast<float4*>(dq_acc + off);
    z[0] = make_float4(0.f, 0.f, 0.f, 0.f);
    z[1] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
#pragma unroll
  for (int s = kLanes / 2; s > 0; s >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, s);
  if (part == 0) {
    dsum[row] = acc;
    lse2[row] = r < n ? lse[static_cast<std::size_t>(head) * n + r] * kLog2e : INFINITY;
  }
}

template <int ROWS, int D, int THREADS, class T>
__device__ __forceinline__ void load_rows(std::uint32_t dst, const T* src, int row0, int n) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int i = threadIdx.x; i < ROWS * kChunks; i += THREADS) {
    const int r = i / kChunks, c = i % kChunks;
    const bool valid = row0 + r < n;
    mma::cp_async16(mma::swizzled<D>(dst, r, c), src + (static_cast<std::size_t>(valid ? row0 + r : 0) * D + c * 8),
                    valid);
  }
}

template <int D, int BR, int BC, int NW>
struct BwdConfig {
  static constexpr int kThreads = NW * 32;
  static constexpr int kKVBytes = BC * D * 2, kQBytes = BR * D * 2, kDSBytes = BC * BR * 2, kStatBytes = 2 * BR * 4;
  // K, V; Q and dO double-buffered; dS^T; (lse, D) double-buffered
  static constexpr int kSmem = 2 * kKVBytes + 4 * kQBytes + kDSBytes + 2 * kStatBytes;
  static constexpr int kRowGroups = BR / 16;            // dQ = dS K: 16-row slabs of the Q tile
  static constexpr int kColGroups = NW / kRowGroups;    // ... times column slabs of the head
  static constexpr int kDQCols = D / kColGroups;
  static_assert(BC == 16 * NW, "each warp owns 16 key rows");
  static_assert(NW % kRowGroups == 0 && kDQCols % 16 == 0, "dQ partition");
  static_assert(BR % 16 == 0 && D % 16 == 0, "tile shape");
};

// One block per KV tile of BC rows (each warp owns 16 key rows and their dK, dV accumulators in
// registers), looping over the Q tiles of BR rows that see it. Per Q tile:
//   S^T = K Q^T, dP^T = V dO^T                      (A: K, V rows; B: Q, dO rows, ldmatrix)
//   P^T = exp2(S^T scale log2e - lse2), dS^T = P^T (dP^T - D)    (in registers)
//   dV += P^T dO, dK += dS^T Q                      (A: the accumulators repacked; B: ldmatrix.trans)
//   dS^T -> shared memory, then dQ_tile = dS K split over all warps, atomically added in fp32.
// KEEP_KV holds the K and V A-fragments in registers for the whole loop (d = 64 only: 32 registers).
template <class T, int D, int BR, int BC, int NW, bool KEEP_KV>
__global__ void __launch_bounds__(NW * 32, 1)
    attn_bwd_fast_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                         const T* __restrict__ dout, const float* __restrict__ lse2,
                         const float* __restrict__ dsum, float* __restrict__ dq_acc, T* __restrict__ dk,
                         T* __restrict__ dv, int n, int n_pad, bool causal, float scale, float scale_log2) {
  using C = BwdConfig<D, BR, BC, NW>;
  extern __shared__ __align__(128) unsigned char smem[];
  const std::uint32_t ks = mma::smem_addr(smem), vs = ks + C::kKVBytes;
  const std::uint32_t qs0 = vs + C::kKVBytes, dos0 = qs0 + 2 * C::kQBytes;
  const std::uint32_t dss = dos0 + 2 * C::kQBytes;
  float* stat0 = reinterpret_cast<float*>(smem + 2 * C::kKVBytes + 4 * C::kQBytes + C::kDSBytes);
  const std::uint32_t stat_s0 = mma::smem_addr(stat0);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // causal: the first KV tiles see the most Q tiles, so they start first
  const int kv_tile = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int kv0 = kv_tile * BC;
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * n * D;
  q += head; k += head; v += head; dout += head; dq_acc += head; dk += head; dv += head;
  lse2 += static_cast<std::size_t>(blockIdx.y) * n_pad;
  dsum += static_cast<std::size_t>(blockIdx.y) * n_pad;
  const int i_begin = causal ? kv0 / BR : 0, i_end = (n + BR - 1) / BR;

  auto load_q_tile = [&](int i, int buf) {
    load_rows<BR, D, C::kThreads>(qs0 + buf * C::kQBytes, q, i * BR, n);
    load_rows<BR, D, C::kThreads>(dos0 + buf * C::kQBytes, dout, i * BR, n);
    if (threadIdx.x < BR / 2) {  // BR/4 chunks of lse2, then BR/4 of D
      const int c = threadIdx.x % (BR / 4);
      const float* src = (threadIdx.x < BR / 4 ? lse2 : dsum) + i * BR + c * 4;
      mma::cp_async16(stat_s0 + buf * C::kStatBytes + threadIdx.x * 16, src, true);
    }
  };
  load_rows<BC, D, C::kThreads>(ks, k, kv0, n);
  load_rows<BC, D, C::kThreads>(vs, v, kv0, n);
  load_q_tile(i_begin, 0);
  mma::cp_async_commit();

  float acc_dk[D / 8][4], acc_dv[D / 8][4];
#pragma unroll
  for (int x = 0; x < D / 8; ++x)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[x][e] = acc_dv[x][e] = 0.f;
  std::uint32_t kfrag[KEEP_KV ? D / 16 : 1][4], vfrag[KEEP_KV ? D / 16 : 1][4];

  const int wrow = warp * 16;                                   // this warp's key rows in the tile
  const int a_row = wrow + (lane % 8) + ((lane / 8) & 1) * 8;   // ldmatrix A (row-major source)
  const int a_chunk = lane / 16;
  const int b_row = (lane % 8) + (lane / 16) * 8;               // ldmatrix B from [n][k] rows
  const int b_chunk = (lane / 8) & 1;
  const int bt_row = (lane % 8) + ((lane / 8) & 1) * 8;         // ldmatrix.trans B from [k][n] rows
  const int bt_chunk = lane / 16;
  const int at_row = (lane % 8) + (lane / 16) * 8;              // ldmatrix.trans A from [k][m] rows
  const int at_chunk = (lane / 8) & 1;
  const int rg = warp % C::kRowGroups, cg = warp / C::kRowGroups;  // this warp's dQ slab

  for (int i = i_begin; i < i_end; ++i) {
    const int buf = (i - i_begin) & 1;
    if (i + 1 < i_end) load_q_tile(i + 1, buf ^ 1);  // its buffer was last read before the previous
    mma::cp_async_commit();                           // iteration's second barrier
    mma::cp_async_wait<1>();
    __syncthreads();
    const std::uint32_t qs = qs0 + buf * C::kQBytes, dos = dos0 + buf * C::kQBytes;
    const float* st_lse = stat0 + buf * (C::kStatBytes / 4);
    const float* st_d = st_lse + BR;
    const int q0 = i * BR;

    if (KEEP_KV && i == i_begin) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        mma::ldmatrix_x4(kfrag[KEEP_KV ? kk : 0], mma::swizzled<D>(ks, a_row, kk * 2 + a_chunk));
        mma::ldmatrix_x4(vfrag[KEEP_KV ? kk : 0], mma::swizzled<D>(vs, a_row, kk * 2 + a_chunk));
      }
    }

    float s[BR / 8][4], dp[BR / 8][4];
#pragma unroll
    for (int x = 0; x < BR / 8; ++x)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[x][e] = dp[x][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      std::uint32_t ka[4], va[4];
      if constexpr (KEEP_KV) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          ka[e] = kfrag[kk][e];
          va[e] = vfrag[kk][e];
        }
      } else {
        mma::ldmatrix_x4(ka, mma::swizzled<D>(ks, a_row, kk * 2 + a_chunk));
        mma::ldmatrix_x4(va, mma::swizzled<D>(vs, a_row, kk * 2 + a_chunk));
      }
#pragma unroll
      for (int np = 0; np < BR / 16; ++np) {
        std::uint32_t b[4];
        mma::ldmatrix_x4(b, mma::swizzled<D>(qs, np * 16 + b_row, kk * 2 + b_chunk));
        mma::mma16816<T>(s[2 * np], ka, b[0], b[1]);
        mma::mma16816<T>(s[2 * np + 1], ka, b[2], b[3]);
        mma::ldmatrix_x4(b, mma::swizzled<D>(dos, np * 16 + b_row, kk * 2 + b_chunk));
        mma::mma16816<T>(dp[2 * np], va, b[0], b[1]);
        mma::mma16816<T>(dp[2 * np + 1], va, b[2], b[3]);
      }
    }

    // P^T and dS^T in place (row = key, column = query). Padding queries have lse2 = +inf (P = 0);
    // padding keys and keys after the query (causal) are masked here.
    const bool masked = kv0 + BC > n || (causal && kv0 + BC - 1 > q0);
#pragma unroll
    for (int nt = 0; nt < BR / 8; ++nt) {
      const float2 l2 = *reinterpret_cast<const float2*>(st_lse + nt * 8 + 2 * t);
      const float2 dd = *reinterpret_cast<const float2*>(st_d + nt * 8 + 2 * t);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float p = fast_exp2(fmaf(s[nt][e], scale_log2, -((e & 1) ? l2.y : l2.x)));
        if (masked) {
          const int key = kv0 + wrow + g + (e / 2) * 8, query = q0 + nt * 8 + 2 * t + (e & 1);
          if (key >= n || (causal && key > query)) p = 0.f;
        }
        s[nt][e] = p;
        dp[nt][e] = p * (dp[nt][e] - ((e & 1) ? dd.y : dd.x));
      }
    }

    // dV += P^T dO, dK += dS^T Q; dS^T also goes to shared memory for dQ.
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk) {
      std::uint32_t pa[4], da[4];
      pa[0] = mma::pack2<T>(s[2 * kk][0], s[2 * kk][1]);
      pa[1] = mma::pack2<T>(s[2 * kk][2], s[2 * kk][3]);
      pa[2] = mma::pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa[3] = mma::pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
      da[0] = mma::pack2<T>(dp[2 * kk][0], dp[2 * kk][1]);
      da[1] = mma::pack2<T>(dp[2 * kk][2], dp[2 * kk][3]);
      da[2] = mma::pack2<T>(dp[2 * kk + 1][0], dp[2 * kk + 1][1]);
      da[3] = mma::pack2<T>(dp[2 * kk + 1][2], dp[2 * kk + 1][3]);
      // row wrow+g (+8), query columns kk*16 + 2t (+8): chunks 2kk and 2kk+1
      st_shared_b32(mma::swizzled<BR>(dss, wrow + g, 2 * kk) + 4 * t, da[0]);
      st_shared_b32(mma::swizzled<BR>(dss, wrow + g + 8, 2 * kk) + 4 * t, da[1]);
      st_shared_b32(mma::swizzled<BR>(dss, wrow + g, 2 * kk + 1) + 4 * t, da[2]);
      st_shared_b32(mma::swizzled<BR>(dss, wrow + g + 8, 2 * kk + 1) + 4 * t, da[3]);
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        std::uint32_t b[4];
        mma::ldmatrix_x4_trans(b, mma::swizzled<D>(dos, kk * 16 + bt_row, np * 2 + bt_chunk));
        mma::mma16816<T>(acc_dv[2 * np], pa, b[0], b[1]);
        mma::mma16816<T>(acc_dv[2 * np + 1], pa, b[2], b[3]);
        mma::ldmatrix_x4_trans(b, mma::swizzled<D>(qs, kk * 16 + bt_row, np * 2 + bt_chunk));
        mma::mma16816<T>(acc_dk[2 * np], da, b[0], b[1]);
        mma::mma16816<T>(acc_dk[2 * np + 1], da, b[2], b[3]);
      }
    }
    __syncthreads();  // dS^T complete

    // dQ slab (16 query rows x kDQCols) = dS (A via ldmatrix.trans of dS^T) K (B via ldmatrix.trans)
    float dq[C::kDQCols / 8][4];
#pragma unroll
    for (int x = 0; x < C::kDQCols / 8; ++x)
#pragma unroll
      for (int e = 0; e < 4; ++e) dq[x][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      std::uint32_t a[4];
      mma::ldmatrix_x4_trans(a, mma::swizzled<BR>(dss, kk * 16 + at_row, rg * 2 + at_chunk));
#pragma unroll
      for (int np = 0; np < C::kDQCols / 16; ++np) {
        std::uint32_t b[4];
        mma::ldmatrix_x4_trans(b, mma::swizzled<D>(ks, kk * 16 + bt_row, cg * (C::kDQCols / 8) + np * 2 + bt_chunk));
        mma::mma16816<T>(dq[2 * np], a, b[0], b[1]);
        mma::mma16816<T>(dq[2 * np + 1], a, b[2], b[3]);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = q0 + rg * 16 + g + 8 * h;
      if (row >= n) continue;
      float* dst = dq_acc + static_cast<std::size_t>(row) * D + cg * C::kDQCols + 2 * t;
#pragma unroll
      for (int nt = 0; nt < C::kDQCols / 8; ++nt) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        atomicAdd(reinterpret_cast<float2*>(dst + nt * 8), make_float2(dq[nt][2 * h], dq[nt][2 * h + 1]));
#else
        atomicAdd(dst + nt * 8, dq[nt][2 * h]);
        atomicAdd(dst + nt * 8 + 1, dq[nt][2 * h + 1]);
#endif
      }
    }
  }
  mma::cp_async_wait<0>();
  __syncthreads();  // every warp is done with K and V: stage dK, dV there for 16-byte stores

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = wrow + g + 8 * h;
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) {
      st_shared_b32(mma::swizzled<D>(ks, r, nt) + 4 * t,
                    mma::pack2<T>(acc_dk[nt][2 * h] * scale, acc_dk[nt][2 * h + 1] * scale));
      st_shared_b32(mma::swizzled<D>(vs, r, nt) + 4 * t, mma::pack2<T>(acc_dv[nt][2 * h], acc_dv[nt][2 * h + 1]));
    }
  }
  __syncthreads();
  constexpr int kChunks = D / 8;
  for (int x = threadIdx.x; x < BC * kChunks; x += C::kThreads) {
    const int r = x / kChunks, c = x % kChunks;
    if (kv0 + r >= n) continue;
    uint4 a, b;
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a.x), "=r"(a.y), "=r"(a.z), "=r"(a.w) : "r"(mma::swizzled<D>(ks, r, c)));
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(b.x), "=r"(b.y), "=r"(b.z), "=r"(b.w) : "r"(mma::swizzled<D>(vs, r, c)));
    const std::size_t off = static_cast<std::size_t>(kv0 + r) * D + c * 8;
    *reinterpret_cast<uint4*>(dk + off) = a;
    *reinterpret_cast<uint4*>(dv + off) = b;
  }
}

// dQ = scale * accumulator, 8 elements (two float4 loads, one 16-byte store) per thread.
template <class T>
__global__ void __launch_bounds__(256) bwd_fast_dq_kernel(const float* __restrict__ acc, T* __restrict__ dq,
                                                          std::size_t chunks, float scale) {
  for (std::size_t x = blockIdx.x * 256ULL + threadIdx.x; x < chunks; x += static_cast<std::size_t>(gridDim.x) * 256) {
    const float4 a = reinterpret_cast<const float4*>(acc)[2 * x];
    const float4 b = reinterpret_cast<const float4*>(acc)[2 * x + 1];
    uint4 out;
    out.x = mma::pack2<T>(a.x * scale, a.y * scale);
    out.y = mma::pack2<T>(a.z * scale, a.w * scale);
    out.z = mma::pack2<T>(b.x * scale, b.y * scale);
    out.w = mma::pack2<T>(b.z * scale, b.w * scale);
    reinterpret_cast<uint4*>(dq)[x] = out;
  }
}

template <class T, int D, int BR, int BC, int NW, bool KEEP_KV>
void launch_bwd(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse, T* dq, T* dk, T* dv,
                void* workspace, int bh, int n, bool causal, cudaStream_t stream) {
  using C = BwdConfig<D, BR, BC, NW>;
  const int n_pad = static_cast<int>(stat_rows(n));
  const std::size_t elems = static_cast<std::size_t>(bh) * n * D;
  float* dq_acc = static_cast<float*>(workspace);
  float* lse2 = dq_acc + elems;
  float* dsum = lse2 + static_cast<std::size_t>(bh) * n_pad;
  const float scale = 1.f / std::sqrt(static_cast<float>(D));

  const long long rows = static_cast<long long>(bh) * n_pad;  // a multiple of 128: whole blocks
  bwd_fast_prep_kernel<T, D><<<static_cast<unsigned>(rows * (D / 8) / 256), 256, 0, stream>>>(
      o, dout, lse, dq_acc, lse2, dsum, n, n_pad, rows);
  CUDA_CHECK_LAUNCH();

  auto kernel = attn_bwd_fast_kernel<T, D, BR, BC, NW, KEEP_KV>;
  static bool smem_set = false;  // one per instantiation
  if (!smem_set) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem));
    smem_set = true;
  }
  kernel<<<dim3((n + BC - 1) / BC, bh), C::kThreads, C::kSmem, stream>>>(
      q, k, v, dout, lse2, dsum, dq_acc, dk, dv, n, n_pad, causal, scale, scale * kLog2e);
  CUDA_CHECK_LAUNCH();

  const std::size_t chunks = elems / 8;
  const std::size_t blocks = std::min<std::size_t>((chunks + 255) / 256, 132 * 16);
  bwd_fast_dq_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(dq_acc, dq, chunks, scale);
  CUDA_CHECK_LAUNCH();
}

}  // namespace bwd_fast

std::size_t attention_backward_fast_workspace_bytes(int bh, int n, int d) {
  if (bh < 1 || n < 1 || d < 1) throw std::invalid_argument("attention_backward_fast_workspace_bytes: need bh, n, d >= 1");
  return (static_cast<std::size_t>(bh) * n * d + 2 * static_cast<std::size_t>(bh) * bwd_fast::stat_rows(n)) *
         sizeof(float);
}

template <class T>
void attention_backward_fast(const T* q, const T* k, const T* v, const T* o, const T* dout, const float* lse, T* dq,
                             T* dk, T* dv, void* workspace, int bh, int n, int d, bool causal, cudaStream_t stream) {
  if (bh < 1 || n < 1 || bh > 65535)
    throw std::invalid_argument("attention_backward_fast: need 1 <= bh <= 65535, n >= 1");
  for (const void* p : {static_cast<const void*>(q), static_cast<const void*>(k), static_cast<const void*>(v),
                        static_cast<const void*>(o), static_cast<const void*>(dout), static_cast<const void*>(dq),
                        static_cast<const void*>(dk), static_cast<const void*>(dv), static_cast<const void*>(workspace)})
    if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
      throw std::invalid_argument("attention_backward_fast: tensors and workspace must be non-null and 16-byte aligned");
  if (lse == nullptr) throw std::invalid_argument("attention_backward_fast: lse is null");
  // tiles: 128 keys per block (8 warps x 16 rows), 64 queries per step
  if (d == 64)
    bwd_fast::launch_bwd<T, 64, 64, 128, 8, true>(q, k, v, o, dout, lse, dq, dk, dv, workspace, bh, n, causal, stream);
  else if (d == 128)
    bwd_fast::launch_bwd<T, 128, 64, 128, 8, false>(q, k, v, o, dout, lse, dq, dk, dv, workspace, bh, n, causal,
                                                     stream);
  else
    throw std::invalid_argument("attention_backward_fast: head dimension must be 64 or 128");
}

template void attention_backward_fast<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                     const __nv_bfloat16*, const __nv_bfloat16*,
                                                     const __nv_bfloat16*, const float*, __nv_bfloat16*,
                                                     __nv_bfloat16*, __nv_bfloat16*, void*, int, int, int, bool,
                                                     cudaStream_t);
template void attention_backward_fast<__half>(const __half*, const __half*, const __half*, const __half*,
                                              const __half*, const float*, __half*, __half*, __half*, void*, int, int,
                                              int, bool, cudaStream_t);

}  // namespace flashsim::gpu

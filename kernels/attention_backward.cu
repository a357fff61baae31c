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
*/
#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

#include "kernels/attention.h"
#include "kernels/cuda_util.cuh"
#include "kernels/reference.h"

namespace flashsim::gpu {

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

}  // namespace flashsim::gpu

// Inside `flashsim-gpu ring` (kernels/ring.h): one run over P GPUs of one process, shared by the
// forward (kernels/ring.cpp) and the backward and all-gather paths (kernels/ring_backward.cpp).
// Not an interface: the types here change with the driver.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/ring.h"
#include "kernels/workload.h"
#include "sim/ring.h"

namespace flashsim::gpu::ring_detail {

#define NCCL_CHECK(x)                                                                         \
  do {                                                                                        \
    ncclResult_t r_ = (x);                                                                    \
    if (r_ != ncclSuccess) {                                                                  \
      std::fprintf(stderr, "flashsim-gpu ring: %s failed: %s\n", #x, ncclGetErrorString(r_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

using Clock = std::chrono::steady_clock;

struct Gpu {
  int id = 0;
  // q, o: [nc][H][c][d]; kv[b]: K then V, each [nc][H][c][d]; lse: [nc][H][c]; ob, lseb: as o and
  // lse (with two compute streams, step s's pairs write ob[s % 2], lseb[s % 2])
  DevBuf q, kv[2], o, lse, ob[2], lseb[2];
  // Backward: dO and dQ like q; dkv_w[b] the fp32 dK then dV of the block in hand (this GPU's
  // partials, then plus what arrived), dkv_r[b] what arrives from the GPU before; ws[i] the backward
  // kernel's workspace for query chunk i, whose fp32 dQ accumulator sums the chunk's pairs (with
  // the step launch ws[0] alone, for all chunks). dkv_out: this GPU's own block's dK then dV in the
  // run's type, the backward's output; dkv_send: the last step's sums rounded to it, for the hop home.
  DevBuf dout, dq, dkv_w[2], dkv_r[2], ws[2], dkv_out, dkv_send;
  // All-gather: every GPU's K/V block ([P][K then V]) and, backward, every block's fp32 dK/dV partials.
  DevBuf kv_all, dkv_all;
  // --sm-clock: the samples; the sampler's own stream, which waits for the point sampled
  // (clock_at), so that no compute stream waits for a sample
  std::unique_ptr<SmClockLog> clock;
  cudaStream_t clock_stream = nullptr;
  cudaEvent_t clock_at = nullptr;
  // comp[s % 2] computes step s (--streams 2: a step's first kernels start on the SMs the step
  // before leaves idle in its last wave); comm moves K/V and dK/dV
  cudaStream_t comp[2] = {nullptr, nullptr}, comm = nullptr;
  ncclComm_t nccl = nullptr;
  // comm_*: step s's K/V exchange; dkv_end: the dK/dV exchange after step s's compute (backward);
  // kv_free: step s's kernels no longer read its K/V buffer (its merge may still wait to run);
  // acc_done (backward): step s's W += R is done (W final, R free)
  std::vector<cudaEvent_t> comp_start, comp_end, comm_start, comm_end, dkv_start, dkv_end, kv_free, acc_done;
  std::int64_t posted_sent = 0, posted_recv = 0;  // bytes handed to NCCL (or copied), per direction
};

double median(std::vector<double> v);
float ms_between(cudaEvent_t a, cudaEvent_t b);
int fail(const std::string& what);

// tiled: one block per Q tile (the ring's steps, so that NCCL's kernels find SMs); else the
// fastest one-GPU launch (the baseline)
void fast_forward(Dtype dt, bool tiled, const void* q, const void* k, const void* v, void* o, float* lse, int bh, int n,
                  int d, bool causal, cudaStream_t s);
// one zig-zag step's pairs in one launch (attention_forward_fast_ring_step; kinds: two bits a pair)
void fast_ring_step(Dtype dt, const void* q, const void* k, const void* v, void* o, float* lse, int heads, int n, int d,
                    int kinds, cudaStream_t s);
void fast_backward(Dtype dt, const void* q, const void* k, const void* v, const void* o, const void* dout,
                   const float* lse, void* dq, void* dk, void* dv, void* ws, int bh, int n, int d, bool causal,
                   cudaStream_t s);
// attention_backward_fast_accumulate and _finish_dq (kernels/fast.h) for the run's dtype
void fast_backward_accumulate(Dtype dt, const void* q, const void* k, const void* v, const void* o, const void* dout,
                              const float* lse, float* dk_acc, float* dv_acc, bool assign_dkv, void* ws, bool first_dq,
                              int bh, int n, int d, bool causal, cudaStream_t s);
void fast_backward_finish_dq(Dtype dt, void* ws, void* dq, int bh, int n, int d, cudaStream_t s);

// The sizes of one run, from options that ring_options_error accepted.
struct Shape {
  int P, H, D, nc;           // GPUs, heads, head dimension, chunks per GPU (2 with the zigzag split)
  std::int64_t N, parts, c;  // sequence length, chunks in all, rows per chunk
  Dtype dt;
  ncclDataType_t nt;
  std::size_t e = 2;      // bytes per element
  std::size_t chunk;      // elements of one chunk tensor [H][c][D]
  std::size_t blk;        // elements of a GPU's Q (or K, or V)
  std::size_t lse_chunk;  // elements of one chunk's lse [H][c]
  std::size_t all;        // elements of the global Q (or K, V, O) [H][N][D]
  bool zigzag, copy, backward, allgather;
  int streams;  // compute streams per GPU (--streams; the all-gather uses one)
  sim::ring::RingConfig cfg;
  std::vector<std::vector<sim::ring::Segment>> segs;  // chunk i of GPU p: rows segs[p][i]

  explicit Shape(const RingOptions& opt);
};

// Whether a direction runs --launch step: the forward in the zig-zag ring only (its two query
// chunks; one pair a step otherwise), the backward under either split and in the all-gather (its
// query chunks' statistics are prepared once a ring).
inline bool takes_step_launch(const RingOptions& opt, const Shape& s, bool backward) {
  return opt.launch == "step" && (backward || (s.zigzag && !s.allgather));
}

// f(T{}) with T the run's element type.
template <class F>
void with_type(Dtype dt, F f) {
  if (dt == Dtype::BF16) f(__nv_bfloat16{});
  else f(__half{});
}

// What the validation found (ring vs one GPU on all n, ring vs float64 on sampled rows). Backward:
// the worst of dQ, dK and dV (each a relative L2 over its tensor), per-tensor values in `grads`.
struct Validation {
  std::uint64_t nonfinite = 0;
  double err_one = 0, err_one_max = 0, err_lse = 0, err_ref = 0, err_ref_max = 0;
  std::size_t ref_rows = 0;
  bool ok = false;
  std::vector<std::int64_t> posted_sent, posted_recv;  // per GPU, over the validated ring
  std::string grads;                                   // backward: "dQ a / b, dK ..., dV ..."
};

// Medians of the timed batches, ms per run, and each GPU's per-step event times (ms).
struct Timing {
  double ring = 0, comp = 0, comm = 0, one = 0;
  int it_ring = 1, it_comp = 1, it_comm = 1, it_one = 1;
  std::vector<std::vector<double>> step_comp, step_comm;  // [GPU][step]
  std::vector<std::vector<double>> step_start;            // [GPU][step]: ms after the GPU's step 0 began
  // --sm-clock: every timed batch's samples, MHz, over all GPUs, per mode
  std::vector<double> mhz_ring, mhz_comp, mhz_one;
};

// NVLink bytes per ring from NVML, -1 where not read.
struct Nvlink {
  std::vector<std::int64_t> tx, rx, tx_link0, tx_sum;
  std::vector<int> links;
  std::vector<char> equal;
  int rings = 0;
  bool available = false;
  std::string why;
};

// One ring attention run over P GPUs: its buffers, streams, events and communicators, and the
// steps of run, validation, timing and NVLink reading. The GPUs are released by the destructor.
// With --backward, validate() runs the forward ring first (its O and lse are the backward's inputs)
// and every later run is the backward; with --method allgather the K/V blocks are gathered by NCCL
// instead of passed around the ring (and, backward, dK/dV reduce-scattered).
class RingRun {
 public:
  RingRun(const RingOptions& opt, const Shape& s) : opt_(opt), s_(s), kv_elems_(2 * static_cast<std::int64_t>(s.blk)) {}
  ~RingRun();
  void print_header() const;
  void setup();  // global inputs on GPU 0, every GPU's chunks, streams, events, the transport
  Validation validate();
  Timing time_modes();
  Nvlink measure_nvlink(int rings);
  const std::vector<std::vector<sim::ring::Segment>>& segs() const { return s_.segs; }

 private:
  void make_inputs();
  void chunk_copy(void* local, int p, const void* global, bool to_local, std::size_t elem_bytes = 0);
  void setup_gpus();
  void setup_backward();
  void reset_kv();
  void enable_peer_access();
  void init_nccl();
  void sync_all();
  void exchange_nccl(int s, int cur, int nxt, int mode);
  void exchange_copy(int s, int cur, int nxt, int mode);
  cudaStream_t step_stream(const Gpu& x, int s) const { return x.comp[s % s_.streams]; }
  // bytes of step s's dK/dV hop per GPU: fp32 partials, the last (home) the sums in the run's type
  std::size_t dkv_hop_bytes(int s) const { return 2 * s_.blk * (s == s_.P - 1 ? s_.e : 4); }
  bool step_launch() const { return takes_step_launch(opt_, s_, false); }
  bool backward_step_launch() const { return takes_step_launch(opt_, s_, true); }
  // which of GPU p's query chunks sees which of block b's key chunks: two bits at 2 (2i + j), 0 none,
  // 1 every key, 2 the causal diagonal (the step launches' `kinds`)
  int step_kinds(int p, int b) const;
  void wait_previous_run(Gpu& x, cudaStream_t cs);
  // --sm-clock: a sample once x's stream cs gets there; every GPU's samples dropped; printed
  void clock_sample(const Gpu& x, cudaStream_t cs);
  void clock_reset();
  void print_clocks(const char* mode, int rep, std::vector<double>* all);
  int buffer_in_hand() const;
  void compute_step(int s, int cur, int mode, std::vector<char>& started);
  void forward_pairs(Gpu& x, int b, const char* kbase, std::vector<char>& started, cudaStream_t cs, int slot,
                     cudaEvent_t before_merge);
  void forward_step_one_launch(Gpu& x, int s, int b, const char* kbase, cudaStream_t cs, int slot,
                               cudaEvent_t before_merge);
  void ring_once(int mode);
  void ring_once_forward(int mode);
  double timed(int mode, int iters);
  double step_exchange_ms(const Gpu& x, int s) const;
  // one copy of the one-GPU problem: inputs, outputs and, backward, dO, the gradients, the workspace
  struct OneGpuBufs {
    void *q, *k, *v, *o;
    float* lse;
    void *dout, *dq, *dk, *dv, *ws;
  };
  void one_gpu();
  void one_gpu_on(const OneGpuBufs& b, cudaStream_t stream);
  double timed_one(int iters);
  void make_twins();
  struct RefRow {
    int h;
    std::int64_t row;
  };
  std::vector<RefRow> reference_picks() const;
  void reference_rows(const std::vector<float>& h_ring, Validation& v);
  Validation validate_forward();

  // backward (kernels/ring_backward.cpp)
  void ring_once_backward(int mode);
  void backward_pairs(Gpu& x, int b, const char* kbase, float* dkv, cudaStream_t cs);
  void start_dq(Gpu& x, cudaStream_t cs);
  void finish_dq(Gpu& x, cudaStream_t cs);
  void exchange_dkv_nccl(int s, int mode);
  void exchange_dkv_copy(int s, int mode);
  Validation validate_backward();
  void reference_grad_rows(const std::vector<float>& dq, const std::vector<float>& dk, const std::vector<float>& dv,
                           Validation& v);
  // all-gather (kernels/ring_backward.cpp)
  void allgather_once(int mode);

  const RingOptions& opt_;
  const Shape& s_;
  const std::int64_t kv_elems_;  // elements of one K/V block (K then V)
  std::vector<Gpu> g_;
  DevBuf gq_, gk_, gv_, go_, glse_;  // global Q, K, V and the one-GPU O, lse on GPU 0
  DevBuf gdo_, gdq_, gdk_, gdv_, gws_;  // backward: global dO, the one-GPU gradients, its workspace
  std::vector<float> ring_o_, ring_lse_;  // backward: the forward ring's O and lse in global order
  cudaStream_t one_stream_ = nullptr;
  // --baseline all: every other GPU runs the same one-GPU problem beside GPU 0's baseline, untimed,
  // on its own copy of the inputs (and, backward, of the one-GPU forward's O and lse)
  struct Twin {
    int id = 0;
    DevBuf q, k, v, o, lse, dout, dq, dk, dv, ws;
    cudaStream_t stream = nullptr;
  };
  std::vector<Twin> twins_;
  bool run_backward_ = false;  // set once the forward has been validated (--backward)
  // Steps over every ring run, so that back-to-back runs keep the double buffers' parity and their
  // dependencies (the receive into a buffer waits for the compute and the send that last read it).
  std::int64_t gstep_ = 0;
  std::int64_t runs_ = 0;  // runs so far (backward, all-gather): the first has nothing earlier to wait for
};

// The finished sums in the run's type: out = dt(acc + in), or dt(acc) when in is null; out may be
// acc. `stream` is a cudaStream_t.
void ring_sum_to(void* out, const float* acc, const float* in, std::size_t elems, Dtype dt, void* stream);
// The backward's W += R: acc += in, both fp32 (ring_sum_to into acc).
void ring_add_f32(float* acc, const float* in, std::size_t elems, void* stream);

}  // namespace flashsim::gpu::ring_detail

// `flashsim-gpu ring`: ring attention, forward or backward, over P GPUs of one process, or the
// all-gather alternative.
//
//   flashsim-gpu ring [--gpus P] [--n N] [--heads H] [--d 64|128] [--dtype bf16|fp16] [--causal]
//                     [--split contiguous|zigzag] [--transport auto|nccl|copy] [--nccl-ctas C]
//                     [--backward] [--method ring|allgather] [--streams 1|2] [--repeats R] [--seed S]
//
// Each GPU keeps its Q rows at home; its K and V (one buffer, K then V) travel the ring, double
// buffered: while GPU p computes with the block in hand on its compute stream, the block's send
// to p+1 and the receive of the next block from p-1 run on a communication stream (ncclSend /
// ncclRecv, or with --transport copy cudaMemcpyPeerAsync on the copy engines, no SMs), ordered
// by events. Every (query chunk, key chunk) pair is one call of the Hopper kernel
// attention_forward_fast_tiled (kernels/fast.h; bf16/fp16, d 64/128): full below the diagonal,
// causal on it, skipped above (sim::ring::pair_kind); a merge kernel folds each pair's
// (O_b, lse_b) into the chunk's (O, lse).
//
// Splits: contiguous, GPU p owns rows [p N/P, (p+1) N/P); zigzag, the sequence in 2P chunks and
// GPU p owns chunks p and 2P-1-p, stored [2][H][N/2P][d] so that each chunk is a tensor the
// kernel takes as it is (the causal work is then the same on every GPU).
//
// --backward (kernels/ring_backward.cpp): the forward ring runs and validates first; its O and lse
// are the backward's inputs. Each pair is one call of attention_backward_fast; dQ stays home in
// fp32, dK/dV travel (fp32) with their K/V block and one hop more, back to their owner, that one
// in the run's type (the finished sums, rounded as the one-GPU backward rounds its outputs).
// --method allgather: NCCL all-gathers every K/V block (the own block is computed meanwhile), then
// every pair runs locally; backward, one NCCL reduce-scatter of the fp32 dK/dV partials.
//
// --transport auto (default) takes the copy engines when every GPU reaches its ring neighbours by
// peer access, else NCCL (and NCCL for the all-gather): on 4 x H100 the copy engines moved the
// ring's blocks at 364 GB/s per GPU against NCCL's 143 and take no SMs from the kernels
// (kernels/RESULTS.md, issue 33).
//
// --streams 2 (default): steps alternate between two compute streams, so that step s+1's kernels
// take the SMs step s leaves idle in its last wave; each step's merges (and the backward's dQ
// conversion) still wait for the step before. --streams 1 is the plain order, for comparison.
// --launch step (default; the zig-zag forward): a step's pairs in one launch of the fast kernel
// (attention_forward_fast_ring_step walks each query chunk's key chunks in turn) and one merge for
// both chunks; --launch pair: a launch and a merge per pair (the contiguous split has one pair a
// step either way). On 4 x H200 the step launch was 3-7 % faster under the full mask and at
// N = 128k, and within 1 % at 64k causal (kernels/RESULTS.md, issue 33, 2026-11-27). The backward's
// step launch (either split, and the all-gather's blocks) is one kernel over the step's pairs
// (attention_backward_fast_ring_step: a key tile sums every query chunk that sees it in
// registers), with the query chunks' statistics computed once per ring, not once per pair.
//
// Prints: validation (against one-GPU attention_forward_fast on all N and a float64 CPU reference
// on sampled rows; outputs poisoned first), bytes counted by sim/ring.h vs posted to NCCL vs
// NVLink bytes read from NVML (kernels/nvlink_counters.h) per GPU, ring / compute-only /
// exchange-only / one-GPU times (medians), overlap = hidden exchange / exchange-only time,
// scaling efficiency = one-GPU time / (P x ring time), and one `RESULT key=value ...` line.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/spec.h"

namespace flashsim::gpu {

struct RingOptions {
  int gpus = 2;
  int heads = 8;           // batch * heads
  std::int64_t n = 16384;  // total sequence length: a multiple of P (contiguous) or 2P (zigzag)
  int d = 64;              // 64 or 128
  bool causal = false;
  std::string dtype = "bf16";         // bf16 or fp16
  std::string split = "contiguous";   // contiguous or zigzag
  std::string transport = "auto";     // nccl, copy, or auto (copy where neighbours reach each other by P2P)
  std::string method = "ring";        // ring or allgather (NCCL only)
  bool backward = false;              // the backward after the forward
  int streams = 2;                    // compute streams per GPU: 1, or 2 (steps alternate)
  std::string launch = "step";        // zig-zag forward: step (a step's pairs in one launch) or pair
  int nccl_ctas = 0;                  // > 0: ncclConfig_t::maxCTAs of every communicator
  int repeats = 5;
  // before each timed batch, that mode runs untimed for at least this long, so that each GPU's
  // clock has settled at the mode's power (0: no settling, the measurement before 2026-11-27)
  int settle_ms = 200;
  // where the one-GPU baseline runs: gpu0, or all (every GPU of the ring runs the same one-GPU
  // problem at once, GPU 0's time counted, so that every GPU has the same power history when the
  // next ring batch starts; the baseline on GPU 0 alone left it hotter and slower, 2026-11-27)
  std::string baseline = "all";
  // > 0: after every step's compute and every one-GPU run, one SM counts its clock over this many
  // microseconds of the global timer; each timed batch prints the clock per GPU (SMCLOCK lines)
  int sm_clock_us = 0;
  std::uint64_t seed = 1;
};

// Returns 0 when the ring validates, 1 on a mismatch, 2 when it cannot run (bad options, no NCCL,
// too few GPUs), with a message on stderr.
int ring_main(const RingOptions& opt);

// Why `opt` cannot run on a machine with `gpus_present` CUDA GPUs, or "" when it can. The options
// on their own first (--gpus, --d, --dtype, --split, --transport, --heads, --nccl-ctas), then the
// machine (fewer GPUs than --gpus), then n against the ring (a multiple of the chunks, an int).
// CPU only (kernels/ring_options.cpp): ring_main passes cudaGetDeviceCount's answer.
std::string ring_options_error(const RingOptions& opt, int gpus_present);

// The merge of a partial (O_b, lse_b) into (O, lse): `rows` rows of d = 64 or 128 elements of
// type dt, on `stream` (a cudaStream_t).
void ring_merge(void* o, float* lse, const void* ob, const float* lseb, std::int64_t rows, int d, Dtype dt,
                void* stream);

}  // namespace flashsim::gpu

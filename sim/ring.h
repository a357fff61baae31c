// The device level: P devices, each with its own HBM, joined in a ring (device p sends to
// p + 1 mod P). Ring attention keeps each device's Q block at home and moves the K/V blocks
// around the ring; every step merges a partial (m, l, O) state exactly like the tile merge of
// the online-softmax lessons: "element is tile, tile is device".
//
// A schedule is a list of device operations (COMPUTE, SEND, RECV) grouped in steps; the
// RingMachine executes it in float64, checks that every SEND meets its RECV, and counts the
// bytes on every link and the HBM bytes and peak residency of every device.
//
// Two splits of the sequence: contiguous (device p owns rows [p n/P, (p+1) n/P)) and zig-zag
// (the sequence in 2P chunks; device p owns chunks p and 2P-1-p). Under a causal mask the
// contiguous split gives device p p full blocks and one masked block (the last device does
// 2P-1 times the work of the first); the zig-zag split gives every device the same work. A device's
// rows are a list of segments (one or two chunks), and one COMPUTE of (device, block) is one
// FA2 call per (query chunk, key chunk) pair that the mask does not skip.
#pragma once

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashsim::sim::ring {

enum class Split { Contiguous, Zigzag };

struct RingConfig {
  std::int64_t n = 0;       // sequence length (queries = keys = values)
  std::int64_t d = 0;       // head dimension
  int p = 1;                // devices in the ring
  bool causal = false;      // key j is seen by query i only when j <= i
  int elem_bytes = 4;       // Q, K, V, O element size
  int acc_bytes = 4;        // dK / dV accumulator element size (backward)
  std::int64_t tile = 64;   // per-device FA2 tile (Br = Bc), for the HBM model of one step
  Split split = Split::Contiguous;
};

// Rows [start, start + rows) of the sequence.
struct Segment {
  std::int64_t start = 0, rows = 0;
};

// What one (query chunk, key chunk) pair costs under the mask.
enum class PairKind { Full, Masked, Skip };
// Full: every key at or before every query (or no mask); Skip: every key after every query;
// Masked: the rest (the diagonal chunk).
PairKind pair_kind(const Segment& q, const Segment& k, bool causal);
// Scores a pair evaluates, mask-aware.
std::int64_t pair_scores(const Segment& q, const Segment& k, bool causal);

// A bad configuration or an ill-formed schedule (a SEND nobody receives, ...).
class RingError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class OpKind { Compute, Send, Recv };
// What a SEND/RECV moves: the K and V blocks (forward and backward), or the dK and dV
// accumulators that travel with them in the backward pass.
enum class Payload { KV, dKV };

struct RingOp {
  int step = 0;
  OpKind kind = OpKind::Compute;
  int device = 0;        // the device that executes the op
  int peer = -1;         // SEND: destination, RECV: source
  int block = 0;         // COMPUTE: the K/V block merged; SEND/RECV: the block moved
  Payload payload = Payload::KV;
  bool masked = false;   // COMPUTE on the causal diagonal block
  std::int64_t bytes = 0;
};

struct RingSchedule {
  RingConfig cfg;
  bool backward = false;
  int steps = 0;
  std::vector<std::int64_t> block_rows;           // rows each device owns (all its segments)
  std::vector<std::vector<Segment>> segments;     // each device's segments, in its storage order
  std::vector<RingOp> ops;
};

// Device p owns rows [start_p, start_p + rows_p): the first n % p devices get one row more.
void split_rows(std::int64_t n, int p, std::vector<std::int64_t>& start, std::vector<std::int64_t>& rows);
// The segments of every device under cfg.split: contiguous, one segment per device (split_rows);
// zig-zag, chunks p and 2P-1-p of split_rows(n, 2P). Zig-zag needs n >= 2P.
std::vector<std::vector<Segment>> device_segments(const RingConfig& cfg);

// Forward: P compute steps; after step s < P-1 every device sends the K/V block it holds to the
// next device. Causal: a device skips a block whose every pair is skipped (contiguous: the blocks
// wholly above its rows), and marks the COMPUTE masked when a pair is masked (its own block).
RingSchedule forward_schedule(const RingConfig& cfg);
// Backward (communication and compute placement; values are not simulated): K/V move as in the
// forward, and the dK/dV accumulators (acc_bytes) travel with them, plus one last hop that brings
// each block's finished sums home, rounded to the element type (elem_bytes) as the output is.
RingSchedule backward_schedule(const RingConfig& cfg);

// Closed forms. Link p carries device p -> p+1. Forward: device p forwards every K/V block but
// the one of device p+1: 2 d e (n - rows_{p+1}) bytes, (P-1)/P of K and V when P divides n
// (either split: the split changes which rows travel, not how many).
std::int64_t forward_link_bytes(const RingConfig& cfg, int link);
std::int64_t forward_total_link_bytes(const RingConfig& cfg);  // 2 d e (P-1) n
// Backward: the forward's K/V traffic plus every dK/dV block once per link, P > 1: as accumulators
// (2 d e_acc) but for block p+1, whose last hop home crosses link p in the element type (2 d e).
// Over the ring 2 d n (e_acc (P-1) + e).
std::int64_t backward_link_bytes(const RingConfig& cfg, int link);
std::int64_t backward_total_link_bytes(const RingConfig& cfg);

// The alternative users weigh against a ring (context parallelism as in Llama 3 training): every
// device all-gathers K and V, computes all its pairs locally and, backward, reduce-scatters the
// dK/dV partials. With NCCL's ring algorithm each K/V block crosses P-1 links from its owner (link
// p carries every block but device p+1's: exactly the ring forward's bytes) and each block's
// partial sums cross P-1 links ending at their owner (link p carries every block's but device p's),
// all as accumulators: the ring backward's P hops less its last, element-type one. P = 1 moves
// nothing.
std::int64_t allgather_link_bytes(const RingConfig& cfg, int link, bool backward);
std::int64_t allgather_total_link_bytes(const RingConfig& cfg, bool backward);
// Bytes device p holds at once: the ring's home blocks (Q, O and lse states, dO backward) plus all
// P K/V blocks, and backward every block's dK/dV partials plus its own block's sums (acc_bytes).
// The ring holds two K/V blocks (and two dK/dV) instead: RingMachine::devices()[p].resident_peak.
std::int64_t allgather_resident_peak(const RingConfig& cfg, int device, bool backward);

// Which of the two wins, as the tile machine predicts it from each (query chunk, key chunk) pair's
// compute time (full_pair_ms, and masked_pair_ms on the causal diagonal; chunks of equal size) and
// one link rate (bytes per ms each device sends): the ring hides every step's exchange under the
// step's compute (a step takes the longer: the K/V hop of step s and the dK/dV hop of step s-1,
// backward) and exposes its last dK/dV hop; the all-gather hides its gather under the own block's
// compute only and exposes its reduce-scatter. Each device on its own; the slowest one counts.
struct MethodTimes {
  double ring_ms = 0, allgather_ms = 0;
};
MethodTimes predict_methods(const RingConfig& cfg, bool backward, double full_pair_ms, double masked_pair_ms,
                            double link_bytes_per_ms);

struct DeviceCounters {
  std::int64_t link_sent = 0, link_received = 0;   // bytes
  std::int64_t hbm_read = 0, hbm_written = 0;      // bytes, the FA2 step + merge model
  std::int64_t resident_peak = 0;                  // bytes held in HBM at once
  std::int64_t computes = 0, score_elems = 0;      // compute ops, scores evaluated (mask-aware)
  std::int64_t pairs = 0, masked_pairs = 0;        // FA2 calls (chunk pairs not skipped), masked ones
};

// The load balance of a run: the largest device's scores over the mean (1 = balanced).
double score_imbalance(const std::vector<DeviceCounters>& devices);

class RingMachine {
 public:
  // q, k, v: n x d row-major. Values may be empty for a count-only run.
  RingMachine(const RingConfig& cfg, std::vector<double> q, std::vector<double> k, std::vector<double> v);
  explicit RingMachine(const RingConfig& cfg) : RingMachine(cfg, {}, {}, {}) {}

  // Runs the schedule op by op; throws RingError on an ill-formed schedule.
  void execute(const RingSchedule& schedule);

  const std::vector<double>& output() const { return o_; }     // n x d, valid after a forward
  const std::vector<double>& lse() const { return lse_; }      // n, natural-log sum of exp
  const std::vector<DeviceCounters>& devices() const { return dev_; }
  const std::vector<std::int64_t>& link_bytes() const { return link_; }  // link p: p -> p+1
  // The K/V (or dK/dV) block each device holds at the end.
  const std::vector<int>& held(Payload what) const { return what == Payload::KV ? kv_held_ : dkv_held_; }

 private:
  void compute(const RingOp& op);
  void count_pairs(const RingOp& op);
  RingConfig cfg_;
  std::vector<std::int64_t> rows_;
  std::vector<std::vector<Segment>> seg_;
  std::vector<double> q_, k_, v_, o_, lse_, m_, l_;
  std::vector<DeviceCounters> dev_;
  std::vector<std::int64_t> link_;
  std::vector<int> kv_held_, dkv_held_;
  std::set<std::pair<int, int>> started_;  // (device, query chunk) whose O state holds a partial
  bool values_ = false;
};

// Float64 softmax(Q K^T / sqrt(d)) V, the reference the ring must match; lse optional.
std::vector<double> attention_reference(const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, std::int64_t n, std::int64_t d, bool causal,
                                        std::vector<double>* lse = nullptr);

// "link 0 -> 1: counted 1234 B, closed form 1234 B" tables for the CLI and the lesson.
std::string traffic_table(const RingSchedule& schedule, const RingMachine& ran);

}  // namespace flashsim::sim::ring

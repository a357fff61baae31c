// What one GPU run is: an operation, a schedule (a numbered kernel version), a dtype, a problem size
// and the tile sizes the kernel uses. Everything here is plain C++ (no CUDA), so the tests run it on
// machines without a GPU: parsing of the command line's lists, the compulsory minimum traffic, the
// traffic model of our own kernels, FLOP counts and tolerances.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flashsim::gpu {

enum class Op { Matmul, Softmax, AttnFwd, AttnBwd };
// F16: the fast tensor-core versions only. E4M3 ("fp8"): attn-fp8 only (e4m3 Q, K, V; O bf16).
enum class Dtype { F32, BF16, F16, E4M3 };

// Every schedule we run on the GPU. The number after the op in the kernel file is `version`.
enum class Schedule {
  MatmulInner,    // matmul.cu v1: output-stationary, C tile in registers, A/B panels streamed
  MatmulOuter,    // matmul.cu v2: k outermost across launches, C read+written per k-step
  SoftmaxThree,   // softmax.cu v1: max pass, sum pass, normalize pass
  SoftmaxOnline,  // softmax.cu v2: online (max, sum) pass, normalize pass
  AttnNaive,      // attention_forward.cu v1: S = QK^T, P = softmax(S), O = PV, S and P in HBM
  AttnFA1,        // attention_forward.cu v2: KV-block outer loop, O/m/l round trips in HBM
  AttnFA2,        // attention_forward.cu v3: Q-block outer loop, logsumexp stored
  BwdTwoPass,     // attention_backward.cu v1: D, then dQ kernel + dK/dV kernel
  BwdAtomic,      // attention_backward.cu v2: D, then one dK/dV kernel with atomic fp32 dQ
  // the fast versions (kernels/fast.h): same schedules, tensor cores / 16-byte accesses
  SoftmaxFast,    // softmax.cu v3: online 2-pass at the memory bandwidth (fp32)
  AttnFA2Mma,     // attention_forward.cu v5 (d 64) / v6 (d 128): FA2 order on wgmma tensor cores (bf16/fp16)
  BwdMma,         // attention_backward.cu v3: FA2 backward on mma.sync + wgmma (dK/dV), atomic fp32 dQ (bf16/fp16, d 64/128)
  AttnFP8,        // attention_fp8.cu v1: FA2 order on FP8 tensor cores, e4m3 Q/K/V^T (quantized in setup), O bf16; d 128
};

// Whether a kernel exists for this (schedule, dtype, head dim); the reason when not.
std::optional<std::string> unsupported(Schedule s, Dtype dt, std::int64_t d);

struct ScheduleInfo {
  Schedule schedule;
  Op op;
  const char* id;       // command-line name, e.g. "softmax-online"
  const char* file;     // kernel file
  int version;          // version number inside that file
  const char* summary;  // one line
};

const std::vector<ScheduleInfo>& all_schedules();
const ScheduleInfo& info(Schedule s);
const char* op_name(Op op);  // "matmul", "softmax", "attn-fwd", "attn-bwd"
const char* dtype_name(Dtype d);
int dtype_bytes(Dtype d);
std::optional<Dtype> parse_dtype(const std::string& s);

// "matmul,softmax-online,attn-fwd,all" -> schedules, in the canonical order, without duplicates.
// Group names: matmul, softmax, attn-fwd, attn-bwd, attention (= both), all. Throws on unknown names.
// attn-fp8 is in `all` but not in attn-fwd / attention (whose counts tests and docs fix): name it.
std::vector<Schedule> parse_schedules(const std::string& list);

struct Spec {
  Schedule schedule = Schedule::MatmulInner;
  Dtype dtype = Dtype::F32;
  // matmul: C[m,n] = A[m,k] B[k,n]
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t bm = 64, bn = 64, bk = 16;
  // softmax over rows x cols, chunk columns per thread block
  std::int64_t rows = 0, cols = 0, chunk = 4096;
  // attention over bh heads of (seq x d)
  std::int64_t bh = 0, seq = 0, d = 64;
  std::int64_t br = 64, bc = 64;
  bool causal = false;
  bool paired_tiles = false;  // attention: blocks take causal Q tiles in pairs of equal work
  // attn-fa2-mma / attn-fp8, full mask: the persistent launch's last round split along the keys
  // (the launchers' default at d = 128 from N = 8192 since 2026-12-07, launch_order.h)
  bool split_tail = false;
  // bwd-mma, causal: the K/V blocks shortest first, as every run before 2026-12-07 (evening)
  bool shortest_first = false;

  Op op() const { return info(schedule).op; }
  std::string size_label() const;  // "8192x8192x256", "256x524288", "8x4096x64 causal"
};

// Default tile sizes of each schedule's kernel (the kernels are compiled for exactly these).
void apply_kernel_tiles(Spec& s);
// An attention row's tiling as compare's CSV and JSON record it: "BRxBC", plus " paired" for
// causal tile pairs, " split" for the forward's split tail and " longest-first" for a causal
// backward run in that order (since 2026-12-07); "" for other ops. predict --from reads it back with
// apply_attn_tiles_label (throws std::invalid_argument naming what does not parse); a label
// without " split" or " longest-first" is a run from before them (whole tiles, shortest first). In
// CSVs from before the column the row's occupancy tells the d = 64 kernels of attn-fa2-mma apart
// (apply_attn_tiles_before_column): version 5 ran three blocks per SM on 64 x 128 tiles, version 6
// one on the launcher's tiles.
std::string attn_tiles_label(const Spec& s);
void apply_attn_tiles_label(Spec& s, const std::string& label);
void apply_attn_tiles_before_column(Spec& s, int blocks_per_sm);

// Problem sizes per op. A size string is "op:AxBxC[:causal]" or a preset:
//   tiny  (sanitizer-sized, N not a multiple of the tile), small (inside L2), large (far beyond L2).
struct SizeSet {
  std::vector<std::vector<std::int64_t>> matmul;   // {m, n, k}
  std::vector<std::vector<std::int64_t>> softmax;  // {rows, cols}
  std::vector<std::vector<std::int64_t>> attn_fwd; // {bh, seq, d}
  std::vector<std::vector<std::int64_t>> attn_bwd; // {bh, seq, d}
};
SizeSet parse_sizes(const std::string& list);  // throws std::invalid_argument

// Expands schedules x sizes x dtypes x causal into concrete specs. dtypes empty = per-op default
// (matmul: fp32 and bf16; softmax: fp32; attention: bf16; attn-fp8: fp8). causal_modes: {false}, {true} or both.
std::vector<Spec> expand(const std::vector<Schedule>& schedules, const SizeSet& sizes,
                         const std::vector<Dtype>& dtypes, const std::vector<bool>& causal_modes);
// expand refuses (std::invalid_argument) fp8 in `dtypes` for any schedule but attn-fp8; attn-fp8
// gets fp8 when `dtypes` is empty. check_named_schedules refuses what `list` names by id but
// expand would drop without a word: attn-fp8 with a head dim other than 128, or with a non-empty
// `dtypes` that lacks fp8. (In `all`, attn-fp8 is dropped at d = 64 like the other d-bound ones.)
void check_named_schedules(const std::string& list, const SizeSet& sizes, const std::vector<Dtype>& dtypes);

// ---- traffic ---------------------------------------------------------------------------------
struct Bytes {
  std::uint64_t read = 0, written = 0;
  std::uint64_t total() const { return read + written; }
};

// Each input read once and each output written once.
Bytes compulsory(const Spec& s);

// What our kernel issues to global memory, array by array, if there were no cache. `streamed`
// marks arrays whose re-reads/round trips are too large for L2 at the sizes we call "large";
// the others are small panels (tiles of A/B, K/V, per-chunk statistics) that L2 serves after the
// first touch.
struct ArrayModel {
  std::string name;
  std::uint64_t read = 0, written = 0;
  std::uint64_t size = 0;  // bytes of the array itself
  bool streamed = false;
};
std::vector<ArrayModel> model_traffic(const Spec& s);
Bytes model_total(const std::vector<ArrayModel>& a);
// HBM traffic we expect with a cache that keeps small panels: streamed arrays as modelled,
// every other array read at most once and written at most once.
Bytes expected_hbm(const std::vector<ArrayModel>& a);

// Useful FLOPs (matmul 2mnk; attention forward 4*d per visible (query,key) pair, backward 10*d).
double flops(const Spec& s);
// Relative-error tolerance, scaled by dtype: fp32 1e-4, bf16 1e-2, fp16 5e-3 (base_tolerance).
// attn-fp8: 1, as its check returns the worst fraction of its allowances (kernels/fp8_ref.h
// fp8_check_allowances), not a relative error.
// FA1, which rounds O to the dtype on each of its ceil(N / bc) round trips through HBM, adds
// twice fa1_round_trip_error in quadrature (spec.cpp derives it).
double tolerance(const Spec& s);
double base_tolerance(Dtype d);
double unit_roundoff(Dtype d);  // 2^-p: bf16 2^-8, fp16 2^-11, fp32 2^-24
double rounding_rms(Dtype d);   // rms relative error of one round-to-nearest: u / sqrt(6)
// Expected relative L2 error of O from T round trips (near-uniform attention): rms * sqrt((T+1)/2).
double fa1_round_trip_error(Dtype d, std::int64_t kv_blocks);
bool within_tolerance(double rel_err, double tol);  // false for NaN

// Counted bytes from the tile machine (sim/traffic.h); nullopt when flashsim_sim is not linked
// or the count failed. `arrays` gets the per-array counts when non-null.
struct CountedArray {
  std::string name;
  std::uint64_t read = 0, written = 0;
};
std::optional<Bytes> counted(const Spec& s, std::vector<CountedArray>* arrays = nullptr,
                             std::string* error = nullptr);
// The same count through the L2 model (sim/launch.h) of a GPU with this L2 and SM count, the
// kernel's occupancy and its block order: the HBM bytes the tile machine predicts.
// `l2_partitions`: the L2's slices (sim/launch.h; Hopper has 2); `l2_ways`, `l2_dirty_ways`: its
// sets and dirty-line limit (sim/l2.h; 0: fully associative, no limit); `dirty_at_start`: bytes of
// unrelated dirty lines in the L2 when the run starts (sim/launch.h GpuModel); `l2_page_lines`,
// `l2_copy_rank`: page-balanced sets and the far copies' rank (isa/program.h L2Geometry).
// `l2_dirty_group`: sets sharing one dirty-line limit (isa/program.h L2Geometry).
// `dirty_at_start_counted`: whether the write-back of those unrelated lines counts in the writes
// (as in a range that holds the run alone), or not (writes measured in one range with the flushes,
// whose baseline holds them: Row::writes_one_range); they take room in the L2 either way.
std::optional<Bytes> predicted(const Spec& s, std::uint64_t l2_bytes, int sms, int blocks_per_sm,
                               std::vector<CountedArray>* arrays = nullptr, std::string* error = nullptr,
                               int l2_partitions = 1, std::uint32_t l2_ways = 0, std::uint32_t l2_dirty_ways = 0,
                               std::uint64_t dirty_at_start = 0, std::uint32_t l2_page_lines = 0,
                               std::uint32_t l2_copy_rank = 0, bool dirty_at_start_counted = true,
                               std::uint32_t l2_dirty_group = 1);
// A row of a `flashsim-gpu compare` CSV back as a Spec: schedule id, size label ("8x4096x64
// causal"), dtype. Throws std::invalid_argument naming what does not parse.
Spec spec_from_row(const std::string& schedule, const std::string& size, const std::string& dtype);
bool have_counted();

// ---- time ------------------------------------------------------------------------------------
// The time model's GPU preset (isa/units.h) for a device name: a name with "H200" in it -> h200,
// "H100" -> h100, any other -> h100 with `note` saying so. A non-empty `override_name` (compare
// --gpu-preset) wins; an unknown one throws std::invalid_argument naming the presets.
struct PresetPick {
  std::string name;  // "h100", "h200"
  std::string note;  // empty, or why the preset is a guess
};
PresetPick gpu_preset_for(const std::string& device_name, const std::string& override_name = "");

// One run's predicted time on a preset: the fast schedules (attn-fa2-mma, bwd-mma, softmax-fast)
// through sim::predict_time with the tiling the spec records (forward version 5 on 64-row tiles,
// else 6; backward: the launcher's version, FLASHSIM_BWD_VERSION as the launcher reads it), the
// SIMT ones through sim::predict_time_simt. `hbm_bytes`: the run's predicted HBM bytes (the L2
// model, Row::predicted), else each kernel's compulsory bytes; for bwd-mma the D and dQ-conversion
// launches' bytes are taken off (predict_time adds those launches on its own). nullopt with *why
// when flashsim_sim is not built or the model refuses the size.
struct TimePrediction {
  double ms = 0;
  std::string bound;  // "tensor", "special", "vector", "memory", "latency", "hbm"
  std::string model;  // "trace" (fast kernels) or "simt"
};
std::optional<TimePrediction> predict_run_time(const Spec& s, const std::string& preset, std::optional<double> hbm_bytes,
                                               std::string* why = nullptr);
// Rows that the 15 % time bound covers: attention at N >= 4096, matmul with m and n >= 4096.
bool time_bound_row(const Spec& s);

// Number of input copies to rotate through while timing: enough that 3x the L2 lies between two
// uses of the same copy, at most 8; 1 when one set is already larger than 2x the L2.
int rotation_sets(std::size_t input_bytes, std::size_t l2_bytes);

// Helpers used by the model and by tests.
std::int64_t ceil_div(std::int64_t a, std::int64_t b);
// Number of (query,key) pairs that attention computes for one head.
double visible_pairs(std::int64_t n, bool causal);

}  // namespace flashsim::gpu

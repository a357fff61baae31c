// Host side of the FP8 (e4m3) attention forward (kernels/attention_fp8.cu): the e4m3 format, the
// key order of the transposed V operand, the random Hadamard transform ("incoherent processing",
// FlashAttention-3), and float64 references. C++ only, so the CPU tests use it without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flashsim::gpu::fp8 {

// e4m3 ("fn": no infinities, 0x7F / 0xFF are NaN): 1 sign, 4 exponent (bias 7), 3 mantissa bits;
// largest 448, smallest normal 2^-6, smallest subnormal 2^-9.
constexpr float kE4m3Max = 448.f;
// Rounds to nearest (ties to even) and saturates at +-448, as cvt.rn.satfinite.e4m3x2.f32; NaN -> 0x7F.
std::uint8_t float_to_e4m3(float x);
float e4m3_to_float(std::uint8_t code);

// Quantization blocks: one scale per 64 rows of Q (a consumer warpgroup's rows), per 32 rows of K
// (so that every key tile the forward takes, 128, 192 or 224 keys, holds whole blocks), per head of V.
constexpr int kQBlockRows = 64;
constexpr int kKBlockRows = 32;
// The forward's key tile when none is asked for (fp8.h key_tile_for): 224 keys from n = 8192 (3-5 %
// faster there on an H100), 128 below, where a wide tile wastes more of a short row. The time
// model's FP8 plan (sim/gpu_time.cpp) takes the same rule; a CPU test holds the two together.
inline int default_key_tile(int n) { return n >= 8192 ? 224 : 128; }
// P V reads V^T ([d][keys], keys contiguous: 8-bit wgmma operands must be K-major). Within each
// group of 32 keys, position p holds key vt_key_of_position(p), the order in which a thread's
// S accumulators become the A fragment of P V without shuffles (see attention_fp8.cu).
constexpr int kKeyGroup = 32;
int vt_key_of_position(int p);
// Keys of V^T per row: n rounded up to a whole group (a multiple of 16 bytes, as TMA wants).
inline int padded_keys(int n) { return (n + kKeyGroup - 1) / kKeyGroup * kKeyGroup; }

// The sign of column i of the random diagonal D in Q D H, K D H (H the d x d Walsh-Hadamard
// matrix / sqrt(d)): the same hash as the device's, so the host can undo or repeat the transform.
float hadamard_sign(std::uint64_t seed, int i);
// x (one row of d = power of two entries) <- x D H, in place, in double.
void hadamard_row(std::vector<double>& x, std::uint64_t seed);
// The inverse: x <- x H D (H H = I, D D = I).
void hadamard_row_inverse(std::vector<double>& x, std::uint64_t seed);

// What the FP8 forward reads, on the host: dequantized values (e4m3 value x its block's scale) in
// the order of the inputs (V un-permuted), Q and K in the transformed basis when the transform is
// on. q, k, v: bh x n x d row-major.
struct Dequantized {
  int bh = 0, n = 0, d = 0;
  std::vector<float> q8, k8, v8;            // e4m3 values, unscaled
  std::vector<float> q_scale, k_scale, v_scale;  // per block of kQBlockRows / kKBlockRows / per head
  float q(int h, int i, int c) const;         // scaled
  float k(int h, int i, int c) const;
  float v(int h, int i, int c) const;
};

// The FP8 kernel's arithmetic in double, for the rows listed, one head: per key tile of bc keys in
// order, the online softmax in log2 units with P quantized to e4m3 as 256 P (the kernel's shift),
// O accumulated from the quantized P and unscaled V, scaled at the end. o: rows x d, lse: rows.
// s_abs (optional, rows): the row's largest sum of |products| of a score, sum_c |q_c k_c| / sqrt(d)
// over its visible keys: the scale of the rounding in the tensor cores' FP8 sums (fp8_lse_tolerance).
void attention_fp8_emulated_rows(const Dequantized& x, int head, bool causal, int bc,
                                 const std::vector<std::int64_t>& rows, float* o, float* lse,
                                 float* s_abs = nullptr);

// What a row's logsumexp may differ by between the kernel and the double emulation: the FP8 tensor
// cores sum products with about 14 significant bits, not fp32's 24 (DeepSeek-V3 technical report,
// 2024, on H800; ncu cannot show it), so a score is off by up to ~2^-13 of its sum of |products|;
// 2^-11 of it leaves a factor 4 for the k-steps' four partial sums, + 1e-4 for the fp32 sums.
inline double fp8_lse_tolerance(double s_abs) { return s_abs / 2048.0 + 1e-4; }

// Where the FP8 forward's error comes from: attention in double on one head's q, k, v (n x d,
// row-major) with only the roundings asked for, against exact attention; RMS error of O over
// `rows`. Each rounding alone shows its share. One scale per tensor: e4m3 is a floating-point
// format, so a scale (per block or per tensor) moves only which values fall below its normals.
struct Roundings {
  bool qk = false;           // Q and K to e4m3
  bool hadamard_qk = false;  // Q D H and K D H first (exact in double: it changes only what rounding does)
  bool p = false;            // P to e4m3, as 2^8 P
  bool v = false;            // V to e4m3
  bool hadamard_v = false;   // V D H first and O H D after
};
double fp8_rounding_error(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                          int n, int d, const Roundings& r, const std::vector<int>& rows, std::uint64_t seed);

// The operands from the bytes the quantize pass wrote (fp8.h Operands, copied to the host): q, k
// bh x n x d, vt bh x d x padded_keys(n) in the permuted key order, the scales as laid out there.
// V^T goes back to [keys][d]; a padding key that is not zero makes every v8 NaN (fails any check).
Dequantized dequantize_operands(int bh, int n, int d, const std::vector<std::uint8_t>& q,
                                const std::vector<std::uint8_t>& k, const std::vector<std::uint8_t>& vt,
                                std::vector<float> q_scale, std::vector<float> k_scale, std::vector<float> v_scale);
int q_scale_blocks(int n);  // scales per head of Q (blocks of kQBlockRows)
int k_scale_blocks(int n);  // of K (kKBlockRows)

// The forward's output checks against attention_fp8_emulated_rows (bc: the kernel's key tile) on sampled rows, with
// allowances from e4m3's step: a probability rounds by at most 2^-4 of itself, a rounding flip
// against the double reference moves one key's weight by a step, 2^-3: max |dO| <= max|V| / 8,
// rms |dO| <= max|V| / 256; |dlse| <= fp8_lse_tolerance. Shared by the bench driver and compare.
struct OutputErrors {
  double max_o = 0, rms_o = 0, lse = 0, vmax = 0;  // lse: worst |dlse| / its tolerance
  // the worst of the three as a fraction of its allowance; infinite on NaN
  double worst_fraction() const;
  bool ok() const { return worst_fraction() <= 1.0; }
};
class OutputCheck {
 public:
  explicit OutputCheck(int key_tile = 128) : bc_(key_tile) {}
  // One head: o (n x d) and lse (n) as the kernel wrote them, as floats; rows: those compared.
  void add_head(const Dequantized& x, int head, bool causal, const std::vector<std::int64_t>& rows, const float* o,
                const float* lse);
  OutputErrors result() const;

 private:
  int bc_;
  OutputErrors e_;
  double sq_ = 0;
  std::size_t count_ = 0;
};

}  // namespace flashsim::gpu::fp8

// CPU references for every kernel in kernels/*.cu. Inputs and outputs are float; every sum is
// accumulated in double. The GPU kernels are validated against these on fresh random inputs, and the
// tests in tests/kernels/ check these against naive float64 math (and finite differences).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flashsim::gpu::ref {

// Round a float to the nearest bfloat16 (ties to even) and back; NaN stays NaN.
float bf16_round(float x);
std::uint16_t float_to_bf16_bits(float x);
float bf16_bits_to_float(std::uint16_t b);

// ||out - ref||_2 / ||ref||_2, in double. NaN (or inf) anywhere in out gives +inf.
// When ||ref|| is 0 the absolute norm ||out - ref|| is returned.
double rel_error(const float* out, const float* ref, std::size_t n);
double rel_error(const std::vector<float>& out, const std::vector<float>& ref);

// C rows: for each r in rows, C_out[idx][0..n) = sum_k A[r][k] * B[k][*]; A is m x k, B is k x n,
// both row-major. C_out has rows.size() * n entries.
void matmul_rows(const float* a, const float* b, std::int64_t n, std::int64_t k,
                 const std::vector<std::int64_t>& rows, float* c_out);

// y = softmax(x) over one row of `cols` entries.
void softmax_row(const float* x, float* y, std::int64_t cols);

// One head: q, k, v are n x d row-major. O = softmax(scale * QK^T [+ causal mask]) V,
// lse[i] = log sum_j exp(scale * q_i.k_j) over visible j. scale = 1/sqrt(d).
void attention_forward(const float* q, const float* k, const float* v, std::int64_t n, std::int64_t d,
                       bool causal, float* o, float* lse);

// One head: gradients of L = sum(dO * O) for the forward above.
void attention_backward(const float* q, const float* k, const float* v, const float* dout, std::int64_t n,
                        std::int64_t d, bool causal, float* dq, float* dk, float* dv);

// The same forward for the listed rows only (o_out: rows.size() x d, lse_out: rows.size()), so that
// large heads can be checked on a sample of rows.
void attention_forward_rows(const float* q, const float* k, const float* v, std::int64_t n, std::int64_t d,
                            bool causal, const std::vector<std::int64_t>& rows, float* o_out, float* lse_out);

// The backward for the listed rows, given what a backward kernel receives (O and lse of the forward):
// dQ rows, and dK, dV rows of the same indices (each rows.size() x d).
void attention_backward_rows(const float* q, const float* k, const float* v, const float* o, const float* dout,
                             const float* lse, std::int64_t n, std::int64_t d, bool causal,
                             const std::vector<std::int64_t>& rows, float* dq_out, float* dk_out, float* dv_out);

// Indices 0..count-1 when count <= max_pick, else max_pick indices spread evenly, always including
// the first and the last. Used to check a subset of rows / heads at large sizes.
std::vector<std::int64_t> pick_indices(std::int64_t count, std::int64_t max_pick);

}  // namespace flashsim::gpu::ref

// Helpers for the tile-machine lessons (10-13): float64 attention references (forward and
// backward, optionally causal) and a runner that re-assembles a learner's trace with other
// .param values, holds every array to the exact shape, tile and element size the lesson's
// machine has at that size, runs it on given inputs and grades the outputs and the bytes each
// array moves against the lesson's closed forms.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lessons/lesson.h"
#include "sim/machine.h"

namespace flashsim::lessons::tile {

using Params = std::map<std::string, std::int64_t>;
using Mat = std::vector<double>;  // row-major

// Attention with the softmax scale folded into Q: S = Q K^T, P = softmax(S) per row, O = P V,
// L = logsumexp(S). Causal aligns the diagonal bottom-right (query r sees key c iff
// c <= r + nk - nq); a row that sees no key has O = 0 and L = -inf.
struct Forward {
  Mat O, L;
};
Forward attention_forward(const Mat& Q, const Mat& K, const Mat& V, std::int64_t nq, std::int64_t nk, std::int64_t d,
                          bool causal);

// The closed-form gradients: dV = P^T dO, dP = dO V^T, D = rowsum(P * dP), dS = P * (dP - D),
// dQ = dS K, dK = dS^T Q.
struct Backward {
  Mat dQ, dK, dV;
};
Backward attention_backward(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, std::int64_t nq, std::int64_t nk,
                            std::int64_t d, bool causal);

// An array as the lesson's machine has it at one size.
struct ArraySpec {
  std::string name;
  int rank = 2;
  std::int64_t rows = 1, cols = 1, tile_rows = 1, tile_cols = 1;
  int elem_bytes = 2;
};

// Bytes one array may move: read (written = false) or written.
struct ByteBudget {
  std::string array;
  bool written = false;
  std::uint64_t limit = 0;
  std::string why;  // the closed form, e.g. "O written once: N*d*2"
};

// How many times an opcode may execute ("MASK").
struct OpBudget {
  std::string mnemonic;
  std::uint64_t limit = 0;
  std::string why;
};

// One graded run.
struct Case {
  Params params;                        // .param overrides
  std::string what;                     // "random inputs", "scores in the thousands", ...
  std::vector<ArraySpec> arrays;        // every array the trace may use
  std::map<std::string, Mat> inputs;    // values of the arrays the trace reads
  std::map<std::string, Mat> expected;  // the outputs and their float64 values
  std::vector<ByteBudget> budgets;
  std::vector<OpBudget> op_budgets;
};

// "N = 12, d = 4, Br = 4, Bc = 6"
std::string size_label(const Params& params);

// Runs `c` on the trace that `ran` executed; appends one precise sentence to `problems` and
// returns false on the first problem (assembly, shapes, faults, a wrong cell, a budget).
bool run_case(const sim::Machine& ran, const Part& part, const Case& c, std::vector<std::string>& problems);

// Uniform random matrix in [lo, hi).
Mat random_mat(std::mt19937_64& rng, std::int64_t rows, std::int64_t cols, double lo = -1, double hi = 1);

// Bytes of `rows` x `cols` elements of `elem` bytes.
inline std::uint64_t bytes(std::int64_t rows, std::int64_t cols, int elem) {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * static_cast<std::uint64_t>(elem);
}
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace flashsim::lessons::tile

// Generators for the scalar-machine softmax and variance traces of lessons 5-7, their
// DRAM-traffic closed forms, and float64 references to check them against.
//
// Every generator returns flashsim assembly with `.param n` and `.for` loops, so the text is
// short for any n, stays editable, and the step table points at a real source line. The
// `*_program` functions assemble that text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.h"

namespace flashsim::sim::schedules {

// DRAM elements moved by a trace, as the lessons count them.
struct Traffic {
  std::uint64_t reads = 0;
  std::uint64_t writes = 0;
  bool operator==(const Traffic&) const = default;
};

// ---- softmax of x[0..n) into out[0..n) -----------------------------------------------------

// No max subtracted: sum of e^x, then e^x / sum. 2 registers, 2 passes. Overflows (inf, then
// NaN from inf/inf) once some x exceeds ~88.7 in float32.
std::string softmax_unsafe_source(std::int64_t n);
// Max pass, sum-of-exponentials pass, normalise pass. 3 registers.
std::string softmax_three_pass_source(std::int64_t n);

// How the online pass rescales the old sum when the running max grows.
enum class Rescale {
  Difference,  // s * e^(m_old - m_new): the exponent is <= 0, so it cannot overflow
  Ratio,       // s * e^m_old / e^m_new: same value on paper; e^m overflows for large m
};
// Running max + rescaled sum in one pass, then a normalise pass. 4 registers.
std::string online_softmax_source(std::int64_t n, Rescale rescale = Rescale::Difference);

Traffic softmax_unsafe_traffic(std::int64_t n);      // 2n reads, n writes
Traffic softmax_three_pass_traffic(std::int64_t n);  // 3n reads, n writes
Traffic online_softmax_traffic(std::int64_t n);      // 2n reads, n writes

// ---- variance of x[0..n) into mean[0] and var[0] (population variance, M2 / n) ------------
// The machine has no immediate operands: the constants 0 and 1 come from the DRAM arrays
// zero[0] and one[0]; the count k is built in a register by adding one, and 1/k enters as a
// DIV by that count.

// Pass 1: mean; pass 2: sum of (x - mean)^2. 5 registers.
std::string variance_two_pass_source(std::int64_t n);
// One pass keeping (k, mean, M2), Welford's update. 7 registers.
std::string variance_welford_source(std::int64_t n);
// One pass with sum and sum of squares, E[x^2] - E[x]^2: cancels catastrophically when the
// mean is large compared with the spread. 6 registers.
std::string variance_naive_source(std::int64_t n);

Traffic variance_two_pass_traffic(std::int64_t n);  // 2n + 2 reads, 2 writes
Traffic variance_welford_traffic(std::int64_t n);   // n + 2 reads, 2 writes
Traffic variance_naive_traffic(std::int64_t n);     // n + 2 reads, 2 writes

// ---- float64 references ---------------------------------------------------------------------
std::vector<double> softmax_reference(const std::vector<double>& x);  // subtracts the max
struct Moments {
  double mean = 0;
  double variance = 0;  // population: sum (x - mean)^2 / n
};
Moments moments_reference(const std::vector<double>& x);  // two passes, in long double

// Assembles a generated text; `name` is what error messages and the viewer show.
isa::Program assemble_generated(const std::string& text, const std::string& name);

}  // namespace flashsim::sim::schedules

namespace flashsim::sim::schedules {

// The lesson 06 comparison of the unsafe (2 registers), three-pass (3) and online (4) softmax,
// every figure counted by running the generated traces for n (and n + 1, for the cost of one
// more element). Plain-text table.
std::string softmax_cost_table(std::int64_t n);

}  // namespace flashsim::sim::schedules

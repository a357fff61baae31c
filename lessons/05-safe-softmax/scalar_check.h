// Helpers for the custom checks of lessons 05-09: they re-assemble the learner's trace with
// other .param values (n, d) and run it on chosen inputs, so that a check covers every size
// and large-magnitude inputs, not only the spec's one size.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lessons/lesson.h"
#include "sim/machine.h"

namespace flashsim::lessons::scalar {

using Params = std::map<std::string, std::int64_t>;
using Inputs = std::map<std::string, std::vector<double>>;

// "n = 5" or "n = 5, d = 2": how a message names the size it ran.
std::string size_label(const Params& params);

// Re-assembles the program `ran` executed with `params` overridden and runs it on `inputs`
// (each must match an array of the trace element for element) with `regs` registers. On any
// failure it appends one sentence to `problems` and returns nullopt.
std::optional<sim::Machine> run_resized(const sim::Machine& ran, const Part& part, const Params& params,
                                        const Inputs& inputs, int regs, std::vector<std::string>& problems);

// Compares every element of `array` with `expected` (relative tolerance as the framework's).
// Returns false after appending a message naming the first wrong cells.
bool outputs_match(const sim::Machine& m, const std::string& array, const std::vector<double>& expected,
                   double tolerance, const std::string& context, std::vector<std::string>& problems);

// Uniform random values in [lo, hi), rounded to float32 when the lesson's machine is float32.
std::vector<double> random_values(std::mt19937_64& rng, std::size_t count, double lo, double hi, bool f64);

// DRAM element reads and writes of one array.
std::uint64_t reads_of(const sim::Machine& m, const std::string& array);
std::uint64_t writes_of(const sim::Machine& m, const std::string& array);

}  // namespace flashsim::lessons::scalar

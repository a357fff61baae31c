// Exhaustive optimal-schedule search for the safe softmax on the scalar toy machine:
// out[i] = e^(x[i] - m) / S with m = max_j x[j] and S = sum_j e^(x[j] - m), x and out in DRAM.
//
// The search works over symbolic values, never numbers. A register holds one value of a
// finite algebra (the operation rules are listed in optimize_softmax.cpp):
//   m(T)        max of x over a subset T (x_i itself is m({i}))
//   m(A)-m(B)   a difference with A inside B (so it is <= 0), and 0
//   e^(m(A)-m(B))  its exponential: for A = {i} the term e^(x_i - m(B)); for |A| >= 2 a
//               rescale factor, the online softmax's e^(m_old - m_new); and 1
//   s(S|B)      sum over i in S of e^(x_i - m(B)), S inside B (a partial sum relative to the
//               max over B, possibly rescaled from an older max)
//   out_i       e^(x_i - m(all)) / s(all|all)
// Two values are the same when they are the same function of x: the max over the same set in
// any order, the sum over the same set relative to the same max. Every EXP argument is <= 0
// for every input, so every program the search can return is safe for large x. A state is
// the multiset of register values (registers are interchangeable) plus what each out cell
// holds (nothing, the final output, or a spilled value when spills are allowed). A* with an
// admissible lower bound finds the cheapest program; states are merged under permutations
// of the indices (softmax is permutation-equivariant).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "isa/isa.h"
#include "isa/program.h"
#include "sim/optimize.h"

namespace flashsim::sim {

struct SoftmaxSearch {
  int n = 2;     // elements of x (1..4)
  int regs = 3;  // registers (1..8)
  std::array<std::uint32_t, isa::kOpcodeCount> cycles = isa::MachineConfig::default_cycles();
  // Cycles: minimum cycles, then minimum LOADs among those. Loads: minimum DRAM reads, then
  // minimum cycles among those (the lesson's question: how many passes over x?).
  enum class Objective { Cycles, Loads } objective = Objective::Cycles;
  // A value may be stored to an out cell not yet final and loaded back. Off by default: the
  // lessons keep no intermediate array, and spills multiply the states (n <= 3 stays quick).
  bool allow_spills = false;
  bool allow_rescale = true;   // MUL by e^(m_old - m_new): what online softmax needs
  bool use_symmetry = true;    // merge states that differ by a permutation of the indices
  std::uint64_t max_states = 30'000'000;  // memory guard: about 40 bytes a state
  SearchLimits limits;
};

struct SoftmaxSchedule {
  std::uint64_t cycles = 0, loads = 0;   // loads = every DRAM read, x and spills
  std::uint64_t x_loads = 0, spill_loads = 0, stores = 0, spill_stores = 0;
  std::array<std::uint64_t, isa::kOpcodeCount> per_op{};
  std::vector<int> x_reads;              // LOADs of each x[i]
  bool rescales = false;                 // uses MUL by e^(m_old - m_new): the online form
  // The bound the search starts from (compulsory LOADs, STOREs, DIVs, EXPs, SUBs, ADDs, MAXes).
  std::uint64_t start_bound_cycles = 0, start_bound_loads = 0;
  std::string trace;  // flashsim assembly; `flashsim run` executes it
  isa::Program program;
  SearchStats stats;
};

// Minimum of the chosen objective over every program in the value model. Throws SearchError
// when the instance is outside the limits or passes max_states, and NoProgramError when no
// program exists (the message says so and how many states the search exhausted).
SoftmaxSchedule optimize_softmax(const SoftmaxSearch& problem);

// No program exists on that many registers: the search exhausted every reachable state.
class NoProgramError : public SearchError {
 public:
  NoProgramError(const std::string& what, std::uint64_t states) : SearchError(what), states(states) {}
  std::uint64_t states;
};

struct SoftmaxVerification {
  int trials = 0;
  double max_rel_error = 0;  // against float64 softmax, float64 machine
  std::uint64_t reads = 0, writes = 0;  // DRAM elements counted by the machine (first trial)
};

// Runs `program` (arrays x[n] and out[n]) on the machine for several inputs, among them large
// magnitudes, ties and one all-equal vector, in float64 and float32, and compares out with a
// float64 softmax. Throws SearchError naming the first wrong input.
SoftmaxVerification verify_softmax_trace(const isa::Program& program, int n);

}  // namespace flashsim::sim

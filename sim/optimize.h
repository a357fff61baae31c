// Exhaustive optimal-schedule search for C = A x B on the scalar toy machine: the red-blue
// pebble game made concrete. A state is what the registers hold (registers are
// interchangeable, so a multiset) plus which partial sum each output cell of C holds in DRAM;
// an edge is one LOAD, MAC_Z, MAC or STORE. A* with a consistent lower bound (compulsory
// LOADs of operands not in a register, MACs and STOREs still owed) finds the cheapest
// program; states are merged under register renaming and the symmetries of the product
// (permuting rows of A, columns of B, the summation index, and transposition when m == n).
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "isa/isa.h"
#include "isa/program.h"

namespace flashsim::sim {

struct MatmulSearch {
  int m = 2, k = 2, n = 2;  // C (m x n) = A (m x k) x B (k x n)
  int regs = 3;
  // Cycle cost per opcode (the machine's defaults unless changed, e.g. LOAD=100).
  std::array<std::uint32_t, isa::kOpcodeCount> cycles = isa::MachineConfig::default_cycles();
  bool allow_spills = true;               // a partial sum may be stored to its C cell and reloaded
  bool use_symmetry = true;               // merge states that are images under the product's symmetries
  std::uint64_t max_states = 60'000'000;  // memory guard: about 24 bytes a state
};

struct SearchStats {
  std::uint64_t expanded = 0;   // states taken off the open list
  std::uint64_t stored = 0;     // distinct canonical states seen
  double seconds = 0;
  int symmetries = 1;           // size of the symmetry group used
};

struct OptimalSchedule {
  std::uint64_t cycles = 0, loads = 0, macs = 0, stores = 0;
  // The bound the search starts from (every operand loaded once, every MAC, every STORE):
  // the optimum can only be higher, and the search proves exactly how much.
  std::uint64_t start_bound_cycles = 0, start_bound_loads = 0;
  std::string trace;  // flashsim assembly; `flashsim run` executes it
  isa::Program program;
  SearchStats stats;
};

class SearchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Minimum cycles first, then minimum LOADs among those. Throws SearchError when the instance
// is too large to encode or runs past max_states, and when no program exists (regs < 3).
OptimalSchedule optimize_matmul(const MatmulSearch& problem);

}  // namespace flashsim::sim

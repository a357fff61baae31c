// Exhaustive optimal-schedule search for C = A x B on the scalar toy machine: the red-blue
// pebble game made concrete. A state is what the registers hold (registers are
// interchangeable, so a multiset) plus which partial sum each output cell of C holds in DRAM;
// an edge is one LOAD, MAC_Z, MAC or STORE. A* with a consistent lower bound (compulsory
// LOADs of operands not in a register, MACs and STOREs still owed) finds the cheapest
// program; states are merged under register renaming and the symmetries of the product
// (permuting rows of A, columns of B, the summation index, and transposition when m == n).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "isa/isa.h"
#include "isa/program.h"

namespace flashsim::sim {

// Where a running search stands.
struct SearchProgress {
  std::uint64_t expanded = 0;  // states taken off the open list
  std::uint64_t stored = 0;    // distinct canonical states seen
  double seconds = 0;
  // Proven so far: no program costs less (the least cost-plus-bound still open), in the
  // search's first objective (cycles, or LOADs for softmax --objective loads).
  std::uint64_t bound = 0;
  const char* bound_unit = "cycles";
};

// A long search reports its progress and may stop at a time limit.
struct SearchLimits {
  double time_limit_seconds = 0;  // 0: none
  double report_every_seconds = 1;
  std::function<void(const SearchProgress&)> report;  // at most once per report_every_seconds
};

struct MatmulSearch {
  int m = 2, k = 2, n = 2;  // C (m x n) = A (m x k) x B (k x n)
  int regs = 3;
  // Cycle cost per opcode (the machine's defaults unless changed, e.g. LOAD=100).
  std::array<std::uint32_t, isa::kOpcodeCount> cycles = isa::MachineConfig::default_cycles();
  bool allow_spills = true;               // a partial sum may be stored to its C cell and reloaded
  bool use_symmetry = true;               // merge states that are images under the product's symmetries
  std::uint64_t max_states = 60'000'000;  // memory guard: about 24 bytes a state
  SearchLimits limits;
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

// The time limit or the state limit (max_states) stopped the search before it proved an
// optimum; `at` holds where it stood, the proven bound included.
class SearchStopped : public SearchError {
 public:
  SearchStopped(const std::string& what, const SearchProgress& at, bool timed_out)
      : SearchError(what), at(at), timed_out(timed_out) {}
  SearchProgress at;
  bool timed_out;  // else the state limit
};

// Called by a search loop after each expansion: looks at the clock every 64 expansions (a 3x3x3
// expansion takes about a millisecond: the symmetry group has 432 elements),
// reports progress and throws SearchStopped past the time limit or max_states.
class SearchWatch {
 public:
  explicit SearchWatch(const SearchLimits& limits, const char* bound_unit = "cycles");
  void tick(std::uint64_t expanded, std::uint64_t stored, std::uint64_t bound, std::uint64_t max_states) {
    if (stored > max_states) out_of_states(expanded, stored, bound, max_states);
    if ((expanded & 63) == 0 && (limits_.report || limits_.time_limit_seconds > 0)) check(expanded, stored, bound);
  }

 private:
  void check(std::uint64_t expanded, std::uint64_t stored, std::uint64_t bound);
  [[noreturn]] void out_of_states(std::uint64_t expanded, std::uint64_t stored, std::uint64_t bound, std::uint64_t max_states);
  const SearchLimits& limits_;
  const char* unit_;
  std::chrono::steady_clock::time_point start_, last_report_;
};

// Minimum cycles first, then minimum LOADs among those. Throws SearchError when the instance
// is too large to encode or runs past max_states, and when no program exists (regs < 3).
OptimalSchedule optimize_matmul(const MatmulSearch& problem);

}  // namespace flashsim::sim

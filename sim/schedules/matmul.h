// Trace generators for C = A x B (m x k times k x n) on the scalar machine with R registers.
// A schedule fixes the order of the m*n*k multiply-adds and when each partial sum is stored;
// registers are then allocated with Belady's rule (evict the operand needed furthest in the
// future), which is optimal for a fixed order, so every LOAD saved comes from the order.
//   inner   one output at a time (a dot product each), outputs in snake order, k alternating;
//   outer   k outermost: a sum of k outer products; the partial sums that do not fit in
//           registers are spilled to C and reloaded (the outer product's output traffic);
//   blocked bi x bj blocks of outputs stay in registers while k runs; operands are reused
//           across the block (register blocking).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "isa/program.h"

namespace flashsim::sim::schedules {

enum class MatmulSchedule { Inner, Outer, Blocked };

std::optional<MatmulSchedule> parse_matmul_schedule(const std::string& name);
const char* matmul_schedule_name(MatmulSchedule s);

struct MatmulGenOptions {
  int m = 2, k = 2, n = 2;
  int regs = 3;
  MatmulSchedule schedule = MatmulSchedule::Inner;
  // outer: how many partial sums stay in registers (0: the best count);
  // blocked: block shape (0: the best shape).
  int resident = 0;
  int block_rows = 0, block_cols = 0;
};

struct GeneratedTrace {
  std::string text;      // flashsim assembly
  isa::Program program;  // the same, assembled
  std::uint64_t cycles = 0, loads = 0, macs = 0, stores = 0;
  int resident = 0, block_rows = 0, block_cols = 0;  // the parameters used
  std::string summary;   // one line: schedule, parameters, counts
};

// Throws std::invalid_argument when the schedule cannot run on `regs` registers.
GeneratedTrace generate_matmul(const MatmulGenOptions& opt);

// Every element of A and B read once: the fewest LOADs any program can make.
inline std::uint64_t compulsory_loads(int m, int k, int n) {
  return static_cast<std::uint64_t>(m) * static_cast<std::uint64_t>(k) + static_cast<std::uint64_t>(k) * static_cast<std::uint64_t>(n);
}

}  // namespace flashsim::sim::schedules

// Text and JSON views of a machine: the lesson-style step table, the cost summary, JSON.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "sim/machine.h"

namespace flashsim::sim {

struct TableOptions {
  bool symbolic = false;
  std::uint64_t max_rows = 200;  // the rest is summarised in one line
};

// Resets the machine, then steps it to the end while printing one row per step.
void print_step_table(Machine& m, std::ostream& os, const TableOptions& opt = {});
void print_cost_summary(const Machine& m, std::ostream& os);
void print_outputs(const Machine& m, std::ostream& os, std::size_t max_values = 16);
// One JSON object; the machine is expected to have run.
void print_json(const Machine& m, std::ostream& os);

std::string format_value(double v);
std::string register_cell(const Machine& m, int r, bool symbolic);

}  // namespace flashsim::sim

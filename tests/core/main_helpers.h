// Helpers shared by the core tests.
#pragma once

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "isa/assembler.h"
#include "sim/machine.h"

namespace flashsim::test {

inline std::string source_path(const std::string& rel) { return std::string(FLASHSIM_SOURCE_DIR) + "/" + rel; }

inline isa::Program load(const std::string& rel, const isa::AssembleOptions& o = {}) {
  return isa::assemble_file(source_path(rel), o);
}

inline sim::Machine run_program(isa::Program p, sim::MachineOptions o = {}) {
  sim::Machine m(std::move(p), std::move(o));
  m.run();
  return m;
}

inline const std::vector<double>& values(const sim::Machine& m, const std::string& name) {
  auto id = m.program().find_array(name);
  if (!id) throw std::runtime_error("no array " + name);
  return m.array(*id).values;
}

}  // namespace flashsim::test

// Helpers shared by the core tests.
#pragma once

#include <array>
#include <cmath>
#include <cstdio>
#include <sys/wait.h>
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

// Runs the flashsim executable with `args`, stdout and stderr together.
struct CommandResult {
  int status;
  std::string out;
};
inline CommandResult run_flashsim(const std::string& args) {
  std::string cmd = std::string(FLASHSIM_EXE) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  while (auto n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace flashsim::test

#include "lessons/05-safe-softmax/scalar_check.h"

#include <cmath>
#include <sstream>

#include "isa/assembler.h"

namespace flashsim::lessons::scalar {

namespace {
std::string number(double v) {
  if (std::isnan(v)) return "nan";
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}
}  // namespace

std::string size_label(const Params& params) {
  std::string s;
  for (const auto& [k, v] : params) s += (s.empty() ? "" : ", ") + k + " = " + std::to_string(v);
  return s;
}

std::optional<sim::Machine> run_resized(const sim::Machine& ran, const Part& part, const Params& params,
                                        const Inputs& inputs, int regs, std::vector<std::string>& problems) {
  const isa::Program& original = ran.program();
  std::string text;
  for (const auto& line : original.source_lines) text += line + "\n";
  const std::string with = "with " + size_label(params);
  isa::AssembleOptions ao;
  ao.params = params;
  std::optional<isa::Program> prog;
  try {
    prog = isa::assemble(text, original.name, ao);
  } catch (const isa::AsmError& e) {
    problems.push_back(with + " your trace does not assemble: " + e.what());
    return std::nullopt;
  }
  if (prog->highest_reg >= regs) {
    problems.push_back(with + " your trace uses R" + std::to_string(prog->highest_reg) + ", but the machine has " +
                       std::to_string(regs) + " registers");
    return std::nullopt;
  }
  for (const auto& [name, values] : inputs) {
    auto id = prog->find_array(name);
    if (!id) continue;  // an input the trace never reads: the values check will say what is missing
    auto have = prog->arrays[*id].elements();
    if (have != static_cast<std::int64_t>(values.size())) {
      problems.push_back(with + " your trace's '" + name + "' has " + std::to_string(have) + " elements instead of " +
                         std::to_string(values.size()) + ": size it with .param (" + name +
                         "[n]) and loop with .for so the trace works for every size");
      return std::nullopt;
    }
  }
  sim::MachineOptions mo;
  mo.regs = regs;
  mo.f64 = part.f64;
  mo.history = false;
  for (const auto& [name, values] : inputs)
    if (prog->find_array(name)) mo.inputs[name] = values;
  // The lesson's constant arrays (0, 1, -inf) keep their values at every size.
  for (const auto& [name, value] : part.constants)
    if (auto id = prog->find_array(name); id && !inputs.count(name))
      mo.inputs[name].assign(static_cast<std::size_t>(prog->arrays[*id].elements()), value);
  try {
    std::optional<sim::Machine> m;
    m.emplace(std::move(*prog), mo);
    m->run();
    return m;
  } catch (const sim::MachineFault& e) {
    problems.push_back(with + " the machine faults: " + e.what());
  } catch (const isa::AsmError& e) {
    problems.push_back(with + " " + e.what());
  }
  return std::nullopt;
}

bool outputs_match(const sim::Machine& m, const std::string& array, const std::vector<double>& expected,
                   double tolerance, const std::string& context, std::vector<std::string>& problems) {
  auto id = m.program().find_array(array);
  if (!id) {
    problems.push_back(context + ", your trace never stores to " + array);
    return false;
  }
  const auto& decl = m.program().arrays[*id];
  const auto& state = m.array(*id);
  if (state.values.size() != expected.size()) {
    problems.push_back(context + ", '" + array + "' has " + std::to_string(state.values.size()) + " elements instead of " +
                       std::to_string(expected.size()));
    return false;
  }
  int wrong = 0;
  std::string first;
  for (std::size_t k = 0; k < expected.size(); ++k) {
    std::string cell = decl.rank == 1 ? array + "[" + std::to_string(k) + "]"
                                      : array + "[" + std::to_string(static_cast<std::int64_t>(k) / decl.cols) + "][" +
                                            std::to_string(static_cast<std::int64_t>(k) % decl.cols) + "]";
    if (state.tile_writes[k] == 0) {
      if (wrong++ == 0) first = cell + " is never stored";
      continue;
    }
    double got = state.values[k];
    double tol = tolerance * std::max(1.0, std::fabs(expected[k]));
    if (std::isfinite(got) && std::fabs(got - expected[k]) <= tol) continue;
    if (wrong++ == 0) first = cell + ": expected " + number(expected[k]) + ", got " + number(got);
  }
  if (wrong == 0) return true;
  problems.push_back(context + ", " + first + (wrong > 1 ? " (and " + std::to_string(wrong - 1) + " more wrong cells)" : ""));
  return false;
}

std::vector<double> random_values(std::mt19937_64& rng, std::size_t count, double lo, double hi, bool f64) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(count);
  for (auto& x : v) {
    x = dist(rng);
    if (!f64) x = static_cast<double>(static_cast<float>(x));
  }
  return v;
}

std::uint64_t reads_of(const sim::Machine& m, const std::string& array) {
  auto id = m.program().find_array(array);
  return id ? m.array(*id).elem_reads : 0;
}

std::uint64_t writes_of(const sim::Machine& m, const std::string& array) {
  auto id = m.program().find_array(array);
  return id ? m.array(*id).elem_writes : 0;
}

}  // namespace flashsim::lessons::scalar

#include "sim/cli.h"

#include <CLI/CLI.hpp>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "isa/assembler.h"
#include "sim/l2.h"
#include "sim/l2_trace.h"
#include "sim/machine.h"
#include "sim/report.h"
#include "sim/timing.h"
#include "sim/trace_export.h"

namespace flashsim::cli {

void print_out(const char* format, ...) {
  std::va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(static_cast<std::size_t>(n > 0 ? n : 0) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, again);
  va_end(again);
  text.pop_back();
  std::cout << text;
}

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const isa::AsmError& e) {
    std::cerr << e.what() << "\n";
    return kExitBadInput;
  } catch (const sim::MachineFault& e) {
    std::cerr << e.what() << "\n";
    return e.step == 0 ? kExitBadInput : kExitFault;
  } catch (const std::invalid_argument& e) {
    std::cerr << "flashsim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "flashsim: error: out of memory\n";
    return kExitFault;
  }
}

namespace {

struct RunArgs {
  std::string file;
  bool symbolic = false, json = false, no_table = false, f64 = false;
  int regs = 0;
  std::vector<std::string> inputs, costs, params;
  std::uint64_t seed = 0;
  bool seed_given = false;
  std::uint64_t max_rows = 200;
  std::string trace_csv, perfetto;
  std::string l2;                        // size text; "" keeps the trace's .l2
  std::uint32_t l2_line = 0, l2_sector = 0;  // 0 keeps the trace's (or Hopper's) geometry
};

std::vector<double> parse_values(const std::string& name, const std::string& list) {
  std::vector<double> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    std::size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    std::string tok = list.substr(pos, end - pos);
    try {
      std::size_t used = 0;
      double v = std::stod(tok, &used);
      if (used != tok.size()) throw std::invalid_argument(tok);
      out.push_back(v);
    } catch (const std::exception&) {
      throw std::invalid_argument("--input " + name + ": '" + tok + "' is not a number");
    }
    pos = end + 1;
  }
  return out;
}

std::pair<std::string, std::string> split_eq(const std::string& s, const char* flag) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument(std::string(flag) + " expects NAME=VALUE, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

int do_run(const RunArgs& a) {
  isa::AssembleOptions ao;
  for (const auto& p : a.params) {
    auto [k, v] = split_eq(p, "--param");
    try {
      ao.params[k] = std::stoll(v);
    } catch (const std::exception&) {
      throw std::invalid_argument("--param " + k + ": '" + v + "' is not an integer");
    }
  }
  ao.require_declared_params = true;
  isa::Program prog = isa::assemble_file(a.file, ao);
  // The time model, for a program with .units. A deadlock is an error of the text, reported at
  // its .wait; a machine fault is left to the run below, which reports it at its step.
  std::optional<sim::TimingResult> timing;
  if (prog.timing.units) {
    sim::TimingOptions to;
    to.keep_steps = !a.perfetto.empty();
    try {
      timing = sim::time_program(prog, to);
    } catch (const sim::TimingError& e) {
      throw isa::AsmError(a.file, e.where.line, e.where.col, e.message);
    } catch (const sim::MachineFault&) {
    }
  }
  sim::MachineOptions mo;
  if (a.regs > 0) mo.regs = a.regs;
  if (a.f64) mo.f64 = true;
  if (a.seed_given) mo.seed = a.seed;
  mo.symbolic = a.symbolic;
  mo.history = false;
  for (const auto& in : a.inputs) {
    auto [k, v] = split_eq(in, "--input");
    mo.inputs[k] = parse_values(k, v);
  }
  for (const auto& c : a.costs) {
    auto [k, v] = split_eq(c, "--cost");
    auto op = isa::find_mnemonic(k);
    if (!op) throw std::invalid_argument("--cost: unknown opcode '" + k + "'");
    try {
      long long n = std::stoll(v);
      if (n < 0) throw std::out_of_range(v);
      mo.costs[*op] = static_cast<std::uint32_t>(n);
    } catch (const std::exception&) {
      throw std::invalid_argument("--cost " + k + ": '" + v + "' is not a cycle count");
    }
  }
  if (!a.l2.empty() || a.l2_line || a.l2_sector) {
    if (a.l2.empty() && !prog.config.l2) throw std::invalid_argument("--l2-line and --l2-sector need an L2: give --l2 SIZE");
    isa::L2Geometry g = prog.config.l2.value_or(isa::L2Geometry{});
    if (!a.l2.empty()) g.capacity_bytes = sim::parse_size(a.l2);
    if (a.l2_line) g.line_bytes = a.l2_line;
    if (a.l2_sector) g.sector_bytes = a.l2_sector;
    else if (g.sector_bytes > g.line_bytes) g.sector_bytes = g.line_bytes;
    if (g.capacity_bytes)
      if (std::string why = isa::l2_geometry_error(g); !why.empty()) throw std::invalid_argument("--l2: " + why);
    mo.l2 = g;
  }
  sim::Machine m(std::move(prog), mo);
  std::unique_ptr<sim::TraceL2> l2;
  if (m.config().l2) l2 = std::make_unique<sim::TraceL2>(m, *m.config().l2);
  if (!a.trace_csv.empty() || !a.perfetto.empty()) {
    std::ofstream csv, json;
    sim::TraceExport out;
    auto open = [](std::ofstream& f, const std::string& path, const char* flag) {
      f.open(path, std::ios::binary);
      if (!f) throw std::invalid_argument(std::string(flag) + ": cannot write '" + path + "'");
      return &f;
    };
    if (!a.trace_csv.empty()) out.csv = open(csv, a.trace_csv, "--trace-csv");
    if (!a.perfetto.empty()) out.perfetto = open(json, a.perfetto, "--perfetto");
    if (timing) out.timing = &*timing;
    sim::export_trace(m, out);  // a fault ends the files where the run stopped, then reports
  }
  if (a.json) {
    m.run();
    if (l2) l2->sync(m);
    sim::print_json(m, std::cout, l2.get(), timing ? &*timing : nullptr);
    return kExitOk;
  }
  if (!a.no_table) {
    sim::TableOptions t;
    t.symbolic = a.symbolic;
    t.max_rows = a.max_rows;
    t.l2 = l2.get();
    sim::print_step_table(m, std::cout, t);
    std::cout << "\n";
  } else {
    m.run();
  }
  if (l2) l2->sync(m);
  sim::print_cost_summary(m, std::cout, l2.get());
  if (timing) sim::print_timing_summary(*timing, m.program().timing.units->preset, std::cout);
  sim::print_outputs(m, std::cout);
  return kExitOk;
}

}  // namespace

void register_run_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Run a trace and print its step table and costs");
  run->add_option("file", args->file, "Trace file (flashsim assembly)")->required();
  run->add_flag("--symbolic", args->symbolic, "Show register values as expressions, as the lessons do");
  run->add_flag("--json", args->json, "Print one JSON object instead of the table");
  run->add_flag("--no-table", args->no_table, "Print only the cost summary and outputs");
  run->add_option("--regs", args->regs, "Register count (overrides .regs)")->check(CLI::Range(1, 65535));
  run->add_option("--input", args->inputs, "Input values, NAME=v1,v2,... (row-major)");
  run->add_option("--seed", args->seed, "Seed for random inputs")->each([args](const std::string&) { args->seed_given = true; });
  run->add_option("--cost", args->costs, "Cycle cost of an opcode, OP=C (e.g. LOAD=100)");
  run->add_option("--param", args->params, "Override a .param, NAME=VALUE");
  run->add_flag("--f64", args->f64, "Registers hold float64 instead of float32");
  run->add_option("--max-rows", args->max_rows, "Rows of the step table to print");
  run->add_option("--trace-csv", args->trace_csv,
                  "Write one CSV row per step: step, line, instruction, cycle, DRAM bytes read and written so far, "
                  "registers written");
  run->add_option("--perfetto", args->perfetto,
                  "Write a Chrome trace-event JSON for ui.perfetto.dev: a track per unit, instructions as slices, "
                  "DRAM bytes as a counter (1 cycle = 1 us); with .units, the time model's lanes: a track per "
                  "functional unit and per stream, critical-path slices marked");
  run->add_option("--l2", args->l2,
                  "Send the traffic through an L2 of this size (e.g. 512, 4KiB, 50MiB; 0: none), overriding .l2; adds an "
                  "L2 column and the bytes that reach DRAM");
  run->add_option("--l2-line", args->l2_line, "L2 line size in bytes (default: the trace's .l2, else 128)");
  run->add_option("--l2-sector", args->l2_sector, "L2 sector size in bytes (default: the trace's .l2, else 32)");
  run->callback([args, &exit_code] { exit_code = guarded([&] { return do_run(*args); }); });
}

}  // namespace flashsim::cli

// flashsim._core: the simulator as a Python extension (pybind11). flashsim/__init__.py re-exports
// it and adds the helpers written in Python (traffic, gen, run).
//
// What is bound: the assembler (errors as flashsim.AssemblerError with file, line, col), the
// machine (step, step back, run, run to a breakpoint; registers as values and expressions,
// counters, DRAM arrays as numpy arrays, the per-step trace as numpy arrays), the lesson checker,
// and the `flashsim` command line itself, run in-process with its output captured: the same
// functions print `traffic --json` and `gen`, so the numbers cannot drift from the CLI's.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "isa/assembler.h"
#include "isa/program.h"
#include "lessons/09-attention-loop-orders/scalar_gen_cli.h"
#include "lessons/commands.h"
#include "lessons/lesson.h"
#include "lessons/lesson_cli.h"
#include "lessons/tour.h"
#include "sim/cli.h"
#include "sim/cli_ring.h"
#include "sim/cli_tile.h"
#include "sim/cli_time.h"
#include "sim/cli_values.h"
#include "sim/l2.h"
#include "sim/l2_trace.h"
#include "sim/machine.h"
#include "sim/report.h"
#include "sim/timing.h"
#include "sim/trace_export.h"

#ifndef FLASHSIM_VERSION
#define FLASHSIM_VERSION "dev"
#endif

namespace py = pybind11;
using namespace flashsim;

namespace {

// Exception types, created once at import and kept for the life of the interpreter.
PyObject* g_asm_error = nullptr;
PyObject* g_machine_fault = nullptr;

// ---------------------------------------------------------------------------------------------
// The command line, in-process

// Redirects std::cout and std::cerr into strings for the life of the object.
class Capture {
 public:
  Capture() : out_old_(std::cout.rdbuf(out_.rdbuf())), err_old_(std::cerr.rdbuf(err_.rdbuf())) {}
  ~Capture() {
    std::cout.rdbuf(out_old_);
    std::cerr.rdbuf(err_old_);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::string out() const { return out_.str(); }
  std::string err() const { return err_.str(); }

 private:
  std::ostringstream out_, err_;
  std::streambuf* out_old_;
  std::streambuf* err_old_;
};

// lessons/main.cpp's run_main: the same subcommands, from the same registration.
int run_flashsim(const std::vector<std::string>& args) {
  CLI::App app{"flashsim: a cycle-counting toy machine for IO-aware GPU algorithms"};
  app.set_version_flag("--version", FLASHSIM_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  lessons::register_flashsim_commands(app, exit_code);
  std::vector<std::string> storage;
  storage.reserve(args.size() + 1);
  storage.emplace_back("flashsim");
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : cli::kExitBadInput;
  }
  return exit_code;
}

py::tuple cli_call(const std::vector<std::string>& args) {
  int rc = 0;
  std::string out, err;
  {
    Capture cap;
    try {
      rc = run_flashsim(args);
    } catch (const std::exception& e) {  // as guard_main does
      std::cerr << "flashsim: error: " << e.what() << "\n";
      rc = 2;
    }
    out = cap.out();
    err = cap.err();
  }
  return py::make_tuple(rc, py::bytes(out).attr("decode")("utf-8", "replace"),
                        py::bytes(err).attr("decode")("utf-8", "replace"));
}

// ---------------------------------------------------------------------------------------------
// Programs and machines

struct PyProgram {
  std::shared_ptr<const isa::Program> p;
};

std::map<std::string, std::int64_t> to_params(const std::optional<std::map<std::string, std::int64_t>>& params) {
  return params.value_or(std::map<std::string, std::int64_t>{});
}

PyProgram py_assemble(const std::string& text, const std::string& name,
                      const std::optional<std::map<std::string, std::int64_t>>& params) {
  isa::AssembleOptions o;
  o.params = to_params(params);
  o.require_declared_params = true;
  return {std::make_shared<isa::Program>(isa::assemble(text, name, o))};
}

PyProgram py_assemble_file(const std::string& path, const std::optional<std::map<std::string, std::int64_t>>& params) {
  isa::AssembleOptions o;
  o.params = to_params(params);
  o.require_declared_params = true;
  return {std::make_shared<isa::Program>(isa::assemble_file(path, o))};
}

py::dict array_decl_dict(const isa::ArrayDecl& a) {
  py::dict d;
  d["name"] = a.name;
  d["rank"] = a.rank;
  d["shape"] = a.rank == 1 ? py::tuple(py::make_tuple(a.rows)) : py::tuple(py::make_tuple(a.rows, a.cols));
  d["tile"] = py::make_tuple(a.tile_rows, a.tile_cols);
  d["elem_bytes"] = a.elem_bytes;
  return d;
}

std::optional<isa::L2Geometry> l2_of(const py::object& l2) {
  if (l2.is_none()) return std::nullopt;
  isa::L2Geometry g;
  // py::int_ first: a cast of -4 or 1.5 raised RuntimeError "Unable to cast Python instance"
  if (py::isinstance<py::str>(l2)) g.capacity_bytes = sim::parse_size(l2.cast<std::string>());
  else if (!py::isinstance<py::int_>(l2) || py::isinstance<py::bool_>(l2))
    throw py::type_error("l2: give a size as text ('4KiB') or a number of bytes, not " +
                         std::string(py::str(l2.get_type().attr("__name__"))));
  else if (l2.cast<py::int_>() < py::int_(0))
    throw std::invalid_argument("l2: a size is not negative, not " + std::string(py::str(l2)));
  else g.capacity_bytes = l2.cast<std::uint64_t>();
  if (g.capacity_bytes)
    if (std::string why = isa::l2_geometry_error(g); !why.empty()) throw std::invalid_argument("l2: " + why);
  return g;
}

// inputs={'x': ...}: each value as numbers in row-major order, a flat list or an array of any shape
// (a 2-D numpy array failed pybind's std::vector cast with the whole signature in the message).
std::map<std::string, std::vector<double>> inputs_of(const py::dict& inputs) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [key, value] : inputs) {
    if (!py::isinstance<py::str>(key)) throw py::type_error("inputs: the keys are array names (str)");
    const std::string name = key.cast<std::string>();
    auto refuse = [&] {
      return py::type_error("inputs['" + name + "']: expected numbers (a list or an array), not " +
                            py::type::of(value).attr("__name__").cast<std::string>());
    };
    // numpy would read a str as a number and None as NaN: neither is an array's values
    if (value.is_none() || py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value) ||
        py::isinstance<py::dict>(value))
      throw refuse();
    const auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(value);
    if (!a) throw refuse();
    out[name].assign(a.data(), a.data() + a.size());
  }
  return out;
}

class PyMachine {
 public:
  PyMachine(const PyProgram& prog, std::optional<int> regs, std::optional<bool> f64, bool symbolic, bool history,
            bool compute_values, const py::dict& inputs, std::optional<std::uint64_t> seed,
            const std::map<std::string, std::uint32_t>& costs,
            std::optional<std::uint64_t> sram_bytes, const py::object& l2) {
    sim::MachineOptions o;
    // the range of --regs and .regs (the machine took -1 or 0 as 1 register, 10**9 as a bad_alloc)
    if (regs && (*regs < 1 || *regs > 65535))
      throw std::invalid_argument("regs must be between 1 and 65535, not " + std::to_string(*regs));
    o.regs = regs;
    o.f64 = f64;
    o.symbolic = symbolic;
    o.history = history;
    o.compute_values = compute_values;
    o.inputs = inputs_of(inputs);
    o.seed = seed;
    for (const auto& [name, c] : costs) {
      auto op = isa::find_mnemonic(name);
      if (!op) throw std::invalid_argument("costs: unknown opcode '" + name + "'");
      o.costs[*op] = c;
    }
    o.sram_bytes = sram_bytes;
    o.l2 = l2_of(l2);
    m_ = std::make_unique<sim::Machine>(*prog.p, std::move(o));
    prog_ = prog;
  }

  sim::Machine& m() { return *m_; }
  const PyProgram& program() const { return prog_; }

  py::object register_value(int r) const {
    check_reg(r);
    if (!m_->reg_written(r)) return py::none();
    const sim::Tile& t = m_->reg(r);
    // count-only runs keep no values: NaN, as array() gives (v.at(0) raised IndexError)
    const bool kept = t.v.size() == static_cast<std::size_t>(t.rows) * static_cast<std::size_t>(t.cols);
    if (m_->program().is_scalar() && t.rows == 1 && t.cols == 1) return py::float_(kept ? t.v[0] : std::nan(""));
    py::array_t<double> a({static_cast<py::ssize_t>(t.rows), static_cast<py::ssize_t>(t.cols)});
    if (kept) std::copy(t.v.begin(), t.v.end(), a.mutable_data());
    else std::fill(a.mutable_data(), a.mutable_data() + a.size(), std::nan(""));
    return a;
  }
  py::list registers() const {
    py::list l;
    for (int r = 0; r < m_->register_count(); ++r) l.append(register_value(r));
    return l;
  }
  std::string register_symbol(int r) const {
    check_reg(r);
    return m_->reg_written(r) ? m_->reg_symbol(r) : std::string();
  }
  std::vector<std::string> symbols() const {
    std::vector<std::string> s;
    for (int r = 0; r < m_->register_count(); ++r) s.push_back(register_symbol(r));
    return s;
  }
  std::string register_cell(int r, bool symbolic) const {
    check_reg(r);
    return sim::register_cell(*m_, r, symbolic);
  }

  std::uint32_t array_id(const std::string& name) const {
    auto id = m_->program().find_array(name);
    if (!id) {
      std::string names;
      for (const auto& a : m_->program().arrays) names += (names.empty() ? "" : ", ") + a.name;
      throw py::key_error("no array '" + name + "' (arrays: " + names + ")");
    }
    return *id;
  }
  py::array_t<double> array(const std::string& name) const {
    const std::uint32_t id = array_id(name);
    const isa::ArrayDecl& d = m_->program().arrays[id];
    const auto& v = m_->array(id).values;
    std::vector<py::ssize_t> shape;
    if (d.rank == 1) shape = {static_cast<py::ssize_t>(d.rows)};
    else shape = {static_cast<py::ssize_t>(d.rows), static_cast<py::ssize_t>(d.cols)};
    py::array_t<double> a(shape);
    if (static_cast<std::size_t>(a.size()) == v.size()) std::copy(v.begin(), v.end(), a.mutable_data());
    else std::fill(a.mutable_data(), a.mutable_data() + a.size(), std::nan(""));  // count-only runs keep no values
    return a;
  }
  py::dict arrays() const {
    py::dict d;
    for (const auto& a : m_->program().arrays) d[py::str(a.name)] = array(a.name);
    return d;
  }
  py::dict dram() const {
    py::dict d;
    for (std::uint32_t id = 0; id < m_->program().arrays.size(); ++id) {
      const auto& s = m_->array(id);
      py::dict e;
      e["elem_reads"] = s.elem_reads;
      e["elem_writes"] = s.elem_writes;
      e["bytes_read"] = s.bytes_read;
      e["bytes_written"] = s.bytes_written;
      e["input"] = m_->is_input(id);
      e["output"] = m_->is_output(id);
      d[py::str(m_->program().arrays[id].name)] = e;
    }
    return d;
  }

  py::object l2() const {
    if (!m_->config().l2 || m_->config().l2->capacity_bytes == 0) return py::none();
    sim::TraceL2 l2(*m_, *m_->config().l2);
    l2.sync(*m_);
    auto counts = [](const sim::L2Counts& c) {
      py::dict d;
      d["l2_hits"] = c.hits;
      d["l2_misses"] = c.misses;
      d["hbm_bytes_read"] = c.hbm_read;
      d["hbm_bytes_written"] = c.hbm_written;
      return d;
    };
    py::dict arrays;
    for (std::uint32_t id = 0; id < m_->program().arrays.size(); ++id)
      arrays[py::str(m_->program().arrays[id].name)] = counts(l2.array(id));
    py::dict d;
    d["capacity_bytes"] = l2.config().capacity_bytes;
    d["line_bytes"] = l2.config().line_bytes;
    d["sector_bytes"] = l2.config().sector_bytes;
    d["flushed"] = l2.flushed();
    d["total"] = counts(l2.total());
    d["arrays"] = arrays;
    return d;
  }

  // Resets and steps to the end, one row per step (as --trace-csv); then back where it stood.
  py::dict trace() {
    const std::uint64_t start = m_->pc();
    m_->reset();
    const std::size_t n = m_->size();
    std::vector<std::uint64_t> step, pc, cycle, br, bw, er, ew;
    std::vector<std::uint32_t> line, col;
    std::vector<std::uint8_t> opcode;
    for (auto* v : {&step, &pc, &cycle, &br, &bw, &er, &ew}) v->reserve(n);
    line.reserve(n);
    col.reserve(n);
    opcode.reserve(n);
    while (!m_->done()) {
      const std::uint64_t at = m_->pc();
      const isa::Instruction& in = m_->program().code[at];
      m_->step();
      const sim::Counters& c = m_->counters();
      step.push_back(at + 1);
      pc.push_back(at);
      const isa::SourceLoc loc = m_->program().loc(at);
      line.push_back(loc.line);
      col.push_back(loc.col);
      opcode.push_back(static_cast<std::uint8_t>(in.op));
      cycle.push_back(c.cycles);
      br.push_back(c.bytes_read);
      bw.push_back(c.bytes_written);
      er.push_back(c.elem_reads);
      ew.push_back(c.elem_writes);
    }
    py::dict d;
    auto np = [](auto& v) {
      using T = typename std::decay_t<decltype(v)>::value_type;
      py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
      std::copy(v.begin(), v.end(), a.mutable_data());
      return a;
    };
    d["step"] = np(step);
    d["pc"] = np(pc);
    d["line"] = np(line);
    d["col"] = np(col);
    py::object ops = np(opcode);
    d["opcode"] = ops;
    py::list mnem;
    for (std::size_t k = 0; k < isa::kOpcodeCount; ++k) mnem.append(std::string(isa::kInstructionTable[k].mnemonic));
    d["mnemonic"] = py::module_::import("numpy").attr("array")(mnem)[ops];
    d["cycle"] = np(cycle);
    d["bytes_read"] = np(br);
    d["bytes_written"] = np(bw);
    d["dram_reads"] = np(er);
    d["dram_writes"] = np(ew);
    m_->run_to(start);  // back where the caller stood (replayed from the start without history)
    return d;
  }

  std::string trace_csv() {
    std::ostringstream os;
    sim::TraceExport e;
    e.csv = &os;
    sim::export_trace(*m_, e);
    return os.str();
  }
  std::string perfetto() {
    std::ostringstream os;
    sim::TraceExport e;
    e.perfetto = &os;
    e.timing = timing(true);
    sim::export_trace(*m_, e);
    return os.str();
  }
  std::string step_table(bool symbolic, std::uint64_t max_rows) {
    std::ostringstream os;
    sim::TableOptions t;
    t.symbolic = symbolic;
    t.max_rows = max_rows;
    sim::print_step_table(*m_, os, t);
    return os.str();
  }
  std::string summary() const {
    std::ostringstream os;
    std::unique_ptr<sim::TraceL2> l2;
    if (m_->config().l2 && m_->config().l2->capacity_bytes) {
      l2 = std::make_unique<sim::TraceL2>(*m_, *m_->config().l2);
      l2->sync(*m_);
    }
    sim::print_cost_summary(*m_, os, l2.get());
    if (const sim::TimingResult* t = timing(false)) sim::print_timing_summary(*t, prog_.p->timing.units->preset, os);
    sim::print_outputs(*m_, os);
    return os.str();
  }
  std::string json() const {
    std::ostringstream os;
    std::unique_ptr<sim::TraceL2> l2;
    if (m_->config().l2 && m_->config().l2->capacity_bytes) {
      l2 = std::make_unique<sim::TraceL2>(*m_, *m_->config().l2);
      l2->sync(*m_);
    }
    sim::print_json(*m_, os, l2.get(), timing(false));
    return os.str();
  }

  std::uint32_t line() const {
    if (m_->done()) return 0;
    return m_->program().loc(m_->pc()).line;
  }
  std::string next_instruction() const {
    if (m_->done()) return {};
    return isa::format_instruction(m_->program(), m_->program().code[m_->pc()]);
  }

 private:
  void check_reg(int r) const {
    if (r < 0 || r >= m_->register_count())
      throw py::index_error("register R" + std::to_string(r) + " is outside the machine's " +
                            std::to_string(m_->register_count()) + " registers");
  }
  // A .units trace's time model, as flashsim run adds it to its outputs (null without .units): a
  // deadlock is the text's error; a fault is left to the run, which reports it at its step.
  const sim::TimingResult* timing(bool with_steps) const {
    if (!prog_.p->timing.units) return nullptr;
    std::optional<sim::TimingResult>& cached = with_steps ? timing_steps_ : timing_;
    if (!cached) {
      sim::TimingOptions o;
      o.keep_steps = with_steps;
      try {
        cached = sim::time_program(*prog_.p, o);
      } catch (const sim::TimingError& e) {
        throw isa::AsmError(prog_.p->name, e.where.line, e.where.col, e.message);
      } catch (const sim::MachineFault&) {
        return nullptr;
      }
    }
    return &*cached;
  }

  std::unique_ptr<sim::Machine> m_;
  PyProgram prog_;
  mutable std::optional<sim::TimingResult> timing_, timing_steps_;  // the program's, computed once
};

py::dict counters_dict(const sim::Counters& c) {
  py::dict d;
  d["cycles"] = c.cycles;
  d["instructions"] = c.instructions;
  d["loads"] = c.of_class(isa::OpClass::Load);
  d["stores"] = c.of_class(isa::OpClass::Store);
  d["macs"] = c.of_class(isa::OpClass::Mac);
  d["other_ops"] = c.of_class(isa::OpClass::Alu);
  d["dram_reads"] = c.elem_reads;
  d["dram_writes"] = c.elem_writes;
  d["bytes_read"] = c.bytes_read;
  d["bytes_written"] = c.bytes_written;
  py::dict per_op;
  for (std::size_t k = 0; k < isa::kOpcodeCount; ++k)
    if (c.per_op[k]) per_op[py::str(std::string(isa::kInstructionTable[k].mnemonic))] = c.per_op[k];
  d["per_op"] = per_op;
  return d;
}

// ---------------------------------------------------------------------------------------------
// The lesson checker, as `flashsim lesson check NAME [FILE]` runs it

struct PyVerdict {
  bool passed = false;
  bool refused = false;
  int exit_code = 0;
  std::vector<std::string> problems;
  lessons::Counts counts;
  std::string trace, lesson, part, report;
};

PyVerdict lesson_check(const std::string& name, const std::optional<std::string>& file,
                       const std::optional<std::string>& text, const std::string& text_name) {
  if (file && text) throw std::invalid_argument("lesson_check: give file or text, not both");
  const std::string file_name = file ? *file : text ? text_name : std::string();
  const lessons::LessonChoice choice = lessons::choose_lesson(name, file_name);
  const lessons::Lesson& lesson = choice.lesson;
  const lessons::Part* part = &choice.selected();
  lessons::Verdict v;
  // a file that cannot be read raises AssemblerError, as flashsim lesson check exits 2 (it was a FAIL)
  if (file) v = lessons::check_text(lesson, *part, isa::read_trace_file(*file), *file);
  else if (text) v = lessons::check_text(lesson, *part, *text, text_name);
  else v = lessons::check_file(lesson, *part, (std::filesystem::path(lesson.dir) / part->solution).string());
  PyVerdict r;
  r.passed = v.passed;
  r.refused = v.refused;
  r.exit_code = v.refused ? cli::kExitBadInput : v.passed ? cli::kExitOk : cli::kExitFault;
  r.problems = v.problems;
  r.counts = v.counts;
  r.trace = v.trace;
  r.lesson = lesson.folder_name();
  r.part = part->name;
  if (!v.refused) r.report = v.report(lesson, *part);
  return r;
}

py::list lesson_list() {
  py::list out;
  for (const auto& l : lessons::discover_lessons()) {
    py::list parts;
    for (const auto& p : l.parts) {
      py::dict budgets;
      for (const auto& b : p.budgets) budgets[py::str(b.counter)] = b.limit;
      py::dict pd;
      pd["name"] = p.name;
      pd["title"] = p.title;
      pd["exercise"] = p.exercise;
      pd["solution"] = p.solution;
      pd["regs"] = p.regs;
      pd["budgets"] = budgets;
      parts.append(pd);
    }
    py::dict d;
    d["id"] = l.id;
    d["slug"] = l.slug;
    d["name"] = l.folder_name();
    d["title"] = l.title;
    d["dir"] = l.dir;
    d["parts"] = parts;
    out.append(d);
  }
  return out;
}

}  // namespace

namespace {

// flashsim.AssemblerError and flashsim.MachineFault, and the translation of the C++ exceptions into them.
void bind_errors(py::module_& mod) {
  g_asm_error = PyErr_NewExceptionWithDoc(
      "flashsim.AssemblerError",
      "A trace that does not assemble. Attributes: file, line, col (1-based; 0 where unknown) and "
      "message (without the location); str() is 'FILE:LINE:COL: error: MESSAGE' as the CLI prints it.",
      PyExc_ValueError, nullptr);
  g_machine_fault = PyErr_NewExceptionWithDoc(
      "flashsim.MachineFault",
      "A fault while running. Attributes: step (1-based; 0 when the inputs did not fit before any "
      "step), line (source line) and message; str() is 'step N (line L): error: MESSAGE'.",
      PyExc_RuntimeError, nullptr);
  mod.attr("AssemblerError") = py::handle(g_asm_error);
  mod.attr("MachineFault") = py::handle(g_machine_fault);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const isa::AsmError& e) {
      py::object inst = py::reinterpret_borrow<py::object>(g_asm_error)(e.what());
      inst.attr("file") = e.file;
      inst.attr("line") = e.line;
      inst.attr("col") = e.col;
      inst.attr("message") = e.message;
      PyErr_SetObject(g_asm_error, inst.ptr());
    } catch (const sim::MachineFault& e) {
      py::object inst = py::reinterpret_borrow<py::object>(g_machine_fault)(e.what());
      inst.attr("step") = e.step;
      inst.attr("line") = e.line;
      inst.attr("message") = e.message;
      PyErr_SetObject(g_machine_fault, inst.ptr());
    }
  });
}

// Program, assemble(), assemble_file().
void bind_programs(py::module_& mod) {
  py::class_<PyProgram>(mod, "Program",
                        "An assembled trace: loops expanded, arrays declared, the machine's directives read. "
                        "Make one with flashsim.assemble() or flashsim.assemble_file().")
      .def_property_readonly("name", [](const PyProgram& p) { return p.p->name; }, "The file name (for messages).")
      .def("__len__", [](const PyProgram& p) { return p.p->code.size(); }, "Instructions in the expanded trace.")
      .def_property_readonly("register_count", [](const PyProgram& p) { return p.p->register_count(); },
                             "The .regs directive's count, else the highest register used + 1.")
      .def_property_readonly("is_scalar", [](const PyProgram& p) { return p.p->is_scalar(); },
                             "True on the scalar machine (every tile 1x1), False on the tile machine.")
      .def_property_readonly("arrays",
                             [](const PyProgram& p) {
                               py::list l;
                               for (const auto& a : p.p->arrays) l.append(array_decl_dict(a));
                               return l;
                             },
                             "The DRAM arrays: name, rank, shape, tile shape, element bytes.")
      .def_property_readonly("source_lines", [](const PyProgram& p) { return p.p->source_lines; })
      .def(
          "instruction",
          [](const PyProgram& p, std::size_t i) {
            if (i >= p.p->code.size()) throw py::index_error("instruction index out of range");
            return isa::format_instruction(*p.p, p.p->code[i]);
          },
          py::arg("index"), "Instruction `index` (0-based) as text, e.g. 'MAC R0, R1, R2, R2'.")
      .def(
          "line",
          [](const PyProgram& p, std::size_t i) {
            if (i >= p.p->code.size()) throw py::index_error("instruction index out of range");
            return p.p->loc(i).line;
          },
          py::arg("index"), "The source line instruction `index` came from (0 for generated code).")
      .def("disassemble", [](const PyProgram& p) { return isa::disassemble(*p.p); },
           "Canonical text: directives that make the program self-contained, then one instruction a line.")
      .def("__repr__", [](const PyProgram& p) {
        return "<flashsim.Program " + p.p->name + ": " + std::to_string(p.p->code.size()) + " instructions, " +
               std::to_string(p.p->register_count()) + " registers>";
      });

  mod.def("assemble", &py_assemble, py::arg("text"), py::arg("name") = "<input>", py::arg("params") = py::none(),
          "Assemble trace text into a Program. `params` overrides .param defaults ({'n': 16}); naming a "
          "parameter the text does not declare is a ValueError. Raises flashsim.AssemblerError with file, "
          "line and col on a bad trace.");
  mod.def("assemble_file", &py_assemble_file, py::arg("path"), py::arg("params") = py::none(),
          "Read and assemble a trace file (see assemble()).");
}

// Machine: step, step back, run, counters, registers, arrays, traces.
void bind_machine(py::module_& mod) {
  py::class_<PyMachine>(mod, "Machine",
                        "The cycle-counting machine running one Program: step, step back (with history), "
                        "run, run to a breakpoint. Registers hold a value and, with symbolic=True, the "
                        "expression that produced it.")
      .def(py::init<const PyProgram&, std::optional<int>, std::optional<bool>, bool, bool, bool, const py::dict&,
                    std::optional<std::uint64_t>,
                    const std::map<std::string, std::uint32_t>&, std::optional<std::uint64_t>, const py::object&>(),
           py::arg("program"), py::kw_only(), py::arg("regs") = py::none(), py::arg("f64") = py::none(),
           py::arg("symbolic") = false, py::arg("history") = true, py::arg("compute_values") = true,
           py::arg("inputs") = py::dict(), py::arg("seed") = py::none(),
           py::arg("costs") = std::map<std::string, std::uint32_t>{}, py::arg("sram_bytes") = py::none(),
           py::arg("l2") = py::none(),
           "Machine(program, *, regs=None, f64=None, symbolic=False, history=True, compute_values=True, "
           "inputs={}, seed=None, costs={}, sram_bytes=None, l2=None)\n\n"
           "regs overrides .regs; f64 makes registers float64; symbolic keeps an expression per value; "
           "history keeps the undo log step_back() needs; inputs sets arrays row-major ({'x': [1, 2]}, or an array of any shape), "
           "the others are random from `seed`; costs sets cycles per opcode ({'LOAD': 100}); l2 sends the "
           "traffic through an L2 of that size ('4KiB' or bytes), as `flashsim run --l2`.")
      .def_property_readonly("program", &PyMachine::program)
      .def_property_readonly("pc", [](PyMachine& m) { return m.m().pc(); }, "Instructions executed so far.")
      .def("__len__", [](PyMachine& m) { return m.m().size(); }, "Instructions in the trace.")
      .def_property_readonly("done", [](PyMachine& m) { return m.m().done(); })
      .def_property_readonly("line", &PyMachine::line, "The source line of the next instruction (0 when done).")
      .def_property_readonly("next_instruction", &PyMachine::next_instruction,
                             "The next instruction as text ('' when done).")
      .def_property_readonly("register_count", [](PyMachine& m) { return m.m().register_count(); })
      .def_property_readonly("register_count_source", [](PyMachine& m) { return m.m().register_count_source(); },
                             "Where the count came from: '--regs', '.regs directive' or 'inferred ...'.")
      .def("step", [](PyMachine& m) { m.m().step(); }, "Execute one instruction; raises flashsim.MachineFault.")
      .def("step_back", [](PyMachine& m) { return m.m().step_back(); },
           "Undo one instruction; False at the start or without history.")
      .def("run", [](PyMachine& m) { m.m().run(); }, py::call_guard<py::gil_scoped_release>(), "Run to the end.")
      .def(
          "run_to_breakpoint",
          [](PyMachine& m, const std::set<std::uint32_t>& lines) { return m.m().run_to_breakpoint(lines); },
          py::arg("lines"), py::call_guard<py::gil_scoped_release>(),
          "Run until the next instruction's source line is in `lines` (after at least one step). True when it "
          "stopped at a breakpoint, False at the end.")
      .def("run_to", [](PyMachine& m, std::uint64_t pc) { m.m().run_to(pc); }, py::arg("pc"),
           py::call_guard<py::gil_scoped_release>(), "Go to position `pc`, forward or back.")
      .def("reset", [](PyMachine& m) { m.m().reset(); }, "Back to the start, inputs as they were.")
      .def_property_readonly("counters", [](PyMachine& m) { return counters_dict(m.m().counters()); },
                             "Counters so far: cycles, instructions, loads, stores, macs, other_ops, dram_reads, "
                             "dram_writes (elements), bytes_read, bytes_written, per_op {mnemonic: count}.")
      .def_property_readonly("cycles", [](PyMachine& m) { return m.m().counters().cycles; })
      .def("register", &PyMachine::register_value, py::arg("r"),
           "Register r's value: a float on the scalar machine, a 2-D numpy array (the tile) on the tile "
           "machine, None before it is written.")
      .def_property_readonly("registers", &PyMachine::registers, "Every register's value (see register()).")
      .def("symbol", &PyMachine::register_symbol, py::arg("r"),
           "Register r's expression ('a00*b00 + a01*b10'); '' unless symbolic=True or before it is written.")
      .def_property_readonly("symbols", &PyMachine::symbols, "Every register's expression (see symbol()).")
      .def("cell", &PyMachine::register_cell, py::arg("r"), py::arg("symbolic") = false,
           "Register r as the step table shows it.")
      .def("array", &PyMachine::array, py::arg("name"),
           "A DRAM array's current values as a numpy array (1-D for x[i], 2-D for a[i][j]).")
      .def_property_readonly("arrays", &PyMachine::arrays, "Every DRAM array: {name: numpy array}.")
      .def_property_readonly("dram", &PyMachine::dram,
                             "Traffic per array so far: elem_reads, elem_writes, bytes_read, bytes_written, "
                             "and whether the trace reads it before writing (input) or writes it (output).")
      .def("l2", &PyMachine::l2,
           "With an L2 (.l2 or l2=...): its sector hits and misses and the bytes that reached DRAM, in total and "
           "per array, for the steps run so far (written back at the end once done); None without one.")
      .def_property_readonly("sram_peak", [](PyMachine& m) { return m.m().sram_peak(); },
                             "Most register bytes held at once (the tile machine's SRAM).")
      .def("trace", &PyMachine::trace,
           "Run the whole trace from the start and return one row per step as numpy arrays: step (1-based), "
           "pc, line, col, opcode, mnemonic, and after the step cycle, bytes_read, bytes_written, dram_reads, "
           "dram_writes (cumulative). The machine then returns to where it stood.")
      .def("trace_csv", &PyMachine::trace_csv, "The CSV that `flashsim run --trace-csv` writes (resets and runs).")
      .def("perfetto", &PyMachine::perfetto,
           "The Chrome trace-event JSON of `flashsim run --perfetto` (resets and runs). With .units, the time "
           "model's lanes, as there; summary() and json() add its block and key too, and a deadlock raises "
           "flashsim.AssemblerError.")
      .def("step_table", &PyMachine::step_table, py::arg("symbolic") = false, py::arg("max_rows") = 200,
           "The lesson-style step table `flashsim run` prints (resets the machine and runs it to the end).")
      .def("summary", &PyMachine::summary, "The cost summary and outputs `flashsim run` prints after the table.")
      .def("json", &PyMachine::json, "The JSON text of `flashsim run --json` for the state now.")
      .def("__repr__", [](PyMachine& m) {
        return "<flashsim.Machine " + m.m().program().name + " at step " + std::to_string(m.m().pc()) + "/" +
               std::to_string(m.m().size()) + ", " + std::to_string(m.m().counters().cycles) + " cycles>";
      });
}

// Verdict, lesson_check(), lessons(), lessons_root().
void bind_lessons(py::module_& mod) {
  py::class_<PyVerdict>(mod, "Verdict", "The outcome of flashsim.lesson_check().")
      .def_readonly("passed", &PyVerdict::passed)
      .def_readonly("refused", &PyVerdict::refused,
                    "The trace redefines the lesson's machine (.cost, ...): bad input, not a failed grade.")
      .def_readonly("exit_code", &PyVerdict::exit_code, "What `flashsim lesson check` exits with: 0, 1 or 2.")
      .def_readonly("problems", &PyVerdict::problems, "Complete sentences, most useful first.")
      .def_readonly("trace", &PyVerdict::trace, "The file checked.")
      .def_readonly("lesson", &PyVerdict::lesson, "The lesson's folder name, e.g. '02-locality'.")
      .def_readonly("part", &PyVerdict::part)
      .def_readonly("report", &PyVerdict::report, "The text `flashsim lesson check` prints.")
      .def_property_readonly("counts",
                             [](const PyVerdict& v) {
                               const auto& c = v.counts;
                               py::dict d;
                               d["cycles"] = c.cycles;
                               d["instructions"] = c.instructions;
                               d["loads"] = c.loads;
                               d["stores"] = c.stores;
                               d["macs"] = c.macs;
                               d["dram_reads"] = c.dram_reads;
                               d["dram_writes"] = c.dram_writes;
                               d["bytes_read"] = c.bytes_read;
                               d["bytes_written"] = c.bytes_written;
                               d["sram_peak"] = c.sram_peak;
                               d["hbm_bytes_read"] = c.hbm_bytes_read;
                               d["hbm_bytes_written"] = c.hbm_bytes_written;
                               d["l2_hits"] = c.l2_hits;
                               d["l2_misses"] = c.l2_misses;
                               d["regs_used"] = c.regs_used;
                               return d;
                             },
                             "Measured on the first trial: cycles, loads, stores, macs, DRAM and L2 counts.")
      .def("__bool__", [](const PyVerdict& v) { return v.passed; })
      .def("__repr__", [](const PyVerdict& v) {
        return std::string("<flashsim.Verdict ") + (v.refused ? "REFUSED" : v.passed ? "PASS" : "FAIL") + " " +
               v.lesson + ":" + v.part + ">";
      });
  mod.def("lesson_check", &lesson_check, py::arg("lesson"), py::arg("file") = py::none(), py::arg("text") = py::none(),
          py::arg("name") = "<input>",
          "Grade a trace against a lesson as `flashsim lesson check LESSON [FILE]` does: `lesson` is '01', "
          "'dot-product', '01-dot-product' or a part ('03:quiz'); `file` a trace file, or `text` the trace "
          "itself (called `name` in messages); neither checks the reference solution. Returns a Verdict.");
  mod.def("lessons", &lesson_list, "Every lesson: id, slug, name, title, dir and its parts (registers, budgets).");
  mod.def("lessons_root", [] { return lessons::lessons_root(); },
          "The lessons folder ($FLASHSIM_LESSONS_DIR, else the source tree's lessons/).");
}

// cli(): any `flashsim` command, in-process.
void bind_cli(py::module_& mod) {
  mod.def("cli", &cli_call, py::arg("args"),
          "Run a `flashsim` command in-process, e.g. cli(['traffic', 'attention', '--json']). Returns "
          "(exit_code, stdout, stderr): what the executable would print and exit with.");
}

}  // namespace

PYBIND11_MODULE(_core, mod) {
  mod.doc() =
      "flashsim's simulator, bound from C++: the assembler, the machine, the lesson checker and the "
      "`flashsim` command line (run in-process). Use it through the `flashsim` package.";
  mod.attr("__version__") = FLASHSIM_VERSION;

  bind_errors(mod);
  bind_programs(mod);
  bind_machine(mod);
  bind_lessons(mod);
  bind_cli(mod);
}

// The lesson checker: spec parsing, lesson discovery and grading of traces.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "isa/assembler.h"
#include "lessons/lesson.h"
#include "sim/l2_trace.h"
#include "sim/machine.h"
#include "sim/report.h"
#include "sim/timing.h"

#ifndef FLASHSIM_SOURCE_LESSONS_DIR
#define FLASHSIM_SOURCE_LESSONS_DIR "lessons"
#endif

namespace fs = std::filesystem;

namespace flashsim::lessons {

namespace {

std::map<std::string, ReferenceFn>& references() {
  static std::map<std::string, ReferenceFn> r;
  return r;
}
std::map<std::string, CustomCheck>& custom_checks() {
  static std::map<std::string, CustomCheck> r;
  return r;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> out;
  for (std::string w; is >> w;) out.push_back(w);
  return out;
}

// Reading one check.spec, with errors at FILE:LINE:COL.
struct SpecReader {
  std::string file;
  int line = 0;
  [[noreturn]] void fail(int col, const std::string& msg) const {
    throw SpecError(file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + msg);
  }
  std::int64_t integer(const std::string& v, int col, std::int64_t lo = 0) const {
    try {
      std::size_t used = 0;
      long long n = std::stoll(v, &used);
      if (used != v.size() || n < lo) throw std::invalid_argument(v);
      return n;
    } catch (const std::exception&) {
      fail(col, "'" + v + "' is not an integer >= " + std::to_string(lo));
    }
  }
  double real(const std::string& v, int col) const {
    try {
      std::size_t used = 0;
      double d = std::stod(v, &used);
      if (used != v.size() || !std::isfinite(d)) throw std::invalid_argument(v);
      return d;
    } catch (const std::exception&) {
      fail(col, "'" + v + "' is not a number");
    }
  }
  // NAME, NAME[i] or NAME[i][j]
  void indexed(const std::string& tok, int col, std::string& name, std::vector<std::int64_t>& idx) const {
    auto br = tok.find('[');
    name = tok.substr(0, br);
    idx.clear();
    if (name.empty()) fail(col, "'" + tok + "' needs a name before '['");
    while (br != std::string::npos) {
      auto close = tok.find(']', br);
      if (close == std::string::npos) fail(col, "'" + tok + "' has an unclosed '['");
      idx.push_back(integer(tok.substr(br + 1, close - br - 1), col));
      br = close + 1 < tok.size() ? close + 1 : std::string::npos;
      if (br != std::string::npos && tok[br] != '[') fail(col, "'" + tok + "' has text after ']'");
    }
    if (idx.size() > 2) fail(col, "'" + tok + "' has more than two indices");
  }
};

void set_budget(Part& p, const std::string& counter, std::uint64_t limit, const std::string& why = {}) {
  for (auto& b : p.budgets)
    if (b.counter == counter) {
      b.limit = limit;
      b.why = why;
      return;
    }
  p.budgets.push_back({counter, limit, why});
}

// "Q[8][4] tile[4][4] elem 2 K[8][4] ...": shapes, each optionally followed by its tile and
// element size (the tile machine); a bare shape is the scalar machine's 1x1 tiles.
std::vector<ArrayShape> parse_arrays(const SpecReader& r, const std::vector<std::string>& w, int vcol) {
  std::vector<ArrayShape> out;
  for (std::size_t k = 0; k < w.size(); ++k) {
    const auto& t = w[k];
    std::string name;
    std::vector<std::int64_t> idx;
    if (t == "elem") {
      if (out.empty() || k + 1 == w.size()) r.fail(vcol, "'elem B' follows an array, as in Q[8][4] tile[4][4] elem 2");
      auto b = r.integer(w[++k], vcol, 1);
      if (b != 1 && b != 2 && b != 4 && b != 8) r.fail(vcol, "element size must be 1, 2, 4 or 8 bytes");
      out.back().elem_bytes = static_cast<int>(b);
      continue;
    }
    r.indexed(t, vcol, name, idx);
    if (name == "tile") {
      if (out.empty()) r.fail(vcol, "'" + t + "' follows an array, as in Q[8][4] tile[4][4]");
      ArrayShape& s = out.back();
      if (static_cast<int>(idx.size()) != s.rank) r.fail(vcol, "the tile of '" + s.name + "' needs as many dimensions as the array");
      s.tile_rows = idx[0];
      s.tile_cols = idx.size() == 2 ? idx[1] : 1;
      if (s.tile_rows < 1 || s.tile_cols < 1) r.fail(vcol, "the tile of '" + s.name + "' is empty");
      continue;
    }
    ArrayShape s;
    s.name = name;
    if (idx.empty()) r.fail(vcol, "array '" + t + "' needs a shape, e.g. " + t + "[2][2] or " + t + "[8]");
    s.rank = static_cast<int>(idx.size());
    s.rows = idx[0];
    s.cols = idx.size() == 2 ? idx[1] : 1;
    if (s.rows < 1 || s.cols < 1) r.fail(vcol, "array '" + t + "' has an empty shape");
    out.push_back(s);
  }
  return out;
}

void apply_key(const SpecReader& r, Part& p, const std::string& key, const std::string& value, int vcol) {
  auto w = words(value);
  if (w.empty()) r.fail(vcol, "'" + key + "' needs a value");
  if (key == "title") p.title = value;
  else if (key == "exercise") p.exercise = value;
  else if (key == "solution") p.solution = value;
  else if (key == "reference") p.reference = value;
  else if (key == "regs") p.regs = static_cast<int>(r.integer(value, vcol, 1));
  else if (key == "trials") p.trials = static_cast<int>(r.integer(value, vcol, 1));
  else if (key == "tolerance") p.tolerance = r.real(value, vcol);
  else if (key == "dtype") {
    if (value != "f32" && value != "f64") r.fail(vcol, "dtype is f32 or f64, not '" + value + "'");
    p.f64 = value == "f64";
  } else if (key == "arrays") {
    p.arrays = parse_arrays(r, w, vcol);
  } else if (key == "array") {
    // One array a line, for the tile machine's long declarations.
    auto one = parse_arrays(r, w, vcol);
    if (one.size() != 1) r.fail(vcol, "array = NAME[rows][cols] [tile[tr][tc]] [elem B] declares one array");
    p.arrays.push_back(one.front());
  } else if (key == "derived") {
    p.derived = w;
  } else if (key == "sram") {
    p.sram_bytes = static_cast<std::uint64_t>(r.integer(value, vcol, 1));
  } else if (key == "l2") {
    // l2 = BYTES [line=L] [sector=S], as the .l2 directive
    isa::L2Geometry g;
    g.capacity_bytes = static_cast<std::uint64_t>(r.integer(w[0], vcol, 1));
    bool sector_given = false;
    for (std::size_t k = 1; k < w.size(); ++k) {
      auto eq = w[k].find('=');
      std::string name = w[k].substr(0, eq);
      if (eq == std::string::npos || (name != "line" && name != "sector")) r.fail(vcol, "l2 is 'BYTES [line=L] [sector=S]'");
      auto v = static_cast<std::uint32_t>(r.integer(w[k].substr(eq + 1), vcol, 1));
      (name == "line" ? g.line_bytes : g.sector_bytes) = v;
      sector_given |= name == "sector";
    }
    if (!sector_given && g.sector_bytes > g.line_bytes) g.sector_bytes = g.line_bytes;
    if (std::string why = isa::l2_geometry_error(g); !why.empty()) r.fail(vcol, why);
    p.l2 = g;
  } else if (key == "elem") {
    auto b = r.integer(value, vcol, 1);
    if (b != 1 && b != 2 && b != 4 && b != 8) r.fail(vcol, "element size must be 1, 2, 4 or 8 bytes");
    p.reg_elem_bytes = static_cast<int>(b);
  } else if (key == "max_read" || key == "max_written") {
    // max_read = K 128 [because ...]: bytes of one array
    if (w.size() < 2) r.fail(vcol, key + " is 'ARRAY BYTES [closed form]'");
    std::string why;
    for (std::size_t k = 2; k < w.size(); ++k) why += (why.empty() ? "" : " ") + w[k];
    set_budget(p, key.substr(4) + ":" + w[0], static_cast<std::uint64_t>(r.integer(w[1], vcol)), why);
  } else if (key == "outputs") {
    p.outputs.clear();
    for (const auto& t : w) {
      OutputSpec o;
      std::vector<std::int64_t> idx;
      r.indexed(t, vcol, o.array, idx);
      if (!idx.empty()) {
        o.row = idx[0];
        o.col = idx.size() == 2 ? idx[1] : 0;
      }
      p.outputs.push_back(o);
    }
  } else if (key == "constant") {
    // Constants the machine cannot make itself (no immediates): 0, 1, -inf as DRAM arrays.
    if (w.size() != 2) r.fail(vcol, "constant is 'ARRAY VALUE'");
    p.constants[w[0]] = w[1] == "inf" ? std::numeric_limits<double>::infinity()
                        : w[1] == "-inf" ? -std::numeric_limits<double>::infinity()
                                         : r.real(w[1], vcol);
  } else if (key == "range") {
    if (w.size() != 3) r.fail(vcol, "range is 'ARRAY LO HI'");
    double lo = r.real(w[1], vcol), hi = r.real(w[2], vcol);
    if (!(lo < hi)) r.fail(vcol, "range needs LO < HI");
    p.ranges[w[0]] = {lo, hi};
  } else if (key == "param") {
    if (w.size() != 2) r.fail(vcol, "param is 'NAME VALUE'");
    p.params[w[0]] = r.integer(w[1], vcol, std::numeric_limits<std::int64_t>::min());
  } else if (key == "check") {
    for (const auto& t : w) p.custom_checks.push_back(t);
  } else if (key == "units") {
    // units = h100: the time model's GPU preset, which the trace must name with .units
    if (w.size() != 1 || !isa::find_gpu_preset(w[0])) r.fail(vcol, "units is a GPU preset (" + isa::gpu_preset_names() + ")");
    p.units = std::string(isa::find_gpu_preset(w[0])->name);
  } else if (key == "max_timed_cycles") {
    p.max_timed_cycles = static_cast<double>(r.integer(value, vcol, 1));
  } else if (key == "min_busy") {
    // min_busy = tensor 0.8: the unit is busy at least this share of the timed cycles
    if (w.size() != 2 || !isa::find_unit(w[0])) r.fail(vcol, "min_busy is 'UNIT FRACTION' (a unit: memory, tensor, special, vector)");
    double f = r.real(w[1], vcol);
    if (f <= 0 || f > 1) r.fail(vcol, "min_busy's fraction lies in (0, 1]");
    auto at = std::find_if(p.min_busy.begin(), p.min_busy.end(), [&](const BusyBudget& b) { return b.unit == w[0]; });
    if (at != p.min_busy.end()) at->least = f;
    else p.min_busy.push_back({w[0], f});
  } else if (key.rfind("max_", 0) == 0 && key.size() > 4) {
    std::string counter = key.substr(4);
    static const std::vector<std::string> known = {"cycles",       "loads",      "stores",        "dram_reads", "dram_writes",
                                                   "instructions", "bytes_read", "bytes_written", "sram",
                                                   "hbm_bytes_read", "hbm_bytes_written"};
    if (std::find(known.begin(), known.end(), counter) == known.end() && !isa::find_mnemonic(counter))
      r.fail(1, "unknown budget '" + key + "' (max_cycles, max_loads, max_stores, max_dram_reads, max_dram_writes, "
                "max_instructions, max_bytes_read, max_bytes_written, max_sram, max_hbm_bytes_read, max_hbm_bytes_written, "
                "max_read, max_written, max_timed_cycles or max_<OPCODE>)");
    set_budget(p, counter, static_cast<std::uint64_t>(r.integer(value, vcol)));
  } else {
    r.fail(1, "unknown key '" + key + "'");
  }
}

bool is_output(const Part& p, const std::string& array) {
  return std::any_of(p.outputs.begin(), p.outputs.end(), [&](const OutputSpec& o) { return o.array == array; });
}

std::string shape_text(std::int64_t rows, std::int64_t cols, int rank) {
  return rank == 1 ? "[" + std::to_string(rows) + "]" : "[" + std::to_string(rows) + "][" + std::to_string(cols) + "]";
}

std::string cell_text(const std::string& a, int rank, std::int64_t r, std::int64_t c) {
  return rank == 1 ? a + "[" + std::to_string(r) + "]" : a + "[" + std::to_string(r) + "][" + std::to_string(c) + "]";
}

std::string number(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// "512 bytes", "3145728 bytes (3 MiB)"
std::string bytes_text(std::uint64_t b) {
  std::string s = std::to_string(b) + (b == 1 ? " byte" : " bytes");
  if (b < 1024) return s;
  std::ostringstream os;
  os.precision(3);
  if (b < 1024 * 1024) os << static_cast<double>(b) / 1024 << " KiB";
  else os << static_cast<double>(b) / (1024.0 * 1024.0) << " MiB";
  return s + " (" + os.str() + ")";
}

// A budget on one array's bytes: "read:K" -> {"read", "K"}.
std::optional<std::pair<std::string, std::string>> array_budget(const std::string& counter) {
  auto colon = counter.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::pair{counter.substr(0, colon), counter.substr(colon + 1)};
}

std::uint64_t counter_value(const Counts& c, const sim::Machine& m, const std::string& name) {
  if (auto ab = array_budget(name)) {
    auto id = m.program().find_array(ab->second);
    if (!id) return 0;
    return ab->first == "read" ? m.array(*id).bytes_read : m.array(*id).bytes_written;
  }
  const sim::Counters& mc = m.counters();
  if (name == "bytes_read") return c.bytes_read;
  if (name == "bytes_written") return c.bytes_written;
  if (name == "sram") return c.sram_peak;
  if (name == "hbm_bytes_read") return c.hbm_bytes_read;
  if (name == "hbm_bytes_written") return c.hbm_bytes_written;
  if (name == "cycles") return c.cycles;
  if (name == "loads") return c.loads;
  if (name == "stores") return c.stores;
  if (name == "dram_reads") return c.dram_reads;
  if (name == "dram_writes") return c.dram_writes;
  if (name == "instructions") return c.instructions;
  return mc.count(*isa::find_mnemonic(name));
}

std::string over_budget(const std::string& name, std::uint64_t got, std::uint64_t limit) {
  std::string g = std::to_string(got), l = std::to_string(limit);
  if (auto ab = array_budget(name))
    return "your trace " + std::string(ab->first == "read" ? "reads " : "writes ") + bytes_text(got) + " of " +
           ab->second + "; the budget is " + bytes_text(limit);
  if (name == "bytes_read") return "your trace reads " + bytes_text(got) + " of DRAM; the budget is " + bytes_text(limit);
  if (name == "bytes_written") return "your trace writes " + bytes_text(got) + " of DRAM; the budget is " + bytes_text(limit);
  if (name == "hbm_bytes_read")
    return "through the L2, your trace reads " + bytes_text(got) + " from DRAM; the budget is " + bytes_text(limit);
  if (name == "hbm_bytes_written")
    return "through the L2, your trace writes " + bytes_text(got) + " back to DRAM; the budget is " + bytes_text(limit);
  if (name == "sram")
    return "your trace holds up to " + bytes_text(got) + " in its registers at once; the SRAM budget is " + bytes_text(limit);
  if (name == "cycles") return "your trace takes " + g + " cycles; the budget is " + l;
  if (name == "loads") return "your trace makes " + g + " LOADs; the budget is " + l;
  if (name == "stores") return "your trace makes " + g + " STOREs; the budget is " + l;
  if (name == "dram_reads") return "your trace reads " + g + " DRAM elements; the budget is " + l;
  if (name == "dram_writes") return "your trace writes " + g + " DRAM elements; the budget is " + l;
  if (name == "instructions") return "your trace executes " + g + " instructions; the budget is " + l;
  std::string mn(isa::info(*isa::find_mnemonic(name)).mnemonic);
  return "your trace executes " + g + " " + mn + " instructions; the budget is " + l;
}

// A directive line of a trace: its name (lower case), its first word (the array of .input and
// .fill) and where it starts. Directives cannot sit inside loops, so the text has each once.
struct DirectiveLine {
  std::string name, subject;
  std::uint32_t line = 0, col = 0;
};

std::vector<DirectiveLine> directive_lines(const isa::Program& prog) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::vector<DirectiveLine> out;
  for (std::size_t i = 0; i < prog.source_lines.size(); ++i) {
    const std::string& s = prog.source_lines[i];
    std::size_t at = s.find_first_not_of(" \t");
    if (at == std::string::npos || s[at] != '.') continue;
    DirectiveLine d;
    d.line = static_cast<std::uint32_t>(i + 1);
    d.col = static_cast<std::uint32_t>(at + 1);
    std::size_t k = at + 1;
    while (k < s.size() && ident(s[k])) d.name += static_cast<char>(std::tolower(static_cast<unsigned char>(s[k++])));
    while (k < s.size() && (s[k] == ' ' || s[k] == '\t')) ++k;
    while (k < s.size() && ident(s[k])) d.subject += s[k++];
    out.push_back(std::move(d));
  }
  return out;
}

// The lesson defines the machine a trace is graded on: its cycle costs, register file, value
// type, element size, SRAM and input values. A directive that would change one of them is
// refused like a text error, naming its line; a trace may still declare what the lesson has
// (or fewer registers, which only binds itself).
std::optional<std::string> machine_redefinition(const Part& part, const isa::Program& prog) {
  const std::vector<DirectiveLine> lines = directive_lines(prog);
  auto last = [&](const std::string& name) -> const DirectiveLine* {
    const DirectiveLine* found = nullptr;
    for (const auto& d : lines)
      if (d.name == name) found = &d;
    return found;
  };
  auto at = [&](const DirectiveLine& d, const std::string& msg) {
    return prog.name + ":" + std::to_string(d.line) + ":" + std::to_string(d.col) + ": error: " + msg;
  };
  for (const auto& d : lines) {
    if (d.name == "cost")
      return at(d, ".cost changes the cycle costs, which the lesson's machine defines (its budgets count them); remove the line");
    if (d.name == "unit")
      return at(d, ".unit changes a unit's rate or latency, which the lesson's machine defines (its budgets are timed on "
                   "them); remove the line");
    if (d.name != "input" && d.name != "fill") continue;
    auto shape = std::find_if(part.arrays.begin(), part.arrays.end(), [&](const ArrayShape& a) { return a.name == d.subject; });
    if (shape == part.arrays.end() || is_output(part, d.subject)) continue;  // unknown arrays are refused later
    auto constant = part.constants.find(d.subject);
    if (constant == part.constants.end())
      return at(d, "." + d.name + " sets the values of '" + d.subject +
                       "', which the lesson gives (fresh random values on every trial); remove the line");
    auto id = prog.find_array(d.subject);
    const auto& decl = prog.arrays[*id];
    const double want = constant->second;
    const bool same = d.name == "fill" ? decl.fill && (*decl.fill == want || (std::isnan(*decl.fill) && std::isnan(want)))
                                       : std::all_of(decl.input.begin(), decl.input.end(), [&](double v) { return v == want; });
    if (!same)
      return at(d, "." + d.name + " changes the values of '" + d.subject + "', which the lesson fills with " + number(want) +
                       "; remove the line or give that value");
  }
  if (!part.units.empty()) {
    const auto* d = last("units");
    if (!d || !prog.timing.units)
      return prog.name + ":1:1: error: this lesson's machine is timed on the " + part.units + " preset; add the line '.units " +
             part.units + "' before the code";
    if (prog.timing.units->preset != part.units)
      return at(*d, "your trace declares .units " + prog.timing.units->preset + ", but the lesson's machine is timed on the " +
                        part.units + " preset; write '.units " + part.units + "'");
  }
  if (const auto* d = last("regs"); d && prog.config.regs && *prog.config.regs > part.regs)
    return at(*d, "your trace declares .regs " + std::to_string(*prog.config.regs) + ", but the machine has " +
                      std::to_string(part.regs) + " registers (a trace may declare fewer, never more)");
  if (const auto* d = last("dtype"); d && prog.config.f64 != part.f64)
    return at(*d, std::string("your trace declares .dtype ") + (prog.config.f64 ? "f64" : "f32") +
                      ", but the lesson's machine holds " + (part.f64 ? "f64" : "f32") + " registers; remove the line");
  const int elem = part.reg_elem_bytes ? part.reg_elem_bytes : isa::MachineConfig{}.elem_bytes;
  if (const auto* d = last("elem"); d && prog.config.elem_bytes != elem)
    return at(*d, "your trace declares .elem " + std::to_string(prog.config.elem_bytes) + ", but " +
                      (part.reg_elem_bytes ? "a register element of this machine takes " : "an element of this machine takes ") +
                      std::to_string(elem) + " bytes (leave .elem out)");
  if (const auto* d = last("sram"); d && part.sram_bytes && prog.config.sram_bytes != part.sram_bytes)
    return at(*d, "your trace declares .sram " + std::to_string(prog.config.sram_bytes.value_or(0)) +
                      ", but the lesson's machine has " + std::to_string(*part.sram_bytes) + " bytes of SRAM; remove the line");
  if (const auto* d = last("l2"); d && prog.config.l2 != part.l2)
    return at(*d, part.l2 ? "your trace declares an L2 other than the lesson's (.l2 " + std::to_string(part.l2->capacity_bytes) +
                                " line=" + std::to_string(part.l2->line_bytes) + " sector=" + std::to_string(part.l2->sector_bytes) +
                                "); remove the line or give that one"
                          : std::string("your trace declares .l2, but this lesson's machine has no L2; remove the line"));
  return std::nullopt;
}

std::string percent(double f) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << 100 * f << "%";
  return os.str();
}

// Times a trace whose values are right on the lesson's units and holds it to the time budgets.
void time_trace(const Part& part, const isa::Program& prog, Counts& counts, std::vector<std::string>& problems) {
  sim::TimingOptions o;
  o.keep_steps = false;
  sim::TimingResult t;
  try {
    t = sim::time_program(prog, o);
  } catch (const sim::TimingError& e) {
    std::string where = e.where.line ? prog.name + ":" + std::to_string(e.where.line) + ": " : "";
    problems.push_back("the time model cannot time your trace: " + where + e.message);
    return;
  }
  counts.timed = true;
  counts.timed_cycles = t.cycles;
  for (std::size_t u = 0; u < isa::kUnitCount; ++u) counts.busy[u] = t.units[u].busy_fraction;
  counts.bound = t.bound;
  if (part.max_timed_cycles && t.cycles > *part.max_timed_cycles)
    problems.push_back("your trace takes " + number(std::ceil(t.cycles)) + " cycles on the " + part.units +
                       " units; the budget is " + number(*part.max_timed_cycles));
  for (const auto& b : part.min_busy) {
    const auto u = static_cast<std::size_t>(*isa::find_unit(b.unit));
    if (counts.busy[u] < b.least)
      problems.push_back("the " + b.unit + " unit is busy " + percent(counts.busy[u]) + " of your trace's cycles; the budget is at least " +
                         percent(b.least));
  }
}

fs::path absolute_lessons_root() {
  std::error_code ec;
  auto p = fs::weakly_canonical(fs::path(lessons_root()), ec);
  return ec ? fs::path(lessons_root()) : p;
}

// The lesson folder (under the lessons root) that contains `file`, if any.
std::optional<fs::path> containing_lesson_dir(const fs::path& file) {
  fs::path root = absolute_lessons_root();
  fs::path f = fs::weakly_canonical(file);
  auto rel = f.lexically_relative(root);
  if (rel.empty() || rel.begin()->string() == ".." || rel.begin() == rel.end()) return std::nullopt;
  fs::path dir = root / *rel.begin();
  if (fs::is_directory(dir) && fs::exists(dir / "check.spec")) return dir;
  return std::nullopt;
}

}  // namespace

std::string budget_label(const std::string& name) {
  if (auto ab = array_budget(name)) return ab->second + (ab->first == "read" ? " bytes read" : " bytes written");
  if (name == "bytes_read") return "bytes read";
  if (name == "bytes_written") return "bytes written";
  if (name == "sram") return "SRAM bytes";
  if (name == "hbm_bytes_read") return "DRAM bytes read through the L2";
  if (name == "hbm_bytes_written") return "DRAM bytes written back by the L2";
  if (name == "cycles") return "cycles";
  if (name == "loads") return "LOADs";
  if (name == "stores") return "STOREs";
  if (name == "dram_reads") return "DRAM reads";
  if (name == "dram_writes") return "DRAM writes";
  if (name == "instructions") return "instructions";
  return std::string(isa::info(*isa::find_mnemonic(name)).mnemonic) + "s";
}

std::string timing_budget_text(const Part& part) {
  std::string s;
  if (part.max_timed_cycles) s = "timed cycles <= " + number(*part.max_timed_cycles);
  for (const auto& b : part.min_busy) s += (s.empty() ? "" : ", ") + b.unit + " busy >= " + percent(b.least);
  return s;
}

// --- registration ---------------------------------------------------------------------------

bool register_reference(const std::string& name, ReferenceFn fn) {
  references()[name] = std::move(fn);
  return true;
}
const ReferenceFn* find_reference(const std::string& name) {
  auto it = references().find(name);
  return it == references().end() ? nullptr : &it->second;
}
bool register_custom_check(const std::string& name, CustomCheck fn) {
  custom_checks()[name] = std::move(fn);
  return true;
}

bool Part::tiled() const {
  return std::any_of(arrays.begin(), arrays.end(), [](const ArrayShape& a) { return a.tile_rows * a.tile_cols > 1; });
}

const Part* Lesson::find_part(const std::string& name) const {
  for (const auto& p : parts)
    if (p.name == name) return &p;
  return nullptr;
}

// --- discovery ------------------------------------------------------------------------------

std::string lessons_root() {
  if (const char* e = std::getenv("FLASHSIM_LESSONS_DIR"); e && *e) return e;
  return FLASHSIM_SOURCE_LESSONS_DIR;
}

std::vector<std::string> lesson_folders(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory()) continue;
    std::string name = e.path().filename().string();
    if (name.size() < 4 || !std::isdigit(static_cast<unsigned char>(name[0])) ||
        !std::isdigit(static_cast<unsigned char>(name[1])) || name[2] != '-')
      continue;
    if (fs::exists(e.path() / "check.spec")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return fs::path(a).filename() < fs::path(b).filename();
  });
  return out;
}

Lesson load_lesson(const std::string& dir) {
  Lesson lesson;
  lesson.dir = dir;
  std::string folder = fs::path(dir).filename().string();
  if (folder.empty()) folder = fs::path(dir).parent_path().filename().string();
  auto dash = folder.find('-');
  lesson.id = folder.substr(0, dash);
  lesson.slug = dash == std::string::npos ? folder : folder.substr(dash + 1);

  SpecReader r{(fs::path(dir) / "check.spec").string()};
  std::ifstream in(r.file);
  if (!in) throw SpecError(r.file + ":1:1: error: cannot read the check spec");
  Part defaults;
  std::vector<Part> parts;
  bool in_part = false;
  for (std::string raw; std::getline(in, raw);) {
    ++r.line;
    std::string text = raw.substr(0, raw.find('#'));
    std::string t = trim(text);
    if (t.empty()) continue;
    int col = static_cast<int>(text.find_first_not_of(" \t")) + 1;
    if (t.front() == '[') {
      auto w = words(t.substr(1, t.find(']') == std::string::npos ? std::string::npos : t.find(']') - 1));
      if (t.back() != ']' || w.size() != 2 || w[0] != "part") r.fail(col, "a section is written [part NAME]");
      for (const auto& p : parts)
        if (p.name == w[1]) r.fail(col, "part '" + w[1] + "' appears twice");
      Part p = defaults;
      p.name = w[1];
      parts.push_back(p);
      in_part = true;
      continue;
    }
    auto eq = text.find('=');
    if (eq == std::string::npos) r.fail(col, "expected 'key = value'");
    std::string key = trim(text.substr(0, eq));
    std::string value = trim(text.substr(eq + 1));
    auto vstart = text.find_first_not_of(" \t", eq + 1);
    int vcol = static_cast<int>(vstart == std::string::npos ? eq + 1 : vstart) + 1;
    if (key == "title" && !in_part) {
      lesson.title = value;
      continue;
    }
    apply_key(r, in_part ? parts.back() : defaults, key, value, vcol);
  }
  if (parts.empty()) parts.push_back(defaults);
  for (auto& p : parts) {
    r.line = 1;
    if (p.solution.empty()) r.fail(1, "part '" + p.name + "' names no solution");
    if (p.reference.empty()) r.fail(1, "part '" + p.name + "' names no reference");
    if (p.regs <= 0) r.fail(1, "part '" + p.name + "' gives no register count (regs = N)");
    if (p.arrays.empty()) r.fail(1, "part '" + p.name + "' declares no arrays");
    if (p.outputs.empty()) r.fail(1, "part '" + p.name + "' names no outputs");
    for (const auto& o : p.outputs) {
      auto s = std::find_if(p.arrays.begin(), p.arrays.end(), [&](const ArrayShape& a) { return a.name == o.array; });
      if (s == p.arrays.end()) r.fail(1, "output '" + o.array + "' is not among the arrays");
      if (o.row && (*o.row >= s->rows || *o.col >= s->cols))
        r.fail(1, "output " + cell_text(o.array, s->rank, *o.row, *o.col) + " lies outside " + o.array +
                      shape_text(s->rows, s->cols, s->rank));
    }
    auto has_array = [&](const std::string& n) {
      return std::any_of(p.arrays.begin(), p.arrays.end(), [&](const ArrayShape& a) { return a.name == n; });
    };
    for (const auto& b : p.budgets)
      if (auto ab = array_budget(b.counter); ab && !has_array(ab->second))
        r.fail(1, "the budget max_" + ab->first + " names '" + ab->second + "', which is not among the arrays");
    for (const auto& d : p.derived)
      if (!has_array(d) || is_output(p, d)) r.fail(1, "derived array '" + d + "' must be one of the arrays and not an output");
    if (p.title.empty()) p.title = lesson.title;
  }
  lesson.parts = std::move(parts);
  if (lesson.title.empty()) lesson.title = lesson.slug;
  return lesson;
}

std::vector<Lesson> discover_lessons(const std::string& root) {
  std::vector<Lesson> out;
  for (const auto& d : lesson_folders(root)) out.push_back(load_lesson(d));
  return out;
}

Lesson find_lesson(const std::string& name, const std::string& root) {
  std::string want = name;
  auto folders = lesson_folders(root);
  std::string names;
  for (const auto& d : folders) {
    std::string f = fs::path(d).filename().string();
    std::string id = f.substr(0, 2), slug = f.substr(3);
    names += (names.empty() ? "" : ", ") + f;
    bool numeric = !want.empty() && std::all_of(want.begin(), want.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (f == want || slug == want || id == want || (numeric && want.size() < 3 && std::stoi(want) == std::stoi(id)))
      return load_lesson(d);
  }
  throw std::invalid_argument("no lesson '" + name + "' (lessons: " + (names.empty() ? "none found in " + root : names) + ")");
}

const Part& part_for_file(const Lesson& lesson, const std::string& file) {
  std::string base = fs::path(file).filename().string();
  for (const auto& p : lesson.parts)
    if (p.exercise == base || p.solution == base) return p;
  return lesson.parts.front();
}

LessonChoice choose_lesson(const std::string& name, const std::string& file) {
  const auto colon = name.find(':');
  // "NAME:" with nothing after the colon picks no part, as "NAME" does.
  LessonChoice c{find_lesson(name.substr(0, colon)), 0, colon != std::string::npos && colon + 1 < name.size()};
  const Part* part = nullptr;
  if (c.part_named) {
    const std::string part_name = name.substr(colon + 1);
    part = c.lesson.find_part(part_name);
    if (!part) {
      std::string names;
      for (const auto& p : c.lesson.parts) names += (names.empty() ? "" : ", ") + p.name;
      throw std::invalid_argument("lesson " + c.lesson.id + " has no part '" + part_name + "' (parts: " + names + ")");
    }
  } else {
    part = &part_for_file(c.lesson, file);
  }
  c.part = static_cast<std::size_t>(part - c.lesson.parts.data());
  return c;
}

std::optional<std::string> learner_file_for(const Lesson& lesson) {
  const char* e = std::getenv("FLASHSIM_LESSON_FILE");
  if (!e || !*e) return std::nullopt;
  fs::path f(e);
  // ctest runs tests in the build folder; a relative path means the shell's folder ($PWD).
  if (f.is_relative() && !fs::exists(f))
    if (const char* pwd = std::getenv("PWD"); pwd && fs::exists(fs::path(pwd) / f)) f = fs::path(pwd) / f;
  if (const char* only = std::getenv("FLASHSIM_LESSON"); only && *only) {
    std::string o = only;
    if (o != lesson.id && o != lesson.slug && o != lesson.folder_name()) return std::nullopt;
    return f.string();
  }
  if (fs::exists(f)) {
    auto dir = containing_lesson_dir(f);
    if (dir && fs::weakly_canonical(*dir) != fs::weakly_canonical(lesson.dir)) return std::nullopt;
  }
  return f.string();
}

// --- checking -------------------------------------------------------------------------------

Verdict check_file(const Lesson& lesson, const Part& part, const std::string& trace_path) {
  Verdict v;
  v.trace = trace_path;
  isa::AssembleOptions ao;
  ao.params = part.params;
  try {
    return check_program(lesson, part, isa::assemble_file(trace_path, ao));
  } catch (const isa::AsmError& e) {
    v.problems.push_back(std::string("the trace does not assemble: ") + e.what());
  }
  return v;
}

Verdict check_text(const Lesson& lesson, const Part& part, const std::string& text, const std::string& name) {
  Verdict v;
  v.trace = name;
  isa::AssembleOptions ao;
  ao.params = part.params;
  try {
    return check_program(lesson, part, isa::assemble(text, name, ao));
  } catch (const isa::AsmError& e) {
    v.problems.push_back(std::string("the trace does not assemble: ") + e.what());
  }
  return v;
}

namespace {

// The register file is the lesson's, whatever the trace's .regs says: a sentence naming the first
// line that uses a register past it, or none.
std::optional<std::string> register_problem(const Part& part, const isa::Program& prog) {
  if (prog.highest_reg < part.regs) return std::nullopt;
  std::uint32_t line = 0;
  for (std::size_t i = 0; i < prog.code.size() && !line; ++i)
    for (int k = 0; k < 4; ++k) {
      const isa::Operand o = prog.code[i].operand(k);
      if (o.kind == isa::Operand::Kind::Reg && o.reg == prog.highest_reg) line = prog.loc(i).line;
    }
  return "your trace uses R" + std::to_string(prog.highest_reg) + " (line " + std::to_string(line) +
         "), but the machine has " + std::to_string(part.regs) + " registers (R0..R" + std::to_string(part.regs - 1) + ")";
}

// The arrays must be the lesson's; inferred shapes grow to the lesson's shape. Appends a sentence
// for each array that does not fit and each output never stored.
void fit_arrays_to_lesson(const Part& part, isa::Program& prog, std::vector<std::string>& problems) {
  std::string names;
  for (const auto& x : part.arrays) names += (names.empty() ? "" : ", ") + x.name + shape_text(x.rows, x.cols, x.rank);
  for (auto& a : prog.arrays) {
    auto s = std::find_if(part.arrays.begin(), part.arrays.end(), [&](const ArrayShape& x) { return x.name == a.name; });
    if (s == part.arrays.end()) {
      problems.push_back("your trace uses an array '" + a.name + "' that this machine does not have (it has " + names + ")");
      continue;
    }
    if (a.tile_rows != s->tile_rows || a.tile_cols != s->tile_cols) {
      if (s->tile_rows * s->tile_cols == 1) problems.push_back("array '" + a.name + "' must have 1x1 tiles on this machine");
      else
        problems.push_back("your trace splits '" + a.name + "' into " + std::to_string(a.tile_rows) + "x" +
                           std::to_string(a.tile_cols) + " tiles, but on this machine its tiles are " +
                           std::to_string(s->tile_rows) + "x" + std::to_string(s->tile_cols) + " (tile" +
                           shape_text(s->tile_rows, s->tile_cols, s->rank) + ")");
      continue;
    }
    const int elem = a.elem_bytes ? a.elem_bytes : prog.config.elem_bytes;
    if (s->elem_bytes && elem != s->elem_bytes) {
      problems.push_back("your trace gives '" + a.name + "' " + std::to_string(elem) + "-byte elements, but on this machine they take " +
                         std::to_string(s->elem_bytes) + " bytes (elem " + std::to_string(s->elem_bytes) + ")");
      continue;
    }
    if (a.rank != s->rank || a.rows > s->rows || a.cols > s->cols || (a.declared && (a.rows != s->rows || a.cols != s->cols))) {
      problems.push_back("your trace treats '" + a.name + "' as " + a.name + shape_text(a.rows, a.cols, a.rank) +
                         ", but on this machine it is " + a.name + shape_text(s->rows, s->cols, s->rank));
      continue;
    }
    a.rows = s->rows;
    a.cols = s->cols;
  }
  for (const auto& o : part.outputs)
    if (!prog.find_array(o.array)) problems.push_back("your trace never stores to " + o.array);
}

// One trial's machine options and every array of the lesson: constants, random inputs in their
// ranges (rounded to float unless the lesson is f64), then the reference's outputs and derived
// arrays. The arrays the trace uses become the machine's inputs.
sim::MachineOptions trial_setup(const Part& part, const isa::Program& prog, const ReferenceFn& ref, int trial,
                                std::uint64_t seed, ArraySet& arrays) {
  std::mt19937_64 rng(seed);
  sim::MachineOptions mo;
  mo.regs = part.regs;
  mo.f64 = part.f64;
  mo.history = false;
  mo.symbolic = trial == 0;
  mo.sram_bytes = part.sram_bytes;
  mo.l2 = part.l2.value_or(isa::L2Geometry{});  // capacity 0: no L2
  const auto derived = [&](const std::string& n) { return std::find(part.derived.begin(), part.derived.end(), n) != part.derived.end(); };
  for (const auto& s : part.arrays) {
    Matrix m{s.rows, s.cols, std::vector<double>(static_cast<std::size_t>(s.rows * s.cols), 0.0)};
    if (auto k = part.constants.find(s.name); k != part.constants.end()) {
      std::fill(m.v.begin(), m.v.end(), k->second);
      if (prog.find_array(s.name)) mo.inputs[s.name] = m.v;
    } else if (!is_output(part, s.name) && !derived(s.name)) {
      auto range = part.ranges.count(s.name) ? part.ranges.at(s.name) : std::pair<double, double>{-1.0, 1.0};
      std::uniform_real_distribution<double> dist(range.first, range.second);
      for (auto& x : m.v) {
        x = dist(rng);
        if (!part.f64) x = static_cast<double>(static_cast<float>(x));
      }
      if (prog.find_array(s.name)) mo.inputs[s.name] = m.v;
    }
    arrays[s.name] = std::move(m);
  }
  ref(arrays);
  for (const auto& d : part.derived)
    if (prog.find_array(d)) mo.inputs[d] = arrays.at(d).v;
  return mo;
}

// The counts the budgets and the report read, from a finished run.
Counts counts_of(const sim::Machine& m, const isa::Program& prog) {
  Counts k;
  const auto& c = m.counters();
  k.cycles = c.cycles;
  k.instructions = c.instructions;
  k.loads = c.count(isa::Opcode::LOAD);
  k.stores = c.count(isa::Opcode::STORE);
  k.macs = c.count(isa::Opcode::MAC) + c.count(isa::Opcode::MAC_Z);
  k.dram_reads = c.elem_reads;
  k.dram_writes = c.elem_writes;
  k.bytes_read = c.bytes_read;
  k.bytes_written = c.bytes_written;
  k.sram_peak = m.sram_peak();
  k.regs_used = prog.highest_reg + 1;
  k.hbm_bytes_read = c.bytes_read;
  k.hbm_bytes_written = c.bytes_written;
  if (m.config().l2) {
    const sim::L2Counts t = sim::TraceL2(m, *m.config().l2).total();
    k.hbm_bytes_read = t.hbm_read;
    k.hbm_bytes_written = t.hbm_written;
    k.l2_hits = t.hits;
    k.l2_misses = t.misses;
  }
  return k;
}

// Every output cell against the reference's: appends the first four wrong or unstored cells (with
// the expression the trace stored, when symbolic) and returns how many were wrong.
int check_outputs(const Part& part, const isa::Program& prog, const sim::Machine& m, const ArraySet& arrays,
                  std::vector<std::string>& problems) {
  int wrong = 0;
  for (const auto& o : part.outputs) {
    const auto& shape = *std::find_if(part.arrays.begin(), part.arrays.end(), [&](const ArrayShape& x) { return x.name == o.array; });
    auto id = *prog.find_array(o.array);
    const auto& state = m.array(id);
    const auto& decl = prog.arrays[id];
    const Matrix& want = arrays.at(o.array);
    for (std::int64_t r = 0; r < shape.rows; ++r)
      for (std::int64_t c = 0; c < shape.cols; ++c) {
        if (o.row && (r != *o.row || c != *o.col)) continue;
        auto flat = static_cast<std::size_t>(r * shape.cols + c);
        // tile_writes counts per tile; on the scalar machine a tile is an element
        std::int64_t tr = r / decl.tile_rows, tc = c / decl.tile_cols;
        auto tile = static_cast<std::size_t>(tr * decl.tile_grid_cols() + tc);
        std::string cell = cell_text(o.array, shape.rank, r, c);
        if (part.tiled()) cell += " (in tile " + cell_text(o.array, shape.rank, tr, tc) + ")";
        double expected = want.at(r, c);
        if (state.tile_writes[tile] == 0) {
          if (!part.tiled()) {
            if (wrong++ < 4) problems.push_back(cell + " is never stored (expected " + number(expected) + ")");
          } else if (r % decl.tile_rows == 0 && c % decl.tile_cols == 0) {  // once per tile, at its first cell
            if (wrong++ < 4) problems.push_back("tile " + cell_text(o.array, shape.rank, tr, tc) + " is never stored");
          }
          continue;
        }
        double got = state.values[flat];
        double tol = part.tolerance * std::max(1.0, std::fabs(expected));
        if (std::isfinite(got) && std::fabs(got - expected) <= tol) continue;
        if (std::isinf(expected) && got == expected) continue;  // a row that sees no key: L = -inf
        if (wrong++ >= 4) continue;
        std::string msg = cell + ": expected " + number(expected) + ", got " + number(got);
        if (m.symbolic()) msg += " (your trace stored " + m.value_symbol(id, static_cast<std::int64_t>(tile)) + ")";
        problems.push_back(msg);
      }
  }
  return wrong;
}

// The budgets, the time budget on the lesson's units and the lesson's own checks (first trial only).
void check_budgets(const Part& part, const isa::Program& prog, const sim::Machine& m, Counts& counts,
                   std::vector<std::string>& problems) {
  for (const auto& b : part.budgets) {
    auto got = counter_value(counts, m, b.counter);
    if (got > b.limit) problems.push_back(over_budget(b.counter, got, b.limit) + (b.why.empty() ? "" : " (" + b.why + ")"));
  }
  if (!part.units.empty()) time_trace(part, prog, counts, problems);
  for (const auto& name : part.custom_checks) {
    auto it = custom_checks().find(name);
    if (it == custom_checks().end()) problems.push_back("the lesson's check '" + name + "' is not registered");
    else it->second(m, part, problems);
  }
}

}  // namespace

Verdict check_program(const Lesson& lesson, const Part& part, isa::Program prog) {
  (void)lesson;
  Verdict v;
  v.trace = prog.name;
  auto& problems = v.problems;

  const ReferenceFn* ref = find_reference(part.reference);
  if (!ref) {
    problems.push_back("the lesson's reference '" + part.reference + "' is not registered (a lesson .cpp must call "
                       "FLASHSIM_LESSON_REFERENCE)");
    return v;
  }
  if (auto regs = register_problem(part, prog)) {
    problems.push_back(*regs);
    return v;
  }
  if (auto refused = machine_redefinition(part, prog)) {
    problems.push_back(*refused);
    v.refused = true;
    return v;
  }
  fit_arrays_to_lesson(part, prog, problems);
  if (!problems.empty()) return v;

  for (int trial = 0; trial < part.trials; ++trial) {
    const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(trial);
    ArraySet arrays;
    const sim::MachineOptions mo = trial_setup(part, prog, *ref, trial, seed, arrays);
    std::optional<sim::Machine> machine;
    try {
      machine.emplace(prog, mo);
      machine->run();
    } catch (const sim::MachineFault& e) {
      problems.push_back(std::string("the machine faults: ") + e.what());
      return v;
    } catch (const isa::AsmError& e) {
      problems.push_back(e.what());
      return v;
    }
    const sim::Machine& m = *machine;
    if (trial == 0) v.counts = counts_of(m, prog);

    const std::size_t before = problems.size();
    if (const int wrong = check_outputs(part, prog, m, arrays, problems); wrong > 0) {
      if (wrong > 4) problems.push_back("... and " + std::to_string(wrong - 4) + " more wrong output cells");
      problems.insert(problems.begin() + static_cast<std::ptrdiff_t>(before),
                      "wrong values on random inputs (trial " + std::to_string(trial + 1) + " of " +
                          std::to_string(part.trials) + ", seed " + std::to_string(seed) + "):");
      return v;
    }
    if (trial == 0) check_budgets(part, prog, m, v.counts, problems);
  }
  v.passed = problems.empty();
  return v;
}

std::string Verdict::report(const Lesson& lesson, const Part& part) const {
  std::ostringstream os;
  os << (passed ? "PASS" : "FAIL") << "  lesson " << lesson.id << " " << lesson.slug;
  if (lesson.parts.size() > 1) os << ":" << part.name;
  os << " (" << part.title << ") -- " << trace << "\n";
  if (counts.instructions > 0) {
    os << "      " << counts.cycles << " cycles, " << counts.loads << " LOADs, " << counts.macs << " MACs, "
       << counts.stores << " STOREs on " << part.regs << " registers";
    if (part.tiled())
      os << "; " << counts.bytes_read << " bytes read, " << counts.bytes_written << " written, " << counts.sram_peak
         << " bytes of SRAM at most";
    if (part.l2)
      os << "; through the L2 (" << counts.l2_hits << " sector hits, " << counts.l2_misses << " misses) "
         << counts.hbm_bytes_read << " bytes read from DRAM, " << counts.hbm_bytes_written << " written back";
    if (!part.budgets.empty()) {
      os << "; budget:";
      const char* sep = part.tiled() ? ", " : " ";  // the tile lessons' lists are long
      for (std::size_t k = 0; k < part.budgets.size(); ++k)
        os << (k ? sep : " ") << budget_label(part.budgets[k].counter) << " <= " << part.budgets[k].limit;
    }
    os << "\n";
    if (counts.timed) {
      os << "      timed on the " << part.units << " units: " << number(std::ceil(counts.timed_cycles)) << " cycles (bound: "
         << counts.bound << "); busy";
      for (std::size_t u = 0; u < isa::kUnitCount; ++u) os << (u ? ", " : " ") << isa::kUnitNames[u] << " " << percent(counts.busy[u]);
      if (std::string b = timing_budget_text(part); !b.empty()) os << "; budget: " << b;
      os << "\n";
    }
  }
  if (passed)
    os << "      every output matches the float64 reference on " << part.trials << " random inputs\n";
  for (const auto& p : problems) os << "      - " << p << "\n";
  return os.str();
}

}  // namespace flashsim::lessons

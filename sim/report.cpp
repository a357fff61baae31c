#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "sim/json_text.h"
#include "sim/l2_trace.h"
#include "sim/timing.h"

namespace flashsim::sim {

std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string register_cell(const Machine& m, int r, bool symbolic) {
  if (!m.reg_written(r)) return "";
  const Tile& t = m.reg(r);
  if (symbolic && m.symbolic()) return m.reg_symbol(r);
  if (t.rows == 1 && t.cols == 1 && !t.v.empty()) return format_value(t.v[0]);
  return std::to_string(t.rows) + "x" + std::to_string(t.cols) + " tile";
}

namespace {
// What the last LOAD or STORE did in the L2: "hit", "miss", "3/4 hit" (sectors), "dirty" (a store
// allocates its line without reading DRAM).
std::string l2_cell(const TraceL2& l2) {
  const auto& o = l2.last();
  if (!o.memory) return "";
  if (o.write) return "dirty";
  if (o.misses == 0) return "hit";
  if (o.hits == 0) return "miss";
  return std::to_string(o.hits) + "/" + std::to_string(o.hits + o.misses) + " hit";
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "0%";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}
}  // namespace

void print_step_table(Machine& m, std::ostream& os, const TableOptions& opt) {
  m.reset();
  const int regs = m.register_count();
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{"Step", "Instruction"};
  if (opt.l2) header.push_back("L2");
  for (int r = 0; r < regs; ++r) header.push_back("R" + std::to_string(r));
  const auto& p = m.program();
  std::uint64_t shown = std::min<std::uint64_t>(opt.max_rows, m.size());
  while (!m.done()) {
    std::uint64_t k = m.pc();
    m.step();
    if (opt.l2) opt.l2->sync(m);
    if (k >= shown) continue;
    std::vector<std::string> row{std::to_string(k + 1), isa::format_instruction(p, p.code[k])};
    if (opt.l2) row.push_back(l2_cell(*opt.l2));
    for (int r = 0; r < regs; ++r) row.push_back(register_cell(m, r, opt.symbolic));
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c) s += " | ";
      s += cells[c] + std::string(width[c] - cells[c].size(), ' ');
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    os << s << "\n";
  };
  line(header);
  std::string rule;
  for (std::size_t c = 0; c < header.size(); ++c) rule += (c ? "-+-" : "") + std::string(width[c], '-');
  os << rule << "\n";
  for (const auto& row : rows) line(row);
  if (m.size() > shown) os << "... " << (m.size() - shown) << " more steps not shown\n";
}

void print_cost_summary(const Machine& m, std::ostream& os, const TraceL2* l2) {
  const Counters& c = m.counters();
  using isa::OpClass;
  os << "cycles        " << c.cycles << "\n";
  os << "instructions  " << c.instructions << " (";
  bool first = true;
  for (const auto& row : isa::kInstructionTable) {
    auto n = c.count(row.opcode);
    if (!n) continue;
    os << (first ? "" : ", ") << row.mnemonic << " " << n;
    first = false;
  }
  os << ")\n";
  os << "LOADs " << c.of_class(OpClass::Load) << ", STOREs " << c.of_class(OpClass::Store) << ", MACs "
     << c.of_class(OpClass::Mac) << ", other ops " << c.of_class(OpClass::Alu) << "\n";
  os << "DRAM reads    " << c.elem_reads << " elements (" << c.bytes_read << " bytes)\n";
  os << "DRAM writes   " << c.elem_writes << " elements (" << c.bytes_written << " bytes)\n";
  if (l2) {
    const L2Counts t = l2->total();
    const auto& g = l2->config();
    os << "L2            " << g.capacity_bytes << " bytes, " << g.line_bytes << "-byte lines of " << g.sector_bytes
       << "-byte sectors: " << t.hits << " sector hits, " << t.misses << " misses (" << percent(t.hits, t.hits + t.misses)
       << " hit)\n";
    os << "HBM reads     " << t.hbm_read << " bytes (" << percent(t.hbm_read, c.bytes_read) << " of the bytes read)\n";
    os << "HBM writes    " << t.hbm_written << " bytes (dirty lines written back"
       << (l2->flushed() ? ", the last at the end" : std::string(", ") + std::to_string(l2->dirty_bytes()) + " bytes still dirty")
       << ")\n";
  }
  os << "registers     " << m.register_count() << " (" << m.register_count_source() << ")\n";
  if (m.config().sram_bytes || m.sram_peak() > 0)
    os << "SRAM peak     " << m.sram_peak() << " bytes"
       << (m.config().sram_bytes ? " of " + std::to_string(*m.config().sram_bytes) : std::string()) << "\n";
}

void print_outputs(const Machine& m, std::ostream& os, std::size_t max_values) {
  const auto& p = m.program();
  for (std::uint32_t a = 0; a < p.arrays.size(); ++a) {
    if (!m.is_output(a)) continue;
    const auto& vals = m.array(a).values;
    os << p.arrays[a].name << " =";
    for (std::size_t i = 0; i < std::min(vals.size(), max_values); ++i) os << " " << format_value(vals[i]);
    if (vals.size() > max_values) os << " ... (" << vals.size() << " values)";
    os << "\n";
  }
}

namespace {
std::string json_number(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";  // JSON has no NaN or infinity
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
}  // namespace

void print_timing_summary(const TimingResult& t, const std::string& preset, std::ostream& os) {
  auto fixed = [](double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return std::string(buf);
  };
  os << "\ntime model    .units " << preset << ", " << t.streams.size() << (t.streams.size() == 1 ? " stream" : " streams")
     << " (";
  for (std::size_t s = 0; s < t.streams.size(); ++s) os << (s ? ", " : "") << t.streams[s];
  os << ")\n";
  os << "predicted     " << fixed(t.cycles, 0) << " cycles\n";
  os << "bound         " << t.bound << "\n";
  os << "unit          busy cycles    busy\n";
  for (std::size_t u = 0; u < isa::kUnitCount; ++u) {
    std::string name(isa::kUnitNames[u]);
    name.resize(14, ' ');
    std::string busy = fixed(t.units[u].busy_cycles, 0);
    if (busy.size() < 11) busy.insert(0, 11 - busy.size(), ' ');
    std::string pct = fixed(100 * t.units[u].busy_fraction, 1);
    if (pct.size() < 6) pct.insert(0, 6 - pct.size(), ' ');
    os << name << busy << "  " << pct << " %\n";
  }
}

void print_json(const Machine& m, std::ostream& os, const TraceL2* l2, const TimingResult* timing) {
  const Counters& c = m.counters();
  const auto& p = m.program();
  os << "{\"program\":" << json_string(p.name) << ",\"cycles\":" << c.cycles << ",\"instructions\":" << c.instructions
     << ",\"counts\":{";
  bool first = true;
  for (const auto& row : isa::kInstructionTable) {
    os << (first ? "" : ",") << json_string(std::string(row.mnemonic)) << ":" << c.count(row.opcode);
    first = false;
  }
  os << "},\"dram\":{\"reads\":" << c.elem_reads << ",\"writes\":" << c.elem_writes << ",\"bytes_read\":" << c.bytes_read
     << ",\"bytes_written\":" << c.bytes_written << "},\"registers\":" << m.register_count()
     << ",\"register_source\":" << json_string(m.register_count_source()) << ",\"sram_peak_bytes\":" << m.sram_peak()
     << ",";
  if (l2) {
    const L2Counts t = l2->total();
    os << "\"l2\":{\"capacity_bytes\":" << l2->config().capacity_bytes << ",\"line_bytes\":" << l2->config().line_bytes
       << ",\"sector_bytes\":" << l2->config().sector_bytes << ",\"hits\":" << t.hits << ",\"misses\":" << t.misses
       << ",\"hbm_bytes_read\":" << t.hbm_read << ",\"hbm_bytes_written\":" << t.hbm_written << "},";
  }
  os << "\"arrays\":{";
  for (std::uint32_t a = 0; a < p.arrays.size(); ++a) {
    const auto& d = p.arrays[a];
    const auto& s = m.array(a);
    os << (a ? "," : "") << json_string(d.name) << ":{\"shape\":[" << d.rows;
    if (d.rank == 2) os << "," << d.cols;
    os << "],\"tile\":[" << d.tile_rows;
    if (d.rank == 2) os << "," << d.tile_cols;
    os << "],\"input\":" << (m.is_input(a) ? "true" : "false") << ",\"output\":" << (m.is_output(a) ? "true" : "false")
       << ",\"bytes_read\":" << s.bytes_read << ",\"bytes_written\":" << s.bytes_written;
    if (l2) {
      const L2Counts& t = l2->array(a);
      os << ",\"hbm_bytes_read\":" << t.hbm_read << ",\"hbm_bytes_written\":" << t.hbm_written << ",\"l2_hits\":" << t.hits
         << ",\"l2_misses\":" << t.misses;
    }
    os << ",\"values\":[";
    for (std::size_t i = 0; i < s.values.size(); ++i) os << (i ? "," : "") << json_number(s.values[i]);
    os << "]}";
  }
  os << "}";
  if (timing) {
    os << ",\"timing\":{\"cycles\":" << json_number(timing->cycles) << ",\"bound\":" << json_string(timing->bound)
       << ",\"units\":{";
    for (std::size_t u = 0; u < isa::kUnitCount; ++u)
      os << (u ? "," : "") << json_string(std::string(isa::kUnitNames[u])) << ":{\"busy_cycles\":"
         << json_number(timing->units[u].busy_cycles) << ",\"busy_fraction\":" << json_number(timing->units[u].busy_fraction)
         << "}";
    os << "},\"streams\":[";
    for (std::size_t s = 0; s < timing->streams.size(); ++s) os << (s ? "," : "") << json_string(timing->streams[s]);
    os << "]}";
  }
  os << "}\n";
}

}  // namespace flashsim::sim

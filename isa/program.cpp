#include "isa/program.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace flashsim::isa {

std::optional<std::uint32_t> Program::find_array(const std::string& n) const {
  for (std::uint32_t i = 0; i < arrays.size(); ++i)
    if (arrays[i].name == n) return i;
  return std::nullopt;
}

bool Program::is_scalar() const {
  for (const auto& a : arrays)
    if (a.tile_rows != 1 || a.tile_cols != 1) return false;
  for (const auto& in : code)
    if (in.any_transposed()) return false;
  return true;
}

void Instruction::bad_operand(int k, const Operand& o) const {
  const OpInfo& i = info(op);
  const std::string which = "operand " + std::to_string(k + 1) + " of " + std::string(i.mnemonic);
  if (k < 0 || k >= i.operand_count) throw std::invalid_argument(std::string(i.mnemonic) + " has no operand " + std::to_string(k + 1));
  if (k != memory_slot(op)) throw std::invalid_argument(which + " is a register");
  if (o.kind != Operand::Kind::Mem) throw std::invalid_argument(which + " is a memory location");
  throw std::out_of_range("tile index " + std::to_string(o.row < 0 || o.row > 0xffffffffLL ? o.row : o.col) +
                          " does not fit an instruction record (0..2^32-1)");
}

void SourceMap::start_run(std::uint32_t site) {
  if (!runs_.empty()) {
    Run& r = runs_.back();
    const std::uint64_t len = count_ - r.first;
    if (r.period == 0 && site == r.site0 && len <= 0xffffffffu) {  // wrapped: a loop body repeats
      r.period = static_cast<std::uint32_t>(len);
      ++count_;
      return;
    }
  }
  runs_.push_back(Run{count_, site, 0});
  ++count_;
}

SourceLoc SourceMap::operator[](std::uint64_t i) const {
  if (i >= count_) return {};
  auto it = std::upper_bound(runs_.begin(), runs_.end(), i, [](std::uint64_t x, const Run& r) { return x < r.first; });
  const Run& r = *(it - 1);
  const std::uint64_t off = i - r.first;
  return sites_[r.site0 + (r.period ? off % r.period : off)];
}

std::string format_operand(const Program& p, const Operand& o) {
  switch (o.kind) {
    case Operand::Kind::Reg:
      return "R" + std::to_string(o.reg) + (o.transposed ? "^T" : "");
    case Operand::Kind::Mem: {
      const ArrayDecl& a = p.arrays.at(o.array);
      std::string s = a.name + "[" + std::to_string(o.row) + "]";
      if (a.rank == 2) s += "[" + std::to_string(o.col) + "]";
      return s;
    }
    case Operand::Kind::None: break;
  }
  return "?";
}

std::string format_instruction(const Program& p, const Instruction& in) {
  const OpInfo& info = isa::info(in.op);
  std::string s(info.mnemonic);
  for (int i = 0; i < info.operand_count; ++i) {
    s += i == 0 ? " " : ", ";
    s += format_operand(p, in.operand(i));
  }
  return s;
}

static std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string l2_geometry_error(const L2Geometry& g) {
  auto pow2 = [](std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; };
  if (!pow2(g.line_bytes)) return "the L2 line size must be a power of two, got " + std::to_string(g.line_bytes);
  if (!pow2(g.sector_bytes) || g.sector_bytes > g.line_bytes || g.line_bytes / g.sector_bytes > 32)
    return "the L2 sector size must be a power of two that splits a line into 1 to 32 sectors, got " +
           std::to_string(g.sector_bytes);
  if (g.capacity_bytes != 0 && g.capacity_bytes < g.line_bytes)
    return "an L2 of " + std::to_string(g.capacity_bytes) + " bytes holds no " + std::to_string(g.line_bytes) + "-byte line";
  if (g.capacity_bytes / g.line_bytes >= (std::uint64_t{1} << 31)) return "the L2 is too large to model (at most 2^31 lines)";
  if (g.capacity_bytes != 0 && g.ways > g.capacity_bytes / g.line_bytes)
    return "an L2 of " + std::to_string(g.capacity_bytes / g.line_bytes) + " lines cannot have " + std::to_string(g.ways) +
           " ways";
  if (g.dirty_ways > (g.ways ? g.ways : g.capacity_bytes / g.line_bytes))
    return "the L2's dirty-line limit (" + std::to_string(g.dirty_ways) + ") exceeds the lines of a set";
  if (g.dirty_group < 1) return "the L2's dirty-line group must hold at least one set";
  if (g.copy_rank > (g.ways ? g.ways : g.capacity_bytes / g.line_bytes))
    return "the L2's copy rank (" + std::to_string(g.copy_rank) + ") exceeds the lines of a set";
  return "";
}

std::string disassemble(const Program& p) {
  std::ostringstream os;
  const MachineConfig& c = p.config;
  if (c.regs) os << ".regs " << *c.regs << "\n";
  if (c.elem_bytes != 4) os << ".elem " << c.elem_bytes << "\n";
  if (c.f64) os << ".dtype f64\n";
  if (c.sram_bytes) os << ".sram " << *c.sram_bytes << "\n";
  if (c.causal_diag) os << ".causal " << *c.causal_diag << "\n";
  if (c.l2) os << ".l2 " << c.l2->capacity_bytes << " line=" << c.l2->line_bytes << " sector=" << c.l2->sector_bytes << "\n";
  for (std::size_t i = 0; i < kOpcodeCount; ++i)
    if (c.cycles[i] != kInstructionTable[i].default_cycles)
      os << ".cost " << kInstructionTable[i].mnemonic << "=" << c.cycles[i] << "\n";
  for (const ArrayDecl& a : p.arrays) {
    // Declaring every array keeps shapes identical when the text is assembled again.
    os << ".array " << a.name << "[" << a.rows << "]";
    if (a.rank == 2) os << "[" << a.cols << "]";
    if (a.tile_rows != 1 || a.tile_cols != 1) {
      os << " tile[" << a.tile_rows << "]";
      if (a.rank == 2) os << "[" << a.tile_cols << "]";
    }
    if (a.elem_bytes) os << " elem " << a.elem_bytes;
    if (!a.declared) os << "  # inferred from use";
    os << "\n";
    if (a.fill) os << ".fill " << a.name << " " << format_number(*a.fill) << "\n";
    if (!a.input.empty()) {
      os << ".input " << a.name;
      for (std::size_t k = 0; k < a.input.size(); ++k) os << (k ? ", " : " ") << format_number(a.input[k]);
      os << "\n";
    }
  }
  const TimingSpec& t = p.timing;
  if (t.units) {
    os << ".units " << t.units->preset << "\n";
    const GpuPreset* preset = find_gpu_preset(t.units->preset);
    for (std::size_t u = 0; u < kUnitCount; ++u)
      if (!preset || !(preset->units[u] == t.units->units[u]))
        os << ".unit " << kUnitNames[u] << " rate=" << format_number(t.units->units[u].rate)
           << " latency=" << format_number(t.units->units[u].latency) << "\n";
  }
  for (const BarrierDecl& b : t.barriers) os << ".barrier " << b.name << " count=" << b.count << "\n";
  // Streams and barriers between the instructions, where the text had them.
  std::size_t next_sync = 0;
  int shown = t.streams.empty() ? 0 : -1;  // the stream the text is in so far
  auto in_stream = [&](std::uint16_t s) {
    if (s != shown) os << ".stream " << t.streams[s] << "\n";
    shown = s;
  };
  auto emit_syncs = [&](std::uint64_t pc) {
    for (; next_sync < t.syncs.size() && t.syncs[next_sync].pc == pc; ++next_sync) {
      const SyncPoint& sp = t.syncs[next_sync];
      in_stream(sp.stream);
      if (sp.reg >= 0) os << ".wait_for R" << sp.reg << "\n";
      else os << (sp.wait ? ".wait " : ".arrive ") << t.barriers[sp.barrier].name << "\n";
    }
  };
  for (std::uint64_t pc = 0; pc < p.code.size(); ++pc) {
    emit_syncs(pc);
    in_stream(t.stream(pc));
    os << format_instruction(p, p.code[pc]) << "\n";
  }
  emit_syncs(p.code.size());
  return os.str();
}

bool same_program(const Program& a, const Program& b) {
  if (a.code != b.code || a.config != b.config || a.arrays.size() != b.arrays.size()) return false;
  if (!(a.timing == b.timing)) return false;
  for (std::size_t i = 0; i < a.arrays.size(); ++i) {
    ArrayDecl x = a.arrays[i], y = b.arrays[i];
    x.declared = y.declared = true;  // the disassembler declares everything
    // NaN inputs compare unequal; compare their text instead.
    if (x.input.size() != y.input.size()) return false;
    for (std::size_t k = 0; k < x.input.size(); ++k)
      if (format_number(x.input[k]) != format_number(y.input[k])) return false;
    x.input.clear();
    y.input.clear();
    if (x.fill.has_value() != y.fill.has_value()) return false;
    if (x.fill && format_number(*x.fill) != format_number(*y.fill)) return false;
    x.fill.reset();
    y.fill.reset();
    if (!(x == y)) return false;
  }
  return true;
}

}  // namespace flashsim::isa

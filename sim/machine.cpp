#include "sim/machine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "isa/assembler.h"

namespace flashsim::sim {

using isa::Opcode;
using isa::Operand;

MachineFault::MachineFault(std::uint64_t s, std::uint32_t l, std::string m)
    // step 0: the inputs or the arrays do not fit before anything runs (bad input, not a fault)
    : std::runtime_error(s == 0 ? "error: " + m : "step " + std::to_string(s) + " (line " + std::to_string(l) + "): error: " + m),
      step(s), line(l), message(std::move(m)) {}

std::uint64_t Counters::of_class(isa::OpClass c) const {
  std::uint64_t n = 0;
  for (const auto& row : isa::kInstructionTable)
    if (row.op_class == c) n += per_op[static_cast<std::size_t>(row.opcode)];
  return n;
}

namespace {

// splitmix64: a small, well-mixed generator so inputs are reproducible from a seed.
struct SplitMix {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0; }
};

std::string index_symbol(const isa::ArrayDecl& a, std::int64_t tr, std::int64_t tc) {
  bool small = tr < 10 && tc < 10;
  if (a.tile_rows == 1 && a.tile_cols == 1) {
    if (a.rank == 1) return a.name + std::to_string(tr);
    if (small) return a.name + std::to_string(tr) + std::to_string(tc);
    return a.name + "[" + std::to_string(tr) + "][" + std::to_string(tc) + "]";
  }
  std::string s = a.name + "[" + std::to_string(tr) + "]";
  if (a.rank == 2 && a.tile_grid_cols() > 1) s += "[" + std::to_string(tc) + "]";
  return s;
}

// Parenthesise a sub-expression that binds looser than a product.
std::string tight(const std::string& s) {
  int depth = 0;
  for (char ch : s) {
    if (ch == '(') ++depth;
    else if (ch == ')') --depth;
    else if (depth == 0 && (ch == '+' || ch == '-' || ch == ' ')) return "(" + s + ")";
  }
  return s;
}

constexpr std::size_t kMaxSymbol = 72;

}  // namespace

Machine::Machine(isa::Program program, MachineOptions options)
    : prog_(std::move(program)), opts_(std::move(options)), config_(prog_.config) {
  if (opts_.f64) config_.f64 = *opts_.f64;
  if (opts_.seed) config_.seed = *opts_.seed;
  if (opts_.sram_bytes) config_.sram_bytes = *opts_.sram_bytes;
  if (opts_.l2) config_.l2 = opts_.l2->capacity_bytes ? opts_.l2 : std::nullopt;  // --l2 0: no L2
  for (auto [op, c] : opts_.costs) config_.cycles[static_cast<std::size_t>(op)] = c;
  if (opts_.regs) {
    regs_ = *opts_.regs;
    regs_source_ = "--regs";
  } else if (prog_.config.regs) {
    regs_ = *prog_.config.regs;
    regs_source_ = ".regs directive";
  } else {
    regs_ = prog_.highest_reg + 1;
    regs_source_ = "inferred: highest register used is R" + std::to_string(prog_.highest_reg);
  }
  if (regs_ < 1) regs_ = 1;
  check_static();  // also sets scalar_ and uses_mask_
  if (scalar_ && opts_.compute_values && !opts_.symbolic) {
    decode_fast();
    scalar_undo_ = true;
  }
  init_memory();
  reset();
}

std::uint64_t Machine::element_bytes(std::uint32_t array) const {
  int b = prog_.arrays[array].elem_bytes;
  return static_cast<std::uint64_t>(b ? b : config_.elem_bytes);
}

void Machine::check_static() {
  // One pass over the registers of the trace (count-only traffic runs build a machine per
  // piece of a long schedule, so this pass is on their hot path): register range, whether a
  // register is read before it is written, and the machine kind (is_scalar(), MASK in use).
  bool unit_tiles = true;
  for (const auto& d : prog_.arrays) unit_tiles = unit_tiles && d.tile_rows == 1 && d.tile_cols == 1;
  std::vector<std::uint8_t> written(static_cast<std::size_t>(regs_), 0);
  // Locals rather than members, so the loop keeps them in registers.
  bool read_before_write = false, mask = false, transposed = false;
  const std::uint32_t regs = static_cast<std::uint32_t>(regs_);
  const std::size_t n = prog_.code.size();
  for (std::size_t i = 0; i < n; ++i) {
    const isa::Instruction& in = prog_.code[i];
    const auto& info = isa::info(in.op);
    mask |= in.op == Opcode::MASK;
    transposed = transposed || in.any_transposed();
    int dst = -1;
    for (int k = 0; k < info.operand_count; ++k) {
      const isa::OperandKind kind = info.operands[k];
      if (kind != isa::OperandKind::SrcReg && kind != isa::OperandKind::DstReg) continue;
      const std::uint16_t r = in.reg(k);
      // Register range is a property of the text, so it is reported with the text's location.
      if (r >= regs) {
        const isa::SourceLoc loc = prog_.loc(i);
        throw isa::AsmError(prog_.name, loc.line, loc.col,
                            "R" + std::to_string(r) + " is outside the machine: it has " + std::to_string(regs_) +
                                " registers (" + regs_source_ + ")");
      }
      if (kind == isa::OperandKind::SrcReg) read_before_write |= !written[r];
      else dst = r;
    }
    if (dst >= 0) written[static_cast<std::size_t>(dst)] = 1;
  }
  static_ok_ = !read_before_write;
  uses_mask_ = mask;
  scalar_ = unit_tiles && !transposed;  // Program::is_scalar()
}

void Machine::find_inputs_outputs() const {
  // Inputs: arrays with a tile loaded before any store to it; outputs: arrays stored to.
  if (io_found_) return;
  const std::size_t narrays = prog_.arrays.size();
  std::vector<std::int64_t> grid_cols(narrays);
  std::vector<std::size_t> first_tile(narrays + 1, 0);
  for (std::size_t a = 0; a < narrays; ++a) {
    grid_cols[a] = prog_.arrays[a].tile_grid_cols();
    first_tile[a + 1] = first_tile[a] + static_cast<std::size_t>(prog_.arrays[a].tile_count());
  }
  std::vector<std::uint8_t> stored(first_tile.back(), 0);
  std::vector<std::uint8_t> input(narrays, 0), output(narrays, 0);
  for (const auto& in : prog_.code) {
    if (in.op != Opcode::LOAD && in.op != Opcode::STORE) continue;  // the only opcodes with memory operands
    const std::uint32_t a = in.array();
    auto t = first_tile[a] + static_cast<std::size_t>(std::int64_t{in.row()} * grid_cols[a] + in.col());
    if (in.op == Opcode::LOAD) {
      input[a] |= !stored[t];
    } else {
      stored[t] = 1;
      output[a] = 1;
    }
  }
  is_input_.assign(input.begin(), input.end());
  is_output_.assign(output.begin(), output.end());
  io_found_ = true;
}

void Machine::init_memory() {
  for (const auto& [name, vals] : opts_.inputs) {
    auto id = prog_.find_array(name);
    if (!id) throw MachineFault(0, 0, "--input names '" + name + "', which the program never uses");
    if (static_cast<std::int64_t>(vals.size()) != prog_.arrays[*id].elements())
      throw MachineFault(0, 0, "--input " + name + " gives " + std::to_string(vals.size()) +
                                   " values; the array has " + std::to_string(prog_.arrays[*id].elements()));
  }
  std::uint64_t total = 0;
  for (const auto& a : prog_.arrays)
    total += static_cast<std::uint64_t>(opts_.compute_values ? a.elements() : a.tile_count());
  if (total > opts_.max_dram_elements)
    throw MachineFault(0, 0, "the arrays need " + std::to_string(total) + (opts_.compute_values ? " elements" : " tiles") +
                                 "; the simulated DRAM holds at most " + std::to_string(opts_.max_dram_elements));
  SplitMix rng{config_.seed};
  initial_arrays_.assign(prog_.arrays.size(), {});
  for (std::size_t i = 0; i < prog_.arrays.size(); ++i) {
    const auto& a = prog_.arrays[i];
    ArrayState& s = initial_arrays_[i];
    auto n = static_cast<std::size_t>(a.elements());
    if (auto it = opts_.inputs.find(a.name); it != opts_.inputs.end()) s.values = it->second;
    else if (!a.input.empty()) s.values = a.input;
    else if (a.fill) s.values.assign(n, *a.fill);
    else if (opts_.compute_values) {
      s.values.resize(n);
      for (auto& v : s.values) v = rng.uniform();
    }
    if (opts_.compute_values && !config_.f64)
      for (auto& v : s.values) v = static_cast<double>(static_cast<float>(v));
    auto tiles = static_cast<std::size_t>(a.tile_count());
    s.tile_reads.assign(tiles, 0);
    s.tile_writes.assign(tiles, 0);
    if (opts_.symbolic) {
      s.symbols.resize(tiles);
      for (std::int64_t t = 0; t < a.tile_count(); ++t)
        s.symbols[static_cast<std::size_t>(t)] = index_symbol(a, t / a.tile_grid_cols(), t % a.tile_grid_cols());
    }
    if (!opts_.compute_values) s.values.clear();
  }
}

void Machine::reset() {
  pc_ = 0;
  counters_ = {};
  regs_state_.assign(static_cast<std::size_t>(regs_), Tile{});
  reg_written_.assign(static_cast<std::size_t>(regs_), 0);
  reg_sym_.assign(static_cast<std::size_t>(opts_.symbolic ? regs_ : 0), std::string());
  arrays_ = initial_arrays_;
  sram_in_use_ = sram_peak_ = 0;
  undo_.clear();
  value_pool_.clear();
  f32_pool_.clear();
  meta_pool_.clear();
  sym_pool_.clear();
  sram_hist_.clear();
}

std::string Machine::value_symbol(std::uint32_t array, std::int64_t tile) const {
  const auto& s = arrays_[array].symbols;
  if (tile >= 0 && static_cast<std::size_t>(tile) < s.size()) return s[static_cast<std::size_t>(tile)];
  const auto& a = prog_.arrays[array];
  return index_symbol(a, tile / a.tile_grid_cols(), tile % a.tile_grid_cols());
}

std::uint64_t Machine::history_bytes() const {
  return undo_.size() * sizeof(Undo) + value_pool_.size() * sizeof(double) + f32_pool_.size() * sizeof(float) +
         meta_pool_.size() * sizeof(Tile) +
         sram_hist_.size() * 16;
}

void Machine::fault(const std::string& msg) const {
  std::uint32_t line = pc_ < prog_.code.size() ? prog_.loc(pc_).line : 0;
  throw MachineFault(pc_ + 1, line, msg);
}

std::int64_t Machine::flat_tile(const Operand& o) const {
  return o.row * prog_.arrays[o.array].tile_grid_cols() + o.col;
}

void Machine::tile_extent(std::uint32_t array, std::int64_t tr, std::int64_t tc, std::int32_t& vr,
                          std::int32_t& vc) const {
  const auto& a = prog_.arrays[array];
  vr = static_cast<std::int32_t>(std::min(a.tile_rows, a.rows - tr * a.tile_rows));
  vc = static_cast<std::int32_t>(std::min(a.tile_cols, a.cols - tc * a.tile_cols));
}

void Machine::count_access(const isa::Instruction& in, int sign, bool notify) {
  auto op = static_cast<std::size_t>(in.op);
  auto add = [sign](std::uint64_t& c, std::uint64_t v) { c = sign > 0 ? c + v : c - v; };
  add(counters_.cycles, config_.cycles[op]);
  add(counters_.instructions, 1);
  add(counters_.per_op[op], 1);
  if (in.op != Opcode::LOAD && in.op != Opcode::STORE) return;
  const Operand m = in.operand(in.op == Opcode::LOAD ? 0 : 1);
  std::int32_t vr, vc;
  tile_extent(m.array, m.row, m.col, vr, vc);
  auto elems = static_cast<std::uint64_t>(vr) * static_cast<std::uint64_t>(vc);
  auto bytes = elems * element_bytes(m.array);
  ArrayState& a = arrays_[m.array];
  auto t = static_cast<std::size_t>(flat_tile(m));
  if (notify && sign > 0 && opts_.on_dram_access) {
    const auto& decl = prog_.arrays[m.array];
    opts_.on_dram_access(pc_, DramAccess{m.array, m.row * decl.tile_rows, m.col * decl.tile_cols, vr, vc,
                                         in.op == Opcode::STORE});
  }
  if (in.op == Opcode::LOAD) {
    add(counters_.elem_reads, elems);
    add(counters_.bytes_read, bytes);
    add(a.elem_reads, elems);
    add(a.bytes_read, bytes);
    a.tile_reads[t] = static_cast<std::uint32_t>(a.tile_reads[t] + sign);
  } else {
    add(counters_.elem_writes, elems);
    add(counters_.bytes_written, bytes);
    add(a.elem_writes, elems);
    add(a.bytes_written, bytes);
    a.tile_writes[t] = static_cast<std::uint32_t>(a.tile_writes[t] + sign);
  }
}

void Machine::record_reg_undo(int r) {
  const Tile& t = regs_state_[static_cast<std::size_t>(r)];
  if (scalar_undo_) {
    push_old(reg_written_[static_cast<std::size_t>(r)] ? t.v[0] : 0.0);
    return;
  }
  Undo u{value_pool_.size(), reg_written_[static_cast<std::size_t>(r)] != 0, 0, 0};
  value_pool_.insert(value_pool_.end(), t.v.begin(), t.v.end());
  if (!scalar_) {
    u.has_meta = 1;
    Tile shape = t;
    shape.v.clear();
    meta_pool_.push_back(std::move(shape));
  }
  if (opts_.symbolic) {
    u.has_sym = 1;
    sym_pool_.push_back(reg_sym_[static_cast<std::size_t>(r)]);
  }
  undo_.push_back(u);
}

void Machine::record_mem_undo(std::uint32_t array, std::int64_t tile) {
  const auto& d = prog_.arrays[array];
  if (scalar_undo_) {  // 1x1 tiles: the tile index is the element index
    push_old(arrays_[array].values[static_cast<std::size_t>(tile)]);
    return;
  }
  Undo u{value_pool_.size(), 0, 0, 0};
  if (opts_.compute_values) {
    std::int64_t tr = tile / d.tile_grid_cols(), tc = tile % d.tile_grid_cols();
    std::int32_t vr, vc;
    tile_extent(array, tr, tc, vr, vc);
    const auto& vals = arrays_[array].values;
    for (std::int32_t i = 0; i < vr; ++i) {
      auto base = static_cast<std::size_t>((tr * d.tile_rows + i) * d.cols + tc * d.tile_cols);
      value_pool_.insert(value_pool_.end(), vals.begin() + static_cast<std::ptrdiff_t>(base),
                         vals.begin() + static_cast<std::ptrdiff_t>(base + static_cast<std::size_t>(vc)));
    }
  }
  if (opts_.symbolic) {
    u.has_sym = 1;
    sym_pool_.push_back(arrays_[array].symbols[static_cast<std::size_t>(tile)]);
  }
  undo_.push_back(u);
}

Operand Machine::overwritten(const isa::Instruction& in) const {
  const auto& info = isa::info(in.op);
  for (int k = 0; k < info.operand_count; ++k)
    if (info.operands[k] == isa::OperandKind::DstReg || info.operands[k] == isa::OperandKind::MemDst)
      return in.operand(k);
  return in.operand(0);  // every opcode in the table has a destination
}

std::size_t Machine::history_steps() const {
  if (!scalar_undo_) return undo_.size();
  return config_.f64 ? value_pool_.size() : f32_pool_.size();
}

void Machine::push_old(double v) {
  if (config_.f64) value_pool_.push_back(v);
  else f32_pool_.push_back(static_cast<float>(v));  // exact: the f32 machine holds only floats
}

bool Machine::step_back() {
  if (pc_ == 0 || history_steps() == 0) return false;
  if (scalar_undo_) {
    const isa::Instruction& in = prog_.code[pc_ - 1];
    double old;
    if (config_.f64) {
      old = value_pool_.back();
      value_pool_.pop_back();
    } else {
      old = static_cast<double>(f32_pool_.back());
      f32_pool_.pop_back();
    }
    const Operand target = overwritten(in);
    if (target.kind == Operand::Kind::Mem) {
      arrays_[target.array].values[static_cast<std::size_t>(flat_tile(target))] = old;
    } else {
      // The trace is straight-line: the register held a value iff its first write came earlier.
      const std::uint16_t r = target.reg;
      const bool was = first_write_[r] < pc_ - 1;
      reg_written_[r] = was;
      if (was) regs_state_[r].v.assign(1, old);
      else regs_state_[r] = Tile{};
    }
    --pc_;
    count_access(in, -1);
    return true;
  }
  Undo u = undo_.back();
  undo_.pop_back();
  const isa::Instruction& in = prog_.code[pc_ - 1];
  const Operand target = overwritten(in);
  if (target.kind == Operand::Kind::Mem) {
    std::uint32_t array = target.array;
    const auto& d = prog_.arrays[array];
    std::int64_t tr = target.row, tc = target.col;
    std::int32_t vr, vc;
    tile_extent(array, tr, tc, vr, vc);
    auto& vals = arrays_[array].values;
    if (opts_.compute_values) {
      std::size_t p = u.pool;
      for (std::int32_t i = 0; i < vr; ++i) {
        auto base = static_cast<std::size_t>((tr * d.tile_rows + i) * d.cols + tc * d.tile_cols);
        std::copy_n(value_pool_.begin() + static_cast<std::ptrdiff_t>(p), vc, vals.begin() + static_cast<std::ptrdiff_t>(base));
        p += static_cast<std::size_t>(vc);
      }
    }
    if (u.has_sym) {
      arrays_[array].symbols[static_cast<std::size_t>(flat_tile(target))] = std::move(sym_pool_.back());
      sym_pool_.pop_back();
    }
  } else {
    const std::uint16_t r = target.reg;
    Tile& t = regs_state_[r];
    if (u.has_meta) {
      std::vector<double> keep = std::move(t.v);
      t = std::move(meta_pool_.back());
      meta_pool_.pop_back();
      t.v = std::move(keep);
    }
    t.v.assign(value_pool_.begin() + static_cast<std::ptrdiff_t>(u.pool), value_pool_.end());
    reg_written_[r] = static_cast<std::uint8_t>(u.was_written);
    if (!reg_written_[r]) t = Tile{};
    if (u.has_sym) {
      reg_sym_[r] = std::move(sym_pool_.back());
      sym_pool_.pop_back();
    }
  }
  value_pool_.resize(u.pool);
  if (!scalar_ && !sram_hist_.empty()) {
    std::tie(sram_in_use_, sram_peak_) = sram_hist_.back();
    sram_hist_.pop_back();
  }
  --pc_;
  count_access(in, -1);
  return true;
}

void Machine::run_to(std::uint64_t target) {
  target = std::min<std::uint64_t>(target, prog_.code.size());
  if (target < pc_ && opts_.history) {
    while (pc_ > target) step_back();
    return;
  }
  if (target < pc_) reset();
  while (pc_ < target) step();
}

bool Machine::run_to_breakpoint(const std::set<std::uint32_t>& lines) {
  if (done()) return false;
  step();
  while (!done()) {
    if (lines.count(prog_.loc(pc_).line)) return true;
    step();
  }
  return false;
}

void Machine::run() {
  if (!opts_.compute_values && !opts_.symbolic && !opts_.history) {
    run_count_only();
    return;
  }
  if (scalar_ && fast_ok_ && static_ok_ && !opts_.symbolic && opts_.compute_values && !uses_mask_) {
    if (config_.f64) {
      if (opts_.history) run_scalar_fast<true, double>();
      else run_scalar_fast<false, double>();
    } else {
      // binary32 +, -, *, / computed in binary32 equal the binary64 result rounded to
      // binary32 (53 >= 2 * 24 + 2), so the f32 machine can keep float registers.
      if (opts_.history) run_scalar_fast<true, float>();
      else run_scalar_fast<false, float>();
    }
    return;
  }
  while (!done()) step();
}

void Machine::set_symbol(int r, std::string s) {
  if (s.size() > kMaxSymbol) s = "v" + std::to_string(pc_ + 1);  // "the value computed at step N"
  reg_sym_[static_cast<std::size_t>(r)] = std::move(s);
}

void Machine::update_sram(int r, std::uint64_t old_bytes) {
  const Tile& t = regs_state_[static_cast<std::size_t>(r)];
  std::uint64_t now = static_cast<std::uint64_t>(t.rows) * static_cast<std::uint64_t>(t.cols) *
                      static_cast<std::uint64_t>(config_.elem_bytes);
  sram_in_use_ = sram_in_use_ - old_bytes + now;
  sram_peak_ = std::max(sram_peak_, sram_in_use_);
  if (config_.sram_bytes && sram_in_use_ > *config_.sram_bytes)
    fault("the registers now hold " + std::to_string(sram_in_use_) + " bytes, more than the SRAM's " +
          std::to_string(*config_.sram_bytes) + " bytes (R" + std::to_string(r) + " became a " +
          std::to_string(t.rows) + "x" + std::to_string(t.cols) + " tile)");
}

void Machine::step() {
  if (done()) return;
  const isa::Instruction& in = prog_.code[pc_];
  const bool keep_sram = !scalar_ && opts_.history;  // only step_back reads sram_hist_
  if (keep_sram) sram_hist_.emplace_back(sram_in_use_, sram_peak_);
  std::size_t undo_mark = history_steps();
  try {
    execute(in);
  } catch (...) {
    // Leave the machine as it was before the faulting step.
    if (history_steps() > undo_mark) {
      ++pc_;
      count_access(in, +1, false);  // only so that step_back can undo it: nobody is told
      step_back();
    } else if (keep_sram) {
      sram_hist_.pop_back();
    }
    throw;
  }
  if (!opts_.history) {
    undo_.clear();
    value_pool_.clear();
    f32_pool_.clear();
    meta_pool_.clear();
    sym_pool_.clear();
    sram_hist_.clear();
  }
  count_access(in, +1);
  ++pc_;
}


namespace {

// A register read, possibly transposed.
struct View {
  const Tile* t;
  bool tr;
  std::int32_t rows() const { return tr ? t->cols : t->rows; }
  std::int32_t cols() const { return tr ? t->rows : t->cols; }
  double at(std::int64_t i, std::int64_t j) const { return tr ? t->at(j, i) : t->at(i, j); }
  std::int64_t row0() const { return tr ? t->col0 : t->row0; }
  std::int64_t col0() const { return tr ? t->row0 : t->col0; }
  std::int32_t valid_rows() const { return tr ? t->valid_cols : t->valid_rows; }
  std::int32_t valid_cols() const { return tr ? t->valid_rows : t->valid_cols; }
};

std::string shape_text(std::int32_t r, std::int32_t c) { return std::to_string(r) + "x" + std::to_string(c); }

}  // namespace

void Machine::execute(const isa::Instruction& in) {
  const std::array<Operand, 4> ops{in.operand(0), in.operand(1), in.operand(2), in.operand(3)};
  const bool values = opts_.compute_values;
  const std::string_view mn = isa::info(in.op).mnemonic;  // no string per instruction
  auto view = [&](const Operand& o) {
    if (!reg_written_[o.reg]) fault("R" + std::to_string(o.reg) + " is read before anything was written to it");
    return View{&regs_state_[o.reg], o.transposed};
  };
  auto rnd = [&](double v) { return config_.f64 ? v : static_cast<double>(static_cast<float>(v)); };
  auto sym = [&](const Operand& o) {
    std::string s = reg_sym_[o.reg];
    return o.transposed ? tight(s) + "^T" : s;
  };
  // Moves a computed tile into its destination register, keeping the undo log.
  auto commit = [&](int r, Tile&& out, std::string symbol) {
    if (opts_.history) record_reg_undo(r);
    Tile& d = regs_state_[static_cast<std::size_t>(r)];
    std::uint64_t old_bytes = reg_written_[static_cast<std::size_t>(r)]
                                  ? static_cast<std::uint64_t>(d.rows) * static_cast<std::uint64_t>(d.cols) *
                                        static_cast<std::uint64_t>(config_.elem_bytes)
                                  : 0;
    d = std::move(out);
    reg_written_[static_cast<std::size_t>(r)] = 1;
    if (opts_.symbolic) set_symbol(r, std::move(symbol));
    if (!scalar_) update_sram(r, old_bytes);
  };
  auto shaped = [&](const View& like, std::int32_t rows, std::int32_t cols) {
    Tile t;
    t.rows = rows;
    t.cols = cols;
    t.row0 = like.row0();
    t.col0 = like.col0();
    t.valid_rows = std::min(like.valid_rows(), rows);
    t.valid_cols = std::min(like.valid_cols(), cols);
    if (values) t.v.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
    return t;
  };

  switch (in.op) {
    case Opcode::LOAD: {
      const Operand& m = ops[0];
      const auto& d = prog_.arrays[m.array];
      Tile t;
      t.rows = static_cast<std::int32_t>(d.tile_rows);
      t.cols = static_cast<std::int32_t>(d.tile_cols);
      t.row0 = m.row * d.tile_rows;
      t.col0 = m.col * d.tile_cols;
      tile_extent(m.array, m.row, m.col, t.valid_rows, t.valid_cols);
      if (values) {
        t.v.assign(static_cast<std::size_t>(t.rows) * static_cast<std::size_t>(t.cols), 0.0);
        const auto& src = arrays_[m.array].values;
        for (std::int32_t i = 0; i < t.valid_rows; ++i)
          for (std::int32_t j = 0; j < t.valid_cols; ++j)
            t.v[static_cast<std::size_t>(i * t.cols + j)] =
                src[static_cast<std::size_t>((t.row0 + i) * d.cols + t.col0 + j)];
      }
      std::string s = opts_.symbolic ? value_symbol(m.array, flat_tile(m)) : std::string();
      commit(ops[1].reg, std::move(t), std::move(s));
      return;
    }
    case Opcode::STORE: {
      View v = view(ops[0]);
      const Operand& m = ops[1];
      const auto& d = prog_.arrays[m.array];
      if (v.rows() != d.tile_rows || v.cols() != d.tile_cols)
        fault("STORE of a " + shape_text(v.rows(), v.cols()) + " tile into '" + d.name + "', whose tiles are " +
              shape_text(static_cast<std::int32_t>(d.tile_rows), static_cast<std::int32_t>(d.tile_cols)));
      std::int64_t tile = flat_tile(m);
      if (opts_.history) record_mem_undo(m.array, tile);
      if (values) {
        std::int32_t vr, vc;
        tile_extent(m.array, m.row, m.col, vr, vc);
        auto& dst = arrays_[m.array].values;
        for (std::int32_t i = 0; i < vr; ++i)
          for (std::int32_t j = 0; j < vc; ++j)
            dst[static_cast<std::size_t>((m.row * d.tile_rows + i) * d.cols + m.col * d.tile_cols + j)] = v.at(i, j);
      }
      if (opts_.symbolic) arrays_[m.array].symbols[static_cast<std::size_t>(tile)] = sym(ops[0]);
      return;
    }
    case Opcode::MAC_Z:
    case Opcode::MAC: {
      View a = view(ops[0]), b = view(ops[1]);
      if (a.cols() != b.rows())
        fault(std::string(mn) + ": cannot multiply a " + shape_text(a.rows(), a.cols()) + " tile by a " +
              shape_text(b.rows(), b.cols()) + " tile");
      Tile out = shaped(a, a.rows(), b.cols());
      out.col0 = b.col0();
      out.valid_cols = b.valid_cols();
      const View* c = nullptr;
      View cv{};
      if (in.op == Opcode::MAC) {
        cv = view(ops[2]);
        c = &cv;
        if (cv.rows() != out.rows || cv.cols() != out.cols)
          fault("MAC: the addend is a " + shape_text(cv.rows(), cv.cols()) + " tile but the product is " +
                shape_text(out.rows, out.cols));
      }
      if (values) {
        const std::int32_t K = a.cols();
        for (std::int32_t i = 0; i < out.rows; ++i)
          for (std::int32_t j = 0; j < out.cols; ++j) {
            double acc = 0;
            for (std::int32_t k = 0; k < K; ++k) acc += a.at(i, k) * b.at(k, j);
            if (c) acc += c->at(i, j);
            out.v[static_cast<std::size_t>(i * out.cols + j)] = rnd(acc);
          }
      }
      std::string s;
      if (opts_.symbolic) {
        s = tight(sym(ops[0])) + "*" + tight(sym(ops[1]));
        if (c) s = sym(ops[2]) + " + " + s;
      }
      commit(ops[in.op == Opcode::MAC ? 3 : 2].reg, std::move(out), std::move(s));
      return;
    }
    case Opcode::MAX:
    case Opcode::SUB:
    case Opcode::ADD:
    case Opcode::MUL:
    case Opcode::DIV:
    case Opcode::EXPD:
    case Opcode::EXP2D:
    case Opcode::SDIV: {
      View a = view(ops[0]), b = view(ops[1]);
      auto fits = [](std::int32_t x, std::int32_t y) { return x == y || x == 1 || y == 1; };
      if (!fits(a.rows(), b.rows()) || !fits(a.cols(), b.cols()))
        fault(std::string(mn) + ": a " + shape_text(a.rows(), a.cols()) + " tile and a " + shape_text(b.rows(), b.cols()) +
              " tile do not broadcast");
      std::int32_t rows = std::max(a.rows(), b.rows()), cols = std::max(a.cols(), b.cols());
      const View& like = (a.rows() == rows && a.cols() == cols) ? a : b;
      Tile out = shaped(like, rows, cols);
      if (values) {
        for (std::int32_t i = 0; i < rows; ++i)
          for (std::int32_t j = 0; j < cols; ++j) {
            double x = a.at(a.rows() == 1 ? 0 : i, a.cols() == 1 ? 0 : j);
            double y = b.at(b.rows() == 1 ? 0 : i, b.cols() == 1 ? 0 : j);
            double r = 0;
            switch (in.op) {
              case Opcode::MAX: r = (std::isnan(x) || std::isnan(y)) ? std::numeric_limits<double>::quiet_NaN() : std::max(x, y); break;
              case Opcode::SUB: r = x - y; break;
              case Opcode::ADD: r = x + y; break;
              case Opcode::MUL: r = x * y; break;
              // A row whose every score is masked has max -inf; its weights are 0, not NaN.
              case Opcode::EXPD: r = y == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(x - y); break;
              case Opcode::EXP2D: r = y == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp2(x - y); break;
              case Opcode::SDIV: r = y == 0 ? 0.0 : x / y; break;
              default:
                if (y == 0) {
                  if (rows == 1 && cols == 1) fault("division by zero: R" + std::to_string(ops[1].reg) + " is 0");
                  fault("division by zero: R" + std::to_string(ops[1].reg) + " is 0 at row " + std::to_string(i) +
                        ", column " + std::to_string(j) + " of the tile");
                }
                r = x / y;
            }
            out.v[static_cast<std::size_t>(i * cols + j)] = rnd(r);
          }
      }
      std::string s;
      if (opts_.symbolic) {
        std::string x = sym(ops[0]), y = sym(ops[1]);
        // Light simplification keeps the lesson's tables readable: x - x = 0, 1*y = y, 0 + y = y.
        switch (in.op) {
          case Opcode::MAX: s = x == y ? x : "max(" + x + ", " + y + ")"; break;
          case Opcode::SUB: s = x == y ? "0" : y == "0" ? x : x + " - " + tight(y); break;
          case Opcode::ADD: s = x == "0" ? y : y == "0" ? x : x + " + " + y; break;
          case Opcode::MUL: s = x == "1" ? y : y == "1" ? x : tight(x) + "*" + tight(y); break;
          case Opcode::EXPD: s = "exp(" + x + " - " + tight(y) + ")"; break;
          case Opcode::EXP2D: s = "exp2(" + x + " - " + tight(y) + ")"; break;
          default: s = y == "1" ? x : tight(x) + "/" + tight(y);
        }
      }
      commit(ops[2].reg, std::move(out), std::move(s));
      return;
    }
    case Opcode::EXP:
    case Opcode::MOV: {
      View a = view(ops[0]);
      Tile out = shaped(a, a.rows(), a.cols());
      if (values)
        for (std::int32_t i = 0; i < a.rows(); ++i)
          for (std::int32_t j = 0; j < a.cols(); ++j)
            out.v[static_cast<std::size_t>(i * a.cols() + j)] =
                in.op == Opcode::EXP ? rnd(std::exp(a.at(i, j))) : a.at(i, j);
      std::string s = opts_.symbolic ? (in.op == Opcode::EXP ? (sym(ops[0]) == "0" ? "1" : "exp(" + sym(ops[0]) + ")") : sym(ops[0])) : std::string();
      commit(ops[1].reg, std::move(out), std::move(s));
      return;
    }
    case Opcode::LOG:
    case Opcode::LOG2: {
      View a = view(ops[0]);
      Tile out = shaped(a, a.rows(), a.cols());
      if (values)
        for (std::int32_t i = 0; i < a.rows(); ++i)
          for (std::int32_t j = 0; j < a.cols(); ++j)
            out.v[static_cast<std::size_t>(i * a.cols() + j)] =
                rnd(in.op == Opcode::LOG ? std::log(a.at(i, j)) : std::log2(a.at(i, j)));
      std::string s = opts_.symbolic ? std::string(in.op == Opcode::LOG ? "ln(" : "log2(") + sym(ops[0]) + ")" : std::string();
      commit(ops[1].reg, std::move(out), std::move(s));
      return;
    }
    case Opcode::MASK: {
      // Uses the tile's origin and valid extent: columns past valid_cols are padding keys, and
      // under .causal D a query at global row r may not see a key at global column c > r + D.
      View a = view(ops[0]);
      Tile out = shaped(a, a.rows(), a.cols());
      out.valid_cols = a.valid_cols();
      if (values) {
        const double ninf = -std::numeric_limits<double>::infinity();
        const auto& diag = config_.causal_diag;
        for (std::int32_t i = 0; i < a.rows(); ++i)
          for (std::int32_t j = 0; j < a.cols(); ++j) {
            bool hidden = j >= a.valid_cols() || (diag && a.col0() + j > a.row0() + i + *diag);
            out.v[static_cast<std::size_t>(i * a.cols() + j)] = hidden ? ninf : a.at(i, j);
          }
      }
      std::string s = opts_.symbolic ? "mask(" + sym(ops[0]) + ")" : std::string();
      commit(ops[1].reg, std::move(out), std::move(s));
      return;
    }
    case Opcode::ROWMAX:
    case Opcode::ROWSUM: {
      View a = view(ops[0]);
      Tile out = shaped(a, a.rows(), 1);
      out.col0 = 0;
      out.valid_cols = 1;
      if (values)
        for (std::int32_t i = 0; i < a.rows(); ++i) {
          double acc = in.op == Opcode::ROWMAX ? -std::numeric_limits<double>::infinity() : 0.0;
          for (std::int32_t j = 0; j < a.cols(); ++j)
            acc = in.op == Opcode::ROWMAX ? std::max(acc, a.at(i, j)) : acc + a.at(i, j);
          out.v[static_cast<std::size_t>(i)] = rnd(acc);
        }
      std::string s = opts_.symbolic ? std::string(in.op == Opcode::ROWMAX ? "rowmax(" : "rowsum(") + sym(ops[0]) + ")" : std::string();
      commit(ops[1].reg, std::move(out), std::move(s));
      return;
    }
    case Opcode::kCount: break;
  }
  fault("unknown opcode");
}

void Machine::decode_fast() {
  // The trace decoded for the hot loop: sources in order, the destination and the flat element
  // index in fixed fields, so a step reads one record and needs no table lookups.
  const std::size_t n = prog_.code.size();
  fast_.clear();
  fast_.reserve(n + 1);  // appended, not resized: one pass over fresh memory instead of two
  fast_ok_ = prog_.arrays.size() <= 0xffff;
  first_write_.assign(static_cast<std::size_t>(regs_), n);
  for (std::size_t i = 0; i < n; ++i) {
    const isa::Instruction& in = prog_.code[i];
    const auto& info = isa::info(in.op);
    FastOp f{};
    f.op = static_cast<std::uint8_t>(in.op);
    std::uint16_t* srcs[3] = {&f.s0, &f.s1, &f.s2};
    int ns = 0;
    for (int k = 0; k < info.operand_count; ++k) {
      switch (info.operands[k]) {
        case isa::OperandKind::SrcReg: *srcs[ns++] = in.reg(k); break;
        case isa::OperandKind::DstReg: {
          const std::uint16_t r = in.reg(k);
          f.d = r;
          if (first_write_[r] == n) first_write_[r] = i;
          break;
        }
        default: {
          std::int64_t e = flat_tile(in.operand(k));
          if (e < 0 || e > 0xffffffffLL) fast_ok_ = false;
          f.array = static_cast<std::uint16_t>(in.array());
          f.elem = static_cast<std::uint32_t>(e);
        }
      }
    }
    fast_.push_back(f);
  }
  FastOp end{};
  end.op = static_cast<std::uint8_t>(isa::kOpcodeCount);  // the end: the hot loop needs no bounds check
  fast_.push_back(end);
}

template <bool kHistory, typename Value>
void Machine::run_scalar_fast() {
  // The scalar machine's hot loop over the decoded trace. Registers live in a flat array of
  // Value (float on the f32 machine); counters are summed in locals and folded in at the end.
  // Each case computes exactly what execute() computes on 1x1 tiles, including its order of
  // operations (MAC_Z is 0 + a*b in double, so an exact -0 product becomes +0). A division by zero hands the step to
  // step(), which reports the fault.
  const std::size_t n = prog_.code.size();
  const std::size_t regs = static_cast<std::size_t>(regs_);
  std::vector<Value> regfile(regs, Value(0));
  for (std::size_t r = 0; r < regs; ++r)
    if (reg_written_[r]) regfile[r] = static_cast<Value>(regs_state_[r].v[0]);
  Value* const R = regfile.data();
  const std::size_t narrays = arrays_.size();
  std::vector<double*> base(narrays);
  std::vector<std::uint32_t*> reads(narrays), writes(narrays);
  for (std::size_t a = 0; a < narrays; ++a) {
    base[a] = arrays_[a].values.data();
    reads[a] = arrays_[a].tile_reads.data();
    writes[a] = arrays_[a].tile_writes.data();
  }
  std::vector<std::uint64_t> mem_count(2 * narrays, 0);  // LOADs of array a at 2a, STOREs at 2a + 1
  std::array<std::uint64_t, isa::kOpcodeCount> per_op{};   // every opcode but STORE
  const std::uint64_t* const first_write = first_write_.data();
  const FastOp* const ops = fast_.data();
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  // The old values: float on the f32 machine, whose registers and DRAM hold only floats.
  auto& pool = [this]() -> isa::BigVector<Value>& {
    if constexpr (std::is_same_v<Value, float>) return f32_pool_;
    else return value_pool_;
  }();
  if constexpr (kHistory) pool.reserve(pool.size() + (n - pc_));

  // Threaded dispatch (GCC/Clang labels as values): every handler ends in its own indirect
  // jump, which the branch predictor learns per opcode, and knows its opcode's counter slot.
  static const void* const kHandler[] = {
      &&op_load, &&op_store, &&op_mac_z, &&op_mac, &&op_max, &&op_sub, &&op_exp, &&op_add, &&op_mul, &&op_div,
      &&op_mov, &&op_rowmax, &&op_rowsum, &&op_other /* MASK */, &&op_expd, &&op_exp2d, &&op_log, &&op_log2, &&op_sdiv,
      &&finish /* the end of the trace */};
  static_assert(sizeof(kHandler) / sizeof(kHandler[0]) == isa::kOpcodeCount + 1);
  static_assert(static_cast<int>(Opcode::MOV) == 10 && static_cast<int>(Opcode::MASK) == 13 &&
                static_cast<int>(Opcode::SDIV) == 18);
  const FastOp* f = ops + pc_;
  std::size_t i = n;  // where the loop stopped
  Value r;
#define FLASHSIM_NEXT()    \
  do {                     \
    ++f;                   \
    goto* kHandler[f->op]; \
  } while (0)
  // Writes the result register (logging its old value with history) and dispatches the next op.
#define FLASHSIM_RESULT(opcode, expr)                                      \
  do {                                                                     \
    r = (expr);                                                            \
    /* an unwritten register holds 0 here, as record_reg_undo() logs it */ \
    if constexpr (kHistory) pool.push_back(R[f->d]);                       \
    R[f->d] = r;                                                           \
    ++per_op[static_cast<std::size_t>(Opcode::opcode)];                    \
    FLASHSIM_NEXT();                                                       \
  } while (0)

  goto* kHandler[f->op];
op_load:
  ++reads[f->array][f->elem];
  ++mem_count[2u * f->array];
  FLASHSIM_RESULT(LOAD, static_cast<Value>(base[f->array][f->elem]));
op_store:
  if constexpr (kHistory) pool.push_back(static_cast<Value>(base[f->array][f->elem]));
  base[f->array][f->elem] = static_cast<double>(R[f->s0]);
  ++writes[f->array][f->elem];
  ++mem_count[2u * f->array + 1];
  FLASHSIM_NEXT();
  // In double like execute(): on the f32 machine a product that underflows to -0 in float
  // would become +0 after the 0 + ..., where the double product keeps its sign.
op_mac_z:
  FLASHSIM_RESULT(MAC_Z, static_cast<Value>(0.0 + static_cast<double>(R[f->s0]) * static_cast<double>(R[f->s1])));
op_mac:
  FLASHSIM_RESULT(MAC, static_cast<Value>((0.0 + static_cast<double>(R[f->s0]) * static_cast<double>(R[f->s1])) +
                                          static_cast<double>(R[f->s2])));
op_max: {
  const Value x = R[f->s0], y = R[f->s1];
  FLASHSIM_RESULT(MAX, (std::isnan(x) || std::isnan(y)) ? std::numeric_limits<Value>::quiet_NaN() : std::max(x, y));
}
op_sub:
  FLASHSIM_RESULT(SUB, R[f->s0] - R[f->s1]);
op_add:
  FLASHSIM_RESULT(ADD, R[f->s0] + R[f->s1]);
op_mul:
  FLASHSIM_RESULT(MUL, R[f->s0] * R[f->s1]);
op_div:
  if (R[f->s1] == 0) goto stop;  // step() reports the division by zero
  FLASHSIM_RESULT(DIV, R[f->s0] / R[f->s1]);
op_exp:
  FLASHSIM_RESULT(EXP, static_cast<Value>(std::exp(static_cast<double>(R[f->s0]))));
op_expd: {
  const double x = static_cast<double>(R[f->s0]), y = static_cast<double>(R[f->s1]);
  FLASHSIM_RESULT(EXPD, y == kNegInf ? Value(0) : static_cast<Value>(std::exp(x - y)));
}
op_exp2d: {
  const double x = static_cast<double>(R[f->s0]), y = static_cast<double>(R[f->s1]);
  FLASHSIM_RESULT(EXP2D, y == kNegInf ? Value(0) : static_cast<Value>(std::exp2(x - y)));
}
op_sdiv:
  FLASHSIM_RESULT(SDIV, R[f->s1] == 0 ? Value(0) : R[f->s0] / R[f->s1]);
op_log:
  FLASHSIM_RESULT(LOG, static_cast<Value>(std::log(static_cast<double>(R[f->s0]))));
op_log2:
  FLASHSIM_RESULT(LOG2, static_cast<Value>(std::log2(static_cast<double>(R[f->s0]))));
op_mov:
  FLASHSIM_RESULT(MOV, R[f->s0]);
op_rowmax:
  FLASHSIM_RESULT(ROWMAX, std::max(static_cast<Value>(kNegInf), R[f->s0]));  // NaN gives -inf, as in execute()
op_rowsum:
  FLASHSIM_RESULT(ROWSUM, Value(0) + R[f->s0]);
op_other:  // MASK needs tile origins, which this loop does not keep
stop:
  i = static_cast<std::size_t>(f - ops);
finish:
#undef FLASHSIM_RESULT
#undef FLASHSIM_NEXT
  // Fold the locals back into the machine as it stands before step i.
  for (std::size_t r = 0; r < regs; ++r) {
    const bool written = first_write[r] < i;
    if (written && !reg_written_[r]) {
      Tile& t = regs_state_[r];
      t.rows = t.cols = t.valid_rows = t.valid_cols = 1;
      t.v.assign(1, 0.0);
    }
    reg_written_[r] = written;
    if (written) regs_state_[r].v[0] = static_cast<double>(R[r]);
  }
  for (std::size_t a = 0; a < narrays; ++a) {
    const std::uint64_t loads = mem_count[2 * a], stores = mem_count[2 * a + 1];
    const std::uint64_t eb = element_bytes(static_cast<std::uint32_t>(a));
    per_op[static_cast<std::size_t>(Opcode::STORE)] += stores;
    arrays_[a].elem_reads += loads;
    arrays_[a].bytes_read += loads * eb;
    arrays_[a].elem_writes += stores;
    arrays_[a].bytes_written += stores * eb;
    counters_.elem_reads += loads;
    counters_.bytes_read += loads * eb;
    counters_.elem_writes += stores;
    counters_.bytes_written += stores * eb;
  }
  for (std::size_t k = 0; k < isa::kOpcodeCount; ++k) {
    counters_.per_op[k] += per_op[k];
    counters_.cycles += per_op[k] * config_.cycles[k];
    counters_.instructions += per_op[k];
  }
  pc_ = i;
  while (!done()) step();  // only after a step the loop does not take: it faults or is MASK
}

template void Machine::run_scalar_fast<true, double>();
template void Machine::run_scalar_fast<false, double>();
template void Machine::run_scalar_fast<true, float>();
template void Machine::run_scalar_fast<false, float>();

namespace {

// A register's tile without values: what the count-only machine tracks.
struct Shape {
  std::int32_t rows, cols, valid_rows, valid_cols;
  std::int64_t row0, col0;
};

// A register read, possibly transposed (the shape-only twin of View).
struct ShapeView {
  const Shape* s;
  bool tr;
  std::int32_t rows() const { return tr ? s->cols : s->rows; }
  std::int32_t cols() const { return tr ? s->rows : s->cols; }
  std::int64_t row0() const { return tr ? s->col0 : s->row0; }
  std::int64_t col0() const { return tr ? s->row0 : s->col0; }
  std::int32_t valid_rows() const { return tr ? s->valid_cols : s->valid_rows; }
  std::int32_t valid_cols() const { return tr ? s->valid_rows : s->valid_cols; }
};

[[gnu::always_inline]] inline Shape shaped(const ShapeView& like, std::int32_t rows, std::int32_t cols) {
  return Shape{rows, cols, std::min(like.valid_rows(), rows), std::min(like.valid_cols(), cols), like.row0(),
               like.col0()};
}

}  // namespace

void Machine::run_count_only() {
  // Count-only runs (traffic counting) without history: the same shape rules, counters and
  // SRAM accounting as execute() with compute_values off, on plain structs instead of Tiles.
  // A step that would fault is left to step(), which reports it exactly as it always does.
  const std::size_t n = prog_.code.size();
  const std::size_t regs = static_cast<std::size_t>(regs_);
  std::vector<Shape> shape(regs);
  std::vector<std::uint8_t> written(reg_written_);
  for (std::size_t r = 0; r < regs; ++r) {
    const Tile& t = regs_state_[r];
    shape[r] = Shape{t.rows, t.cols, t.valid_rows, t.valid_cols, t.row0, t.col0};
  }
  struct Geometry {
    std::int64_t rows, cols, tile_rows, tile_cols, grid_cols;
    std::uint64_t elem_bytes;
    std::uint32_t *reads, *writes;
  };
  const std::size_t narrays = prog_.arrays.size();
  std::vector<Geometry> geo(narrays);
  for (std::size_t a = 0; a < narrays; ++a) {
    const auto& d = prog_.arrays[a];
    geo[a] = Geometry{d.rows, d.cols, d.tile_rows, d.tile_cols, d.tile_grid_cols(),
                      element_bytes(static_cast<std::uint32_t>(a)), arrays_[a].tile_reads.data(),
                      arrays_[a].tile_writes.data()};
  }
  std::vector<std::uint64_t> elems_moved(2 * narrays, 0);  // elements read from array a at 2a, written at 2a + 1
  std::array<std::uint64_t, isa::kOpcodeCount> per_op{};
  const bool track_sram = !scalar_;
  const std::uint64_t reg_elem_bytes = static_cast<std::uint64_t>(config_.elem_bytes);
  const std::uint64_t sram_cap = config_.sram_bytes.value_or(0);
  std::uint64_t in_use = sram_in_use_, peak = sram_peak_;
  const bool observe = static_cast<bool>(opts_.on_dram_access);

  auto extent = [](const Geometry& g, std::int64_t tr, std::int64_t tc, std::int32_t& vr, std::int32_t& vc) {
    vr = static_cast<std::int32_t>(std::min(g.tile_rows, g.rows - tr * g.tile_rows));
    vc = static_cast<std::int32_t>(std::min(g.tile_cols, g.cols - tc * g.tile_cols));
  };
  auto fits = [](std::int32_t x, std::int32_t y) { return x == y || x == 1 || y == 1; };
  // A source register; execute() faults on one that was never written.
#define FLASHSIM_SOURCE(name, k)                         \
  if (!written[in.reg(k)]) goto general;                 \
  const ShapeView name{&shape[in.reg(k)], in.transposed(k)}

  std::size_t i = pc_;
  for (; i < n; ++i) {
    const isa::Instruction& in = prog_.code[i];
    // The memory operand of a LOAD or STORE, widened for the tile arithmetic.
    struct {
      std::uint32_t array;
      std::int64_t row, col;
    } const m{in.array(), in.row(), in.col()};
    Shape out;
    std::uint16_t dst;
    switch (in.op) {
      case Opcode::LOAD: {
        const Geometry& g = geo[m.array];
        out = Shape{static_cast<std::int32_t>(g.tile_rows), static_cast<std::int32_t>(g.tile_cols), 0, 0,
                    m.row * g.tile_rows, m.col * g.tile_cols};
        extent(g, m.row, m.col, out.valid_rows, out.valid_cols);
        dst = in.reg(1);
        break;
      }
      case Opcode::STORE: {
        FLASHSIM_SOURCE(v, 0);
        const Geometry& g = geo[m.array];
        if (v.rows() != g.tile_rows || v.cols() != g.tile_cols) goto general;
        std::int32_t vr, vc;
        extent(g, m.row, m.col, vr, vc);
        elems_moved[2 * m.array + 1] += static_cast<std::uint64_t>(vr) * static_cast<std::uint64_t>(vc);
        ++g.writes[m.row * g.grid_cols + m.col];
        if (observe)
          opts_.on_dram_access(i, DramAccess{m.array, m.row * g.tile_rows, m.col * g.tile_cols, vr, vc, true});
        ++per_op[static_cast<std::size_t>(Opcode::STORE)];
        continue;
      }
      case Opcode::MAC_Z:
      case Opcode::MAC: {
        FLASHSIM_SOURCE(a, 0);
        FLASHSIM_SOURCE(b, 1);
        if (a.cols() != b.rows()) goto general;
        out = shaped(a, a.rows(), b.cols());
        out.col0 = b.col0();
        out.valid_cols = b.valid_cols();
        if (in.op == Opcode::MAC) {
          FLASHSIM_SOURCE(c, 2);
          if (c.rows() != out.rows || c.cols() != out.cols) goto general;
          dst = in.reg(3);
        } else {
          dst = in.reg(2);
        }
        break;
      }
      case Opcode::MAX:
      case Opcode::SUB:
      case Opcode::ADD:
      case Opcode::MUL:
      case Opcode::DIV:
      case Opcode::EXPD:
      case Opcode::EXP2D:
      case Opcode::SDIV: {
        FLASHSIM_SOURCE(a, 0);
        FLASHSIM_SOURCE(b, 1);
        if (!fits(a.rows(), b.rows()) || !fits(a.cols(), b.cols())) goto general;
        std::int32_t rows = std::max(a.rows(), b.rows()), cols = std::max(a.cols(), b.cols());
        out = shaped((a.rows() == rows && a.cols() == cols) ? a : b, rows, cols);
        dst = in.reg(2);
        break;
      }
      case Opcode::EXP:
      case Opcode::MOV:
      case Opcode::LOG:
      case Opcode::LOG2: {
        FLASHSIM_SOURCE(a, 0);
        out = shaped(a, a.rows(), a.cols());
        dst = in.reg(1);
        break;
      }
      case Opcode::MASK: {
        FLASHSIM_SOURCE(a, 0);
        out = shaped(a, a.rows(), a.cols());
        out.valid_cols = a.valid_cols();
        dst = in.reg(1);
        break;
      }
      case Opcode::ROWMAX:
      case Opcode::ROWSUM: {
        FLASHSIM_SOURCE(a, 0);
        out = shaped(a, a.rows(), 1);
        out.col0 = 0;
        out.valid_cols = 1;
        dst = in.reg(1);
        break;
      }
      default: goto general;
    }
    if (track_sram) {
      // execute() commits, then faults past the capacity; leave that step to it.
      const Shape& old = shape[dst];
      std::uint64_t old_bytes =
          written[dst] ? static_cast<std::uint64_t>(old.rows) * static_cast<std::uint64_t>(old.cols) * reg_elem_bytes : 0;
      std::uint64_t now = in_use - old_bytes +
                          static_cast<std::uint64_t>(out.rows) * static_cast<std::uint64_t>(out.cols) * reg_elem_bytes;
      if (sram_cap && now > sram_cap) goto general;
      in_use = now;
      peak = std::max(peak, in_use);
    }
    if (in.op == Opcode::LOAD) {
      elems_moved[2 * m.array] += static_cast<std::uint64_t>(out.valid_rows) * static_cast<std::uint64_t>(out.valid_cols);
      ++geo[m.array].reads[m.row * geo[m.array].grid_cols + m.col];
      if (observe)
        opts_.on_dram_access(i, DramAccess{m.array, out.row0, out.col0, out.valid_rows, out.valid_cols, false});
    }
    shape[dst] = out;
    written[dst] = 1;
    ++per_op[static_cast<std::size_t>(in.op)];
  }
#undef FLASHSIM_SOURCE
general:
  // Fold the locals back into the machine as it stands before step i.
  for (std::size_t r = 0; r < regs; ++r) {
    reg_written_[r] = written[r];
    if (!written[r]) continue;
    Tile& t = regs_state_[r];
    const Shape& s = shape[r];
    t.rows = s.rows;
    t.cols = s.cols;
    t.valid_rows = s.valid_rows;
    t.valid_cols = s.valid_cols;
    t.row0 = s.row0;
    t.col0 = s.col0;
  }
  for (std::size_t a = 0; a < narrays; ++a) {
    const std::uint64_t eb = geo[a].elem_bytes, rd = elems_moved[2 * a], wr = elems_moved[2 * a + 1];
    arrays_[a].elem_reads += rd;
    arrays_[a].bytes_read += rd * eb;
    arrays_[a].elem_writes += wr;
    arrays_[a].bytes_written += wr * eb;
    counters_.elem_reads += rd;
    counters_.bytes_read += rd * eb;
    counters_.elem_writes += wr;
    counters_.bytes_written += wr * eb;
  }
  for (std::size_t k = 0; k < isa::kOpcodeCount; ++k) {
    counters_.per_op[k] += per_op[k];
    counters_.cycles += per_op[k] * config_.cycles[k];
    counters_.instructions += per_op[k];
  }
  sram_in_use_ = in_use;
  sram_peak_ = peak;
  pc_ = i;
  while (!done()) step();  // only after a step that faults or is not handled above
}

}  // namespace flashsim::sim

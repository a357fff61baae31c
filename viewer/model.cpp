#include "viewer/model.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "isa/assembler.h"
#include "sim/report.h"

namespace flashsim::viewer {

using isa::Opcode;
using isa::Operand;

namespace {

std::string default_title(const std::string& path) {
  // "lessons/03-outer-product/solution.fsa" -> "03-outer-product/solution.fsa"
  auto last = path.find_last_of('/');
  if (last == std::string::npos || last == 0) return path;
  auto before = path.find_last_of('/', last - 1);
  return before == std::string::npos ? path : path.substr(before + 1);
}

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::optional<Touch> memory_operand(const isa::Program& p, const isa::Instruction& in) {
  if (in.op != Opcode::LOAD && in.op != Opcode::STORE) return std::nullopt;
  const auto& a = p.arrays[in.array()];
  return Touch{in.array(), std::int64_t{in.row()} * a.tile_grid_cols() + in.col(), in.op == Opcode::STORE};
}

std::string touch_text(const isa::Program& p, const Touch& t) {
  const auto& a = p.arrays[t.array];
  std::int64_t tr = t.tile / a.tile_grid_cols(), tc = t.tile % a.tile_grid_cols();
  std::string s = a.name + "[" + std::to_string(tr) + "]";
  if (a.rank == 2) s += "[" + std::to_string(tc) + "]";
  return s + (t.write ? " write" : " read");
}

// Wall and thread-CPU stopwatch for the load phases.
class PhaseTimer {
 public:
  PhaseTimer() : wall_(std::chrono::steady_clock::now()), cpu_(cpu_ms()) {}
  void stop(double& wall_ms, double& cpu) const {
    wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_).count();
    cpu = cpu_ms() - cpu_;
  }

 private:
  static double cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
  }
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
};

}  // namespace

std::uint64_t BytesSeries::at(std::uint64_t step) const {
  if (samples.empty()) return 0;
  if (step >= steps) return samples.back();
  return samples[std::min<std::size_t>(static_cast<std::size_t>(step / stride), samples.size() - 1)];
}

std::vector<ParamDecl> scan_params(const std::vector<std::string>& lines) {
  std::vector<ParamDecl> out;
  for (const auto& raw : lines) {
    std::string s = trim(raw.substr(0, raw.find('#')));
    if (s.rfind(".param", 0) != 0 || s.size() < 7 || !std::isspace(static_cast<unsigned char>(s[6]))) continue;
    auto eq = s.find('=');
    if (eq == std::string::npos) continue;
    std::string name = trim(s.substr(6, eq - 6));
    std::string value = trim(s.substr(eq + 1));
    if (name.empty()) continue;
    ParamDecl d{name, 0};
    try {
      std::size_t used = 0;
      d.value = std::stoll(value, &used);
      if (used != value.size()) d.value = 0;  // an expression: the dialog starts from 0
    } catch (const std::exception&) {
      d.value = 0;
    }
    out.push_back(d);
  }
  return out;
}

std::optional<std::uint64_t> budget_value(const sim::Counters& c, const std::string& counter) {
  if (counter == "cycles") return c.cycles;
  if (counter == "instructions") return c.instructions;
  if (counter == "loads") return c.of_class(isa::OpClass::Load);
  if (counter == "stores") return c.of_class(isa::OpClass::Store);
  if (counter == "macs") return c.of_class(isa::OpClass::Mac);
  if (counter == "dram_reads") return c.elem_reads;
  if (counter == "dram_writes") return c.elem_writes;
  if (auto op = isa::find_mnemonic(counter)) return c.count(*op);
  return std::nullopt;
}

// ---- Trace ---------------------------------------------------------------------------------

Trace::Trace(const LoadRequest& request) : request_(request) {
  static std::atomic<std::uint64_t> next_serial{1};
  serial_ = next_serial++;
  isa::Program prog;
  if (request.program) {
    prog = *request.program;
    request_.program.reset();  // the machine keeps the only copy of a possibly huge trace
  } else {
    isa::AssembleOptions opts;
    opts.params = request.params;
    PhaseTimer timer;
    prog = isa::assemble_file(request.path, opts);
    timer.stop(load_times_.assemble_ms, load_times_.assemble_cpu_ms);
  }
  path_ = request.program ? prog.name : request.path;
  if (prog.source_lines.empty()) {
    // A generated program without text: show its disassembly, one instruction a line.
    std::istringstream text(isa::disassemble(prog));
    for (std::string line; std::getline(text, line);) prog.source_lines.push_back(line);
    std::size_t header = prog.source_lines.size() >= prog.code.size() ? prog.source_lines.size() - prog.code.size() : 0;
    prog.locs.clear();
    for (std::size_t i = 0; i < prog.code.size(); ++i)
      prog.locs.push_back(prog.locs.add_site({static_cast<std::uint32_t>(header + i + 1), 1}));
  }
  title_ = request.title.empty() ? default_title(path_) : request.title;
  params_ = scan_params(prog.source_lines);
  for (auto& p : params_)
    if (auto it = request.params.find(p.name); it != request.params.end()) p.value = it->second;

  sim::MachineOptions opts;
  opts.regs = request.regs;
  opts.symbolic = request.symbolic.value_or(prog.code.size() <= kSymbolicLimit);
  opts.l2 = request.l2;
  std::size_t lines = prog.source_lines.size() + 1;
  prog.locs.for_each([&](std::uint64_t, isa::SourceLoc l) { lines = std::max<std::size_t>(lines, l.line + 1); });
  line_hits_.assign(lines, 0);
  line_total_.assign(lines, 0);
  // Generated code past the map's end has line 0.
  line_total_[0] += prog.code.size() - std::min<std::uint64_t>(prog.code.size(), prog.locs.size());
  prog.locs.for_each([&](std::uint64_t, isa::SourceLoc l) { ++line_total_[l.line]; });
  tile_machine_ = !prog.is_scalar();
  PhaseTimer machine_timer;
  machine_ = std::make_unique<sim::Machine>(std::move(prog), std::move(opts));
  machine_timer.stop(load_times_.machine_ms, load_times_.machine_cpu_ms);
  PhaseTimer prepass_timer;
  if (machine_->config().l2) {
    l2_ = std::make_unique<sim::TraceL2>(*machine_, *machine_->config().l2);
    sim::TraceL2 whole(*machine_, *machine_->config().l2);
    whole.replay_to(*machine_, size());
    final_l2_ = whole.total();
  }
  prepass();
  if (program().timing.units) {
    try {
      timing_ = sim::time_program(program());
      timeline_ = sim::build_timeline(*timing_);
    } catch (const sim::TimingError& e) {
      timing_error_ = isa::AsmError(path_, e.where.line, e.where.col, e.message).what();
    } catch (const sim::MachineFault& e) {
      timing_error_ = e.what();
    }
  }
  prepass_timer.stop(load_times_.prepass_ms, load_times_.prepass_cpu_ms);
}

UnitsView Trace::units_view(double zoom, double pixels) const {
  UnitsView v;
  if (!timing_) return v;
  const sim::Timeline& tl = timeline_;
  v.cycles = tl.cycles;
  v.bound = tl.bound;
  const double total = std::max(tl.cycles, 1e-9);
  const double width = total / std::max(zoom, 1.0);
  const auto index = current_index();
  const sim::Timeline::Place* place = index && *index < tl.places.size() ? &tl.places[*index] : nullptr;
  double centre = total / 2;
  if (place) {
    const sim::TimelineBar& b = tl.lanes[place->unit_lane].bars[place->unit_bar];
    v.now = b.x0;
    centre = (b.x0 + b.x1) / 2;
  }
  v.c0 = std::clamp(centre - width / 2, 0.0, total - width);
  v.c1 = v.c0 + width;
  const double min_width = width / std::max(pixels, 1.0);
  for (std::size_t l = 0; l < tl.lanes.size(); ++l) {
    const sim::TimelineLane& lane = tl.lanes[l];
    UnitsLaneView lv;
    lv.unit = lane.kind == sim::TimelineLane::Kind::Unit;
    lv.label = lv.unit ? lane.name : "stream " + lane.name;
    lv.unit_index = lane.index;
    lv.busy_fraction = lane.busy_fraction;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", 100 * lane.busy_fraction);
    lv.busy = buf;
    lv.rows = lane.rows;
    lv.bars = sim::visible_bars(lane, v.c0, v.c1, min_width);
    if (place && (place->unit_lane == l || place->stream_lane == l))
      lv.current = lane.bars[place->unit_lane == l ? place->unit_bar : place->stream_bar];
    v.lanes.push_back(std::move(lv));
  }
  return v;
}

void Trace::prepass() {
  // Whole-trace traffic straight from the code (the same arithmetic as the machine's
  // counters), so the heat-map scale and the bytes plot cost one cheap pass, not a second run.
  const isa::Program& p = program();
  const auto& cfg = machine_->config();
  const std::uint64_t n = p.code.size();
  std::vector<std::vector<std::uint32_t>> reads(p.arrays.size()), writes(p.arrays.size());
  for (std::size_t a = 0; a < p.arrays.size(); ++a) {
    reads[a].assign(static_cast<std::size_t>(p.arrays[a].tile_count()), 0);
    writes[a].assign(static_cast<std::size_t>(p.arrays[a].tile_count()), 0);
  }
  series_ = {};
  series_.steps = n;
  series_.stride = std::max<std::uint64_t>(1, (n + kMaxSeriesSamples - 2) / (kMaxSeriesSamples - 1));
  series_.samples.reserve(kMaxSeriesSamples + 1);
  series_.samples.push_back(0);
  final_counters_ = {};
  final_array_read_.assign(p.arrays.size(), 0);
  final_array_written_.assign(p.arrays.size(), 0);
  std::uint64_t bytes = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const isa::Instruction& in = p.code[i];
    auto op = static_cast<std::size_t>(in.op);
    final_counters_.cycles += cfg.cycles[op];
    ++final_counters_.instructions;
    ++final_counters_.per_op[op];
    if (auto t = memory_operand(p, in)) {
      const auto& d = p.arrays[t->array];
      const std::int64_t row = in.row(), col = in.col();
      auto vr = static_cast<std::uint64_t>(std::min(d.tile_rows, d.rows - row * d.tile_rows));
      auto vc = static_cast<std::uint64_t>(std::min(d.tile_cols, d.cols - col * d.tile_cols));
      std::uint64_t elems = vr * vc, b = elems * machine_->element_bytes(t->array);
      bytes += b;
      auto tile = static_cast<std::size_t>(t->tile);
      if (t->write) {
        ++writes[t->array][tile];
        final_array_written_[t->array] += b;
        final_counters_.elem_writes += elems;
        final_counters_.bytes_written += b;
      } else {
        ++reads[t->array][tile];
        final_array_read_[t->array] += b;
        final_counters_.elem_reads += elems;
        final_counters_.bytes_read += b;
      }
    }
    if ((i + 1) % series_.stride == 0 || i + 1 == n) series_.samples.push_back(bytes);
  }
  final_max_reads_.assign(p.arrays.size(), 0);
  final_max_writes_.assign(p.arrays.size(), 0);
  for (std::size_t a = 0; a < p.arrays.size(); ++a) {
    for (auto c : reads[a]) final_max_reads_[a] = std::max(final_max_reads_[a], c);
    for (auto c : writes[a]) final_max_writes_[a] = std::max(final_max_writes_[a], c);
  }
}

const sim::TraceL2* Trace::l2() const {
  if (!l2_) return nullptr;
  l2_->sync(*machine_);  // lazily: a seek back replays the cache once, not once per step
  return l2_.get();
}

namespace {
std::optional<std::uint64_t> budget_of(const sim::Counters& c, const std::vector<std::uint64_t>& array_read,
                                       const std::vector<std::uint64_t>& array_written, const sim::L2Counts* l2,
                                       const isa::Program& p, const std::string& counter) {
  if (counter == "bytes_read") return c.bytes_read;
  if (counter == "bytes_written") return c.bytes_written;
  if (counter == "hbm_bytes_read") return l2 ? l2->hbm_read : c.bytes_read;
  if (counter == "hbm_bytes_written") return l2 ? l2->hbm_written : c.bytes_written;
  if (auto colon = counter.find(':'); colon != std::string::npos) {
    auto id = p.find_array(counter.substr(colon + 1));
    if (!id) return 0;
    return counter.compare(0, colon, "read") == 0 ? array_read[*id] : array_written[*id];
  }
  return budget_value(c, counter);
}
}  // namespace

std::optional<std::uint64_t> Trace::budget_now(const std::string& counter) const {
  const auto& p = program();
  std::vector<std::uint64_t> read(p.arrays.size()), written(p.arrays.size());
  for (std::uint32_t a = 0; a < p.arrays.size(); ++a) {
    read[a] = machine_->array(a).bytes_read;
    written[a] = machine_->array(a).bytes_written;
  }
  if (counter == "sram") return machine_->sram_peak();
  const sim::TraceL2* cache = l2();
  const sim::L2Counts now = cache ? cache->total() : sim::L2Counts{};
  return budget_of(machine_->counters(), read, written, cache ? &now : nullptr, p, counter);
}

std::optional<std::uint64_t> Trace::budget_whole(const std::string& counter) const {
  return budget_of(final_counters_, final_array_read_, final_array_written_, l2_ ? &final_l2_ : nullptr, program(), counter);
}

void Trace::count_line(std::uint64_t index, int sign) {
  auto line = program().loc(index).line;
  line_hits_[line] = static_cast<std::uint64_t>(static_cast<std::int64_t>(line_hits_[line]) + sign);
}

void Trace::set_lesson(std::string name, std::vector<Budget> budgets) {
  lesson_ = std::move(name);
  budgets_ = std::move(budgets);
}

bool Trace::step_forward() {
  if (machine_->done()) return false;
  try {
    machine_->step();
  } catch (const sim::MachineFault& f) {
    fault_ = f.what();
    return false;
  }
  count_line(machine_->pc() - 1, +1);
  fault_.clear();
  return true;
}

bool Trace::step_back() {
  if (!machine_->step_back()) return false;
  count_line(machine_->pc(), -1);
  fault_.clear();
  return true;
}

void Trace::reset() {
  machine_->reset();
  std::fill(line_hits_.begin(), line_hits_.end(), 0);
  fault_.clear();
}

void Trace::export_steps(const sim::TraceExport& out) {
  const std::uint64_t here = step();
  struct ComeBack {  // also when the run faults
    Trace& t;
    std::uint64_t k;
    ~ComeBack() {
      t.reset();
      t.seek(k);
    }
  } come_back{*this, here};
  sim::TraceExport with_timing = out;
  if (timing_ && !with_timing.timing) with_timing.timing = &*timing_;  // Perfetto: the time model's lanes
  sim::export_trace(*machine_, with_timing);
}

void Trace::seek(std::uint64_t k) {
  k = std::min(k, size());
  if (k == 0) return reset();
  while (step() > k && step_back()) {
  }
  while (step() < k && step_forward()) {
  }
}

bool Trace::line_has_code(std::uint32_t line) const {
  return line < line_total_.size() && line_total_[line] > 0;
}

bool Trace::toggle_breakpoint(std::uint32_t line) {
  if (!line_has_code(line)) return false;
  if (!breakpoints_.erase(line)) breakpoints_.insert(line);
  return true;
}

bool Trace::at_breakpoint() const {
  return !breakpoints_.empty() && !done() && breakpoints_.count(program().loc(step()).line);
}

std::optional<std::uint64_t> Trace::current_index() const {
  if (step() == 0) return std::nullopt;
  return step() - 1;
}

std::uint32_t Trace::current_line() const {
  auto i = current_index();
  return i ? program().loc(*i).line : 0;
}

std::uint32_t Trace::next_line() const { return done() ? 0 : program().loc(step()).line; }

std::string Trace::instruction_text(std::uint64_t index) const {
  return isa::format_instruction(program(), program().code[index]);
}

std::vector<int> Trace::changed_registers() const {
  std::vector<int> out;
  auto i = current_index();
  if (!i) return out;
  const isa::Instruction& in = program().code[*i];
  const auto& info = isa::info(in.op);
  for (int k = 0; k < info.operand_count; ++k)
    if (info.operands[static_cast<std::size_t>(k)] == isa::OperandKind::DstReg)
      out.push_back(in.reg(k));
  return out;
}

RegisterRow Trace::register_row(int r) const {
  RegisterRow row;
  row.name = "R" + std::to_string(r);
  row.written = machine_->reg_written(r);
  auto changed = changed_registers();
  row.changed = std::find(changed.begin(), changed.end(), r) != changed.end();
  if (!row.written) return row;
  const sim::Tile& t = machine_->reg(r);
  if (t.rows == 1 && t.cols == 1) {
    if (!t.v.empty()) row.numeric = sim::format_value(t.v[0]);
  } else {
    row.numeric = std::to_string(t.rows) + "x" + std::to_string(t.cols) + " @(" + std::to_string(t.row0) + "," +
                  std::to_string(t.col0) + ")";
    if (t.valid_rows != t.rows || t.valid_cols != t.cols)
      row.numeric += " valid " + std::to_string(t.valid_rows) + "x" + std::to_string(t.valid_cols);
    for (std::size_t k = 0; k < std::min<std::size_t>(3, t.v.size()); ++k) row.numeric += " " + sim::format_value(t.v[k]);
    if (t.v.size() > 3) row.numeric += " ...";
  }
  if (machine_->symbolic()) row.symbolic = machine_->reg_symbol(r);
  return row;
}

std::optional<Touch> Trace::touched() const {
  auto i = current_index();
  return i ? memory_operand(program(), program().code[*i]) : std::nullopt;
}

std::optional<Touch> Trace::touch_at(std::uint64_t index) const {
  return index < size() ? memory_operand(program(), program().code[index]) : std::nullopt;
}

std::optional<Touch> Trace::next_touch() const {
  return done() ? std::nullopt : memory_operand(program(), program().code[step()]);
}

std::uint64_t Trace::line_hits(std::uint32_t line) const { return line < line_hits_.size() ? line_hits_[line] : 0; }
std::uint64_t Trace::line_total(std::uint32_t line) const { return line < line_total_.size() ? line_total_[line] : 0; }

std::uint64_t Trace::dram_bytes() const {
  const auto& c = machine_->counters();
  return c.bytes_read + c.bytes_written;
}

// ---- Model ---------------------------------------------------------------------------------

bool Model::export_trace(int slot, const std::string& path, ExportFormat format) {
  Trace* t = trace(slot);
  if (!t) {
    set_error("export: no trace is open");
    return false;
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) {
    set_error("export: cannot write '" + path + "'");
    return false;
  }
  sim::TraceExport out;
  (format == ExportFormat::StepsCsv ? out.csv : out.perfetto) = &f;
  try {
    t->export_steps(out);
  } catch (const sim::MachineFault& e) {
    set_error(std::string("export to '") + path + "' stopped at the fault: " + e.what());
    return false;
  }
  f.close();
  if (!f) {
    set_error("export: writing '" + path + "' failed");
    return false;
  }
  clear_error();
  return true;
}

std::string Model::default_export_name(const Trace& t, ExportFormat format) {
  std::string stem = std::filesystem::path(t.path()).stem().string();
  if (stem.empty()) stem = "trace";
  return stem + (format == ExportFormat::StepsCsv ? ".steps.csv" : ".perfetto.json");
}

bool Model::open(int slot, const LoadRequest& request) {
  try {
    auto t = std::make_unique<Trace>(request);
    if (const Trace* other = traces_[1 - slot].get()) t->seek(other->step());  // join the lockstep
    traces_[slot] = std::move(t);
    clear_error();
    return true;
  } catch (const isa::AsmError& e) {
    set_error(e.what());
    if (e.line > 0) {
      std::vector<std::string> lines;
      if (request.program) {
        lines = request.program->source_lines;
      } else {
        std::ifstream in(request.path);
        for (std::string l; lines.size() < e.line && std::getline(in, l);) lines.push_back(l);
      }
      if (e.line <= lines.size()) {
        std::string num = std::to_string(e.line);
        std::string text = lines[e.line - 1];
        for (auto& ch : text)
          if (ch == '\t') ch = ' ';
        error_context_ = " " + num + " | " + text + "\n " + std::string(num.size(), ' ') + " | " +
                         std::string(e.col > 0 ? e.col - 1 : 0, ' ') + "^";
      }
    }
    return false;
  } catch (const std::exception& e) {
    // isa::AsmError reads FILE:LINE:COL: error: ...; a MachineFault names the bad input.
    error_ = e.what();
    std::string where = request.program ? request.program->name : request.path;
    if (dynamic_cast<const sim::MachineFault*>(&e)) error_ = where + ": " + error_;
    return false;
  }
}

void Model::close(int slot) {
  traces_[slot].reset();
  if (!traces_[0] && traces_[1]) std::swap(traces_[0], traces_[1]);
  if (trace_count() == 0) running_ = false;
}

template <class F>
bool Model::each(F&& f) {
  bool any = false;
  for (auto& t : traces_)
    if (t && f(*t)) any = true;
  return any;
}

bool Model::step() {
  bool moved = each([](Trace& t) { return t.step_forward(); });
  for (auto& t : traces_)
    if (t && !t->fault().empty()) running_ = false;
  return moved;
}

bool Model::step_back() {
  running_ = false;
  // Lockstep: only the traces at the shared position move back, so a shorter trace that
  // finished early waits at its end until the longer one comes back to it.
  std::uint64_t k = step_index();
  return each([k](Trace& t) { return t.step() == k && t.step_back(); });
}

void Model::reset() {
  running_ = false;
  each([](Trace& t) {
    t.reset();
    return true;
  });
}

void Model::seek(std::uint64_t k) {
  each([k](Trace& t) {
    t.seek(k);
    return true;
  });
}

bool Model::run_to_breakpoint() {
  running_ = false;
  if (!step()) return false;
  for (;;) {
    for (auto& t : traces_) {
      if (!t) continue;
      if (!t->fault().empty()) return false;
      if (t->at_breakpoint()) return true;
    }
    if (!step()) return false;
  }
}

std::uint64_t Model::step_index() const {
  std::uint64_t k = 0;
  for (auto& t : traces_)
    if (t) k = std::max(k, t->step());
  return k;
}

std::uint64_t Model::max_steps() const {
  std::uint64_t n = 0;
  for (auto& t : traces_)
    if (t) n = std::max(n, t->size());
  return n;
}

bool Model::all_done() const {
  for (auto& t : traces_)
    if (t && !t->done()) return false;
  return true;
}

void Model::set_speed(double s) { speed_ = std::clamp(s, 0.5, 10'000'000.0); }

std::uint64_t Model::tick(double seconds, std::uint64_t budget_steps) {
  if (!running_) return 0;
  carry_ += speed_ * std::max(0.0, seconds);
  auto n = static_cast<std::uint64_t>(carry_);
  if (n > budget_steps) {
    n = budget_steps;
    carry_ = 0;  // a slow frame drops the backlog instead of piling it up
  } else {
    carry_ -= static_cast<double>(n);
  }
  std::uint64_t done = 0;
  for (; done < n; ++done) {
    if (!step()) {
      running_ = false;
      break;
    }
    for (auto& t : traces_)
      if (t && t->at_breakpoint()) running_ = false;
    if (!running_) {
      ++done;
      break;
    }
  }
  if (all_done()) running_ = false;
  return done;
}

std::string dump_trace(const Trace& t) {
  std::ostringstream os;
  const auto& p = t.program();
  const auto& m = t.machine();
  os << "title: " << t.title() << "\n";
  os << "file: " << t.path() << "\n";
  for (const auto& pd : t.params()) os << "param: " << pd.name << " = " << pd.value << "\n";
  os << "step: " << t.step() << "/" << t.size() << "\n";
  if (auto i = t.current_index())
    os << "current: step " << (*i + 1) << " line " << t.current_line() << ": " << t.instruction_text(*i) << "\n";
  else
    os << "current: none\n";
  if (!t.done()) os << "next: line " << t.next_line() << ": " << t.instruction_text(t.step()) << "\n";
  else os << "next: end\n";
  os << "changed:";
  for (int r : t.changed_registers()) os << " R" << r;
  os << "\n";
  for (int r = 0; r < m.register_count(); ++r) {
    auto row = t.register_row(r);
    os << row.name << ": " << (row.written ? row.numeric : "-");
    if (!row.symbolic.empty()) os << " | " << row.symbolic;
    os << "\n";
  }
  auto touched = t.touched();
  os << "touched: " << (touched ? touch_text(p, *touched) : "none") << "\n";
  auto next = t.next_touch();
  os << "next_touch: " << (next ? touch_text(p, *next) : "none") << "\n";
  for (std::uint32_t a = 0; a < p.arrays.size(); ++a) {
    const auto& s = m.array(a);
    os << "array " << p.arrays[a].name << ": reads";
    for (auto c : s.tile_reads) os << " " << c;
    os << " writes";
    for (auto c : s.tile_writes) os << " " << c;
    os << "\n";
    if (s.tile_reads.size() > 64) break;  // keep the dump small for big traces
  }
  os << "breakpoints:";
  for (auto l : t.breakpoints()) os << " " << l;
  os << "\n";
  const auto& c = m.counters();
  os << "counters: cycles=" << c.cycles << " instructions=" << c.instructions << " elem_reads=" << c.elem_reads
     << " elem_writes=" << c.elem_writes << " bytes_read=" << c.bytes_read << " bytes_written=" << c.bytes_written
     << "\n";
  os << "ops:";
  for (const auto& row : isa::kInstructionTable)
    if (c.count(row.opcode)) os << " " << row.mnemonic << "=" << c.count(row.opcode);
  os << "\n";
  if (t.tile_machine()) {
    os << "sram: in_use=" << m.sram_in_use() << " peak=" << m.sram_peak();
    if (m.config().sram_bytes) os << " capacity=" << *m.config().sram_bytes;
    os << "\n";
  }
  if (!t.lesson().empty()) os << "lesson: " << t.lesson() << "\n";
  if (const sim::TraceL2* l2 = t.l2()) {
    const sim::L2Counts n = l2->total();
    os << "l2: capacity=" << l2->config().capacity_bytes << " line=" << l2->config().line_bytes
       << " sector=" << l2->config().sector_bytes << " hits=" << n.hits << " misses=" << n.misses
       << " hbm_read=" << n.hbm_read << " hbm_written=" << n.hbm_written << " resident=" << l2->resident_bytes()
       << " dirty=" << l2->dirty_bytes() << "\n";
    const auto& last = l2->last();
    os << "l2_last: "
       << (!last.memory ? "none" : last.write ? "dirty" : last.misses == 0 ? "hit" : last.hits == 0 ? "miss" : "partial")
       << "\n";
  }
  for (const auto& b : t.budgets()) {
    auto now = t.budget_now(b.counter), total = t.budget_whole(b.counter);
    os << "budget: " << b.counter << " " << (now ? *now : 0) << "/" << b.limit << " (whole trace "
       << (total ? *total : 0) << ")\n";
  }
  if (!t.fault().empty()) os << "fault: " << t.fault() << "\n";
  if (!t.timing_error().empty()) os << "timing_error: " << t.timing_error() << "\n";
  if (t.timing()) {
    const UnitsView v = t.units_view(1, 1000);
    auto cycles = [](double c) {  // two decimals at most: "9", "0", "12.5"
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.2f", c);
      std::string s = buf;
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
      return s == "-0" ? std::string("0") : s;
    };
    os << "units: cycles=" << cycles(v.cycles) << " bound=" << v.bound;
    if (v.now) os << " now=" << cycles(*v.now);
    os << "\n";
    for (const UnitsLaneView& l : v.lanes) {
      os << "lane " << l.label << ": busy " << l.busy << " rows=" << l.rows << " bars=" << l.bars.size();
      if (l.current) os << " current=" << cycles(l.current->x0) << ".." << cycles(l.current->x1)
                        << (l.current->critical ? " critical" : "");
      os << "\n";
    }
  }
  return os.str();
}

std::string Model::dump() const {
  std::ostringstream os;
  os << "traces: " << trace_count() << "\n";
  os << "step_index: " << step_index() << "\n";
  if (!error_.empty()) os << "error: " << error_ << "\n";
  if (!error_context_.empty()) os << "error_context:\n" << error_context_ << "\n";
  for (int s = 0; s < 2; ++s)
    if (const Trace* t = trace(s)) os << "[trace " << s << "]\n" << dump_trace(*t);
  return os.str();
}

}  // namespace flashsim::viewer

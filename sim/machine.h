// The machine: registers that each hold a tile (1x1 on the scalar machine), DRAM made of
// named arrays, and counters for cycles and traffic. It executes an assembled trace one
// instruction at a time, can step back through an undo log, and reports faults by step.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/program.h"

namespace flashsim::sim {

// A register's content. On the scalar machine rows == cols == 1.
struct Tile {
  std::int32_t rows = 0, cols = 0;
  std::int64_t row0 = 0, col0 = 0;           // global element coordinates of v[0] in its array
  std::int32_t valid_rows = 0, valid_cols = 0;  // the part backed by real data; the rest is padding
  std::vector<double> v;                      // row-major, rows * cols
  double at(std::int64_t r, std::int64_t c) const { return v[static_cast<std::size_t>(r * cols + c)]; }
};

struct Counters {
  std::uint64_t cycles = 0;
  std::uint64_t instructions = 0;
  std::array<std::uint64_t, isa::kOpcodeCount> per_op{};
  std::uint64_t elem_reads = 0, elem_writes = 0;  // DRAM elements moved
  std::uint64_t bytes_read = 0, bytes_written = 0;

  std::uint64_t count(isa::Opcode op) const { return per_op[static_cast<std::size_t>(op)]; }
  std::uint64_t of_class(isa::OpClass c) const;
};

struct ArrayState {
  std::vector<double> values;               // row-major elements
  std::vector<std::uint32_t> tile_reads;    // LOADs per tile (per element on the scalar machine)
  std::vector<std::uint32_t> tile_writes;   // STOREs per tile
  std::uint64_t elem_reads = 0, elem_writes = 0;
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::vector<std::string> symbols;         // per tile, when symbolic tracking is on
};

// A fault while running: reported as "step N (line L): error: message"; step 0 (inputs or arrays
// that do not fit, before the first step) as "error: message".
class MachineFault : public std::runtime_error {
 public:
  MachineFault(std::uint64_t step, std::uint32_t line, std::string message);
  std::uint64_t step;  // 1-based step that faulted
  std::uint32_t line;
  std::string message;
};

// One DRAM access as the machine executes it: a tile of `array` (its first element at row0, col0
// and its valid extent), read by a LOAD or written by a STORE.
struct DramAccess {
  std::uint32_t array = 0;
  std::int64_t row0 = 0, col0 = 0;
  std::int32_t rows = 0, cols = 0;
  bool write = false;
};

struct MachineOptions {
  std::optional<int> regs;                   // --regs: overrides the directive
  std::optional<bool> f64;
  bool symbolic = false;                     // keep a symbolic shadow of every value
  bool history = true;                       // keep the undo log that step_back needs
  bool compute_values = true;                // false: count traffic and cycles only
  std::map<std::string, std::vector<double>> inputs;  // --input NAME=v,...
  std::optional<std::uint64_t> seed;
  std::map<isa::Opcode, std::uint32_t> costs;          // --cost OP=C
  std::optional<std::uint64_t> sram_bytes;
  std::optional<isa::L2Geometry> l2;                   // --l2: overrides the .l2 directive (sim/l2_trace.h)
  // DRAM capacity in elements (tiles in count-only mode), so a huge declaration is an error
  // rather than an allocation failure.
  std::uint64_t max_dram_elements = std::uint64_t{1} << 28;
  // Called for every DRAM access as it executes, count-only runs included (never on step_back):
  // the index of the instruction and the access. The L2 models hang here.
  std::function<void(std::uint64_t pc, const DramAccess&)> on_dram_access;
};

class Machine {
 public:
  // Throws isa::AsmError for a register outside the machine (a property of the text) and
  // MachineFault for inputs that do not fit.
  explicit Machine(isa::Program program, MachineOptions options = {});

  const isa::Program& program() const { return prog_; }
  const isa::MachineConfig& config() const { return config_; }
  int register_count() const { return regs_; }
  // Where the register count came from: "--regs", ".regs directive" or "inferred ...".
  const std::string& register_count_source() const { return regs_source_; }
  std::uint64_t element_bytes(std::uint32_t array) const;

  std::uint64_t pc() const { return pc_; }  // instructions executed so far
  std::uint64_t size() const { return prog_.code.size(); }
  bool done() const { return pc_ >= prog_.code.size(); }

  void step();        // executes one instruction; throws MachineFault
  bool step_back();   // undoes one; false at the start or without history
  void run();         // to the end
  // Runs until the next instruction's source line is a breakpoint (after at least one step).
  bool run_to_breakpoint(const std::set<std::uint32_t>& lines);
  void run_to(std::uint64_t target_pc);  // forward or back
  void reset();

  const Counters& counters() const { return counters_; }
  const Tile& reg(int r) const { return regs_state_[static_cast<std::size_t>(r)]; }
  bool reg_written(int r) const { return reg_written_[static_cast<std::size_t>(r)] != 0; }
  // Empty unless symbolic tracking is on.
  const std::string& reg_symbol(int r) const {
    static const std::string none;
    return opts_.symbolic ? reg_sym_[static_cast<std::size_t>(r)] : none;
  }
  const ArrayState& array(std::uint32_t id) const { return arrays_[id]; }
  bool is_input(std::uint32_t id) const {
    find_inputs_outputs();
    return is_input_[id];
  }
  bool is_output(std::uint32_t id) const {
    find_inputs_outputs();
    return is_output_[id];
  }
  std::uint64_t sram_in_use() const { return sram_in_use_; }
  std::uint64_t sram_peak() const { return sram_peak_; }
  bool symbolic() const { return opts_.symbolic; }
  std::string value_symbol(std::uint32_t array, std::int64_t tile) const;
  std::uint64_t history_bytes() const;

 private:
  // One entry per executed step. The step's instruction names the register or DRAM tile it
  // overwrote, so the entry only says where the old values are kept: 8 bytes a step.
  struct Undo {
    std::uint64_t pool : 61;        // offset of the old values in value_pool_
    std::uint64_t was_written : 1;  // a register target held a value before the step
    std::uint64_t has_meta : 1;     // the old tile shape is meta_pool_'s last entry
    std::uint64_t has_sym : 1;      // the old symbol is sym_pool_'s last entry
  };

  void init_memory();
  void check_static();
  void find_inputs_outputs() const;
  [[noreturn]] void fault(const std::string& msg) const;
  void execute(const isa::Instruction& in);
  template <bool kHistory, typename Value>
  void run_scalar_fast();
  void run_count_only();
  void record_reg_undo(int r);
  void record_mem_undo(std::uint32_t array, std::int64_t tile);
  isa::Operand overwritten(const isa::Instruction& in) const;
  const Tile& src(const isa::Operand& o);
  void count_access(const isa::Instruction& in, int sign, bool notify = true);
  std::int64_t flat_tile(const isa::Operand& o) const;
  void tile_extent(std::uint32_t array, std::int64_t tr, std::int64_t tc, std::int32_t& vr,
                   std::int32_t& vc) const;
  void update_sram(int r, std::uint64_t old_bytes);
  void set_symbol(int r, std::string s);

  isa::Program prog_;
  MachineOptions opts_;
  isa::MachineConfig config_;
  int regs_ = 0;
  std::string regs_source_;
  bool scalar_ = true;
  bool uses_mask_ = false;  // MASK reads tile metadata, which the scalar fast path does not keep
  bool static_ok_ = true;  // no register is read before it is written

  std::uint64_t pc_ = 0;
  Counters counters_;
  std::vector<Tile> regs_state_;
  std::vector<std::uint8_t> reg_written_;
  std::vector<std::string> reg_sym_;
  std::vector<ArrayState> arrays_;
  std::vector<ArrayState> initial_arrays_;
  // Found on first use: count-only traffic runs build a machine per piece of a long schedule
  // and never ask.
  mutable std::vector<bool> is_input_, is_output_;
  mutable bool io_found_ = false;
  std::uint64_t sram_in_use_ = 0, sram_peak_ = 0;

  // On the scalar machine with values (scalar_undo_), undo_ stays empty and the pool holds one
  // value a step: the old value of what the step overwrote (0 for a register not yet written).
  // The instruction names the target, and first_write_ says whether a register held a value.
  // The f32 machine keeps them as float (f32_pool_): 4 bytes a step.
  bool scalar_undo_ = false;
  std::size_t history_steps() const;
  void push_old(double v);
  isa::BigVector<Undo> undo_;
  isa::BigVector<double> value_pool_;
  isa::BigVector<float> f32_pool_;
  std::vector<Tile> meta_pool_;  // shape only (v left empty)
  std::vector<std::string> sym_pool_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> sram_hist_;

  // The scalar trace decoded for the hot loop: 16 bytes an instruction.
  struct FastOp {
    std::uint8_t op;
    std::uint16_t s0, s1, s2, d;  // source registers in operand order, destination
    std::uint16_t array;
    std::uint32_t elem;           // element index of a LOAD or STORE
  };
  void decode_fast();
  isa::BigVector<FastOp> fast_;  // one per instruction, then an end marker (op = kOpcodeCount)
  bool fast_ok_ = false;  // decode_fast found every array and element index within FastOp's fields
  // First step that writes each register (size() when none does). The trace is straight-line,
  // so register r holds a value at pc exactly when first_write_[r] < pc.
  std::vector<std::uint64_t> first_write_;
};

}  // namespace flashsim::sim

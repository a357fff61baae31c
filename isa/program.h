// An assembled program: a straight-line trace of instructions over named DRAM arrays.
// Loops in the source are expanded at assembly time, so the machine only ever sees a trace.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "isa/huge_pages.h"
#include "isa/isa.h"
#include "isa/units.h"

namespace flashsim::isa {

struct SourceLoc {
  std::uint32_t line = 0;  // 1-based; 0 for generated code
  std::uint32_t col = 0;
};

// An operand as the assembler and the disassembler see it. Instructions do not store this
// struct: operand() builds it from the compact record below, set_operand() packs it.
struct Operand {
  enum class Kind : std::uint8_t { None, Reg, Mem };
  Kind kind = Kind::None;
  bool transposed = false;   // register operand written Rn^T (tile machine)
  std::uint16_t reg = 0;
  std::uint32_t array = 0;   // index into Program::arrays
  std::int64_t row = 0;      // tile row index
  std::int64_t col = 0;      // tile column index
  bool operator==(const Operand&) const = default;
};

// Which operand of op is in memory (LOAD's source, STORE's destination), or -1. No opcode has two.
inline constexpr std::array<std::int8_t, kOpcodeCount> kMemorySlot = [] {
  std::array<std::int8_t, kOpcodeCount> slot{};
  for (std::size_t op = 0; op < kOpcodeCount; ++op) {
    slot[op] = -1;
    const OpInfo& i = kInstructionTable[op];
    for (int k = i.operand_count; k-- > 0;)
      if (i.operands[k] == OperandKind::MemSrc || i.operands[k] == OperandKind::MemDst) slot[op] = static_cast<std::int8_t>(k);
  }
  return slot;
}();
constexpr int memory_slot(Opcode op) { return kMemorySlot[static_cast<std::size_t>(op)]; }

// One instruction in 16 bytes, so that a 10 M-instruction trace is 160 MB and streams through
// the cache. Operand kinds follow from the opcode (isa.h's table): the record keeps up to four
// registers, or one register and one memory location. Tile indices are 32-bit here (the
// assembler caps arrays at 2^31 elements). Where it came from in the source is in
// Program::locs. Set op before the operands: it decides how they are packed.
class Instruction {
 public:
  Opcode op = Opcode::MOV;

  Instruction() = default;
  Instruction(Opcode o, std::initializer_list<Operand> operands) : op(o) {
    int k = 0;
    for (const Operand& x : operands) set_operand(k++, x);
  }

  // Operand k (0-based) as a value; kind None past the opcode's operand count.
  Operand operand(int k) const {
    Operand o;
    const OpInfo& i = info(op);
    if (k < 0 || k >= i.operand_count) return o;
    if (k == memory_slot(op)) {
      o.kind = Operand::Kind::Mem;
      o.array = array();
      o.row = row();
      o.col = col();
    } else {
      o.kind = Operand::Kind::Reg;
      o.reg = reg(k);
      o.transposed = transposed(k);
    }
    return o;
  }
  // Throws std::invalid_argument for an operand of the wrong kind for its slot and
  // std::out_of_range for a tile index outside 0..2^32-1.
  void set_operand(int k, const Operand& o) {
    const int mem = memory_slot(op);
    if (k < 0 || k >= info(op).operand_count) {
      if (o.kind != Operand::Kind::None) bad_operand(k, o);
    } else if (k == mem) {
      if (o.kind != Operand::Kind::Mem || o.row < 0 || o.col < 0 || o.row > 0xffffffffLL || o.col > 0xffffffffLL)
        bad_operand(k, o);
      w_ = {o.array, static_cast<std::uint32_t>(o.row), static_cast<std::uint32_t>(o.col)};
    } else {
      if (o.kind != Operand::Kind::Reg) bad_operand(k, o);
      const int n = mem >= 0 ? 0 : k;
      if (n == 0) reg0_ = o.reg;
      else if (n == 1) w_[0] = (w_[0] & 0xffff0000u) | o.reg;
      else if (n == 2) w_[0] = (w_[0] & 0xffffu) | (std::uint32_t{o.reg} << 16);
      else w_[1] = o.reg;
      transposed_ = static_cast<std::uint8_t>((transposed_ & ~(1u << k)) | (o.transposed ? 1u << k : 0u));
    }
  }

  // Field access without building an Operand (the simulator's hot loops).
  std::uint16_t reg(int k) const {  // operand k is a register
    const int n = memory_slot(op) >= 0 ? 0 : k;  // LOAD and STORE have one register
    return n == 0 ? reg0_ : static_cast<std::uint16_t>(n == 3 ? w_[1] : w_[0] >> (n == 2 ? 16 : 0));
  }
  bool transposed(int k) const { return (transposed_ >> k) & 1u; }
  bool any_transposed() const { return transposed_ != 0; }
  std::uint32_t array() const { return w_[0]; }  // the memory operand's array, row and column
  std::uint32_t row() const { return w_[1]; }
  std::uint32_t col() const { return w_[2]; }

  bool operator==(const Instruction&) const = default;

 private:
  [[noreturn]] void bad_operand(int k, const Operand& o) const;
  std::uint8_t transposed_ = 0;  // bit k: operand k is read as Rn^T
  std::uint16_t reg0_ = 0;       // the first register operand
  // Registers 2, 3 (low and high half of w_[0]) and 4 (w_[1]), or the memory operand.
  std::array<std::uint32_t, 3> w_{};
};
static_assert(sizeof(Instruction) == 16);

// Where each instruction came from, without a record per instruction: distinct source
// positions (sites) and runs of instructions whose sites repeat with a period, as a loop body
// does. Straight-line code is one run; a loop adds a run or a few.
class SourceMap {
 public:
  std::uint32_t add_site(SourceLoc loc) {
    sites_.push_back(loc);
    return static_cast<std::uint32_t>(sites_.size() - 1);
  }
  // The next instruction (index size()) came from site.
  void push_back(std::uint32_t site) {
    if (!runs_.empty()) {
      const Run& r = runs_.back();
      const std::uint64_t len = count_ - r.first;
      // Extends the last run when the site is the one its pattern predicts.
      if (r.period ? site == r.site0 + len % r.period : site == r.site0 + len) {
        ++count_;
        return;
      }
    }
    start_run(site);
  }
  // Instructions past size() (generated code) have no location: {0, 0}.
  SourceLoc operator[](std::uint64_t instruction) const;
  std::uint64_t size() const { return count_; }
  std::size_t run_count() const { return runs_.size(); }
  // f(index, loc) for every mapped instruction in order, without a search per instruction.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      const Run& run = runs_[r];
      const std::uint64_t end = r + 1 < runs_.size() ? runs_[r + 1].first : count_;
      std::uint32_t k = 0;
      for (std::uint64_t i = run.first; i < end; ++i) {
        f(i, sites_[run.site0 + k]);
        if (++k == run.period) k = 0;
      }
    }
  }
  void clear() { *this = SourceMap{}; }

 private:
  void start_run(std::uint32_t site);
  struct Run {
    std::uint64_t first;   // first instruction of the run
    std::uint32_t site0;   // its site; instruction first + k has site0 + k % period
    std::uint32_t period;  // 0 while the sites only count up
  };
  std::vector<SourceLoc> sites_;
  std::vector<Run> runs_;
  std::uint64_t count_ = 0;
};

using Code = BigVector<Instruction>;

// A DRAM array of rows x cols elements split into tiles of tile_rows x tile_cols.
// On the scalar machine every tile is 1x1, so a tile index is an element index.
struct ArrayDecl {
  std::string name;
  int rank = 1;                   // 1: x[i]; 2: a[i][j] (indices are tile indices)
  std::int64_t rows = 0, cols = 1;
  std::int64_t tile_rows = 1, tile_cols = 1;
  int elem_bytes = 0;             // 0: the machine's default element size
  bool declared = false;          // shape given by a directive rather than inferred from use
  std::vector<double> input;      // row-major initial values (empty: random inputs)
  std::optional<double> fill;     // every element starts at this value

  std::int64_t tile_grid_rows() const { return (rows + tile_rows - 1) / tile_rows; }
  std::int64_t tile_grid_cols() const { return (cols + tile_cols - 1) / tile_cols; }
  std::int64_t tile_count() const { return tile_grid_rows() * tile_grid_cols(); }
  std::int64_t elements() const { return rows * cols; }
  bool operator==(const ArrayDecl&) const = default;
};

// A last-level cache between the machine and DRAM (a GPU's L2): `.l2 BYTES [line=L] [sector=S]`.
// Hopper's geometry is the default: 128-byte lines of 32-byte sectors.
struct L2Geometry {
  std::uint64_t capacity_bytes = 0;  // 0: no cache
  std::uint32_t line_bytes = 128;
  std::uint32_t sector_bytes = 32;
  // Lines a set holds, addresses hashed onto sets (0: fully associative, one set).
  std::uint32_t ways = 0;
  // Dirty lines a set may hold; one more makes its least recently used dirty line written back
  // (it stays, clean). 0: no limit, dirty lines leave only when evicted.
  std::uint32_t dirty_ways = 0;
  // Sets that share one dirty-line limit: when `dirty_group` sets together hold more than
  // dirty_ways x dirty_group dirty lines, the group's least recently used dirty line is written
  // back. 1: each set on its own. Pooling evens out how many dirty lines the random hash gives a
  // set, so the write-back starts later and more sharply (Hopper's probes: 4, kernels/RESULTS.md).
  std::uint32_t dirty_group = 1;
  // 0: every line hashed onto a set (and a partition) at random. N: the lines of each N-line page
  // spread evenly over the partitions and the sets (a rotation per page), pages at random, as an
  // XOR hash of a physical page's address bits does (a GPU allocation's pages: 2 MiB = 16384 lines).
  std::uint32_t page_lines = 0;
  // A far partition's copy of a line (sim/l2.h PartitionedL2) enters its set this many lines above
  // the least recently used one instead of at the most recent end (0): a low-priority copy.
  std::uint32_t copy_rank = 0;
  bool operator==(const L2Geometry&) const = default;
};
// Why the geometry cannot be modelled ("" when it can): line and sector powers of two, at most
// 32 sectors a line, a non-zero capacity of at least one line and below 2^31 lines.
std::string l2_geometry_error(const L2Geometry& g);

struct MachineConfig {
  std::optional<int> regs;                  // from a directive; else inferred
  int elem_bytes = 4;
  bool f64 = false;                         // registers hold float64 instead of float32
  std::optional<std::uint64_t> sram_bytes;  // register-file capacity (tile machine)
  std::optional<std::int64_t> causal_diag;  // .causal D: MASK also hides global col > global row + D
  std::optional<L2Geometry> l2;             // .l2: an L2 the run's traffic goes through (sim/l2_trace.h)
  std::array<std::uint32_t, kOpcodeCount> cycles = default_cycles();
  std::uint64_t seed = 1;

  static constexpr std::array<std::uint32_t, kOpcodeCount> default_cycles() {
    std::array<std::uint32_t, kOpcodeCount> c{};
    for (std::size_t i = 0; i < kOpcodeCount; ++i) c[i] = kInstructionTable[i].default_cycles;
    return c;
  }
  bool operator==(const MachineConfig&) const = default;
};

// What the time model (sim/timing.h) reads besides the code: the units (`.units`, `.unit`), the
// streams that issue the instructions (`.stream`), the barriers that order them (`.barrier`,
// `.arrive`, `.wait`) and the waits for an asynchronous result (`.wait_for R`). Empty unless the
// text uses those directives; the machine ignores it.
struct BarrierDecl {
  std::string name;
  std::uint32_t count = 1;  // arrivals that complete one phase
  bool operator==(const BarrierDecl&) const = default;
};
struct SyncPoint {
  std::uint64_t pc = 0;        // before instruction pc (pc == code size: after the last one)
  std::uint16_t stream = 0;
  std::uint16_t barrier = 0;   // index into TimingSpec::barriers
  bool wait = false;           // .wait (blocks the stream) or .arrive
  SourceLoc loc;
  // .wait_for R: the register whose last write before pc the stream waits for (barrier unused);
  // -1 for .arrive and .wait
  std::int32_t reg = -1;
  bool operator==(const SyncPoint& o) const {
    return pc == o.pc && stream == o.stream && barrier == o.barrier && wait == o.wait && reg == o.reg;
  }
};
struct TimingSpec {
  std::optional<UnitsConfig> units;     // .units: the time model is on
  std::vector<std::string> streams;     // stream names; empty: one stream, "main"
  std::vector<std::uint16_t> stream_of; // per instruction when streams is not empty
  std::vector<BarrierDecl> barriers;
  std::vector<SyncPoint> syncs;         // in text order
  bool empty() const { return !units && streams.empty() && barriers.empty() && syncs.empty(); }
  std::uint16_t stream(std::uint64_t pc) const { return stream_of.empty() ? 0 : stream_of[pc]; }
  bool operator==(const TimingSpec&) const = default;
};

struct Program {
  std::string name = "<input>";            // file name, for messages
  std::vector<std::string> source_lines;   // the text it came from (may be empty)
  Code code;
  SourceMap locs;                          // where code[i] came from
  std::vector<ArrayDecl> arrays;
  MachineConfig config;
  TimingSpec timing;
  int highest_reg = -1;

  SourceLoc loc(std::size_t i) const { return locs[i]; }
  std::optional<std::uint32_t> find_array(const std::string& name) const;
  // Register count: the directive's, else highest used + 1.
  int register_count() const { return config.regs.value_or(highest_reg + 1); }
  bool is_scalar() const;  // every array has 1x1 tiles and no operand is transposed
};

// Canonical text: directives that make the program self-contained, then one instruction a line.
std::string disassemble(const Program& p);
std::string format_instruction(const Program& p, const Instruction& in);
std::string format_operand(const Program& p, const Operand& o);

// Equality of what runs (code, arrays, machine), ignoring source text and locations.
bool same_program(const Program& a, const Program& b);

}  // namespace flashsim::isa

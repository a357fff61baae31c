// The lesson framework: a lesson is a folder lessons/NN-name/ with a README.md, the traces a
// learner edits, reference solutions and a data-driven check spec (check.spec). The checker
// runs a trace on fresh random inputs, compares every output cell with a float64 reference
// computed in C++, and holds the trace to the lesson's register count and budgets.
//
// Adding a lesson needs no edit of this code: drop the folder with its check.spec. A new
// float64 reference goes in a .cpp in the lesson folder (lessons/CMakeLists.txt picks up
// lessons/*/*.cpp) with one line: FLASHSIM_LESSON_REFERENCE("name", function);
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/program.h"

namespace flashsim::sim {
class Machine;
}

namespace flashsim::lessons {

// A DRAM array as the reference sees it: rows x cols float64, row-major (rank 1: cols == 1).
struct Matrix {
  std::int64_t rows = 0, cols = 1;
  std::vector<double> v;
  double& at(std::int64_t r, std::int64_t c) { return v[static_cast<std::size_t>(r * cols + c)]; }
  double at(std::int64_t r, std::int64_t c) const { return v[static_cast<std::size_t>(r * cols + c)]; }
};
using ArraySet = std::map<std::string, Matrix>;

// Fills the output arrays of `arrays` (already shaped, zeroed) from its input arrays.
using ReferenceFn = std::function<void(ArraySet& arrays)>;

// One output cell (or a whole array when row/col are empty) named in the spec's `outputs`.
struct OutputSpec {
  std::string array;
  std::optional<std::int64_t> row, col;
};

struct ArrayShape {
  std::string name;
  int rank = 2;
  std::int64_t rows = 1, cols = 1;
  std::int64_t tile_rows = 1, tile_cols = 1;  // the tile machine (lessons 10+): how LOAD/STORE split it
  int elem_bytes = 0;                         // bytes per DRAM element; 0: the machine's default
};

// Budgets are upper bounds; absent means unlimited.
struct Budget {
  // cycles, loads, stores, dram_reads, dram_writes, instructions, an opcode mnemonic; on the tile
  // machine also bytes_read, bytes_written, sram (peak bytes held in registers) and the bytes of
  // one array: read:NAME, written:NAME. With an L2: hbm_bytes_read, hbm_bytes_written.
  std::string counter;
  std::uint64_t limit = 0;
  std::string why;  // optional closed form the limit comes from ("N*d*2"), quoted on failure
};

// A lower bound on the share of the timed cycles one unit is busy (`min_busy = tensor 0.8`).
struct BusyBudget {
  std::string unit;  // memory, tensor, special or vector
  double least = 0;  // 0..1
};

// A gradable exercise. Most lessons have one part; a lesson can add more (a quiz).
struct Part {
  std::string name = "main";
  std::string title;
  std::string exercise;   // file name inside the lesson folder ("" when none)
  std::string solution;   // reference solution; CI checks it
  std::string reference;  // name of a registered ReferenceFn
  std::vector<ArrayShape> arrays;
  std::vector<OutputSpec> outputs;
  std::map<std::string, std::pair<double, double>> ranges;  // random input range per array (default -1..1)
  std::map<std::string, double> constants;  // arrays whose every element starts at this value, not random
  std::map<std::string, std::int64_t> params;               // .param overrides
  int regs = 0;                                             // the machine's register file
  std::vector<Budget> budgets;
  int trials = 5;            // fresh random inputs per check
  double tolerance = 1e-9;   // relative, against the float64 reference
  bool f64 = true;           // registers hold float64 (f32 = false models the float machine)
  std::vector<std::string> custom_checks;  // names of registered CustomCheck functions
  // Inputs the reference computes from the random ones (the forward O and L of a backward
  // lesson): not random, not compared, handed to the machine after the reference ran.
  std::vector<std::string> derived;
  std::optional<std::uint64_t> sram_bytes;  // the machine's SRAM capacity (it faults beyond it)
  std::optional<isa::L2Geometry> l2;        // an L2 between the machine and DRAM (budgets hbm_*)
  int reg_elem_bytes = 0;  // bytes a register element counts in the SRAM; the trace's .elem must agree
  // The time model's GPU preset (`units = h100`): the trace must say `.units h100` and may not
  // change a unit (`.unit`); the check times it (sim/timing.h) for the budgets below.
  std::string units;
  std::optional<double> max_timed_cycles;  // `max_timed_cycles = N`: the time model's cycles
  std::vector<BusyBudget> min_busy;         // `min_busy = UNIT FRACTION`
  bool tiled() const;      // some array has tiles larger than 1x1
};

struct Lesson {
  std::string id;    // "01"
  std::string slug;  // "dot-product"
  std::string dir;   // absolute or relative path of the folder
  std::string title;
  std::vector<Part> parts;
  std::string folder_name() const { return id + "-" + slug; }
  const Part* find_part(const std::string& name) const;
};

// A spec that cannot be read: FILE:LINE:COL: error: message.
class SpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct Counts {
  std::uint64_t cycles = 0, instructions = 0, loads = 0, stores = 0, macs = 0;
  std::uint64_t dram_reads = 0, dram_writes = 0;
  std::uint64_t bytes_read = 0, bytes_written = 0, sram_peak = 0;
  // With the lesson's L2: bytes that reached DRAM, and the L2's sector hits and misses.
  std::uint64_t hbm_bytes_read = 0, hbm_bytes_written = 0, l2_hits = 0, l2_misses = 0;
  int regs_used = 0;  // highest register used + 1
  // With the lesson's units: the time model's cycles and each unit's busy fraction
  // (isa::kUnitNames order); timed is false when the lesson has no units.
  bool timed = false;
  double timed_cycles = 0;
  std::array<double, 4> busy{};
  std::string bound;  // the unit that bounds the time, or "latency"
};

// The outcome of one check. `problems` holds complete sentences, most useful first.
struct Verdict {
  bool passed = false;
  std::vector<std::string> problems;
  Counts counts;         // measured on the first trial (when the trace ran at all)
  std::string trace;     // the file checked
  // The trace redefines the lesson's machine (.cost, ...): problems holds one FILE:LINE:COL
  // error, and the CLI treats it as bad input (exit 2), not as a failed grade.
  bool refused = false;
  // "PASS lesson 02 (main): 25 cycles (budget 25), 13 LOADs (budget 13) ..." or FAIL and problems.
  std::string report(const Lesson& lesson, const Part& part) const;
};

// --- extension points -------------------------------------------------------------------
bool register_reference(const std::string& name, ReferenceFn fn);
const ReferenceFn* find_reference(const std::string& name);

// Extra checks a spec can name (`check = NAME`): append sentences to `problems` to fail.
using CustomCheck = std::function<void(const sim::Machine& ran, const Part& part, std::vector<std::string>& problems)>;
bool register_custom_check(const std::string& name, CustomCheck fn);

#define FLASHSIM_LESSON_CAT2(a, b) a##b
#define FLASHSIM_LESSON_CAT(a, b) FLASHSIM_LESSON_CAT2(a, b)
#define FLASHSIM_LESSON_REFERENCE(name, fn) \
  static const bool FLASHSIM_LESSON_CAT(flashsim_lesson_ref_, __LINE__) = ::flashsim::lessons::register_reference(name, fn)
#define FLASHSIM_LESSON_CHECK(name, fn) \
  static const bool FLASHSIM_LESSON_CAT(flashsim_lesson_chk_, __LINE__) = ::flashsim::lessons::register_custom_check(name, fn)

// --- finding lessons --------------------------------------------------------------------
// $FLASHSIM_LESSONS_DIR, else the source tree's lessons/ folder.
std::string lessons_root();
// Every folder NN-name under root that holds a check.spec, sorted by name.
std::vector<std::string> lesson_folders(const std::string& root = lessons_root());
// load_lesson of every folder; throws SpecError on the first bad spec.
std::vector<Lesson> discover_lessons(const std::string& root = lessons_root());
// Reads one folder's check.spec. Throws SpecError.
Lesson load_lesson(const std::string& dir);
// "01", "1", "dot-product", "01-dot-product"; throws std::invalid_argument listing the lessons.
Lesson find_lesson(const std::string& name, const std::string& root = lessons_root());
// The part a file belongs to: the one whose exercise/solution has the file's name, else the first.
const Part& part_for_file(const Lesson& lesson, const std::string& file);
// "NAME" or "NAME:PART" and the file to grade: the lesson and its part, the one PART names
// (std::invalid_argument listing the parts when none has that name) or else the file's.
struct LessonChoice {
  Lesson lesson;
  std::size_t part = 0;     // index into lesson.parts
  bool part_named = false;  // NAME carried a :PART
  const Part& selected() const { return lesson.parts[part]; }
};
LessonChoice choose_lesson(const std::string& name, const std::string& file);

// --- checking -----------------------------------------------------------------------------
Verdict check_file(const Lesson& lesson, const Part& part, const std::string& trace_path);
Verdict check_text(const Lesson& lesson, const Part& part, const std::string& text, const std::string& name);
Verdict check_program(const Lesson& lesson, const Part& part, isa::Program program);

// The learner's file for a lesson from $FLASHSIM_LESSON_FILE: used when the file lies in this
// lesson's folder, or lies outside every lesson folder; otherwise nullopt (check the solution).
std::optional<std::string> learner_file_for(const Lesson& lesson);

// A budget counter as a learner reads it: "K bytes read", "SRAM bytes", "LOADs".
std::string budget_label(const std::string& counter);
// The time budgets of a part as a learner reads them: "timed cycles <= 9000, tensor busy >= 80%";
// empty when it has none.
std::string timing_budget_text(const Part& part);

}  // namespace flashsim::lessons

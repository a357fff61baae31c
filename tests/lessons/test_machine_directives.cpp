// A learner's trace may not redefine the lesson's machine: .cost, .dtype, .elem, .sram, more
// .regs, or its own values for the lesson's inputs are refused with FILE:LINE:COL (exit 2).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "lessons/lesson.h"
#include "run_command.h"
#include "tests/scratch_dir.h"

using namespace flashsim::lessons;

namespace {

std::string source(const std::string& rel) {
  std::ifstream in(std::string(FLASHSIM_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The text with `line` inserted before line `before` (1-based).
std::string insert_line(const std::string& text, int before, const std::string& line) {
  std::size_t pos = 0;
  for (int k = 1; k < before; ++k) pos = text.find('\n', pos) + 1;
  return text.substr(0, pos) + line + "\n" + text.substr(pos);
}

Verdict check(const std::string& folder, const std::string& text) {
  Lesson l = load_lesson(std::string(FLASHSIM_SOURCE_DIR) + "/lessons/" + folder);
  return check_text(l, l.parts.front(), text, "my.fsa");
}

std::string first_problem(const Verdict& v) { return v.problems.empty() ? std::string() : v.problems.front(); }

}  // namespace

TEST_CASE("a .cost line in a learner's trace is refused, naming the line", "[lessons][directives]") {
  const std::string solution = source("lessons/01-dot-product/solution.fsa");
  REQUIRE(check("01-dot-product", solution).passed);
  Verdict free = check("01-dot-product", insert_line(solution, 3, ".cost LOAD=0, MAC_Z=0, MAC=0, STORE=0"));
  CHECK_FALSE(free.passed);
  CHECK(free.refused);
  CHECK(first_problem(free).rfind("my.fsa:3:1: error: .cost changes the cycle costs", 0) == 0);
  // Indented, upper case, after the code: still found, at its column.
  Verdict late = check("01-dot-product", solution + "  .COST LOAD=1\n");
  CHECK(late.refused);
  CHECK(first_problem(late).rfind("my.fsa:10:3: error: .cost", 0) == 0);
}

TEST_CASE("directives that change the lesson's registers, value type, element size or SRAM are refused",
          "[lessons][directives]") {
  const std::string l01 = source("lessons/01-dot-product/solution.fsa");
  std::string four = l01;
  four.replace(four.find(".regs 3"), 7, ".regs 4");
  Verdict more = check("01-dot-product", four);
  CHECK(more.refused);
  CHECK(first_problem(more) == "my.fsa:2:1: error: your trace declares .regs 4, but the machine has 3 registers "
                               "(a trace may declare fewer, never more)");
  Verdict dtype = check("01-dot-product", insert_line(l01, 3, ".dtype f32"));
  CHECK(dtype.refused);
  CHECK(first_problem(dtype).rfind("my.fsa:3:1: error: your trace declares .dtype f32, but the lesson's machine holds f64", 0) == 0);
  Verdict elem = check("01-dot-product", insert_line(l01, 3, ".elem 2"));
  CHECK(elem.refused);
  CHECK(first_problem(elem).rfind("my.fsa:3:1: error: your trace declares .elem 2", 0) == 0);
  CHECK(check("01-dot-product", insert_line(l01, 3, ".elem 4")).passed);  // what the machine has

  // Lesson 05's machine holds f32 registers; saying so is fine, f64 is not.
  const std::string l05 = source("lessons/05-safe-softmax/solution.fsa");
  CHECK(check("05-safe-softmax", insert_line(l05, 5, ".dtype f32")).passed);
  CHECK(check("05-safe-softmax", insert_line(l05, 5, ".dtype f64")).refused);

  // The tile machine: a register element's SRAM bytes, and the SRAM when the lesson sets it.
  Lesson l10 = load_lesson(std::string(FLASHSIM_SOURCE_DIR) + "/lessons/10-element-is-tile");
  const std::string t10 = source("lessons/10-element-is-tile/solution.fsa");
  Verdict tile_elem = check_text(l10, l10.parts.front(), insert_line(t10, 12, ".elem 2"), "my.fsa");
  CHECK(tile_elem.refused);
  CHECK(first_problem(tile_elem) == "my.fsa:12:1: error: your trace declares .elem 2, but a register element of this "
                                    "machine takes 4 bytes (leave .elem out)");
  Part with_sram = l10.parts.front();
  with_sram.sram_bytes = 4096;
  Verdict sram = check_text(l10, with_sram, insert_line(t10, 12, ".sram 1000000"), "my.fsa");
  CHECK(sram.refused);
  CHECK(first_problem(sram).rfind("my.fsa:12:1: error: your trace declares .sram 1000000, but the lesson's machine has 4096", 0) == 0);
  CHECK(check_text(l10, with_sram, insert_line(t10, 12, ".sram 4096"), "my.fsa").passed);
}

TEST_CASE("a learner's trace may not set the values of the lesson's inputs", "[lessons][directives]") {
  const std::string l05 = source("lessons/05-safe-softmax/solution.fsa");
  Verdict input = check("05-safe-softmax", insert_line(l05, 8, ".input x 1,2,3,4,5,6,7,8"));
  CHECK(input.refused);
  CHECK(first_problem(input).rfind("my.fsa:8:1: error: .input sets the values of 'x', which the lesson gives", 0) == 0);
  // Lesson 07's constants: the value the lesson fills in passes, another is refused.
  const std::string l07 = source("lessons/07-welford/solution.fsa");
  REQUIRE(l07.find(".fill one 1\n") != std::string::npos);
  CHECK(check("07-welford", l07).passed);
  std::string two = l07;
  two.replace(two.find(".fill one 1\n"), 12, ".fill one 2\n");
  Verdict fill = check("07-welford", two);
  CHECK(fill.refused);
  CHECK(first_problem(fill) == "my.fsa:13:1: error: .fill changes the values of 'one', which the lesson fills with 1; "
                               "remove the line or give that value");
}

TEST_CASE("every lesson's solution and exercise keep the lesson's machine", "[lessons][directives]") {
  for (const auto& dir : lesson_folders(lessons_root())) {
    Lesson l = load_lesson(dir);
    for (const auto& part : l.parts)
      for (const auto& file : {part.solution, part.exercise}) {
        if (file.empty()) continue;
        Verdict v = check_file(l, part, (std::filesystem::path(dir) / file).string());
        INFO(dir << " " << file << ": " << first_problem(v));
        CHECK_FALSE(v.refused);
      }
  }
}

TEST_CASE("flashsim lesson check refuses a .cost line with FILE:LINE:COL and exit 2", "[lessons][directives][cli]") {
  flashsim::test::ScratchDir tmp;
  const std::string file = tmp.path("free.fsa");
  std::ofstream(file) << insert_line(source("lessons/01-dot-product/solution.fsa"), 3, ".cost LOAD=0");
  auto [status, out] = run_command(std::string(FLASHSIM_EXE) + " lesson check 01 " + file);
  INFO(out);
  CHECK(status == 2);
  CHECK(out.find(file + ":3:1: error: .cost changes the cycle costs, which the lesson's machine defines") != std::string::npos);
  CHECK(out.find("PASS") == std::string::npos);
}

TEST_CASE("flashsim lesson check of a file that is not there: one error, exit 2", "[lessons][cli]") {
  // it printed FAIL (the trace does not assemble) once per part, lesson 16 twice, and exited 1
  flashsim::test::ScratchDir tmp;
  const std::string file = tmp.path("my16.fsa");
  auto [status, out] = run_command(std::string(FLASHSIM_EXE) + " lesson check 16 " + file);
  INFO(out);
  CHECK(status == 2);
  CHECK(out.find(file + ": error: cannot open file") != std::string::npos);
  CHECK(out.find("FAIL") == std::string::npos);
}

TEST_CASE("flashsim lesson check of a directory: one error, exit 2", "[lessons][cli]") {
  // an ifstream opens a directory, so it got past the check above: FAIL per part, exit 1
  flashsim::test::ScratchDir tmp;
  auto [status, out] = run_command(std::string(FLASHSIM_EXE) + " lesson check 16 " + tmp.dir().string());
  INFO(out);
  CHECK(status == 2);
  CHECK(out.find(": error: is a directory, not a trace file") != std::string::npos);
  CHECK(out.find("FAIL") == std::string::npos);
}

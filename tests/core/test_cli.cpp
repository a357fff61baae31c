// The flashsim executable: exit codes, the JSON keys, and the step table.
#include <catch2/catch.hpp>
#include <fstream>

#include "main_helpers.h"
#include "tests/scratch_dir.h"

namespace {
using Result = flashsim::test::CommandResult;
Result sh(const std::string& args) { return flashsim::test::run_flashsim(args); }

std::string write_temp(const flashsim::test::ScratchDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("flashsim run prints the lesson's step table and costs", "[cli]") {
  auto r = sh("run --symbolic " + flashsim::test::source_path("lessons/01-dot-product/solution.fsa"));
  CHECK(r.status == 0);
  CHECK(has(r.out, "Step | Instruction        | R0  | R1  | R2"));
  CHECK(has(r.out, "MAC R0, R1, R2, R2 | a01 | b10 | a00*b00 + a01*b10"));
  CHECK(has(r.out, "cycles        7"));
  CHECK(has(r.out, "LOADs 4, STOREs 1, MACs 2, other ops 0"));
}

TEST_CASE("flashsim run --json has the documented keys", "[cli]") {
  auto r = sh("run --json --input a=1,2,3,4 --input b=5,6,7,8 " +
              flashsim::test::source_path("lessons/02-locality/solution.fsa"));
  REQUIRE(r.status == 0);
  for (const char* key : {"\"cycles\":25", "\"instructions\":25", "\"counts\":{", "\"LOAD\":13", "\"dram\":{",
                          "\"reads\":13", "\"writes\":4", "\"bytes_read\":52", "\"bytes_written\":16",
                          "\"registers\":3", "\"arrays\":{", "\"shape\":[2,2]", "\"values\":[19,22,43,50]"})
    CHECK(has(r.out, key));
}

TEST_CASE("flashsim options: --regs, --cost, --param, --seed, --version", "[cli]") {
  auto f = flashsim::test::source_path("lessons/05-safe-softmax/solution.fsa");
  CHECK(has(sh("run --no-table --param n=4 " + f).out, "DRAM reads    12 elements"));
  CHECK(has(sh("run --no-table --cost LOAD=100 --param n=4 " + f).out, "cycles        1"));
  auto a = sh("run --json --seed 3 " + f).out, b = sh("run --json --seed 3 " + f).out, c = sh("run --json --seed 4 " + f).out;
  CHECK(a == b);
  CHECK(a != c);
  auto r = sh("run --regs 2 " + f);
  CHECK(r.status == 2);
  CHECK(has(r.out, "solution.fsa:"));
  CHECK(has(r.out, "outside the machine: it has 2 registers (--regs)"));
  auto typo = sh("run --no-table --param N=4 " + f);  // the lesson declares n, not N
  CHECK(typo.status == 2);
  CHECK(has(typo.out, "--param N: " + f + " declares no .param N (it declares: n)"));
  CHECK(sh("--version").status == 0);
  CHECK(has(sh("run --help").out, "--symbolic"));
}

TEST_CASE("bad input exits 2 and machine faults exit 1, with one clear message", "[cli]") {
  flashsim::test::ScratchDir tmp;
  auto bad = sh("run " + write_temp(tmp, "bad.fsa", "LOAD x[0], R0\nFROB R0\n"));
  CHECK(bad.status == 2);
  CHECK(has(bad.out, tmp.path("bad.fsa") + ":2:1: error: unknown instruction 'FROB'"));
  auto fault = sh("run --input x=0 " + write_temp(tmp, "div.fsa", "LOAD x[0], R0\nDIV R0, R0, R1\n"));
  CHECK(fault.status == 1);
  CHECK(has(fault.out, "step 2 (line 2): error: division by zero"));
  auto missing = sh("run /nonexistent/file.fsa");
  CHECK(missing.status == 2);
  CHECK(has(missing.out, "cannot open file"));
  auto dir = sh("run " + flashsim::test::source_path("lessons"));
  CHECK(dir.status == 2);
  CHECK(has(dir.out, "lessons: error: is a directory, not a trace file"));
  auto empty = sh("run " + write_temp(tmp, "empty.fsa", ""));
  CHECK(empty.status == 2);
  auto binary = sh("run /bin/true");
  CHECK(binary.status == 2);
  CHECK(has(binary.out, "binary file"));
  CHECK(sh("run --input x=1,zz " + write_temp(tmp, "in.fsa", "LOAD x[0], R0\n")).status == 2);
  CHECK(sh("run --cost NOPE=3 " + write_temp(tmp, "in2.fsa", "LOAD x[0], R0\n")).status == 2);
  auto typo = sh("rnu lessons/01-dot-product/solution.fsa");
  CHECK(typo.status == 2);
  CHECK(has(typo.out, "flashsim: error: unknown command 'rnu' (commands: "));
  CHECK(has(typo.out, "run"));
  // an input that does not fit is bad input before any step, not a fault at "step 0"
  auto input = sh("run --input zz=1,2 " + write_temp(tmp, "in3.fsa", "LOAD x[0], R0\n"));
  CHECK(input.status == 2);
  CHECK(input.out.rfind("error: --input names 'zz', which the program never uses", 0) == 0);
  CHECK(sh("frobnicate").status == 2);
}

TEST_CASE("the executables are built into build/<preset>/bin", "[cli]") {
  const std::string exe = FLASHSIM_EXE;
  CHECK(has(exe, "/bin/flashsim"));
}

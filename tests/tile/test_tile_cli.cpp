// The CLI end to end: gen writes a trace that run executes and counts; traffic prints the bytes.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/scratch_dir.h"

namespace {
using flashsim::test::ScratchDir;

std::string run_cmd(const std::string& cmd, int& rc) {
  ScratchDir tmp;
  std::string out_file = tmp.path("out.txt");
  rc = std::system((cmd + " > " + out_file + " 2>&1").c_str());
  std::ifstream f(out_file);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("flashsim gen attention writes a trace that flashsim run executes and counts", "[tile][cli]") {
  const std::string bin = FLASHSIM_BINARY;
  ScratchDir tmp;
  const std::string trace = tmp.path("fa2.fsa"), svg_path = tmp.path("sweep.svg");
  int rc = 0;
  run_cmd(bin + " gen attention --schedule fa2 --n 1024 --d 64 --br 64 --bc 64 -o " + trace, rc);
  REQUIRE(rc == 0);
  std::string out = run_cmd(bin + " run " + trace + " --no-table", rc);
  CHECK(rc == 0);
  CHECK(out.find("(4325376 bytes)") != std::string::npos);  // Q once + K, V once per Q block
  out = run_cmd(bin + " traffic attention --schedule all --n 1024 --d 64 --no-arrays", rc);
  CHECK(rc == 0);
  CHECK(out.find("4325376") != std::string::npos);
  CHECK(out.find("2228224") != std::string::npos);  // FA1 writes
  out = run_cmd(bin + " traffic attention --schedule fa2 --n 0", rc);
  CHECK(rc != 0);
  out = run_cmd(bin + " sweep --n 256 --d 16 --m-min 4096 --m-max 16384 --svg " + svg_path, rc);
  CHECK(rc == 0);
  std::ifstream svg(svg_path);
  std::stringstream s;
  s << svg.rdbuf();
  CHECK(s.str().find("<svg") == 0);
  CHECK(s.str().find("FA2") != std::string::npos);
}

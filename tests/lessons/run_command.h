// Runs a shell command for the CLI tests: its exit status (-1 if it did not exit) and everything
// it printed, stdout and stderr together.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

inline std::pair<int, std::string> run_command(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Every executable catches what its main() throws: one "NAME: error: ..." line, exit 2.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/main_guard.h"

namespace {

// Runs body under guard_main with std::cerr captured.
std::pair<int, std::string> guarded(const std::function<int()>& body) {
  std::ostringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  int rc = flashsim::guard_main("tool", body);
  std::cerr.rdbuf(old);
  return {rc, err.str()};
}

}  // namespace

TEST_CASE("guard_main turns what main throws into one message and exit 2", "[main]") {
  CHECK(guarded([] { return 0; }) == std::pair<int, std::string>{0, ""});
  CHECK(guarded([] { return 1; }).first == 1);
  auto bad = guarded([]() -> int {
    throw std::invalid_argument("m, n, k must be non-negative multiples of 8 (got 1000x777x300)");
  });
  CHECK(bad.first == 2);
  CHECK(bad.second == "tool: error: m, n, k must be non-negative multiples of 8 (got 1000x777x300)\n");
  auto odd = guarded([]() -> int { throw 42; });
  CHECK(odd.first == 2);
  CHECK(odd.second == "tool: error: an exception that is not a std::exception\n");
}

TEST_CASE("every main() in the sources runs through guard_main", "[main]") {
  namespace fs = std::filesystem;
  const fs::path root(FLASHSIM_SOURCE_DIR);
  const std::regex main_def(R"(^\s*int\s+main\s*\()");
  int mains = 0;
  for (const char* dir : {"bench", "isa", "kernels", "lessons", "sim", "viewer", "tests"})
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".cu")) continue;
      std::ifstream in(e.path());
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::vector<std::string> lines;
      std::istringstream is(text);
      for (std::string line; std::getline(is, line);) lines.push_back(line);
      for (std::size_t i = 0; i < lines.size(); ++i)
        if (std::regex_search(lines[i], main_def)) {
          ++mains;
          // The call sits on the line of main() or just below it.
          std::string body = lines[i] + (i + 1 < lines.size() ? lines[i + 1] : "");
          INFO(fs::relative(e.path(), root).string() << ":" << i + 1 << ": " << lines[i]);
          CHECK(body.find("guard_main") != std::string::npos);
        }
    }
  CHECK(mains >= 12);  // flashsim, the viewer, flashsim-gpu, bench_kernels, the drivers, the benches
}

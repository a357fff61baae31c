// The pages show `$ flashsim ...` examples with their output. This test runs each one and checks
// that every output line the page shows is still printed, so the docs cannot drift from the tool.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "run_command.h"

namespace {

struct Example {
  std::string where;    // FILE:LINE of the `$` line
  std::string command;  // as written after `$ `
  std::vector<std::string> shown;
};

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

// `$` lines inside fenced blocks, each with the lines below it up to the next `$` or the fence.
std::vector<Example> examples_in(const std::filesystem::path& page, const std::string& name) {
  std::ifstream in(page);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::vector<Example> out;
  bool fenced = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (!fenced || lines[i].rfind("$ ", 0) != 0) continue;
    Example e{name + ":" + std::to_string(i + 1), lines[i].substr(2), {}};
    while (i + 1 < lines.size() && lines[i + 1].rfind("$ ", 0) != 0 && lines[i + 1].rfind("```", 0) != 0)
      e.shown.push_back(lines[++i]);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

TEST_CASE("every `$ flashsim` example on the pages prints the lines the page shows", "[docs]") {
  const std::filesystem::path root(FLASHSIM_SOURCE_DIR);
  std::vector<Example> all;
  auto add = [&](const std::filesystem::path& page) {
    auto found = examples_in(page, std::filesystem::relative(page, root).string());
    all.insert(all.end(), found.begin(), found.end());
  };
  add(root / "README.md");
  std::vector<std::filesystem::path> lesson_pages;
  for (const auto& entry : std::filesystem::directory_iterator(root / "lessons"))
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "README.md"))
      lesson_pages.push_back(entry.path() / "README.md");
  std::sort(lesson_pages.begin(), lesson_pages.end());
  for (const auto& p : lesson_pages) add(p);
  REQUIRE(all.size() >= 15);  // the pages had 17 when this test was written

  // The pages call the tool `flashsim` or `build/<preset>/bin/flashsim`; run the one just built.
  const std::regex tool(R"(^(build/[\w.-]+/bin/)?flashsim(?=\s))");
  // A page may annotate a line: two or more spaces, then `# ...`.
  const std::regex note(R"(\s{2,}#.*$)");
  for (const auto& e : all) {
    INFO(e.where << ": $ " << e.command);
    REQUIRE(std::regex_search(e.command, tool));
    auto [status, out] = run_command("cd '" + std::string(FLASHSIM_SOURCE_DIR) + "' && " +
                                     std::regex_replace(e.command, tool, std::string(FLASHSIM_EXE)));
    INFO("printed:\n" << out);
    CHECK(status >= 0);
    std::vector<std::vector<std::string>> printed;
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);) printed.push_back(words(l));
    // A table whose last column is a run time (seconds) shows a time that cannot repeat.
    auto first = std::find_if(e.shown.begin(), e.shown.end(), [](const std::string& s) { return !words(s).empty(); });
    const bool timed = first != e.shown.end() && words(*first).back() == "seconds";
    bool header = true;
    for (const auto& s : e.shown) {
      std::string line = std::regex_replace(s, note, "");
      auto want = words(line);
      if (want.empty() || line.find("left out") != std::string::npos) continue;
      if (timed && !header) want.pop_back();
      header = false;
      bool found = false;
      for (const auto& got : printed)
        if (got.size() >= want.size() && std::equal(want.begin(), want.end(), got.begin())) found = true;
      INFO("the page shows: " << s);
      CHECK(found);
    }
  }
}

// Every executable lives in build/<preset>/bin; a page or script naming another build folder's
// binary (build/default/lessons/flashsim) sends the reader to a file that is not there.
TEST_CASE("the pages and scripts name executables under build/<preset>/bin", "[docs]") {
  const std::filesystem::path root(FLASHSIM_SOURCE_DIR);
  std::vector<std::filesystem::path> files = {root / "README.md", root / "lessons/README.md",
                                              root / "kernels/README.md", root / "viewer/README.md",
                                              root / "docs/RESULTS.md", root / ".ci/run"};
  for (const char* dir : {"lessons", "kernels/tools", "bench"})
    for (const auto& entry : std::filesystem::directory_iterator(root / dir)) {
      const auto& p = entry.path();
      if (entry.is_directory() && std::filesystem::exists(p / "README.md")) files.push_back(p / "README.md");
      if (p.extension() == ".sh") files.push_back(p);
    }
  REQUIRE(files.size() >= 20);
  const std::regex build_path(R"(build/[\w.-]+/([\w.-]+)/[\w.-]+)");
  for (const auto& f : files) {
    std::ifstream in(f);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      for (std::sregex_iterator it(line.begin(), line.end(), build_path), end; it != end; ++it) {
        INFO(std::filesystem::relative(f, root).string() << ":" << n << ": " << line);
        CHECK((*it)[1] == "bin");
      }
    }
  }
}

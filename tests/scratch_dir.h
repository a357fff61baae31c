// A test's scratch folder: a fresh directory under the system temp directory, removed with
// everything in it when the guard goes out of scope. A failed REQUIRE throws, so the folder goes
// away on failure too, and parallel test processes never share one.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace flashsim::test {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "flashsim-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a scratch directory from " + pattern);
    dir_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;  // a destructor must not throw; a leftover is all that can go wrong
    std::filesystem::remove_all(dir_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // The path of a file in the folder (not created).
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace flashsim::test

// The tests' scratch-folder guard: fresh, private, and gone afterwards, also when a test fails.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "tests/scratch_dir.h"

namespace fs = std::filesystem;
using flashsim::test::ScratchDir;

TEST_CASE("a scratch folder is fresh, under the temp directory, and removed with its contents", "[scratch]") {
  fs::path kept;
  {
    ScratchDir a, b;
    CHECK(a.dir() != b.dir());
    CHECK(fs::is_directory(a.dir()));
    CHECK(fs::is_empty(a.dir()));
    CHECK(a.dir().parent_path() == fs::temp_directory_path());
    CHECK(a.dir().filename().string().rfind("flashsim-test-", 0) == 0);
    fs::create_directories(a.dir() / "nested" / "deeper");
    std::ofstream(a.path("nested/deeper/file.txt")) << "x";
    std::ofstream(a.path("top.fsa")) << "LOAD x[0], R0\n";
    kept = a.dir();
  }
  CHECK_FALSE(fs::exists(kept));
}

TEST_CASE("a scratch folder is removed when the test fails inside its scope", "[scratch]") {
  fs::path kept;
  // A failed REQUIRE throws out of the test body the same way.
  CHECK_THROWS_AS(
      [&] {
        ScratchDir tmp;
        kept = tmp.dir();
        std::ofstream(tmp.path("half-written.fsa")) << "LOAD";
        throw std::runtime_error("the test failed here");
      }(),
      std::runtime_error);
  REQUIRE_FALSE(kept.empty());
  CHECK_FALSE(fs::exists(kept));
}

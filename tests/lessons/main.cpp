// The lesson test runner: one Catch2 test per lesson part, found at start-up, so a new lesson
// folder becomes a test with no code change. By default each test checks the part's reference
// solution; FLASHSIM_LESSON_FILE=path checks a learner's trace instead (see lessons/README.md).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <deque>
#include <filesystem>

#include "lessons/lesson.h"
#include "sim/main_guard.h"

namespace {

using namespace flashsim::lessons;

class LessonPartTest : public Catch::ITestInvoker {
 public:
  LessonPartTest(std::string dir, std::string part) : dir_(std::move(dir)), part_(std::move(part)) {}
  void invoke() const override {
    Lesson lesson = load_lesson(dir_);  // a bad spec fails this test with its FILE:LINE:COL message
    const Part* part = lesson.find_part(part_);
    REQUIRE(part != nullptr);
    auto learner = learner_file_for(lesson);
    if (learner && part_for_file(lesson, *learner).exercise != part->exercise && lesson.parts.size() > 1) {
      // A learner's file of another part of this lesson: this part checks its solution. Parts
      // that share one exercise (lesson 16 at d = 64 and d = 128) all grade the learner's file.
      learner.reset();
    }
    std::string trace = learner ? *learner : (std::filesystem::path(lesson.dir) / part->solution).string();
    Verdict v = check_file(lesson, *part, trace);
    std::string report = v.report(lesson, *part);
    if (!v.passed) FAIL(report);
    SUCCEED(report);
  }

 private:
  std::string dir_, part_;
};

// A spec that does not load still gets a test, which fails with the spec's error.
class BrokenSpecTest : public Catch::ITestInvoker {
 public:
  explicit BrokenSpecTest(std::string dir) : dir_(std::move(dir)) {}
  void invoke() const override { load_lesson(dir_); }

 private:
  std::string dir_;
};

}  // namespace

static int run_main(int argc, char** argv) {
  static std::deque<std::string> strings;  // Catch keeps StringRefs to names and tags
  for (const auto& dir : lesson_folders()) {
    std::string folder = std::filesystem::path(dir).filename().string();
    std::string tag = "[lesson-" + folder.substr(0, 2) + "][lessons]";
    try {
      Lesson lesson = load_lesson(dir);
      for (const auto& p : lesson.parts) {
        const std::string& name = strings.emplace_back("lesson " + folder + (lesson.parts.size() > 1 ? ":" + p.name : "") +
                                                       " passes its check");
        const std::string& tags = strings.emplace_back(tag);
        Catch::AutoReg(new LessonPartTest(dir, p.name), CATCH_INTERNAL_LINEINFO, Catch::StringRef(),
                       Catch::NameAndTags{name, tags});
      }
    } catch (const SpecError&) {
      const std::string& name = strings.emplace_back("lesson " + folder + " has a readable check.spec");
      const std::string& tags = strings.emplace_back(tag);
      Catch::AutoReg(new BrokenSpecTest(dir), CATCH_INTERNAL_LINEINFO, Catch::StringRef(), Catch::NameAndTags{name, tags});
    }
  }
  return Catch::Session().run(argc, argv);
}

int main(int argc, char** argv) { return flashsim::guard_main("test_lessons", [&] { return run_main(argc, argv); }); }

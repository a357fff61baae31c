// flashsim-viewer: step through one trace, or two side by side in lockstep.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "viewer/app.h"
#include "viewer/catalog.h"
#include "viewer/model.h"

#ifdef FLASHSIM_VIEWER_LESSONS
#include "lessons/lesson.h"
#endif
#include "sim/l2.h"
#include "sim/main_guard.h"

namespace fv = flashsim::viewer;

namespace {

constexpr int kExitFault = 1;     // no window, or the screenshot could not be written
constexpr int kExitBadInput = 2;  // bad options, or a trace that does not assemble

// Thrown by the option checks below; run_main prints it and exits kExitBadInput.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string default_lessons_dir() {
  if (const char* env = std::getenv("FLASHSIM_LESSONS_DIR")) return env;
#ifdef FLASHSIM_SOURCE_LESSONS_DIR
  return FLASHSIM_SOURCE_LESSONS_DIR;
#else
  return "lessons";
#endif
}

struct Options {
  std::vector<std::string> files;
  std::vector<std::string> param_args;
  std::string screenshot, state_path, lesson, lessons_dir = default_lessons_dir();
  std::uint64_t step = 0;
  std::vector<std::uint32_t> breaks;
  bool numeric = false, list = false;
  std::string l2_size;
  std::uint32_t l2_line = 0;
  int width = 1280, height = 800;
};

void add_options(CLI::App& cli, Options& o) {
  cli.add_option("files", o.files, "one or two .fsa files, or names of lesson traces / generated schedules "
                                   "with parameters (online-softmax:n=16)")
      ->expected(0, 2);
  cli.add_option("--param", o.param_args, "NAME=VALUE: override a .param of every trace (repeatable)")
      ->allow_extra_args(false);
  cli.add_option("--lesson", o.lesson, "show the budget bars of this lesson (01, dot-product, ...)");
  auto* screenshot = cli.add_option("--screenshot", o.screenshot, "render one frame headlessly into this PNG and exit");
  // a dump path alone would be ignored without a word: the dump is written only beside a screenshot
  cli.add_option("--state", o.state_path, "with --screenshot: where to write the text dump (default PNG.txt)")
      ->needs(screenshot);
  cli.add_option("--step", o.step, "start at step N (both traces, in lockstep)");
  cli.add_option("--break", o.breaks, "set a breakpoint on this source line (repeatable)")->allow_extra_args(false);
  cli.add_option("--width", o.width, "window width")->check(CLI::Range(320, 8192));
  cli.add_option("--height", o.height, "window height")->check(CLI::Range(240, 8192));
  cli.add_option("--lessons-dir", o.lessons_dir, "where the lesson traces live");
  cli.add_option("--l2", o.l2_size, "send every trace's traffic through an L2 of this size (512, 4KiB, 50MiB; 0: none), "
                                    "overriding .l2: the DRAM pane then shows L2 hits and DRAM misses");
  cli.add_option("--l2-line", o.l2_line, "with --l2: the L2 line size in bytes (default 128, sectors of 32)");
  cli.add_flag("--numeric", o.numeric, "no symbolic shadow (faster on long traces)");
  cli.add_flag("--list", o.list, "list the traces that can be opened by name, then exit");
}

// --param NAME=VALUE, repeatable.
std::map<std::string, std::int64_t> parse_params(const std::vector<std::string>& args) {
  std::map<std::string, std::int64_t> params;
  for (const auto& p : args) {
    try {
      auto parsed = fv::parse_spec("x:" + p);
      params.insert(parsed.second.begin(), parsed.second.end());
    } catch (const std::invalid_argument&) {
      throw BadInput("--param " + p + ": expected NAME=INTEGER");
    }
  }
  return params;
}

// --l2 SIZE [--l2-line BYTES]; none when neither is given.
std::optional<flashsim::isa::L2Geometry> parse_l2(const std::string& size, std::uint32_t line) {
  if (size.empty() && !line) return std::nullopt;
  flashsim::isa::L2Geometry g;
  try {
    if (size.empty()) throw std::invalid_argument("--l2-line needs --l2 SIZE");
    g.capacity_bytes = flashsim::sim::parse_size(size);
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  if (line) g.line_bytes = line;
  g.sector_bytes = std::min(g.sector_bytes, g.line_bytes);
  if (std::string why = flashsim::isa::l2_geometry_error(g); g.capacity_bytes && !why.empty())
    throw BadInput("--l2: " + why);
  return g;
}

void print_catalog(const std::vector<fv::CatalogEntry>& catalog) {
  for (const auto& e : catalog) {
    std::cout << e.name;
    for (const auto& p : e.params) std::cout << " " << p.name << "=" << p.value;
    std::cout << "  (" << e.group << ") " << e.description << "\n";
  }
}

// What --lesson does to each opened trace: its budget bars. Empty without --lesson.
std::function<void(fv::Trace&)> lesson_hook(const std::string& lesson) {
  if (lesson.empty()) return {};
#ifdef FLASHSIM_VIEWER_LESSONS
  std::shared_ptr<const flashsim::lessons::Lesson> held;
  try {
    held = std::make_shared<const flashsim::lessons::Lesson>(flashsim::lessons::find_lesson(lesson));
  } catch (const std::exception& e) {
    throw BadInput("--lesson " + lesson + ": " + e.what());
  }
  return [held](fv::Trace& t) {
    const auto& part = flashsim::lessons::part_for_file(*held, t.path());
    std::vector<fv::Budget> budgets;
    for (const auto& b : part.budgets) budgets.push_back({b.counter, b.limit});
    t.set_lesson(held->folder_name(), std::move(budgets));
  };
#else
  throw BadInput("--lesson needs the lessons module, which this build lacks");
#endif
}

// A FILE argument: a path, or a catalog name with parameters ("online-softmax:n=16").
// Adds the parameters a catalog entry takes to *declared.
bool resolve(const std::string& arg, const std::vector<fv::CatalogEntry>& catalog,
             const std::map<std::string, std::int64_t>& global_params, fv::LoadRequest& out, std::string& error,
             std::set<std::string>* declared) {
  std::error_code ec;
  if (std::filesystem::exists(arg, ec)) {
    out.path = arg;
    out.params = global_params;
    return true;
  }
  std::pair<std::string, std::map<std::string, std::int64_t>> spec;
  try {
    spec = fv::parse_spec(arg);
  } catch (const std::invalid_argument& e) {
    error = e.what();
    return false;
  }
  if (const fv::CatalogEntry* e = fv::find_entry(catalog, spec.first)) {
    for (const auto& p : e->params) declared->insert(p.name);
    auto params = global_params;
    for (const auto& [k, v] : spec.second) params[k] = v;
    try {
      out = e->request(params);
    } catch (const std::exception& ex) {
      error = arg + ": " + ex.what();
      return false;
    }
    return true;
  }
  // A bare word is a mistyped name more likely than a missing file
  if (arg.find_first_of("/.") == std::string::npos) {
    error = arg + ": error: no such file, and no trace of that name (flashsim-viewer --list shows the names)";
    return false;
  }
  // Not a known name either: let the assembler report the missing file in its usual form.
  out.path = arg;
  out.params = global_params;
  return true;
}

// Opens every FILE argument into the model. Returns whether one failed (each failure is reported
// and the first kept as the model's error); *declared collects the parameters the traces take.
bool open_traces(const Options& o, const std::vector<fv::CatalogEntry>& catalog,
                 const std::map<std::string, std::int64_t>& params, const std::optional<flashsim::isa::L2Geometry>& l2,
                 const std::function<void(fv::Trace&)>& apply_lesson,
                 const std::function<void(const std::string&)>& report, fv::Model& model,
                 std::set<std::string>* declared) {
  bool failed = false;
  for (const auto& file : o.files) {
    fv::LoadRequest req;
    std::string error;
    if (!resolve(file, catalog, params, req, error, declared)) {
      model.set_error(error);
      report(error);
      failed = true;
      continue;
    }
    if (o.numeric) req.symbolic = false;
    req.l2 = l2;
    int slot = model.trace_count();
    if (!model.open(slot, req)) {
      report(model.error());
      failed = true;
      continue;
    }
    fv::Trace& t = *model.trace(slot);
    for (const auto& p : t.params()) declared->insert(p.name);
    if (apply_lesson) apply_lesson(t);
    for (auto line : o.breaks) t.toggle_breakpoint(line);
  }
  // Keep the first error visible in the app even when a later file opened fine.
  if (failed && model.error().empty()) model.set_error("a trace could not be opened (see stderr)");
  return failed;
}

// A --param that no opened trace takes is a typo (it would be silently ignored).
void check_params_taken(const std::map<std::string, std::int64_t>& params, const std::set<std::string>& declared) {
  for (const auto& [name, value] : params) {
    if (declared.count(name)) continue;
    std::string known;
    for (const auto& d : declared) known += (known.empty() ? "" : ", ") + d;
    throw BadInput("--param " + name + ": no trace opened here takes it" +
                   (known.empty() ? " (they take none)" : " (they take: " + known + ")"));
  }
}

// --screenshot: a few frames so that ImGui settles its layout (window sizes, scroll to the current
// line), the PNG, then the text dump beside it.
int save_screenshot(fv::App& app, const fv::Model& model, const Options& o, bool load_failed) {
  for (int i = 0; i < 4; ++i) app.frame(0.0);
  std::string err = app.save_screenshot(o.screenshot);
  if (!err.empty()) {
    std::cerr << "flashsim-viewer: error: " << err << "\n";
    return kExitFault;
  }
  std::string path = o.state_path.empty() ? o.screenshot + ".txt" : o.state_path;
  std::ofstream out(path);
  out << model.dump() << app.layout_dump();
  if (!out) {
    std::cerr << "flashsim-viewer: error: cannot write " << path << "\n";
    return kExitFault;
  }
  return load_failed ? kExitBadInput : 0;
}

}  // namespace

static int run_main(int argc, char** argv) {
  CLI::App cli{"flashsim-viewer: step through flashsim traces; give two to compare them in lockstep"};
  Options o;
  add_options(cli, o);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = cli.exit(e);
    return rc == 0 ? 0 : kExitBadInput;
  }

  fv::Model model;
  auto report = [](const std::string& msg) { std::cerr << msg << "\n"; };
  std::function<void(fv::Trace&)> apply_lesson;
  bool load_failed = false;
  try {
    const auto params = parse_params(o.param_args);
    const auto l2 = parse_l2(o.l2_size, o.l2_line);
    const auto catalog = fv::full_catalog(o.lessons_dir);
    if (o.list) {
      print_catalog(catalog);
      return 0;
    }
    apply_lesson = lesson_hook(o.lesson);
    std::set<std::string> declared;  // parameters some trace or named schedule takes
    load_failed = open_traces(o, catalog, params, l2, apply_lesson, report, model, &declared);
    if (!load_failed && !o.files.empty()) check_params_taken(params, declared);
  } catch (const BadInput& e) {
    std::cerr << "flashsim-viewer: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  if (o.step) model.seek(o.step);

  fv::AppOptions opts;
  opts.width = o.width;
  opts.height = o.height;
  opts.vsync = o.screenshot.empty();
  opts.lessons_dir = o.lessons_dir;
  opts.report_error = report;
  opts.on_open = apply_lesson;
  try {
    fv::App app(model, opts);
    if (!o.screenshot.empty()) return save_screenshot(app, model, o, load_failed);
    while (!app.should_close()) {
      app.frame();
      app.present();
    }
  } catch (const fv::NoDisplay& e) {
    std::cerr << "flashsim-viewer: error: " << e.what() << "\n";
    return kExitFault;
  }
  return 0;
}

int main(int argc, char** argv) { return flashsim::guard_main("flashsim-viewer", [&] { return run_main(argc, argv); }); }

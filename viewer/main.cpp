// flashsim-viewer: step through one trace, or two side by side in lockstep.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
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

std::string default_lessons_dir() {
  if (const char* env = std::getenv("FLASHSIM_LESSONS_DIR")) return env;
#ifdef FLASHSIM_SOURCE_LESSONS_DIR
  return FLASHSIM_SOURCE_LESSONS_DIR;
#else
  return "lessons";
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
  // Not a known name either: let the assembler report the missing file in its usual form.
  out.path = arg;
  out.params = global_params;
  return true;
}

}  // namespace

static int run_main(int argc, char** argv) {
  CLI::App cli{"flashsim-viewer: step through flashsim traces; give two to compare them in lockstep"};
  std::vector<std::string> files;
  std::vector<std::string> param_args;
  std::string screenshot, state_path, lesson, lessons_dir = default_lessons_dir();
  std::uint64_t step = 0;
  std::vector<std::uint32_t> breaks;
  bool numeric = false, list = false;
  std::string l2_size;
  std::uint32_t l2_line = 0;
  int width = 1280, height = 800;
  cli.add_option("files", files, "one or two .fsa files, or names of lesson traces / generated schedules "
                                 "with parameters (online-softmax:n=16)")
      ->expected(0, 2);
  cli.add_option("--param", param_args, "NAME=VALUE: override a .param of every trace (repeatable)")
      ->allow_extra_args(false);
  cli.add_option("--lesson", lesson, "show the budget bars of this lesson (01, dot-product, ...)");
  cli.add_option("--screenshot", screenshot, "render one frame headlessly into this PNG and exit");
  cli.add_option("--state", state_path, "with --screenshot: where to write the text dump (default PNG.txt)");
  cli.add_option("--step", step, "start at step N (both traces, in lockstep)");
  cli.add_option("--break", breaks, "set a breakpoint on this source line (repeatable)")->allow_extra_args(false);
  cli.add_option("--width", width, "window width")->check(CLI::Range(320, 8192));
  cli.add_option("--height", height, "window height")->check(CLI::Range(240, 8192));
  cli.add_option("--lessons-dir", lessons_dir, "where the lesson traces live");
  cli.add_option("--l2", l2_size, "send every trace's traffic through an L2 of this size (512, 4KiB, 50MiB; 0: none), "
                                  "overriding .l2: the DRAM pane then shows L2 hits and DRAM misses");
  cli.add_option("--l2-line", l2_line, "with --l2: the L2 line size in bytes (default 128, sectors of 32)");
  cli.add_flag("--numeric", numeric, "no symbolic shadow (faster on long traces)");
  cli.add_flag("--list", list, "list the traces that can be opened by name, then exit");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = cli.exit(e);
    return rc == 0 ? 0 : kExitBadInput;
  }

  std::map<std::string, std::int64_t> params;
  for (const auto& p : param_args) {
    try {
      auto parsed = fv::parse_spec("x:" + p);
      params.insert(parsed.second.begin(), parsed.second.end());
    } catch (const std::invalid_argument&) {
      std::cerr << "flashsim-viewer: error: --param " << p << ": expected NAME=INTEGER\n";
      return kExitBadInput;
    }
  }
  std::optional<flashsim::isa::L2Geometry> l2;
  if (!l2_size.empty() || l2_line) {
    flashsim::isa::L2Geometry g;
    try {
      if (l2_size.empty()) throw std::invalid_argument("--l2-line needs --l2 SIZE");
      g.capacity_bytes = flashsim::sim::parse_size(l2_size);
    } catch (const std::invalid_argument& e) {
      std::cerr << "flashsim-viewer: error: " << e.what() << "\n";
      return kExitBadInput;
    }
    if (l2_line) g.line_bytes = l2_line;
    g.sector_bytes = std::min(g.sector_bytes, g.line_bytes);
    if (std::string why = flashsim::isa::l2_geometry_error(g); g.capacity_bytes && !why.empty()) {
      std::cerr << "flashsim-viewer: error: --l2: " << why << "\n";
      return kExitBadInput;
    }
    l2 = g;
  }
  auto catalog = fv::full_catalog(lessons_dir);
  if (list) {
    for (const auto& e : catalog) {
      std::cout << e.name;
      for (const auto& p : e.params) std::cout << " " << p.name << "=" << p.value;
      std::cout << "  (" << e.group << ") " << e.description << "\n";
    }
    return 0;
  }

  fv::Model model;
  bool load_failed = false;
  auto report = [](const std::string& msg) { std::cerr << msg << "\n"; };

  std::function<void(fv::Trace&)> apply_lesson;
#ifdef FLASHSIM_VIEWER_LESSONS
  std::optional<flashsim::lessons::Lesson> held;
  if (!lesson.empty()) {
    try {
      held = flashsim::lessons::find_lesson(lesson);
    } catch (const std::exception& e) {
      std::cerr << "flashsim-viewer: error: --lesson " << lesson << ": " << e.what() << "\n";
      return kExitBadInput;
    }
    apply_lesson = [&held](fv::Trace& t) {
      const auto& part = flashsim::lessons::part_for_file(*held, t.path());
      std::vector<fv::Budget> budgets;
      for (const auto& b : part.budgets) budgets.push_back({b.counter, b.limit});
      t.set_lesson(held->folder_name(), std::move(budgets));
    };
  }
#else
  if (!lesson.empty()) {
    std::cerr << "flashsim-viewer: error: --lesson needs the lessons module, which this build lacks\n";
    return kExitBadInput;
  }
#endif

  std::set<std::string> declared;  // parameters some trace or named schedule takes
  for (std::size_t i = 0; i < files.size(); ++i) {
    fv::LoadRequest req;
    std::string error;
    if (!resolve(files[i], catalog, params, req, error, &declared)) {
      model.set_error(error);
      report(error);
      load_failed = true;
      continue;
    }
    if (numeric) req.symbolic = false;
    req.l2 = l2;
    int slot = model.trace_count();
    if (!model.open(slot, req)) {
      report(model.error());
      load_failed = true;
      continue;
    }
    fv::Trace& t = *model.trace(slot);
    for (const auto& p : t.params()) declared.insert(p.name);
    if (apply_lesson) apply_lesson(t);
    for (auto line : breaks) t.toggle_breakpoint(line);
  }
  // A --param that no opened trace takes is a typo (it would be silently ignored).
  if (!load_failed && !files.empty()) {
    for (const auto& [name, value] : params) {
      if (declared.count(name)) continue;
      std::string known;
      for (const auto& d : declared) known += (known.empty() ? "" : ", ") + d;
      std::cerr << "flashsim-viewer: error: --param " << name << ": no trace opened here takes it"
                << (known.empty() ? " (they take none)" : " (they take: " + known + ")") << "\n";
      return kExitBadInput;
    }
  }
  // Keep the first error visible in the app even when a later file opened fine.
  if (load_failed && model.error().empty()) model.set_error("a trace could not be opened (see stderr)");
  if (step) model.seek(step);

  fv::AppOptions opts;
  opts.width = width;
  opts.height = height;
  opts.vsync = screenshot.empty();
  opts.lessons_dir = lessons_dir;
  opts.report_error = report;
  opts.on_open = apply_lesson;
  try {
    fv::App app(model, opts);
    if (!screenshot.empty()) {
      // A few frames let ImGui settle its layout (window sizes, scroll to the current line).
      for (int i = 0; i < 4; ++i) app.frame(0.0);
      std::string err = app.save_screenshot(screenshot);
      if (!err.empty()) {
        std::cerr << "flashsim-viewer: error: " << err << "\n";
        return kExitFault;
      }
      std::string path = state_path.empty() ? screenshot + ".txt" : state_path;
      std::ofstream out(path);
      out << model.dump() << app.layout_dump();
      if (!out) {
        std::cerr << "flashsim-viewer: error: cannot write " << path << "\n";
        return kExitFault;
      }
      return load_failed ? kExitBadInput : 0;
    }
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

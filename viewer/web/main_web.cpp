// flashsim in the browser: the desktop viewer's Model and App on a WebGL 2 canvas, driven by the
// browser's frame loop. index.html owns the rest of the page (catalog, trace editor, grading)
// and calls the C functions below through Module.ccall.
#include <emscripten.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <unordered_set>

#include <GLES3/gl3.h>

#include "isa/program.h"
#include "lessons/lesson.h"
#include "sim/main_guard.h"
#include "viewer/app.h"
#include "viewer/catalog.h"
#include "viewer/model.h"

namespace fv = flashsim::viewer;
namespace fl = flashsim::lessons;

namespace {

constexpr const char* kLessonsDir = "lessons";  // preloaded at /lessons; the page runs in /
constexpr int kSettleFrames = 4;                // as the desktop --screenshot mode

struct Page {
  fv::Model model;
  std::unique_ptr<fv::App> app;
  std::vector<fv::CatalogEntry> catalog;
  std::string origin[2];                  // what each slot was opened from (file or catalog name)
  std::optional<fl::Lesson> lesson;       // ?lesson=: its budgets on every trace, as --lesson
  int frames = 0;
  std::string reply;                      // the last string handed to JavaScript
  // The benchmark: frames timed while stepping once per frame.
  int bench_frames_left = 0;
  std::vector<double> bench_ui_ms, bench_render_ms, bench_interval_ms;
  double bench_last_frame_ms = 0;
};
Page* page = nullptr;

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const char* reply(std::string s) {
  page->reply = std::move(s);
  return page->reply.c_str();
}

std::optional<std::string> lesson_folder_of(const std::string& path) {
  // lessons/NN-name/file.fsa -> NN-name
  std::filesystem::path p(path);
  auto parent = p.parent_path();
  if (parent.parent_path().filename() == "lessons" && std::filesystem::exists(parent / "check.spec"))
    return parent.filename().string();
  return std::nullopt;
}

void apply_lesson(fv::Trace& t) {
  if (!page->lesson) return;
  const auto& part = fl::part_for_file(*page->lesson, t.path());
  std::vector<fv::Budget> budgets;
  for (const auto& b : part.budgets) budgets.push_back({b.counter, b.limit});
  t.set_lesson(page->lesson->folder_name(), std::move(budgets));
}

bool open_request(int slot, const fv::LoadRequest& req, const std::string& origin) {
  if (!page->model.open(slot, req)) return false;
  page->origin[slot] = origin;
  apply_lesson(*page->model.trace(slot));
  return true;
}

// A path in the page's file system, or a catalog name with parameters ("online-softmax:n=16").
bool open_spec(int slot, const std::string& spec) {
  if (slot == 1 && !page->model.trace(0)) slot = 0;  // the panes expect A whenever B is open
  std::error_code ec;
  fv::LoadRequest req;
  if (std::filesystem::is_regular_file(spec, ec)) {
    page->origin[slot] = spec;  // even when it does not assemble: the editor fixes it, the lesson grades it
    req.path = spec;
    return open_request(slot, req, spec);
  }
  try {
    auto [name, params] = fv::parse_spec(spec);
    if (const fv::CatalogEntry* e = fv::find_entry(page->catalog, name)) return open_request(slot, e->request(params), spec);
  } catch (const std::exception& e) {
    page->model.set_error(spec + ": " + e.what());
    return false;
  }
  req.path = spec;  // the assembler reports the missing file in its usual form
  return open_request(slot, req, spec);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Distinct colours and the share of pixels unlike the top-left one, from a 1-in-16 sample of
// the frame just rendered: a blank or single-colour canvas has 1 colour.
std::string canvas_stats() {
  GLint vp[4];
  glGetIntegerv(GL_VIEWPORT, vp);
  int w = vp[2], h = vp[3];
  std::vector<std::uint32_t> px(static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  std::unordered_set<std::uint32_t> colours;
  std::size_t sampled = 0, unlike = 0;
  for (std::size_t i = 0; i < px.size(); i += 16, ++sampled) {
    colours.insert(px[i]);
    if (px[i] != px[0]) ++unlike;
  }
  std::ostringstream os;
  os << "canvas " << w << "x" << h << " colours=" << colours.size() << " unlike_corner="
     << (sampled ? 100.0 * static_cast<double>(unlike) / static_cast<double>(sampled) : 0.0) << "%";
  return os.str();
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double p95(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(0.95 * static_cast<double>(v.size() - 1))];
}

void frame() {
  Page& p = *page;
  double t0 = now_ms();
  if (p.bench_frames_left > 0) p.model.step();
  p.app->frame();
  p.app->present();
  ++p.frames;
  if (p.frames == kSettleFrames) {
    std::string stats = canvas_stats();
    EM_ASM({ if (Module.onSettled) Module.onSettled(UTF8ToString($0)); }, stats.c_str());
  }
  if (p.bench_frames_left > 0) {
    const auto& c = p.app->last_cost();
    p.bench_ui_ms.push_back(c.ui_ms);
    p.bench_render_ms.push_back(c.render_ms);
    if (p.bench_last_frame_ms > 0) p.bench_interval_ms.push_back(t0 - p.bench_last_frame_ms);
    p.bench_last_frame_ms = t0;
    if (--p.bench_frames_left == 0) {
      std::ostringstream os;
      os.precision(3);
      os << "frames " << p.bench_ui_ms.size() << " (one step per frame): ui_ms mean " << mean(p.bench_ui_ms) << " p95 "
         << p95(p.bench_ui_ms) << "; render_ms mean " << mean(p.bench_render_ms) << " p95 " << p95(p.bench_render_ms)
         << "; frame_interval_ms mean " << mean(p.bench_interval_ms) << " p95 " << p95(p.bench_interval_ms) << "\n";
      std::string text = os.str();
      EM_ASM({ if (Module.onBenchFrames) Module.onBenchFrames(UTF8ToString($0)); }, text.c_str());
    }
  }
}

}  // namespace

extern "C" {

// Opens a file path or catalog name into slot 0 (A) or 1 (B); returns "" or the error.
EMSCRIPTEN_KEEPALIVE const char* fs_open(int slot, const char* spec) {
  return reply(open_spec(slot, spec) ? "" : page->model.error());
}

// Assembles edited text into the slot, in place of its trace; returns "" or the error with the
// offending line and a caret under its column. The file keeps its lesson name, so grading and
// the lesson's part still apply.
EMSCRIPTEN_KEEPALIVE const char* fs_assemble(int slot, const char* text) {
  std::string origin = page->origin[slot].empty() ? "trace.fsa" : page->origin[slot];
  std::filesystem::path name = std::filesystem::path(origin).filename();
  if (name.extension() != ".fsa") name += ".fsa";
  std::string dir = std::string("edited/") + (slot == 0 ? "A" : "B");
  std::filesystem::create_directories(dir);
  std::string path = dir + "/" + name.string();
  std::ofstream(path) << text;
  fv::LoadRequest req;
  req.path = path;
  if (!page->model.open(slot, req)) return reply(page->model.error() + "\n" + page->model.error_context());
  apply_lesson(*page->model.trace(slot));  // origin stays: the lesson it is graded against
  return reply("");
}

// The text the editor shows for a slot: the file, or a generated schedule's disassembly.
EMSCRIPTEN_KEEPALIVE const char* fs_source(int slot) {
  const fv::Trace* t = page->model.trace(slot);
  if (!t) return reply(page->origin[slot].empty() ? "" : read_file(page->origin[slot]));  // did not assemble
  if (!t->path().empty()) return reply(read_file(t->path()));
  if (t->size() > 200'000) return reply("# a generated schedule of " + std::to_string(t->size()) + " instructions: too long to edit here\n");
  return reply(flashsim::isa::disassemble(t->program()));
}

// Grades edited text (or the slot's own file when text is empty) with the lesson checker of the
// lesson it came from (or ?lesson=). Returns the checker's report: "PASS ..." or "FAIL ...".
EMSCRIPTEN_KEEPALIVE const char* fs_grade(int slot, const char* text) {
  const fv::Trace* t = page->model.trace(slot);
  std::string origin = page->origin[slot];
  try {
    std::optional<fl::Lesson> lesson = page->lesson;
    if (!lesson) {
      auto folder = lesson_folder_of(origin);
      if (!folder) return reply("NO LESSON: open a trace from a lesson folder, or add ?lesson=NN to the URL");
      lesson = fl::find_lesson(*folder, kLessonsDir);
    }
    std::string body = text && *text ? std::string(text) : (t ? read_file(t->path()) : std::string());
    const fl::Part& part = fl::part_for_file(*lesson, origin);
    std::string name = std::filesystem::path(origin).filename().string();
    return reply(fl::check_text(*lesson, part, body, name).report(*lesson, part));
  } catch (const std::exception& e) {
    return reply(std::string("ERROR ") + e.what());
  }
}

EMSCRIPTEN_KEEPALIVE void fs_close(int slot) { page->model.close(slot); }
EMSCRIPTEN_KEEPALIVE void fs_seek(double k) { page->model.seek(static_cast<std::uint64_t>(k)); }
EMSCRIPTEN_KEEPALIVE void fs_step() { page->model.step(); }
EMSCRIPTEN_KEEPALIVE void fs_step_back() { page->model.step_back(); }
EMSCRIPTEN_KEEPALIVE int fs_run_to_breakpoint() { return page->model.run_to_breakpoint() ? 1 : 0; }
EMSCRIPTEN_KEEPALIVE int fs_toggle_breakpoint(int slot, int line) {
  fv::Trace* t = page->model.trace(slot);
  return t && t->toggle_breakpoint(static_cast<std::uint32_t>(line)) ? 1 : 0;
}
EMSCRIPTEN_KEEPALIVE double fs_step_index() { return static_cast<double>(page->model.step_index()); }

// The WebGL renderer behind the canvas, for the benchmark's report.
EMSCRIPTEN_KEEPALIVE const char* fs_renderer() { return reply(page->app ? page->app->renderer() : ""); }

// What every pane shows, in the form the desktop --screenshot mode writes.
EMSCRIPTEN_KEEPALIVE const char* fs_dump() { return reply(page->model.dump()); }

// The catalog, one "name<TAB>group<TAB>path<TAB>description" line per entry.
EMSCRIPTEN_KEEPALIVE const char* fs_catalog() {
  std::string s;
  for (const auto& e : page->catalog) s += e.name + "\t" + e.group + "\t" + e.path + "\t" + e.description + "\n";
  return reply(s);
}

// ?lesson=NN: budget bars on every trace (as the desktop's --lesson). Returns "" or the error.
EMSCRIPTEN_KEEPALIVE const char* fs_set_lesson(const char* name) {
  try {
    page->lesson = fl::find_lesson(name, kLessonsDir);
  } catch (const std::exception& e) {
    return reply(std::string("lesson ") + name + ": " + e.what());
  }
  for (int s = 0; s < 2; ++s)
    if (fv::Trace* t = page->model.trace(s)) apply_lesson(*t);
  return reply("");
}

// The benchmark of docs/RESULTS.md, as bench_viewer does it on the desktop: open lesson 06 at
// n = 71,429 (1,000,002 instructions), step through it forward and back without drawing, then
// time `frames` real browser frames that step once each (reported through Module.onBenchFrames).
EMSCRIPTEN_KEEPALIVE const char* fs_bench(int n, int frames) {
  fv::LoadRequest req;
  req.path = std::string(kLessonsDir) + "/06-online-softmax/solution.fsa";
  req.params["n"] = n;
  double t0 = now_ms();
  if (!page->model.open(0, req)) return reply("ERROR " + page->model.error());
  page->model.close(1);
  double open_ms = now_ms() - t0;
  fv::Trace& t = *page->model.trace(0);
  const auto& lt = t.load_times();
  std::uint64_t size = t.size();
  t0 = now_ms();
  while (page->model.step()) {
  }
  double fwd_ms = now_ms() - t0;
  t0 = now_ms();
  while (page->model.step_back()) {
  }
  double back_ms = now_ms() - t0;
  page->model.seek(size / 2);
  std::ostringstream os;
  os.precision(4);
  os << "trace: " << req.path << " n=" << n << ": " << size << " instructions, symbolic "
     << (t.request().symbolic.value_or(size <= fv::kSymbolicLimit) ? "on" : "off") << "\n"
     << "open_ms " << open_ms << " (assemble " << lt.assemble_ms << ", machine " << lt.machine_ms << ", prepass "
     << lt.prepass_ms << ")\n"
     << "step_forward ns/step " << fwd_ms * 1e6 / static_cast<double>(size) << " = "
     << static_cast<double>(size) / fwd_ms * 1e3 << " steps/s\n"
     << "step_back ns/step " << back_ms * 1e6 / static_cast<double>(size) << "\n";
  page->bench_ui_ms.clear();
  page->bench_render_ms.clear();
  page->bench_interval_ms.clear();
  page->bench_last_frame_ms = 0;
  page->bench_frames_left = frames;
  return reply(os.str());
}

}  // extern "C"

// argv: WIDTH HEIGHT (the canvas size the page chose).
static int run_main(int argc, char** argv) {
  setenv("FLASHSIM_LESSONS_DIR", kLessonsDir, 1);
  page = new Page;  // lives as long as the page
  page->catalog = fv::full_catalog(kLessonsDir);
  fv::AppOptions opts;
  if (argc > 2) {
    opts.width = std::clamp(std::atoi(argv[1]), 320, 8192);
    opts.height = std::clamp(std::atoi(argv[2]), 240, 8192);
  }
  opts.lessons_dir = kLessonsDir;
  opts.on_open = [](fv::Trace& t) { apply_lesson(t); };
  // The loop must exist before the App's glfwSwapInterval sets its timing (browser frames).
  emscripten_set_main_loop(frame, 0, false);
  try {
    page->app = std::make_unique<fv::App>(page->model, opts);
  } catch (const fv::NoDisplay& e) {
    emscripten_cancel_main_loop();
    EM_ASM({ throw new Error(UTF8ToString($0)); }, e.what());
  }
  return 0;
}

int main(int argc, char** argv) { return flashsim::guard_main("flashsim_web", [&] { return run_main(argc, argv); }); }

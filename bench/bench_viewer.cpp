// Viewer benchmark: loads a ~1-million-instruction trace, times the model's stepping, then
// (when a display is available, e.g. under xvfb-run) renders frames at 1280x800 and reports
// where a frame's time goes: building the UI (the viewer's own work), rendering it in OpenGL,
// presenting it, and the same for a frame with no windows at all (the display's floor).
//
//   xvfb-run -a -s '-screen 0 1280x800x24' build/default/bin/bench_viewer [FILE] [--n N] [--frames F]
//
// Times are wall clock and CPU time: on a shared machine the wall clock also counts the time
// spent waiting for a core, CPU time only the work done. UI build CPU time is this thread's;
// render CPU time is the whole process's (a software rasterizer such as llvmpipe draws on
// its own threads).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "viewer/app.h"
#include "viewer/model.h"
#include "sim/main_guard.h"

namespace fv = flashsim::viewer;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kBudgetMs = 1000.0 / 60.0;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double cpu_ms(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// Wall and CPU time of one call.
struct Timed {
  double wall = 0, cpu = 0;
};
Timed timed(const std::function<void()>& f, clockid_t clock = CLOCK_THREAD_CPUTIME_ID) {
  auto t0 = Clock::now();
  double c0 = cpu_ms(clock);
  f();
  return {ms_since(t0), cpu_ms(clock) - c0};
}

struct Series {
  std::vector<double> v;
  double mean() const {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / static_cast<double>(v.size());
  }
  double p95() const {
    if (v.empty()) return 0;
    auto s = v;
    std::sort(s.begin(), s.end());
    return s[std::min(s.size() - 1, static_cast<std::size_t>(static_cast<double>(s.size()) * 0.95))];
  }
};

struct FrameStats {
  Series total, ui, ui_cpu, render, render_cpu, present, steps, tex_rows;
  double vertices = 0, draw_calls = 0;
};

// Runs `count` frames; `before` changes the model between frames (not timed); `empty` renders
// frames with no windows instead of the viewer's.
FrameStats frames(fv::App& app, fv::Model& model, int count, const std::function<void()>& before, bool empty = false) {
  FrameStats s;
  for (int i = 0; i < count; ++i) {
    auto k0 = static_cast<std::int64_t>(model.step_index());
    before();
    auto k1 = static_cast<std::int64_t>(model.step_index());
    auto t0 = Clock::now();
    if (empty) app.empty_frame();
    else app.frame(1.0 / 60.0);
    auto t1 = Clock::now();
    app.present();
    s.present.v.push_back(ms_since(t1));
    s.total.v.push_back(ms_since(t0));
    const fv::FrameCost& c = app.last_cost();
    s.ui.v.push_back(c.ui_ms);
    s.ui_cpu.v.push_back(c.ui_cpu_ms);
    s.render.v.push_back(c.render_ms);
    s.render_cpu.v.push_back(c.render_cpu_ms);
    // Steps this frame: the one `before` took by hand (not a restart from 0) plus the run's.
    auto k2 = static_cast<std::int64_t>(model.step_index());
    s.steps.v.push_back(static_cast<double>((k1 - k0 >= -1 && k1 - k0 <= 1 ? k1 - k0 : 0) + (k2 - k1)));
    s.tex_rows.v.push_back(c.heat_rows_uploaded);
    s.vertices += c.vertices;
    s.draw_calls += c.draw_calls;
  }
  s.vertices /= count;
  s.draw_calls /= count;
  return s;
}

void print_header() {
  std::printf("  %-34s %17s %17s %15s %9s %7s %6s %6s %6s\n", "", "UI build (viewer)", "GL render", "total frame", "present",
              "verts", "calls", "steps", "texel");
  std::printf("  %-34s %17s %17s %15s %9s %7s %6s %6s %6s\n", "", "wall mean/p95 cpu", "wall mean/p95 cpu", "mean/p95", "mean", "",
              "", "/frame", "rows");
}

void print(const char* what, const FrameStats& s) {
  std::printf("  %-34s %5.2f/%5.2f %5.2f %5.1f/%5.1f %5.1f %6.1f/%6.1f %7.1f %7.0f %6.0f %6.0f %6.1f\n", what, s.ui.mean(),
              s.ui.p95(), s.ui_cpu.mean(), s.render.mean(), s.render.p95(), s.render_cpu.mean(), s.total.mean(), s.total.p95(),
              s.present.mean(), s.vertices, s.draw_calls, s.steps.mean(), s.tex_rows.mean());
}

}  // namespace

static int run_main(int argc, char** argv) {
  std::string file = FLASHSIM_BENCH_LESSONS_DIR "/06-online-softmax/solution.fsa";
  std::int64_t n = 71'429;  // online softmax runs 14n + 5 instructions: ~1,000,011
  int count = 120;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--n") && i + 1 < argc) n = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) count = std::max(20, std::atoi(argv[++i]));
    else file = argv[i];
  }
  fv::LoadRequest req;
  req.path = file;
  req.params["n"] = n;

  // ---- load ----
  fv::Model model;
  bool opened = false;
  Timed open = timed([&] { opened = model.open(0, req); });
  if (!opened) {
    std::fprintf(stderr, "bench_viewer: %s\n", model.error().c_str());
    return 1;
  }
  fv::Trace& t = *model.trace(0);
  const std::uint64_t size = t.size();
  const fv::LoadTimes& lt = t.load_times();
  std::printf("trace: %s with n = %lld: %llu instructions, symbolic shadow %s\n", file.c_str(), static_cast<long long>(n),
              static_cast<unsigned long long>(size), t.machine().symbolic() ? "on" : "off");
  std::printf("load (wall / CPU ms):\n");
  std::printf("  open in the viewer, total               %8.1f / %8.1f\n", open.wall, open.cpu);
  std::printf("    assemble (loops expanded)             %8.1f / %8.1f\n", lt.assemble_ms, lt.assemble_cpu_ms);
  std::printf("    machine construction                  %8.1f / %8.1f\n", lt.machine_ms, lt.machine_cpu_ms);
  std::printf("    whole-trace counting pass             %8.1f / %8.1f\n", lt.prepass_ms, lt.prepass_cpu_ms);
  std::printf("    the rest (line tables, params)        %8.1f / %8.1f\n",
              open.wall - lt.assemble_ms - lt.machine_ms - lt.prepass_ms,
              open.cpu - lt.assemble_cpu_ms - lt.machine_cpu_ms - lt.prepass_cpu_ms);

  // ---- the model alone ----
  Timed fwd = timed([&] {
    while (model.step()) {
    }
  });
  Timed back = timed([&] {
    while (model.step_back()) {
    }
  });
  std::printf("model (no window; CPU ns per step):\n");
  std::printf("  step forward through the whole trace    %8.1f ns/step (%.0f ms CPU)\n", fwd.cpu * 1e6 / static_cast<double>(size), fwd.cpu);
  std::printf("  step back to the start                  %8.1f ns/step (%.0f ms CPU)\n", back.cpu * 1e6 / static_cast<double>(size), back.cpu);
  Timed seek = timed([&] { model.seek(size / 2); });
  std::printf("  seek 0 -> middle (forward steps)        %8.1f ms CPU\n", seek.cpu);
  Timed seek_near = timed([&] { model.seek(size / 2 + 1000); });
  std::printf("  seek +1000 steps (no replay from 0)     %8.3f ms CPU\n", seek_near.cpu);

  // ---- frames ----
  try {
    fv::AppOptions ao;
    ao.vsync = false;  // measure the work, not the display's refresh
    fv::App app(model, ao);
    std::printf("frames: 1280x800, %d frames each, no vsync, on %s\n", count, app.renderer().c_str());
    std::printf("  (times in ms; 60 fps leaves %.1f ms per frame; texel rows: heat-map texture rows uploaded per frame)\n",
                kBudgetMs);
    print_header();
    frames(app, model, 10, [] {});  // warm-up: fonts, first layout
    FrameStats floor = frames(app, model, count, [] {}, true);
    print("empty ImGui frame (display floor)", floor);
    FrameStats idle = frames(app, model, count, [] {});
    print("idle at the middle of the trace", idle);
    FrameStats step = frames(app, model, count, [&] { model.step(); });
    print("one step per frame", step);
    FrameStats back_frames = frames(app, model, count, [&] { model.step_back(); });
    print("one step back per frame", back_frames);
    model.set_speed(1'000'000);  // the speed slider's top
    model.seek(0);
    model.run();
    FrameStats run = frames(app, model, count, [&] {
      if (!model.running()) {
        model.seek(0);
        model.run();
      }
    });
    print("running at 1M steps/s", run);
    model.pause();
    model.seek(size / 2);

    std::printf("  one pane alone, one step per frame:\n");
    const std::pair<const char*, unsigned> panes[] = {
        {"    source", fv::kPaneSource},       {"    trace (loops expanded)", fv::kPaneTrace},
        {"    registers", fv::kPaneRegisters}, {"    counters", fv::kPaneCounters},
        {"    DRAM heat maps", fv::kPaneDram}, {"    DRAM bytes over time", fv::kPanePlot},
        {"    none (menu + toolbar only)", 0u}};
    for (const auto& [name, mask] : panes) {
      app.set_visible_panes(mask);
      frames(app, model, 3, [] {});
      print(name, frames(app, model, count / 2, [&] { model.step(); }));
    }
    app.set_visible_panes(fv::kPaneAll);

    // The verdict: the viewer's work is building the UI (and stepping the model inside it);
    // what the rasterizer adds on top is the display's, and the empty frame shows its floor.
    double worst_ui = std::max({step.ui_cpu.mean(), back_frames.ui_cpu.mean(), run.ui_cpu.mean()});
    double worst_ui_p95 = std::max({step.ui.p95(), back_frames.ui.p95(), run.ui.p95()});
    std::printf("verdict: viewer work %.1f ms/frame CPU (UI build incl. stepping, worst scenario mean; wall p95 %.1f ms) "
                "(<= %.1f ms budget for 60 fps: %s); this display's renderer (%s) adds %.1f ms/frame wall "
                "(%.1f ms CPU) to render and %.1f ms to present (floor for an empty frame: %.1f ms render + %.1f ms present "
                "wall); whole frame %.1f ms mean -> %.0f fps here\n",
                worst_ui, worst_ui_p95, kBudgetMs, worst_ui <= kBudgetMs ? "met" : "NOT met", app.renderer().c_str(),
                step.render.mean(), step.render_cpu.mean(), step.present.mean(), floor.render.mean(), floor.present.mean(),
                step.total.mean(), 1000.0 / step.total.mean());
  } catch (const fv::NoDisplay& e) {
    std::printf("frames: skipped (%s)\n", e.what());
  }
  return 0;
}

int main(int argc, char** argv) { return flashsim::guard_main("bench_viewer", [&] { return run_main(argc, argv); }); }

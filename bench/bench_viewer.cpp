// Viewer benchmark: loads a ~1-million-instruction trace, times the model's stepping, then
// (when a display is available, e.g. under xvfb-run) renders frames and reports frame time.
//
//   xvfb-run -a -s '-screen 0 1280x800x24' build/viewer/viewer/bench_viewer [FILE] [--n N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "viewer/app.h"
#include "viewer/model.h"

namespace fv = flashsim::viewer;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct FrameStats {
  double mean = 0, p95 = 0, worst = 0, ui = 0, render = 0;
};

FrameStats frames(fv::App& app, int count, const std::function<void()>& before) {
  std::vector<double> total;
  double ui = 0, render = 0;
  for (int i = 0; i < count; ++i) {
    before();
    auto t0 = Clock::now();
    app.frame(1.0 / 60.0);
    app.present();
    total.push_back(ms_since(t0));
    ui += app.last_ui_ms();
    render += app.last_render_ms();
  }
  FrameStats s;
  for (double t : total) s.mean += t;
  s.mean /= count;
  std::sort(total.begin(), total.end());
  s.p95 = total[static_cast<std::size_t>(count * 0.95)];
  s.worst = total.back();
  s.ui = ui / count;
  s.render = render / count;
  return s;
}

void print(const char* what, const FrameStats& s) {
  std::printf("  %-38s mean %6.2f ms  p95 %6.2f ms  worst %6.2f ms  (UI build %5.2f ms, GL render %5.2f ms)  -> %5.0f fps\n",
              what, s.mean, s.p95, s.worst, s.ui, s.render, 1000.0 / s.mean);
}

}  // namespace

int main(int argc, char** argv) {
  std::string file = FLASHSIM_BENCH_LESSONS_DIR "/06-online-softmax/solution.fsa";
  std::int64_t n = 71'429;  // online softmax runs 14n + 5 instructions: ~1,000,011
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--n") && i + 1 < argc) n = std::atoll(argv[++i]);
    else file = argv[i];
  }
  fv::LoadRequest req;
  req.path = file;
  req.params["n"] = n;

  auto t0 = Clock::now();
  auto prog = flashsim::isa::assemble_file(file, {req.params, 200'000'000});
  double assemble_ms = ms_since(t0);
  std::size_t count = prog.code.size();
  t0 = Clock::now();
  fv::Model model;
  if (!model.open(0, req)) {
    std::fprintf(stderr, "bench_viewer: %s\n", model.error().c_str());
    return 1;
  }
  double open_ms = ms_since(t0);
  std::printf("trace: %s with n = %lld: %zu instructions\n", file.c_str(), static_cast<long long>(n), count);
  std::printf("  assemble alone                         %8.1f ms\n", assemble_ms);
  std::printf("  open in the viewer (assemble, machine, counting pass) %8.1f ms\n", open_ms);

  fv::Trace& t = *model.trace(0);
  t0 = Clock::now();
  while (model.step()) {
  }
  double fwd = ms_since(t0);
  t0 = Clock::now();
  while (model.step_back()) {
  }
  double back = ms_since(t0);
  std::printf("  model step forward                     %8.1f ns/step (%zu steps, %.0f ms)\n", fwd * 1e6 / count, count, fwd);
  std::printf("  model step back                        %8.1f ns/step (%.0f ms)\n", back * 1e6 / count, back);
  t0 = Clock::now();
  model.seek(count / 2);
  std::printf("  seek to the middle                     %8.1f ms\n", ms_since(t0));
  (void)t;

  try {
    fv::AppOptions ao;
    ao.vsync = false;  // measure the work, not the display's refresh
    fv::App app(model, ao);
    std::printf("frames at 1280x800 on %s (no vsync; 60 fps needs under 16.7 ms):\n", app.renderer().c_str());
    frames(app, 10, [] {});  // warm-up: fonts, first layout
    print("idle at the middle of the trace", frames(app, 60, [] {}));
    print("one step per frame", frames(app, 60, [&] { model.step(); }));
    print("one step back per frame", frames(app, 60, [&] { model.step_back(); }));
    model.set_speed(1'000'000);
    model.run();
    print("running at 1M steps/s (16.7k per frame)", frames(app, 60, [&] {
            if (!model.running()) {
              model.seek(0);
              model.run();
            }
          }));
    model.pause();
  } catch (const fv::NoDisplay& e) {
    std::printf("frames: skipped (%s)\n", e.what());
  }
  return 0;
}

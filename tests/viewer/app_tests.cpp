// The viewer executable: headless screenshots under xvfb-run (tag [xvfb]) checked against the
// widget-state dump written alongside, and the no-display error.
#include <catch2/catch.hpp>

#include <stb_image.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tests/scratch_dir.h"
#include "viewer/theme.h"

namespace fs = std::filesystem;
using flashsim::viewer::theme::Rgb;
namespace theme = flashsim::viewer::theme;

namespace {

const std::string kViewer = FLASHSIM_VIEWER_EXE;
const std::string kXvfb = FLASHSIM_XVFB_RUN;
const std::string kLessons = FLASHSIM_TEST_LESSONS_DIR;
const std::string kData = FLASHSIM_TEST_DATA_DIR;

struct Run {
  int rc = -1;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using flashsim::test::ScratchDir;

Run run(const std::string& command) {
  ScratchDir tmp;
  fs::path err = tmp.path("stderr.txt");
  int status = std::system((command + " 2>" + err.string()).c_str());
  Run r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err);
  return r;
}

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> px;  // RGB
  Rgb at(int x, int y) const {
    auto i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * 3;
    return {px[i], px[i + 1], px[i + 2]};
  }
};

Image load_png(const fs::path& p) {
  Image img;
  int n = 0;
  unsigned char* data = stbi_load(p.string().c_str(), &img.w, &img.h, &n, 3);
  REQUIRE(data != nullptr);
  img.px.assign(data, data + static_cast<std::size_t>(img.w) * static_cast<std::size_t>(img.h) * 3);
  stbi_image_free(data);
  return img;
}

struct Box {
  int x0, y0, x1, y1;
};

// Rectangles the frame reported ("rect NAME x0 y0 x1 y1" lines of the state dump).
std::map<std::string, Box> rects(const std::string& state) {
  std::map<std::string, Box> out;
  std::istringstream in(state);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string word, name;
    Box b{};
    if (ls >> word >> name >> b.x0 >> b.y0 >> b.x1 >> b.y1 && word == "rect") out[name] = b;
  }
  return out;
}

bool near(Rgb a, Rgb b, int tol = 8) {
  return std::abs(a.r - b.r) <= tol && std::abs(a.g - b.g) <= tol && std::abs(a.b - b.b) <= tol;
}

// Share of the box's pixels that have colour c.
double share(const Image& img, Box b, Rgb c) {
  std::size_t hit = 0, all = 0;
  for (int y = b.y0; y < b.y1; ++y)
    for (int x = b.x0; x < b.x1; ++x, ++all) hit += near(img.at(x, y), c);
  return all ? static_cast<double>(hit) / static_cast<double>(all) : 0.0;
}

// Share of the pixels on the box's outline (one pixel inside its edge) that have colour c.
double outline_share(const Image& img, Box b, Rgb c) {
  std::size_t hit = 0, all = 0;
  for (int x = b.x0 + 1; x < b.x1 - 1; ++x) {
    hit += near(img.at(x, b.y0), c) + near(img.at(x, b.y1 - 1), c);
    all += 2;
  }
  for (int y = b.y0 + 1; y < b.y1 - 1; ++y) {
    hit += near(img.at(b.x0, y), c) + near(img.at(b.x1 - 1, y), c);
    all += 2;
  }
  return all ? static_cast<double>(hit) / static_cast<double>(all) : 0.0;
}

struct Shot {
  Run run;
  Image img;
  std::string state;
  std::map<std::string, Box> rect;
};

Shot screenshot(const std::string& name, const std::string& args) {
  ScratchDir tmp;
  fs::path png = tmp.path(name + ".png");
  Shot s;
  s.run = run(kXvfb + " -a -s '-screen 0 1280x800x24' " + kViewer + " --screenshot " + png.string() + " " + args);
  INFO(s.run.err);
  REQUIRE(fs::exists(png));
  s.img = load_png(png);
  s.state = slurp(png.string() + ".txt");
  s.rect = rects(s.state);
  return s;
}

void check_not_blank(const Image& img) {
  REQUIRE(img.w == 1280);
  REQUIRE(img.h == 800);
  // A real frame has many distinct colours and no dominant one covering the whole image.
  std::map<std::uint32_t, std::size_t> hist;
  for (int y = 0; y < img.h; y += 4)
    for (int x = 0; x < img.w; x += 4) {
      Rgb c = img.at(x, y);
      ++hist[(std::uint32_t{c.r} << 16) | (std::uint32_t{c.g} << 8) | c.b];
    }
  std::size_t most = 0;
  for (auto& [c, n] : hist) most = std::max(most, n);
  CHECK(hist.size() > 50);
  CHECK(most < static_cast<std::size_t>((img.w / 4) * (img.h / 4) * 3 / 4));
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("screenshot at step 3 of the outer product shows row 3 of the lesson table", "[viewer][xvfb]") {
  Shot s = screenshot("outer3", "--step 3 " + kLessons + "/03-outer-product/solution.fsa");
  CHECK(s.run.rc == 0);
  check_not_blank(s.img);
  INFO(s.state);
  CHECK(has(s.state, "step: 3/22"));
  CHECK(has(s.state, "current: step 3 line 6: MAC_Z R0, R1, R2"));
  CHECK(has(s.state, "changed: R2\n"));
  CHECK(has(s.state, "R2: "));
  CHECK(has(s.state, "| a00*b00"));
  REQUIRE(s.rect.count("t0.current_line"));
  REQUIRE(s.rect.count("t0.current_row"));
  REQUIRE(s.rect.count("t0.changed.R2"));
  CHECK_FALSE(s.rect.count("t0.changed.R1"));
  CHECK(share(s.img, s.rect["t0.current_line"], theme::kCurrentLine) > 0.5);
  CHECK(share(s.img, s.rect["t0.current_row"], theme::kCurrentLine) > 0.5);
  CHECK(share(s.img, s.rect["t0.changed.R2"], theme::kChangedRegister) > 0.5);
  REQUIRE(s.rect.count("t0.next_line"));
  CHECK(share(s.img, s.rect["t0.next_line"], theme::kNextMarker) > 0.5);
  // The current line sits just above the next one in the source pane.
  CHECK(s.rect["t0.next_line"].y0 >= s.rect["t0.current_line"].y1);
}

TEST_CASE("screenshot after a LOAD marks the DRAM cell it read", "[viewer][xvfb]") {
  Shot s = screenshot("outer4", "--step 4 " + kLessons + "/03-outer-product/solution.fsa");
  CHECK(s.run.rc == 0);
  INFO(s.state);
  CHECK(has(s.state, "touched: b[0][1] read"));
  CHECK(has(s.state, "changed: R1\n"));
  REQUIRE(s.rect.count("t0.touched_cell"));
  CHECK(outline_share(s.img, s.rect["t0.touched_cell"], theme::kTouchedCell) > 0.6);
}

TEST_CASE("screenshot shows breakpoints on the source lines given", "[viewer][xvfb]") {
  Shot s = screenshot("bp", "--break 8 --break 1 " + kLessons + "/03-outer-product/solution.fsa");
  INFO(s.state);
  CHECK(has(s.state, "breakpoints: 8\n"));  // line 1 is a comment: no breakpoint
  REQUIRE(s.rect.count("t0.breakpoint.8"));
  CHECK(share(s.img, s.rect["t0.breakpoint.8"], theme::kBreakpoint) > 0.5);
}

TEST_CASE("screenshot of two softmax schedules compared in lockstep", "[viewer][xvfb]") {
  Shot s = screenshot("compare", "--step 20 " + kLessons + "/05-safe-softmax/solution.fsa " + kLessons +
                                     "/06-online-softmax/solution.fsa");
  CHECK(s.run.rc == 0);
  check_not_blank(s.img);
  INFO(s.state);
  CHECK(has(s.state, "traces: 2"));
  CHECK(has(s.state, "[trace 0]\ntitle: 05-safe-softmax/solution.fsa\nfile: "));
  CHECK(has(s.state, "[trace 1]\ntitle: 06-online-softmax/solution.fsa\n"));
  CHECK(s.state.find("step: 20/") != s.state.rfind("step: 20/"));  // both at step 20
  REQUIRE(s.rect.count("t0.current_line"));
  REQUIRE(s.rect.count("t1.current_line"));
  CHECK(s.rect["t0.current_line"].x1 <= s.rect["t1.current_line"].x0);  // side by side
  CHECK(share(s.img, s.rect["t1.current_line"], theme::kCurrentLine) > 0.5);
  REQUIRE(s.rect.count("plot.dot0"));
  REQUIRE(s.rect.count("plot.dot1"));
  CHECK(share(s.img, s.rect["plot.dot0"], theme::kTraceA) > 0.5);
  CHECK(share(s.img, s.rect["plot.dot1"], theme::kTraceB) > 0.5);
}

TEST_CASE("generated schedules open by name with parameters", "[viewer][xvfb]") {
  Shot s = screenshot("named", "--step 5 online-softmax:n=16");
  CHECK(s.run.rc == 0);
  INFO(s.state);
  CHECK(has(s.state, "param: n = 16\n"));
  CHECK(has(s.state, "step: 5/220\n"));
}

TEST_CASE("tile traces show tiles and the SRAM occupancy bar", "[viewer][xvfb]") {
  Shot s = screenshot("tiles", "--step 2 " + kData + "/tile_matmul.fsa");
  CHECK(s.run.rc == 0);
  INFO(s.state);
  CHECK(has(s.state, "touched: b[0][0] read"));
  CHECK(has(s.state, "sram: in_use=128 peak=128 capacity=256"));
  REQUIRE(s.rect.count("t0.sram_bar"));
  REQUIRE(s.rect.count("t0.touched_cell"));
  CHECK(outline_share(s.img, s.rect["t0.touched_cell"], theme::kTouchedCell) > 0.6);
}

TEST_CASE("a file that does not assemble shows its error in the app and on stderr", "[viewer][xvfb]") {
  std::string bad = kData + "/bad_operand.fsa";
  Shot s = screenshot("bad", bad);
  CHECK(s.run.rc == 2);
  CHECK(has(s.run.err, bad + ":3:1: error: ADD takes 3 operands"));
  INFO(s.state);
  CHECK(has(s.state, "error: " + bad + ":3:1: error: ADD takes 3 operands"));
  CHECK(has(s.state, "traces: 0"));
  CHECK(has(s.state, "error_context:\n 3 | ADD R0, R0\n   | ^\n"));
  REQUIRE(s.rect.count("error_banner"));
  CHECK(share(s.img, s.rect["error_banner"], theme::kErrorBanner) > 0.5);
}

TEST_CASE("without a display the viewer says so and exits 1", "[viewer]") {
  Run r = run("env -u DISPLAY -u WAYLAND_DISPLAY " + kViewer + " " + kLessons + "/01-dot-product/solution.fsa");
  CHECK(r.rc == 1);
  CHECK(r.err == "flashsim-viewer: error: cannot open a window (no display; set DISPLAY or run under xvfb-run)\n");
}

TEST_CASE("bad command lines exit 2", "[viewer]") {
  CHECK(run(kViewer + " --param n " + kLessons + "/01-dot-product/solution.fsa").rc == 2);
  CHECK(run(kViewer + " a.fsa b.fsa c.fsa").rc == 2);
  // --state is the screenshot's text dump: alone it was silently ignored
  Run state = run(kViewer + " --state s.txt " + kLessons + "/01-dot-product/solution.fsa");
  CHECK(state.rc == 2);
  CHECK(has(state.err, "--state requires --screenshot"));
  // a parameter no trace takes is refused before any window opens
  Run typo = run(kViewer + " --param N=4 " + kLessons + "/05-safe-softmax/solution.fsa");
  CHECK(typo.rc == 2);
  CHECK(typo.err == "flashsim-viewer: error: --param N: no trace opened here takes it (they take: n)\n");
  Run named = run(kViewer + " --param q=4 online-softmax:n=16");
  CHECK(named.rc == 2);
  CHECK(has(named.err, "--param q: no trace opened here takes it"));
  // a mistyped trace name is named as such, not as a file that cannot be opened (the app would
  // show it; without a display it then exits 1)
  Run unknown = run(kViewer + " tile-attention-fa3");
  CHECK(unknown.rc != 0);
  CHECK(has(unknown.err, "tile-attention-fa3: error: no such file, and no trace of that name"));
  ScratchDir tmp;
  Run list = run(kViewer + " --list > " + tmp.path("list.txt"));
  CHECK(list.rc == 0);
  CHECK(has(slurp(tmp.path("list.txt")), "06-online-softmax n=8"));
}

TEST_CASE("big arrays: the binned heat-map texture marks the cell a LOAD read", "[viewer][xvfb]") {
  // x[5000] has more elements than the per-cell drawing allows: it is one texture of binned cells.
  Shot s = screenshot("bigarray", "--step 906 online-softmax:n=5000");
  CHECK(s.run.rc == 0);
  check_not_blank(s.img);
  INFO(s.state);
  CHECK(has(s.state, "step: 906/69996\n"));
  CHECK(has(s.state, "touched: x[101] read"));
  REQUIRE(s.rect.count("t0.touched_cell"));
  REQUIRE(s.rect.count("t0.heat_texture.x"));
  REQUIRE(s.rect.count("t0.heat_texture.out"));
  Box b = s.rect["t0.touched_cell"], x = s.rect["t0.heat_texture.x"];
  // The box sits on the texture, a few pixels round a cell of the first of its rows.
  CHECK(b.x0 >= x.x0 - 4);
  CHECK(b.x1 <= x.x1 + 4);
  CHECK(b.y0 >= x.y0 - 4);
  CHECK(b.y1 - b.y0 < 16);
  CHECK(outline_share(s.img, b, theme::kTouchedCell) > 0.6);
  // Cells read so far (x[0..101]) are heat-coloured, not the never-read colour.
  CHECK_FALSE(near(s.img.at(x.x0 + 1, x.y0 + 1), Rgb{36, 40, 48}));
}

TEST_CASE("screenshot of lesson 15: the L2 toggle, its occupancy bar and the hbm budget", "[viewer][xvfb]") {
  Shot s = screenshot("l2", "--lesson 15 --step 113 " + kLessons + "/15-l2-cache/solution.fsa");
  CHECK(s.run.rc == 0);
  check_not_blank(s.img);
  INFO(s.state);
  // step 113 is the second sweep's LOAD of K[6] (sweeping back): the L2 still held it
  CHECK(has(s.state, "touched: K[6][0] read"));
  CHECK(has(s.state, "l2_last: hit"));
  CHECK(has(s.state, "l2: capacity=384 line=32 sector=32 hits=3 misses=20 hbm_read=576 hbm_written=0 resident=384 dirty=64"));
  CHECK(has(s.state, "budget: hbm_bytes_read 576/2560 (whole trace 2560)"));
  CHECK(has(s.state, "budget: hbm_bytes_written 0/512 (whole trace 512)"));
  REQUIRE(s.rect.count("t0.l2_toggle"));
  REQUIRE(s.rect.count("t0.l2_occupancy"));
  // the L2 is full at this step: the bar is filled with its colour across most of its width
  CHECK(share(s.img, s.rect["t0.l2_occupancy"], {89, 140, 204}) > 0.3);
  // --l2 0 turns it off: no L2 in the dump, no toggle
  Shot off = screenshot("l2off", "--l2 0 --step 113 " + kLessons + "/15-l2-cache/solution.fsa");
  CHECK_FALSE(has(off.state, "l2:"));
  CHECK_FALSE(off.rect.count("t0.l2_toggle"));
  Run bad = run(kViewer + " --l2 12abc " + kLessons + "/15-l2-cache/solution.fsa");
  CHECK(bad.rc == 2);
  CHECK(has(bad.err, "invalid size '12abc'"));
}

TEST_CASE("screenshot of a trace with .units: the Units timeline marks the current step's bars", "[viewer][xvfb][units]") {
  Shot s = screenshot("units", "--step 3 " + kData + "/units_two_streams.fsa");
  CHECK(s.run.rc == 0);
  check_not_blank(s.img);
  INFO(s.state);
  CHECK(has(s.state, "units: cycles=9 bound=vector now=0\n"));
  CHECK(has(s.state, "lane special: busy 44.4 % rows=1 bars=1 current=0..4\n"));
  REQUIRE(s.rect.count("t0.units.lanes"));
  REQUIRE(s.rect.count("t0.units.current.special"));
  REQUIRE(s.rect.count("t0.units.current.stream_a"));
  CHECK_FALSE(s.rect.count("t0.units.current.vector"));
  REQUIRE(s.rect.count("t0.units.busy.special"));
  // The current bar is outlined in white, on both of its lanes, inside the lanes' area.
  for (const char* lane : {"t0.units.current.special", "t0.units.current.stream_a"}) {
    const Box b = s.rect[lane];
    CHECK(b.x0 >= s.rect["t0.units.lanes"].x0 - 3);  // the frame sits just outside the bar
    CHECK(b.y1 <= s.rect["t0.units.lanes"].y1 + 3);
    CHECK(outline_share(s.img, b, theme::kUnitsCurrent) > 0.6);
  }
  // The vector lane's critical bars carry the red stripe somewhere in the lanes' area.
  const Box lanes = s.rect["t0.units.lanes"];
  CHECK(share(s.img, lanes, theme::kCriticalPath) > 0.001);
}

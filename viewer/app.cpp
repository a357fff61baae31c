#include "viewer/app.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/report.h"
#include "viewer/heatmap.h"
#include "viewer/platform.h"
#include "viewer/theme.h"

namespace flashsim::viewer {

namespace {

ImU32 rgb(theme::Rgb c, int alpha = 255) { return IM_COL32(c.r, c.g, c.b, alpha); }
ImVec4 rgbv(theme::Rgb c, float alpha = 1.0f) { return ImVec4(c.r / 255.f, c.g / 255.f, c.b / 255.f, alpha); }
theme::Rgb trace_color(int slot) { return slot == 0 ? theme::kTraceA : theme::kTraceB; }

constexpr ImU32 kTextDim = IM_COL32(140, 148, 160, 255);
constexpr ImU32 kText = IM_COL32(225, 228, 232, 255);
constexpr ImU32 kRowHover = IM_COL32(50, 56, 66, 255);
constexpr ImU32 kGridEmpty = IM_COL32(36, 40, 48, 255);

// "t0.": what the screenshot test's marks of trace slot `slot` start with.
std::string mark_prefix(int slot) { return "t" + std::to_string(slot) + "."; }
// The panes' background. The framebuffer clear paints it and the panes themselves are
// transparent: a software rasterizer (llvmpipe under xvfb) then shades no full-screen
// background quads, which were the largest share of its per-frame work.
const ImVec4 kPaneBg(0.105f, 0.115f, 0.135f, 1.0f);

std::string human_bytes(std::uint64_t b) {
  char buf[32];
  if (b < 10'000) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  else if (b < 10'000'000) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else if (b < 10'000'000'000ull) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.1f GiB", b / 1073741824.0);
  return buf;
}

std::string with_commas(std::uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

ImU32 heat(float t) { return heat_rgba(t); }

void text_clipped(ImDrawList* dl, ImFont* font, ImVec2 pos, ImU32 color, const std::string& s, float max_x) {
  ImVec4 clip(pos.x, pos.y, max_x, pos.y + 1000.0f);
  dl->AddText(font, font->FontSize, pos, color, s.data(), s.data() + s.size(), 0.0f, &clip);
}

constexpr int kPaneFlags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                           ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;

}  // namespace

App::App(Model& model, AppOptions options) : model_(model), opts_(std::move(options)) {
  glfwSetErrorCallback([](int, const char*) {});  // our own message says what to do
  if (!glfwInit())
    throw NoDisplay("cannot open a window (no display; set DISPLAY or run under xvfb-run)");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  // FLASHSIM_VIEWER_GL=egl: make the context through EGL on the X11 window, for X servers whose
  // GLX is only a software one (Xvfb on a GPU machine, where the GPU's EGL may still draw).
  if (const char* api = std::getenv("FLASHSIM_VIEWER_GL"); api && std::strcmp(api, "egl") == 0)
    glfwWindowHint(GLFW_CONTEXT_CREATION_API, GLFW_EGL_CONTEXT_API);
  window_ = glfwCreateWindow(opts_.width, opts_.height, "flashsim viewer", nullptr, nullptr);
  if (!window_) {
    glfwTerminate();
    throw NoDisplay("cannot open a window (no OpenGL 3 context on this display)");
  }
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(opts_.vsync ? 1 : 0);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // fixed layout; nothing to remember between runs
  setup_style();
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  ImGui_ImplOpenGL3_Init(platform::kGlslVersion);
  catalog_ = full_catalog(opts_.lessons_dir);
  last_reported_error_ = model_.error();  // the caller has already printed it
  last_time_ = glfwGetTime();
}

App::~App() {
  for (auto& [key, h] : heat_textures_) {
    GLuint id = h.gl;
    if (id) glDeleteTextures(1, &id);
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
}

void App::setup_style() {
  ImGuiIO& io = ImGui::GetIO();
  // DejaVu reads far better than the built-in bitmap font; fall back to it when absent.
  const char* sans = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  const char* mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
  std::error_code ec;
  if (std::filesystem::exists(sans, ec) && std::filesystem::exists(mono, ec)) {
    io.Fonts->AddFontFromFileTTF(sans, 15.0f);
    mono_font_ = io.Fonts->AddFontFromFileTTF(mono, 15.0f);
  } else {
    io.Fonts->AddFontDefault();
    mono_font_ = io.Fonts->Fonts[0];
  }
  ImGui::StyleColorsDark();
  ImGuiStyle& s = ImGui::GetStyle();
  s.WindowRounding = 0;
  s.FrameRounding = 4;
  s.GrabRounding = 4;
  s.WindowBorderSize = 1;
  s.WindowPadding = ImVec2(8, 6);
  s.FramePadding = ImVec2(8, 4);
  s.ItemSpacing = ImVec2(8, 5);
  ImVec4* c = s.Colors;
  c[ImGuiCol_WindowBg] = ImVec4(0, 0, 0, 0);  // painted by the clear (kPaneBg)
  c[ImGuiCol_ChildBg] = ImVec4(0, 0, 0, 0);
  c[ImGuiCol_TitleBg] = ImVec4(0.16f, 0.18f, 0.22f, 1.0f);
  c[ImGuiCol_TitleBgActive] = ImVec4(0.16f, 0.18f, 0.22f, 1.0f);
  c[ImGuiCol_MenuBarBg] = ImVec4(0.13f, 0.14f, 0.17f, 1.0f);
  c[ImGuiCol_Border] = ImVec4(0.24f, 0.26f, 0.31f, 1.0f);
  c[ImGuiCol_Button] = ImVec4(0.22f, 0.27f, 0.36f, 1.0f);
  c[ImGuiCol_ButtonHovered] = ImVec4(0.29f, 0.37f, 0.50f, 1.0f);
  c[ImGuiCol_ButtonActive] = ImVec4(0.34f, 0.45f, 0.62f, 1.0f);
  c[ImGuiCol_FrameBg] = ImVec4(0.17f, 0.19f, 0.23f, 1.0f);
  c[ImGuiCol_PlotHistogram] = ImVec4(0.30f, 0.62f, 0.40f, 1.0f);
}

bool App::should_close() const { return glfwWindowShouldClose(window_); }

namespace {

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Clears the framebuffer and renders ImGui's draw data, waiting until the GL has finished, so
// the time measured is the rasterizer's work and not just the queueing of commands.
void render_draw_data(GLFWwindow* window, FrameCost& cost) {
  auto t0 = std::chrono::steady_clock::now();
  double c0 = process_cpu_ms();
  int w, h;
  glfwGetFramebufferSize(window, &w, &h);
  glViewport(0, 0, w, h);
  glClearColor(kPaneBg.x, kPaneBg.y, kPaneBg.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImDrawData* dd = ImGui::GetDrawData();
  ImGui_ImplOpenGL3_RenderDrawData(dd);
  glFinish();
  cost.render_ms = ms_between(t0, std::chrono::steady_clock::now());
  cost.render_cpu_ms = process_cpu_ms() - c0;
  cost.vertices = dd ? dd->TotalVtxCount : 0;
  cost.indices = dd ? dd->TotalIdxCount : 0;
  cost.draw_calls = 0;
  if (dd)
    for (int i = 0; i < dd->CmdListsCount; ++i) cost.draw_calls += dd->CmdLists[i]->CmdBuffer.Size;
}

}  // namespace

void App::frame(double dt) {
  auto t0 = std::chrono::steady_clock::now();
  double c0 = thread_cpu_ms();
  glfwPollEvents();
  double now = glfwGetTime();
  if (dt < 0) dt = now - last_time_;
  last_time_ = now;
  // A frame never spends more than ~8 ms stepping, whatever the speed asks for.
  model_.tick(dt, 100'000);
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  marks_.clear();
  heat_rows_this_frame_ = 0;
  draw_ui();
  ImGui::Render();
  cost_.ui_ms = ms_between(t0, std::chrono::steady_clock::now());
  cost_.ui_cpu_ms = thread_cpu_ms() - c0;
  render_draw_data(window_, cost_);
  cost_.heat_rows_uploaded = heat_rows_this_frame_;
  heat_rows_this_frame_ = 0;
  if (!model_.error().empty() && model_.error() != last_reported_error_ && opts_.report_error)
    opts_.report_error(model_.error());
  last_reported_error_ = model_.error();
}

void App::empty_frame() {
  auto t0 = std::chrono::steady_clock::now();
  double c0 = thread_cpu_ms();
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  ImGui::Render();
  cost_.ui_ms = ms_between(t0, std::chrono::steady_clock::now());
  cost_.ui_cpu_ms = thread_cpu_ms() - c0;
  render_draw_data(window_, cost_);
  cost_.heat_rows_uploaded = 0;
}

void App::present() { glfwSwapBuffers(window_); }

std::string App::renderer() const {
  auto str = [](GLenum e) {
    const GLubyte* s = glGetString(e);
    return s ? std::string(reinterpret_cast<const char*>(s)) : std::string("?");
  };
  return str(GL_RENDERER) + ", OpenGL " + str(GL_VERSION);
}

std::string App::save_screenshot(const std::string& path) const {
  int w, h;
  glfwGetFramebufferSize(window_, &w, &h);
  std::vector<unsigned char> pixels(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 4);
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // OpenGL's rows run bottom-up; PNG's top-down.
  std::vector<unsigned char> flipped(pixels.size());
  auto row = static_cast<std::size_t>(w) * 4;
  for (int y = 0; y < h; ++y)
    std::copy_n(pixels.data() + static_cast<std::size_t>(h - 1 - y) * row, row, flipped.data() + static_cast<std::size_t>(y) * row);
  for (std::size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;
  if (!stbi_write_png(path.c_str(), w, h, 4, flipped.data(), static_cast<int>(row)))
    return "cannot write " + path;
  return "";
}

std::string App::layout_dump() const {
  std::ostringstream os;
  for (const auto& m : marks_)
    os << "rect " << m.name << " " << static_cast<int>(m.x0) << " " << static_cast<int>(m.y0) << " "
       << static_cast<int>(m.x1) << " " << static_cast<int>(m.y1) << "\n";
  return os.str();
}

void App::mark(const std::string& name, float x0, float y0, float x1, float y1) {
  // Only what is on screen counts: a mark clipped away by its pane is not a visible highlight.
  ImVec2 cmin = ImGui::GetWindowDrawList()->GetClipRectMin(), cmax = ImGui::GetWindowDrawList()->GetClipRectMax();
  x0 = std::max(x0, cmin.x), y0 = std::max(y0, cmin.y), x1 = std::min(x1, cmax.x), y1 = std::min(y1, cmax.y);
  if (x1 > x0 && y1 > y0) marks_.push_back({name, x0, y0, x1, y1});
}

std::string App::pane_title(int slot, const char* pane) const {
  std::string s = pane;
  if (model_.compare()) s = std::string(slot == 0 ? "A: " : "B: ") + pane;
  return s + "##" + pane + std::to_string(slot);
}

bool App::begin_pane(const char* title, int slot, Rect r, int extra_flags) {
  ImGui::SetNextWindowPos(ImVec2(r.x, r.y));
  ImGui::SetNextWindowSize(ImVec2(r.w, r.h));
  bool tinted = slot >= 0 && model_.compare();
  if (tinted) {
    theme::Rgb c = trace_color(slot);
    ImVec4 bg(c.r / 255.f * 0.32f + 0.06f, c.g / 255.f * 0.32f + 0.06f, c.b / 255.f * 0.32f + 0.07f, 1.0f);
    ImGui::PushStyleColor(ImGuiCol_TitleBg, bg);
    ImGui::PushStyleColor(ImGuiCol_TitleBgActive, bg);
  }
  bool open = ImGui::Begin(title, nullptr, kPaneFlags | extra_flags);
  if (tinted) ImGui::PopStyleColor(2);
  return open;
}

void App::end_pane() { ImGui::End(); }

// ---- the frame --------------------------------------------------------------------------

void App::draw_ui() {
  handle_keys();
  // Pane sizes settle over the first frames; follow the current line again until they have.
  if (frame_count_++ < 3)
    for (auto& slot : scrolled_to_) slot[0] = slot[1] = ~0ull;
  ImVec2 display = ImGui::GetIO().DisplaySize;
  float y = draw_menu_bar();
  const float toolbar_h = 44;
  draw_toolbar({0, y, display.x, toolbar_h});
  y += toolbar_h;
  if (!model_.error().empty()) {
    float banner_h = model_.error_context().empty() ? 40 : 76;
    draw_error_banner({0, y, display.x, banner_h});
    y += banner_h;
  }
  Rect body{0, y, display.x, display.y - y};
  if (model_.trace_count() == 0) draw_welcome(body);
  else if (model_.compare()) layout_compare(body);
  else layout_single(body);
  open_dialog();
  export_dialog();
  if (show_keys_) {
    ImGui::SetNextWindowPos(ImVec2(display.x * 0.5f, display.y * 0.5f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    ImGui::PushStyleColor(ImGuiCol_WindowBg, kPaneBg);  // floats over the panes: needs its own background
    bool keys_open = ImGui::Begin("Keys", &show_keys_, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings);
    ImGui::PopStyleColor();
    if (keys_open) {
      ImGui::Text("Space       run / pause");
      ImGui::Text("Right       step forward");
      ImGui::Text("Left        step back");
      ImGui::Text("Home        reset to step 0");
      ImGui::Text("B           run to the next breakpoint");
      ImGui::Text("Click a source line to toggle a breakpoint;");
      ImGui::Text("click a trace row to jump to that step.");
    }
    ImGui::End();
  }
}

void App::handle_keys() {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId)) return;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) model_.running() ? model_.pause() : model_.run();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) {
    model_.pause();
    model_.step();
  }
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) model_.step_back();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home), false)) model_.reset();
  if (ImGui::IsKeyPressed(GLFW_KEY_B, false)) model_.run_to_breakpoint();
}

float App::draw_menu_bar() {
  float h = 0;
  if (ImGui::BeginMainMenuBar()) {
    if (ImGui::BeginMenu("File")) {
      if (ImGui::MenuItem("Open...", "")) {
        open_requested_ = true;
        open_slot_ = 0;
      }
      if (ImGui::MenuItem("Compare with...", "")) {
        open_requested_ = true;
        open_slot_ = model_.trace_count() == 0 ? 0 : 1;
      }
      if (ImGui::MenuItem("Close second trace", nullptr, false, model_.compare())) model_.close(1);
      ImGui::Separator();
      // The same files as `flashsim run --trace-csv` and `--perfetto` (sim/trace_export.h).
      for (auto [label, format] : {std::pair{"Export steps as CSV...", Model::ExportFormat::StepsCsv},
                                   std::pair{"Export Perfetto trace...", Model::ExportFormat::Perfetto}})
        if (ImGui::MenuItem(label, nullptr, false, model_.trace_count() > 0)) {
          export_requested_ = true;
          export_format_ = format;
          export_slot_ = 0;
          export_path_ = Model::default_export_name(*model_.trace(0), format);
        }
      ImGui::Separator();
      if (ImGui::MenuItem("Quit", "Ctrl+Q")) glfwSetWindowShouldClose(window_, 1);
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Open generated")) {
      std::string group;
      for (std::size_t i = 0; i < catalog_.size(); ++i) {
        if (catalog_[i].group != group) {
          group = catalog_[i].group;
          ImGui::TextDisabled("%s", group.c_str());
        }
        if (ImGui::MenuItem(catalog_[i].name.c_str())) {
          open_requested_ = true;
          open_slot_ = 0;
          selected_entry_ = static_cast<int>(i);
          dialog_params_.clear();
          for (const auto& p : catalog_[i].params) dialog_params_[p.name] = p.value;
        }
        if (ImGui::IsItemHovered() && !catalog_[i].description.empty()) ImGui::SetTooltip("%s", catalog_[i].description.c_str());
      }
      if (catalog_.empty()) ImGui::TextDisabled("no lesson folder found (--lessons-dir)");
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
      ImGui::MenuItem("Symbolic values", nullptr, &show_symbolic_);
      ImGui::MenuItem("Keys...", nullptr, &show_keys_);
      ImGui::EndMenu();
    }
    if (ImGui::GetIO().KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_Q, false)) glfwSetWindowShouldClose(window_, 1);
    h = ImGui::GetWindowSize().y;
    ImGui::EndMainMenuBar();
  }
  return h;
}

void App::draw_toolbar(Rect r) {
  ImGui::SetNextWindowPos(ImVec2(r.x, r.y));
  ImGui::SetNextWindowSize(ImVec2(r.w, r.h));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(8, 8));
  ImGui::Begin("##toolbar", nullptr, kPaneFlags | ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar);
  ImGui::PopStyleVar();
  bool any = model_.trace_count() > 0;
  if (!any) ImGui::BeginDisabled();
  if (ImGui::Button("|< Reset")) model_.reset();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Back to step 0 (Home)");
  ImGui::SameLine();
  if (ImGui::Button("< Back")) model_.step_back();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Undo one step (Left)");
  ImGui::SameLine();
  if (ImGui::Button("Step >")) {
    model_.pause();
    model_.step();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Execute one instruction (Right)");
  ImGui::SameLine();
  if (model_.running()) {
    ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.55f, 0.35f, 0.12f, 1));
    if (ImGui::Button(" Pause ")) model_.pause();
    ImGui::PopStyleColor();
  } else {
    ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.16f, 0.42f, 0.26f, 1));
    if (ImGui::Button("  Run  ")) model_.run();
    ImGui::PopStyleColor();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Run at the chosen speed; stops at breakpoints (Space)");
  ImGui::SameLine();
  if (ImGui::Button("Run to breakpoint >|")) model_.run_to_breakpoint();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Run until the next instruction sits on a breakpoint line (B)");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(190);
  float speed = static_cast<float>(model_.speed());
  if (ImGui::SliderFloat("##speed", &speed, 1.0f, 1'000'000.0f, "speed %.0f steps/s", ImGuiSliderFlags_Logarithmic))
    model_.set_speed(speed);
  ImGui::SameLine();
  std::uint64_t k = model_.step_index(), lo = 0, hi = std::max<std::uint64_t>(1, model_.max_steps());
  std::string fmt = "step %llu of " + with_commas(model_.max_steps());
  ImGui::SetNextItemWidth(std::max(160.0f, r.w - ImGui::GetCursorPosX() - 260));
  if (any && ImGui::SliderScalar("##step", ImGuiDataType_U64, &k, &lo, &hi, fmt.c_str())) {
    model_.pause();
    model_.seek(k);
  }
  if (!any) ImGui::Dummy(ImVec2(std::max(160.0f, r.w - ImGui::GetCursorPosX() - 260), 1));
  if (!any) ImGui::EndDisabled();
  ImGui::SameLine();
  // Status: a fault wins, then done / running / paused.
  std::string status = "no trace";
  ImVec4 color(0.6f, 0.64f, 0.7f, 1);
  for (int s = 0; s < 2; ++s)
    if (const Trace* t = model_.trace(s); t && !t->fault().empty()) {
      status = "fault";
      color = ImVec4(1.0f, 0.4f, 0.4f, 1);
    }
  if (status != "fault" && any) {
    if (model_.running()) status = "running", color = ImVec4(0.5f, 0.9f, 0.6f, 1);
    else if (model_.all_done()) status = "done";
    else status = "paused";
  }
  ImGui::TextColored(color, "%s", status.c_str());
  ImGui::SameLine();
  if (ImGui::SmallButton("keys")) show_keys_ = !show_keys_;
  ImGui::End();
}

void App::draw_error_banner(Rect r) {
  ImGui::SetNextWindowPos(ImVec2(r.x, r.y));
  ImGui::SetNextWindowSize(ImVec2(r.w, r.h));
  ImGui::PushStyleColor(ImGuiCol_WindowBg, rgbv(theme::kErrorBanner));
  ImGui::Begin("##error", nullptr, kPaneFlags | ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar);
  ImGui::PopStyleColor();
  mark("error_banner", r.x, r.y, r.x + r.w, r.y + r.h);
  ImGui::PushFont(static_cast<ImFont*>(mono_font_));
  ImGui::PushTextWrapPos(r.w - 110);
  ImGui::TextUnformatted(model_.error().c_str());
  ImGui::PopTextWrapPos();
  if (!model_.error_context().empty()) ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.75f, 1), "%s", model_.error_context().c_str());
  ImGui::PopFont();
  ImGui::SetCursorPos(ImVec2(r.w - 96, 8));
  if (ImGui::Button("Dismiss")) model_.clear_error();
  ImGui::End();
}

void App::draw_welcome(Rect r) {
  begin_pane("Welcome", -1, r);
  ImGui::Spacing();
  ImGui::TextUnformatted("No trace is open.");
  ImGui::TextDisabled("Open an assembly file (File > Open...) or a lesson trace / generated schedule:");
  ImGui::Spacing();
  for (std::size_t i = 0; i < catalog_.size(); ++i) {
    if (ImGui::Button(catalog_[i].name.c_str(), ImVec2(260, 0))) open_entry(0, catalog_[i], {});
    ImGui::SameLine();
    ImGui::TextDisabled("%s", catalog_[i].description.c_str());
  }
  end_pane();
}

void App::layout_single(Rect b) {
  // A trace with .units gets the Units timeline across the bottom: a lane per unit and stream.
  const Trace* t0 = model_.trace(0);
  if ((visible_panes_ & kPaneUnits) && t0 && (t0->timing() || !t0->timing_error().empty())) {
    const std::size_t lanes = t0->timeline() ? t0->timeline()->lanes.size() : 1;
    float units_h = std::floor(std::clamp(static_cast<float>(lanes) * 24.0f + 76.0f, b.h * 0.24f, b.h * 0.42f));
    units_pane(0, {b.x, b.y + b.h - units_h, b.w, units_h});
    b.h -= units_h;
  }
  float left = std::floor(b.w * 0.375f), mid = std::floor(b.w * 0.26f), right = b.w - left - mid;
  float src_h = std::floor(b.h * 0.52f);
  const unsigned show = visible_panes_;
  if (show & kPaneSource) source_pane(0, {b.x, b.y, left, src_h}, false);
  if (show & kPaneTrace) {
    if (begin_pane(pane_title(0, "Trace (loops expanded)").c_str(), 0, {b.x, b.y + src_h, left, b.h - src_h}))
      trace_lines(0);
    end_pane();
  }
  float reg_h = std::floor(b.h * 0.46f);
  if (show & kPaneRegisters) registers_pane(0, {b.x + left, b.y, mid, reg_h});
  if (show & kPaneCounters) counters_pane(0, {b.x + left, b.y + reg_h, mid, b.h - reg_h});
  float dram_h = std::floor(b.h * 0.64f);
  if (show & kPaneDram) dram_pane(0, {b.x + left + mid, b.y, right, dram_h});
  if (show & kPanePlot) plot_pane({b.x + left + mid, b.y + dram_h, right, b.h - dram_h}, false);
}

void App::layout_compare(Rect b) {
  float top = std::floor(b.h * 0.74f), half = std::floor(b.w * 0.5f);
  const unsigned show = visible_panes_;
  for (int s = 0; s < 2; ++s) {
    float x = b.x + s * half, w = s == 0 ? half : b.w - half;
    float src_w = std::floor(w * 0.56f), src_h = std::floor(top * 0.55f);
    if (show & (kPaneSource | kPaneTrace)) source_pane(s, {x, b.y, src_w, src_h}, true);
    if (show & kPaneRegisters) registers_pane(s, {x + src_w, b.y, w - src_w, src_h});
    if (show & kPaneDram) dram_pane(s, {x, b.y + src_h, src_w, top - src_h});
    if (show & kPaneCounters) counters_pane(s, {x + src_w, b.y + src_h, w - src_w, top - src_h});
  }
  // Traces with .units: their Units timelines share the bottom strip with the plot.
  const bool timed[2] = {model_.trace(0)->timing() != nullptr, model_.trace(1)->timing() != nullptr};
  float plot_w = b.w;
  if ((show & kPaneUnits) && (timed[0] || timed[1])) {
    const int n = timed[0] + timed[1];
    const float each = std::floor(b.w * (show & kPanePlot ? (n == 2 ? 0.3f : 0.45f) : 1.0f / static_cast<float>(n)));
    plot_w = show & kPanePlot ? b.w - each * static_cast<float>(n) : 0;
    float x = b.x + plot_w;
    for (int s = 0; s < 2; ++s)
      if (timed[s]) {
        units_pane(s, {x, b.y + top, s == 1 || n == 1 ? b.x + b.w - x : each, b.h - top});
        x += each;
      }
  }
  if ((show & kPanePlot) && plot_w > 0) plot_pane({b.x, b.y + top, plot_w, b.h - top}, true);
}

// ---- source and trace --------------------------------------------------------------------

void App::source_pane(int slot, Rect r, bool with_trace_tab) {
  Trace* t = model_.trace(slot);
  std::string title = pane_title(slot, ("Source: " + t->title()).c_str());
  if (begin_pane(title.c_str(), slot, r)) {
    if (with_trace_tab) {
      if (ImGui::BeginTabBar("##srctabs")) {
        if (ImGui::BeginTabItem("Source")) {
          ImGui::BeginChild("##src");
          source_lines(slot);
          ImGui::EndChild();
          ImGui::EndTabItem();
        }
        if (ImGui::BeginTabItem("Trace (loops expanded)")) {
          ImGui::BeginChild("##trc");
          trace_lines(slot);
          ImGui::EndChild();
          ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
      }
    } else {
      source_lines(slot);
    }
  }
  end_pane();
}

void App::source_lines(int slot) {
  Trace& t = *model_.trace(slot);
  const auto& lines = t.program().source_lines;
  ImFont* mono = static_cast<ImFont*>(mono_font_);
  const float row_h = mono->FontSize + 7;
  // Loop bodies get an "executed k of n times" column; straight-line files do not need it.
  // The columns are as wide as the largest numbers; measured once per trace (a generated
  // program's disassembly can have a million lines).
  SourceColumns& cols = source_columns_[slot];
  if (cols.serial != t.serial()) {
    std::uint64_t most = 0;
    for (std::uint32_t l = 1; l <= lines.size(); ++l) most = std::max(most, t.line_total(l));
    std::string widest_line(std::max<std::size_t>(3, std::to_string(lines.size()).size()), '9');
    std::string widest_hits = std::to_string(most) + "/" + std::to_string(most);
    cols.serial = t.serial();
    cols.loops = most > 1;
    cols.number_w = mono->CalcTextSizeA(mono->FontSize, 1e9f, 0, widest_line.c_str()).x;
    cols.hits_w = mono->CalcTextSizeA(mono->FontSize, 1e9f, 0, widest_hits.c_str()).x;
  }
  const bool loops = cols.loops;
  const float code_x = loops ? std::max(132.0f, 30 + cols.number_w + 12 + cols.hits_w + 10) : std::max(66.0f, 30 + cols.number_w + 8);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const std::string prefix = mark_prefix(slot);
  std::uint32_t current = t.current_line(), next = t.next_line();
  // Follow the execution: keep the current line in view when it changes.
  std::uint32_t follow = current ? current : next;
  if (follow && scrolled_to_[slot][0] != follow) {
    float y = (static_cast<float>(follow) - 1) * row_h;
    float view = ImGui::GetWindowContentRegionMax().y - ImGui::GetWindowContentRegionMin().y;
    // Keep a row of context (the next instruction) below the current one.
    if (y < ImGui::GetScrollY() || y + 3 * row_h > ImGui::GetScrollY() + view) ImGui::SetScrollY(std::max(0.0f, y - view * 0.4f));
    scrolled_to_[slot][0] = follow;
  }
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(0, 0));  // rows exactly row_h apart, as the clipper assumes
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(lines.size()), row_h);
  const float width = ImGui::GetContentRegionAvail().x;
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      auto line = static_cast<std::uint32_t>(i + 1);
      ImVec2 p = ImGui::GetCursorScreenPos();
      ImGui::PushID(i);
      bool clicked = ImGui::InvisibleButton("##line", ImVec2(width, row_h));
      bool hovered = ImGui::IsItemHovered();
      ImGui::PopID();
      bool code = t.line_has_code(line);
      if (clicked && code) t.toggle_breakpoint(line);
      if (hovered && code) ImGui::SetTooltip("Line %u: executed %llu of %llu times so far. Click to toggle a breakpoint.", line,
                                             static_cast<unsigned long long>(t.line_hits(line)),
                                             static_cast<unsigned long long>(t.line_total(line)));
      ImVec2 q(p.x + width, p.y + row_h);
      if (line == current) {
        dl->AddRectFilled(p, q, rgb(theme::kCurrentLine));
        mark(prefix + "current_line", p.x, p.y, q.x, q.y);
      } else if (hovered && code) {
        dl->AddRectFilled(p, q, kRowHover);
      }
      if (t.breakpoints().count(line)) {
        dl->AddCircleFilled(ImVec2(p.x + 9, p.y + row_h * 0.5f), 5.5f, rgb(theme::kBreakpoint));
        mark(prefix + "breakpoint." + std::to_string(line), p.x + 4, p.y + row_h * 0.5f - 4, p.x + 14, p.y + row_h * 0.5f + 4);
      }
      if (line == next) {
        float cy = p.y + row_h * 0.5f;
        dl->AddTriangleFilled(ImVec2(p.x + 18, cy - 5), ImVec2(p.x + 18, cy + 5), ImVec2(p.x + 27, cy), rgb(theme::kNextMarker));
        mark(prefix + "next_line", p.x + 18, cy - 3, p.x + 24, cy + 3);
      }
      char num[16];
      std::snprintf(num, sizeof num, "%3u", line);
      dl->AddText(mono, mono->FontSize, ImVec2(p.x + 30, p.y + 3), kTextDim, num);
      if (t.line_total(line) > 1) {
        std::string hits = std::to_string(t.line_hits(line)) + "/" + std::to_string(t.line_total(line));
        ImVec2 sz = mono->CalcTextSizeA(mono->FontSize, 1e9f, 0, hits.c_str());
        float hx = p.x + code_x - 10 - sz.x;
        dl->AddText(mono, mono->FontSize, ImVec2(hx, p.y + 3), t.line_hits(line) ? IM_COL32(150, 200, 160, 255) : kTextDim, hits.c_str());
      }
      const std::string& text = lines[static_cast<std::size_t>(i)];
      auto first = text.find_first_not_of(" \t");
      bool comment = first != std::string::npos && text[first] == '#';
      bool directive = first != std::string::npos && text[first] == '.';
      ImU32 col = comment ? IM_COL32(120, 150, 120, 255) : directive ? IM_COL32(200, 160, 230, 255) : kText;
      text_clipped(dl, mono, ImVec2(p.x + code_x, p.y + 3), col, text, p.x + width);
    }
  }
  clipper.End();
  ImGui::PopStyleVar();
}

void App::trace_lines(int slot) {
  Trace& t = *model_.trace(slot);
  ImFont* mono = static_cast<ImFont*>(mono_font_);
  const float row_h = mono->FontSize + 7;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const std::string prefix = mark_prefix(slot);
  auto cur = t.current_index();
  std::uint64_t focus = cur ? *cur : 0;

  if (scrolled_to_[slot][1] != t.step()) {
    float y = static_cast<float>(focus) * row_h;
    float view = ImGui::GetWindowContentRegionMax().y - ImGui::GetWindowContentRegionMin().y;
    if (y < ImGui::GetScrollY() || y + 3 * row_h > ImGui::GetScrollY() + view) ImGui::SetScrollY(std::max(0.0f, y - view * 0.4f));
    scrolled_to_[slot][1] = t.step();
  }
  // Only the visible rows are formatted, so a million-step trace costs the same as ten.
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(0, 0));
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(t.size()), row_h);
  const float width = ImGui::GetContentRegionAvail().x;
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      auto index = static_cast<std::uint64_t>(i);
      ImVec2 p = ImGui::GetCursorScreenPos();
      ImGui::PushID(i);
      bool clicked = ImGui::InvisibleButton("##row", ImVec2(width, row_h));
      bool hovered = ImGui::IsItemHovered();
      ImGui::PopID();
      if (clicked) {
        model_.pause();
        model_.seek(index + 1);
      }
      ImVec2 q(p.x + width, p.y + row_h);
      bool executed = index < t.step();
      if (cur && index == *cur) {
        dl->AddRectFilled(p, q, rgb(theme::kCurrentLine));
        mark(prefix + "current_row", p.x, p.y, q.x, q.y);
      } else if (hovered) {
        dl->AddRectFilled(p, q, kRowHover);
      }
      if (index == t.step() && !t.done()) {
        float cy = p.y + row_h * 0.5f;
        dl->AddTriangleFilled(ImVec2(p.x + 4, cy - 5), ImVec2(p.x + 4, cy + 5), ImVec2(p.x + 13, cy), rgb(theme::kNextMarker));
      }
      char head[48];
      std::snprintf(head, sizeof head, "%7llu  L%-3u", static_cast<unsigned long long>(index + 1),
                    t.program().loc(index).line);
      dl->AddText(mono, mono->FontSize, ImVec2(p.x + 14, p.y + 3), kTextDim, head);
      float ix = p.x + 14 + mono->CalcTextSizeA(mono->FontSize, 1e9f, 0, head).x + 8;
      text_clipped(dl, mono, ImVec2(ix, p.y + 3), executed ? kText : IM_COL32(170, 176, 186, 255), t.instruction_text(index), p.x + width);
    }
  }
  clipper.End();
  ImGui::PopStyleVar();
}

// ---- registers, counters -------------------------------------------------------------------

void App::registers_pane(int slot, Rect r) {
  Trace& t = *model_.trace(slot);
  if (begin_pane(pane_title(slot, "Registers").c_str(), slot, r)) {
    const auto& m = t.machine();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImFont* mono = static_cast<ImFont*>(mono_font_);
    const std::string prefix = mark_prefix(slot);
    if (t.tile_machine()) {
      std::uint64_t cap = m.config().sram_bytes.value_or(0);
      std::uint64_t scale = cap ? cap : std::max<std::uint64_t>(1, m.sram_peak());
      char overlay[96];
      if (cap)
        std::snprintf(overlay, sizeof overlay, "SRAM %s / %s", human_bytes(m.sram_in_use()).c_str(), human_bytes(cap).c_str());
      else
        std::snprintf(overlay, sizeof overlay, "SRAM %s (no limit)", human_bytes(m.sram_in_use()).c_str());
      float frac = static_cast<float>(m.sram_in_use()) / static_cast<float>(scale);
      bool tight = cap && frac > 0.9f;
      ImGui::PushStyleColor(ImGuiCol_PlotHistogram, tight ? ImVec4(0.8f, 0.35f, 0.25f, 1) : ImVec4(0.30f, 0.55f, 0.80f, 1));
      ImGui::ProgressBar(frac, ImVec2(-1, 0), overlay);
      ImGui::PopStyleColor();
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Registers hold %s now; the peak so far is %s (yellow mark).", human_bytes(m.sram_in_use()).c_str(),
                          human_bytes(m.sram_peak()).c_str());
      ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
      mark(prefix + "sram_bar", a.x, a.y, b.x, b.y);
      if (cap) {
        float px = a.x + (b.x - a.x) * std::min(1.0f, static_cast<float>(m.sram_peak()) / static_cast<float>(cap));
        dl->AddLine(ImVec2(px, a.y), ImVec2(px, b.y), IM_COL32(255, 220, 120, 255), 2);
      }
    }
    bool sym = show_symbolic_ && m.symbolic();
    const float row_h = mono->FontSize + 6;
    const float width = ImGui::GetContentRegionAvail().x;
    const float value_w = t.tile_machine() ? std::min(width * 0.5f, 200.0f) : std::min(width * 0.4f, 100.0f);
    const float value_x = 40, sym_x = sym ? value_x + value_w : width;
    ImVec2 h = ImGui::GetCursorScreenPos();
    dl->AddText(ImVec2(h.x + 4, h.y), kTextDim, "Reg");
    dl->AddText(ImVec2(h.x + value_x, h.y), kTextDim, "Value");
    if (sym) dl->AddText(ImVec2(h.x + sym_x, h.y), kTextDim, "Symbolic");
    ImGui::Dummy(ImVec2(width, row_h));
    ImGui::BeginChild("##regs");
    ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(0, 0));
    ImGuiListClipper clipper;
    clipper.Begin(m.register_count(), row_h);
    while (clipper.Step()) {
      for (int reg = clipper.DisplayStart; reg < clipper.DisplayEnd; ++reg) {
        RegisterRow row = t.register_row(reg);
        ImVec2 p = ImGui::GetCursorScreenPos();
        ImGui::PushID(reg);
        ImGui::InvisibleButton("##reg", ImVec2(width, row_h));
        bool hovered = ImGui::IsItemHovered();
        ImGui::PopID();
        ImVec2 q(p.x + width, p.y + row_h);
        if (row.changed) {
          dl = ImGui::GetWindowDrawList();
          dl->AddRectFilled(p, q, rgb(theme::kChangedRegister));
          mark(prefix + "changed." + row.name, p.x, p.y, q.x, q.y);
        } else if (reg % 2) {
          ImGui::GetWindowDrawList()->AddRectFilled(p, q, IM_COL32(24, 27, 33, 255));
        }
        dl = ImGui::GetWindowDrawList();
        dl->AddText(mono, mono->FontSize, ImVec2(p.x + 4, p.y + 3), row.changed ? IM_COL32(255, 255, 255, 255) : kTextDim, row.name.c_str());
        text_clipped(dl, mono, ImVec2(p.x + value_x, p.y + 3), row.written ? kText : kTextDim,
                     row.written ? row.numeric : std::string("-"), p.x + sym_x - 6);
        if (sym) text_clipped(dl, mono, ImVec2(p.x + sym_x, p.y + 3), IM_COL32(235, 205, 140, 255), row.symbolic, q.x);
        if (hovered && row.written) {
          ImGui::BeginTooltip();
          ImGui::Text("%s = %s", row.name.c_str(), row.numeric.c_str());
          if (!row.symbolic.empty()) ImGui::Text("symbolic: %s", row.symbolic.c_str());
          const sim::Tile& tile = m.reg(reg);
          if (tile.rows * tile.cols > 1 && !tile.v.empty()) {
            for (int i = 0; i < std::min(tile.rows, 8); ++i) {
              std::string line;
              for (int j = 0; j < std::min(tile.cols, 8); ++j) line += sim::format_value(tile.at(i, j)) + "  ";
              if (tile.cols > 8) line += "...";
              ImGui::TextUnformatted(line.c_str());
            }
            if (tile.rows > 8) ImGui::TextUnformatted("...");
          }
          ImGui::EndTooltip();
        }
      }
    }
    clipper.End();
    ImGui::PopStyleVar();
    ImGui::EndChild();
  }
  end_pane();
}

void App::counters_pane(int slot, Rect r) {
  Trace& t = *model_.trace(slot);
  if (begin_pane(pane_title(slot, "Counters").c_str(), slot, r)) {
    const auto& c = t.machine().counters();
    const auto& total = t.final_counters();
    ImGui::Text("Cycles");
    ImGui::SameLine(110);
    ImGui::TextColored(ImVec4(1, 0.85f, 0.45f, 1), "%s", with_commas(c.cycles).c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("of %s", with_commas(total.cycles).c_str());
    ImGui::Text("DRAM reads");
    ImGui::SameLine(110);
    ImGui::Text("%s elem  %s", with_commas(c.elem_reads).c_str(), human_bytes(c.bytes_read).c_str());
    ImGui::Text("DRAM writes");
    ImGui::SameLine(110);
    ImGui::Text("%s elem  %s", with_commas(c.elem_writes).c_str(), human_bytes(c.bytes_written).c_str());
    if (const sim::TraceL2* l2 = t.l2()) {
      const sim::L2Counts n = l2->total();
      ImGui::Text("L2 sectors");
      ImGui::SameLine(110);
      ImGui::Text("%s hit  %s missed", with_commas(n.hits).c_str(), with_commas(n.misses).c_str());
      ImGui::Text("HBM reads");
      ImGui::SameLine(110);
      ImGui::Text("%s", human_bytes(n.hbm_read).c_str());
      ImGui::SameLine();
      ImGui::TextDisabled("of %s", human_bytes(t.final_l2().hbm_read).c_str());
      ImGui::Text("HBM writes");
      ImGui::SameLine(110);
      ImGui::Text("%s", human_bytes(n.hbm_written).c_str());
      ImGui::SameLine();
      ImGui::TextDisabled("+ %s dirty", human_bytes(l2->dirty_bytes()).c_str());
    }
    // Lesson budgets: the bar is the count so far against the limit; it turns red when the
    // whole trace would exceed it.
    for (const auto& b : t.budgets()) {
      auto now = t.budget_now(b.counter).value_or(0), whole = t.budget_whole(b.counter).value_or(0);
      float frac = b.limit ? static_cast<float>(now) / static_cast<float>(b.limit) : 1.0f;
      bool over = whole > b.limit;
      char overlay[96];
      std::snprintf(overlay, sizeof overlay, "%s %llu / %llu budget%s", b.counter.c_str(), static_cast<unsigned long long>(now),
                    static_cast<unsigned long long>(b.limit), over ? " (trace exceeds it)" : "");
      ImGui::PushStyleColor(ImGuiCol_PlotHistogram, over ? ImVec4(0.80f, 0.30f, 0.25f, 1) : ImVec4(0.30f, 0.62f, 0.40f, 1));
      ImGui::ProgressBar(std::min(frac, 1.0f), ImVec2(-1, 0), overlay);
      ImGui::PopStyleColor();
      ImVec2 a = ImGui::GetItemRectMin(), bb = ImGui::GetItemRectMax();
      mark(mark_prefix(slot) + "budget." + b.counter, a.x, a.y, bb.x, bb.y);
    }
    if (t.budgets().empty() && !t.lesson().empty()) ImGui::TextDisabled("lesson %s has no budget", t.lesson().c_str());
    if (ImGui::BeginTable("##ops", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_ScrollY)) {
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableSetupColumn("Opcode");
      ImGui::TableSetupColumn("now", ImGuiTableColumnFlags_WidthFixed, 70);
      ImGui::TableSetupColumn("trace", ImGuiTableColumnFlags_WidthFixed, 70);
      ImGui::TableHeadersRow();
      for (const auto& row : isa::kInstructionTable) {
        if (!total.count(row.opcode)) continue;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(row.mnemonic.data(), row.mnemonic.data() + row.mnemonic.size());
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%.*s  (%u cycle%s)", static_cast<int>(row.syntax.size()), row.syntax.data(),
                                                      t.machine().config().cycles[static_cast<std::size_t>(row.opcode)],
                                                      t.machine().config().cycles[static_cast<std::size_t>(row.opcode)] == 1 ? "" : "s");
        ImGui::TableNextColumn();
        ImGui::Text("%s", with_commas(c.count(row.opcode)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextDisabled("%s", with_commas(total.count(row.opcode)).c_str());
      }
      ImGui::EndTable();
    }
  }
  end_pane();
}

// ---- DRAM heat maps ------------------------------------------------------------------------

void App::heat_texture(int slot, std::uint32_t id, const HeatLayout& layout, float x, float y, bool hovered,
                       const std::vector<std::uint32_t>& reads, bool l2_view) {
  const Trace& t = *model_.trace(slot);
  const auto& m = t.machine();
  const auto& s = m.array(id);
  HeatTexture& h = heat_textures_[{slot, id}];
  const bool fresh = !h.gl || h.trace_serial != t.serial() || !(h.layout == layout) || h.l2_view != l2_view;
  const int w = layout.width_px(), rows = layout.height_px();
  const auto row_len = static_cast<std::size_t>(w);
  auto upload_rows = [&](const std::vector<std::uint32_t>& rgba, int first, int last) {
    if (last < first) return;
    glBindTexture(GL_TEXTURE_2D, h.gl);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, first, w, last - first + 1, GL_RGBA, GL_UNSIGNED_BYTE,
                    rgba.data() + static_cast<std::size_t>(first) * row_len);
    heat_rows_this_frame_ += last - first + 1;
  };
  // Up to this many steps away, only the cells those steps touched are recomputed.
  constexpr std::uint64_t kIncrementalSteps = 4096;
  const std::uint64_t lo = std::min(h.step, t.step()), hi = std::max(h.step, t.step());
  if (fresh) {
    h.cells = bin_counts(layout, reads, s.tile_writes);
    heat_image(layout, h.cells, t.max_tile_reads(id), t.max_tile_writes(id), h.rgba);
    if (!h.gl) {
      GLuint tex = 0;
      glGenTextures(1, &tex);
      h.gl = tex;
    }
    glBindTexture(GL_TEXTURE_2D, h.gl);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    // Drawn 1:1 on whole pixels, so nearest sampling keeps every cell sharp.
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, w, rows, 0, GL_RGBA, GL_UNSIGNED_BYTE, h.rgba.data());
    heat_rows_this_frame_ += rows;
  } else if (hi - lo <= kIncrementalSteps) {
    // Stepping: the steps between the old and the new position touched a few tiles.
    int first = rows, last = -1;
    std::int64_t previous = -1;
    for (std::uint64_t i = lo; i < hi; ++i) {
      auto touch = t.touch_at(i);
      if (!touch || touch->array != id) continue;
      std::int64_t cell = layout.cell_of(touch->tile);
      if (cell == previous) continue;
      previous = cell;
      rebin_cell(layout, reads, s.tile_writes, cell, h.cells);
      paint_cell(layout, h.cells, cell, t.max_tile_reads(id), t.max_tile_writes(id), h.rgba);
      int y0 = static_cast<int>(cell / layout.cells_across) * layout.cell_px;
      first = std::min(first, y0);
      last = std::max(last, y0 + layout.cell_px - 1);
    }
    upload_rows(h.rgba, first, last);
  } else {
    // A seek or a fast run: rebin everything, upload the rows that differ.
    h.cells = bin_counts(layout, reads, s.tile_writes);
    heat_image(layout, h.cells, t.max_tile_reads(id), t.max_tile_writes(id), h.next);
    int first = rows, last = -1;
    for (int yy = 0; yy < rows; ++yy) {
      auto at = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(yy) * row_len);
      if (!std::equal(h.next.begin() + at, h.next.begin() + at + static_cast<std::ptrdiff_t>(row_len), h.rgba.begin() + at)) {
        first = std::min(first, yy);
        last = yy;
      }
    }
    std::swap(h.rgba, h.next);
    upload_rows(h.rgba, first, last);
  }
  h.trace_serial = t.serial();
  h.step = t.step();
  h.layout = layout;
  h.l2_view = l2_view;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float px = static_cast<float>(layout.cell_px);
  ImVec2 a(x, y), b(x + static_cast<float>(layout.width_px()), y + static_cast<float>(layout.height_px()));
  dl->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(h.gl)), a, b);
  const std::string prefix = mark_prefix(slot);
  mark(prefix + "heat_texture." + t.program().arrays[id].name, a.x, a.y, b.x, b.y);
  auto cell_rect = [&](std::int64_t cell, float grow) {
    float cx = a.x + static_cast<float>(cell % layout.cells_across) * px, cy = a.y + static_cast<float>(cell / layout.cells_across) * px;
    return std::pair(ImVec2(cx - grow, cy - grow), ImVec2(cx + px - 1 + grow, cy + px - 1 + grow));
  };
  // Cells are a few pixels wide: the boxes around the next and the touched cell stand out
  // past its edges.
  if (auto next = t.next_touch(); next && next->array == id) {
    auto [p0, p1] = cell_rect(layout.cell_of(next->tile), 2);
    dl->AddRect(p0, p1, rgb(theme::kNextMarker), 0, 0, 1.5f);
  }
  if (auto touched = t.touched(); touched && touched->array == id) {
    auto [p0, p1] = cell_rect(layout.cell_of(touched->tile), 3);
    dl->AddRect(p0, p1, rgb(theme::kTouchedCell), 0, 0, 2.0f);
    mark(prefix + "touched_cell", p0.x, p0.y, p1.x, p1.y);
  }
  if (!hovered) return;
  ImVec2 mp = ImGui::GetIO().MousePos;
  auto col = static_cast<std::int64_t>((mp.x - a.x) / px), row = static_cast<std::int64_t>((mp.y - a.y) / px);
  std::int64_t cell = row * layout.cells_across + col;
  if (col < 0 || col >= layout.cells_across || !layout.cell_used(cell)) return;
  const auto& d = t.program().arrays[id];
  auto span = layout.tiles_of(cell);
  auto range = [](std::int64_t lo, std::int64_t hi) {
    return hi - lo == 1 ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi - 1);
  };
  ImGui::BeginTooltip();
  std::int64_t covered = (span.r1 - span.r0) * (span.c1 - span.c0);
  if (layout.linear && d.rank == 1) ImGui::Text("%s[%s]", d.name.c_str(), range(span.r0, span.r1).c_str());
  else if (layout.linear) ImGui::Text("%s[%s][0]", d.name.c_str(), range(span.r0, span.r1).c_str());
  else ImGui::Text("%s[%s][%s]", d.name.c_str(), range(span.r0, span.r1).c_str(), range(span.c0, span.c1).c_str());
  auto ci = static_cast<std::size_t>(cell);
  if (covered == 1) {
    if (l2_view) ImGui::Text("read from DRAM %u times (the L2 served the rest), written %u times", h.cells.reads[ci], h.cells.writes[ci]);
    else ImGui::Text("read %u times, written %u times", h.cells.reads[ci], h.cells.writes[ci]);
    auto tile = static_cast<std::size_t>(layout.linear ? span.r0 : span.r0 * layout.grid_cols + span.c0);
    if (d.tile_rows == 1 && d.tile_cols == 1 && tile < s.values.size())
      ImGui::Text("value %s", sim::format_value(s.values[tile]).c_str());
  } else {
    ImGui::Text("%lld %s in this cell: the most read %u times, the most written %u times", static_cast<long long>(covered),
                d.tile_rows * d.tile_cols > 1 ? "tiles" : "elements", h.cells.reads[ci], h.cells.writes[ci]);
  }
  ImGui::EndTooltip();
}

namespace {

// The DRAM pane's legend: the fill is the read count, the orange band the write count, the box this step.
void dram_legend(ImDrawList* dl) {
  ImVec2 g = ImGui::GetCursorScreenPos();
  for (int i = 0; i < 40; ++i) dl->AddRectFilled(ImVec2(g.x + i, g.y + 4), ImVec2(g.x + i + 1, g.y + 14), heat(i / 39.0f));
  ImGui::Dummy(ImVec2(42, 16));
  ImGui::SameLine();
  ImGui::TextDisabled("reads");
  ImGui::SameLine();
  ImVec2 w = ImGui::GetCursorScreenPos();
  dl->AddRectFilled(ImVec2(w.x, w.y + 9), ImVec2(w.x + 16, w.y + 14), IM_COL32(240, 130, 60, 255));
  ImGui::Dummy(ImVec2(18, 16));
  ImGui::SameLine();
  ImGui::TextDisabled("writes");
  ImGui::SameLine();
  ImVec2 o = ImGui::GetCursorScreenPos();
  dl->AddRect(ImVec2(o.x, o.y + 3), ImVec2(o.x + 13, o.y + 15), rgb(theme::kTouchedCell), 0, 0, 2.5f);
  ImGui::Dummy(ImVec2(15, 16));
  ImGui::SameLine();
  ImGui::TextDisabled("this step");
}

}  // namespace

// Where one array's grid of cells lies on the screen, and what a cell stands for.
struct DramGrid {
  float x, y, cell;                     // top-left corner and cell size in pixels
  std::int64_t per_row, rows, tiles, gc;  // cells across and down, tiles in all, tile-grid columns
  const std::vector<std::uint32_t>* tile_reads;  // requested, or DRAM misses in the L2 view
};

void App::dram_pane(int slot, Rect r) {
  Trace& t = *model_.trace(slot);
  if (begin_pane(pane_title(slot, "DRAM").c_str(), slot, r, ImGuiWindowFlags_HorizontalScrollbar)) {
    dram_legend(ImGui::GetWindowDrawList());
    const sim::TraceL2* l2 = t.l2();
    if (l2) dram_l2_bar(slot, *l2);
    const bool l2_view = l2 && dram_l2_view_;
    for (std::uint32_t id = 0; id < t.program().arrays.size(); ++id) dram_array(slot, id, r, l2_view);
  }
  end_pane();
}

// What the fill counts (every LOAD, or only those the L2 could not serve), and how full the L2 is.
void App::dram_l2_bar(int slot, const sim::TraceL2& l2) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const std::string prefix = mark_prefix(slot);
  if (ImGui::RadioButton(("requested##dv" + std::to_string(slot)).c_str(), !dram_l2_view_)) dram_l2_view_ = false;
  ImGui::SameLine();
  if (ImGui::RadioButton(("DRAM misses, L2 hits##dv" + std::to_string(slot)).c_str(), dram_l2_view_)) dram_l2_view_ = true;
  ImVec2 a = ImGui::GetItemRectMin();
  mark(prefix + "l2_toggle", a.x, a.y, ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y);
  const auto cap = l2.config().capacity_bytes;
  const float held = static_cast<float>(l2.resident_bytes()) / static_cast<float>(cap);
  char overlay[128];
  std::snprintf(overlay, sizeof overlay, "L2 %s: %s held, %s dirty", human_bytes(cap).c_str(),
                human_bytes(l2.resident_bytes()).c_str(), human_bytes(l2.dirty_bytes()).c_str());
  ImGui::PushStyleColor(ImGuiCol_PlotHistogram, ImVec4(0.35f, 0.55f, 0.80f, 1));
  ImGui::ProgressBar(std::min(held, 1.0f), ImVec2(-1, 0), overlay);
  ImGui::PopStyleColor();
  ImVec2 b0 = ImGui::GetItemRectMin(), b1 = ImGui::GetItemRectMax();
  // The dirty part of what is held, as a band along the bar's bottom.
  const float dirty = static_cast<float>(l2.dirty_bytes()) / static_cast<float>(cap);
  dl->AddRectFilled(ImVec2(b0.x, b1.y - 4), ImVec2(b0.x + (b1.x - b0.x) * std::min(dirty, 1.0f), b1.y), IM_COL32(240, 130, 60, 255));
  mark(prefix + "l2_occupancy", b0.x, b0.y, b1.x, b1.y);
}

// One array of the DRAM pane: its name and traffic, then its tiles as a grid of cells (a texture
// for big arrays), with a tooltip for the cell under the mouse.
void App::dram_array(int slot, std::uint32_t id, Rect r, bool l2_view) {
  Trace& t = *model_.trace(slot);
  const auto& p = t.program();
  const auto& m = t.machine();
  const sim::TraceL2* l2 = t.l2();
  const auto& d = p.arrays[id];
  const auto& s = m.array(id);
  std::string head = d.name + (d.rank == 2 ? "[" + std::to_string(d.rows) + "][" + std::to_string(d.cols) + "]"
                                           : "[" + std::to_string(d.rows) + "]");
  head += m.is_input(id) ? (m.is_output(id) ? "  in/out" : "  in") : (m.is_output(id) ? "  out" : "");
  std::string sub = "r " + human_bytes(s.bytes_read) + "  w " + human_bytes(s.bytes_written);
  if (l2_view) {
    const sim::L2Counts& c = l2->array(id);
    sub = "DRAM r " + human_bytes(c.hbm_read) + "  w " + human_bytes(c.hbm_written) + "  (asked r " +
          human_bytes(s.bytes_read) + ")";
    if (c.hits + c.misses) sub += "  L2 hits " + std::to_string(100 * c.hits / (c.hits + c.misses)) + "%";
  }
  DramGrid g{};
  g.tile_reads = l2_view ? &l2->tile_hbm_reads(id) : &s.tile_reads;
  const bool tiled = d.tile_rows * d.tile_cols > 1;
  g.tiles = d.tile_count();
  g.gc = d.tile_grid_cols();
  const float full = std::max(40.0f, ImGui::GetWindowContentRegionMax().x - ImGui::GetWindowContentRegionMin().x - 2);
  // Big arrays: binned into a pane's worth of small cells, painted as one texture.
  const bool as_texture = g.tiles > kTextureHeatCells;
  HeatLayout layout;
  if (as_texture) {
    const float max_h = std::max(48.0f, (r.h - 70.0f) / static_cast<float>(p.arrays.size()) - 46.0f);
    layout = heat_layout(d, full - 16, max_h);  // room for the spacing after the group: no scrollbar
    g.cell = static_cast<float>(layout.cell_px);
    g.per_row = layout.cells_across;
    g.rows = layout.cells_down;
    std::int64_t per = layout.linear ? layout.per_cell : layout.block_rows * layout.block_cols;
    if (per > 1) sub += "  (" + std::to_string(per) + (tiled ? " tiles" : " elements") + " per cell, their max)";
  } else if (d.rank == 1) {
    g.cell = std::clamp(full / static_cast<float>(g.tiles), 9.0f, 44.0f);
    g.per_row = std::max<std::int64_t>(1, std::min<std::int64_t>(g.tiles, static_cast<std::int64_t>(full / g.cell)));
    g.rows = (g.tiles + g.per_row - 1) / g.per_row;
  } else {
    g.cell = std::clamp(full / static_cast<float>(g.gc), 8.0f, tiled ? 30.0f : 44.0f);
    g.per_row = g.gc;
    g.rows = d.tile_grid_rows();
  }
  // Small grids (tile grids, short vectors) flow side by side; big ones take the full width.
  float block = std::max({static_cast<float>(g.per_row) * g.cell, ImGui::CalcTextSize(head.c_str()).x,
                          ImGui::CalcTextSize(sub.c_str()).x}) + 14;
  if (id > 0) {
    ImGui::SameLine(0, 0);
    float x = ImGui::GetCursorPosX();
    if (x + block > ImGui::GetWindowContentRegionMax().x) ImGui::NewLine();
    else ImGui::SameLine(0, 0);
  }
  ImGui::BeginGroup();
  ImGui::Spacing();
  ImGui::TextColored(ImVec4(0.85f, 0.88f, 0.95f, 1), "%s", head.c_str());
  if (ImGui::IsItemHovered() && tiled)
    ImGui::SetTooltip("%s: %lld x %lld tiles of %lld x %lld elements", d.name.c_str(), static_cast<long long>(d.tile_grid_rows()),
                      static_cast<long long>(g.gc), static_cast<long long>(d.tile_rows), static_cast<long long>(d.tile_cols));
  ImGui::TextDisabled("%s", sub.c_str());
  ImVec2 origin = ImGui::GetCursorScreenPos();
  g.x = origin.x;
  g.y = origin.y;
  ImVec2 grid(static_cast<float>(g.per_row) * g.cell, static_cast<float>(g.rows) * g.cell);
  ImGui::InvisibleButton(("##grid" + std::to_string(id)).c_str(), ImVec2(std::max(grid.x, 1.0f), std::max(grid.y, 1.0f)));
  const bool hovered = ImGui::IsItemHovered();
  if (as_texture) {
    heat_texture(slot, id, layout, std::floor(origin.x), std::floor(origin.y), hovered, *g.tile_reads, l2_view);
  } else {
    dram_cells(slot, id, g, l2_view);
    if (hovered) dram_tooltip(slot, id, g);
  }
  ImGui::EndGroup();
  ImGui::SameLine(0, 14);
  ImGui::Dummy(ImVec2(0, 0));
}

// The cells of one array's grid that lie inside the pane's clip rectangle.
void App::dram_cells(int slot, std::uint32_t id, const DramGrid& g, bool l2_view) {
  Trace& t = *model_.trace(slot);
  const auto& m = t.machine();
  const auto& s = m.array(id);
  const sim::TraceL2* l2 = t.l2();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImFont* mono = static_cast<ImFont*>(mono_font_);
  const std::string prefix = mark_prefix(slot);
  const auto touched = t.touched();
  const auto next = t.next_touch();
  const float scale_r = static_cast<float>(std::max<std::uint32_t>(1, t.max_tile_reads(id)));
  const float scale_w = static_cast<float>(std::max<std::uint32_t>(1, t.max_tile_writes(id)));
  const float cell = g.cell;
  ImVec2 cmin = dl->GetClipRectMin(), cmax = dl->GetClipRectMax();
  auto r0 = std::max<std::int64_t>(0, static_cast<std::int64_t>((cmin.y - g.y) / cell));
  auto r1 = std::min<std::int64_t>(g.rows, static_cast<std::int64_t>((cmax.y - g.y) / cell) + 1);
  auto c0 = std::max<std::int64_t>(0, static_cast<std::int64_t>((cmin.x - g.x) / cell));
  auto c1 = std::min<std::int64_t>(g.per_row, static_cast<std::int64_t>((cmax.x - g.x) / cell) + 1);
  const float gap = cell >= 14 ? 2.0f : 1.0f;
  for (std::int64_t gr = r0; gr < r1; ++gr) {
    for (std::int64_t gcol = c0; gcol < c1; ++gcol) {
      std::int64_t tile = gr * g.per_row + gcol;
      if (tile >= g.tiles) break;
      auto ti = static_cast<std::size_t>(tile);
      ImVec2 a(g.x + static_cast<float>(gcol) * cell, g.y + static_cast<float>(gr) * cell);
      ImVec2 b(a.x + cell - gap, a.y + cell - gap);
      std::uint32_t reads = (*g.tile_reads)[ti], writes = s.tile_writes[ti];
      dl->AddRectFilled(a, b, reads ? heat(0.15f + 0.85f * static_cast<float>(reads) / scale_r) : kGridEmpty, cell >= 14 ? 3.0f : 0.0f);
      if (writes) {
        float band = std::max(2.0f, (cell - gap) * 0.28f);
        int alpha = static_cast<int>(120 + 135 * std::min(1.0f, static_cast<float>(writes) / scale_w));
        dl->AddRectFilled(ImVec2(a.x, b.y - band), b, IM_COL32(240, 130, 60, alpha));
      }
      if (cell >= 26 && (reads || writes)) {
        std::string label = std::to_string(reads);
        if (writes) label += "/" + std::to_string(writes);
        ImVec2 sz = mono->CalcTextSizeA(mono->FontSize * 0.85f, 1e9f, 0, label.c_str());
        if (sz.x < cell - 4)
          dl->AddText(mono, mono->FontSize * 0.85f, ImVec2(a.x + (cell - gap - sz.x) * 0.5f, a.y + 3),
                      reads > scale_r * 0.6f ? IM_COL32(20, 24, 30, 255) : IM_COL32(235, 240, 245, 255), label.c_str());
      }
      // A tile the L2 holds now: a blue corner.
      if (l2_view && cell >= 8 && l2->tile_resident(m, id, tile) > 0) {
        float k = std::max(3.0f, (cell - gap) * 0.3f);
        dl->AddTriangleFilled(ImVec2(b.x - k, a.y), ImVec2(b.x, a.y), ImVec2(b.x, a.y + k), IM_COL32(90, 160, 240, 255));
      }
      if (next && next->array == id && next->tile == tile)
        dl->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(b.x - 1, b.y - 1), rgb(theme::kNextMarker), 0, 0, 1.5f);
      if (touched && touched->array == id && touched->tile == tile) {
        dl->AddRect(a, b, rgb(theme::kTouchedCell), cell >= 14 ? 3.0f : 0.0f, 0, cell >= 14 ? 3.0f : 2.0f);
        mark(prefix + "touched_cell", a.x, a.y, b.x, b.y);
      }
    }
  }
}

// The tooltip of the cell under the mouse: its reads and writes, the L2's share, its value or expression.
void App::dram_tooltip(int slot, std::uint32_t id, const DramGrid& g) {
  Trace& t = *model_.trace(slot);
  const auto& m = t.machine();
  const auto& d = t.program().arrays[id];
  const auto& s = m.array(id);
  const sim::TraceL2* l2 = t.l2();
  ImVec2 mp = ImGui::GetIO().MousePos;
  auto gcol = static_cast<std::int64_t>((mp.x - g.x) / g.cell), gr = static_cast<std::int64_t>((mp.y - g.y) / g.cell);
  std::int64_t tile = gr * g.per_row + gcol;
  if (gcol < 0 || gcol >= g.per_row || tile < 0 || tile >= g.tiles) return;
  auto ti = static_cast<std::size_t>(tile);
  std::int64_t tr = tile / g.gc, tc = tile % g.gc;
  ImGui::BeginTooltip();
  if (d.rank == 2) ImGui::Text("%s[%lld][%lld]", d.name.c_str(), static_cast<long long>(tr), static_cast<long long>(tc));
  else ImGui::Text("%s[%lld]", d.name.c_str(), static_cast<long long>(tr));
  ImGui::Text("read %u times, written %u times", s.tile_reads[ti], s.tile_writes[ti]);
  if (l2) {
    ImGui::Text("from DRAM %u times, served by the L2 %u times", l2->tile_hbm_reads(id)[ti], l2->tile_l2_hits(id)[ti]);
    ImGui::Text("in the L2 now: %.0f%% of its sectors", 100.0 * l2->tile_resident(m, id, tile));
  }
  if (d.tile_rows == 1 && d.tile_cols == 1 && ti < s.values.size())
    ImGui::Text("value %s", sim::format_value(s.values[ti]).c_str());
  if (m.symbolic()) ImGui::Text("holds %s", m.value_symbol(id, tile).c_str());
  ImGui::EndTooltip();
}

// ---- bytes over time ----------------------------------------------------------------------

void App::plot_pane(Rect r, bool with_table) {
  if (begin_pane("DRAM bytes over time##plot", -1, r, ImGuiWindowFlags_NoScrollbar)) {
    ImVec2 avail = ImGui::GetContentRegionAvail();
    if (with_table) {
      ImGui::BeginChild("##cmp", ImVec2(430, avail.y));
      compare_table();
      ImGui::EndChild();
      ImGui::SameLine();
      avail.x -= 438;
    }
    bytes_plot(avail.x, avail.y);
  }
  end_pane();
}

// ---- the Units timeline ---------------------------------------------------------------------

void App::units_pane(int slot, Rect r) {
  const Trace* t = model_.trace(slot);
  std::string title = "Units";
  if (const sim::TimingResult* tr = t->timing())
    title += ": " + with_commas(static_cast<std::uint64_t>(tr->cycles + 0.5)) + " cycles, bound " + tr->bound;
  if (begin_pane(pane_title(slot, title.c_str()).c_str(), slot, r, ImGuiWindowFlags_NoScrollbar)) {
    if (!t->timing()) {
      ImGui::PushStyleColor(ImGuiCol_Text, rgbv(theme::kBreakpoint));
      ImGui::TextWrapped("%s", t->timing_error().c_str());
      ImGui::PopStyleColor();
    } else {
      float& zoom = units_zoom_[slot];
      ImGui::SetNextItemWidth(180);
      ImGui::SliderFloat("zoom##units", &zoom, 1.0f, 4096.0f, "%.0fx", ImGuiSliderFlags_Logarithmic);
      ImGui::SameLine();
      ImGui::TextDisabled("bars: issue to end of work; white: this step; red: critical path");
      ImVec2 avail = ImGui::GetContentRegionAvail();
      units_timeline(slot, avail.x, avail.y);
    }
  }
  end_pane();
}

void App::units_timeline(int slot, float width, float height) {
  const Trace* t = model_.trace(slot);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(width, height));
  const float label_w = 220, axis_h = 18;
  const float x0 = o.x + label_w, x1 = o.x + width - 8;
  if (x1 - x0 < 40 || height < axis_h + 10) return;
  const UnitsView v = t->units_view(units_zoom_[slot], x1 - x0);
  if (v.lanes.empty()) return;
  const float lane_h = std::min(24.0f, (height - axis_h) / static_cast<float>(v.lanes.size()));
  auto px = [&](double c) { return x0 + (x1 - x0) * static_cast<float>((c - v.c0) / (v.c1 - v.c0)); };
  const theme::Rgb unit_colors[isa::kUnitCount] = {theme::kUnitMemory, theme::kUnitTensor, theme::kUnitSpecial,
                                                   theme::kUnitVector};
  const std::string who = mark_prefix(slot) + "units";
  dl->AddRectFilled(ImVec2(x0, o.y), ImVec2(x1, o.y + lane_h * static_cast<float>(v.lanes.size())), IM_COL32(20, 23, 29, 255));
  mark(who + ".lanes", x0, o.y, x1, o.y + lane_h * static_cast<float>(v.lanes.size()));
  const sim::TimingResult* tr = t->timing();
  for (std::size_t l = 0; l < v.lanes.size(); ++l) {
    const UnitsLaneView& lane = v.lanes[l];
    std::string mark_name = lane.label;  // marks are single words: "stream_a"
    std::replace(mark_name.begin(), mark_name.end(), ' ', '_');
    const float y = o.y + lane_h * static_cast<float>(l);
    const float row_h = (lane_h - 4) / static_cast<float>(lane.rows);
    dl->AddLine(ImVec2(o.x, y + lane_h), ImVec2(x1, y + lane_h), IM_COL32(48, 54, 64, 255));
    // The label, with the busy fraction as a small bar under it.
    const ImU32 label_color = lane.unit ? rgb(unit_colors[lane.unit_index]) : kText;
    dl->AddText(ImVec2(o.x + 4, y + (lane_h - ImGui::GetFontSize()) * 0.5f), label_color, lane.label.c_str());
    const float busy_x = o.x + label_w - 62;
    dl->AddText(ImVec2(busy_x, y + (lane_h - ImGui::GetFontSize()) * 0.5f), kTextDim, lane.busy.c_str());
    dl->AddRectFilled(ImVec2(busy_x, y + lane_h - 3),
                      ImVec2(busy_x + 56 * static_cast<float>(std::min(1.0, lane.busy_fraction)), y + lane_h - 1), label_color);
    if (lane.unit && lane.busy_fraction > 0) mark(who + ".busy." + mark_name, busy_x, y, busy_x + 56, y + lane_h);
    dl->PushClipRect(ImVec2(x0, y), ImVec2(x1, y + lane_h), true);
    for (const sim::TimelineBar& b : lane.bars) {
      const theme::Rgb c = unit_colors[static_cast<std::size_t>(tr->steps[b.step].unit)];
      const float bx0 = px(b.x0), bx1 = std::max(px(b.x1), bx0 + 1.0f);
      const float by0 = y + 2 + row_h * static_cast<float>(b.row), by1 = by0 + std::max(1.0f, row_h - 1);
      dl->AddRectFilled(ImVec2(bx0, by0), ImVec2(bx1, by1), rgb(c));
      if (b.critical) dl->AddRectFilled(ImVec2(bx0, by0), ImVec2(bx1, by0 + std::min(3.0f, row_h * 0.4f + 1)), rgb(theme::kCriticalPath));
    }
    dl->PopClipRect();
    if (lane.current) {
      // A 2-pixel frame just outside the bar, of filled rectangles (no anti-aliasing).
      const sim::TimelineBar& b = *lane.current;
      const float bx0 = std::floor(px(b.x0)) - 2, bx1 = std::max(std::ceil(px(b.x1)), bx0 + 5.0f) + 2;
      const float by0 = std::floor(y + 2 + row_h * static_cast<float>(b.row)) - 2,
                  by1 = std::ceil(by0 + 2 + std::max(3.0f, row_h - 1)) + 2;
      dl->PushClipRect(ImVec2(x0 - 3, y - 2), ImVec2(x1 + 3, y + lane_h + 2), true);
      const ImU32 c = rgb(theme::kUnitsCurrent);
      dl->AddRectFilled(ImVec2(bx0, by0), ImVec2(bx1, by0 + 2), c);
      dl->AddRectFilled(ImVec2(bx0, by1 - 2), ImVec2(bx1, by1), c);
      dl->AddRectFilled(ImVec2(bx0, by0), ImVec2(bx0 + 2, by1), c);
      dl->AddRectFilled(ImVec2(bx1 - 2, by0), ImVec2(bx1, by1), c);
      mark(who + ".current." + mark_name, bx0, by0, bx1, by1);
      dl->PopClipRect();
    }
  }
  const float lanes_bottom = o.y + lane_h * static_cast<float>(v.lanes.size());
  if (v.now && *v.now >= v.c0 && *v.now <= v.c1) {
    const float x = px(*v.now);
    dl->AddLine(ImVec2(x, o.y), ImVec2(x, lanes_bottom), rgb(theme::kUnitsCurrent, 110));
  }
  // The cycle axis: the window's ends.
  char buf[64];
  std::snprintf(buf, sizeof buf, "cycle %s", with_commas(static_cast<std::uint64_t>(v.c0)).c_str());
  dl->AddText(ImVec2(x0, lanes_bottom + 2), kTextDim, buf);
  std::snprintf(buf, sizeof buf, "cycle %s", with_commas(static_cast<std::uint64_t>(v.c1 + 0.5)).c_str());
  dl->AddText(ImVec2(x1 - ImGui::CalcTextSize(buf).x, lanes_bottom + 2), kTextDim, buf);
  // The wheel zooms the window (around the current step), as the slider does.
  if (ImGui::IsItemHovered() && ImGui::GetIO().MouseWheel != 0)
    units_zoom_[slot] = std::clamp(units_zoom_[slot] * std::pow(1.25f, ImGui::GetIO().MouseWheel), 1.0f, 4096.0f);
}

void App::compare_table() {
  const Trace* a = model_.trace(0);
  const Trace* b = model_.trace(1);
  if (!ImGui::BeginTable("##compare", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH)) return;
  ImGui::TableSetupColumn("now (whole trace)");
  ImGui::TableSetupColumn("A", ImGuiTableColumnFlags_WidthFixed, 140);
  ImGui::TableSetupColumn("B", ImGuiTableColumnFlags_WidthFixed, 140);
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  ImGui::TableNextColumn();
  ImGui::TextDisabled("now (whole trace)");
  ImGui::TableNextColumn();
  ImGui::TextColored(rgbv(theme::kTraceA), "A");
  ImGui::TableNextColumn();
  ImGui::TextColored(rgbv(theme::kTraceB), "B");
  auto row = [&](const char* name, auto get, bool bytes) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(name);
    for (const Trace* t : {a, b}) {
      ImGui::TableNextColumn();
      std::uint64_t now = get(t->machine().counters()), whole = get(t->final_counters());
      std::string s = bytes ? human_bytes(now) + " (" + human_bytes(whole) + ")" : with_commas(now) + " (" + with_commas(whole) + ")";
      ImGui::TextUnformatted(s.c_str());
    }
  };
  row("step", [](const sim::Counters& c) { return c.instructions; }, false);
  row("cycles", [](const sim::Counters& c) { return c.cycles; }, false);
  row("LOADs", [](const sim::Counters& c) { return c.of_class(isa::OpClass::Load); }, false);
  row("STOREs", [](const sim::Counters& c) { return c.of_class(isa::OpClass::Store); }, false);
  row("MACs", [](const sim::Counters& c) { return c.of_class(isa::OpClass::Mac); }, false);
  row("other ops", [](const sim::Counters& c) { return c.of_class(isa::OpClass::Alu); }, false);
  row("DRAM bytes", [](const sim::Counters& c) { return c.bytes_read + c.bytes_written; }, true);
  ImGui::EndTable();
}

void App::bytes_plot(float width, float height) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(width, height));
  const float left = 74, bottom = 22, top = 22, right = 12;
  ImVec2 a(o.x + left, o.y + top), b(o.x + width - right, o.y + height - bottom);
  if (b.x - a.x < 40 || b.y - a.y < 20) return;
  std::uint64_t xmax = std::max<std::uint64_t>(1, model_.max_steps()), ymax = 1;
  for (int s = 0; s < 2; ++s)
    if (const Trace* t = model_.trace(s)) ymax = std::max(ymax, t->bytes_series().total());
  dl->AddRectFilled(a, b, IM_COL32(20, 23, 29, 255));
  for (int i = 0; i <= 4; ++i) {
    float y = b.y - (b.y - a.y) * static_cast<float>(i) / 4.0f;
    dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), IM_COL32(48, 54, 64, 255));
    std::string label = human_bytes(static_cast<std::uint64_t>(static_cast<double>(ymax) * i / 4.0));
    ImVec2 sz = ImGui::CalcTextSize(label.c_str());
    dl->AddText(ImVec2(a.x - sz.x - 6, y - sz.y * 0.5f), kTextDim, label.c_str());
  }
  dl->AddText(ImVec2(a.x, b.y + 3), kTextDim, "step 0");
  std::string end = "step " + with_commas(xmax);
  dl->AddText(ImVec2(b.x - ImGui::CalcTextSize(end.c_str()).x, b.y + 3), kTextDim, end.c_str());
  auto px = [&](std::uint64_t step) { return a.x + (b.x - a.x) * static_cast<float>(static_cast<double>(step) / static_cast<double>(xmax)); };
  auto py = [&](std::uint64_t bytes) { return b.y - (b.y - a.y) * static_cast<float>(static_cast<double>(bytes) / static_cast<double>(ymax)); };
  float legend_x = a.x + 8;
  for (int s = 0; s < 2; ++s) {
    const Trace* t = model_.trace(s);
    if (!t) continue;
    const auto& series = t->bytes_series();
    // One point per two pixels: the cost is the plot's width, not the trace's length.
    std::vector<ImVec2> done, ahead;
    const int columns = std::max(2, static_cast<int>((b.x - a.x) / 2));
    for (int i = 0; i <= columns; ++i) {
      auto step = static_cast<std::uint64_t>(static_cast<double>(xmax) * i / columns);
      if (step > t->size()) step = t->size();
      ImVec2 pt(px(step), py(series.at(step)));
      (step <= t->step() ? done : ahead).push_back(pt);
      if (step == t->size()) break;
    }
    if (!done.empty() && !ahead.empty()) ahead.insert(ahead.begin(), done.back());
    theme::Rgb c = trace_color(s);
    if (ahead.size() > 1) dl->AddPolyline(ahead.data(), static_cast<int>(ahead.size()), rgb(c, 90), 0, 1.5f);
    if (done.size() > 1) dl->AddPolyline(done.data(), static_cast<int>(done.size()), rgb(c), 0, 2.5f);
    ImVec2 dot(px(t->step()), py(t->dram_bytes()));
    dl->AddCircleFilled(dot, 4.5f, rgb(c));
    mark("plot.dot" + std::to_string(s), dot.x - 2, dot.y - 2, dot.x + 2, dot.y + 2);
    std::string legend = (model_.compare() ? std::string(s == 0 ? "A " : "B ") : std::string()) + t->title() + ": " +
                         human_bytes(t->dram_bytes()) + " of " + human_bytes(series.total());
    dl->AddRectFilled(ImVec2(legend_x, o.y + 6), ImVec2(legend_x + 10, o.y + 16), rgb(c));
    dl->AddText(ImVec2(legend_x + 14, o.y + 2), kText, legend.c_str());
    legend_x += 14 + ImGui::CalcTextSize(legend.c_str()).x + 20;
  }
  float cx = px(model_.step_index());
  dl->AddLine(ImVec2(cx, a.y), ImVec2(cx, b.y), IM_COL32(255, 255, 255, 110), 1.0f);
}

// ---- opening traces -----------------------------------------------------------------------

void App::open_entry(int slot, const CatalogEntry& e, const std::map<std::string, std::int64_t>& params) {
  LoadRequest req;
  try {
    req = e.request(params);
  } catch (const std::exception& ex) {
    model_.set_error(e.name + ": " + ex.what());
    return;
  }
  if (model_.open(slot, req) && opts_.on_open) opts_.on_open(*model_.trace(slot));
}

void App::open_path(int slot, const std::string& path, const std::map<std::string, std::int64_t>& params) {
  LoadRequest req;
  req.path = path;
  req.params = params;
  if (model_.open(slot, req) && opts_.on_open) opts_.on_open(*model_.trace(slot));
}

void App::open_dialog() {
  if (open_requested_) {
    ImGui::OpenPopup("Open trace");
    open_requested_ = false;
  }
  ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowPos(ImVec2(display.x * 0.5f, display.y * 0.5f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(720, 520), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Open trace", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  ImGui::TextDisabled("Open into");
  ImGui::SameLine();
  ImGui::RadioButton("A (main trace)", &open_slot_, 0);
  ImGui::SameLine();
  ImGui::RadioButton("B (compare side by side)", &open_slot_, 1);
  ImGui::Separator();
  ImGui::TextUnformatted("Lesson traces and generated schedules");
  ImGui::PushStyleColor(ImGuiCol_ChildBg, kPaneBg);  // a well inside the dialog
  ImGui::BeginChild("##catalog", ImVec2(0, 230), true);
  ImGui::PopStyleColor();
  std::string group;
  for (std::size_t i = 0; i < catalog_.size(); ++i) {
    if (catalog_[i].group != group) {
      group = catalog_[i].group;
      ImGui::TextDisabled("%s", group.c_str());
    }
    std::string label = catalog_[i].name + "##" + std::to_string(i);
    if (ImGui::Selectable(label.c_str(), selected_entry_ == static_cast<int>(i), ImGuiSelectableFlags_DontClosePopups)) {
      selected_entry_ = static_cast<int>(i);
      dialog_params_.clear();
      for (const auto& p : catalog_[i].params) dialog_params_[p.name] = p.value;
      dialog_path_.clear();
    }
    ImGui::SameLine(240);
    ImGui::TextDisabled("%s", catalog_[i].description.c_str());
  }
  ImGui::EndChild();
  ImGui::TextUnformatted("...or an assembly file");
  ImGui::SetNextItemWidth(-1);
  if (ImGui::InputTextWithHint("##path", "path/to/trace.fsa", &dialog_path_)) {
    selected_entry_ = -1;
    dialog_params_.clear();
    std::error_code ec;
    if (std::filesystem::is_regular_file(dialog_path_, ec)) {
      std::ifstream in(dialog_path_);
      std::vector<std::string> lines;
      for (std::string l; lines.size() < 500 && std::getline(in, l);) lines.push_back(l);
      for (const auto& p : scan_params(lines)) dialog_params_[p.name] = p.value;
    }
  }
  if (!dialog_params_.empty()) {
    ImGui::TextUnformatted("Parameters");
    for (auto& [name, value] : dialog_params_) {
      ImGui::SetNextItemWidth(160);
      ImGui::InputScalar(name.c_str(), ImGuiDataType_S64, &value);
    }
  }
  ImGui::Spacing();
  bool can_open = selected_entry_ >= 0 || !dialog_path_.empty();
  if (!can_open) ImGui::BeginDisabled();
  if (ImGui::Button("Open", ImVec2(120, 0))) {
    if (selected_entry_ >= 0) open_entry(open_slot_, catalog_[static_cast<std::size_t>(selected_entry_)], dialog_params_);
    else open_path(open_slot_, dialog_path_, dialog_params_);
    ImGui::CloseCurrentPopup();
  }
  if (!can_open) ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(120, 0))) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

void App::export_dialog() {
  if (export_requested_) {
    ImGui::OpenPopup("Export trace");
    export_requested_ = false;
  }
  ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowPos(ImVec2(display.x * 0.5f, display.y * 0.5f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(560, 0), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Export trace", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  const bool csv = export_format_ == Model::ExportFormat::StepsCsv;
  ImGui::TextWrapped("%s", csv ? "One row per step: step, line, instruction, cycle, DRAM bytes so far, registers written."
                               : "Chrome trace-event JSON for ui.perfetto.dev: a track per unit, DRAM bytes as a counter "
                                 "(1 cycle = 1 us).");
  if (model_.compare()) {
    ImGui::RadioButton("trace A", &export_slot_, 0);
    ImGui::SameLine();
    ImGui::RadioButton("trace B", &export_slot_, 1);
  }
  ImGui::SetNextItemWidth(-1);
  ImGui::InputText("##export_path", &export_path_);
  const bool can_write = !export_path_.empty() && model_.trace(export_slot_);
  if (!can_write) ImGui::BeginDisabled();
  if (ImGui::Button("Write", ImVec2(120, 0))) {
    model_.export_trace(export_slot_, export_path_, export_format_);  // a failure shows in the error banner
    ImGui::CloseCurrentPopup();
  }
  if (!can_write) ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(120, 0))) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

}  // namespace flashsim::viewer

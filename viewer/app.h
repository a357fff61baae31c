// The ImGui + GLFW drawing layer over viewer::Model: one window, fixed panes, screenshots.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "viewer/catalog.h"
#include "viewer/heatmap.h"
#include "viewer/model.h"

struct GLFWwindow;

namespace flashsim::viewer {

// No window could be opened (no display, or no OpenGL 3 context).
class NoDisplay : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The panes of the fixed layout, as bits: the frame-time benchmark hides some to see what each costs.
enum Pane : unsigned {
  kPaneSource = 1u << 0,     // source (and, in compare mode, its Trace tab)
  kPaneTrace = 1u << 1,      // the expanded trace (single-trace layout)
  kPaneRegisters = 1u << 2,
  kPaneCounters = 1u << 3,
  kPaneDram = 1u << 4,
  kPanePlot = 1u << 5,       // DRAM bytes over time (and the compare table)
  kPaneUnits = 1u << 6,      // the Units timeline (traces with .units)
  kPaneAll = (1u << 7) - 1,
};

// What the last frame cost: wall and CPU time of building the UI (this thread) and of
// rendering it (the whole process: a software rasterizer renders on its own threads), and the
// size of the draw lists handed to OpenGL.
struct FrameCost {
  double ui_ms = 0, ui_cpu_ms = 0;
  double render_ms = 0, render_cpu_ms = 0;
  int vertices = 0, indices = 0, draw_calls = 0;
  int heat_rows_uploaded = 0;  // texel rows of heat-map textures sent to OpenGL by this frame
};

struct AppOptions {
  int width = 1280, height = 800;
  bool vsync = true;
  std::string lessons_dir;   // where the Open dialog finds the lesson traces
  // Called with every error the app raises (assembler errors from the Open dialog); the
  // executable prints them on stderr.
  std::function<void(const std::string&)> report_error;
  // Applies a lesson's budgets to a freshly opened trace (set by main when --lesson is given).
  std::function<void(Trace&)> on_open;
};

// A screen rectangle of something the frame highlighted, for the screenshot test.
struct Mark {
  std::string name;  // "t0.current_line", "t0.changed.R2", "t0.touched_cell", "error_banner", ...
  float x0, y0, x1, y1;
};

struct DramGrid;  // where one array's cells lie in the DRAM pane (app.cpp)

class App {
 public:
  // Opens the window; throws NoDisplay when none can be made.
  App(Model& model, AppOptions options);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  bool should_close() const;
  // One frame: input, the animated run, the UI and its rendering (not yet presented).
  // `dt` < 0 uses the wall clock.
  void frame(double dt = -1);
  // A frame with no windows at all, cleared and rendered like frame(): the floor the display's
  // OpenGL implementation imposes before the viewer draws anything.
  void empty_frame();
  void present();
  // Writes the frame just rendered as a PNG. Returns "" or an error message.
  std::string save_screenshot(const std::string& path) const;

  const std::vector<Mark>& marks() const { return marks_; }
  std::string layout_dump() const;  // one "rect NAME x0 y0 x1 y1" line per mark
  std::string renderer() const;  // the OpenGL renderer and version, for reports
  double last_ui_ms() const { return cost_.ui_ms; }
  double last_render_ms() const { return cost_.render_ms; }
  const FrameCost& last_cost() const { return cost_; }
  // Panes not in the mask are not built at all (their area stays empty).
  void set_visible_panes(unsigned mask) { visible_panes_ = mask; }

 private:
  struct Rect {
    float x, y, w, h;
  };
  void setup_style();
  void draw_ui();
  void handle_keys();
  float draw_menu_bar();
  void draw_toolbar(Rect r);
  void draw_error_banner(Rect r);
  void draw_welcome(Rect r);
  void layout_single(Rect r);
  void layout_compare(Rect r);
  void source_pane(int slot, Rect r, bool with_trace_tab);
  void source_lines(int slot);
  void trace_lines(int slot);
  void registers_pane(int slot, Rect r);
  void counters_pane(int slot, Rect r);
  void dram_pane(int slot, Rect r);
  void dram_l2_bar(int slot, const sim::TraceL2& l2);
  void dram_array(int slot, std::uint32_t id, Rect r, bool l2_view);
  void dram_cells(int slot, std::uint32_t id, const DramGrid& g, bool l2_view);
  void dram_tooltip(int slot, std::uint32_t id, const DramGrid& g);
  void heat_texture(int slot, std::uint32_t array, const HeatLayout& layout, float x, float y, bool hovered,
                    const std::vector<std::uint32_t>& reads, bool l2_view);
  void plot_pane(Rect r, bool with_table);
  void units_pane(int slot, Rect r);
  void units_timeline(int slot, float width, float height);
  void bytes_plot(float width, float height);
  void compare_table();
  void open_dialog();
  void export_dialog();
  bool begin_pane(const char* title, int slot, Rect r, int extra_flags = 0);
  void end_pane();
  void mark(const std::string& name, float x0, float y0, float x1, float y1);
  std::string pane_title(int slot, const char* pane) const;
  void open_entry(int slot, const CatalogEntry& e, const std::map<std::string, std::int64_t>& params);
  void open_path(int slot, const std::string& path, const std::map<std::string, std::int64_t>& params);

  Model& model_;
  AppOptions opts_;
  GLFWwindow* window_ = nullptr;
  std::vector<Mark> marks_;
  double last_time_ = 0;
  int frame_count_ = 0;
  FrameCost cost_;
  // Heat-map textures of big arrays, per (slot, array id): rebuilt when the trace, its step or
  // the layout changes, and only the texel rows that differ are uploaded again.
  struct HeatTexture {
    unsigned gl = 0;  // GLuint
    std::uint64_t trace_serial = 0, step = ~0ull;
    HeatLayout layout;
    bool l2_view = false;  // painted from the L2's DRAM reads rather than the requested ones
    HeatCells cells;
    std::vector<std::uint32_t> rgba, next;
  };
  std::map<std::pair<int, std::uint32_t>, HeatTexture> heat_textures_;
  int heat_rows_this_frame_ = 0;
  unsigned visible_panes_ = kPaneAll;
  void* mono_font_ = nullptr;  // ImFont*
  bool show_symbolic_ = true;
  bool dram_l2_view_ = true;  // traces with an L2: the DRAM pane shows DRAM misses and L2 hits
  bool show_keys_ = false;
  float units_zoom_[2] = {1, 1};  // the Units panel: 1 shows the whole run
  struct SourceColumns {
    std::uint64_t serial = 0;  // Trace::serial() they were measured for
    bool loops = false;
    float number_w = 0, hits_w = 0;
  };
  SourceColumns source_columns_[2];
  std::uint64_t scrolled_to_[2][2] = {{~0ull, ~0ull}, {~0ull, ~0ull}};  // [slot][source, trace]

  // Open dialog state.
  bool open_requested_ = false;
  int open_slot_ = 0;
  std::vector<CatalogEntry> catalog_;
  int selected_entry_ = -1;
  std::map<std::string, std::int64_t> dialog_params_;
  std::string dialog_path_;
  std::string last_reported_error_;

  // Export dialog state (File > Export ...).
  bool export_requested_ = false;
  Model::ExportFormat export_format_ = Model::ExportFormat::StepsCsv;
  int export_slot_ = 0;
  std::string export_path_;
};

}  // namespace flashsim::viewer

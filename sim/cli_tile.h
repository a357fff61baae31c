// The tile machine's subcommands: `gen attention|tiled-matmul|tiled-softmax` (joins an existing
// `gen` command when one is registered first), `traffic` and `sweep`.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace flashsim::cli {

void register_tile_commands(CLI::App& app, int& exit_code);

// One line of a plot: (x, y) points; dashed lines are reference curves. Markers-only series are
// measurements: squares or diamonds in the colour of series `color` (default: their own).
struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
  bool markers_only = false;
  int color = -1;
  char marker = 's';  // 's' square, 'd' diamond (markers-only series)
};

// A log-log line chart as a standalone SVG document (no plotting library).
void write_svg_chart(std::ostream& os, const std::string& title, const std::string& x_label,
                     const std::string& y_label, const std::vector<Series>& series);

}  // namespace flashsim::cli

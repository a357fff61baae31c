#include "viewer/heatmap.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace flashsim::viewer {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::uint32_t pack(int r, int g, int b, int a = 255) {
  return static_cast<std::uint32_t>(r) | (static_cast<std::uint32_t>(g) << 8) | (static_cast<std::uint32_t>(b) << 16) |
         (static_cast<std::uint32_t>(a) << 24);
}

// `top` drawn with opacity alpha (0..255) over `base`, both opaque.
std::uint32_t over(std::uint32_t base, std::uint32_t top, int alpha) {
  auto ch = [&](int shift) {
    int b = static_cast<int>((base >> shift) & 0xff), t = static_cast<int>((top >> shift) & 0xff);
    return (t * alpha + b * (255 - alpha) + 127) / 255;
  };
  return pack(ch(0), ch(8), ch(16));
}

}  // namespace

std::int64_t HeatLayout::cell_of(std::int64_t tile) const {
  if (linear) return tile / per_cell;
  std::int64_t r = tile / grid_cols, c = tile % grid_cols;
  return (r / block_rows) * cells_across + c / block_cols;
}

bool HeatLayout::cell_used(std::int64_t cell) const {
  if (cell < 0 || cell >= cell_count()) return false;
  return !linear || cell * per_cell < tiles;
}

HeatLayout::Span HeatLayout::tiles_of(std::int64_t cell) const {
  if (linear) return {cell * per_cell, std::min(tiles, (cell + 1) * per_cell), 0, 1};
  std::int64_t r = cell / cells_across, c = cell % cells_across;
  return {r * block_rows, std::min(grid_rows, (r + 1) * block_rows), c * block_cols, std::min(grid_cols, (c + 1) * block_cols)};
}

HeatLayout heat_layout(const isa::ArrayDecl& array, float width, float max_height, int cell_px) {
  HeatLayout l;
  l.cell_px = std::max(2, cell_px);
  l.tiles = std::max<std::int64_t>(1, array.tile_count());
  l.grid_rows = std::max<std::int64_t>(1, array.tile_grid_rows());
  l.grid_cols = std::max<std::int64_t>(1, array.tile_grid_cols());
  l.linear = array.rank == 1 || l.grid_cols == 1;
  const std::int64_t across_max = std::max<std::int64_t>(1, static_cast<std::int64_t>(width) / l.cell_px);
  const std::int64_t down_max = std::max<std::int64_t>(1, static_cast<std::int64_t>(max_height) / l.cell_px);
  if (l.linear) {
    l.per_cell = std::max<std::int64_t>(1, ceil_div(l.tiles, across_max * down_max));
    std::int64_t cells = ceil_div(l.tiles, l.per_cell);
    l.cells_across = std::min(across_max, cells);
    l.cells_down = ceil_div(cells, l.cells_across);
  } else {
    l.block_cols = std::max<std::int64_t>(1, ceil_div(l.grid_cols, across_max));
    l.block_rows = std::max<std::int64_t>(1, ceil_div(l.grid_rows, down_max));
    l.cells_across = ceil_div(l.grid_cols, l.block_cols);
    l.cells_down = ceil_div(l.grid_rows, l.block_rows);
  }
  return l;
}

std::uint32_t heat_rgba(float t) {
  // Dark slate -> blue -> cyan -> pale yellow, so a hot cell stands out at a glance.
  t = std::clamp(t, 0.0f, 1.0f);
  struct Stop {
    float t, r, g, b;
  };
  static constexpr Stop stops[] = {
      {0.00f, 52, 60, 78}, {0.25f, 40, 90, 170}, {0.55f, 30, 160, 200}, {0.80f, 120, 210, 160}, {1.00f, 250, 235, 140}};
  for (std::size_t i = 1; i < std::size(stops); ++i) {
    if (t <= stops[i].t) {
      float u = (t - stops[i - 1].t) / (stops[i].t - stops[i - 1].t);
      auto mix = [&](float a, float b) { return static_cast<int>(a + (b - a) * u); };
      return pack(mix(stops[i - 1].r, stops[i].r), mix(stops[i - 1].g, stops[i].g), mix(stops[i - 1].b, stops[i].b));
    }
  }
  return pack(250, 235, 140);
}

HeatCells bin_counts(const HeatLayout& l, const std::vector<std::uint32_t>& tile_reads,
                     const std::vector<std::uint32_t>& tile_writes) {
  HeatCells cells;
  cells.reads.assign(static_cast<std::size_t>(l.cell_count()), 0);
  cells.writes.assign(static_cast<std::size_t>(l.cell_count()), 0);
  const auto n = static_cast<std::int64_t>(std::min(tile_reads.size(), tile_writes.size()));
  if (l.linear) {
    for (std::int64_t t = 0; t < std::min(n, l.tiles); ++t) {
      auto c = static_cast<std::size_t>(t / l.per_cell), ti = static_cast<std::size_t>(t);
      cells.reads[c] = std::max(cells.reads[c], tile_reads[ti]);
      cells.writes[c] = std::max(cells.writes[c], tile_writes[ti]);
    }
    return cells;
  }
  for (std::int64_t r = 0; r < l.grid_rows; ++r) {
    const std::int64_t row_cell = (r / l.block_rows) * l.cells_across;
    for (std::int64_t c = 0; c < l.grid_cols; ++c) {
      std::int64_t t = r * l.grid_cols + c;
      if (t >= n) return cells;
      auto cell = static_cast<std::size_t>(row_cell + c / l.block_cols), ti = static_cast<std::size_t>(t);
      cells.reads[cell] = std::max(cells.reads[cell], tile_reads[ti]);
      cells.writes[cell] = std::max(cells.writes[cell], tile_writes[ti]);
    }
  }
  return cells;
}

void rebin_cell(const HeatLayout& l, const std::vector<std::uint32_t>& tile_reads,
                const std::vector<std::uint32_t>& tile_writes, std::int64_t cell, HeatCells& cells) {
  if (!l.cell_used(cell)) return;
  auto sp = l.tiles_of(cell);
  const auto n = static_cast<std::int64_t>(std::min(tile_reads.size(), tile_writes.size()));
  std::uint32_t reads = 0, writes = 0;
  for (std::int64_t r = sp.r0; r < sp.r1; ++r)
    for (std::int64_t c = sp.c0; c < sp.c1; ++c) {
      std::int64_t t = l.linear ? r : r * l.grid_cols + c;
      if (t >= n) continue;
      reads = std::max(reads, tile_reads[static_cast<std::size_t>(t)]);
      writes = std::max(writes, tile_writes[static_cast<std::size_t>(t)]);
    }
  cells.reads[static_cast<std::size_t>(cell)] = reads;
  cells.writes[static_cast<std::size_t>(cell)] = writes;
}

void paint_cell(const HeatLayout& l, const HeatCells& cells, std::int64_t cell, std::uint32_t scale_reads,
                std::uint32_t scale_writes, std::vector<std::uint32_t>& rgba) {
  if (!l.cell_used(cell)) return;
  const int px = l.cell_px, w = l.width_px();
  const float sr = static_cast<float>(std::max<std::uint32_t>(1, scale_reads));
  const float sw = static_cast<float>(std::max<std::uint32_t>(1, scale_writes));
  auto ci = static_cast<std::size_t>(cell);
  std::uint32_t reads = cells.reads[ci], writes = cells.writes[ci];
  std::uint32_t fill = reads ? heat_rgba(0.15f + 0.85f * static_cast<float>(reads) / sr) : kHeatEmptyRgba;
  std::uint32_t band = fill;
  if (writes) band = over(fill, kHeatWriteRgba, static_cast<int>(120 + 135 * std::min(1.0f, static_cast<float>(writes) / sw)));
  const int x0 = static_cast<int>(cell % l.cells_across) * px, y0 = static_cast<int>(cell / l.cells_across) * px;
  for (int y = 0; y < px - 1; ++y) {
    std::uint32_t c = y == px - 2 ? band : fill;
    std::uint32_t* row = rgba.data() + static_cast<std::size_t>(y0 + y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x0);
    std::fill(row, row + px - 1, c);
  }
}

void heat_image(const HeatLayout& l, const HeatCells& cells, std::uint32_t scale_reads, std::uint32_t scale_writes,
                std::vector<std::uint32_t>& rgba) {
  rgba.assign(static_cast<std::size_t>(l.width_px()) * static_cast<std::size_t>(l.height_px()), 0u);  // transparent gaps
  for (std::int64_t cell = 0; cell < l.cell_count(); ++cell) paint_cell(l, cells, cell, scale_reads, scale_writes, rgba);
}

}  // namespace flashsim::viewer

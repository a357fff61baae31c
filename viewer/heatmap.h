// DRAM heat maps for arrays too big to draw cell by cell: the array is binned into at most a
// pane's worth of small cells (each the largest count of the tiles it covers) and painted into
// an RGBA image that the app uploads as one texture. Window-free, so the tests check it.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/program.h"

namespace flashsim::viewer {

// Arrays with more tiles than this are drawn as a binned texture instead of one rect per tile.
inline constexpr std::int64_t kTextureHeatCells = 2048;

// How tiles map to cells. A one-dimensional array (or one tile column wide) flows its tiles
// left to right in rows, `per_tile_cell` consecutive tiles per cell; a two-dimensional one keeps
// its shape, each cell a block of block_rows x block_cols tiles.
struct HeatLayout {
  int cell_px = 4;               // a cell is cell_px x cell_px screen pixels (and texels)
  bool linear = true;
  std::int64_t tiles = 0;        // the array's tile count
  std::int64_t grid_rows = 1, grid_cols = 1;  // its tile grid
  std::int64_t per_cell = 1;     // linear: tiles per cell
  std::int64_t block_rows = 1, block_cols = 1;  // 2-D: tiles per cell
  std::int64_t cells_across = 0, cells_down = 0;

  std::int64_t cell_count() const { return cells_across * cells_down; }
  int width_px() const { return static_cast<int>(cells_across) * cell_px; }
  int height_px() const { return static_cast<int>(cells_down) * cell_px; }
  // The cell (row-major index) a tile falls into.
  std::int64_t cell_of(std::int64_t tile) const;
  // Whether a cell covers any tile (the last row of a linear layout may be short).
  bool cell_used(std::int64_t cell) const;
  // The tiles a cell covers: rows [r0, r1) x cols [c0, c1) of the tile grid (linear: flat
  // tile indices [r0, r1), c0 = 0, c1 = 1).
  struct Span {
    std::int64_t r0, r1, c0, c1;
  };
  Span tiles_of(std::int64_t cell) const;
  bool operator==(const HeatLayout&) const = default;
};

// A layout whose cells fit in width x max_height pixels, binning as little as that allows.
HeatLayout heat_layout(const isa::ArrayDecl& array, float width, float max_height, int cell_px = 4);

// The heat-map colour for a normalised count t in [0, 1], packed as R,G,B,A bytes in memory
// (ImGui's IM_COL32 layout; OpenGL's GL_RGBA / GL_UNSIGNED_BYTE on a little-endian host).
std::uint32_t heat_rgba(float t);
inline constexpr std::uint32_t kHeatEmptyRgba = 0xff302824u;  // never read (36, 40, 48)
inline constexpr std::uint32_t kHeatWriteRgba = 0xff3c82f0u;  // the write band (240, 130, 60)

// Per-cell maxima of the tile counts.
struct HeatCells {
  std::vector<std::uint32_t> reads, writes;
};
HeatCells bin_counts(const HeatLayout& layout, const std::vector<std::uint32_t>& tile_reads,
                     const std::vector<std::uint32_t>& tile_writes);

// Recomputes one cell's maxima from the tile counts (after a step changed one of its tiles).
void rebin_cell(const HeatLayout& layout, const std::vector<std::uint32_t>& tile_reads,
                const std::vector<std::uint32_t>& tile_writes, std::int64_t cell, HeatCells& cells);

// The image (width_px x height_px texels, row-major from the top): each cell's fill is its read
// heat, its last filled texel row the write band when written; its right column and bottom
// row stay transparent, a gap between cells. `scale_*` are the whole trace's largest counts.
void heat_image(const HeatLayout& layout, const HeatCells& cells, std::uint32_t scale_reads,
                std::uint32_t scale_writes, std::vector<std::uint32_t>& rgba);
// Repaints one cell of an image heat_image made.
void paint_cell(const HeatLayout& layout, const HeatCells& cells, std::int64_t cell, std::uint32_t scale_reads,
                std::uint32_t scale_writes, std::vector<std::uint32_t>& rgba);

}  // namespace flashsim::viewer

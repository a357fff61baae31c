// Highlight colours, shared by the drawing layer and the screenshot test (which looks for
// them in known pixel regions). Opaque, so a pixel reads the same on any background.
#pragma once

#include <cstdint>

namespace flashsim::viewer::theme {

struct Rgb {
  std::uint8_t r, g, b;
  constexpr std::uint32_t abgr() const {  // ImGui's IM_COL32 layout, alpha 255
    return 0xff000000u | (std::uint32_t{b} << 16) | (std::uint32_t{g} << 8) | r;
  }
};

inline constexpr Rgb kCurrentLine{112, 84, 20};     // the step just executed (amber)
inline constexpr Rgb kNextMarker{40, 170, 160};     // the instruction that runs next (teal)
inline constexpr Rgb kChangedRegister{34, 110, 58}; // registers the last step wrote (green)
inline constexpr Rgb kBreakpoint{220, 60, 60};      // breakpoint dot (red)
inline constexpr Rgb kTouchedCell{255, 214, 64};    // outline of the DRAM cell just touched
inline constexpr Rgb kErrorBanner{120, 28, 28};     // assembler error banner
inline constexpr Rgb kTraceA{90, 170, 255};         // first trace in plots and titles
inline constexpr Rgb kTraceB{255, 140, 60};         // second trace
// The Units panel (programs with .units): a bar's fill is its unit's colour; the current step's
// bar is outlined in kUnitsCurrent, critical-path bars carry a kCriticalPath stripe and outline.
inline constexpr Rgb kUnitMemory{70, 120, 200};
inline constexpr Rgb kUnitTensor{60, 160, 90};
inline constexpr Rgb kUnitSpecial{200, 120, 50};
inline constexpr Rgb kUnitVector{140, 100, 190};
inline constexpr Rgb kCriticalPath{240, 60, 90};
inline constexpr Rgb kUnitsCurrent{255, 255, 255};

}  // namespace flashsim::viewer::theme

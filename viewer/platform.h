// The one thing the drawing layer does differently in the browser (emscripten): the shader
// dialect. The desktop asks GLFW for OpenGL 3.0 (GLSL 1.30); a browser has WebGL 2, which is
// OpenGL ES 3.0 (GLSL ES 3.00). Everything else the web page needs lives in viewer/web/.
#pragma once

namespace flashsim::viewer::platform {

#ifdef __EMSCRIPTEN__
inline constexpr const char* kGlslVersion = "#version 300 es";
#else
inline constexpr const char* kGlslVersion = "#version 130";
#endif

}  // namespace flashsim::viewer::platform

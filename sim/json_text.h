// A JSON string literal for text the tools print (names, notes, instructions): quoted, with
// quotes, backslashes and control characters escaped. Header-only so that kernels/ can use it
// when it is built without the simulator library.
#pragma once

#include <cstdio>
#include <string>

namespace flashsim::sim {

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace flashsim::sim

// Every executable's main() runs its body through guard_main: what the body throws is printed
// to stderr as "NAME: error: MESSAGE" and the program exits 2 (bad input), where an uncaught
// exception would abort with status 134. Header-only, so the standalone CUDA drivers use it too.
#pragma once

#include <exception>
#include <iostream>

namespace flashsim {

inline constexpr int kExitUncaught = 2;

template <class Body>
int guard_main(const char* name, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << name << ": error: an exception that is not a std::exception\n";
  }
  return kExitUncaught;
}

}  // namespace flashsim

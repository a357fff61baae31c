// Reading the CSV files the tools write (flashsim-gpu compare): one line into its fields, and a
// column's index by its header name. Header-only, as sim/json_text.h, for kernels/ too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashsim::sim {

// Fields of one CSV line; "quoted" fields may hold commas.
inline std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

// Index of column `name` in a header row; throws std::invalid_argument naming `where`.
inline std::size_t csv_column(const std::vector<std::string>& header, const std::string& name, const std::string& where) {
  auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) throw std::invalid_argument(where + ":1: no column '" + name + "' (not a flashsim-gpu compare CSV?)");
  return static_cast<std::size_t>(it - header.begin());
}

}  // namespace flashsim::sim

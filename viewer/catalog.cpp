#include "viewer/catalog.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace flashsim::viewer {

namespace fs = std::filesystem;

LoadRequest CatalogEntry::request(const std::map<std::string, std::int64_t>& values) const {
  LoadRequest r;
  r.params = values;
  if (generate) {
    r.program = generate(values);
    r.title = name;
    for (const auto& [k, v] : values) r.title += " " + k + "=" + std::to_string(v);
  } else {
    r.path = path;
  }
  return r;
}

std::vector<CatalogEntry> scan_lessons(const std::string& lessons_dir) {
  std::vector<CatalogEntry> out;
  std::error_code ec;
  if (lessons_dir.empty() || !fs::is_directory(lessons_dir, ec)) return out;
  for (const auto& dir : fs::directory_iterator(lessons_dir, ec)) {
    fs::path file = dir.path() / "solution.fsa";
    if (!dir.is_directory(ec) || !fs::is_regular_file(file, ec)) continue;
    CatalogEntry e;
    e.name = dir.path().filename().string();
    e.group = "Lesson traces";
    e.path = file.string();
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string line; lines.size() < 200 && std::getline(in, line);) lines.push_back(line);
    for (const auto& l : lines) {
      auto hash = l.find('#');
      if (hash == std::string::npos) continue;
      e.description = l.substr(l.find_first_not_of(" #", hash) == std::string::npos ? l.size() : l.find_first_not_of(" #", hash));
      break;
    }
    e.params = scan_params(lines);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

std::vector<CatalogEntry> full_catalog(const std::string& lessons_dir) {
  auto out = scan_lessons(lessons_dir);
  for (auto& g : generated_schedules()) out.push_back(std::move(g));
  return out;
}

const CatalogEntry* find_entry(const std::vector<CatalogEntry>& catalog, const std::string& name) {
  for (const auto& e : catalog)
    if (e.name == name) return &e;
  const CatalogEntry* found = nullptr;
  for (const auto& e : catalog) {
    bool suffix = e.name.size() > name.size() && e.name.compare(e.name.size() - name.size(), name.size(), name) == 0 &&
                  e.name[e.name.size() - name.size() - 1] == '-';
    if (!suffix) continue;
    if (found) return nullptr;
    found = &e;
  }
  return found;
}

std::pair<std::string, std::map<std::string, std::int64_t>> parse_spec(const std::string& spec) {
  auto colon = spec.find(':');
  std::pair<std::string, std::map<std::string, std::int64_t>> out{spec.substr(0, colon), {}};
  if (colon == std::string::npos) return out;
  std::string rest = spec.substr(colon + 1);
  std::size_t at = 0;
  while (at <= rest.size()) {
    auto comma = rest.find(',', at);
    std::string item = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("'" + spec + "': expected NAME:param=value[,param=value...], found '" + item + "'");
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    std::size_t used = 0;
    std::int64_t v = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size())
      throw std::invalid_argument("'" + spec + "': parameter " + key + " needs an integer, found '" + value + "'");
    out.second[key] = v;
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace flashsim::viewer

// What the viewer can open by name: the lessons' reference traces (files with .param
// defaults) and, where a generator registry exists, generated schedules.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "viewer/model.h"

namespace flashsim::viewer {

struct CatalogEntry {
  std::string name;         // "06-online-softmax"
  std::string description;  // one line
  std::string group;        // "Lesson traces" or "Generated schedules"
  std::string path;         // the .fsa file; empty for a generator
  std::vector<ParamDecl> params;  // defaults, editable in the dialog
  // For generators: builds the program for the given parameters (throws on bad values).
  std::function<isa::Program(const std::map<std::string, std::int64_t>&)> generate;

  LoadRequest request(const std::map<std::string, std::int64_t>& params) const;
};

// Every DIR/*/solution.fsa, sorted by name; the description is the file's first comment.
std::vector<CatalogEntry> scan_lessons(const std::string& lessons_dir);
// Generated schedules known to this build.
std::vector<CatalogEntry> generated_schedules();
// The lesson traces followed by the generated schedules.
std::vector<CatalogEntry> full_catalog(const std::string& lessons_dir);

// Finds an entry by exact name, or by a unique name ending in "-NAME" / containing NAME
// ("online-softmax" finds "06-online-softmax"). Returns nullptr when none or ambiguous.
const CatalogEntry* find_entry(const std::vector<CatalogEntry>& catalog, const std::string& name);

// Parses "NAME" or "NAME:k=v,k=v" into a name and parameter overrides; throws
// std::invalid_argument with a readable message on a malformed parameter.
std::pair<std::string, std::map<std::string, std::int64_t>> parse_spec(const std::string& spec);

}  // namespace flashsim::viewer

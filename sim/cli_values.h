// An empty or blank option value is bad input, in every command of `flashsim` and `flashsim-gpu`
// (issue 35): CLI11 turns `--n ''` into 0 and a size option kept as text took `--l2 ''` for "no
// L2", so the run went on without what was asked for. refuse_blank_values() gives every option
// of an app and of all its subcommands that takes a value one check, run before the option's own
// (its range, its member list), so that the message is the same everywhere:
//
//   --l2: an empty value is not allowed: give one, or leave the option out for its default
//
// and the exit status is the one of any other bad option (2). Header-only: flashsim-gpu uses it
// without linking the simulator's CLI library.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace flashsim::cli {

// "" when `value` holds a character other than white space, else why the value is refused.
inline std::string blank_value_error(const std::string& value) {
  if (value.find_first_not_of(" \t\n\v\f\r") != std::string::npos) return {};
  return std::string(value.empty() ? "an empty" : "a blank") +
         " value is not allowed: give one, or leave the option out for its default";
}

// Adds the blank-value check to every option of `app` and its subcommands (recursively) that takes
// a value; flags are left alone. Call it once every option is registered, before parsing. An option
// with checks of its own gets the blank check folded into each of them, ahead of their own test, so
// that it is the first to speak (CLI11 runs an option's checks in the order they were added and
// reports the first failure); one without gets it as its only check. A list that CLI11 splits
// (`->delimiter(',')`) is checked item by item: `--regs ''` and `--regs 3,' '` are refused (CLI11
// itself drops an item with nothing between two commas, `--regs 3,,4`, before any check sees it).
inline void refuse_blank_values(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size_max() == 0) continue;  // a flag: no value to check
    bool folded = false;
    for (int i = 0;; ++i) {
      CLI::Validator* v = nullptr;
      try {
        v = opt->get_validator(i);
      } catch (const CLI::OptionNotFound&) {
        break;  // past the last check
      }
      v->operation([own = *v](std::string& value) {  // a copy of the check as it was
        std::string why = blank_value_error(value);
        return why.empty() ? own(value) : why;
      });
      folded = true;
    }
    if (!folded) opt->check(CLI::Validator(blank_value_error, "", "NONBLANK"));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_blank_values(*sub);
}

// "" when argv names one of app's commands (or starts with an option), else "unknown command 'X'
// (commands: a, b, ...)": CLI11 itself only says that a subcommand is required.
inline std::string unknown_command_error(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return {};
  std::string names;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    known = known || sub->get_name() == argv[1];
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return known ? std::string() : "unknown command '" + std::string(argv[1]) + "' (commands: " + names + ")";
}

}  // namespace flashsim::cli

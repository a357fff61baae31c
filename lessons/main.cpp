// The `flashsim` executable: the simulator's commands plus the curriculum's.
#include <CLI/CLI.hpp>
#include <iostream>

#include "lessons/commands.h"
#include "sim/cli.h"
#include "sim/cli_values.h"
#include "sim/main_guard.h"

#ifndef FLASHSIM_VERSION
#define FLASHSIM_VERSION "dev"
#endif

static int run_main(int argc, char** argv) {
  CLI::App app{"flashsim: a cycle-counting toy machine for IO-aware GPU algorithms"};
  app.set_version_flag("--version", FLASHSIM_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  flashsim::lessons::register_flashsim_commands(app, exit_code);
  if (const std::string why = flashsim::cli::unknown_command_error(app, argc, argv); !why.empty()) {
    std::cerr << "flashsim: error: " << why << "\n";
    return flashsim::cli::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : flashsim::cli::kExitBadInput;
  }
  return exit_code;
}

int main(int argc, char** argv) { return flashsim::guard_main("flashsim", [&] { return run_main(argc, argv); }); }

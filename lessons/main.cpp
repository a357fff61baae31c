// The `flashsim` executable: the simulator's commands plus the curriculum's.
#include <CLI/CLI.hpp>
#include <iostream>

#include "lessons/09-attention-loop-orders/scalar_gen_cli.h"
#include "lessons/lesson_cli.h"
#include "lessons/tour.h"
#include "sim/cli.h"
#include "sim/cli_ring.h"
#include "sim/cli_tile.h"
#include "sim/cli_time.h"
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
  flashsim::cli::register_run_command(app, exit_code);
  flashsim::lessons::register_lesson_command(app, exit_code);
  flashsim::lessons::register_gen_command(app, exit_code);
  flashsim::lessons::register_scalar_gen_commands(app, exit_code);  // softmax, variance, attention-scalar join `gen`
  flashsim::lessons::register_optimize_command(app, exit_code);
  flashsim::cli::register_tile_commands(app, exit_code);  // after the lessons' `gen`: joins it
  flashsim::lessons::register_tour_command(app, exit_code);
  flashsim::cli::register_ring_command(app, exit_code);
  flashsim::cli::register_time_command(app, exit_code);
  flashsim::cli::refuse_blank_values(app);  // after every option is registered
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : flashsim::cli::kExitBadInput;
  }
  return exit_code;
}

int main(int argc, char** argv) { return flashsim::guard_main("flashsim", [&] { return run_main(argc, argv); }); }

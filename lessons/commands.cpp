#include "lessons/commands.h"

#include <CLI/CLI.hpp>

#include "lessons/09-attention-loop-orders/scalar_gen_cli.h"
#include "lessons/lesson_cli.h"
#include "lessons/tour.h"
#include "sim/cli.h"
#include "sim/cli_ring.h"
#include "sim/cli_tile.h"
#include "sim/cli_time.h"
#include "sim/cli_values.h"

namespace flashsim::lessons {

void register_flashsim_commands(CLI::App& app, int& exit_code) {
  cli::register_run_command(app, exit_code);
  register_lesson_command(app, exit_code);
  register_gen_command(app, exit_code);
  register_scalar_gen_commands(app, exit_code);  // softmax, variance, attention-scalar join `gen`
  register_optimize_command(app, exit_code);
  cli::register_tile_commands(app, exit_code);  // after the lessons' `gen`: joins it
  register_tour_command(app, exit_code);
  cli::register_ring_command(app, exit_code);
  cli::register_time_command(app, exit_code);
  cli::refuse_blank_values(app);  // after every option is registered
}

}  // namespace flashsim::lessons

// `flashsim time`: the predicted time of the fast kernels' schedules on a GPU preset
// (sim/gpu_time.h), per unit busy cycles and what bounds it.
#pragma once

namespace CLI {
class App;
}

namespace flashsim::cli {

void register_time_command(CLI::App& app, int& exit_code);

}  // namespace flashsim::cli

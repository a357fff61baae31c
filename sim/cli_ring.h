// `flashsim ring`: the device-level ring attention schedule, run in float64 with counted link
// and HBM bytes against the closed forms.
#pragma once

namespace CLI {
class App;
}

namespace flashsim::cli {

void register_ring_command(CLI::App& app, int& exit_code);

}  // namespace flashsim::cli

// `flashsim tour`: the README's main job. Runs the lesson traces and prints their step
// tables and costs side by side, then the same comparison at tile scale.
#pragma once

namespace CLI {
class App;
}

namespace flashsim::lessons {
void register_tour_command(CLI::App& app, int& exit_code);
}

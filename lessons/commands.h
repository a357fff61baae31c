// Every subcommand of the `flashsim` executable, registered in one place: lessons/main.cpp and
// the Python module's flashsim.cli() build the same command line from it.
#pragma once

namespace CLI {
class App;
}

namespace flashsim::lessons {

// Registers every subcommand (in the order `--help` lists them) and then the blank-value check.
void register_flashsim_commands(CLI::App& app, int& exit_code);

}  // namespace flashsim::lessons

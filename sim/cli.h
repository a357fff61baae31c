// Subcommands of the `flashsim` executable that need only the simulator.
// Each module registers its own subcommands; lessons/main.cpp wires them together.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace flashsim::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFault = 1;     // the machine faulted while running
inline constexpr int kExitBadInput = 2;  // the input text or options are wrong

// Runs `body`, printing assembler errors and machine faults to stderr in their standard form
// and turning them into exit codes.
int guarded(const std::function<int()>& body);

// printf onto std::cout: flashsim.cli() captures std::cout, and printf's own stdout went past it.
void print_out(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Registers `run` (and the options shared by anything that loads a trace).
void register_run_command(CLI::App& app, int& exit_code);

}  // namespace flashsim::cli

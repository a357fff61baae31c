// `flashsim lesson list|check`, `flashsim gen matmul` and `flashsim optimize matmul|softmax`.
#pragma once

namespace CLI {
class App;
}

namespace flashsim::lessons {
void register_lesson_command(CLI::App& app, int& exit_code);
void register_gen_command(CLI::App& app, int& exit_code);
void register_optimize_command(CLI::App& app, int& exit_code);
}  // namespace flashsim::lessons

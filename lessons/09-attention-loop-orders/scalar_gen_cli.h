// `flashsim gen softmax|variance|attention-scalar`: the scalar generators of lessons 05-09,
// added under the `gen` subcommand (register after lessons::register_gen_command).
#pragma once

namespace CLI {
class App;
}

namespace flashsim::lessons {
void register_scalar_gen_commands(CLI::App& app, int& exit_code);
}

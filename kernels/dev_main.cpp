// Entry point of the per-file drivers (matmul, softmax, attention_forward, attention_backward),
// built once per op with FLASHSIM_DEV_OP set to the op.
#include "kernels/runner.h"
#include "sim/main_guard.h"

int main(int argc, char** argv) {
  return flashsim::guard_main(argv[0], [&] { return flashsim::gpu::dev_main(flashsim::gpu::Op::FLASHSIM_DEV_OP, argc, argv); });
}

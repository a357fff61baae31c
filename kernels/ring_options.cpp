// The options of `flashsim-gpu ring` checked on the CPU (kernels/ring.h): everything that cannot
// run is refused before a GPU is touched, with one message. No CUDA here, so that the checks are
// tested on machines without a GPU (tests/kernels/test_kernels_cpu.cpp).
#include <climits>
#include <cstdint>
#include <string>

#include "kernels/ring.h"

namespace flashsim::gpu {

std::string ring_options_error(const RingOptions& opt, int gpus_present) {
  // What the options ask for, whatever the machine
  if (opt.gpus < 1) return "--gpus must be at least 1";
  if (opt.d != 64 && opt.d != 128)
    return "--d " + std::to_string(opt.d) + " is not supported: the fast kernel takes d = 64 or 128";
  if (opt.dtype != "bf16" && opt.dtype != "fp16") return "--dtype must be bf16 or fp16";
  if (opt.split != "contiguous" && opt.split != "zigzag") return "--split must be contiguous or zigzag";
  if (opt.transport != "nccl" && opt.transport != "copy" && opt.transport != "auto")
    return "--transport must be auto, nccl or copy";
  if (opt.method != "ring" && opt.method != "allgather") return "--method must be ring or allgather";
  if (opt.streams != 1 && opt.streams != 2) return "--streams must be 1 or 2";
  if (opt.launch != "step" && opt.launch != "pair") return "--launch must be step or pair";
  if (opt.method == "allgather" && opt.transport == "copy")
    return "--method allgather runs through NCCL's collectives: it takes --transport nccl only";
  if (opt.heads < 1 || opt.heads > 65535) return "--heads must be between 1 and 65535";
  if (opt.nccl_ctas < 0) return "--nccl-ctas must be 0 (NCCL's default) or more";
  if (opt.settle_ms < 0 || opt.settle_ms > 10000) return "--settle-ms must be between 0 and 10000";
  if (opt.baseline != "gpu0" && opt.baseline != "all") return "--baseline must be gpu0 or all";
  if (opt.sm_clock_us < 0 || opt.sm_clock_us > 10000) return "--sm-clock must be between 0 (off) and 10000 us";
  // The machine first: the checks of n below are about a ring of --gpus GPUs, which is moot when
  // the machine has fewer (issue 35: "--gpus 5" on 4 GPUs was told that n is not a multiple of 5).
  if (gpus_present < opt.gpus) {
    const std::string asked = std::to_string(opt.gpus) + " GPUs asked for (--gpus " + std::to_string(opt.gpus) + ")";
    if (gpus_present <= 0) return asked + ", but this machine has no CUDA GPU; nothing was run";
    return asked + ", but this machine has only " + std::to_string(gpus_present) + " GPU" +
           (gpus_present == 1 ? "" : "s") + "; nothing was run";
  }
  const bool zigzag = opt.split == "zigzag";
  const std::int64_t parts = static_cast<std::int64_t>(opt.gpus) * (zigzag ? 2 : 1);
  if (opt.n < parts || opt.n % parts != 0)
    return "n = " + std::to_string(opt.n) + " is not a positive multiple of " + (zigzag ? "2 x --gpus" : "--gpus") +
           " = " + std::to_string(parts) + "; the " + opt.split + " split needs equal chunks";
  if (opt.n > INT_MAX) return "n must fit in an int (the one-GPU run takes all n rows)";
  return {};
}

}  // namespace flashsim::gpu

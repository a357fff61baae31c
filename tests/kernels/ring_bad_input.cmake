# flashsim-gpu ring refuses what it cannot run before it touches a GPU: each case must exit 2 with
# its message on stderr (EXE). The options on their own come first (any machine); then the
# machine's GPU count, before n is checked against --gpus (issue 35: --gpus 5 on a 4-GPU machine
# must say so, not that n is no multiple of 5). No machine has 63 or 64 GPUs, so those two cases
# give the same answer everywhere; the checks of n against the ring need the GPUs to be there and
# are tested on the CPU with a given GPU count (ring_options_error, tests/kernels/test_kernels_cpu.cpp).
# Each case: the arguments, '|', a piece of the message.
set(cases
  "--d 96|--d 96 is not supported"
  "--dtype fp32|--dtype must be bf16 or fp16"
  "--split stripes|--split must be contiguous or zigzag"
  "--transport shm|--transport must be auto, nccl or copy"
  "--method gather|--method must be ring or allgather"
  "--method allgather --transport copy|takes --transport nccl only"
  "--backward --d 32|--d 32 is not supported"
  "--streams 3|--streams must be 1 or 2"
  "--heads 0|--heads must be between 1 and 65535"
  "--gpus 63|63 GPUs asked for (--gpus 63), but this machine has"
  "--gpus 63 --n 16385 --split zigzag|63 GPUs asked for (--gpus 63), but this machine has"
  "--gpus 64 --n 65536|64 GPUs asked for")
foreach(c IN LISTS cases)
  string(FIND "${c}" "|" bar)
  string(SUBSTRING "${c}" 0 ${bar} argstr)
  math(EXPR from "${bar} + 1")
  string(SUBSTRING "${c}" ${from} -1 expect)
  separate_arguments(parts UNIX_COMMAND "${argstr}")
  execute_process(COMMAND ${EXE} ring ${parts} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "flashsim-gpu ring ${parts}: exit ${rc}, not 2\n${out}\n${err}")
  endif()
  string(FIND "${err}" "${expect}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "flashsim-gpu ring ${parts}: stderr lacks '${expect}':\n${err}")
  endif()
  string(FIND "${err}" "multiple" at)
  if(NOT at EQUAL -1 AND "${expect}" MATCHES "GPUs asked for")
    message(FATAL_ERROR "flashsim-gpu ring ${parts}: the GPU count must be said before n is checked:\n${err}")
  endif()
endforeach()

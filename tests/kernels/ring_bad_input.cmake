# flashsim-gpu ring refuses what it cannot run before it touches a GPU: each case must exit 2 with
# its message on stderr (EXE). More GPUs than present is the last case: any machine has fewer than 64.
# Each case: the arguments, '|', a piece of the message.
set(cases
  "--d 96|--d 96 is not supported"
  "--dtype fp32|--dtype must be bf16 or fp16"
  "--n 16385|n = 16385 is not a positive multiple of --gpus = 2"
  "--n 16386 --split zigzag|not a positive multiple of 2 x --gpus = 4"
  "--split stripes|--split must be contiguous or zigzag"
  "--transport shm|--transport must be nccl or copy"
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
endforeach()

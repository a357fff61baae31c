# Runs EXE with the list ARGS and checks its exit status (EXPECT_RC) and that its output names
# EXPECT.
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "${EXE} ${ARGS} exited ${rc}, expected ${EXPECT_RC}:\n${out}\n${err}")
endif()
string(FIND "${out}${err}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${EXE} ${ARGS}: the output does not name '${EXPECT}':\n${out}\n${err}")
endif()

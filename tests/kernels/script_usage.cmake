# Runs a kernels/tools script with missing arguments: it must exit non-zero and print its usage
# line (SCRIPT, EXPECT) instead of running anything.
execute_process(COMMAND bash ${SCRIPT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} without arguments exited 0:\n${out}\n${err}")
endif()
if(NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "${SCRIPT} without arguments did not print '${EXPECT}':\n${out}\n${err}")
endif()

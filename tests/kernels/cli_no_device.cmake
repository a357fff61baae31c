# Runs `flashsim-gpu compare` at the tiny preset. Without a CUDA device it must say so and exit
# with a non-zero status; with one it must validate every schedule and exit 0.
execute_process(COMMAND ${EXE} compare --sizes tiny --repeats 1 --no-profile
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(err MATCHES "no CUDA device")
  if(rc EQUAL 0)
    message(FATAL_ERROR "flashsim-gpu reported no CUDA device but exited 0")
  endif()
  message(STATUS "no CUDA device: flashsim-gpu said so and exited ${rc}, as it should")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "flashsim-gpu compare failed (${rc}):\n${out}\n${err}")
endif()

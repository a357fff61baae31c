# Compiles kernels/tools/probe_setmaxnreg.cu with ptxas -v (NVCC, SRC) and checks what the RESULTS
# and attention_forward.cu rely on: after setmaxnreg.inc the kernels compile without spills, and
# without it the same kernels spill (so the probe really keeps more values live than the launch allows).
execute_process(COMMAND ${NVCC} -gencode arch=compute_90a,code=sm_90a -std=c++20 -O3 -Xptxas -v -c ${SRC} -o ${OUT}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed (${rc}):\n${err}")
endif()
set(text "${out}${err}")
# ptxas prints, per kernel: "Compiling entry function '_Z5probeILi200ELi384ELi240ELb1EEvPKfPfi'" then
# its "N bytes spill stores" line
foreach(kernel "ILi200ELi384ELi240ELb1E" "ILi200ELi384ELi240ELb0E" "ILi145ELi512ELi160ELb1E" "ILi145ELi512ELi160ELb0E")
  string(FIND "${text}" "${kernel}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no ptxas report for ${kernel}:\n${text}")
  endif()
  string(SUBSTRING "${text}" ${at} 400 tail)
  string(REGEX MATCH "([0-9]+) bytes spill stores" m "${tail}")
  set(spill ${CMAKE_MATCH_1})
  if(kernel MATCHES "ELb1E$" AND NOT spill EQUAL 0)
    message(FATAL_ERROR "${kernel}: ${spill} bytes of spills after setmaxnreg.inc: ptxas no longer uses the larger count")
  endif()
  if(kernel MATCHES "ELb0E$" AND spill EQUAL 0)
    message(FATAL_ERROR "${kernel}: no spills without setmaxnreg: the probe does not exceed the launch's count")
  endif()
  message(STATUS "${kernel}: ${spill} bytes of spill stores")
endforeach()

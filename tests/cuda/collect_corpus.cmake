# cmake -DOUT=dir -DBINARIES="a;b" -P collect_corpus.cmake
# Runs each test binary on the CPU with KILN_DUMP_DIR=OUT/<binary name>, so that every graph it
# realizes is written as IR text (gNNN_00_input.txt). The suites' own pass/fail is reported by
# their own ctest entries; here only an empty corpus is an error.
file(REMOVE_RECURSE "${OUT}")
set(total 0)
foreach(bin ${BINARIES})
  get_filename_component(name "${bin}" NAME)
  file(MAKE_DIRECTORY "${OUT}/${name}")
  set(ENV{KILN_DEVICE} cpu)
  set(ENV{KILN_DUMP_DIR} "${OUT}/${name}")
  set(ENV{KILN_DUMP_SVG} 0)  # only the graphs' text is read back
  # The symbolic-dimension tests realize one graph at some sixty sizes: their code is checked per
  # dialect by SymbolicKernels (cuda_test), not once per size here.
  execute_process(COMMAND "${bin}" --gtest_brief=1 --gtest_filter=-Symbolic.* RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  file(GLOB graphs "${OUT}/${name}/*_00_input.txt")
  list(LENGTH graphs n)
  message(STATUS "${name}: ${n} graphs captured (exit code ${rc})")
  math(EXPR total "${total} + ${n}")
endforeach()
if(total EQUAL 0)
  message(FATAL_ERROR "no graphs captured from ${BINARIES}")
endif()

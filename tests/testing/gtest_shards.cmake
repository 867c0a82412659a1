# Registers a GoogleTest binary with ctest as shards of about SIZE tests each (Note [Test shards]
# in tests/CMakeLists.txt). Run after the binary is built:
#   cmake -DBINARY=<test binary> -DNAME=<target> -DSIZE=<tests a shard> -DWORKDIR=<dir>
#         -DOUT=<file ctest includes> [-DLABELS=<label,label...>] -P gtest_shards.cmake
# The binary lists its tests (`--gtest_list_tests`: a line per suite, then its tests indented by
# two spaces); OUT gets one add_test per shard, GoogleTest's own sharding picking each shard's
# tests (test i of the list runs in shard i mod n).
execute_process(COMMAND "${BINARY}" --gtest_list_tests --gtest_also_run_disabled_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status TIMEOUT 120)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "[test shards] ${BINARY} --gtest_list_tests failed (${status}):\n${listing}${errors}")
endif()
string(REGEX MATCHALL "\n  [^\n]+" tests "\n${listing}")
list(LENGTH tests count)
math(EXPR shards "(${count} + ${SIZE} - 1) / ${SIZE}")
if(shards LESS 1)
  set(shards 1)
endif()
set(labels "")
if(LABELS)
  string(REPLACE "," ";" LABELS "${LABELS}")
  set(labels " LABELS \"${LABELS}\"")
endif()
set(text "")
math(EXPR last "${shards} - 1")
foreach(index RANGE ${last})
  math(EXPR number "${index} + 1")
  set(name "${NAME}.shard-${number}-of-${shards}")
  string(APPEND text
    "add_test([=[${name}]=] [=[${BINARY}]=] --gtest_also_run_disabled_tests)\n"
    "set_tests_properties([=[${name}]=] PROPERTIES WORKING_DIRECTORY [=[${WORKDIR}]=] TIMEOUT 900 "
    "ENVIRONMENT \"GTEST_TOTAL_SHARDS=${shards};GTEST_SHARD_INDEX=${index}\"${labels})\n")
endforeach()
file(WRITE "${OUT}" "${text}")

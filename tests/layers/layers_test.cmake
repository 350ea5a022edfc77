# cmake -DCXX=<compiler> -DINCLUDES=<the cache layer's view, bar separated> -DSOURCE_DIR=<root>
#       -DWORK_DIR=<scratch> -P layers_test.cmake
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" includes "${INCLUDES}")
set(flags -std=c++20 -fsyntax-only)
foreach(dir IN LISTS includes)
  list(APPEND flags -I${dir})
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# The cache layer may include its own headers and the vocabulary's...
file(WRITE ${WORK_DIR}/allowed.cpp "#include \"cache/cache_file.h\"\n#include \"core/ir.h\"\n")
execute_process(COMMAND ${CXX} ${flags} ${WORK_DIR}/allowed.cpp RESULT_VARIABLE rc
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "an allowed include did not build:\n${err}")
endif()

# ...but not the JIT's, which sits above it.
file(WRITE ${WORK_DIR}/points_up.cpp "#include \"jit/program.h\"\n")
execute_process(COMMAND ${CXX} ${flags} ${WORK_DIR}/points_up.cpp RESULT_VARIABLE rc
                ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "jit/program.h")
  message(FATAL_ERROR "cache/ included jit/program.h and it built (${rc}):\n${err}")
endif()

# The build's check finds an upward include in a header no source of its layer includes.
file(MAKE_DIRECTORY ${WORK_DIR}/tree/core ${WORK_DIR}/tree/cache)
file(WRITE ${WORK_DIR}/tree/core/vocabulary.h "#pragma once\n#include \"cache/archive.h\"\n")
file(WRITE ${WORK_DIR}/tree/cache/archive.h "#pragma once\n#include \"core/vocabulary.h\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK_DIR}/tree "-DRULES=core:|cache:core"
                        -P ${SOURCE_DIR}/cmake/CheckLayers.cmake
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "core/vocabulary.h: #include \"cache/archive.h\"")
  message(FATAL_ERROR "the layer check let core/ include cache/ (${rc}):\n${err}")
endif()
if(err MATCHES "cache/archive.h: #include")
  message(FATAL_ERROR "the layer check rejected an include that points down:\n${err}")
endif()
message(STATUS "layers enforced")

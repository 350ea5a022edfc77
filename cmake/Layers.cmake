# The library's layers, bottom to top (README, "Layout"). Each is an OBJECT library that links
# only the layers below it, and each sees the headers of its own folder and of those layers
# only: through a folder of symbolic links in the build tree (layer-include/<layer>/), not the
# source root. An include that points up does not resolve, so it does not build; and
# streamfuse_check_layers, run by every build, scans every header and source of every layer for
# such an include (a header included only from above would otherwise slip through).
#
#   streamfuse_layer(<folder> BELOW <layers it may use> SOURCES <files>)
#
# The shared library streamfuse is made of every layer's objects (CMakeLists.txt).

set(STREAMFUSE_LAYER_VIEWS ${PROJECT_BINARY_DIR}/layer-include)
set_property(GLOBAL PROPERTY STREAMFUSE_LAYERS "")
set_property(GLOBAL PROPERTY STREAMFUSE_LAYER_RULES "")

# What every layer's code may use besides the layers: the public headers, the header-only and
# threading dependencies, the build's version.
add_library(streamfuse_layer_base INTERFACE)
target_compile_features(streamfuse_layer_base INTERFACE cxx_std_20)
target_include_directories(streamfuse_layer_base INTERFACE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(streamfuse_layer_base INTERFACE Boost::headers cereal::cereal
  Threads::Threads)
target_compile_definitions(streamfuse_layer_base INTERFACE STREAMFUSE_VERSION="${PROJECT_VERSION}")
if(STREAMFUSE_OPENMP)
  target_link_libraries(streamfuse_layer_base INTERFACE OpenMP::OpenMP_CXX)
  target_compile_definitions(streamfuse_layer_base INTERFACE STREAMFUSE_OPENMP=1)
endif()

function(streamfuse_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "BELOW;SOURCES")
  set(view ${STREAMFUSE_LAYER_VIEWS}/${name})
  file(MAKE_DIRECTORY ${view})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${name} ${view}/${name} SYMBOLIC)
  set(target streamfuse_${name})
  add_library(${target} OBJECT ${arg_SOURCES})
  target_include_directories(${target} PUBLIC ${view})
  target_link_libraries(${target} PUBLIC streamfuse_layer_base)
  foreach(lower IN LISTS arg_BELOW)
    get_property(known GLOBAL PROPERTY STREAMFUSE_LAYERS)
    if(NOT streamfuse_${lower} IN_LIST known)
      message(FATAL_ERROR "layer ${name}: ${lower} is not a layer below it (add layers bottom up)")
    endif()
    target_link_libraries(${target} PUBLIC streamfuse_${lower})
  endforeach()
  streamfuse_warnings(${target})
  set_property(GLOBAL APPEND PROPERTY STREAMFUSE_LAYERS ${target})
  string(REPLACE ";" "," below "${arg_BELOW}")
  set_property(GLOBAL APPEND PROPERTY STREAMFUSE_LAYER_RULES "${name}:${below}")
endfunction()

# Run by every build (before the layers compile): cmake/CheckLayers.cmake over the source tree.
function(streamfuse_check_layers)
  get_property(rules GLOBAL PROPERTY STREAMFUSE_LAYER_RULES)
  string(REPLACE ";" "|" rules "${rules}")
  add_custom_target(streamfuse_check_layers ALL
    COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} "-DRULES=${rules}"
            -P ${PROJECT_SOURCE_DIR}/cmake/CheckLayers.cmake
    COMMENT "Checking that no include points up a layer"
    VERBATIM)
  get_property(layers GLOBAL PROPERTY STREAMFUSE_LAYERS)
  foreach(layer IN LISTS layers)
    add_dependencies(${layer} streamfuse_check_layers)
  endforeach()
endfunction()

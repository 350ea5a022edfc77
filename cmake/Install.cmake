# `cmake --install` gives a relocatable package: lib/libstreamfuse.so, include/streamfuse/,
# and lib/cmake/streamfuse/ so that find_package(streamfuse) yields streamfuse::streamfuse.
include(CMakePackageConfigHelpers)

install(TARGETS streamfuse EXPORT streamfuseTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/streamfuse DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT streamfuseTargets NAMESPACE streamfuse::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/streamfuse)
configure_package_config_file(cmake/streamfuseConfig.cmake.in
  ${PROJECT_BINARY_DIR}/streamfuseConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/streamfuse)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/streamfuseConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/streamfuseConfig.cmake
  ${PROJECT_BINARY_DIR}/streamfuseConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/streamfuse)

# Every dependency, found the CMake way. All come from Debian packages (tools/install-deps).
find_package(Threads REQUIRED)
# oneDNN 2.x: CPU matmul. Its config needs the OpenCL headers (ocl-icd-opencl-dev).
find_package(dnnl 2.6 CONFIG REQUIRED)
# boost::unordered_flat_map and small_vector: headers only.
find_package(Boost 1.81 REQUIRED)
# Plan and kernel serialization.
find_package(cereal CONFIG REQUIRED)
if(STREAMFUSE_OPENMP)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
endif()

# CUDA is optional at build time; devices are detected at run time. NVRTC's imported target
# CUDA::nvrtc drags in the driver stub (libcuda.so from stubs/), and a sanitizer build linked to
# that stub fails to start on a machine without a driver, so link the NVRTC library alone.
set(STREAMFUSE_HAVE_NVRTC OFF)
if(STREAMFUSE_WITH_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND CUDA_nvrtc_LIBRARY)
    add_library(streamfuse_nvrtc INTERFACE)
    target_include_directories(streamfuse_nvrtc INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
    target_link_libraries(streamfuse_nvrtc INTERFACE ${CUDA_nvrtc_LIBRARY})
    set(STREAMFUSE_HAVE_NVRTC ON)
  endif()
endif()
message(STATUS "streamfuse: NVRTC ${STREAMFUSE_HAVE_NVRTC}, OpenMP ${STREAMFUSE_OPENMP}")

if(STREAMFUSE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(STREAMFUSE_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

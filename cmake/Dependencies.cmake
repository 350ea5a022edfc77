# Every dependency, found the CMake way. All come from Debian packages (tools/install-deps).
find_package(Threads REQUIRED)
# oneDNN 2.x: CPU matmul. Its config needs the OpenCL headers (ocl-icd-opencl-dev).
find_package(dnnl 2.6 CONFIG REQUIRED)
# boost::unordered_flat_map and small_vector: headers only.
find_package(Boost 1.81 REQUIRED)
# Plan and kernel serialization.
find_package(cereal CONFIG REQUIRED)
# safetensors headers (JSON): headers only.
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
if(STREAMFUSE_OPENMP)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
endif()

# CUDA is optional at build time; devices are detected at run time. Only the Toolkit's headers
# are used: the driver (libcuda.so.1), NVRTC and cuBLAS are loaded with dlopen when a CUDA device
# is first used, so one build runs on machines with and without a GPU or a Toolkit (linking
# NVRTC, or CUDA::nvrtc with its driver stub, would make the library fail to load on a machine
# without them, and a sanitizer build linked to the stub fails to start without a driver).
set(STREAMFUSE_HAVE_CUDA OFF)
if(STREAMFUSE_WITH_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND EXISTS "${CUDAToolkit_INCLUDE_DIRS}/cuda.h"
     AND EXISTS "${CUDAToolkit_INCLUDE_DIRS}/nvrtc.h")
    add_library(streamfuse_cuda_headers INTERFACE)
    target_include_directories(streamfuse_cuda_headers SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
    set(STREAMFUSE_HAVE_CUDA ON)
  endif()
endif()
message(STATUS "streamfuse: CUDA headers ${STREAMFUSE_HAVE_CUDA}, OpenMP ${STREAMFUSE_OPENMP}")

if(STREAMFUSE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(STREAMFUSE_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

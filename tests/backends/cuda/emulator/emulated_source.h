// The translation unit the emulated NVRTC hands to the host compiler: the device header
// (emulated_device.h), the CUDA source, and a descriptor (SF_EMU_KERNEL) per extern "C" kernel,
// found by scanning the source's tokens (comments, strings and preprocessor lines skipped).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace streamfuse::backends::cuda::emulator {

struct KernelDeclaration {
  std::string name;
  std::string max_threads;  // __launch_bounds__' first argument as written; empty when absent
};

struct SourceFacts {
  std::vector<KernelDeclaration> kernels;  // extern "C" __global__ functions, each name once
  bool calls_syncthreads = false;          // the name appears outside comments and strings
};

SourceFacts scan_source(std::string_view source);

// The header (compiled with SF_EMU_DEVICE_CODE), then `source` under #line directives naming
// `file_name` (so the compiler's messages point into the program), then the descriptors.
std::string translation_unit(std::string_view device_header, std::string_view source,
                             std::string_view file_name);

}  // namespace streamfuse::backends::cuda::emulator

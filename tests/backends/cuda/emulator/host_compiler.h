// The host C++ compiler as the emulated NVRTC runs it: a translation unit into a shared object,
// in a temporary directory of its own (so that concurrent compiles do not meet), removed after.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace streamfuse::backends::cuda::emulator {

struct HostCompile {
  bool ran = false;   // false when the compiler could not be started (log says why)
  bool ok = false;    // it ran and succeeded
  std::string log;    // its standard output and error
  std::string image;  // the shared object, when ok
};

// $SF_EMU_CXX, else the compiler the project was built with.
std::string host_compiler();

// Runs `host_compiler() flags... -x c++ <source> -o <object>`, with `headers` (include name,
// text) written where #include "name" finds them.
HostCompile compile_shared_object(const std::string& source, const std::vector<std::string>& flags,
                                  const std::vector<std::pair<std::string, std::string>>& headers);

}  // namespace streamfuse::backends::cuda::emulator

#include "backends/cpu/onednn_support.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include <oneapi/dnnl/dnnl.hpp>

namespace streamfuse::backends::cpu {

void* thread_scratchpad(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 64);
  struct Buffer {
    void* data = nullptr;
    std::size_t size = 0;
    ~Buffer() { ::operator delete (data, std::align_val_t{64}); }
  };
  thread_local Buffer buffer;
  if (buffer.size < bytes) {
    ::operator delete (buffer.data, std::align_val_t{64});
    buffer.data = nullptr;
    buffer.size = 0;
    buffer.data = ::operator new (bytes, std::align_val_t{64});
    buffer.size = bytes;
  }
  return buffer.data;
}

void configure_onednn_jit_profiling() {
  if (!std::getenv("ONEDNN_JIT_PROFILE") && !std::getenv("DNNL_JIT_PROFILE"))
    dnnl_set_jit_profiling_flags(DNNL_JIT_PROFILE_NONE);
}

}  // namespace streamfuse::backends::cpu

#include "backends/cpu/onednn_support.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include <oneapi/dnnl/dnnl.hpp>

namespace streamfuse::backends::cpu {

namespace {

void* allocate_aligned(std::size_t bytes) { return ::operator new (bytes, std::align_val_t{64}); }
void free_aligned(void* p) { ::operator delete (p, std::align_val_t{64}); }

// Set when the calling thread's buffer has been destroyed: a trivially destructible thread_local,
// so it stays readable during the rest of the thread's exit.
thread_local bool thread_buffer_gone = false;

struct ThreadBuffer {
  void* data = nullptr;
  std::size_t size = 0;
  ~ThreadBuffer() {
    free_aligned(data);
    data = nullptr;
    size = 0;
    thread_buffer_gone = true;
  }
};
thread_local ThreadBuffer thread_buffer;

}  // namespace

Scratchpad::Scratchpad(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 64);
  if (thread_buffer_gone) {
    data_ = allocate_aligned(bytes);
    owned_ = true;
    return;
  }
  ThreadBuffer& b = thread_buffer;
  if (b.size < bytes) {
    free_aligned(b.data);
    b.data = nullptr;
    b.size = 0;
    b.data = allocate_aligned(bytes);
    b.size = bytes;
  }
  data_ = b.data;
}

Scratchpad::~Scratchpad() {
  if (owned_) free_aligned(data_);
}

void configure_onednn_jit_profiling() {
  if (!std::getenv("ONEDNN_JIT_PROFILE") && !std::getenv("DNNL_JIT_PROFILE"))
    dnnl_set_jit_profiling_flags(DNNL_JIT_PROFILE_NONE);
}

}  // namespace streamfuse::backends::cpu

#include "backends/cpu/onednn_support.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <tuple>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/kernels/parallel.h"
#include "core/float16.h"

namespace streamfuse::backends::cpu {

namespace {

void* allocate_aligned_raw(std::size_t bytes) {
  return ::operator new (bytes, std::align_val_t{64});
}
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

// The buffer make_scratchpad_ahead made, until a thread takes it.
struct SpareBuffer {
  std::mutex mutex;
  void* data = nullptr;
  std::size_t size = 0;
  ~SpareBuffer() { free_aligned(data); }
};
SpareBuffer& spare_buffer() {
  static SpareBuffer spare;
  return spare;
}

// The spare buffer if it holds `bytes`, else a new one (untouched).
std::pair<void*, std::size_t> take_buffer(std::size_t bytes) {
  SpareBuffer& spare = spare_buffer();
  {
    std::lock_guard lock(spare.mutex);
    if (spare.data && spare.size >= bytes) {
      const std::pair<void*, std::size_t> taken{spare.data, spare.size};
      spare.data = nullptr;
      spare.size = 0;
      return taken;
    }
  }
  return {allocate_aligned_raw(bytes), bytes};
}

}  // namespace

std::size_t scratchpad_ahead_bytes() {
  SpareBuffer& spare = spare_buffer();
  std::lock_guard lock(spare.mutex);
  return spare.size;
}

void make_scratchpad_ahead(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 64);
  SpareBuffer& spare = spare_buffer();
  {
    std::lock_guard lock(spare.mutex);
    if (spare.size >= bytes) return;
  }
  void* data = allocate_aligned_raw(bytes);
  std::memset(data, 0, bytes);  // its pages faulted in here, not in a product's first run
  std::lock_guard lock(spare.mutex);
  if (spare.size >= bytes) {  // another thread made a large enough one meanwhile
    free_aligned(data);
    return;
  }
  free_aligned(spare.data);
  spare.data = data;
  spare.size = bytes;
}

Scratchpad::Scratchpad(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 64);
  if (thread_buffer_gone) {
    data_ = allocate_aligned_raw(bytes);
    owned_ = true;
    return;
  }
  ThreadBuffer& b = thread_buffer;
  if (b.size < bytes) {
    free_aligned(b.data);
    b.data = nullptr;
    b.size = 0;
    std::tie(b.data, b.size) = take_buffer(bytes);
  }
  data_ = b.data;
}

Scratchpad::~Scratchpad() {
  if (owned_) free_aligned(data_);
}

void AlignedDelete::operator()(void* p) const { free_aligned(p); }

AlignedBuffer allocate_aligned(std::size_t bytes) {
  return AlignedBuffer(allocate_aligned_raw(std::max<std::size_t>(bytes, 64)));
}

void round_f32_results(DType dtype, const float* src, void* dst, std::int64_t n, int num_threads) {
  auto* d = static_cast<std::uint16_t*>(dst);
  parallel_for(n, 16384, num_threads, [&](std::int64_t begin, std::int64_t end) {
    if (dtype == kF16) {
      for (std::int64_t i = begin; i < end; ++i) d[i] = core::float_to_half_bits(src[i]);
    } else {
      for (std::int64_t i = begin; i < end; ++i) d[i] = core::float_to_bf16_bits(src[i]);
    }
  });
}

void configure_onednn_jit_profiling() {
  if (!std::getenv("ONEDNN_JIT_PROFILE") && !std::getenv("DNNL_JIT_PROFILE"))
    dnnl_set_jit_profiling_flags(DNNL_JIT_PROFILE_NONE);
}

}  // namespace streamfuse::backends::cpu

#include "tests/backends/cuda/emulator/emulated_context.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "tests/backends/cuda/emulator/emulated_memory.h"
#include "tests/backends/cuda/emulator/emulated_streams.h"

namespace streamfuse::backends::cuda::emulator {
namespace {

struct State {
  std::once_flag once;
  CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
  std::atomic<bool> initialized{false};  // set once init_result is CUDA_SUCCESS
  DeviceConfig config;
  std::mutex mutex;  // guards the primary context's count
  int primary_refs = 0;
};

State& state() {
  static State* s = new State;  // never destroyed: worker threads may call in during exit
  return *s;
}

// The primary context's handle: an address no other object has.
CUcontext primary_handle() {
  static char tag;
  return reinterpret_cast<CUcontext>(&tag);
}

thread_local CUcontext current_context = nullptr;

// A positive integer from the environment variable `name`, or `fallback` when unset; false (with
// a message) when it is set to something else.
bool read_positive(const char* name, unsigned long long fallback, unsigned long long& out) {
  const char* text = std::getenv(name);
  if (!text || !*text) {
    out = fallback;
    return true;
  }
  char* end = nullptr;
  out = std::strtoull(text, &end, 10);
  if (*end == '\0' && out > 0) return true;
  std::fprintf(stderr, "streamfuse CUDA emulator: %s=\"%s\" is not a positive integer\n", name,
               text);
  return false;
}

CUresult read_config(DeviceConfig& c) {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      visible && (!*visible || *visible == '-'))
    return CUDA_ERROR_NO_DEVICE;
  unsigned long long arch = 0, bytes = 0;
  if (!read_positive("SF_EMU_ARCH", 90, arch) ||
      !read_positive("SF_EMU_MEMORY_BYTES", std::size_t{1} << 30, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  if (arch < 10 || arch > 999) {
    std::fprintf(stderr, "streamfuse CUDA emulator: SF_EMU_ARCH=%llu is not major*10+minor\n",
                 arch);
    return CUDA_ERROR_INVALID_VALUE;
  }
  c.arch = static_cast<int>(arch);
  c.memory_bytes = bytes;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult initialize() {
  State& s = state();
  std::call_once(s.once, [&] {
    s.init_result = read_config(s.config);
    if (s.init_result == CUDA_SUCCESS) s.initialized.store(true, std::memory_order_release);
  });
  return s.init_result;
}

CUresult check_initialized() {
  return state().initialized.load(std::memory_order_acquire) ? CUDA_SUCCESS
                                                             : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult check_device(CUdevice device) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

const DeviceConfig& config() { return state().config; }

CUresult retain_primary(CUcontext* context) {
  if (!context) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mutex);
  ++s.primary_refs;
  *context = primary_handle();
  return CUDA_SUCCESS;
}

CUresult release_primary() {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (s.primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--s.primary_refs > 0) return CUDA_SUCCESS;
  }
  // The last reference: the driver destroys the context, which waits for its work first.
  synchronize_streams(false);
  free_all_device_memory();
  return CUDA_SUCCESS;
}

CUresult set_current(CUcontext context) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (context && context != primary_handle()) return CUDA_ERROR_INVALID_CONTEXT;
  current_context = context;
  return CUDA_SUCCESS;
}

CUcontext current() { return current_context; }

CUresult check_current() {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (!current_context) return CUDA_ERROR_INVALID_CONTEXT;
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.primary_refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

}  // namespace streamfuse::backends::cuda::emulator

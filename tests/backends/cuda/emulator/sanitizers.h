// Which sanitizer this code is compiled under, and ThreadSanitizer's happens-before annotations
// (no-ops without it). The emulated driver tells TSan about the ordering its fibers create, and
// the emulated NVRTC instruments kernels for the sanitizer the driver runs under.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SF_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SF_EMU_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define SF_EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SF_EMU_TSAN 1
#endif
#endif

#ifdef SF_EMU_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace streamfuse::backends::cuda::emulator {

// Everything the calling thread or fiber did before release(a) happens before what another does
// after a later acquire(a).
inline void tsan_release(void* a) {
#ifdef SF_EMU_TSAN
  __tsan_release(a);
#else
  (void)a;
#endif
}
inline void tsan_acquire(void* a) {
#ifdef SF_EMU_TSAN
  __tsan_acquire(a);
#else
  (void)a;
#endif
}

}  // namespace streamfuse::backends::cuda::emulator

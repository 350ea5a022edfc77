// The CUDA driver API table: why it is unavailable (no driver, a missing file, a library that is
// not a driver, a driver too old, cuInit failing), said the same way every time; check()'s
// message; and, on a machine with a GPU, the entry points doing real work: memory through pinned
// buffers, streams timed and ordered by events.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "backends/cuda/devices.h"
#include "backends/cuda/driver_api.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string require_message(const std::string& what) {
  try {
    Driver::require(what);
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "require() did not throw";
}

TEST(CudaDriver, WithoutADriverRequireSaysWhyTheSameWayEachTime) {
  if (Driver::get()) GTEST_SKIP() << "a CUDA driver is loaded on this machine";
  const std::string first = require_message("use cuda:0");
  EXPECT_TRUE(contains(first, "cuda: cannot use cuda:0: libcuda.so.1")) << first;
  EXPECT_EQ(require_message("use cuda:0"), first);
  EXPECT_TRUE(contains(first, Driver::unavailable_reason())) << first;
  EXPECT_EQ(Driver::get(), nullptr);
}

TEST(CudaDriver, WithADriverItIsInitializedAndNewEnough) {
  const Driver* d = Driver::get();
  if (!d) GTEST_SKIP() << Driver::unavailable_reason();
  EXPECT_TRUE(Driver::unavailable_reason().empty());
  EXPECT_EQ(&Driver::require("use cuda:0"), d);
  EXPECT_GE(d->version, CUDA_VERSION / 1000 * 1000);
  int version = 0;
  d->check(d->driver_get_version(&version), "cuDriverGetVersion");
  EXPECT_EQ(version, d->version);
}

TEST(CudaDriver, CheckNamesTheCallAndTheDriversError) {
  // A table of two entry points is enough for check() and describe().
  Driver d{};
  d.get_error_name = [](CUresult r, const char** s) {
    *s = r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : nullptr;
    return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  };
  d.get_error_string = [](CUresult, const char** s) {
    *s = "out of memory";
    return CUDA_SUCCESS;
  };
  EXPECT_NO_THROW(d.check(CUDA_SUCCESS, "cuMemAlloc"));
  try {
    d.check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc of 1048576 bytes");
    ADD_FAILURE() << "check() did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "cuda: cuMemAlloc of 1048576 bytes failed: CUDA_ERROR_OUT_OF_MEMORY (out of "
                 "memory)");
  }
  EXPECT_EQ(d.describe(static_cast<CUresult>(12345)), "CUresult 12345");
}

// The driver loads once per process, so each library is tried in a process of its own: a death
// test in the "threadsafe" style runs this binary again for the one test, where nothing has
// loaded yet. The child sets the environment, prints require()'s message, and exits 0 when get()
// agrees that there is no driver.
void expect_reason(const char* library, const char* fake_version, const std::string& pattern) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("STREAMFUSE_CUDA_DRIVER", library, 1);
        setenv("SF_FAKE_CUDA_VERSION", fake_version, 1);
        std::fputs(require_message("use cuda:0").c_str(), stderr);
        std::exit(Driver::get() == nullptr ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), pattern);
}

// The stand-in driver: where the build put it, or $SF_TEST_FAKE_DRIVER (tools/gpu-check runs a
// build made elsewhere, from another folder).
const char* fake_driver() {
  const char* moved = std::getenv("SF_TEST_FAKE_DRIVER");
  return moved && *moved ? moved : STREAMFUSE_TEST_FAKE_DRIVER;
}

TEST(CudaDriverOverride, AMissingFileIsNamed) {
  expect_reason("/nonexistent/libcuda.so.1", "0",
                "cuda: cannot use cuda:0: /nonexistent/libcuda.so.1 could not be loaded "
                "\\(/nonexistent/libcuda.so.1: cannot open shared object file");
}

TEST(CudaDriverOverride, ALibraryThatIsNotADriverNamesTheMissingEntryPoint) {
  expect_reason("libm.so.6", "0", "libm.so.6 lacks the entry point cuDriverGetVersion");
}

TEST(CudaDriverOverride, AnOldDriverSaysWhichVersionItSupportsAndWhichIsNeeded) {
  expect_reason(fake_driver(), "12040",
                "supports CUDA 12.4, older than the " + std::to_string(CUDA_VERSION / 1000) +
                    ".0 this build's kernels need; update the NVIDIA driver");
}

TEST(CudaDriverOverride, AFailingCuInitGivesTheDriversError) {
  expect_reason(fake_driver(), std::to_string(CUDA_VERSION).c_str(),
                "cuInit failed in .*: CUDA_ERROR_NO_DEVICE \\(no CUDA-capable device is "
                "detected\\); check that nvidia-smi lists a GPU");
}

// ---- with a GPU -------------------------------------------------------------------------------

// cuda:0's primary context, current on the test's thread.
class CudaDevice0 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() == 0)
      GTEST_SKIP() << "no CUDA device: "
                   << (Driver::get() ? "the driver sees none" : Driver::unavailable_reason());
    d_ = Driver::get();
    d_->check(d_->device_get(&device_, 0), "cuDeviceGet");
    d_->check(d_->device_primary_ctx_retain(&context_, device_), "cuDevicePrimaryCtxRetain");
    d_->check(d_->ctx_set_current(context_), "cuCtxSetCurrent");
  }
  void TearDown() override {
    if (!context_) return;
    d_->ctx_set_current(nullptr);
    d_->device_primary_ctx_release(device_);
  }

  const Driver* d_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

TEST_F(CudaDevice0, CheckNamesTheDriversError) {
  CUcontext current = nullptr;
  d_->check(d_->ctx_get_current(&current), "cuCtxGetCurrent");
  EXPECT_EQ(current, context_);
  CUdevice dev = 0;
  try {
    d_->check(d_->device_get(&dev, device_count()), "cuDeviceGet");
    ADD_FAILURE() << "cuDeviceGet accepted an ordinal past the last device";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cuda: cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE ("))
        << e.what();
  }
}

// 1 MiB filled with 0xA5, its first half overwritten from the host, copied to a second buffer on
// the device, and read back through pinned memory: every byte is where it should be.
TEST_F(CudaDevice0, MemoryRoundTripsThroughPinnedBuffers) {
  constexpr std::size_t kBytes = std::size_t{1} << 20, kHalf = kBytes / 2;
  std::size_t free_bytes = 0, total_bytes = 0;
  d_->check(d_->mem_get_info(&free_bytes, &total_bytes), "cuMemGetInfo");
  EXPECT_GT(total_bytes, 0u);
  EXPECT_LE(free_bytes, total_bytes);

  CUstream stream = nullptr;
  d_->check(d_->stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUdeviceptr a = 0, b = 0;
  d_->check(d_->mem_alloc(&a, kBytes), "cuMemAlloc");
  d_->check(d_->mem_alloc(&b, kBytes), "cuMemAlloc");
  void* up = nullptr;
  void* down = nullptr;
  d_->check(d_->mem_alloc_host(&up, kHalf), "cuMemAllocHost");
  d_->check(d_->mem_alloc_host(&down, kBytes), "cuMemAllocHost");
  auto* up_bytes = static_cast<unsigned char*>(up);
  auto* down_bytes = static_cast<unsigned char*>(down);
  for (std::size_t i = 0; i < kHalf; ++i) up_bytes[i] = static_cast<unsigned char>(i * 131 + 7);

  d_->check(d_->memset_d8_async(a, 0xA5, kBytes, stream), "cuMemsetD8Async");
  d_->check(d_->memcpy_htod_async(a, up, kHalf, stream), "cuMemcpyHtoDAsync");
  d_->check(d_->memcpy_dtod_async(b, a, kBytes, stream), "cuMemcpyDtoDAsync");
  d_->check(d_->memcpy_dtoh_async(down, b, kBytes, stream), "cuMemcpyDtoHAsync");
  d_->check(d_->stream_synchronize(stream), "cuStreamSynchronize");

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kBytes; ++i)
    wrong += down_bytes[i] != (i < kHalf ? up_bytes[i] : 0xA5);
  EXPECT_EQ(wrong, 0u);

  d_->check(d_->mem_free_host(down), "cuMemFreeHost");
  d_->check(d_->mem_free_host(up), "cuMemFreeHost");
  d_->check(d_->mem_free(b), "cuMemFree");
  d_->check(d_->mem_free(a), "cuMemFree");
  d_->check(d_->stream_destroy(stream), "cuStreamDestroy");
  d_->check(d_->ctx_synchronize(), "cuCtxSynchronize");
}

// Two events around nothing on one stream time a short, non-negative interval; a second stream
// that waits on the later one is done only after it.
TEST_F(CudaDevice0, EventsTimeAnEmptyStreamAndOrderAnother) {
  CUstream timed = nullptr, waiting = nullptr;
  d_->check(d_->stream_create(&timed, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  d_->check(d_->stream_create(&waiting, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUevent start = nullptr, stop = nullptr;
  d_->check(d_->event_create(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  d_->check(d_->event_create(&stop, CU_EVENT_DEFAULT), "cuEventCreate");

  d_->check(d_->event_record(start, timed), "cuEventRecord");
  d_->check(d_->event_record(stop, timed), "cuEventRecord");
  d_->check(d_->stream_wait_event(waiting, stop, 0), "cuStreamWaitEvent");
  d_->check(d_->stream_synchronize(waiting), "cuStreamSynchronize");
  EXPECT_EQ(d_->event_query(stop), CUDA_SUCCESS);
  d_->check(d_->event_synchronize(stop), "cuEventSynchronize");
  float ms = -1.0f;
  d_->check(d_->event_elapsed_time(&ms, start, stop), "cuEventElapsedTime");
  EXPECT_GE(ms, 0.0f);
  EXPECT_LT(ms, 1000.0f);
  EXPECT_EQ(d_->stream_query(timed), CUDA_SUCCESS);
  EXPECT_EQ(d_->stream_query(waiting), CUDA_SUCCESS);

  d_->check(d_->event_destroy(stop), "cuEventDestroy");
  d_->check(d_->event_destroy(start), "cuEventDestroy");
  d_->check(d_->stream_destroy(waiting), "cuStreamDestroy");
  d_->check(d_->stream_destroy(timed), "cuStreamDestroy");
}

}  // namespace
}  // namespace streamfuse::backends::cuda

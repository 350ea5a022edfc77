// The emulated driver through the library's own loaders (Driver::get, DeviceContext,
// DeviceMemory): the device and its properties, contexts, memory and its capacity, copies and
// events. Kernels, streams running them and the emulated NVRTC: emulator_kernels_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/devices.h"
#include "streamfuse/error.h"
#include "tests/backends/cuda/emulator/emulator_test_support.h"

namespace streamfuse::backends::cuda::emulator::testing {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

TEST(EmulatedDriver, LoadsAsTheLibrarysDriverAndEnumeratesOneDevice) {
  ASSERT_NE(Driver::get(), nullptr) << Driver::unavailable_reason();
  EXPECT_EQ(Driver::get()->version, CUDA_VERSION);
  EXPECT_EQ(device_count(), 1);
  const DeviceProperties p = properties(0);
  EXPECT_EQ(p.name, "streamfuse emulated GPU");
  EXPECT_EQ(p.major * 10 + p.minor, env_int("SF_EMU_ARCH", 90));
  EXPECT_EQ(p.total_memory, kTestMemoryBytes);
  EXPECT_EQ(p.multiprocessors, 4);
  EXPECT_EQ(p.max_threads_per_block, 1024);
  EXPECT_EQ(arch_name(p), "sm_" + std::to_string(env_int("SF_EMU_ARCH", 90)));
  EXPECT_THROW(properties(1), DeviceError);
  EXPECT_EQ(Driver::get()->describe(CUDA_ERROR_OUT_OF_MEMORY),
            "CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
}

TEST_F(EmulatorTest, AnswersEveryDeviceAttributeAndRefusesUnknownOnes) {
  int value = -1;
  for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; ++a)
    EXPECT_EQ(d().device_get_attribute(&value, static_cast<CUdevice_attribute>(a), 0), CUDA_SUCCESS)
        << a;
  EXPECT_EQ(d().device_get_attribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), CUDA_SUCCESS);
  EXPECT_EQ(value, 32);
  EXPECT_EQ(d().device_get_attribute(&value, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d().device_get_attribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1),
            CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(EmulatorTest, CallsThatNeedAContextFailWithoutACurrentOne) {
  std::thread([&] {
    CUdeviceptr p = 0;
    EXPECT_EQ(d().mem_alloc(&p, 256), CUDA_ERROR_INVALID_CONTEXT);
    CUstream s = nullptr;
    EXPECT_EQ(d().stream_create(&s, CU_STREAM_NON_BLOCKING), CUDA_ERROR_INVALID_CONTEXT);
    device_->make_current();
    ASSERT_EQ(d().mem_alloc(&p, 256), CUDA_SUCCESS);
    EXPECT_EQ(d().mem_free(p), CUDA_SUCCESS);
  }).join();
}

TEST_F(EmulatorTest, DeviceMemoryIsAlignedHostMemoryAndFreeRefusesUnknownPointers) {
  CUdeviceptr p = 0;
  ASSERT_EQ(d().mem_alloc(&p, 1000), CUDA_SUCCESS);
  EXPECT_EQ(p % 256, 0u);
  // Never written: garbage (all ones), not zeros, as a GPU's fresh memory may be.
  EXPECT_EQ(reinterpret_cast<unsigned char*>(p)[999], 0xff);
  std::memset(reinterpret_cast<void*>(p), 0, 1000);  // the host may touch it: it is host memory
  EXPECT_EQ(d().mem_free(p + 256), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d().mem_free(p), CUDA_SUCCESS);
  EXPECT_EQ(d().mem_free(p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d().mem_alloc(&p, 0), CUDA_ERROR_INVALID_VALUE);

  void* host = nullptr;
  ASSERT_EQ(d().mem_alloc_host(&host, 4096), CUDA_SUCCESS);
  std::memset(host, 1, 4096);
  EXPECT_EQ(d().mem_free_host(static_cast<char*>(host) + 8), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d().mem_free_host(host), CUDA_SUCCESS);
}

TEST_F(EmulatorTest, AllocationsBeyondTheDeviceCapacityRunOutOfMemory) {
  std::size_t free = 0, total = 0;
  ASSERT_EQ(d().mem_get_info(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, kTestMemoryBytes);
  EXPECT_EQ(free, total);
  CUdeviceptr half = 0, more = 0;
  ASSERT_EQ(d().mem_alloc(&half, total / 2), CUDA_SUCCESS);
  EXPECT_EQ(d().mem_alloc(&more, total / 2 + 256), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(d().mem_get_info(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(free, total / 2);

  // The library's memory source reports exhaustion as nullptr, the signal its caching
  // allocator acts on.
  DeviceMemory memory(device_);
  EXPECT_EQ(memory.allocate(total), nullptr);
  void* p = memory.allocate(total / 4);
  EXPECT_NE(p, nullptr);
  memory.free(p, total / 4);
  EXPECT_EQ(d().mem_free(half), CUDA_SUCCESS);
  EXPECT_EQ(d().mem_alloc(&more, total / 2 + 256), CUDA_SUCCESS);
  EXPECT_EQ(d().mem_free(more), CUDA_SUCCESS);
}

TEST_F(EmulatorTest, CopiesAndFillsRunInStreamOrderAndRefuseRangesOutsideAllocations) {
  CUstream s = stream();
  std::vector<int> in(1000), out(1000, -1);
  std::iota(in.begin(), in.end(), 0);
  int* a = buffer<int>(4000);
  int* b = buffer<int>(4000);
  ASSERT_EQ(d().memcpy_htod_async(address(a), in.data(), 4000, s), CUDA_SUCCESS);
  ASSERT_EQ(d().memcpy_dtod_async(address(b), address(a), 4000, s), CUDA_SUCCESS);
  ASSERT_EQ(d().memset_d8_async(address(b), 0, 40, s), CUDA_SUCCESS);
  ASSERT_EQ(d().memcpy_dtoh_async(out.data(), address(b), 4000, s), CUDA_SUCCESS);
  ASSERT_EQ(d().stream_synchronize(s), CUDA_SUCCESS);
  for (int k = 0; k < 1000; ++k) ASSERT_EQ(out[static_cast<std::size_t>(k)], k < 10 ? 0 : k);

  EXPECT_EQ(d().memcpy_htod_async(address(a) + 3900, in.data(), 200, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d().memcpy_dtoh_async(out.data(), address(in.data()), 4, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d().memset_d8_async(address(a) + 4000, 0, 1, s), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(EmulatorTest, EventsReportCompletionAndElapsedTime) {
  CUstream s = stream();
  CUevent start = event(), end = event(), untimed = event(CU_EVENT_DISABLE_TIMING);
  float ms = -1;
  EXPECT_EQ(d().event_elapsed_time(&ms, start, end), CUDA_ERROR_INVALID_HANDLE);  // unrecorded
  EXPECT_EQ(d().event_query(start), CUDA_SUCCESS);  // nothing recorded: nothing to wait for
  ASSERT_EQ(d().event_record(start, s), CUDA_SUCCESS);
  ASSERT_EQ(d().event_record(end, s), CUDA_SUCCESS);
  ASSERT_EQ(d().event_record(untimed, s), CUDA_SUCCESS);
  ASSERT_EQ(d().event_synchronize(end), CUDA_SUCCESS);
  EXPECT_EQ(d().event_query(start), CUDA_SUCCESS);
  ASSERT_EQ(d().event_elapsed_time(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(d().event_elapsed_time(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(d().stream_synchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(d().stream_query(s), CUDA_SUCCESS);
}

TEST_F(EmulatorTest, DestroyedHandlesAreRefused) {
  CUstream s = nullptr;
  ASSERT_EQ(d().stream_create(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(d().stream_destroy(s), CUDA_SUCCESS);
  EXPECT_EQ(d().stream_query(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(d().stream_synchronize(s), CUDA_ERROR_INVALID_HANDLE);
  CUevent e = nullptr;
  ASSERT_EQ(d().event_create(&e, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(d().event_destroy(e), CUDA_SUCCESS);
  EXPECT_EQ(d().event_record(e, stream()), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(EmulatorTest, ReleasingThePrimaryContextForGoodResetsIt) {
  // Another reference: releasing it leaves the context as it was.
  CUcontext context = nullptr;
  ASSERT_EQ(d().device_primary_ctx_retain(&context, 0), CUDA_SUCCESS);
  EXPECT_EQ(context, device_->context());
  ASSERT_EQ(d().device_primary_ctx_release(0), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(d().mem_alloc(&p, 256), CUDA_SUCCESS);

  // The last one: the context is reset, its memory gone, and it must be retained again.
  const Driver& driver = d();
  device_.reset();
  EXPECT_EQ(driver.mem_free(p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(driver.mem_alloc(&p, 256), CUDA_ERROR_INVALID_CONTEXT);
  device_ = DeviceContext::open(0);
  EXPECT_EQ(driver.mem_alloc(&p, 256), CUDA_SUCCESS);
  EXPECT_EQ(driver.mem_free(p), CUDA_SUCCESS);
}

}  // namespace
}  // namespace streamfuse::backends::cuda::emulator::testing

// What the emulator's tests share: the emulation's environment, set before anything loads the
// driver (unless the test's environment names one already), and a fixture with the device, its
// streams and buffers, and kernels compiled through the library's NVRTC loader and loaded through
// its driver table, all released after each test.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/context.h"
#include "backends/cuda/driver_api.h"
#include "jit/cuda_codegen.h"
#include "jit/nvrtc.h"

namespace streamfuse::backends::cuda::emulator::testing {

// 64 MiB of device memory: enough for every test, little enough to exhaust cheaply.
inline constexpr std::size_t kTestMemoryBytes = std::size_t{64} << 20;

inline const bool kEmulationEnvironment = [] {
  setenv("STREAMFUSE_CUDA_DRIVER", SF_EMU_TEST_DRIVER, 0);
  setenv("STREAMFUSE_NVRTC", SF_EMU_TEST_NVRTC, 0);
  setenv("SF_EMU_MEMORY_BYTES", std::to_string(kTestMemoryBytes).c_str(), 0);
  return true;
}();

class EmulatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(Driver::get(), nullptr) << Driver::unavailable_reason();
    device_ = DeviceContext::open(0);
    ASSERT_EQ(device_->properties().name, "streamfuse emulated GPU")
        << "STREAMFUSE_CUDA_DRIVER names another driver than the emulator";
    device_->make_current();
  }

  void TearDown() override {
    if (!device_) return;
    device_->make_current();
    for (CUstream s : streams_) EXPECT_EQ(d().stream_synchronize(s), CUDA_SUCCESS);
    for (CUstream s : streams_) d().stream_destroy(s);
    for (CUevent e : events_) d().event_destroy(e);
    for (CUdeviceptr p : buffers_) d().mem_free(p);
    for (CUmodule m : modules_) d().module_unload(m);
  }

  const Driver& d() const { return device_->driver(); }

  CUstream stream(unsigned flags = CU_STREAM_NON_BLOCKING) {
    CUstream s = nullptr;
    EXPECT_EQ(d().stream_create(&s, flags), CUDA_SUCCESS);
    streams_.push_back(s);
    return s;
  }

  CUevent event(unsigned flags = CU_EVENT_DEFAULT) {
    CUevent e = nullptr;
    EXPECT_EQ(d().event_create(&e, flags), CUDA_SUCCESS);
    events_.push_back(e);
    return e;
  }

  // `bytes` of device memory, freed after the test; its address is a host address.
  template <class T = unsigned char>
  T* buffer(std::size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(d().mem_alloc(&p, bytes), CUDA_SUCCESS);
    buffers_.push_back(p);
    return reinterpret_cast<T*>(p);
  }

  // `source` compiled for the device with the options generated kernels get, and loaded.
  CUmodule load(const std::string& source, bool ptx = false) {
    const jit::NvrtcOutput out =
        jit::Nvrtc::require().compile(source, "emulator_test", device_->arch(), ptx, options());
    CUmodule m = nullptr;
    EXPECT_EQ(d().module_load_data_ex(&m, out.image.data(), 0, nullptr, nullptr), CUDA_SUCCESS);
    if (m) modules_.push_back(m);
    return m;
  }

  CUfunction function(CUmodule m, const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(d().module_get_function(&f, m, name), CUDA_SUCCESS) << name;
    return f;
  }

  // Launches `f` with its one parameter `args` on `stream`.
  template <class Args>
  CUresult launch(CUfunction f, unsigned blocks, unsigned threads, CUstream s, const Args& args) {
    void* params[] = {const_cast<Args*>(&args)};
    return d().launch_kernel(f, blocks, 1, 1, threads, 1, 1, 0, s, params, nullptr);
  }

  static std::vector<std::string> options() {
    std::vector<std::string> o;
    for (const char* option : jit::cuda_kernel_options()) o.emplace_back(option);
    return o;
  }

  static CUdeviceptr address(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

  std::shared_ptr<DeviceContext> device_;
  std::vector<CUstream> streams_;
  std::vector<CUevent> events_;
  std::vector<CUdeviceptr> buffers_;
  std::vector<CUmodule> modules_;
};

}  // namespace streamfuse::backends::cuda::emulator::testing

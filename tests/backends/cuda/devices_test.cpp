// CUDA device enumeration: no devices and a clear DeviceError without a driver; with a GPU, every
// device's properties are those of a GPU this backend supports, and a bad ordinal is named.
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/devices.h"
#include "backends/cuda/driver_api.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string properties_message(int ordinal) {
  try {
    properties(ordinal);
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "properties() did not throw";
}

TEST(CudaDevices, ArchNameIsSmAndTheComputeCapability) {
  const auto arch = [](int major, int minor) {
    DeviceProperties p;
    p.major = major;
    p.minor = minor;
    return arch_name(p);
  };
  EXPECT_EQ(arch(9, 0), "sm_90");
  EXPECT_EQ(arch(8, 6), "sm_86");
  EXPECT_EQ(arch(12, 0), "sm_120");
}

TEST(CudaDevices, WithoutADriverThereAreNoneAndUsingOneSaysWhy) {
  if (Driver::get()) GTEST_SKIP() << "a CUDA driver is loaded on this machine";
  EXPECT_EQ(device_count(), 0);
  const std::string message = properties_message(0);
  EXPECT_TRUE(contains(message, "cuda:0")) << message;
  EXPECT_TRUE(contains(message, Driver::unavailable_reason())) << message;
}

TEST(CudaDevices, EveryDeviceLooksLikeASupportedGpu) {
  const int count = device_count();
  if (count == 0) GTEST_SKIP() << "no CUDA device";
  for (int i = 0; i < count; ++i) {
    const DeviceProperties p = properties(i);
    SCOPED_TRACE("cuda:" + std::to_string(i) + " " + p.name + " " + arch_name(p));
    EXPECT_FALSE(p.name.empty());
    EXPECT_GE(p.major, 7);  // CUDA 13 runs on Turing (7.5) and newer
    EXPECT_GE(p.minor, 0);
    EXPECT_GT(p.total_memory, std::size_t{1} << 30);
    EXPECT_GT(p.multiprocessors, 0);
    EXPECT_EQ(p.max_threads_per_block, 1024);
  }
}

TEST(CudaDevices, AnOrdinalPastTheLastNamesItAndTheCount) {
  const int count = device_count();
  if (count == 0) GTEST_SKIP() << "no CUDA device";
  const std::string past = properties_message(count);
  EXPECT_TRUE(contains(past, "there is no cuda:" + std::to_string(count))) << past;
  EXPECT_TRUE(contains(past, "this machine has " + std::to_string(count) + " CUDA device")) << past;
  EXPECT_TRUE(contains(properties_message(-1), "there is no cuda:-1"));
}

}  // namespace
}  // namespace streamfuse::backends::cuda

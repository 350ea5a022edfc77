// The cuBLAS table: the installed library loads without a GPU and every entry point resolves;
// check() and describe() name the status; an unusable library is reported with the reason (CTest
// runs those cases as processes of their own, STREAMFUSE_CUBLAS set).
#include "backends/cuda/cublas_api.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends/cuda/driver_api.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The cases below that load a library are about the installed one.
const Cublas* installed() {
  if (const char* v = std::getenv("STREAMFUSE_CUBLAS"); v && *v) return nullptr;
  return Cublas::get();
}

TEST(Cublas, TheInstalledLibraryLoadsWithoutAGpuAndResolvesEveryEntryPoint) {
  const Cublas* c = installed();
  if (!c) GTEST_SKIP() << "no cuBLAS installed: " << Cublas::unavailable_reason();
  EXPECT_TRUE(Cublas::unavailable_reason().empty());
  EXPECT_EQ(&Cublas::require("run a matmul"), c);
  EXPECT_EQ(c->library, "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
  EXPECT_NE(c->create, nullptr);
  EXPECT_NE(c->destroy, nullptr);
  EXPECT_NE(c->set_stream, nullptr);
  EXPECT_NE(c->set_math_mode, nullptr);
  EXPECT_NE(c->gemm_ex, nullptr);
  EXPECT_NE(c->gemm_strided_batched_ex, nullptr);
  EXPECT_NE(c->get_status_name, nullptr);
  EXPECT_NE(c->get_status_string, nullptr);
}

TEST(Cublas, TheInstalledLibraryNamesItsStatuses) {
  const Cublas* c = installed();
  if (!c) GTEST_SKIP() << "no cuBLAS installed: " << Cublas::unavailable_reason();
  EXPECT_EQ(c->describe(CUBLAS_STATUS_NOT_SUPPORTED),
            "CUBLAS_STATUS_NOT_SUPPORTED (the requested functionality is not supported)");
  EXPECT_EQ(c->describe(static_cast<cublasStatus_t>(12345)), "cublasStatus_t 12345");
}

// Without a driver cuBLAS loads but cannot make a handle: the failure is an Error naming the call
// and the status, not a crash.
TEST(Cublas, WithoutADriverCreatingAHandleFailsWithANamedStatus) {
  const Cublas* c = installed();
  if (!c) GTEST_SKIP() << "no cuBLAS installed: " << Cublas::unavailable_reason();
  if (Driver::get()) GTEST_SKIP() << "a CUDA driver is loaded on this machine";
  cublasHandle_t handle = nullptr;
  const cublasStatus_t status = c->create(&handle);
  if (status == CUBLAS_STATUS_SUCCESS) {
    c->destroy(handle);
    GTEST_SKIP() << "cuBLAS made a handle: this machine has a driver the loader did not find";
  }
  try {
    c->check(status, "cublasCreate_v2");
    ADD_FAILURE() << "check() did not throw";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cublasCreate_v2 failed: CUBLAS_STATUS_")) << e.what();
  }
}

TEST(Cublas, CheckNamesTheCallAndTheStatus) {
  // A table of the two naming entry points is enough for check() and describe().
  Cublas c{};
  c.get_status_name = [](cublasStatus_t s) {
    return s == CUBLAS_STATUS_EXECUTION_FAILED ? "CUBLAS_STATUS_EXECUTION_FAILED"
                                               : "unrecognized status";
  };
  c.get_status_string = [](cublasStatus_t) { return "the function failed to launch on the GPU"; };
  EXPECT_NO_THROW(c.check(CUBLAS_STATUS_SUCCESS, "cublasGemmEx_64"));
  try {
    c.check(CUBLAS_STATUS_EXECUTION_FAILED,
            "matmul of f32 operands [2, 3] and [3, 4]: cublasGemmEx");
    ADD_FAILURE() << "check() did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "matmul of f32 operands [2, 3] and [3, 4]: cublasGemmEx failed: "
                 "CUBLAS_STATUS_EXECUTION_FAILED (the function failed to launch on the GPU)");
  }
  EXPECT_EQ(c.describe(static_cast<cublasStatus_t>(99)), "cublasStatus_t 99");
  // A library without cublasGetStatusName: the number.
  c.get_status_name = nullptr;
  EXPECT_EQ(c.describe(CUBLAS_STATUS_EXECUTION_FAILED), "cublasStatus_t 13");
}

TEST(Cublas, GetAndRequireAgree) {
  if (Cublas::get()) {
    EXPECT_TRUE(Cublas::unavailable_reason().empty());
    EXPECT_EQ(&Cublas::require("run a matmul"), Cublas::get());
  } else {
    EXPECT_FALSE(Cublas::unavailable_reason().empty());
    EXPECT_THROW(Cublas::require("run a matmul"), DeviceError);
  }
}

// Run by CTest with STREAMFUSE_CUBLAS naming an unusable library and SF_EXPECT_CUBLAS_REASON a
// part of the reason expected.
TEST(CublasEnvironment, AnUnusableLibraryIsReportedWithTheReason) {
  const char* expected = std::getenv("SF_EXPECT_CUBLAS_REASON");
  if (!expected) GTEST_SKIP() << "run by CTest with STREAMFUSE_CUBLAS set";
  EXPECT_EQ(Cublas::get(), nullptr);
  const std::string& reason = Cublas::unavailable_reason();
  EXPECT_TRUE(contains(reason, expected)) << reason;
  try {
    Cublas::require("run a matmul on cuda:0");
    ADD_FAILURE() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "cuda: cannot run a matmul on cuda:0: " + reason);
  }
}

}  // namespace
}  // namespace streamfuse::backends::cuda

// The ISA level a test binary was compiled for (STREAMFUSE_ISA: v2, v3, v4, from
// cmake/CpuIsa.cmake's streamfuse_isa_variant; "native" without it), and whether this CPU runs
// its code. Header-only: each variant binary includes it with its own flags.
#pragma once

#include <string>

#include <gtest/gtest.h>

namespace streamfuse::testing {

#define SF_ISA_TEST_STR_(x) #x
#define SF_ISA_TEST_STR(x) SF_ISA_TEST_STR_(x)
#ifdef STREAMFUSE_ISA
inline constexpr const char* kIsa = SF_ISA_TEST_STR(STREAMFUSE_ISA);
#else
inline constexpr const char* kIsa = "native";
#endif

// Empty when this CPU runs code built for kIsa, else why not.
inline std::string missing_isa() {
  __builtin_cpu_init();
  const std::string isa = kIsa;
  if (isa == "v3" && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    return "CPU lacks AVX2/FMA (x86-64-v3)";
  if (isa == "v4" && !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")))
    return "CPU lacks AVX-512 F/BW/DQ/VL (x86-64-v4)";
  return "";
}

// Skips every test of a binary whose ISA level this CPU cannot run (register it once:
// ::testing::AddGlobalTestEnvironment(new IsaEnvironment)).
class IsaEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const std::string why = missing_isa();
    if (!why.empty()) GTEST_SKIP() << "built for " << kIsa << ": " << why;
  }
};

}  // namespace streamfuse::testing

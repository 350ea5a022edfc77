// The CUDA library kernels (arange, rand/randn, reductions, integer matmul) compile through NVRTC
// for sm_80 and sm_90 for every op kind and dtype the API can ask for, without warnings, and the
// argument structs the sources declare have the size of the host structs the launches pass.
// Running them needs a GPU, or the emulated one (tests/backends/cuda/emulator).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jit/cuda_codegen.h"
#include "jit/cuda_library_source.h"
#include "jit/nvrtc.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace {

using core::OpKind;

constexpr DType kAll[] = {kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64};
constexpr DType kFloats[] = {kF32, kF16, kBF16, kF64};

// The result dtype of a reduction, as the frontend decides it.
DType reduce_out(core::OpKind kind, DType in) {
  const bool fl = is_floating(in);
  switch (kind) {
    case core::OpKind::kSum:
      return fl ? in : kI64;
    case core::OpKind::kMean:
      return fl ? in : kF32;
    case core::OpKind::kArgmax:
      return kI64;
    default:
      return in;
  }
}

std::string size_check(const std::string& type, std::size_t bytes) {
  return "static_assert(sizeof(" + type + ") == " + std::to_string(bytes) + ", \"" + type +
         "\");\n";
}

std::string all_library_kernels() {
  std::string s = cuda_kernel_prelude();
  int n = 0;
  for (DType d : kAll) {
    for (bool integral : {false, true}) {
      const std::string name = "arange" + std::to_string(n++);
      s += cuda_arange_source(d, integral, name);
      s += size_check(name + "_args", sizeof(CudaArangeArgs));
    }
    for (core::OpKind k : {core::OpKind::kSum, core::OpKind::kMean, core::OpKind::kMax,
                           core::OpKind::kMin, core::OpKind::kArgmax}) {
      const std::string name = "reduce" + std::to_string(n++);
      s += cuda_reduce_source(k, d, reduce_out(k, d), name);
    }
  }
  s += size_check("sf_reduce_args", sizeof(CudaReduceArgs));
  for (DType d : kFloats)
    for (core::OpKind k : {core::OpKind::kRandUniform, core::OpKind::kRandNormal}) {
      const std::string name = "random" + std::to_string(n++);
      s += cuda_random_source(k, d, name);
      s += size_check(name + "_args", sizeof(CudaRandomArgs));
    }
  for (DType d : {kI32, kI64, kI8, kU8, kF64}) {
    const std::string name = "matmul" + std::to_string(n++);
    s += cuda_int_matmul_source(d, name);
    s += size_check(name + "_args", sizeof(CudaIntMatmulArgs));
  }
  for (core::OpKind k : {core::OpKind::kIndexSelect, core::OpKind::kGather})
    for (std::size_t bytes : {1, 2, 4, 8})
      for (DType index : {kI32, kI64}) {
        const std::string name = "index" + std::to_string(n++);
        s += cuda_index_source(k, bytes, index, name);
        s += size_check(name + "_args", sizeof(CudaIndexArgs));
      }
  for (DType d : kAll) {
    const std::string cumsum = "cumsum" + std::to_string(n++);
    s += cuda_scan_source(core::OpKind::kCumsum, d, is_floating(d) ? d : kI64, cumsum);
    s += size_check(cumsum + "_args", sizeof(CudaScanArgs));
    const std::string argsort = "argsort" + std::to_string(n++);
    s += cuda_scan_source(core::OpKind::kArgsort, d, kI64, argsort);
    s += size_check(argsort + "_args", sizeof(CudaScanArgs));
  }
  for (DType d : kAll)
    for (core::OpKind k : {core::OpKind::kScatter, core::OpKind::kScatterAdd})
      for (DType index : {kI32, kI64}) {
        if (k == core::OpKind::kScatterAdd && d == kBool) continue;
        const std::string name = "scatter" + std::to_string(n++);
        s += cuda_scatter_source(k, d, index, name);
        s += size_check(name + "_args", sizeof(CudaScatterArgs));
      }
  for (DType d : {kF32, kF16, kBF16})  // window ops take no f64 (api/window_ops.cpp)
    for (core::OpKind k :
         {core::OpKind::kConv2d, core::OpKind::kMaxPool2d, core::OpKind::kAvgPool2d}) {
      const std::string name = "window" + std::to_string(n++);
      s += cuda_window_source(k, d, name);
      s += size_check(name + "_args", sizeof(CudaWindowArgs));
    }
  return s;
}

TEST(CudaLibrarySource, EveryKernelCompilesForSm80AndSm90) {
  if (!Nvrtc::get()) GTEST_SKIP() << Nvrtc::unavailable_reason();
  // The sources are concatenated: one translation unit holding them all also proves their names
  // and helper definitions do not clash.
  std::string source = all_library_kernels();
  // sf_reduce_args is declared once per reduction source: keep the first only.
  const std::string decl = "struct sf_reduce_args {";
  std::size_t first = source.find(decl);
  ASSERT_NE(first, std::string::npos);
  for (std::size_t at = source.find(decl, first + 1); at != std::string::npos;
       at = source.find(decl, at)) {
    const std::size_t end = source.find("};\n", at);
    source.erase(at, end + 3 - at);
  }
  std::vector<std::string> options;
  for (const char* o : cuda_kernel_options()) options.emplace_back(o);
  for (int arch : {80, 90}) {
    try {
      const NvrtcOutput out = Nvrtc::get()->compile(source, "library", arch, false, options);
      EXPECT_EQ(out.image.substr(1, 3), "ELF") << "sm_" << arch;
      EXPECT_EQ(out.log, "") << "library kernels compile without warnings";
    } catch (const CompileError& e) {
      ADD_FAILURE() << "sm_" << arch << ": " << e.what();
    }
  }
}

TEST(CudaLibrarySource, RejectsKindsAndDtypesItHasNoKernelFor) {
  EXPECT_THROW(cuda_reduce_source(core::OpKind::kAdd, kF32, kF32, "k"), Error);
  EXPECT_THROW(cuda_random_source(core::OpKind::kRandUniform, kI32, "k"), Error);
  EXPECT_THROW(cuda_int_matmul_source(kF32, "k"), Error);
}

TEST(CudaLibrarySource, AccumulatorSizesCoverTheirStructs) {
  EXPECT_EQ(cuda_reduce_accumulator_bytes(core::OpKind::kSum, kF16), 8u);   // double
  EXPECT_EQ(cuda_reduce_accumulator_bytes(core::OpKind::kSum, kI32), 8u);   // long long
  EXPECT_EQ(cuda_reduce_accumulator_bytes(core::OpKind::kMax, kBF16), 4u);  // float
  EXPECT_EQ(cuda_reduce_accumulator_bytes(core::OpKind::kMin, kBool), 1u);
  EXPECT_EQ(cuda_reduce_accumulator_bytes(core::OpKind::kArgmax, kI64), 16u);
  EXPECT_EQ(cuda_reduce_accumulator_bytes(core::OpKind::kMax, kI8), 4u);  // read as int
  EXPECT_EQ(cuda_reduce_accumulator_bytes(core::OpKind::kSum, kU8), 8u);
  EXPECT_EQ(cuda_reduce_accumulator_bytes(core::OpKind::kMin, kF64), 8u);  // double
  EXPECT_EQ(cuda_reduce_accumulator_bytes(core::OpKind::kArgmax, kF64), 16u);
}

}  // namespace
}  // namespace streamfuse::jit

// Generated CUDA kernels compile through NVRTC for sm_80 and sm_90, for every case the CPU
// generator is tested on (every op, dtype, conversion, layout, broadcast and stride class,
// in-place output), so a bad generated kernel fails here, on a machine without a GPU. Each case's
// argument struct's size is checked against CudaArgsLayout in the compiled source (static_assert;
// NVRTC has no offsetof, and every field is 8 bytes in CudaArgsLayout's order by construction).
// Running the kernels, and comparing their results with the CPU's, needs a GPU: that is the CUDA
// backend's differential test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "jit/cuda_codegen.h"
#include "jit/cuda_kernel_abi.h"
#include "jit/nvrtc.h"
#include "jit/program_check.h"
#include "streamfuse/error.h"
#include "tests/jit/codegen_cases.h"

namespace streamfuse::jit {
namespace {

using namespace streamfuse::jit::testing;  // NOLINT: the shared cases and their vocabulary

std::vector<std::string> options() {
  std::vector<std::string> o;
  for (const char* s : cuda_kernel_options()) o.emplace_back(s);
  return o;
}

class CudaCodegenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Nvrtc::get()) GTEST_SKIP() << Nvrtc::unavailable_reason();
  }

  // Every case, plus each with its scalars specialized (equal classes, exact reciprocals), as
  // one translation unit.
  static std::string all_cases_source() {
    std::string s = cuda_kernel_prelude();
    int n = 0;
    for (const Case& c : build_cases()) {
      for (int specialized = 0; specialized < 2; ++specialized) {
        SpecializationKey key = c.key;
        if (specialized) {
          if (c.program.scalars.empty()) continue;
          key.scalar_classes.assign(c.program.scalars.size(), 0);
          for (std::size_t i = 0; i < c.program.scalars.size(); ++i)  // equal by type
            for (std::size_t j = 0; j <= i; ++j)
              if (c.program.scalars[j].type == c.program.scalars[i].type) {
                key.scalar_classes[i] = static_cast<std::uint8_t>(j);
                break;
              }
          key.exact_reciprocals = ProgramFacts::of(c.program).divisor_scalars;
        }
        const std::string name = "k" + std::to_string(n++);
        s += "// case " + c.name + (specialized ? " (specialized)" : "") + "\n";
        s += cuda_kernel_source(c.program, key, name);
        const CudaArgsLayout l{c.program.inputs.size() + c.program.outputs.size(),
                               static_cast<std::size_t>(key.rank), c.program.scalars.size()};
        s += "static_assert(sizeof(" + name + "_args) == " + std::to_string(l.bytes()) + ", \"" +
             name + ": argument struct\");\n";
      }
    }
    return s;
  }
};

TEST_F(CudaCodegenTest, EveryCaseCompilesForSm80AndSm90) {
  const std::string source = all_cases_source();
  for (int arch : {80, 90}) {
    try {
      const NvrtcOutput out = Nvrtc::get()->compile(source, "cases", arch, false, options());
      EXPECT_FALSE(out.is_ptx);
      EXPECT_GT(out.image.size(), 1000u) << "sm_" << arch;
      EXPECT_EQ(out.image.substr(1, 3), "ELF") << "a cubin is an ELF image";
      EXPECT_EQ(out.log, "") << "generated kernels compile without warnings";
    } catch (const CompileError& e) {
      ADD_FAILURE() << "sm_" << arch << ": " << e.what();
    }
  }
}

// Kernels with a reduction anchor: every stage op over every value type, a row per block along
// an axis and over every element, with per-element and per-row outputs.
TEST_F(CudaCodegenTest, ReductionKernelsCompileForSm80AndSm90) {
  std::string source = cuda_kernel_prelude();
  int n = 0;
  for (DType dtype : {kF32, kF16, kI32, kI64, kBool}) {
    for (core::OpKind op : {core::OpKind::kSum, core::OpKind::kMean, core::OpKind::kMax,
                            core::OpKind::kMin, core::OpKind::kArgmax}) {
      const DType result = core::reduced_dtype(op, dtype);
      FusedProgram p;
      p.inputs = {dtype};
      p.prologue.push_back({.kind = InstrKind::kLoad, .type = value_type_of(dtype), .out = 0});
      p.anchor = {AnchorKind::kReduce, 1, {{op, dtype, 0}}};
      p.epilogue.push_back(
          {.kind = InstrKind::kReduced, .type = value_type_of(result), .out = 1, .index = 0});
      p.outputs = {{0, dtype, false}, {1, result, true}};
      p.num_registers = 2;
      ASSERT_EQ(program_problem(p), "");
      for (bool all : {false, true}) {
        p.anchor.axis = all ? core::kAllAxes : 1;
        SpecializationKey key;
        key.rank = all ? 1 : 2;
        OperandKey in{.dtype = dtype}, out{.dtype = dtype}, row{.dtype = result};
        if (!all) {
          row.strides[0] = StrideClass::kArgument;
          row.strides[1] = StrideClass::kZero;
        } else {
          row.strides[0] = StrideClass::kZero;
        }
        key.inputs.push_back(in);
        key.outputs.push_back(out);
        key.outputs.push_back(row);
        const std::string name = "r" + std::to_string(n++);
        source += cuda_reduce_kernel_source(p, key, name);
      }
    }
  }
  for (int arch : {80, 90}) {
    try {
      const NvrtcOutput out = Nvrtc::get()->compile(source, "reductions", arch, false, options());
      EXPECT_EQ(out.log, "") << "generated kernels compile without warnings";
    } catch (const CompileError& e) {
      ADD_FAILURE() << "sm_" << arch << ": " << e.what();
    }
  }
}

// Reads at indices (kLoadAt: an embedding's row, a gather's element) over i32 and i64 indices,
// sources of every storage width, contiguous, broadcast and strided views: they compile for both
// architectures without warnings, and never take the vector path.
TEST_F(CudaCodegenTest, IndexedLoadKernelsCompileForSm80AndSm90) {
  std::string source = cuda_kernel_prelude();
  int n = 0;
  for (DType index : {kI32, kI64}) {
    for (DType dtype : {kF32, kF16, kBF16, kF64, kI8, kI64}) {
      FusedProgram p;
      p.inputs = {index, dtype};
      p.scalars = {{ScalarArg::Mode::kOperand, ValueType::kI64, kF32}};
      p.prologue.push_back({.kind = InstrKind::kLoad, .type = value_type_of(index), .out = 0});
      p.prologue.push_back(
          {.kind = InstrKind::kScalar, .type = ValueType::kI64, .out = 1, .index = 0});
      p.prologue.push_back({.kind = InstrKind::kLoadAt,
                            .type = value_type_of(dtype),
                            .out = 2,
                            .index = 1,
                            .args = {0, 1, -1}});
      p.outputs = {{2, dtype, false}};
      p.num_registers = 3;
      ASSERT_EQ(program_problem(p), "");
      for (StrideClass inner : {StrideClass::kContiguous, StrideClass::kArgument}) {
        SpecializationKey key;
        key.rank = 2;
        OperandKey ids{.dtype = index}, from{.dtype = dtype}, out{.dtype = dtype};
        ids.strides = {StrideClass::kArgument, StrideClass::kZero};  // one index per row
        from.strides = {StrideClass::kZero, inner};                  // the view: axis stride 0
        key.inputs = {ids, from};
        key.outputs = {out};
        const std::string name = "g" + std::to_string(n++);
        const std::string kernel = cuda_kernel_source(p, key, name);
        EXPECT_EQ(kernel.find("sf_vec<"), std::string::npos) << name;
        source += kernel;
      }
    }
  }
  for (int arch : {80, 90}) {
    try {
      const NvrtcOutput out = Nvrtc::get()->compile(source, "indexed", arch, false, options());
      EXPECT_EQ(out.log, "") << "generated kernels compile without warnings";
    } catch (const CompileError& e) {
      ADD_FAILURE() << "sm_" << arch << ": " << e.what();
    }
  }
}

TEST_F(CudaCodegenTest, PtxForDriversNewerThanNvrtc) {
  const FusedProgram p = gelu(kF16);
  const std::string source = cuda_kernel_prelude() + cuda_kernel_source(p, make_key(p, {"c"}), "g");
  const NvrtcOutput out = Nvrtc::get()->compile(source, "gelu", 90, true, options());
  EXPECT_TRUE(out.is_ptx);
  EXPECT_NE(out.image.find(".entry g("), std::string::npos) << out.image.substr(0, 400);
  // --fmad=false: the math's a*b+c steps stay two roundings, no fma.rn.f32 contraction appears
  // beyond the prelude's explicit __fmaf_rn calls (which do emit fma).
  EXPECT_NE(out.image.find("mul.rn.f32"), std::string::npos);
}

TEST_F(CudaCodegenTest, CompileErrorsCarryNvrtcsLog) {
  try {
    Nvrtc::get()->compile("extern \"C\" __global__ void k() { undeclared(); }", "broken", 90, false,
                          options());
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("broken"), std::string::npos) << m;
    EXPECT_NE(m.find("sm_90"), std::string::npos) << m;
    EXPECT_NE(m.find("undeclared"), std::string::npos) << m;
  }
}

TEST_F(CudaCodegenTest, ReportsItsVersionAndArchitectures) {
  const Nvrtc& n = Nvrtc::require();
  EXPECT_GE(n.major(), 11);
  EXPECT_EQ(n.version(), std::to_string(n.major()) + "." + std::to_string(n.minor()));
  const std::vector<int>& archs = n.supported_archs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), 80), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
}

// Vector width follows the widest contiguous dtype (16 bytes for it); indexed operands or a
// rank-0 launch use the scalar loop only.
TEST(CudaCodegen, VectorizesContiguousLaunches) {
  const FusedProgram f32 = gelu(kF32), f16 = gelu(kF16);
  EXPECT_NE(cuda_kernel_source(f32, make_key(f32, {"c"}), "k").find("sf_vec<float, 4>"),
            std::string::npos);
  EXPECT_NE(cuda_kernel_source(f16, make_key(f16, {"c"}), "k").find("sf_vec<unsigned short, 8>"),
            std::string::npos);
  Builder mixed;
  mixed.p.inputs = {kF16, kF32};
  mixed.store(mixed.op(core::OpKind::kAdd, VT::kFloat, mixed.load(0, VT::kFloat),
                       mixed.load(1, VT::kFloat)),
              kF32);
  const std::string m = cuda_kernel_source(mixed.p, make_key(mixed.p, {"c", "z", "c"}), "k");
  EXPECT_NE(m.find("sf_vec<unsigned short, 4>"), std::string::npos) << m;
  EXPECT_NE(m.find("sf_vec<float, 4>"), std::string::npos) << m;
  EXPECT_EQ(cuda_kernel_source(f32, make_key(f32, {"ac", "cc"}), "k").find("sf_vec"),
            std::string::npos);
  EXPECT_EQ(cuda_kernel_source(f32, make_key(f32, {"", ""}), "k").find("sf_vec"),
            std::string::npos);
}

TEST(CudaCodegen, SourceIncludesNothingAndNamesTheKernel) {
  const FusedProgram p = gelu(kF32);
  const std::string s = cuda_kernel_source(p, make_key(p, {"c"}), "my_kernel");
  EXPECT_NE(s.find("extern \"C\" __global__ void __launch_bounds__(256) my_kernel("),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("#include"), std::string::npos);
  EXPECT_EQ(cuda_kernel_prelude().find("#include"), std::string::npos);
}

TEST(CudaCodegen, RejectsOpsWithoutAFormForTheirType) {
  Builder b;
  b.p.inputs = {kI32};
  b.store(b.op(core::OpKind::kExp, VT::kI32, b.load(0, VT::kI32)), kI32);
  EXPECT_THROW(cuda_kernel_source(b.p, make_key(b.p, {"c"}), "k"), CompileError);
  SpecializationKey key = make_key(b.p, {"c"});
  key.inputs.push_back(key.inputs[0]);
  EXPECT_THROW(cuda_kernel_source(gelu(kF32), key, "k"), CompileError);
}

TEST(Nvrtc, ChoosesACubinWhenItKnowsTheGpuAndPtxWhenTheGpuIsNewer) {
  const std::vector<int> known = {75, 80, 86, 87, 89, 90, 100, 120};
  EXPECT_EQ(choose_target(90, known), (NvrtcTarget{90, false}));
  EXPECT_EQ(choose_target(86, known), (NvrtcTarget{86, false}));
  EXPECT_EQ(choose_target(130, known), (NvrtcTarget{120, true}));  // newer than NVRTC
  EXPECT_EQ(choose_target(121, known), (NvrtcTarget{120, true}));  // an unlisted minor revision
  EXPECT_EQ(choose_target(70, known), std::nullopt);               // older than NVRTC supports
  EXPECT_EQ(choose_target(90, {}), std::nullopt);
}

// Run by CTest in processes of their own with STREAMFUSE_NVRTC pointing at a missing file and at
// a library that is not NVRTC (tests/jit/CMakeLists.txt): the reason names what went wrong.
TEST(NvrtcEnvironment, AnUnusableLibraryIsReportedWithTheReason) {
  const char* expected = std::getenv("SF_EXPECT_NVRTC_REASON");
  if (!expected) GTEST_SKIP() << "run by CTest with STREAMFUSE_NVRTC set";
  EXPECT_EQ(Nvrtc::get(), nullptr);
  EXPECT_NE(Nvrtc::unavailable_reason().find(expected), std::string::npos)
      << Nvrtc::unavailable_reason();
  try {
    Nvrtc::require();
    ADD_FAILURE() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(Nvrtc, GetAndRequireAgree) {
  // The loaded state is per process: check the message of this process's outcome, and that
  // require() agrees with get().
  if (Nvrtc::get()) {
    EXPECT_TRUE(Nvrtc::unavailable_reason().empty());
    EXPECT_NO_THROW(Nvrtc::require());
  } else {
    EXPECT_NE(Nvrtc::unavailable_reason().find("NVRTC"), std::string::npos);
    EXPECT_THROW(Nvrtc::require(), CompileError);
  }
}

}  // namespace
}  // namespace streamfuse::jit

// Generated CPU kernels against a plain scalar evaluation of the same programs, written here with
// the same sf_* functions and compiled with the same flags (this file is built once per ISA level,
// and the JIT compiles for that level). Every case of the suite goes into one translation unit,
// compiled once. Results must agree bit for bit (any NaN matches any NaN: payloads are not part
// of the semantics).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/isa.h"
#include "core/scalar_ops.h"
#include "core/vector_math.h"
#include "jit/cpp_codegen.h"
#include "jit/kernel_abi.h"
#include "jit/system_compiler.h"
#include "streamfuse/error.h"
#include "tests/isa_variant.h"
#include "tests/jit/codegen_cases.h"
#include "tests/jit/codegen_reference.h"

namespace streamfuse::jit {
namespace {

using namespace streamfuse::jit::testing;  // NOLINT: the shared cases and their vocabulary

using streamfuse::testing::kIsa;

// Every test of a binary built for an ISA level this CPU lacks is skipped: its code (the plain
// tests' too) may use instructions of that level.
[[maybe_unused]] ::testing::Environment* const kIsaCheck =
    ::testing::AddGlobalTestEnvironment(new streamfuse::testing::IsaEnvironment);

int test_level() {
  const std::string isa = kIsa;
  return isa == "v2" ? 2 : isa == "v3" ? 3 : isa == "v4" ? 4 : 0;
}

// ---- the suite -------------------------------------------------------------------------------

class CppCodegenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (backends::cpu::kernel_table_for(test_level()) == nullptr && test_level() != 0) {
      skip_ = std::string("this CPU cannot run x86-64-") + kIsa + " code";
      return;
    }
    compiler_ = SystemCompiler::probe(test_level());
    if (!compiler_) {
      skip_ = "no C++ compiler found";
      return;
    }
    cases_ = build_cases();
    std::string source = cpu_kernel_prelude();
    for (std::size_t i = 0; i < cases_.size(); ++i)
      source += cpu_kernel_source(cases_[i].program, cases_[i].key, "k" + std::to_string(i));
    // CTest runs each test in its own process: the first compiles, the others load its library
    // (named by the hash of source, command and compiler; written with temp file + rename).
    const std::string base = std::string(STREAMFUSE_TEST_KERNEL_DIR) + "/codegen_" + kIsa + "_" +
                             compiler_->library_key(source);
    std::filesystem::create_directories(STREAMFUSE_TEST_KERNEL_DIR);
    const int lock = open((base + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock >= 0) flock(lock, LOCK_EX);  // processes started together wait for one compile
    if (!std::filesystem::exists(base + ".so")) {
      const std::string tmp = base + "." + std::to_string(getpid());
      std::ofstream(tmp + ".cpp") << source;
      compiler_->compile(tmp + ".cpp", tmp + ".so");
      std::filesystem::rename(tmp + ".cpp", base + ".cpp");
      std::filesystem::rename(tmp + ".so", base + ".so");
      // Libraries of earlier versions of this suite are stale.
      const std::string stem = std::filesystem::path(base).filename().string();
      const std::string prefix = std::string("codegen_") + kIsa + "_";
      std::error_code ec;
      for (const auto& f : std::filesystem::directory_iterator(STREAMFUSE_TEST_KERNEL_DIR, ec)) {
        const std::string name = f.path().filename().string();
        if (name.rfind(prefix, 0) == 0 && name.rfind(stem, 0) != 0) std::filesystem::remove(f, ec);
      }
    }
    if (lock >= 0) close(lock);
    library_ = load_library(base + ".so");
  }
  static void TearDownTestSuite() { library_.reset(); }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  // Runs every case whose name starts with `prefix`; returns how many ran.
  static int run_cases(const std::string& prefix) {
    int ran = 0;
    for (std::size_t i = 0; i < cases_.size(); ++i) {
      if (cases_[i].name.rfind(prefix, 0) != 0) continue;
      const auto fn =
          reinterpret_cast<CpuKernelFn>(find_symbol(library_, ("k" + std::to_string(i)).c_str()));
      EXPECT_NE(fn, nullptr);
      if (fn) run_case(cases_[i], fn), ++ran;
    }
    return ran;
  }

  static void run_case(const Case& c, CpuKernelFn fn) {
    const PreparedCase prepared = prepare_case(c);
    std::vector<Operand> actual = prepared.operands;
    std::vector<char*> data;
    std::vector<long long> strides;
    for (std::size_t k = 0; k < actual.size(); ++k) {
      data.push_back(reinterpret_cast<char*>(actual[written_buffer(c, k)].bytes.data()));
      strides.insert(strides.end(), actual[k].strides.begin(), actual[k].strides.end());
    }
    long long numel = 1;
    for (long long s : c.sizes) numel *= s;
    const std::vector<long long>& scalars = prepared.scalars;
    // Disjoint ranges that start and end inside runs, as threads call kernels.
    const long long cuts[] = {0, numel / 3 + 1, numel / 2 + 2, numel};
    for (int r = 0; r < 3; ++r) {
      const long long lo = std::min(cuts[r], numel), hi = std::min(cuts[r + 1], numel);
      if (lo < hi) fn(data.data(), c.sizes.data(), strides.data(), scalars.data(), lo, hi);
    }
    if (numel == 1) fn(data.data(), c.sizes.data(), strides.data(), scalars.data(), 0, 0);  // empty
    expect_outputs(c, actual, prepared.expected);
  }

  static inline std::string skip_;
  static inline std::optional<SystemCompiler> compiler_;
  static inline std::vector<Case> cases_;
  static inline std::shared_ptr<void> library_;
};

TEST_F(CppCodegenTest, EveryOpOnEveryValueType) { EXPECT_EQ(run_cases("op/"), 16); }
TEST_F(CppCodegenTest, LoadsAndStoresOfEveryDType) { EXPECT_EQ(run_cases("load/"), 9); }
TEST_F(CppCodegenTest, ConversionsBetweenValueTypes) { EXPECT_EQ(run_cases("convert"), 2); }
TEST_F(CppCodegenTest, RoundingTo16BitGridsAndWrappingTo8Bits) { EXPECT_EQ(run_cases("round"), 2); }
TEST_F(CppCodegenTest, GeluInEveryFloatDType) { EXPECT_EQ(run_cases("gelu/"), 3); }
TEST_F(CppCodegenTest, ScalarArgumentsInBothModes) { EXPECT_EQ(run_cases("scalars"), 1); }
TEST_F(CppCodegenTest, RanksBroadcastAndStrides) { EXPECT_EQ(run_cases("layout/"), 10); }
TEST_F(CppCodegenTest, OutputsOverTheirInputs) { EXPECT_EQ(run_cases("alias/"), 2); }

TEST(CppCodegen, SourceIncludesNothingAndNamesTheFunction) {
  const FusedProgram p = gelu(kF32);
  const std::string s = cpu_kernel_source(p, make_key(p, {"c"}), "my_kernel");
  EXPECT_NE(s.find("extern \"C\" void my_kernel("), std::string::npos);
  EXPECT_EQ(s.find("#include"), std::string::npos);
  EXPECT_NE(s.find("__restrict__"), std::string::npos);
  EXPECT_EQ(cpu_kernel_prelude().find("#include"), std::string::npos);
  EXPECT_NE(cpu_kernel_prelude().find("sf_float_to_half"), std::string::npos);  // scalar_ops.h
  EXPECT_NE(cpu_kernel_prelude().find("sf_erf"), std::string::npos);            // vector_math.h
}

TEST(CppCodegen, RejectsOpsWithoutAFormForTheirType) {
  Builder b;
  b.p.inputs = {kI32};
  b.store(b.op(core::OpKind::kExp, VT::kI32, b.load(0, VT::kI32)), kI32);
  EXPECT_THROW(cpu_kernel_source(b.p, make_key(b.p, {"c"}), "k"), CompileError);
  Builder d;
  d.p.inputs = {kF32};
  d.store(d.op(core::OpKind::kDiv, VT::kBool, d.load(0, VT::kBool), d.load(0, VT::kBool)), kBool);
  EXPECT_THROW(cpu_kernel_source(d.p, make_key(d.p, {"c"}), "k"), CompileError);
  // A key whose operand counts do not match the program.
  SpecializationKey key = make_key(b.p, {"c"});
  key.inputs.push_back(key.inputs[0]);
  EXPECT_THROW(cpu_kernel_source(gelu(kF32), key, "k"), CompileError);
}

}  // namespace
}  // namespace streamfuse::jit

// The system compiler: probing ($STREAMFUSE_CXX, PATH), flags per ISA level, library keys,
// compiling and loading, and the errors of a source that does not compile, a compiler that
// hangs, and a file that is no library.
#include "jit/system_compiler.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "core/hash_mix.h"
#include "jit/codegen_digest.h"
#include "jit/cpp_codegen.h"
#include "streamfuse/error.h"
#include "tests/file_text.h"
#include "tests/scoped_env.h"
#include "tests/temp_dir.h"

namespace streamfuse::jit {
namespace {

using streamfuse::testing::ScopedEnv;
using streamfuse::testing::TempDir;

bool has(const std::vector<std::string>& flags, const std::string& f) {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}

TEST(SystemCompiler, FlagsFollowTheIsaLevel) {
  const auto v3 = kernel_compile_flags(3);
  for (const char* f : {"-O3", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math",
                        "-march=x86-64-v3", "-mtune=native", "-fPIC", "-shared"})
    EXPECT_TRUE(has(v3, f)) << f;
  EXPECT_FALSE(has(v3, "-mprefer-vector-width=512"));
  const auto v4 = kernel_compile_flags(4);
  EXPECT_TRUE(has(v4, "-march=x86-64-v4"));
  EXPECT_TRUE(has(v4, "-mprefer-vector-width=512"));
  const auto none = kernel_compile_flags(0);
  EXPECT_TRUE(std::none_of(none.begin(), none.end(),
                           [](const std::string& f) { return f.rfind("-march", 0) == 0; }));
}

TEST(SystemCompiler, NonexistentCompilerMeansNone) {
  ScopedEnv cxx("STREAMFUSE_CXX", "/nonexistent/c++");
  EXPECT_FALSE(SystemCompiler::probe(3).has_value());
}

TEST(SystemCompiler, CompilesLoadsAndCalls) {
  const auto compiler = SystemCompiler::probe();
  if (!compiler) GTEST_SKIP() << "no C++ compiler found";
  EXPECT_FALSE(compiler->version().empty());
  EXPECT_NE(compiler->command_line().find(compiler->executable()), std::string::npos);
  TempDir dir;
  const std::string source = "extern \"C\" int answer(int x) { return x * 6; }\n";
  const std::string path = dir.write("answer.cpp", source);
  compiler->compile(path, dir.path() + "/answer.so");
  const std::shared_ptr<void> lib = load_library(dir.path() + "/answer.so");
  const auto fn = reinterpret_cast<int (*)(int)>(find_symbol(lib, "answer"));
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn(7), 42);
  EXPECT_EQ(find_symbol(lib, "no_such_symbol"), nullptr);
}

TEST(SystemCompiler, LibraryKeyHashesSourceAndCommand) {
  const auto compiler = SystemCompiler::probe(3);
  if (!compiler) GTEST_SKIP() << "no C++ compiler found";
  const std::string key = compiler->library_key("int x;");
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key, compiler->library_key("int x;"));
  EXPECT_NE(key, compiler->library_key("int y;"));
  const auto other_level = SystemCompiler::probe(2);
  ASSERT_TRUE(other_level.has_value());
  EXPECT_NE(key, other_level->library_key("int x;"));
}

TEST(SystemCompiler, FailureNamesTheSourceAndTheFirstErrors) {
  const auto compiler = SystemCompiler::probe();
  if (!compiler) GTEST_SKIP() << "no C++ compiler found";
  TempDir dir;
  const std::string path = dir.write("broken.cpp", "int f() { return undeclared_name; }\n");
  try {
    compiler->compile(path, dir.path() + "/broken.so");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared_name"), std::string::npos) << what;
    EXPECT_NE(what.find("error"), std::string::npos) << what;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/broken.so"));
}

TEST(SystemCompiler, HangingCompilerIsStoppedAtTheTimeout) {
  TempDir dir;
  const std::string fake = dir.write(
      "slow-c++", "#!/bin/sh\n[ \"$1\" = --version ] && { echo slow 1.0; exit 0; }\nsleep 30\n",
      true);
  ScopedEnv cxx("STREAMFUSE_CXX", fake);
  const auto compiler = SystemCompiler::probe(3);
  ASSERT_TRUE(compiler.has_value());
  EXPECT_EQ(compiler->version(), "slow 1.0");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(compiler->compile(dir.write("k.cpp", ""), dir.path() + "/k.so",
                                 std::chrono::milliseconds(300)),
               CompileError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// A compiler that logs its arguments to `log` and then runs c++ with them.
std::string logging_compiler(const TempDir& dir, const std::string& name, const std::string& log) {
  return dir.write(name, "#!/bin/sh\necho \"$@\" >> '" + log + "'\nexec c++ \"$@\"\n", true);
}

TEST(SystemCompiler, CxxChoosesTheCompilerAndStreamfuseCxxOverridesIt) {
  if (!SystemCompiler::probe(0)) GTEST_SKIP() << "no C++ compiler found";
  TempDir dir;
  const std::string log = dir.path() + "/log";
  const std::string launcher = logging_compiler(dir, "launcher", log);
  // As make and CMake read it: a command that may carry words ("ccache g++").
  ScopedEnv cxx("CXX", launcher + " -DFROM_CXX");
  ScopedEnv unset("STREAMFUSE_CXX", "");
  const auto compiler = SystemCompiler::probe(0);
  ASSERT_TRUE(compiler.has_value());
  EXPECT_EQ(compiler->executable(), launcher);
  EXPECT_EQ(compiler->variable(), "CXX");
  compiler->compile(dir.write("k.cpp", "extern \"C\" int k() { return FROM_CXX; }\n"),
                    dir.path() + "/k.so");
  EXPECT_NE(streamfuse::testing::read_all(log).find("-DFROM_CXX"), std::string::npos);
  {
    const std::string own = logging_compiler(dir, "own", log);
    ScopedEnv chosen("STREAMFUSE_CXX", own);
    const auto preferred = SystemCompiler::probe(0);
    ASSERT_TRUE(preferred.has_value());
    EXPECT_EQ(preferred->executable(), own);
    EXPECT_EQ(preferred->variable(), "STREAMFUSE_CXX");
  }
  // A chosen compiler that does not work is not replaced by another: there is none.
  ScopedEnv broken("CXX", "/nonexistent/g++");
  EXPECT_FALSE(SystemCompiler::probe(0).has_value());
  // ...and the fingerprint (which keys the kernels) follows the choice.
  EXPECT_NE(kernel_fingerprint(0), [&] {
    ScopedEnv other("CXX", launcher);
    return kernel_fingerprint(0);
  }());
}

TEST(SystemCompiler, LoadingANonLibraryThrows) {
  TempDir dir;
  const std::string path = dir.write("junk.so", "not an ELF file");
  try {
    load_library(path);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
}

// Kernel files are found by their program and key under the fingerprint: one compiled from an
// earlier prelude (another op math) must be a miss, or a fused op would compute the old bits.
TEST(SystemCompiler, TheFingerprintNamesTheKernelMath) {
  const std::string prelude = "prelude " + core::hex16(core::fnv1a(cpu_kernel_prelude()));
  EXPECT_NE(kernel_fingerprint(0).find(prelude), std::string::npos) << kernel_fingerprint(0);
}

// ...and the code generators: a kernel another generator wrote (one with a bug since fixed) must
// be a miss too. The digest is 16 hex digits of the generators' sources, made at configure time.
TEST(SystemCompiler, TheFingerprintNamesTheCodeGenerators) {
  const std::string digest = codegen_digest();
  ASSERT_EQ(digest.size(), 16u);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos) << digest;
  EXPECT_NE(kernel_fingerprint(0).find("codegen " + digest), std::string::npos)
      << kernel_fingerprint(0);
}

}  // namespace
}  // namespace streamfuse::jit

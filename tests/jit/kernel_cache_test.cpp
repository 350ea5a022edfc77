// The kernel cache: requests compiled in the background in batches, the bound and LRU eviction
// (with libraries kept loaded while a caller holds them), concurrent requests, wait_idle, reuse
// of the directory, and the fallbacks: interpret mode, no compiler, a failing compiler, an
// unusable directory.
#include "jit/kernel_cache.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/busy_cores.h"
#include "core/log.h"
#include "tests/jit/chain_program.h"
#include "tests/scoped_env.h"
#include "tests/temp_dir.h"

namespace streamfuse::jit {
namespace {

using streamfuse::testing::ScopedEnv;
using streamfuse::testing::TempDir;

using core::OpKind;

std::optional<ReadyKernel> request(KernelCache& cache, int n) {
  const FusedProgram p = chain(n);
  return cache.find_or_request(p.hash(), p, flat_key());
}

// Shared objects of `dir` mapped into this process now.
std::set<std::string> mapped_libraries(const std::string& dir) {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> out;
  for (std::string line; std::getline(maps, line);) {
    const std::size_t at = line.find(dir);
    if (at != std::string::npos) out.insert(line.substr(at));
  }
  return out;
}

KernelCacheOptions long_window() {
  KernelCacheOptions o;
  o.batch_window = std::chrono::seconds(30);  // only wait_idle() starts a batch
  return o;
}

TEST(KernelCache, BatchesEveryRequestIntoOneCompile) {
  REQUIRE_COMPILER();
  TempDir dir;
  KernelCache cache(dir.path(), long_window());
  constexpr int kN = 24;
  for (int n = 0; n < kN; ++n) EXPECT_FALSE(request(cache, n).has_value());
  for (int n = 0; n < kN; ++n) EXPECT_FALSE(request(cache, n).has_value());  // pending: no requeue
  cache.wait_idle();
  KernelCacheStats s = cache.stats();
  EXPECT_EQ(s.batches, 1u);
  EXPECT_EQ(s.compiled, static_cast<std::uint64_t>(kN));
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.misses, 2u * kN);
  for (int n = 0; n < kN; ++n) {
    const auto k = request(cache, n);
    ASSERT_TRUE(k.has_value()) << n;
    expect_chain_result(*k, n);
  }
  s = cache.stats();
  EXPECT_EQ(s.hits, static_cast<std::uint64_t>(kN));
  EXPECT_GT(s.compile_ms, 0.0);
  // The batch's source and library are in the directory.
  int cpp = 0, so = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    cpp += f.path().extension() == ".cpp";
    so += f.path().extension() == ".so";
  }
  EXPECT_EQ(cpp, 1);
  EXPECT_EQ(so, 1);
}

TEST(KernelCache, ReusesALibraryTheDirectoryHolds) {
  REQUIRE_COMPILER();
  TempDir dir;
  for (int round = 0; round < 2; ++round) {
    KernelCache cache(dir.path(), long_window());
    for (int n = 0; n < 3; ++n) request(cache, n);
    cache.wait_idle();
    EXPECT_EQ(cache.stats().reused, round == 0 ? 0u : 1u);
    const auto k = request(cache, 2);
    ASSERT_TRUE(k.has_value());
    expect_chain_result(*k, 2);
  }
}

TEST(KernelCache, EvictsTheLeastRecentlyUsedAndKeepsHeldLibrariesLoaded) {
  REQUIRE_COMPILER();
  TempDir dir;
  KernelCacheOptions o = long_window();
  o.max_kernels = 4;
  KernelCache cache(dir.path(), o);
  for (int n = 0; n < 4; ++n) request(cache, n);
  cache.wait_idle();
  std::optional<ReadyKernel> held = request(cache, 0);  // 0 is now the most recent
  ASSERT_TRUE(held.has_value());
  const std::set<std::string> first = mapped_libraries(dir.path());
  ASSERT_EQ(first.size(), 1u);

  request(cache, 4);  // evicts 1, the least recently used
  cache.wait_idle();
  KernelCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 4u);
  EXPECT_EQ(s.evicted, 1u);
  EXPECT_TRUE(request(cache, 0).has_value());
  EXPECT_FALSE(request(cache, 1).has_value());  // evicted: requested again (evicts 2)
  cache.wait_idle();

  // Evict every entry of the first library; the held kernel keeps it loaded and callable.
  for (int n = 5; n < 9; ++n) request(cache, n);
  cache.wait_idle();
  EXPECT_EQ(cache.stats().entries, 4u);
  EXPECT_TRUE(mapped_libraries(dir.path()).count(*first.begin()));
  expect_chain_result(*held, 0);
  held.reset();
  EXPECT_FALSE(mapped_libraries(dir.path()).count(*first.begin()));  // dlclosed
}

TEST(KernelCache, ConcurrentRequestsCompileEachKernelOnce) {
  REQUIRE_COMPILER();
  TempDir dir;
  KernelCacheOptions o;
  o.batch_window = std::chrono::milliseconds(20);
  KernelCache cache(dir.path(), o);
  constexpr int kPrograms = 40, kThreads = 4;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<int> left(kPrograms);
      for (int n = 0; n < kPrograms; ++n) left[static_cast<std::size_t>(n)] = n;
      std::shuffle(left.begin(), left.end(), rng);
      for (int n : left) EXPECT_FALSE(request(cache, n).has_value());  // all threads at once
      while (!left.empty()) {
        const std::size_t i = rng() % left.size();
        if (const auto k = request(cache, left[i])) {
          std::vector<float> in = {3.0f}, out = {0.0f};
          char* data[] = {reinterpret_cast<char*>(in.data()), reinterpret_cast<char*>(out.data())};
          const long long sizes[] = {1}, strides[] = {1, 1}, scalars[] = {0x3f800000};
          k->cpu()(data, sizes, strides, scalars, 0, 1);
          if (out[0] != 3.0f + static_cast<float>(left[i] + 1)) ++wrong;
          left.erase(left.begin() + static_cast<std::ptrdiff_t>(i));
        } else if (rng() % 8 == 0) {
          cache.wait_idle();
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const KernelCacheStats s = cache.stats();
  EXPECT_EQ(s.compiled, static_cast<std::uint64_t>(kPrograms));
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.hits, static_cast<std::uint64_t>(kPrograms * kThreads));
  EXPECT_GE(s.misses, static_cast<std::uint64_t>(kPrograms * kThreads));  // the first pass
  EXPECT_LT(s.batches, static_cast<std::uint64_t>(kPrograms));            // batched, not one by one
}

TEST(KernelCache, WaitIdleReturnsAtOnceWithNothingPending) {
  REQUIRE_COMPILER();
  TempDir dir;
  KernelCache cache(dir.path(), long_window());
  const auto start = std::chrono::steady_clock::now();
  cache.wait_idle();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(cache.stats().batches, 0u);
}

TEST(KernelCache, DestructorDropsPendingRequests) {
  REQUIRE_COMPILER();
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  {
    KernelCache cache(dir.path(), long_window());
    for (int n = 0; n < 50; ++n) request(cache, n);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(KernelCache, InterpretModeNeverCompiles) {
  TempDir dir;
  KernelCacheOptions o;
  o.mode = JitMode::kInterpret;
  KernelCache cache(dir.path() + "/unused", o);
  for (int round = 0; round < 2; ++round) EXPECT_FALSE(request(cache, 0).has_value());
  cache.wait_idle();
  const KernelCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.batches, 0u);
  EXPECT_EQ(s.entries, 0u);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/unused"));
}

// wait_for: the batch starts at once (not after the 30 s window) and the kernel comes back ready;
// callers on several threads wait for the same kernel, which compiles once.
TEST(KernelCache, WaitForBuildsTheKernelAndReturnsIt) {
  REQUIRE_COMPILER();
  TempDir dir;
  KernelCache cache(dir.path(), long_window());
  const FusedProgram p = chain(7);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      if (const std::optional<ReadyKernel> k = cache.wait_for(p.hash(), p, flat_key())) {
        expect_chain_result(*k, 7);
        ++ready;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ready.load(), 4);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(cache.stats().compiled, 1u);
  EXPECT_TRUE(cache.wait_for(p.hash(), p, flat_key()).has_value());  // ready: no wait
}

// (The no-compiler case is not repeated here: its warning is once per process, and
// NoCompilerFallsBackWithOneWarning checks it.)
TEST(KernelCache, WaitForAKernelThatCannotBeBuiltReturnsNothing) {
  REQUIRE_COMPILER();
  {
    TempDir dir;
    KernelCache cache(dir.path(), long_window());
    FusedProgram p = chain(1);
    p.prologue[2].op =
        core::OpKind::kExp;  // exp on i32 has no form: the kernel cannot be generated
    p.prologue[2].type = ValueType::kI32;
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(cache.wait_for(p.hash(), p, flat_key()).has_value());
    EXPECT_NE(::testing::internal::GetCapturedStderr().find("cannot generate kernel"),
              std::string::npos);
    EXPECT_EQ(cache.stats().failed, 1u);
  }
  KernelCacheOptions interpret = long_window();
  interpret.mode = JitMode::kInterpret;
  KernelCache cache(std::string(), interpret);
  const FusedProgram p = chain(1);
  EXPECT_FALSE(cache.wait_for(p.hash(), p, flat_key()).has_value());
}

TEST(KernelCache, NoCompilerFallsBackWithOneWarning) {
  ScopedEnv cxx("STREAMFUSE_CXX", "/nonexistent");
  TempDir dir;
  ::testing::internal::CaptureStderr();
  {
    KernelCache cache(dir.path(), long_window());
    for (int round = 0; round < 3; ++round) {
      EXPECT_FALSE(request(cache, round).has_value());
      cache.wait_idle();
    }
    const KernelCacheStats s = cache.stats();
    EXPECT_EQ(s.compiled, 0u);
    EXPECT_EQ(s.batches, 0u);
    EXPECT_EQ(s.hits, 0u);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::size_t first = err.find("no C++ compiler found");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("no C++ compiler found", first + 1), std::string::npos) << err;
}

TEST(KernelCache, CompileFailureIsReportedOnceAndNeverRetried) {
  TempDir dir;
  const std::string fake = dir.path() + "/broken-c++";
  std::ofstream(fake) << "#!/bin/sh\n[ \"$1\" = --version ] && { echo broken 1.0; exit 0; }\n"
                         "echo \"kernel.cpp:1:1: error: this compiler always fails\" >&2\nexit 1\n";
  chmod(fake.c_str(), 0755);
  ScopedEnv cxx("STREAMFUSE_CXX", fake);
  ::testing::internal::CaptureStderr();
  {
    KernelCache cache(dir.path() + "/kernels", long_window());
    for (int batch = 0; batch < 2; ++batch) {
      for (int n = 0; n < 3; ++n) EXPECT_FALSE(request(cache, batch * 3 + n).has_value());
      cache.wait_idle();
    }
    for (int n = 0; n < 6; ++n) EXPECT_FALSE(request(cache, n).has_value());  // failed: kept
    cache.wait_idle();
    const KernelCacheStats s = cache.stats();
    EXPECT_EQ(s.batches, 2u);
    EXPECT_EQ(s.failed, 6u);
    EXPECT_EQ(s.compiled, 0u);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::size_t first = err.find("warning: jit: compiling ");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("warning:", first + 1), std::string::npos) << err;     // once
  EXPECT_NE(err.find(dir.path() + "/kernels/"), std::string::npos) << err;  // the source path
  EXPECT_NE(err.find("this compiler always fails"), std::string::npos) << err;
}

TEST(KernelCache, UnwritableDirectoryBuildsInScratchAndRemovesTheFiles) {
  REQUIRE_COMPILER();
  const std::string bad = "/proc/streamfuse-cannot-create-this";
  TempDir scratch;
  KernelCacheOptions options = long_window();
  int asked = 0;
  options.scratch = [&] {
    ++asked;
    return std::filesystem::path(scratch.path());
  };
  ::testing::internal::CaptureStderr();
  {
    KernelCache cache(bad, options);
    EXPECT_EQ(cache.directory(), "");  // nothing kept
    request(cache, 0);
    cache.wait_idle();
    EXPECT_TRUE(request(cache, 0).has_value());
    EXPECT_GT(asked, 0);
    // The build's source and library were made in the scratch folder and removed after loading.
    EXPECT_TRUE(std::filesystem::is_empty(scratch.path()));
  }
  EXPECT_NE(::testing::internal::GetCapturedStderr().find(bad), std::string::npos);
}

TEST(KernelCache, LogsEachBatchOnOneLine) {
  REQUIRE_COMPILER();
  TempDir dir;
  core::set_log_mask(core::parse_log_channels("jit"));
  ::testing::internal::CaptureStderr();
  {
    KernelCache cache(dir.path(), long_window());
    request(cache, 0);
    request(cache, 1);
    cache.wait_idle();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  core::set_log_mask(0);
  EXPECT_NE(err.find("[streamfuse:jit] batch of 2 kernels in "), std::string::npos) << err;
  EXPECT_NE(err.find(dir.path()), std::string::npos) << err;
}

// While the compiler runs, one core counts as busy (core/busy_cores.h), so that the CPU kernels
// run on the others meanwhile; when it has finished, none. The compiler here waits for the test
// to let it go, then fails. Last in this file: the failure takes the process's one warning of a
// failed compile, which CompileFailureIsReportedOnceAndNeverRetried looks for.
TEST(KernelCache, ACompileKeepsOneCoreBusyWhileItRuns) {
  TempDir dir;
  const std::string fake = dir.path() + "/waiting-c++";
  const std::string started = dir.path() + "/started", release = dir.path() + "/release";
  std::ofstream(fake)
      << "#!/bin/sh\n[ \"$1\" = --version ] && { echo waiting 1.0; exit 0; }\n"
      << "touch " << started << "\ni=0\n"
      << "while [ ! -e " << release << " ] && [ $i -lt 6000 ]; do sleep 0.01; "
      << "i=$((i+1)); done\necho \"kernel.cpp:1:1: error: no kernel\" >&2\nexit 1\n";
  chmod(fake.c_str(), 0755);
  ScopedEnv cxx("STREAMFUSE_CXX", fake);
  ::testing::internal::CaptureStderr();
  {
    KernelCache cache(dir.path() + "/kernels", long_window());
    EXPECT_EQ(core::busy_cores(), 0);
    EXPECT_FALSE(request(cache, 1).has_value());
    std::thread batch([&] { cache.wait_idle(); });  // starts the batch
    for (int i = 0; i < 6000 && !std::filesystem::exists(started); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(std::filesystem::exists(started)) << "the compiler never ran";
    EXPECT_EQ(core::busy_cores(), 1);
    std::ofstream(release) << "go\n";
    batch.join();
    EXPECT_EQ(core::busy_cores(), 0);
    EXPECT_EQ(cache.stats().failed, 1u);
  }
  ::testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace streamfuse::jit

// Compiled kernels in the cache directory: a kernel compiled by one cache is loaded, not
// compiled, by the next (at its first lookup); two caches (as two processes) that need the same
// kernel compile it once; bad kernel and library files are misses with one warning; kernels move
// between caches as bundles do.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "cache/cache_dir.h"
#include "cache/claim_locks.h"
#include "jit/kernel_codec.h"
#include "jit/kernel_files.h"
#include "tests/file_text.h"
#include "tests/jit/chain_program.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;

namespace streamfuse::cache {
namespace {

using jit::chain;
using jit::flat_key;
using jit::have_compiler;
using jit::KernelCache;
using jit::KernelCacheOptions;
using streamfuse::testing::read_all;
using streamfuse::testing::TempDir;

// A kernel cache over its own KernelFiles: what one process has.
struct Process {
  std::shared_ptr<CacheDir> dir;
  jit::KernelFiles files;
  KernelCache cache;
  Process(const std::string& root, const std::string& fingerprint = "test machine")
      : dir(std::make_shared<CacheDir>(root, 1 << 30)),
        files(dir, fingerprint),
        cache(std::string(), options(fingerprint)) {}
  KernelCacheOptions options(const std::string& fingerprint) {
    KernelCacheOptions o;
    o.store = &files;
    o.fingerprint = fingerprint;
    return o;
  }
  std::optional<jit::ReadyKernel> request(int n) {
    const jit::FusedProgram p = chain(n);
    return cache.find_or_request(p.hash(), p, flat_key());
  }
  // Requests `n` and waits until it is ready.
  jit::ReadyKernel ready(int n) {
    request(n);
    cache.wait_idle();
    std::optional<jit::ReadyKernel> k = request(n);
    EXPECT_TRUE(k.has_value());
    return k.value_or(jit::ReadyKernel{});
  }
};

TEST(KernelFiles, AKernelCompiledOnceIsLoadedAtItsFirstLookupAfterwards) {
  REQUIRE_COMPILER();
  TempDir dir;
  {
    Process first(dir.path());
    jit::expect_chain_result(first.ready(3), 3);
    EXPECT_EQ(first.cache.stats().compiled, 1u);
  }
  Process second(dir.path());
  const std::optional<jit::ReadyKernel> k = second.request(3);  // no waiting: loaded from disk
  ASSERT_TRUE(k.has_value());
  jit::expect_chain_result(*k, 3);
  EXPECT_EQ(second.cache.stats().compiled, 0u);
  EXPECT_EQ(second.cache.stats().loaded, 1u);
  EXPECT_EQ(second.cache.stats().batches, 0u);
}

TEST(KernelFiles, KernelsOfOneLibraryShareOneLoad) {
  REQUIRE_COMPILER();
  TempDir dir;
  {
    Process first(dir.path());
    first.request(1);
    first.request(2);
    first.cache.wait_idle();
    EXPECT_EQ(first.cache.stats().batches, 1u);
  }
  Process second(dir.path());
  const auto a = second.request(1), b = second.request(2);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->library, b->library);
  jit::expect_chain_result(*b, 2);
}

TEST(KernelFiles, TwoProcessesThatNeedTheSameKernelCompileItOnce) {
  REQUIRE_COMPILER();
  for (int round = 0; round < 3; ++round) {
    TempDir dir;
    Process a(dir.path()), b(dir.path());
    std::thread ta([&] { a.request(7); });
    std::thread tb([&] { b.request(7); });
    ta.join();
    tb.join();
    a.cache.wait_idle();
    b.cache.wait_idle();
    jit::expect_chain_result(a.ready(7), 7);
    jit::expect_chain_result(b.ready(7), 7);
    EXPECT_EQ(a.cache.stats().compiled + b.cache.stats().compiled, 1u) << round;
    EXPECT_EQ(a.cache.stats().loaded + b.cache.stats().loaded, 1u) << round;
  }
}

TEST(KernelFiles, AnotherFingerprintNeverLoadsThisOnesKernels) {
  REQUIRE_COMPILER();
  TempDir dir;
  { Process(dir.path(), "machine A").ready(4); }
  Process b(dir.path(), "machine B");
  EXPECT_FALSE(b.request(4).has_value());
  jit::expect_chain_result(b.ready(4), 4);
  EXPECT_EQ(b.cache.stats().compiled, 1u);
}

// Reading a program's kernels ahead (for a plan about to be needed): every key this machine
// compiled is installed ready, without compiling and without a lookup having asked for it;
// another machine's kernels of the program are skipped without a warning.
TEST(KernelFiles, AProgramsKernelsAreReadAheadWhateverTheirKeys) {
  REQUIRE_COMPILER();
  TempDir dir;
  const jit::FusedProgram p = chain(5);
  jit::SpecializationKey broadcast = flat_key();
  broadcast.inputs[0].strides[0] = jit::StrideClass::kZero;
  {
    Process first(dir.path());
    first.cache.find_or_request(p.hash(), p, flat_key());
    first.cache.find_or_request(p.hash(), p, broadcast);
    first.ready(6);  // another program: not read ahead with this one
    EXPECT_EQ(first.cache.stats().compiled, 3u);
  }
  { Process(dir.path(), "machine B").ready(5); }  // shares the program's folder
  EXPECT_EQ(Process(dir.path()).files.load_program(p.hash(), p).size(), 2u);

  ::testing::internal::CaptureStderr();
  Process second(dir.path());
  second.cache.read_ahead(p.hash(), p);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("warning"), std::string::npos) << err;
  EXPECT_EQ(second.cache.stats().loaded, 2u);
  EXPECT_EQ(second.cache.stats().entries, 2u);
  jit::expect_chain_result(second.request(5).value_or(jit::ReadyKernel{}), 5);
  EXPECT_TRUE(second.cache.find_or_request(p.hash(), p, broadcast).has_value());
  second.cache.read_ahead(p.hash(), p);  // known already: nothing loaded twice
  EXPECT_EQ(second.cache.stats().loaded, 2u);
  EXPECT_EQ(second.cache.stats().compiled, 0u);
}

// A corrupt record or library is a miss with one warning, removed, and compiled again.
TEST(KernelFiles, BadKernelAndLibraryFilesAreMissesWithOneWarning) {
  REQUIRE_COMPILER();
  for (const char* which : {".kernel", ".lib"}) {
    TempDir dir;
    { Process(dir.path()).ready(5); }
    fs::path bad;
    for (const auto& e : fs::recursive_directory_iterator(dir.path()))
      if (e.path().extension() == which) bad = e.path();
    ASSERT_FALSE(bad.empty()) << which;
    std::string bytes = read_all(bad);
    bytes[bytes.size() / 2] ^= 0x40;
    std::ofstream(bad, std::ios::binary | std::ios::trunc) << bytes;
    ::testing::internal::CaptureStderr();
    Process p(dir.path());
    EXPECT_FALSE(p.request(5).has_value()) << which;
    jit::expect_chain_result(p.ready(5), 5);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("warning: cache: ignored " + bad.string()), std::string::npos) << err;
    EXPECT_EQ(err.find("warning:", err.find("warning:") + 1), std::string::npos) << err;
    EXPECT_EQ(p.cache.stats().compiled, 1u) << which;
  }
}

TEST(KernelFiles, ABrokenLibraryIsRemovedWithEveryKernelThatNamesIt) {
  REQUIRE_COMPILER();
  TempDir dir;
  {
    Process first(dir.path());
    for (int n : {1, 2, 3}) first.request(n);
    first.cache.wait_idle();
    EXPECT_EQ(first.cache.stats().batches, 1u);  // one library, three kernel files
  }
  auto count = [&](const char* extension) {
    int n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir.path()))
      n += e.path().extension() == extension;
    return n;
  };
  ASSERT_EQ(count(".kernel"), 3);
  fs::path library;
  for (const auto& e : fs::recursive_directory_iterator(dir.path()))
    if (e.path().extension() == ".lib") library = e.path();
  fs::resize_file(library, fs::file_size(library) - 7);
  ::testing::internal::CaptureStderr();
  Process p(dir.path());
  EXPECT_FALSE(p.request(1).has_value());  // the library is broken: removed, and its kernels too
  ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(fs::exists(library));
  EXPECT_EQ(count(".kernel"), 0);  // none is left pointing to a library that is gone
  jit::expect_chain_result(p.ready(2), 2);
}

TEST(KernelFiles, BundledKernelsInstallReadyOrCompileWhereBuiltElsewhere) {
  REQUIRE_COMPILER();
  TempDir a_dir, b_dir, c_dir;
  std::vector<jit::KernelRecord> records;
  {
    Process a(a_dir.path());
    a.ready(6);
    records = a.cache.ready_kernels();
  }
  ASSERT_EQ(records.size(), 1u);
  Process b(b_dir.path());
  EXPECT_EQ(b.cache.install(records), 1u);
  const auto k = b.request(6);
  ASSERT_TRUE(k.has_value());
  jit::expect_chain_result(*k, 6);
  b.cache.wait_idle();  // installed kernels are persisted in the background
  EXPECT_TRUE(fs::exists(library_path(b_dir.path(), records[0].library->name)));

  Process c(c_dir.path(), "another machine");
  EXPECT_EQ(c.cache.install(records), 0u);  // built elsewhere: compiled here instead
  c.cache.wait_idle();
  jit::expect_chain_result(c.ready(6), 6);
  EXPECT_EQ(c.cache.stats().compiled, 1u);
}

TEST(ClaimLocks, ExcludeEachOtherAndWaitersWakeOnRelease) {
  TempDir dir;
  ClaimLocks a(fs::path(dir.path()) / "claims"), b(fs::path(dir.path()) / "claims");
  ASSERT_TRUE(a.valid() && b.valid());
  EXPECT_TRUE(a.try_claim(42));
  EXPECT_FALSE(b.try_claim(42));
  EXPECT_TRUE(b.try_claim(43));  // other names are free
  auto waited = std::async(std::launch::async, [&] {
    std::atomic<bool> never{false};
    b.wait_free(42, never);
  });
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  a.release(42);
  EXPECT_EQ(waited.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(b.try_claim(42));
}

TEST(KernelCodec, EntriesAndLibrariesRoundTripAndTruncationsAreFormatErrors) {
  const jit::FusedProgram p = chain(2);
  const jit::KernelEntry e{p.hash(), p, flat_key(), "sf_kernel_0", "0123456789abcdef"};
  const std::string bytes = jit::encode_kernel_entry(e);
  const jit::KernelEntry back = jit::decode_kernel_entry(bytes);
  EXPECT_EQ(back.program, p);
  EXPECT_EQ(back.key, flat_key());
  EXPECT_EQ(back.symbol, e.symbol);
  EXPECT_EQ(back.library, e.library);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(jit::decode_kernel_entry(std::string_view(bytes).substr(0, n)), FormatError);
  jit::KernelEntry bad_name = e;
  bad_name.library = "../../etc/passwd";  // becomes a file name: must be 16 hex digits
  EXPECT_THROW(jit::decode_kernel_entry(jit::encode_kernel_entry(bad_name)), FormatError);

  const jit::LibraryImage l{"fedcba9876543210", "", "source", std::string("\0elf", 4)};
  const jit::LibraryImage lb = jit::decode_library(jit::encode_library(l));
  EXPECT_EQ(lb.name, l.name);
  EXPECT_EQ(lb.source, l.source);
  EXPECT_EQ(lb.bytes, l.bytes);
}

}  // namespace
}  // namespace streamfuse::cache

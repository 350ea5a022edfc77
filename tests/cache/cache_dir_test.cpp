// CacheDir's writes: a burst stays near the size limit (pruned as soon as a write passes it, not
// at the next scan); a write failure that lasts (a full disk, a file size limit) is warned about
// once, whatever the number of writes; temporaries never stay beside the cache's files; the
// scratch folder is this process's and goes with it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "cache/cache_dir.h"
#include "cache/prune.h"
#include "cache/scratch_area.h"
#include "tests/file_text.h"
#include "tests/temp_dir.h"

namespace streamfuse::cache {
namespace {

namespace fs = std::filesystem;
using streamfuse::testing::TempDir;

std::uint64_t bytes_in(const fs::path& root) {
  std::uint64_t total = 0;
  for (const CacheEntry& e : list_cache_entries(root)) total += e.bytes;
  return total;
}

fs::path nth_plan(const fs::path& root, int i) {
  return root / "plans" / "cpu" / std::to_string(i % 16) / (std::to_string(i) + ".plan");
}

TEST(CacheDir, ABurstOfWritesStaysNearTheSizeLimit) {
  TempDir dir;
  constexpr std::uint64_t kLimit = 64 * 1024;
  const std::string payload(1000, 'p');
  CacheDir cache(dir.path(), kLimit);
  std::uint64_t most = 0;
  for (int i = 0; i < 500; ++i) {  // ~8x the limit
    ASSERT_TRUE(cache.write(nth_plan(dir.path(), i), FileKind::kPlan, "fp", payload));
    most = std::max(most, bytes_in(dir.path()));
  }
  // Past the limit by at most the write that crossed it.
  EXPECT_LE(most, kLimit + 2 * payload.size());
  EXPECT_GT(most, kLimit / 2);
  // The most recent writes are what is kept.
  EXPECT_TRUE(fs::exists(nth_plan(dir.path(), 499)));
  EXPECT_FALSE(fs::exists(nth_plan(dir.path(), 0)));
}

// Runs `body` in a child process with its stderr in a file; returns that text.
template <typename Body>
std::string stderr_of_child(const TempDir& dir, Body body) {
  const std::string file = dir.path() + "/child.err";
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return streamfuse::testing::read_all(file);
}

TEST(CacheDir, AWriteFailureThatLastsIsWarnedAboutOnce) {
  TempDir dir;
  const fs::path root = fs::path(dir.path()) / "cache";
  const std::string err = stderr_of_child(dir, [&] {
    CacheDir cache(root, 1u << 30);
    // Every file of more than 512 bytes fails to be written (EFBIG), as a full disk fails them
    // (ENOSPC): persistently, for every write, without making the directory unwritable.
    signal(SIGXFSZ, SIG_IGN);
    const rlimit small{512, 512};
    setrlimit(RLIMIT_FSIZE, &small);
    int failed = 0;
    for (int i = 0; i < 200; ++i)
      failed += !cache.write(nth_plan(root, i), FileKind::kPlan, "fp", std::string(4096, 'x'));
    const rlimit none{RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &none);
    // Writes that fit still go through: the directory was never given up.
    const bool later = cache.write(nth_plan(root, 1000), FileKind::kPlan, "fp", "small");
    if (failed != 200 || !later) _exit(1);
  });
  EXPECT_EQ(streamfuse::testing::count_of(err, "warning"), 1) << err;
  EXPECT_NE(err.find("cannot write in"), std::string::npos) << err;
  EXPECT_NE(err.find("File too large"), std::string::npos) << err;
  // No temporary of a failed write is left, in the cache's folders or its scratch area.
  for (const auto& e : fs::recursive_directory_iterator(root))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(CacheDir, FilesOfAnOlderFormatAreRemovedWithOneWarning) {
  TempDir dir;
  const fs::path root = fs::path(dir.path()) / "cache";
  const std::string err = stderr_of_child(dir, [&] {
    CacheDir cache(root, 1u << 30);
    for (int i = 0; i < 20; ++i) {
      if (!cache.write(nth_plan(root, i), FileKind::kPlan, "fp", "payload")) _exit(1);
      // As an earlier version of the library wrote it: the header's version byte (after the
      // 8-byte magic) one lower.
      std::fstream f(nth_plan(root, i), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(8);
      f.put(static_cast<char>(kFormatVersion - 1));
    }
    for (int i = 0; i < 20; ++i)
      if (cache.read(nth_plan(root, i), FileKind::kPlan, "fp") || fs::exists(nth_plan(root, i)))
        _exit(2);
  });
  // An upgrade meets every file of the cache: one line, not one per file.
  EXPECT_EQ(streamfuse::testing::count_of(err, "warning"), 1) << err;
  EXPECT_NE(err.find("older streamfuse"), std::string::npos) << err;
}

TEST(CacheDir, TheScratchFolderIsThisProcesssAndGoesWhenReleased) {
  TempDir dir;
  CacheDir cache(dir.path(), 1u << 30);
  const fs::path scratch = cache.scratch();
  EXPECT_EQ(scratch.parent_path(), scratch_base(dir.path()));
  EXPECT_EQ(scratch.filename().string().rfind(std::to_string(getpid()) + "-", 0), 0u);
  EXPECT_NE(cache.scratch_file(".tmp"), cache.scratch_file(".tmp"));
  // A second CacheDir on the directory (another process's, say) leaves a live folder alone.
  { CacheDir other(dir.path(), 1u << 30); }
  EXPECT_TRUE(fs::is_directory(scratch));
  cache.release_scratch();
  EXPECT_FALSE(fs::exists(scratch));
}

TEST(CacheDir, BuildFoldersOfEarlierVersionsGoWhenTheScratchAreaIsFirstMade) {
  TempDir temp, dir;
  auto folder = [&](const std::string& name, bool old) {
    const fs::path f = fs::path(temp.path()) / name;
    fs::create_directories(f);
    std::ofstream(f / "k.cpp") << "// a kernel";
    if (old) fs::last_write_time(f, fs::file_time_type::clock::now() - std::chrono::hours(2));
    return f;
  };
  const fs::path abandoned = folder("streamfuse-jit-Ab12Cd", true);
  const fs::path recent = folder("streamfuse-jit-Ef34Gh", false);  // maybe building right now
  const fs::path other = folder("someone-else", true);
  setenv("TMPDIR", temp.path().c_str(), 1);
  {
    CacheDir cache(fs::path(dir.path()) / "cache", 1u << 30);
    cache.scratch();
  }
  unsetenv("TMPDIR");
  EXPECT_FALSE(fs::exists(abandoned));
  EXPECT_TRUE(fs::exists(recent));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_EQ(remove_legacy_build_folders(temp.path()), 0u);
}

}  // namespace
}  // namespace streamfuse::cache

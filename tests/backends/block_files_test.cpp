// The allocator's working set on disk (backends/block_files.h): the record round-trips, holds
// each class's high in the order the classes first reached one, is one program's (named by its
// command line), is written only when it changed, and a bad file is a miss with one warning.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backends/block_files.h"
#include "cache/archive.h"
#include "cache/cache_dir.h"
#include "cache/cache_file.h"
#include "tests/file_text.h"
#include "tests/temp_dir.h"

namespace streamfuse::backends {
namespace {

using streamfuse::testing::count_of;
using streamfuse::testing::TempDir;

struct Dir {
  TempDir dir;
  std::shared_ptr<cache::CacheDir> cache = std::make_shared<cache::CacheDir>(dir.path(), 1 << 30);
  std::filesystem::path path(const std::string& program = "0123456789abcdef") const {
    return cache::held_blocks_path(dir.path(), "cpu", program);
  }
};

TEST(HeldBlocksCodec, RoundTripsAndRejectsWhatNoAllocatorHolds) {
  const std::vector<HeldBlocks> blocks{{64, 3}, {1 << 21, 2}, {9437184, 1}};
  EXPECT_EQ(decode_held_blocks(encode_held_blocks(blocks)), blocks);
  EXPECT_THROW(decode_held_blocks(encode_held_blocks({{100, 1}})), cache::FormatError)
      << "not a size class";
  EXPECT_THROW(decode_held_blocks(encode_held_blocks({{0, 1}})), cache::FormatError);
  EXPECT_THROW(decode_held_blocks(encode_held_blocks({{std::uint64_t{1} << 41, 1}})),
               cache::FormatError);
  EXPECT_THROW(decode_held_blocks(encode_held_blocks({{64, 0}})), cache::FormatError);
  EXPECT_THROW(decode_held_blocks(encode_held_blocks({{64, kMaxHeldBlocks + 1}})),
               cache::FormatError);
  const std::string bytes = encode_held_blocks(blocks);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decode_held_blocks(bytes.substr(0, n)), cache::FormatError) << n;
}

TEST(BlockFiles, TheHighsAreReadBackInTheOrderTheClassesFirstReachedOne) {
  Dir d;
  {
    BlockFiles files(d.cache, "cpu", "0123456789abcdef");
    EXPECT_TRUE(files.load().empty());  // no file yet: a quiet miss
    files.note(4096, 1);
    files.note(128, 1);
    files.note(4096, 2);
    files.note(4096, 1);  // not a high
    files.flush();
  }
  EXPECT_EQ(BlockFiles(d.cache, "cpu", "0123456789abcdef").load(),
            (std::vector<HeldBlocks>{{4096, 2}, {128, 1}}));
  // Another program's record is its own, and so is another device's.
  EXPECT_TRUE(BlockFiles(d.cache, "cpu", "fedcba9876543210").load().empty());
  EXPECT_TRUE(BlockFiles(d.cache, "cuda:0", "0123456789abcdef").load().empty());
  EXPECT_EQ(program_key(), program_key());
  EXPECT_EQ(program_key().size(), 16u);
}

TEST(BlockFiles, TheNextRunsRecordReplacesTheFileOnlyWhenItDiffers) {
  Dir d;
  {
    BlockFiles files(d.cache, "cpu", "0123456789abcdef");
    files.note(4096, 2);
    files.flush();
  }
  struct stat before {};
  ASSERT_EQ(stat(d.path().c_str(), &before), 0);
  {
    BlockFiles same(d.cache, "cpu", "0123456789abcdef");
    ASSERT_EQ(same.load().size(), 1u);
    same.note(4096, 1);
    same.note(4096, 2);  // the same working set: no write
    same.flush();
  }
  struct stat after {};
  ASSERT_EQ(stat(d.path().c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  {
    BlockFiles smaller(d.cache, "cpu", "0123456789abcdef");
    smaller.load();
    smaller.note(8192, 1);  // a run that used less: its record replaces the file's
    smaller.flush();
  }
  EXPECT_EQ(BlockFiles(d.cache, "cpu", "0123456789abcdef").load(),
            (std::vector<HeldBlocks>{{8192, 1}}));
}

TEST(BlockFiles, ABadFileIsAMissWithOneWarning) {
  Dir d;
  std::filesystem::create_directories(d.path().parent_path());
  cache::write_cache_file(d.path(), cache::FileKind::kHeldBlocks, cache::portable_fingerprint(),
                          encode_held_blocks({{100, 1}}));  // no size class
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(BlockFiles(d.cache, "cpu", "0123456789abcdef").load().empty());
  EXPECT_TRUE(BlockFiles(d.cache, "cpu", "0123456789abcdef").load().empty());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "warning: cache: ignored "), 1) << err;
}

}  // namespace
}  // namespace streamfuse::backends

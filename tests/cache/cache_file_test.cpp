// Cache files: what is written reads back, and every kind of bad file is a rejection with its
// reason, never an exception or a wrong payload.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache_file.h"
#include "streamfuse/error.h"

namespace streamfuse::cache {
namespace {

namespace fs = std::filesystem;

class CacheFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("sf_cache_file_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string bytes_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void overwrite(const fs::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  Rejection read(const fs::path& p) { return read_cache_file(p, FileKind::kPlan, "fp").rejection; }

  fs::path dir_;
  const std::string payload_ = std::string("plan\0bytes", 10) + std::string(1000, 'x');
};

TEST_F(CacheFileTest, WhatIsWrittenReadsBack) {
  const fs::path p = dir_ / "a.plan";
  write_cache_file(p, FileKind::kPlan, "fp", payload_);
  const ReadResult r = read_cache_file(p, FileKind::kPlan, "fp");
  ASSERT_TRUE(r) << rejection_name(r.rejection);
  EXPECT_EQ(r.payload, payload_);
  EXPECT_EQ(r.modified, fs::last_write_time(p));
  write_cache_file(p, FileKind::kPlan, "fp", "");  // replaced in place, empty payloads too
  EXPECT_EQ(read_cache_file(p, FileKind::kPlan, "fp").payload, "");
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename(), "a.plan") << "no temporary left behind";
}

TEST_F(CacheFileTest, MissingAndDirectoriesAreRejected) {
  EXPECT_EQ(read(dir_ / "none"), Rejection::kMissing);
  fs::create_directory(dir_ / "d");
  EXPECT_EQ(read(dir_ / "d"), Rejection::kNotAFile);
  // A FIFO with no writer: rejected without blocking on the open.
  ASSERT_EQ(::mkfifo((dir_ / "f").c_str(), 0600), 0);
  EXPECT_EQ(read(dir_ / "f"), Rejection::kNotAFile);
}

TEST_F(CacheFileTest, UnreadableFilesAreRejected) {
  const fs::path p = dir_ / "u";
  write_cache_file(p, FileKind::kPlan, "fp", payload_);
  fs::permissions(p, fs::perms::none);
  if (::access(p.c_str(), R_OK) == 0) GTEST_SKIP() << "running with CAP_DAC_OVERRIDE (root)";
  EXPECT_EQ(read(p), Rejection::kUnreadable);
}

TEST_F(CacheFileTest, EveryTruncationIsRejected) {
  const fs::path p = dir_ / "t";
  write_cache_file(p, FileKind::kPlan, "fp", payload_);
  const std::string whole = bytes_of(p);
  for (std::size_t n = 0; n < whole.size(); n += (n < 64 ? 1 : 97)) {
    overwrite(p, whole.substr(0, n));
    EXPECT_EQ(read(p), Rejection::kTruncated) << n << " bytes";
  }
  overwrite(p, whole + "z");
  EXPECT_EQ(read(p), Rejection::kTrailingBytes);
}

TEST_F(CacheFileTest, CorruptionIsCaughtByTheChecksum) {
  const fs::path p = dir_ / "c";
  write_cache_file(p, FileKind::kPlan, "fp", payload_);
  const std::string whole = bytes_of(p);
  for (std::size_t at : {whole.size() - 1, whole.size() - 500, whole.size() - payload_.size()}) {
    std::string bad = whole;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    overwrite(p, bad);
    EXPECT_EQ(read(p), Rejection::kChecksumMismatch) << "byte " << at;
  }
}

TEST_F(CacheFileTest, HeadersFromElsewhereAreRejected) {
  const fs::path p = dir_ / "h";
  overwrite(p, std::string(200, 'q'));
  EXPECT_EQ(read(p), Rejection::kWrongMagic);
  write_cache_file(p, FileKind::kPlan, "fp", payload_);
  const std::string whole = bytes_of(p);
  std::string newer = whole, older = whole;
  newer[8] = static_cast<char>(kFormatVersion + 1);
  older[8] = 0;
  overwrite(p, newer);
  EXPECT_EQ(read(p), Rejection::kNewerFormat);
  overwrite(p, older);
  EXPECT_EQ(read(p), Rejection::kOlderFormat);
  overwrite(p, whole);
  EXPECT_EQ(read_cache_file(p, FileKind::kCpuKernel, "fp").rejection, Rejection::kWrongKind);
  const ReadResult other = read_cache_file(p, FileKind::kPlan, "fp of another machine");
  EXPECT_EQ(other.rejection, Rejection::kOtherFingerprint);
  EXPECT_NE(other.detail.find("fp"), std::string::npos);
}

// The checks on bytes are the checks on files: a parser that fuzz targets and tools can call.
TEST_F(CacheFileTest, BytesAreCheckedAsFilesAre) {
  const fs::path p = dir_ / "b";
  write_cache_file(p, FileKind::kPlan, "fp", payload_);
  const std::string whole = bytes_of(p);
  const ReadResult r = parse_cache_file(whole, FileKind::kPlan, "fp");
  ASSERT_TRUE(r) << rejection_name(r.rejection);
  EXPECT_EQ(r.payload, payload_);
  EXPECT_EQ(r.fingerprint, "fp");
  const ReadResult any = parse_cache_file(whole, std::nullopt, std::nullopt);
  ASSERT_TRUE(any);
  EXPECT_EQ(any.kind, FileKind::kPlan);
  EXPECT_EQ(parse_cache_file(whole, FileKind::kBundle, "fp").rejection, Rejection::kWrongKind);
  EXPECT_EQ(parse_cache_file(whole, std::nullopt, "other").rejection,
            Rejection::kOtherFingerprint);
  EXPECT_EQ(parse_cache_file(whole.substr(0, 31), std::nullopt, std::nullopt).rejection,
            Rejection::kTruncated);
  std::string corrupt = whole;
  corrupt.back() ^= 1;
  EXPECT_EQ(parse_cache_file(corrupt, std::nullopt, std::nullopt).rejection,
            Rejection::kChecksumMismatch);
  // A fingerprint size that claims the whole file, and more.
  std::string lying = whole;
  for (int i = 0; i < 4; ++i) lying[16 + i] = '\xff';
  EXPECT_EQ(parse_cache_file(lying, std::nullopt, std::nullopt).rejection, Rejection::kTruncated);
}

// Readers racing a writer see the old file or the new one, never a mix.
TEST_F(CacheFileTest, ConcurrentWritersAndReadersSeeWholeFiles) {
  const fs::path p = dir_ / "race";
  const std::string a(100000, 'a'), b(50000, 'b');
  write_cache_file(p, FileKind::kPlan, "fp", a);
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) write_cache_file(p, FileKind::kPlan, "fp", i % 2 ? a : b);
  });
  int reads = 0;
  for (; reads < 400; ++reads) {
    const ReadResult r = read_cache_file(p, FileKind::kPlan, "fp");
    ASSERT_TRUE(r) << rejection_name(r.rejection);
    ASSERT_TRUE(r.payload == a || r.payload == b);
  }
  writer.join();
}

TEST_F(CacheFileTest, AnUnwritableDirectoryThrowsNamingThePath) {
  const fs::path p = dir_ / "no" / "such" / "dir" / "f";
  try {
    write_cache_file(p, FileKind::kPlan, "fp", payload_);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace streamfuse::cache

// Plan entries in the cache directory (PlanFiles::entries / save_entry): the first ops of the
// segments processes started with, this process's first, then the file's, capped; a bad file is
// a miss with one warning; and a device runtime reads its plans ahead from them when it starts.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "cache/cache_dir.h"
#include "fusion/plan_files.h"
#include "tests/file_text.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;

namespace streamfuse::cache {
namespace {

using streamfuse::testing::count_of;
using streamfuse::testing::patch_file;
using streamfuse::testing::TempDir;

// A relative op of its own per k: an exp of a [k + 1]-element tensor.
core::OpDesc entry(int k) {
  core::OpDesc op;
  op.kind = core::OpKind::kExp;
  op.inputs.push_back({0, Shape{k + 1}, kF32, core::TensorStatus::kReadOnly});
  op.outputs.push_back({1, Shape{k + 1}, kF32, core::TensorStatus::kNotInit});
  return op;
}

struct Dir {
  TempDir dir;
  std::shared_ptr<CacheDir> cache = std::make_shared<CacheDir>(dir.path(), 1 << 30);
  fs::path path = plan_entries_path(dir.path(), "cpu");
  // One process: saves `ops` as its entries, and writes them.
  void process_saves(const std::vector<core::OpDesc>& ops) {
    fusion::PlanFiles files(cache, "cpu");
    for (const core::OpDesc& op : ops) files.save_entry(op);
    files.flush();
  }
  std::vector<core::OpDesc> read() { return fusion::PlanFiles(cache, "cpu").entries(); }
};

TEST(PlanEntries, EachProcessesEntriesComeFirstThenTheFilesUpToTheCap) {
  Dir d;
  EXPECT_TRUE(d.read().empty());
  d.process_saves({entry(0), entry(1), entry(0)});  // a repeat is kept once
  EXPECT_EQ(d.read(), (std::vector<core::OpDesc>{entry(0), entry(1)}));
  d.process_saves({entry(2), entry(1)});  // a later process: its own first, none twice
  EXPECT_EQ(d.read(), (std::vector<core::OpDesc>{entry(2), entry(1), entry(0)}));

  // A process that read the file saves only the entries it did not hold.
  {
    fusion::PlanFiles files(d.cache, "cpu");
    files.entries();
    fs::remove(d.path);
    files.save_entry(entry(0));
    files.flush();
    EXPECT_FALSE(fs::exists(d.path)) << "known: not written again";
  }
  // One that saves its entries before it reads the file writes nothing the file has.
  d.process_saves({entry(2), entry(1), entry(0)});
  const fs::file_time_type written = fs::last_write_time(d.path);
  fs::last_write_time(d.path, written - std::chrono::hours(1));
  d.process_saves({entry(1)});
  EXPECT_EQ(fs::last_write_time(d.path), written - std::chrono::hours(1)) << "not written again";

  std::vector<core::OpDesc> many;
  for (int k = 10; k < 10 + 2 * static_cast<int>(fusion::PlanFiles::kMaxEntries); ++k)
    many.push_back(entry(k));
  d.process_saves(many);
  const std::vector<core::OpDesc> kept = d.read();
  ASSERT_EQ(kept.size(), fusion::PlanFiles::kMaxEntries);
  EXPECT_EQ(kept.front(), entry(10)) << "a process's first entries are the ones it keeps";
}

TEST(PlanEntries, ABadFileIsAMissWithOneWarningAndIsReplaced) {
  Dir d;
  d.process_saves({entry(0)});
  patch_file(d.path, [](std::string& bytes) { bytes.back() ^= 0x5a; });  // fails its checksum
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(d.read().empty());
  EXPECT_TRUE(d.read().empty());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "warning:"), 1) << err;
  EXPECT_NE(err.find(d.path.string()), std::string::npos) << err;
  d.process_saves({entry(3)});
  EXPECT_EQ(d.read(), std::vector<core::OpDesc>{entry(3)});
}

}  // namespace
}  // namespace streamfuse::cache

// Plans in the cache directory: saved off-thread and read back by first op; every kind of bad
// file is a miss with one warning; writers never show readers half a file; the PlanStore asks
// once per first op; unwritable directories and the size limit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <streamfuse/streamfuse.h>

#include "cache/cache_dir.h"
#include "cache/prune.h"
#include "fusion/plan_codec.h"
#include "fusion/plan_files.h"
#include "fusion/plan_store.h"
#include "tests/file_text.h"
#include "tests/fusion/recorded_segment.h"
#include "tests/temp_dir.h"

namespace sf = streamfuse;
namespace fs = std::filesystem;

namespace streamfuse::cache {
namespace {

using streamfuse::testing::count_of;
using streamfuse::testing::patch_file;
using streamfuse::testing::read_all;
using streamfuse::testing::TempDir;
using streamfuse::testing::write_all;

std::shared_ptr<const fusion::ExecutionPlan> small_plan(float scale = 2.0f) {
  const sf::Tensor x = sf::randn({8, 16});
  sf::Tensor y;
  auto built = streamfuse::testing::build_elementwise([&] { y = sf::exp(x * scale + 1.0f); });
  auto plan = std::make_shared<fusion::ExecutionPlan>();
  plan->ops = built.ops;
  plan->optimization = std::move(built.optimization);
  plan->triggers.push_back({fusion::Trigger::Kind::kOnSync, {}});
  return plan;
}

struct Saved {
  TempDir dir;
  std::shared_ptr<CacheDir> cache = std::make_shared<CacheDir>(dir.path(), 1 << 30);
  std::shared_ptr<const fusion::ExecutionPlan> plan = small_plan();
  fs::path path = plan_path(dir.path(), "cpu", fusion::first_op_hash(plan->ops.front()),
                            fusion::plan_hash(plan->ops));
  Saved() {
    fusion::PlanFiles files(cache, "cpu");
    files.save(plan);
    files.flush();
  }
  std::vector<fusion::PlanDraft> load() {
    return fusion::PlanFiles(cache, "cpu").load(plan->ops.front());
  }
};

TEST(PlanFiles, SavedPlansAreReadBackByTheirFirstOp) {
  Saved s;
  ASSERT_TRUE(fs::is_regular_file(s.path)) << s.path;
  const std::vector<fusion::PlanDraft> plans = s.load();
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].ops, s.plan->ops);
  EXPECT_EQ(plans[0].triggers, s.plan->triggers);
  EXPECT_NE(plans[0].optimization, nullptr);
  // Another first op finds nothing; another device's folder is not read.
  EXPECT_TRUE(fusion::PlanFiles(s.cache, "cpu").load(s.plan->ops.back()).empty());
  EXPECT_TRUE(fusion::PlanFiles(s.cache, "cuda:0").load(s.plan->ops.front()).empty());
}

TEST(PlanFiles, TriggersOfOneProcessAreKeptWhenAnotherSavesTheSamePlan) {
  Saved s;
  auto other = std::make_shared<fusion::ExecutionPlan>();
  other->ops = s.plan->ops;
  other->optimization = s.plan->optimization;
  other->triggers.push_back({fusion::Trigger::Kind::kAlways, {}});
  {
    fusion::PlanFiles files(s.cache, "cpu");
    files.save(other);
  }  // the destructor writes what is queued
  const std::vector<fusion::PlanDraft> plans = s.load();
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].triggers.size(), 2u);
}

// Each corruption of a saved plan file, applied before reading it back.
struct Corruption {
  const char* name;
  void (*apply)(const fs::path& path);
  bool removed;  // a broken file of ours is removed (rebuilt later); others are left alone
};

const Corruption kCorruptions[] = {
    {"truncated", [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) - 7); }, true},
    {"checksum",
     [](const fs::path& p) { patch_file(p, [](std::string& b) { b[b.size() - 3] ^= 0x20; }); },
     true},
    {"wrong_magic", [](const fs::path& p) { patch_file(p, [](std::string& b) { b[0] = 'X'; }); },
     true},
    {"older_format",
     [](const fs::path& p) {
       patch_file(p, [](std::string& b) { b[8] = 0; });  // format version, little-endian
     },
     true},
    {"newer_format", [](const fs::path& p) { patch_file(p, [](std::string& b) { b[8] = 99; }); },
     false},
    {"trailing_bytes", [](const fs::path& p) { patch_file(p, [](std::string& b) { b += "x"; }); },
     true},
    {"empty", [](const fs::path& p) { write_all(p, ""); }, true},
    {"directory_in_its_place",
     [](const fs::path& p) {
       fs::remove(p);
       fs::create_directory(p);
     },
     false},
    {"payload_that_does_not_decode",
     [](const fs::path& p) {
       write_cache_file(p, FileKind::kPlan, portable_fingerprint(), "not a plan");
     },
     true},
    {"another_kind",
     [](const fs::path& p) {
       write_cache_file(p, FileKind::kCpuKernel, portable_fingerprint(), "k");
     },
     true},
};

class BadPlanFile : public ::testing::TestWithParam<Corruption> {};

TEST_P(BadPlanFile, IsAMissWithOneWarning) {
  Saved s;
  GetParam().apply(s.path);
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(s.load().empty());
  EXPECT_TRUE(s.load().empty());  // asked again: no second warning
  const std::string err = ::testing::internal::GetCapturedStderr();
  // An older format is what an upgrade meets in every file: one line for them all, naming the
  // first (cache_dir_test checks that a second file adds nothing).
  const bool upgrade = std::string(GetParam().name) == "older_format";
  EXPECT_EQ(
      count_of(err, upgrade ? "older streamfuse" : "warning: cache: ignored " + s.path.string()), 1)
      << err;
  EXPECT_NE(err.find(s.path.string()), std::string::npos) << err;
  EXPECT_EQ(count_of(err, "warning:"), 1) << err;
  EXPECT_EQ(fs::exists(s.path), !GetParam().removed);
  if (GetParam().removed) {  // built again: the next save is read back
    fusion::PlanFiles files(s.cache, "cpu");
    files.save(s.plan);
    files.flush();
    EXPECT_EQ(s.load().size(), 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(Each, BadPlanFile, ::testing::ValuesIn(kCorruptions),
                         [](const auto& info) { return std::string(info.param.name); });

// A plan an older streamfuse wrote (another version, or plans encoded before programs were blocks
// around an anchor) is stale, not broken: a quiet miss, replaced when the plan is learned again.
TEST(PlanFiles, AnotherVersionsPlanIsAQuietMissAndReplaced) {
  Saved s;
  const ReadResult ours = read_cache_file(s.path, FileKind::kPlan, portable_fingerprint());
  ASSERT_TRUE(ours);
  write_cache_file(s.path, FileKind::kPlan, "streamfuse 0.1.0 plans", ours.payload);
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(s.load().empty());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  fusion::PlanFiles files(s.cache, "cpu");
  files.save(s.plan);
  files.flush();
  EXPECT_EQ(s.load().size(), 1u);
}

TEST(PlanFiles, ReadersNeverSeeAHalfWrittenFile) {
  Saved s;
  const std::string payload = fusion::encode_plan(*s.plan);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop) write_cache_file(s.path, FileKind::kPlan, portable_fingerprint(), payload);
  });
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 300; ++i) ASSERT_EQ(s.load().size(), 1u) << i;
  stop = true;
  writer.join();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// Counts what the store asks of its persistence.
struct CountingPersistence final : fusion::PlanPersistence {
  std::vector<fusion::PlanDraft> stored;
  int loads = 0, saves = 0;
  std::vector<fusion::PlanDraft> load(const core::OpDesc&) override {
    ++loads;
    return stored;
  }
  void save(std::shared_ptr<const fusion::ExecutionPlan>) override { ++saves; }
  std::vector<core::OpDesc> entries() override { return {}; }
  void save_entry(const core::OpDesc&) override {}
};

TEST(PlanStore, ReadsPersistedPlansTheFirstTimeAnOpStartsASegmentOnly) {
  const auto plan = small_plan();
  auto persistence = std::make_shared<CountingPersistence>();
  persistence->stored.push_back({plan->ops, plan->optimization, plan->triggers, {}});
  fusion::PlanStore store(16, 100);
  store.set_persistence(persistence);
  fusion::PlanRefs found;
  store.starting_with(plan->ops.front(), found);
  store.starting_with(plan->ops.front(), found);
  EXPECT_EQ(persistence->loads, 1);
  ASSERT_EQ(found.size(), 2u);  // the loaded plan, found twice
  EXPECT_EQ(found[0]->ops, plan->ops);
  EXPECT_EQ(store.loaded(), 1u);
  EXPECT_EQ(store.explorations(), 0u);
  EXPECT_EQ(persistence->saves, 0);  // loaded plans are not written back

  // A new trigger changes the plan: saved. The same trigger again: nothing to save.
  store.add({plan->ops, plan->optimization, {{fusion::Trigger::Kind::kAlways, {}}}, {}});
  store.add({plan->ops, plan->optimization, {{fusion::Trigger::Kind::kAlways, {}}}, {}});
  EXPECT_EQ(persistence->saves, 1);
  EXPECT_EQ(store.size(), 1u);
}

TEST(PlanStore, KeepsAtMostMaxTriggersPerPlan) {
  const auto plan = small_plan();
  fusion::PlanStore store(16, 100);
  for (std::size_t i = 0; i < fusion::kMaxTriggers + 10; ++i) {
    fusion::Trigger t{fusion::Trigger::Kind::kOnOperations, {plan->ops.front()}};
    t.ops.front().scalars.push_back(Scalar(static_cast<double>(i)));
    store.add({plan->ops, plan->optimization, {t}, {}});
  }
  const fusion::PlanRef stored = store.plans().front();
  EXPECT_EQ(stored->triggers.size(), fusion::kMaxTriggers);
  EXPECT_EQ(fusion::decode_plan(fusion::encode_plan(*stored)).triggers.size(),
            fusion::kMaxTriggers);
}

TEST(CacheDir, AnUnusableDirectoryDisablesWritingAndSaysSoOnce) {
  TempDir dir;
  const std::string file = dir.write("a-file", "x");
  ::testing::internal::CaptureStderr();
  auto cache = std::make_shared<CacheDir>(fs::path(file) / "cache", 1 << 30);
  fusion::PlanFiles files(cache, "cpu");
  const auto plan = small_plan();
  files.save(plan);
  files.flush();
  EXPECT_TRUE(files.load(plan->ops.front()).empty());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache->writable());
  EXPECT_EQ(count_of(err, "warning:"), 1) << err;
  EXPECT_NE(err.find("not persisted"), std::string::npos) << err;
}

TEST(CacheDir, PrunesTheLeastRecentlyUsedFilesPastItsLimit) {
  TempDir dir;
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 10; ++i) {  // 10 files of ~1 KB, file i used i hours ago
    // The five oldest are the kernels of program 8, whose folder goes with them.
    const fs::path p = kernel_path(dir.path(), i < 5 ? 7 : 8, static_cast<std::uint64_t>(i));
    fs::create_directories(p.parent_path());
    write_cache_file(p, FileKind::kCpuKernel, "fp", std::string(1000, 'k'));
    fs::last_write_time(p, now - std::chrono::hours(i));
  }
  const PruneResult r = prune_cache(dir.path(), 5500);
  EXPECT_EQ(r.removed, 5u);
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(fs::exists(kernel_path(dir.path(), 7, static_cast<std::uint64_t>(i)))) << i;
  EXPECT_FALSE(fs::exists(kernel_folder(dir.path(), 8)));

  // A CacheDir prunes on its own once a write takes it past its limit.
  CacheDir small(dir.path(), 3000);
  ASSERT_TRUE(small.write(kernel_path(dir.path(), 7, 99), FileKind::kCpuKernel, "fp", "new"));
  std::uint64_t total = 0;
  for (const CacheEntry& e : list_cache_entries(dir.path())) total += e.bytes;
  EXPECT_LE(total, 3000u);
  EXPECT_TRUE(fs::exists(kernel_path(dir.path(), 7, 99)));  // the newest stays
}

TEST(CacheDir, ReadingAFileMarksItUsed) {
  TempDir dir;
  CacheDir cache(dir.path(), 1 << 30);
  const fs::path p = kernel_path(dir.path(), 7, 1);
  ASSERT_TRUE(cache.write(p, FileKind::kCpuKernel, "fp", "payload"));
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(5);
  fs::last_write_time(p, old);
  EXPECT_EQ(cache.read(p, FileKind::kCpuKernel, "fp"), "payload");
  EXPECT_GT(fs::last_write_time(p), old + std::chrono::hours(4));
  // A mark newer than kUseMarkInterval is left as it is (no metadata write per read).
  const auto recent = fs::file_time_type::clock::now() - kUseMarkInterval / 2;
  fs::last_write_time(p, recent);
  EXPECT_EQ(cache.read(p, FileKind::kCpuKernel, "fp"), "payload");
  EXPECT_EQ(fs::last_write_time(p), recent);
}

}  // namespace
}  // namespace streamfuse::cache

// The caching allocator: size classes, reuse, the cache bound, statistics, and running dry.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "backends/caching_allocator.h"
#include "streamfuse/error.h"

namespace sfb = streamfuse::backends;

namespace {

// A memory source that counts and can be told to fail.
class CountingSource final : public sfb::MemorySource {
 public:
  void* allocate(std::size_t bytes) override {
    if (bytes > limit) return nullptr;
    ++allocations;
    live += bytes;
    return std::aligned_alloc(64, bytes);
  }
  void free(void* p, std::size_t bytes) noexcept override {
    ++frees;
    live -= bytes;
    std::free(p);
  }
  std::size_t limit = SIZE_MAX, live = 0;
  int allocations = 0, frees = 0;
};

TEST(CachingAllocatorTest, SizeClassesAreTightAndMonotonic) {
  EXPECT_EQ(sfb::CachingAllocator::size_class(0), 64u);
  EXPECT_EQ(sfb::CachingAllocator::size_class(65), 128u);
  EXPECT_EQ(sfb::CachingAllocator::size_class(1024), 1024u);
  EXPECT_EQ(sfb::CachingAllocator::size_class(std::size_t{128} << 20), std::size_t{128} << 20);
  std::size_t prev = 0;
  for (std::size_t b = 1; b < (std::size_t{1} << 30); b = b * 9 / 8 + 1) {
    const std::size_t c = sfb::CachingAllocator::size_class(b);
    EXPECT_GE(c, b);
    EXPECT_LE(c - b, b / 16 + 64) << b;  // at most 6.25% (or 64 bytes) over
    EXPECT_EQ(c % 64, 0u);
    EXPECT_GE(c, prev);
    prev = c;
  }
}

TEST(CachingAllocatorTest, FreedBlocksAreReusedForTheSameClass) {
  CountingSource src;
  sfb::CachingAllocator alloc(src, 1 << 20);
  void* first;
  {
    sfb::StorageRef a = alloc.allocate(1000);
    first = a.data();
    EXPECT_TRUE(a.may_overwrite());
    sfb::StorageRef b = a;
    EXPECT_FALSE(a.may_overwrite());
  }
  sfb::StorageRef c = alloc.allocate(1000);
  EXPECT_EQ(c.data(), first);
  EXPECT_EQ(src.allocations, 1);
  const auto s = alloc.stats();
  EXPECT_EQ(s.cache_hits, 1);
  EXPECT_EQ(s.allocations, 2);
  EXPECT_EQ(s.bytes_in_use, 1000);
  EXPECT_EQ(s.live_buffers, 1);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(c.data()) % 64, 0u);
}

TEST(CachingAllocatorTest, TheCacheBoundEvictsTheOldestFirst) {
  CountingSource src;
  sfb::CachingAllocator alloc(src, 4096);
  std::vector<sfb::StorageRef> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(alloc.allocate(1024));
  blocks.clear();  // 8 KiB freed, 4 KiB may stay
  EXPECT_LE(alloc.stats().bytes_cached, 4096);
  EXPECT_EQ(src.frees, 4);
  EXPECT_EQ(src.live, static_cast<std::size_t>(alloc.stats().bytes_reserved));
  sfb::StorageRef big = alloc.allocate(1 << 20);  // larger than the bound: never cached
  big.reset();
  EXPECT_LE(alloc.stats().bytes_cached, 4096);
  alloc.empty_cache();
  EXPECT_EQ(src.live, 0u);
  EXPECT_EQ(alloc.stats().bytes_reserved, 0);
}

TEST(CachingAllocatorTest, RunningDryEmptiesTheCacheThenThrows) {
  CountingSource src;
  sfb::CachingAllocator alloc(src, 1 << 20);
  { sfb::StorageRef a = alloc.allocate(4096); }  // cached
  src.limit = 2048;                              // the system can no longer give 4 KiB+
  EXPECT_THROW(alloc.allocate(8192), streamfuse::Error);
  EXPECT_EQ(alloc.stats().bytes_cached, 0) << "the cache was given back before giving up";
  try {
    alloc.allocate(std::size_t{3} << 30);
  } catch (const streamfuse::Error& e) {
    EXPECT_NE(std::string(e.what()).find("3.0 GiB"), std::string::npos) << e.what();
  }
  src.limit = SIZE_MAX;
  EXPECT_NO_THROW(alloc.allocate(8192));
}

TEST(CachingAllocatorTest, PeakTracksHighWaterMark) {
  CountingSource src;
  sfb::CachingAllocator alloc(src, 1 << 20);
  { sfb::StorageRef a = alloc.allocate(5000), b = alloc.allocate(3000); }
  sfb::StorageRef c = alloc.allocate(100);
  EXPECT_EQ(alloc.stats().peak_bytes_in_use, 8000);
  alloc.reset_peak();
  EXPECT_EQ(alloc.stats().peak_bytes_in_use, 100);
}

// A block for zeros: fresh from a source that gives zeroed memory, it is reported zeroed and
// nothing needs writing; reused from the cache (it held other values), it is not.
class ZeroingSource final : public sfb::MemorySource {
 public:
  ~ZeroingSource() override {
    for (void* p : blocks_) std::free(p);
  }
  void* allocate(std::size_t bytes) override { return keep(std::aligned_alloc(64, bytes)); }
  void* allocate_zeroed(std::size_t bytes, bool* zeroed) override {
    void* p = keep(std::aligned_alloc(64, bytes));
    std::memset(p, 0, bytes);
    *zeroed = true;
    return p;
  }
  void* allocate_ahead(std::size_t bytes, bool* zeroed) override {
    return allocate_zeroed(bytes, zeroed);
  }
  void free(void*, std::size_t) noexcept override {}  // freed with the source

 private:
  void* keep(void* p) {
    blocks_.push_back(p);
    return p;
  }

 public:
  std::size_t allocations() const { return blocks_.size(); }

 private:
  std::vector<void*> blocks_;
};

TEST(CachingAllocatorTest, AZeroedBlockIsFreshNeverReused) {
  ZeroingSource src;
  sfb::CachingAllocator alloc(src, 1 << 20);
  bool zeroed = false;
  void* first;
  {
    sfb::StorageRef a = alloc.allocate_zeroed(4096, &zeroed);
    EXPECT_TRUE(zeroed);
    first = a.data();
  }
  sfb::StorageRef b = alloc.allocate_zeroed(4096, &zeroed);
  EXPECT_EQ(b.data(), first);  // the cached block, which may hold anything
  EXPECT_FALSE(zeroed);
  CountingSource plain;  // the default: a source that promises nothing
  sfb::CachingAllocator other(plain, 1 << 20);
  sfb::StorageRef c = other.allocate_zeroed(4096, &zeroed);
  EXPECT_FALSE(zeroed);
}

// ---- the working set made ahead ---------------------------------------------------------------

TEST(CachingAllocatorTest, TheListenerHearsEachNewHighOfBlocksInUsePerClass) {
  CountingSource src;
  sfb::CachingAllocator alloc(src, 1 << 20);
  std::vector<std::pair<std::size_t, std::uint32_t>> heard;
  alloc.set_peak_listener([&](std::size_t c, std::uint32_t n) { heard.emplace_back(c, n); });
  {
    sfb::StorageRef a = alloc.allocate(4096), b = alloc.allocate(4000);  // one class, two
    sfb::StorageRef c = alloc.allocate(100);
  }
  { sfb::StorageRef a = alloc.allocate(4096), b = alloc.allocate(4096); }  // reused: no new high
  sfb::StorageRef a = alloc.allocate(4096), b = alloc.allocate(4096), c = alloc.allocate(4096);
  EXPECT_EQ(heard, (std::vector<std::pair<std::size_t, std::uint32_t>>{
                       {4096, 1}, {4096, 2}, {128, 1}, {4096, 3}}));
}

TEST(CachingAllocatorTest, ReservedBlocksAreCachedAndHandedOutWithoutTheSource) {
  CountingSource src;
  sfb::CachingAllocator alloc(src, 1 << 20);
  std::vector<std::uint32_t> heard;
  alloc.set_peak_listener([&](std::size_t, std::uint32_t n) { heard.push_back(n); });
  EXPECT_EQ(alloc.reserve(4096, 3), 3u);
  EXPECT_EQ(alloc.reserve(4096, 3), 0u) << "three are held already";
  EXPECT_EQ(alloc.stats().bytes_cached, 3 * 4096);
  EXPECT_TRUE(heard.empty()) << "made ahead is not in use";
  {
    sfb::StorageRef a = alloc.allocate(4096), b = alloc.allocate(4000), c = alloc.allocate(3970);
    EXPECT_EQ(src.allocations, 3) << "all three came from the cache";
    EXPECT_EQ(alloc.stats().cache_hits, 3);
  }
  EXPECT_EQ(heard, (std::vector<std::uint32_t>{1, 2, 3}));  // the next run makes them again
  // Of a class some of which are in use, only the missing ones are made.
  sfb::StorageRef held = alloc.allocate(8192);
  EXPECT_EQ(alloc.reserve(8192, 2), 1u);
  EXPECT_EQ(alloc.reserve(100, 1), 0u) << "not a size class: nothing";
  EXPECT_EQ(alloc.reserve(0, 1), 0u);
}

TEST(CachingAllocatorTest, ReservingStopsAtTheCacheLimitAndWhenTheSourceRunsDry) {
  CountingSource src;
  sfb::CachingAllocator alloc(src, 3 * 4096);
  EXPECT_EQ(alloc.reserve(4096, 10), 3u);
  EXPECT_EQ(alloc.stats().bytes_cached, 3 * 4096) << "nothing evicted to make room";
  CountingSource dry;
  dry.limit = 0;
  sfb::CachingAllocator nothing(dry, 1 << 20);
  EXPECT_EQ(nothing.reserve(4096, 2), 0u);  // no error: the run faults its pages in later
  EXPECT_EQ(nothing.stats().bytes_reserved, 0);
}

TEST(CachingAllocatorTest, ABlockEvictedOrTooBigToKeepIsNoLongerHeld) {
  CountingSource src;
  sfb::CachingAllocator alloc(src, 4096);
  EXPECT_EQ(alloc.reserve(4096, 1), 1u);
  alloc.empty_cache();
  EXPECT_EQ(alloc.reserve(4096, 1), 1u) << "the evicted block no longer counts as held";
  { sfb::StorageRef big = alloc.allocate(8192); }  // over the cache limit: back to the source
  EXPECT_EQ(alloc.reserve(8192, 1), 0u) << "over the cache limit";
  EXPECT_EQ(src.live, 4096u);
}
TEST(CachingAllocatorTest, ABlockMadeAheadFromZeroPagesIsZeroedUntilItIsFirstUsed) {
  ZeroingSource src;
  sfb::CachingAllocator alloc(src, 1 << 20);
  ASSERT_EQ(alloc.reserve(8192, 2), 2u);
  bool zeroed = false, also_zeroed = false;
  {
    sfb::StorageRef a = alloc.allocate_zeroed(8192, &zeroed);
    sfb::StorageRef b = alloc.allocate_zeroed(8192, &also_zeroed);
    EXPECT_TRUE(zeroed && also_zeroed) << "never handed out: still the source's zeros";
    std::memset(a.data(), 1, 8192);
  }
  sfb::StorageRef c = alloc.allocate_zeroed(8192, &zeroed);
  sfb::StorageRef d = alloc.allocate_zeroed(8192, &also_zeroed);
  EXPECT_FALSE(zeroed || also_zeroed) << "both were handed out since";
  EXPECT_EQ(src.allocations(), 2u) << "no fresh block was needed";
  CountingSource plain;  // the default allocate_ahead: nothing promised
  sfb::CachingAllocator other(plain, 1 << 20);
  ASSERT_EQ(other.reserve(8192, 1), 1u);
  sfb::StorageRef e = other.allocate_zeroed(8192, &zeroed);
  EXPECT_FALSE(zeroed);
}
}  // namespace

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
  void free(void*, std::size_t) noexcept override {}  // freed with the source

 private:
  void* keep(void* p) {
    blocks_.push_back(p);
    return p;
  }
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

}  // namespace

// Lifetimes: handles dropped from any path free their buffers; a million ops leave nothing
// behind; allocator statistics add up; moved temporaries lend their memory.
#include <gtest/gtest.h>

#include <streamfuse/streamfuse.h>

#include "runtime/device_runtime.h"
#include "stream/stream.h"

namespace runtime = streamfuse::runtime;

namespace sf = streamfuse;
namespace st = streamfuse::stream;

namespace {

std::size_t live_handles() {
  sf::synchronize();
  return runtime::DeviceRuntime::get(sf::Device::cpu()).handles().size();
}

TEST(LifetimeTest, AMillionOpsLeaveNoBufferBehind) {
  const std::size_t handles0 = live_handles();
  const sf::MemoryStats before = sf::memory_stats();
  {
    sf::Tensor a = sf::ones({16});
    const sf::Tensor b = sf::full({16}, 0.25f);
    for (int i = 0; i < 500'000; ++i) a = (a + b) * 0.5f;  // 2 ops and 2 drops per iteration
    EXPECT_NEAR(a.to_vector<float>()[0], 0.25f, 1e-6);
    EXPECT_EQ(live_handles(), handles0 + 2);
  }
  EXPECT_EQ(live_handles(), handles0);
  const sf::MemoryStats after = sf::memory_stats();
  EXPECT_EQ(after.live_buffers, before.live_buffers);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_LE(after.bytes_reserved - before.bytes_reserved, 4096) << "a few cached blocks at most";
}

TEST(LifetimeTest, StatisticsAddUp) {
  sf::synchronize();
  sf::empty_cache();
  const sf::MemoryStats s0 = sf::memory_stats();
  sf::Tensor a = sf::zeros({1000});          // 4000 bytes
  sf::Tensor b = sf::zeros({10}, sf::kI64);  // 80 bytes
  sf::synchronize();
  const sf::MemoryStats s1 = sf::memory_stats();
  EXPECT_EQ(s1.bytes_in_use - s0.bytes_in_use, 4080);
  EXPECT_EQ(s1.live_buffers - s0.live_buffers, 2);
  EXPECT_GE(s1.peak_bytes_in_use, s1.bytes_in_use);
  EXPECT_EQ(s1.bytes_reserved, s1.bytes_cached + (s1.bytes_reserved - s1.bytes_cached));
  a = sf::Tensor();
  b = sf::Tensor();
  sf::synchronize();
  const sf::MemoryStats s2 = sf::memory_stats();
  EXPECT_EQ(s2.bytes_in_use, s0.bytes_in_use);
  EXPECT_GE(s2.bytes_cached, s0.bytes_cached + 4080) << "freed blocks are cached";
  EXPECT_EQ(s2.bytes_reserved, s1.bytes_reserved) << "caching returns nothing to the system";
  sf::empty_cache();
  EXPECT_EQ(sf::memory_stats().bytes_cached, 0);
  sf::reset_peak_memory_stats();
  EXPECT_EQ(sf::memory_stats().peak_bytes_in_use, sf::memory_stats().bytes_in_use);
}

TEST(LifetimeTest, MovedTemporariesAreReusedInPlace) {
  sf::Tensor x = sf::ones({1 << 16});
  sf::synchronize();
  const std::int64_t allocs = sf::memory_stats().allocations;
  sf::Tensor y = std::move(x) * 2.0f;  // x's last use: y takes its memory
  y = std::move(y) + 1.0f;             // and again
  sf::synchronize();
  EXPECT_EQ(sf::memory_stats().allocations, allocs) << "no new buffer";
  EXPECT_EQ(y.to_vector<float>()[123], 3.0f);
  // A copy still alive prevents reuse, and keeps its value.
  sf::Tensor c = y;
  sf::Tensor z = std::move(y) - 1.0f;
  sf::synchronize();
  EXPECT_EQ(sf::memory_stats().allocations, allocs + 1);
  EXPECT_EQ(c.to_vector<float>()[0], 3.0f);
  EXPECT_EQ(z.to_vector<float>()[0], 2.0f);
}

TEST(LifetimeTest, TemporariesInExpressionsAreFreedAsTheyGo) {
  const sf::Tensor x = sf::ones({1 << 18});  // 1 MiB
  sf::synchronize();
  sf::reset_peak_memory_stats();
  const std::int64_t base = sf::memory_stats().bytes_in_use;
  const sf::Tensor y = ((((x + 1.0f) * 2.0f) - 3.0f) / 4.0f) * x;
  sf::synchronize();
  // Each intermediate is a moved temporary: the chain needs one buffer beyond x.
  EXPECT_LE(sf::memory_stats().peak_bytes_in_use - base, 1 << 20);
  EXPECT_EQ(y.to_vector<float>()[5], 0.25f);
}

}  // namespace

// Config from code and from the environment.
#include <gtest/gtest.h>

#include <cstdlib>

#include <streamfuse/streamfuse.h>

#include "tests/scoped_env.h"

namespace sf = streamfuse;

namespace {

using streamfuse::testing::ScopedEnv;

TEST(ConfigTest, EnvironmentOverridesDefaults) {
  ScopedEnv a("STREAMFUSE_FUSION", "0"), b("STREAMFUSE_JIT", "interpret"),
      c("STREAMFUSE_QUEUE_BOUND", "17"), d("STREAMFUSE_LOG", "fusion,jit"),
      e("STREAMFUSE_ALLOCATOR_CACHE_MB", "64"), f("STREAMFUSE_NUM_THREADS", "1"),
      g("STREAMFUSE_CACHE_DIR", "/tmp/x");
  const sf::Config cfg = sf::Config::from_env();
  EXPECT_FALSE(cfg.fusion);
  EXPECT_EQ(cfg.jit, sf::JitMode::kInterpret);
  EXPECT_EQ(cfg.queue_bound, 17u);
  EXPECT_EQ(cfg.log, "fusion,jit");
  EXPECT_EQ(cfg.allocator_cache_bytes, 64u << 20);
  EXPECT_EQ(cfg.num_threads, 1);
  EXPECT_EQ(cfg.cache_dir, "/tmp/x");
}

TEST(ConfigTest, BadValuesNameTheVariable) {
  for (auto [name, value] : {std::pair{"STREAMFUSE_FUSION", "maybe"},
                             {"STREAMFUSE_JIT", "fast"},
                             {"STREAMFUSE_QUEUE_BOUND", "0"},
                             {"STREAMFUSE_QUEUE_BOUND", "12x"},
                             {"STREAMFUSE_LOG", "fusion,nonsense"},
                             {"STREAMFUSE_NUM_THREADS", "-1"}}) {
    ScopedEnv guard(name, value);
    try {
      sf::Config::from_env();
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const sf::Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(ConfigTest, SetConfigTakesEffectAndValidates) {
  const sf::Config saved = sf::config();
  sf::Config c = saved;
  c.queue_bound = 3;
  sf::set_config(c);
  EXPECT_EQ(sf::config().queue_bound, 3u);
  c.queue_bound = 0;
  EXPECT_THROW(sf::set_config(c), sf::Error);
  c = saved;
  c.log = "bogus";
  EXPECT_THROW(sf::set_config(c), sf::Error);
  sf::set_config(saved);
  EXPECT_EQ(sf::config().queue_bound, saved.queue_bound);
}

}  // namespace

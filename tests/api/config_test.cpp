// Config from code and from the environment: every STREAMFUSE_* variable follows one rule (unset
// or empty: the default; otherwise exactly one of the values its kind accepts, or an Error that
// names the variable and lists them).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "backends/cpu/isa.h"
#include "core/log.h"
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

// The message of the Error that Config::from_env throws for NAME=value ("accepted" if none).
std::string from_env_error(const char* name, const char* value) {
  ScopedEnv guard(name, value);
  try {
    sf::Config::from_env();
  } catch (const sf::Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ConfigTest, ErrorsListExactlyWhatIsAccepted) {
  EXPECT_EQ(from_env_error("STREAMFUSE_FUSION", "maybe"),
            "STREAMFUSE_FUSION='maybe' is not valid: expected 1, true or on (enable), or 0, false "
            "or off (disable)");
  EXPECT_EQ(from_env_error("STREAMFUSE_JIT", "fast"),
            "STREAMFUSE_JIT='fast' is not valid: expected compile or interpret");
  EXPECT_EQ(from_env_error("STREAMFUSE_QUEUE_BOUND", "0"),
            "STREAMFUSE_QUEUE_BOUND='0' is not valid: expected a whole number from 1 to 2^64-1 "
            "(ops a stream queues)");
  EXPECT_EQ(from_env_error("STREAMFUSE_NUM_THREADS", "-1"),
            "STREAMFUSE_NUM_THREADS='-1' is not valid: expected a whole number from 0 to 2^31-1 "
            "(threads per CPU kernel; 0 uses every core)");
  EXPECT_EQ(from_env_error("STREAMFUSE_CACHE_MAX_MB", "1G"),
            "STREAMFUSE_CACHE_MAX_MB='1G' is not valid: expected a size in MiB, a whole number "
            "from 0 to 2^44-1");
  EXPECT_EQ(from_env_error("STREAMFUSE_LOG", "fusion,nonsense"),
            "STREAMFUSE_LOG='fusion,nonsense' is not valid: expected a comma-separated list of "
            "stream, fusion, jit, cache, alloc, or all ('nonsense' is none of them)");
  EXPECT_EQ(from_env_error("STREAMFUSE_CPU_ISA", "avx2"),
            "STREAMFUSE_CPU_ISA='avx2' is not valid: expected v2, v3 or v4");
}

TEST(ConfigTest, EveryListedValueIsAcceptedAndNothingElse) {
  for (auto [value, on] : {std::pair{"1", true},
                           {"true", true},
                           {"on", true},
                           {"0", false},
                           {"false", false},
                           {"off", false}}) {
    ScopedEnv guard("STREAMFUSE_FUSION", value);
    EXPECT_EQ(sf::Config::from_env().fusion, on) << value;
  }
  for (const char* channel : {"stream", "fusion", "jit", "cache", "alloc", "all", " jit , cache"}) {
    EXPECT_EQ(from_env_error("STREAMFUSE_LOG", channel), "accepted") << channel;
    // The names the config accepts are the log's own.
    EXPECT_NO_THROW(streamfuse::core::parse_log_channels(channel)) << channel;
  }
  for (const char* level : {"v2", "v3", "v4"})
    EXPECT_EQ(from_env_error("STREAMFUSE_CPU_ISA", level), "accepted") << level;
  // Other spellings, signs, spaces and values past the type's range are refused, not read
  // loosely (" 5" and "+5" used to pass as 5; 2^32 threads wrapped to 0; a size's bytes wrapped).
  for (auto [name, value] : {std::pair{"STREAMFUSE_FUSION", "TRUE"},
                             {"STREAMFUSE_FUSION", "yes"},
                             {"STREAMFUSE_FUSION", " 1"},
                             {"STREAMFUSE_JIT", "Compile"},
                             {"STREAMFUSE_QUEUE_BOUND", " 5"},
                             {"STREAMFUSE_QUEUE_BOUND", "+5"},
                             {"STREAMFUSE_QUEUE_BOUND", "99999999999999999999"},
                             {"STREAMFUSE_NUM_THREADS", "4294967296"},
                             {"STREAMFUSE_CACHE_MAX_MB", "17592186044416"},
                             {"STREAMFUSE_ALLOCATOR_CACHE_MB", "64M"},
                             {"STREAMFUSE_CPU_ISA", "V3"}}) {
    const std::string what = from_env_error(name, value);
    EXPECT_EQ(what.rfind(std::string(name) + "='" + value + "' is not valid: expected ", 0), 0u)
        << name << "=" << value << ": " << what;
  }
}

TEST(ConfigTest, AnEmptyValueKeepsTheDefault) {
  const sf::Config defaults;
  for (const char* name :
       {"STREAMFUSE_FUSION", "STREAMFUSE_JIT", "STREAMFUSE_QUEUE_BOUND", "STREAMFUSE_LOG",
        "STREAMFUSE_CACHE_DIR", "STREAMFUSE_CACHE_MAX_MB", "STREAMFUSE_ALLOCATOR_CACHE_MB",
        "STREAMFUSE_NUM_THREADS", "STREAMFUSE_CPU_ISA"})
    EXPECT_EQ(from_env_error(name, ""), "accepted") << name;
  ScopedEnv fusion("STREAMFUSE_FUSION", ""), bound("STREAMFUSE_QUEUE_BOUND", "");
  const sf::Config c = sf::Config::from_env();
  EXPECT_EQ(c.fusion, defaults.fusion);
  EXPECT_EQ(c.queue_bound, defaults.queue_bound);
}

TEST(ConfigTest, SizesAreMiBAndCountsAreExact) {
  ScopedEnv a("STREAMFUSE_CACHE_MAX_MB", "0"), b("STREAMFUSE_ALLOCATOR_CACHE_MB", "3"),
      c("STREAMFUSE_NUM_THREADS", "0"), d("STREAMFUSE_QUEUE_BOUND", "1");
  const sf::Config cfg = sf::Config::from_env();
  EXPECT_EQ(cfg.cache_max_bytes, 0u);
  EXPECT_EQ(cfg.allocator_cache_bytes, std::size_t{3} << 20);
  EXPECT_EQ(cfg.num_threads, 0);
  EXPECT_EQ(cfg.queue_bound, 1u);
}

TEST(ConfigTest, CpuIsaCapIsALevel) {
  for (auto [value, level] : {std::pair{"v2", 2}, {"v3", 3}, {"v4", 4}}) {
    ScopedEnv guard("STREAMFUSE_CPU_ISA", value);
    EXPECT_EQ(streamfuse::backends::cpu::isa_cap_from_env(), level) << value;
  }
  ScopedEnv unset("STREAMFUSE_CPU_ISA", "");
  EXPECT_EQ(streamfuse::backends::cpu::isa_cap_from_env(), std::nullopt);
}

// The CPU kernels are chosen once, when the library is first used: a bad STREAMFUSE_CPU_ISA is an
// Error there, like every other bad value, not a warning. A fresh process, so that nothing has
// used the library before.
TEST(ConfigDeathTest, ABadCpuIsaIsAnErrorAtTheFirstUse) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv isa("STREAMFUSE_CPU_ISA", "avx512");
  EXPECT_EXIT(
      {
        try {
          sf::ones({2}).to_vector<float>();
        } catch (const sf::Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(0);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(0),
      "STREAMFUSE_CPU_ISA='avx512' is not valid: expected v2, v3 or v4");
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

// The process-wide Config: from the environment on first use, or from set_config().
#include "streamfuse/config.h"

#include <climits>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/environment.h"
#include "core/log.h"
#include "runtime/runtime.h"
#include "streamfuse/error.h"

namespace streamfuse {
namespace {

// The channels of STREAMFUSE_LOG, in LogChannel order: the names core/log.cpp prints (a test
// checks that both agree).
constexpr std::string_view kLogChannels[] = {"stream", "fusion", "jit", "cache", "alloc"};
constexpr std::string_view kJitModes[] = {"compile", "interpret"};

struct Global {
  std::mutex mutex;
  std::optional<Config> config;
};
Global& global() {
  static Global* g = new Global;  // never destroyed: read by tensors dying after main
  return *g;
}

}  // namespace

Config Config::from_env() {
  using core::env_count;
  Config c;
  if (const auto v = core::env_bool("STREAMFUSE_FUSION")) c.fusion = *v;
  if (const auto v = core::env_choice("STREAMFUSE_JIT", kJitModes))
    c.jit = *v == 0 ? JitMode::kCompile : JitMode::kInterpret;
  if (const auto v = core::env_count("STREAMFUSE_QUEUE_BOUND", 1, SIZE_MAX, "ops a stream queues"))
    c.queue_bound = static_cast<std::size_t>(*v);
  if (core::env_list("STREAMFUSE_LOG", kLogChannels)) c.log = *core::env_text("STREAMFUSE_LOG");
  if (auto v = core::env_text("STREAMFUSE_CACHE_DIR")) c.cache_dir = std::move(*v);
  if (const auto v = core::env_mib("STREAMFUSE_CACHE_MAX_MB")) c.cache_max_bytes = *v;
  if (const auto v = core::env_mib("STREAMFUSE_ALLOCATOR_CACHE_MB")) c.allocator_cache_bytes = *v;
  if (const auto v = core::env_count("STREAMFUSE_NUM_THREADS", 0, INT_MAX,
                                     "threads per CPU kernel; 0 uses every core"))
    c.num_threads = static_cast<int>(*v);
  // Not a setting (the CPU kernels are chosen once per process), but read with the others so
  // that a bad value is an Error at the library's first use, as theirs are.
  runtime::check_environment();
  return c;
}

Config config() {
  Global& g = global();
  std::lock_guard lock(g.mutex);
  if (!g.config) {
    g.config = Config::from_env();
    core::set_log_mask(core::parse_log_channels(g.config->log));
  }
  return *g.config;
}

void set_config(const Config& c) {
  if (c.queue_bound == 0) throw Error("set_config: queue_bound must be at least 1");
  if (c.num_threads < 0) throw Error("set_config: num_threads must be 0 (all cores) or more");
  const std::uint32_t mask = core::parse_log_channels(c.log);
  {
    Global& g = global();
    std::lock_guard lock(g.mutex);
    g.config = c;
    core::set_log_mask(mask);
  }
  runtime::apply_config(c);
}

}  // namespace streamfuse

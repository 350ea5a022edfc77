// The process-wide Config: from the environment on first use, or from set_config().
#include "streamfuse/config.h"

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include "stream/log.h"
#include "stream/runtime.h"
#include "streamfuse/error.h"

namespace streamfuse {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

[[noreturn]] void bad_value(const char* name, const std::string& value, const char* expected) {
  throw Error(std::string(name) + "='" + value + "' is not valid: expected " + expected);
}

std::size_t parse_size(const char* name, const char* text, const char* expected) {
  const std::string value(text);
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(value, &used);
  } catch (const std::exception&) {
    bad_value(name, value, expected);
  }
  if (used != value.size() || value.front() == '-') bad_value(name, value, expected);
  return static_cast<std::size_t>(v);
}

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
  Config c;
  if (const char* v = env("STREAMFUSE_FUSION")) {
    const std::string s(v);
    if (s == "0" || s == "off" || s == "false")
      c.fusion = false;
    else if (s == "1" || s == "on" || s == "true")
      c.fusion = true;
    else
      bad_value("STREAMFUSE_FUSION", s, "0 or 1");
  }
  if (const char* v = env("STREAMFUSE_JIT")) {
    const std::string s(v);
    if (s == "compile")
      c.jit = JitMode::kCompile;
    else if (s == "interpret")
      c.jit = JitMode::kInterpret;
    else
      bad_value("STREAMFUSE_JIT", s, "compile or interpret");
  }
  if (const char* v = env("STREAMFUSE_QUEUE_BOUND")) {
    c.queue_bound = parse_size("STREAMFUSE_QUEUE_BOUND", v, "a number of ops, at least 1");
    if (c.queue_bound == 0) bad_value("STREAMFUSE_QUEUE_BOUND", v, "a number of ops, at least 1");
  }
  if (const char* v = env("STREAMFUSE_LOG")) {
    stream::parse_log_channels(v);  // validates
    c.log = v;
  }
  if (const char* v = env("STREAMFUSE_CACHE_DIR")) c.cache_dir = v;
  if (const char* v = env("STREAMFUSE_CACHE_MAX_MB"))
    c.cache_max_bytes = parse_size("STREAMFUSE_CACHE_MAX_MB", v, "a size in MiB") << 20;
  if (const char* v = env("STREAMFUSE_ALLOCATOR_CACHE_MB"))
    c.allocator_cache_bytes = parse_size("STREAMFUSE_ALLOCATOR_CACHE_MB", v, "a size in MiB") << 20;
  if (const char* v = env("STREAMFUSE_NUM_THREADS"))
    c.num_threads =
        static_cast<int>(parse_size("STREAMFUSE_NUM_THREADS", v, "a thread count (0: all cores)"));
  return c;
}

Config config() {
  Global& g = global();
  std::lock_guard lock(g.mutex);
  if (!g.config) {
    g.config = Config::from_env();
    stream::set_log_mask(stream::parse_log_channels(g.config->log));
  }
  return *g.config;
}

void set_config(const Config& c) {
  if (c.queue_bound == 0) throw Error("set_config: queue_bound must be at least 1");
  if (c.num_threads < 0) throw Error("set_config: num_threads must be 0 (all cores) or more");
  const std::uint32_t mask = stream::parse_log_channels(c.log);
  {
    Global& g = global();
    std::lock_guard lock(g.mutex);
    g.config = c;
    stream::set_log_mask(mask);
  }
  for (stream::DeviceRuntime* rt : stream::DeviceRuntime::all()) rt->apply(c);
}

}  // namespace streamfuse

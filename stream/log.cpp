#include "stream/log.h"

#include <cstdio>
#include <mutex>
#include <set>

#include "streamfuse/error.h"

namespace streamfuse::stream {
namespace detail {
std::atomic<std::uint32_t> g_log_mask{0};
}

namespace {
constexpr std::string_view kChannelNames[] = {"stream", "fusion", "jit", "cache", "alloc"};
std::mutex g_print_mutex;  // whole lines, never interleaved
}  // namespace

void log_line(LogChannel c, std::string_view message) {
  std::lock_guard lock(g_print_mutex);
  std::fprintf(stderr, "[streamfuse:%.*s] %.*s\n",
               static_cast<int>(kChannelNames[static_cast<int>(c)].size()),
               kChannelNames[static_cast<int>(c)].data(), static_cast<int>(message.size()),
               message.data());
}

void warn_once(std::string_view key, std::string_view message) {
  // Never destroyed: threads still running at exit (the JIT's compiler thread, drops of
  // tensors with static storage) may warn while static destructors run.
  static auto* seen = new std::set<std::string, std::less<>>;
  std::lock_guard lock(g_print_mutex);
  if (!seen->emplace(key).second) return;
  std::fprintf(stderr, "[streamfuse] warning: %.*s\n", static_cast<int>(message.size()),
               message.data());
}

std::uint32_t parse_log_channels(std::string_view spec) {
  std::uint32_t mask = 0;
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    std::string_view name = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty()) continue;
    if (name == "all") {
      mask = ~0u;
      continue;
    }
    bool found = false;
    for (std::size_t i = 0; i < std::size(kChannelNames); ++i) {
      if (kChannelNames[i] == name) mask |= 1u << i, found = true;
    }
    if (!found)
      throw Error("STREAMFUSE_LOG: unknown channel '" + std::string(name) +
                  "'; use a comma-separated list of stream, fusion, jit, cache, alloc, or all");
  }
  return mask;
}

void set_log_mask(std::uint32_t mask) { detail::g_log_mask.store(mask, std::memory_order_relaxed); }

}  // namespace streamfuse::stream

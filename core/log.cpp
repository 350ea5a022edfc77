#include "core/log.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "streamfuse/error.h"

namespace streamfuse::core {
namespace detail {
std::atomic<std::uint32_t> g_log_mask{0};
}

namespace {
constexpr std::string_view kChannelNames[] = {"stream", "fusion", "jit", "cache", "alloc"};
std::mutex g_print_mutex;  // whole lines, never interleaved

// The length of the well-formed UTF-8 sequence of a printable character at the start of `s`
// (Unicode Table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF; C1 controls
// U+0080..U+009F are not printable), or 0.
std::size_t printable_sequence(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
    if (b0 == 0xc2) lo = 0xa0;  // C1 controls
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;  // overlong
    if (b0 == 0xed) hi = 0x9f;  // surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;  // overlong
    if (b0 == 0xf4) hi = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  return n;
}
}  // namespace

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if ((b >= 0x20 && b < 0x7f) || b == '\t' || b == '\n') {
      out += text[i++];
    } else if (const std::size_t n = b >= 0x80 ? printable_sequence(text.substr(i)) : 0) {
      out.append(text, i, n);
      i += n;
    } else {
      out += {'\\', 'x', kHex[b >> 4], kHex[b & 15]};
      ++i;
    }
  }
  return out;
}

void log_line(LogChannel c, std::string_view message) {
  const std::string text = printable(message);
  std::lock_guard lock(g_print_mutex);
  std::fprintf(stderr, "[streamfuse:%.*s] %.*s\n",
               static_cast<int>(kChannelNames[static_cast<int>(c)].size()),
               kChannelNames[static_cast<int>(c)].data(), static_cast<int>(text.size()),
               text.data());
}

void warn_once(std::string_view key, std::string_view message) {
  // Never destroyed: threads still running at exit (the JIT's compiler thread, drops of
  // tensors with static storage) may warn while static destructors run.
  static auto* seen = new std::set<std::string, std::less<>>;
  std::lock_guard lock(g_print_mutex);
  if (!seen->emplace(key).second) return;
  const std::string text = printable(message);
  std::fprintf(stderr, "[streamfuse] warning: %.*s\n", static_cast<int>(text.size()), text.data());
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

}  // namespace streamfuse::core

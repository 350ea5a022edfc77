// One-line decision logs on stderr, per channel (STREAMFUSE_LOG=stream,fusion,jit,cache,alloc or
// all), and warnings printed once. Shared by every folder, like ir.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace streamfuse::core {

enum class LogChannel : std::uint8_t { kStream, kFusion, kJit, kCache, kAlloc };

namespace detail {
extern std::atomic<std::uint32_t> g_log_mask;
}

// Cheap enough for hot paths: one relaxed load.
inline bool log_enabled(LogChannel c) {
  return (detail::g_log_mask.load(std::memory_order_relaxed) >> static_cast<unsigned>(c)) & 1u;
}
// `text` as it may be shown on a terminal: printable ASCII, tabs, newlines and well-formed UTF-8
// of printable characters stay; every other byte (controls, DEL, C1 controls, bytes of invalid,
// overlong or truncated UTF-8) becomes "\xNN" (lower-case hex). The result is always valid
// UTF-8, and printable(printable(t)) == printable(t). Text read from files (fingerprints, names,
// paths, a decoder's complaint) passes through here before it reaches stderr or a tool's output.
std::string printable(std::string_view text);
// Prints "[streamfuse:<channel>] <message>" on one line, the message through printable().
void log_line(LogChannel c, std::string_view message);
// Prints "[streamfuse] warning: <message>" the first time `key` is seen in this process, the
// message through printable().
void warn_once(std::string_view key, std::string_view message);
// Parses a channel list ("fusion,jit", "all", ""); throws Error naming an unknown channel.
std::uint32_t parse_log_channels(std::string_view spec);
void set_log_mask(std::uint32_t mask);

}  // namespace streamfuse::core

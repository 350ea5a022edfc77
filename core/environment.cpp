#include "core/environment.h"

#include <cstdlib>

#include "streamfuse/error.h"

namespace streamfuse::core {
namespace {

// The value of `name`, or nullptr when unset or empty (empty is how a shell unsets a variable
// for one command: `STREAMFUSE_LOG= prog`).
const char* raw(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

[[noreturn]] void bad_value(const char* name, std::string_view value, const std::string& expected) {
  throw Error(std::string(name) + "='" + std::string(value) + "' is not valid: expected " +
              expected);
}

// "a, b or c".
std::string one_of(std::span<const std::string_view> choices) {
  std::string s;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i) s += i + 1 == choices.size() ? " or " : ", ";
    s += choices[i];
  }
  return s;
}

// 2^k - 1 bounds read better as powers ("2^64-1") than as 20 digits.
std::string bound_text(std::uint64_t v) {
  if (v > (std::uint64_t{1} << 20) && (v & (v + 1)) == 0) {
    int bits = 0;
    for (std::uint64_t x = v; x; x >>= 1) ++bits;
    return "2^" + std::to_string(bits) + "-1";
  }
  return std::to_string(v);
}

// Decimal digits only (no sign, no spaces): what strtoull would also take (" +12", "-1") is
// refused, so the accepted text is exactly what the error says.
std::optional<std::uint64_t> digits(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::string> env_text(const char* name) {
  if (const char* v = raw(name)) return std::string(v);
  return std::nullopt;
}

std::optional<bool> env_bool(const char* name) {
  const char* v = raw(name);
  if (!v) return std::nullopt;
  const std::string_view s(v);
  if (s == "1" || s == "true" || s == "on") return true;
  if (s == "0" || s == "false" || s == "off") return false;
  bad_value(name, s, "1, true or on (enable), or 0, false or off (disable)");
}

std::optional<std::size_t> env_choice(const char* name, std::span<const std::string_view> choices) {
  const char* v = raw(name);
  if (!v) return std::nullopt;
  for (std::size_t i = 0; i < choices.size(); ++i)
    if (choices[i] == v) return i;
  bad_value(name, v, one_of(choices));
}

std::optional<std::uint64_t> env_count(const char* name, std::uint64_t min, std::uint64_t max,
                                       std::string_view meaning) {
  const char* v = raw(name);
  if (!v) return std::nullopt;
  const std::optional<std::uint64_t> n = digits(v);
  if (!n || *n < min || *n > max)
    bad_value(name, v,
              "a whole number from " + bound_text(min) + " to " + bound_text(max) + " (" +
                  std::string(meaning) + ")");
  return n;
}

std::optional<std::size_t> env_mib(const char* name) {
  const char* v = raw(name);
  if (!v) return std::nullopt;
  constexpr std::uint64_t kMaxMib = SIZE_MAX >> 20;
  const std::optional<std::uint64_t> n = digits(v);
  if (!n || *n > kMaxMib)
    bad_value(name, v, "a size in MiB, a whole number from 0 to " + bound_text(kMaxMib));
  return static_cast<std::size_t>(*n) << 20;
}

std::optional<std::uint32_t> env_list(const char* name, std::span<const std::string_view> choices) {
  const char* v = raw(name);
  if (!v) return std::nullopt;
  std::uint32_t mask = 0;
  for (std::string_view rest(v); !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trimmed(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) continue;
    if (item == "all") {
      mask = ~0u;
      continue;
    }
    std::size_t i = 0;
    while (i < choices.size() && choices[i] != item) ++i;
    if (i == choices.size()) {
      std::string all;
      for (std::string_view c : choices) all += std::string(c) + ", ";
      bad_value(name, v,
                "a comma-separated list of " + all + "or all ('" + std::string(item) +
                    "' is none of them)");
    }
    mask |= 1u << i;
  }
  return mask;
}

}  // namespace streamfuse::core

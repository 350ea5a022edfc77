// The STREAMFUSE_* environment variables, read through one parser per kind of value so that every
// variable follows one rule:
// - unset or empty: the default applies;
// - anything else must be exactly one of the values its kind accepts (no spaces around it, no
//   other spelling or case); otherwise the parser throws Error
//   "NAME='value' is not valid: expected <exactly what is accepted>".
// Ground vocabulary, like log.h: the config, the backends and the JIT read their variables here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace streamfuse::core {

// Any text (a path, a program): the value, or nullopt when unset or empty. Never throws.
std::optional<std::string> env_text(const char* name);

// A switch: 1, true or on; 0, false or off.
std::optional<bool> env_bool(const char* name);

// One of `choices` ("compile", "interpret"): its index.
std::optional<std::size_t> env_choice(const char* name, std::span<const std::string_view> choices);

// A whole number in [min, max], decimal digits only; `meaning` says what it counts
// ("ops a stream queues") and goes into the error text.
std::optional<std::uint64_t> env_count(const char* name, std::uint64_t min, std::uint64_t max,
                                       std::string_view meaning);

// A size in MiB (a whole number from 0 while the bytes fit in size_t): the size in bytes.
std::optional<std::size_t> env_mib(const char* name);

// Comma-separated items of `choices` (spaces around an item and empty items ignored), or `all`:
// the mask with bit i set for choices[i] (every bit for `all`). At most 32 choices.
std::optional<std::uint32_t> env_list(const char* name, std::span<const std::string_view> choices);

}  // namespace streamfuse::core

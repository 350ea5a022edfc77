// The hashes of the JIT and the cache. hash_mix: one step of the JIT's hashes (programs,
// specialization keys, kernel-cache buckets): folds `v` into `h`, boost::hash_combine's shape
// followed by a splitmix64-style multiply and shift. Cheap, and spreads bits well enough for
// tables. Cache file names derive from these hashes (program, key, plan): changing the function
// only makes old cache files unused (and pruned in time), as every file's contents are compared on
// load.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace streamfuse::core {

constexpr std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 31);
}

inline constexpr std::uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

// FNV-1a over `bytes`, continuing from `h`: the stable hash of strings (sources, compile commands,
// fingerprints) that names files.
constexpr std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = kFnvBasis) {
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// `v` as 16 lowercase hex digits: how hashes name files.
inline std::string hex16(std::uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
  return s;
}

}  // namespace streamfuse::core

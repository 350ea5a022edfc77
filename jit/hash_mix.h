// One step of the JIT's hashes (programs, specialization keys, kernel-cache buckets): folds `v`
// into `h`, boost::hash_combine's shape followed by a splitmix64-style multiply and shift. Cheap,
// and spreads bits well enough for tables. Cache file names derive from these hashes (program,
// key, plan): changing the function only makes old cache files unused (and pruned in time), as
// every file's contents are compared on load.
#pragma once

#include <cstdint>

namespace streamfuse::jit {

constexpr std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 31);
}

}  // namespace streamfuse::jit

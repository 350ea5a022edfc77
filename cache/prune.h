// Listing and pruning the cache directory (used by the runtime past its size limit and by
// tools/streamfuse-cache).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace streamfuse::cache {

struct CacheEntry {
  std::filesystem::path path;
  std::uint64_t bytes = 0;
  std::filesystem::file_time_type used;  // last read or written
  bool temporary = false;                // a write that never finished (or is in flight)
};

// Every streamfuse file under `root` (plans, kernels, libraries, stray temporaries), oldest use
// first. Missing root: empty.
std::vector<CacheEntry> list_cache_entries(const std::filesystem::path& root);

struct PruneResult {
  std::uint64_t bytes_before = 0;
  std::uint64_t bytes_after = 0;
  std::size_t removed = 0;
};

// Removes temporaries older than an hour, then the least recently used files until at most
// `target_bytes` remain. Empty plan folders go too.
PruneResult prune_cache(const std::filesystem::path& root, std::uint64_t target_bytes);

}  // namespace streamfuse::cache

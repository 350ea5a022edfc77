#include "cache/prune.h"

#include <algorithm>
#include <chrono>

#include "cache/cache_dir.h"

namespace streamfuse::cache {
namespace fs = std::filesystem;

namespace {

// Ours: a file of the layout, or a temporary of a write to one.
bool is_cache_file(const fs::path& p, bool& temporary) {
  temporary = p.filename().string().find(".tmp.") != std::string::npos;
  return temporary || kind_by_extension(p).has_value();
}

}  // namespace

std::vector<CacheEntry> list_cache_entries(const fs::path& root) {
  std::vector<CacheEntry> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    bool temporary = false;
    if (!it->is_regular_file(ec) || !is_cache_file(it->path(), temporary)) continue;
    CacheEntry e;
    e.path = it->path();
    e.temporary = temporary;
    std::error_code size_ec, time_ec;
    e.bytes = it->file_size(size_ec);
    e.used = it->last_write_time(time_ec);
    if (!size_ec && !time_ec) out.push_back(std::move(e));  // else gone meanwhile
  }
  std::sort(out.begin(), out.end(),
            [](const CacheEntry& a, const CacheEntry& b) { return a.used < b.used; });
  return out;
}

PruneResult prune_cache(const fs::path& root, std::uint64_t target_bytes) {
  PruneResult r;
  std::vector<CacheEntry> entries = list_cache_entries(root);
  for (const CacheEntry& e : entries) r.bytes_before += e.bytes;
  r.bytes_after = r.bytes_before;
  std::error_code ec;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(1);
  auto remove = [&](const CacheEntry& e) {
    if (fs::remove(e.path, ec)) {
      r.bytes_after -= e.bytes;
      ++r.removed;
      // A plan's first-op folder and a kernel's program folder go when they are left empty
      // (remove() leaves a non-empty folder alone).
      if (e.path.extension() == ".plan" || e.path.extension() == ".kernel")
        fs::remove(e.path.parent_path(), ec);
    }
  };
  for (const CacheEntry& e : entries)
    if (e.temporary && e.used < stale) remove(e);
  for (const CacheEntry& e : entries) {  // oldest first
    if (r.bytes_after <= target_bytes) break;
    if (!e.temporary && fs::exists(e.path, ec)) remove(e);
  }
  return r;
}

}  // namespace streamfuse::cache

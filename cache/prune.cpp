#include "cache/prune.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <string>

#include "cache/cache_dir.h"
#include "cache/scratch_area.h"

namespace streamfuse::cache {
namespace fs = std::filesystem;

namespace {

// Ours: a file of the layout, or a temporary of a write to one.
bool is_cache_file(const fs::path& p, bool& temporary) {
  temporary = p.filename().string().find(".tmp.") != std::string::npos;
  return temporary || kind_by_extension(p).has_value();
}

// Whether process `pid` exists on this machine (in this pid namespace).
bool process_alive(long pid) { return kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

// Files pruned together, used as recently as the most recent of them.
struct Unit {
  std::vector<const CacheEntry*> files;  // a library's kernels first, the library last
  fs::file_time_type used = fs::file_time_type::min();
  // `first`: before the files added so far (a kernel goes before its library: removed first).
  void add(const CacheEntry& e, bool first = false) {
    files.insert(first ? files.begin() : files.end(), &e);
    used = std::max(used, e.used);
  }
};

}  // namespace

std::vector<CacheEntry> list_cache_entries(const fs::path& root) {
  std::vector<CacheEntry> out;
  std::error_code ec;
  const fs::path scratch = scratch_base(root);
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    if (it.depth() == 0 && it->path() == scratch) {  // files in the making: not the cache's
      it.disable_recursion_pending();
      continue;
    }
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

namespace {
std::atomic<KernelLibraryReader> g_kernel_library_reader{nullptr};
}  // namespace

void set_kernel_library_reader(KernelLibraryReader reader) { g_kernel_library_reader = reader; }

std::string library_of_kernel(const fs::path& path) {
  const KernelLibraryReader reader = g_kernel_library_reader.load();
  if (!reader) return {};
  const ReadResult r = inspect_cache_file(path);
  if (!r || r.kind != FileKind::kCpuKernel) return {};
  return reader(r.payload);
}

std::size_t remove_kernels_of_library(const fs::path& root, const std::string& name) {
  std::size_t removed = 0;
  std::error_code ec;
  for (const CacheEntry& e : list_cache_entries(root / "kernels")) {
    if (e.temporary || e.path.extension() != ".kernel" || library_of_kernel(e.path) != name)
      continue;
    if (fs::remove(e.path, ec)) {
      ++removed;
      fs::remove(e.path.parent_path(), ec);  // its program's folder, when left empty
    }
  }
  return removed;
}

bool abandoned_temporary(const CacheEntry& entry) {
  if (!entry.temporary) return false;
  const auto now = fs::file_time_type::clock::now();
  if (entry.used < now - std::chrono::hours(1)) return true;
  const long pid = writer_of_temporary(entry.path);
  return pid > 0 && entry.used < now - std::chrono::minutes(1) && !process_alive(pid);
}

std::size_t remove_abandoned_temporaries(const std::vector<CacheEntry>& entries) {
  std::size_t removed = 0;
  std::error_code ec;
  for (const CacheEntry& e : entries)
    if (abandoned_temporary(e) && fs::remove(e.path, ec)) ++removed;
  return removed;
}

PruneResult prune_cache(const fs::path& root, std::uint64_t target_bytes) {
  PruneResult r;
  r.scratch_folders = ScratchArea::remove_abandoned(scratch_base(root)).folders;
  const std::vector<CacheEntry> entries = list_cache_entries(root);
  for (const CacheEntry& e : entries) r.bytes_before += e.bytes;
  r.bytes_after = r.bytes_before;
  std::error_code ec;
  auto remove = [&](const CacheEntry& e) {
    if (!fs::remove(e.path, ec)) return;
    r.bytes_after -= e.bytes;
    ++r.removed;
    // A plan's first-op folder and a kernel's program folder go when they are left empty
    // (remove() leaves a non-empty folder alone).
    if (e.path.extension() == ".plan" || e.path.extension() == ".kernel" ||
        e.path.extension() == ".pending")
      fs::remove(e.path.parent_path(), ec);
  };

  // Units: each library with the kernel files that name it; every other file alone.
  std::map<std::string, Unit> libraries;  // by library name
  std::vector<Unit> units;
  for (const CacheEntry& e : entries) {
    if (e.temporary) {
      if (abandoned_temporary(e)) remove(e);
      continue;  // in flight: not the pruner's
    }
    const std::optional<FileKind> kind = kind_by_extension(e.path);
    if (kind == FileKind::kCpuLibrary) {
      libraries[e.path.stem().string()].add(e);
    } else if (kind == FileKind::kCpuKernel) {
      const std::string library = library_of_kernel(e.path);
      if (library.empty()) {
        units.emplace_back().add(e);  // undecodable: pruned by its own use
      } else if (!fs::exists(library_path(root, library), ec)) {
        remove(e);  // names a library that is gone: never usable again
      } else {
        libraries[library].add(e, /*first=*/true);
      }
    } else {
      units.emplace_back().add(e);
    }
  }
  for (auto& [name, unit] : libraries) units.push_back(std::move(unit));
  std::sort(units.begin(), units.end(),
            [](const Unit& a, const Unit& b) { return a.used < b.used; });
  for (const Unit& unit : units) {  // least recently used first
    if (r.bytes_after <= target_bytes) break;
    for (const CacheEntry* e : unit.files) remove(*e);
  }
  return r;
}

}  // namespace streamfuse::cache

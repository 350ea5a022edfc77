// Listing and pruning the cache directory (used by the runtime past its size limit and by
// tools/streamfuse-cache).
//
// Pruning keeps the directory consistent: a kernel library and the kernel files that name it are
// one unit, kept or removed together (a kernel whose library is gone is useless, and a tool would
// call it bad), used as recently as the most recent of them. A kernel file whose library is
// missing is removed on sight.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace streamfuse::cache {

struct CacheEntry {
  std::filesystem::path path;
  std::uint64_t bytes = 0;
  std::filesystem::file_time_type used;  // last read or written
  bool temporary = false;                // a write that never finished (or is in flight)
};

// Every streamfuse file under `root` (plans, kernels, libraries, prepared and handed-on files,
// stray temporaries), oldest use first; not the scratch folders' files. Missing root: empty.
std::vector<CacheEntry> list_cache_entries(const std::filesystem::path& root);

// Whether a temporary file beside the cache's files is garbage: its writer's process ended (the
// pid in its name names no process here, and it is older than a minute, in case the writer lives
// in another pid namespace), or it is older than an hour.
bool abandoned_temporary(const CacheEntry& entry);
// Removes the abandoned temporaries among `entries`; how many.
std::size_t remove_abandoned_temporaries(const std::vector<CacheEntry>& entries);

// Which library a kernel file's payload names ("" when none or not decodable). Kernel records are
// the JIT's (jit/kernel_codec), so it supplies the reader; until it has, kernel files are pruned
// each on its own.
using KernelLibraryReader = std::string (*)(std::string_view payload);
void set_kernel_library_reader(KernelLibraryReader reader);

// The library a kernel file names, or "" when it is not a good kernel file.
std::string library_of_kernel(const std::filesystem::path& kernel_file);
// Removes every kernel file under `root` that names library `name` (which is gone: the kernels
// can never be loaded); how many. Reads every kernel file: for the rare library found broken.
std::size_t remove_kernels_of_library(const std::filesystem::path& root, const std::string& name);

struct PruneResult {
  std::uint64_t bytes_before = 0;
  std::uint64_t bytes_after = 0;
  std::size_t removed = 0;          // files, abandoned temporaries and orphaned kernels included
  std::size_t scratch_folders = 0;  // scratch folders of processes that ended, removed
};

// Removes the scratch folders of processes that ended, abandoned temporaries and kernel files
// whose library is missing, then the least recently used units (a library with its kernel files,
// or one other file) until at most `target_bytes` remain. Empty plan and kernel folders go too.
PruneResult prune_cache(const std::filesystem::path& root, std::uint64_t target_bytes);

}  // namespace streamfuse::cache

// The commands over the files as they are: list, prune, clear.
#include <chrono>
#include <ctime>
#include <iostream>
#include <optional>
#include <system_error>

#include "cache/cache_dir.h"
#include "cache/cache_file.h"
#include "cache/prune.h"
#include "cache/scratch_area.h"
#include "tools/streamfuse_cache.h"
#include "tools/streamfuse_cache_check.h"

namespace streamfuse::tools {
namespace fs = std::filesystem;

namespace {

// "2024-06-01 14:03:27", local time.
std::string local_time(fs::file_time_type t) {
  const std::time_t seconds =
      std::chrono::system_clock::to_time_t(std::chrono::file_clock::to_sys(t));
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

// Regular files under `dir`.
std::size_t count_files(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    n += it->is_regular_file(ec);
  return n;
}

}  // namespace

std::string relative_name(const fs::path& root, const fs::path& path) {
  const fs::path rel = path.lexically_normal().lexically_relative(root.lexically_normal());
  if (rel.empty() || *rel.begin() == "..") return path.string();
  return rel.string();
}

int list_command(const fs::path& root) {
  std::uint64_t total = 0;
  std::size_t files = 0;
  // The status is verify's verdict, so that list never calls ok what verify calls bad (a kernel
  // whose library is missing, a plan in the wrong place).
  CacheChecker checker(root, /*keep_libraries=*/false);
  for (const cache::CacheEntry& entry : cache::list_cache_entries(root)) {
    std::string kind, status;
    const CheckedFile file = checker.check(entry);
    if (entry.temporary) {
      kind = "temporary";
      status = file.skipped ? "write in progress" : file.problem;
    } else {
      const std::optional<cache::FileKind> by_name = cache::kind_by_extension(entry.path);
      kind = file.good() ? cache::file_kind_name(file.kind)
             : by_name   ? cache::file_kind_name(*by_name)
                         : "unknown";
      status = file.good() ? "ok" : file.problem;
    }
    std::cout << kind << '\t' << status << '\t' << entry.bytes << '\t' << local_time(entry.used)
              << '\t' << relative_name(root, entry.path) << '\n';
    total += entry.bytes;
    ++files;
  }
  std::cout << "total: " << files << " files, " << total << " bytes\n";
  return kExitOk;
}

int prune_command(const fs::path& root, std::uint64_t max_bytes) {
  const cache::PruneResult r = cache::prune_cache(root, max_bytes);
  std::cout << "pruned " << root.string() << " to at most " << max_bytes << " bytes: removed "
            << r.removed << " files, " << r.bytes_before << " -> " << r.bytes_after << " bytes";
  if (r.scratch_folders)
    std::cout << ", and " << r.scratch_folders << " scratch folders of ended processes";
  std::cout << '\n';
  return kExitOk;
}

int clear_command(const fs::path& root) {
  std::string removed;
  auto say = [&](const std::string& what) { removed += (removed.empty() ? "" : ", ") + what; };
  std::error_code ec;
  // scratch/ holds the build folders of running processes too: only those of ended ones go.
  if (const cache::ScratchCleanup gone =
          cache::ScratchArea::remove_abandoned(cache::scratch_base(root));
      gone.folders > 0)
    say("scratch folders of ended processes (" + std::to_string(gone.folders) + ")");
  for (const char* folder : {"plans", "kernels", "prepared"}) {
    const fs::path dir = root / folder;
    if (!fs::exists(fs::symlink_status(dir, ec))) continue;
    const std::size_t files = count_files(dir);
    fs::remove_all(dir, ec);
    if (ec)
      throw ToolError(kExitFailure, "clear: cannot remove " + dir.string() + ": " + ec.message() +
                                        (removed.empty() ? "" : " (removed " + removed + ")"));
    say(std::string(folder) + "/ (" + std::to_string(files) + " files)");
  }
  const fs::path claims = cache::claims_path(root);
  if (fs::remove(claims, ec)) say("claims");
  if (ec)
    throw ToolError(kExitFailure, "clear: cannot remove " + claims.string() + ": " + ec.message() +
                                      (removed.empty() ? "" : " (removed " + removed + ")"));
  if (removed.empty())
    std::cout << "nothing to clear: " << root.string()
              << " holds no plans, kernels, prepared ops or claims\n";
  else
    std::cout << "cleared " << root.string() << ": removed " << removed << '\n';
  return kExitOk;
}

}  // namespace streamfuse::tools

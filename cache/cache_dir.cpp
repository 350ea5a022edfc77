#include "cache/cache_dir.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cache/cache_log.h"
#include "cache/prune.h"
#include "stream/log.h"
#include "streamfuse/error.h"

namespace streamfuse::cache {
namespace fs = std::filesystem;

namespace {

// Rejections that mean the file is ours and broken: it is removed, so it is built again.
bool broken(Rejection r) {
  switch (r) {
    case Rejection::kTruncated:
    case Rejection::kWrongMagic:
    case Rejection::kOlderFormat:
    case Rejection::kWrongKind:
    case Rejection::kOtherFingerprint:
    case Rejection::kTrailingBytes:
    case Rejection::kChecksumMismatch:
      return true;
    default:
      return false;
  }
}

}  // namespace

fs::path cache_directory(const Config& config) {
  if (!config.cache_dir.empty()) return config.cache_dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "streamfuse";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "streamfuse";
  std::error_code ec;
  return fs::temp_directory_path(ec) / "streamfuse";
}

fs::path plan_folder(const fs::path& root, std::string_view device, std::uint64_t first_op_hash) {
  return root / "plans" / device / hex16(first_op_hash);
}
fs::path plan_path(const fs::path& root, std::string_view device, std::uint64_t first_op_hash,
                   std::uint64_t plan_hash) {
  return plan_folder(root, device, first_op_hash) / (hex16(plan_hash) + ".plan");
}
fs::path kernel_folder(const fs::path& root, std::uint64_t program_hash) {
  return root / "kernels" / "cpu" / hex16(program_hash);
}
fs::path kernel_path(const fs::path& root, std::uint64_t program_hash, std::uint64_t kernel_hash) {
  return kernel_folder(root, program_hash) / (hex16(kernel_hash) + ".kernel");
}
fs::path library_path(const fs::path& root, std::string_view name) {
  return root / "kernels" / "cpu" / (std::string(name) + ".lib");
}
fs::path claims_path(const fs::path& root) { return root / "claims"; }
fs::path prepared_ops_path(const fs::path& root, std::string_view device) {
  return root / "prepared" / (std::string(device) + ".ops");
}

std::optional<FileKind> kind_by_extension(const fs::path& path) {
  const fs::path ext = path.extension();
  if (ext == ".plan") return FileKind::kPlan;
  if (ext == ".kernel") return FileKind::kCpuKernel;
  if (ext == ".lib") return FileKind::kCpuLibrary;
  if (ext == ".ops") return FileKind::kPreparedOps;
  return std::nullopt;
}

CacheDir::CacheDir(fs::path root, std::uint64_t max_bytes)
    : root_(std::move(root)), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (!fs::is_directory(root_, ec) || access(root_.c_str(), W_OK | X_OK) != 0) {
    writable_ = false;
    stream::warn_once("cache-dir:" + root_.string(),
                      "cache: directory '" + root_.string() +
                          "' cannot be created or written; plans and kernels are not persisted "
                          "(set STREAMFUSE_CACHE_DIR to a writable directory)");
  }
}

std::optional<std::string> CacheDir::read(const fs::path& path, FileKind kind,
                                          std::string_view fingerprint, Foreign foreign) {
  ReadResult r = read_cache_file(path, kind, fingerprint);
  if (r.rejection == Rejection::kMissing) return std::nullopt;
  if (r.rejection == Rejection::kOtherFingerprint && foreign == Foreign::kMiss) return std::nullopt;
  if (!r) {
    reject(path, r.rejection, r.detail);
    return std::nullopt;
  }
  // Marked used (pruning goes by modification time), at most once per kUseMarkInterval: the
  // mark is a metadata write, and a warm process reads its files on the first iteration.
  const fs::file_time_type now = fs::file_time_type::clock::now();
  if (now - r.modified > kUseMarkInterval) {
    std::error_code ec;
    fs::last_write_time(path, now, ec);
  }
  return std::move(r.payload);
}

void CacheDir::reject(const fs::path& path, Rejection rejection, const std::string& detail) {
  ignore(path, std::string(rejection_name(rejection)) + (detail.empty() ? "" : " (" + detail + ")"),
         broken(rejection));
}

void CacheDir::reject_payload(const fs::path& path, const std::string& why) {
  ignore(path, why, true);
}

void CacheDir::ignore(const fs::path& path, const std::string& why, bool broken_file) {
  cache_log("rejected " + path.string() + ": " + why);
  const bool remove = broken_file && writable();
  stream::warn_once("cache-reject:" + path.string(),
                    "cache: ignored " + path.string() + ": " + why +
                        (remove ? "; removed, it is built again" : "; it is built again"));
  std::error_code ec;
  if (remove) fs::remove(path, ec);
}

bool CacheDir::write(const fs::path& path, FileKind kind, std::string_view fingerprint,
                     std::string_view payload) {
  if (!writable()) return false;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return false;  // something else's place: warned on reading
  fs::create_directories(path.parent_path(), ec);
  try {
    write_cache_file(path, kind, fingerprint, payload);
  } catch (const Error& e) {
    if (!fs::is_directory(path.parent_path(), ec) ||
        access(path.parent_path().c_str(), W_OK) != 0) {
      writable_ = false;
      stream::warn_once("cache-dir:" + root_.string(),
                        "cache: directory '" + root_.string() +
                            "' cannot be written; plans and kernels are no longer persisted (" +
                            e.what() + ")");
    } else {
      stream::warn_once("cache-write:" + path.string(), std::string("cache: ") + e.what());
    }
    return false;
  }
  cache_log("wrote " + path.string());
  maybe_prune(payload.size());
  return true;
}

void CacheDir::maybe_prune(std::uint64_t written) {
  std::lock_guard lock(prune_mutex_);
  written_since_prune_ += written;
  // The first write of a process and then every eighth of the limit written: a scan of the
  // directory is cheap next to the writes it follows.
  if (pruned_once_ && written_since_prune_ < max_bytes_ / 8) return;
  pruned_once_ = true;
  written_since_prune_ = 0;
  std::uint64_t total = 0;
  for (const CacheEntry& e : list_cache_entries(root_)) total += e.bytes;
  if (total <= max_bytes_) return;
  const PruneResult r = prune_cache(root_, max_bytes_ / 10 * 8);  // room for a while
  cache_log("pruned " + std::to_string(r.removed) + " files: " + std::to_string(r.bytes_before) +
            " -> " + std::to_string(r.bytes_after) + " bytes (limit " + std::to_string(max_bytes_) +
            ")");
}

}  // namespace streamfuse::cache

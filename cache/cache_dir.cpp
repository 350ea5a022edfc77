#include "cache/cache_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cache/archive.h"
#include "cache/cache_log.h"
#include "cache/prune.h"
#include "core/log.h"
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
  return root / "plans" / device / core::hex16(first_op_hash);
}
fs::path plan_path(const fs::path& root, std::string_view device, std::uint64_t first_op_hash,
                   std::uint64_t plan_hash) {
  return plan_folder(root, device, first_op_hash) / (core::hex16(plan_hash) + ".plan");
}
fs::path kernel_folder(const fs::path& root, std::uint64_t program_hash) {
  return root / "kernels" / "cpu" / core::hex16(program_hash);
}
fs::path kernel_path(const fs::path& root, std::uint64_t program_hash, std::uint64_t kernel_hash) {
  return kernel_folder(root, program_hash) / (core::hex16(kernel_hash) + ".kernel");
}
fs::path library_path(const fs::path& root, std::string_view name) {
  return root / "kernels" / "cpu" / (std::string(name) + ".lib");
}
fs::path claims_path(const fs::path& root) { return root / "claims"; }
fs::path handed_on_folder(const fs::path& root, std::string_view fingerprint) {
  return root / "kernels" / "cpu" / "handed-on" / core::hex16(core::fnv1a(fingerprint));
}
fs::path scratch_base(const fs::path& root) { return root / "scratch"; }
fs::path plan_entries_path(const fs::path& root, std::string_view device) {
  return root / "plans" / (std::string(device) + ".entries");
}
fs::path prepared_ops_path(const fs::path& root, std::string_view device) {
  return root / "prepared" / (std::string(device) + ".ops");
}
fs::path held_blocks_path(const fs::path& root, std::string_view device, std::string_view program) {
  return root / "prepared" / (std::string(device) + "." + std::string(program) + ".blocks");
}

std::optional<FileKind> kind_by_extension(const fs::path& path) {
  const fs::path ext = path.extension();
  if (ext == ".plan") return FileKind::kPlan;
  if (ext == ".kernel") return FileKind::kCpuKernel;
  if (ext == ".lib") return FileKind::kCpuLibrary;
  if (ext == ".ops") return FileKind::kPreparedOps;
  if (ext == ".pending") return FileKind::kHandedOn;
  if (ext == ".entries") return FileKind::kPlanEntries;
  if (ext == ".blocks") return FileKind::kHeldBlocks;
  return std::nullopt;
}

CacheDir::CacheDir(fs::path root, std::uint64_t max_bytes)
    : root_(std::move(root)), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (!fs::is_directory(root_, ec) || access(root_.c_str(), W_OK | X_OK) != 0) {
    writable_ = false;
    core::warn_once("cache-dir:" + root_.string(),
                    "cache: directory '" + root_.string() +
                        "' cannot be created or written; plans and kernels are not persisted "
                        "(set STREAMFUSE_CACHE_DIR to a writable directory)");
    return;
  }
  // What processes that ended left in the making (their builds, unfinished writes). Usually
  // nothing: one read of a small folder.
  const ScratchCleanup cleaned = ScratchArea::remove_abandoned(scratch_base(root_));
  if (cleaned.folders)
    cache_log("removed " + std::to_string(cleaned.folders) +
              " scratch folders of processes that ended (" + std::to_string(cleaned.bytes) +
              " bytes)");
}

CacheDir::~CacheDir() = default;

fs::path CacheDir::scratch() {
  std::lock_guard lock(scratch_mutex_);
  return scratch_area().path();
}

fs::path CacheDir::scratch_file(std::string_view suffix) {
  std::lock_guard lock(scratch_mutex_);
  return scratch_area().unique_file(suffix);
}

ScratchArea& CacheDir::scratch_area() {
  if (!scratch_) {
    if (writable()) {
      try {
        std::error_code ec;
        if (!fs::exists(scratch_base(root_), ec)) {
          // The first process of this streamfuse on the directory: what earlier versions left
          // in the temporary directory goes (once, not at every start).
          if (const std::size_t old = remove_legacy_build_folders(fs::temp_directory_path(ec)))
            cache_log("removed " + std::to_string(old) +
                      " build folders (streamfuse-jit-*) earlier versions left in the temporary "
                      "directory");
        }
        scratch_ = std::make_unique<ScratchArea>(scratch_base(root_));
      } catch (const CacheError& e) {
        cache_log(e.what());
      }
    }
    if (!scratch_) {  // a directory that cannot be written: the user's own folder in /tmp
      const fs::path base = private_scratch_base();
      ScratchArea::remove_abandoned(base);
      scratch_ = std::make_unique<ScratchArea>(base);
    }
  }
  return *scratch_;
}

void CacheDir::release_scratch() {
  std::lock_guard lock(scratch_mutex_);
  scratch_.reset();
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
  if (rejection == Rejection::kOlderFormat) {
    // What every file of a cache meets once after an upgrade: expected, so one line per process
    // rather than one per file (the cache log still names each).
    cache_log("rejected " + path.string() + ": " + std::string(rejection_name(rejection)));
    const bool remove = writable();
    if (remove) {
      std::error_code ec;
      fs::remove(path, ec);
    }
    core::warn_once("cache-older-format",
                    "cache: files written by an older streamfuse (format before version " +
                        std::to_string(kFormatVersion) + ") are " + (remove ? "removed and " : "") +
                        "built again, first " + path.string());
    return;
  }
  ignore(path, std::string(rejection_name(rejection)) + (detail.empty() ? "" : " (" + detail + ")"),
         broken(rejection));
}

void CacheDir::read_portable_with(const fs::path& path, FileKind kind,
                                  const std::function<void(std::string_view)>& decode) {
  const std::optional<std::string> payload =
      read(path, kind, portable_fingerprint(), Foreign::kMiss);
  if (!payload) return;
  try {
    decode(*payload);
  } catch (const FormatError& e) {
    reject_payload(path, e.what());
  }
}

void CacheDir::reject_payload(const fs::path& path, const std::string& why) {
  ignore(path, why, true);
}

void CacheDir::ignore(const fs::path& path, const std::string& why, bool broken_file) {
  cache_log("rejected " + path.string() + ": " + why);
  const bool remove = broken_file && writable();
  core::warn_once("cache-reject:" + path.string(),
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
  // The temporary goes to the scratch folder: a process killed while writing leaves it there,
  // where the next process finds it abandoned, never beside the cache's files.
  fs::path temporary;
  try {
    temporary = scratch_file(".tmp");
  } catch (const CacheError&) {
    // No scratch folder: a temporary beside the file.
  }
  try {
    try {
      write_cache_file(path, kind, fingerprint, payload, temporary);
    } catch (const WriteError& e) {
      if (e.error_number() != EXDEV || temporary.empty()) throw;
      write_cache_file(path, kind, fingerprint, payload);  // scratch on another file system
    }
  } catch (const WriteError& e) {
    write_failed(path, e);
    return false;
  }
  cache_log("wrote " + path.string());
  after_write(payload.size() + fingerprint.size() + 32);
  return true;
}

void CacheDir::write_failed(const fs::path& path, const WriteError& e) {
  const int err = e.error_number();
  std::error_code ec;
  const bool refused = err == EACCES || err == EPERM || err == EROFS ||
                       !fs::is_directory(path.parent_path(), ec) ||
                       access(path.parent_path().c_str(), W_OK) != 0;
  if (refused) {
    writable_ = false;
    core::warn_once("cache-dir:" + root_.string(),
                    "cache: directory '" + root_.string() +
                        "' cannot be written; plans and kernels are no longer persisted (" +
                        e.what() + ")");
    return;
  }
  // A full disk (or a quota, or an I/O error) fails every write alike: said once for the
  // directory, and every write still tries, since space may be freed.
  cache_log(std::string("write failed: ") + e.what());
  core::warn_once("cache-write:" + root_.string() + ":" + std::to_string(err),
                  "cache: cannot write in '" + root_.string() + "': " + std::strerror(err) +
                      "; what this process learns is not persisted while this lasts (first: " +
                      path.string() + ")");
}

void CacheDir::after_write(std::uint64_t written) {
  std::lock_guard lock(prune_mutex_);
  written_since_scan_ += written;
  estimated_bytes_ += written;
  // The size is known by a scan at the first write, then counted: a write that takes the
  // directory past its limit prunes at once. Scanned again after an eighth of the limit was
  // written, since other processes write too.
  if (scanned_ && estimated_bytes_ <= max_bytes_ && written_since_scan_ < max_bytes_ / 8) return;
  scanned_ = true;
  written_since_scan_ = 0;
  const std::vector<CacheEntry> entries = list_cache_entries(root_);
  estimated_bytes_ = 0;
  for (const CacheEntry& e : entries) estimated_bytes_ += e.bytes;
  if (const std::size_t removed = remove_abandoned_temporaries(entries))
    cache_log("removed " + std::to_string(removed) + " temporary files of writers that ended");
  if (estimated_bytes_ <= max_bytes_) return;
  const PruneResult r = prune_cache(root_, max_bytes_ / 10 * 8);  // room for a while
  estimated_bytes_ = r.bytes_after;
  cache_log("pruned " + std::to_string(r.removed) + " files: " + std::to_string(r.bytes_before) +
            " -> " + std::to_string(r.bytes_after) + " bytes (limit " + std::to_string(max_bytes_) +
            ")");
}

}  // namespace streamfuse::cache

// Where streamfuse keeps what it learns about programs, how that directory is laid out, and the
// policy of every access to it: a bad file is a miss with one warning, an unwritable directory
// disables writing with one warning, and the directory is kept under its size limit by pruning
// the least recently used files.
//
//   <root>/plans/<device>/<first op hash>/<plan hash>.plan   one plan (portable)
//   <root>/kernels/cpu/<program hash>/<kernel hash>.kernel   one compiled kernel's record
//   <root>/kernels/cpu/<library name>.lib                    a kernel library: source and .so
//   <root>/prepared/<device>.ops                             ops the backend prepares at start
//   <root>/claims                                            byte locks: who compiles what
//
// Hashes are 16 hex digits. A file is used when it was read (its modification time is set then),
// which is what least-recently-used pruning goes by.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cache/cache_file.h"
#include "jit/hash_mix.h"
#include "streamfuse/config.h"

namespace streamfuse::cache {

// Config::cache_dir (STREAMFUSE_CACHE_DIR) when set, else $XDG_CACHE_HOME/streamfuse, else
// ~/.cache/streamfuse, else a streamfuse folder in the system's temporary directory. Not created.
std::filesystem::path cache_directory(const Config& config);

using jit::hex16;  // 16 lowercase hex digits: the hashes in file names

std::filesystem::path plan_path(const std::filesystem::path& root, std::string_view device,
                                std::uint64_t first_op_hash, std::uint64_t plan_hash);
std::filesystem::path plan_folder(const std::filesystem::path& root, std::string_view device,
                                  std::uint64_t first_op_hash);
// The kernels of one program (under every key and fingerprint) share a folder, so that they can
// be read ahead knowing only the program.
std::filesystem::path kernel_folder(const std::filesystem::path& root, std::uint64_t program_hash);
std::filesystem::path kernel_path(const std::filesystem::path& root, std::uint64_t program_hash,
                                  std::uint64_t kernel_hash);
std::filesystem::path library_path(const std::filesystem::path& root, std::string_view name);
std::filesystem::path claims_path(const std::filesystem::path& root);
std::filesystem::path prepared_ops_path(const std::filesystem::path& root, std::string_view device);
// The kind of file the layout keeps under `path`'s extension (.plan, .kernel, .lib, .ops), or
// nullopt.
std::optional<FileKind> kind_by_extension(const std::filesystem::path& path);

// Reading a file marks it used (its modification time, which pruning orders by) only when the
// mark is older than this: least-recently-used to the hour is all pruning needs.
inline constexpr std::chrono::hours kUseMarkInterval{1};

class CacheDir {
 public:
  // Creates `root` when missing; when it cannot be made or written, reads still work where
  // possible and writes are skipped (said once).
  CacheDir(std::filesystem::path root, std::uint64_t max_bytes);

  const std::filesystem::path& root() const { return root_; }
  bool writable() const { return writable_.load(std::memory_order_relaxed); }

  // The payload of `path` when it is a good file of `kind` under `fingerprint`; marks it used
  // (see kUseMarkInterval).
  // Missing: nullopt. Any other rejection: nullopt, logged (STREAMFUSE_LOG=cache) and warned
  // once per file; a broken file is removed so it is built again, one written by a newer
  // streamfuse or in another's place (a directory) is left alone.
  // kMiss: a file of another fingerprint is an ordinary miss (where another machine's files
  // share a folder with this one's).
  enum class Foreign : std::uint8_t { kReject, kMiss };
  std::optional<std::string> read(const std::filesystem::path& path, FileKind kind,
                                  std::string_view fingerprint, Foreign foreign = Foreign::kReject);
  // A file whose payload did not decode (FormatError `why`): warned once, removed.
  void reject_payload(const std::filesystem::path& path, const std::string& why);
  // Writes a cache file atomically. False when the directory cannot be written (warned once for
  // the directory; later writes are skipped). Never throws.
  bool write(const std::filesystem::path& path, FileKind kind, std::string_view fingerprint,
             std::string_view payload);

 private:
  void reject(const std::filesystem::path& path, Rejection rejection, const std::string& detail);
  // Logs and warns (once per file) that `path` is not used; removes it when `broken_file`.
  void ignore(const std::filesystem::path& path, const std::string& why, bool broken_file);
  void maybe_prune(std::uint64_t written);

  std::filesystem::path root_;
  std::uint64_t max_bytes_;
  std::atomic<bool> writable_{true};
  std::mutex prune_mutex_;
  std::uint64_t written_since_prune_ = 0;  // under prune_mutex_
  bool pruned_once_ = false;               // under prune_mutex_
};

}  // namespace streamfuse::cache

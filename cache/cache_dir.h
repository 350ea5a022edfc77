// Where streamfuse keeps what it learns about programs, how that directory is laid out, and the
// policy of every access to it: a bad file is a miss with one warning, an unwritable directory
// disables writing with one warning, and the directory is kept under its size limit by pruning
// the least recently used files.
//
//   <root>/plans/<device>/<first op hash>/<plan hash>.plan   one plan (portable)
//   <root>/plans/<device>.entries                            first ops of the segments that
//                                                            processes started with (portable)
//   <root>/kernels/cpu/<program hash>/<kernel hash>.kernel   one compiled kernel's record
//   <root>/kernels/cpu/<library name>.lib                    a kernel library: source and .so
//   <root>/kernels/cpu/handed-on/<fp hash>/<name>.pending    kernels a process could not
//                                                            compile before it exited
//   <root>/prepared/<device>.ops                             ops the backend prepares at start
//   <root>/claims                                            byte locks: who compiles what
//   <root>/scratch/<pid>-<random>/                           a process's files in the making
//                                                            (cache/scratch_area.h)
//
// Hashes are 16 hex digits. A file is used when it was read (its modification time is set then),
// which is what least-recently-used pruning goes by.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cache/cache_file.h"
#include "cache/scratch_area.h"
#include "core/hash_mix.h"
#include "streamfuse/config.h"

namespace streamfuse::cache {

// Config::cache_dir (STREAMFUSE_CACHE_DIR) when set, else $XDG_CACHE_HOME/streamfuse, else
// ~/.cache/streamfuse, else a streamfuse folder in the system's temporary directory. Not created.
std::filesystem::path cache_directory(const Config& config);

using core::hex16;  // 16 lowercase hex digits: the hashes in file names

std::filesystem::path plan_path(const std::filesystem::path& root, std::string_view device,
                                std::uint64_t first_op_hash, std::uint64_t plan_hash);
std::filesystem::path plan_folder(const std::filesystem::path& root, std::string_view device,
                                  std::uint64_t first_op_hash);
std::filesystem::path plan_entries_path(const std::filesystem::path& root, std::string_view device);
// The kernels of one program (under every key and fingerprint) share a folder, so that they can
// be read ahead knowing only the program.
std::filesystem::path kernel_folder(const std::filesystem::path& root, std::uint64_t program_hash);
std::filesystem::path kernel_path(const std::filesystem::path& root, std::uint64_t program_hash,
                                  std::uint64_t kernel_hash);
std::filesystem::path library_path(const std::filesystem::path& root, std::string_view name);
std::filesystem::path claims_path(const std::filesystem::path& root);
std::filesystem::path prepared_ops_path(const std::filesystem::path& root, std::string_view device);
// An allocator's working set for one program (backends/block_files.h).
std::filesystem::path held_blocks_path(const std::filesystem::path& root, std::string_view device,
                                       std::string_view program);
// The handed-on kernels of every process with kernel fingerprint `fingerprint`.
std::filesystem::path handed_on_folder(const std::filesystem::path& root,
                                       std::string_view fingerprint);
std::filesystem::path scratch_base(const std::filesystem::path& root);
// The kind of file the layout keeps under `path`'s extension (.plan, .kernel, .lib, .ops,
// .pending, .entries), or nullopt.
std::optional<FileKind> kind_by_extension(const std::filesystem::path& path);

// Reading a file marks it used (its modification time, which pruning orders by) only when the
// mark is older than this: least-recently-used to the hour is all pruning needs.
inline constexpr std::chrono::hours kUseMarkInterval{1};

class CacheDir {
 public:
  // Creates `root` when missing; when it cannot be made or written, reads still work where
  // possible and writes are skipped (said once). Removes the scratch folders of processes that
  // ended.
  CacheDir(std::filesystem::path root, std::uint64_t max_bytes);
  ~CacheDir();

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
  // read_portable's reading: `decode` is called with the payload, and its FormatError rejects it.
  void read_portable_with(const std::filesystem::path& path, FileKind kind,
                          const std::function<void(std::string_view)>& decode);
  // A portable file of `kind` (plans' relatives: no machine code, portable_fingerprint()) decoded
  // by `decode`, or an empty result: missing, another streamfuse version's (stale, not broken: a
  // quiet miss), or rejected as read() and reject_payload() do (a FormatError from `decode`).
  template <class Decode>
  auto read_portable(const std::filesystem::path& path, FileKind kind, Decode decode)
      -> decltype(decode(std::string_view())) {
    decltype(decode(std::string_view())) decoded{};
    read_portable_with(path, kind, [&](std::string_view payload) { decoded = decode(payload); });
    return decoded;
  }
  // Writes a cache file atomically (its temporary in this process's scratch folder), then prunes
  // when the directory went past its size limit. False when it could not: a directory that
  // cannot be written is warned about once and later writes are skipped; any other failure (a
  // full disk) is warned about once per reason for the whole directory, and later writes are
  // tried again. Never throws.
  bool write(const std::filesystem::path& path, FileKind kind, std::string_view fingerprint,
             std::string_view payload);

  // This process's scratch folder for the directory, made on first use: under <root>/scratch/
  // when the directory can be written, else under private_scratch_base(). Throws CacheError
  // when neither can be made.
  std::filesystem::path scratch();
  // A new file name in the scratch folder (for a temporary). Throws as scratch() does.
  std::filesystem::path scratch_file(std::string_view suffix);
  // Removes the scratch folder (at exit, once nothing works in it any more; a later scratch()
  // makes a new one).
  void release_scratch();

 private:
  void reject(const std::filesystem::path& path, Rejection rejection, const std::string& detail);
  // Logs and warns (once per file) that `path` is not used; removes it when `broken_file`.
  void ignore(const std::filesystem::path& path, const std::string& why, bool broken_file);
  ScratchArea& scratch_area();  // requires scratch_mutex_; throws as scratch() does
  // Warns once per directory and reason about a write that failed, or disables writing.
  void write_failed(const std::filesystem::path& path, const WriteError& e);
  // Counts `written` bytes; scans, and prunes past the limit, when due.
  void after_write(std::uint64_t written);

  std::filesystem::path root_;
  std::uint64_t max_bytes_;
  std::atomic<bool> writable_{true};
  std::mutex prune_mutex_;
  bool scanned_ = false;                  // under prune_mutex_: the directory's size is known
  std::uint64_t estimated_bytes_ = 0;     // under prune_mutex_: at the last scan, plus writes
  std::uint64_t written_since_scan_ = 0;  // under prune_mutex_
  std::mutex scratch_mutex_;
  std::unique_ptr<ScratchArea> scratch_;  // under scratch_mutex_
};

}  // namespace streamfuse::cache

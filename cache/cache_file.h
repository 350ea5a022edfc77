// One file of the persistent cache (a plan, a kernel, a bundle, a device's prepared ops): a fixed
// header, a fingerprint, then the payload.
//
//   magic "SFCACHE\n" | format version u32 | kind u32 | fingerprint size u32 | payload size u64 |
//   payload CRC-32 u32 | fingerprint bytes | payload bytes            (integers little-endian)
//
// The fingerprint names everything the payload depends on beyond its own bytes (library version,
// compiler and flags, CPU features, ...); a file whose fingerprint differs is not used. Files are
// written to a temporary name in the same directory and renamed into place, so a reader never
// sees a half-written file, and a crash leaves at most a stray temporary.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "streamfuse/error.h"

namespace streamfuse::cache {

// 2: bundles carry prepared ops; prepared-op files. 3: ops of the window kinds (conv2d, pools)
// carry their window. 4: traced blocks carry their indexed reads (index ops fused as kLoadAt).
// 5: prepared products carry their post-ops (plans of the matmul kind).
inline constexpr std::uint32_t kFormatVersion = 5;

enum class FileKind : std::uint32_t {
  kPlan = 1,
  kCpuKernel = 2,
  kBundle = 3,
  kCpuLibrary = 4,
  kPreparedOps = 5,
  kHandedOn = 6,     // kernels a process could not compile before it exited
  kPlanEntries = 7,  // where reading plans ahead starts (fusion/plan_files.h)
  kHeldBlocks = 8,   // an allocator's working set, by size class (backends/block_files.h)
};

// Why a file was not used. kMissing is the ordinary miss; every other reason is worth a warning.
enum class Rejection : std::uint8_t {
  kNone,
  kMissing,
  kNotAFile,     // a directory (or other non-regular file) where a file should be
  kUnreadable,   // exists but cannot be opened or read
  kTruncated,    // shorter than its header says
  kWrongMagic,   // not a streamfuse cache file
  kNewerFormat,  // written by a newer streamfuse
  kOlderFormat,  // written by an older streamfuse
  kWrongKind,    // e.g. a kernel where a plan was expected
  kOtherFingerprint,
  kTrailingBytes,  // longer than its header says
  kChecksumMismatch,
};
const char* rejection_name(Rejection r);

struct ReadResult {
  Rejection rejection = Rejection::kNone;
  FileKind kind = FileKind::kPlan;           // when rejection == kNone
  std::string fingerprint;                   // when rejection == kNone
  std::string payload;                       // when rejection == kNone
  std::filesystem::file_time_type modified;  // when rejection == kNone: the file's mtime
  std::string detail;                        // for logs: what differed
  explicit operator bool() const { return rejection == Rejection::kNone; }
};

// A name next to `path` that no other thread or process uses at the same time: where a file is
// made before it is renamed to `path` when the writer has no scratch folder (cache/scratch_area.h)
// on its file system. "<name>.tmp.<pid>.<n>": a temporary whose process ended is garbage.
std::filesystem::path temporary_beside(const std::filesystem::path& path);
// The pid in a name temporary_beside() made, or 0 when `path` is not such a name.
long writer_of_temporary(const std::filesystem::path& path);

// A write that failed, with the system's error number (ENOSPC, EACCES, EXDEV, ...) so that the
// caller can tell a full disk from a directory it may not write.
class WriteError : public CacheError {
 public:
  WriteError(const std::string& what, int error_number)
      : CacheError(what), error_number_(error_number) {}
  int error_number() const { return error_number_; }

 private:
  int error_number_;
};

// A file made piece by piece and put in place whole: written to `temporary` (on the same file
// system; empty: temporary_beside(path)), renamed to `path` by commit(), so readers see the old
// file or all of the new one. Destroyed without commit() it removes the temporary. Throws
// WriteError with the path and the system's reason (and removes the temporary).
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path, std::filesystem::path temporary = {});
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void append(std::string_view bytes);
  void commit();

 private:
  [[noreturn]] void fail(int error_number);

  std::filesystem::path path_, temporary_;
  int fd_ = -1;
  bool done_ = false;
};

// Writes `bytes` to `path` through the file `temporary` (on the same file system), renamed into
// place; an empty `temporary` is temporary_beside(path). The temporary is removed on failure.
// Throws WriteError with the path and the system's reason.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           const std::filesystem::path& temporary = {});

// Writes `payload` atomically (temporary file + rename, as write_file_atomically). Throws
// WriteError naming the path when the directory cannot be written; the caller decides whether
// that disables persistence.
void write_cache_file(const std::filesystem::path& path, FileKind kind,
                      std::string_view fingerprint, std::string_view payload,
                      const std::filesystem::path& temporary = {});

// Reads and checks a file written by write_cache_file. Never throws for a bad file: the result
// says why it was rejected.
ReadResult read_cache_file(const std::filesystem::path& path, FileKind kind,
                           std::string_view fingerprint);
// The same checks, but any kind and fingerprint are accepted (and returned): for tools.
ReadResult inspect_cache_file(const std::filesystem::path& path);
// The checks of both on a file's bytes (`modified` is left unset): the kind and fingerprint only
// where given. Never throws for bad bytes.
ReadResult parse_cache_file(std::string_view bytes, std::optional<FileKind> kind,
                            std::optional<std::string_view> fingerprint);
const char* file_kind_name(FileKind kind);  // "plan", "cpu kernel", ...

// The fingerprint of files that are portable between machines (plans, prepared ops, bundles):
// only the library version counts (it fixes their encodings).
std::string portable_fingerprint();

}  // namespace streamfuse::cache

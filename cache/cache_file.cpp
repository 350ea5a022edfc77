#include "cache/cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <system_error>
#include <utility>

#include "cache/crc32.h"
#include "streamfuse/error.h"

namespace streamfuse::cache {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'S', 'F', 'C', 'A', 'C', 'H', 'E', '\n'};
constexpr std::size_t kHeaderSize = 8 + 4 + 4 + 4 + 8 + 4;

void put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i) & 0xff));
}
std::uint64_t get(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

ReadResult reject(Rejection r, std::string detail = {}) {
  ReadResult result;
  result.rejection = r;
  result.detail = std::move(detail);
  return result;
}

}  // namespace

const char* rejection_name(Rejection r) {
  switch (r) {
    case Rejection::kNone:
      return "ok";
    case Rejection::kMissing:
      return "missing";
    case Rejection::kNotAFile:
      return "not a regular file";
    case Rejection::kUnreadable:
      return "unreadable";
    case Rejection::kTruncated:
      return "truncated";
    case Rejection::kWrongMagic:
      return "not a streamfuse cache file";
    case Rejection::kNewerFormat:
      return "written by a newer format version";
    case Rejection::kOlderFormat:
      return "written by an older format version";
    case Rejection::kWrongKind:
      return "another kind of cache file";
    case Rejection::kOtherFingerprint:
      return "fingerprint differs";
    case Rejection::kTrailingBytes:
      return "longer than its header says";
    case Rejection::kChecksumMismatch:
      return "checksum mismatch";
  }
  return "?";
}

fs::path temporary_beside(const fs::path& path) {
  static std::atomic<std::uint64_t> counter{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  return tmp;
}

long writer_of_temporary(const fs::path& path) {
  // <name>.tmp.<pid>.<n>
  const std::string name = path.filename().string();
  const std::size_t tmp = name.rfind(".tmp.");
  if (tmp == std::string::npos) return 0;
  const std::size_t dot = name.find('.', tmp + 5);
  if (dot == std::string::npos || dot == tmp + 5 || dot + 1 == name.size()) return 0;
  long pid = 0;
  for (std::size_t i = tmp + 5; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 1'000'000'000) return 0;
    pid = pid * 10 + (name[i] - '0');
  }
  for (std::size_t i = dot + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return 0;
  return pid;
}

AtomicFileWriter::AtomicFileWriter(fs::path path, fs::path temporary)
    : path_(std::move(path)),
      temporary_(temporary.empty() ? temporary_beside(path_) : std::move(temporary)) {
  // POSIX calls, not a stream: the caller needs the error number (a full disk shows at write
  // or, on some file systems, only at close).
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) fail(errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (done_) return;
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  fs::remove(temporary_, ec);
}

void AtomicFileWriter::fail(int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  done_ = true;
  std::error_code ec;
  fs::remove(temporary_, ec);
  throw WriteError("cannot write " + path_.string() + ": " + std::strerror(err), err);
}

void AtomicFileWriter::append(std::string_view bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(n < 0 ? errno : EIO);
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(errno);
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0) fail(errno);
  done_ = true;
}

void write_file_atomically(const fs::path& path, std::string_view bytes,
                           const fs::path& temporary) {
  AtomicFileWriter file(path, temporary);
  file.append(bytes);
  file.commit();
}

void write_cache_file(const fs::path& path, FileKind kind, std::string_view fingerprint,
                      std::string_view payload, const fs::path& temporary) {
  std::string bytes(kMagic, sizeof kMagic);
  put(bytes, kFormatVersion, 4);
  put(bytes, static_cast<std::uint32_t>(kind), 4);
  put(bytes, fingerprint.size(), 4);
  put(bytes, payload.size(), 8);
  put(bytes, crc32(payload), 4);
  bytes.append(fingerprint);
  bytes.append(payload);
  write_file_atomically(path, bytes, temporary);
}

namespace {

// Reads all of `path` into `bytes` with one read of its size (a cache file does not change once
// renamed into place); the rejection when it cannot.
std::optional<ReadResult> read_whole_file(const fs::path& path, std::string& bytes,
                                          fs::file_time_type& modified) {
  // O_NONBLOCK: a FIFO put where a cache file belongs must not block the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    // ENOTDIR: a folder on the way is a file (the cache directory is unusable): nothing there.
    if (err == ENOENT || err == ENOTDIR) return reject(Rejection::kMissing);
    return reject(Rejection::kUnreadable, std::strerror(err));
  }
  struct stat st {};
  std::optional<ReadResult> failed;
  if (::fstat(fd, &st) != 0) {
    failed = reject(Rejection::kUnreadable, std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    failed = reject(Rejection::kNotAFile);
  } else {
    const std::chrono::sys_time<std::chrono::nanoseconds> mtime(
        std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
    modified = fs::file_time_type::clock::from_sys(mtime);
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (!failed) {
      if (got == bytes.size()) bytes.resize(got + 4096);  // grew since fstat: read to the end
      const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) failed = reject(Rejection::kUnreadable, std::strerror(errno));
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    bytes.resize(got);
  }
  ::close(fd);
  return failed;
}

// Reads and checks `path`; the kind and fingerprint only where given.
ReadResult read_checked(const fs::path& path, std::optional<FileKind> kind,
                        std::optional<std::string_view> fingerprint) {
  std::string bytes;
  fs::file_time_type modified;
  if (const std::optional<ReadResult> failed = read_whole_file(path, bytes, modified))
    return *failed;
  ReadResult result = parse_cache_file(bytes, kind, fingerprint);
  if (result) result.modified = modified;
  return result;
}

}  // namespace

ReadResult parse_cache_file(std::string_view bytes, std::optional<FileKind> kind,
                            std::optional<std::string_view> fingerprint) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return reject(bytes.size() < sizeof kMagic ? Rejection::kTruncated : Rejection::kWrongMagic);
  if (bytes.size() < kHeaderSize) return reject(Rejection::kTruncated);
  const char* h = bytes.data() + sizeof kMagic;
  const auto version = static_cast<std::uint32_t>(get(h, 4));
  if (version > kFormatVersion)
    return reject(Rejection::kNewerFormat, "version " + std::to_string(version));
  if (version < kFormatVersion)
    return reject(Rejection::kOlderFormat, "version " + std::to_string(version));
  const auto file_kind = static_cast<std::uint32_t>(get(h + 4, 4));
  if (kind && file_kind != static_cast<std::uint32_t>(*kind))
    return reject(Rejection::kWrongKind, "kind " + std::to_string(file_kind));
  const std::uint64_t fingerprint_size = get(h + 8, 4);
  const std::uint64_t payload_size = get(h + 12, 8);
  const auto crc = static_cast<std::uint32_t>(get(h + 20, 4));
  const std::uint64_t body = bytes.size() - kHeaderSize;
  if (fingerprint_size > body || payload_size > body - fingerprint_size)
    return reject(Rejection::kTruncated);
  if (payload_size < body - fingerprint_size) return reject(Rejection::kTrailingBytes);
  const std::string_view stored(bytes.data() + kHeaderSize, fingerprint_size);
  if (fingerprint && stored != *fingerprint)
    return reject(Rejection::kOtherFingerprint, "file: " + std::string(stored));
  const std::string_view payload(bytes.data() + kHeaderSize + fingerprint_size, payload_size);
  if (crc32(payload) != crc) return reject(Rejection::kChecksumMismatch);
  ReadResult result;
  result.kind = static_cast<FileKind>(file_kind);
  result.fingerprint.assign(stored);
  result.payload.assign(payload);
  return result;
}

ReadResult read_cache_file(const fs::path& path, FileKind kind, std::string_view fingerprint) {
  return read_checked(path, kind, fingerprint);
}

ReadResult inspect_cache_file(const fs::path& path) {
  return read_checked(path, std::nullopt, std::nullopt);
}

const char* file_kind_name(FileKind kind) {
  switch (kind) {
    case FileKind::kPlan:
      return "plan";
    case FileKind::kCpuKernel:
      return "cpu kernel";
    case FileKind::kBundle:
      return "bundle";
    case FileKind::kCpuLibrary:
      return "cpu library";
    case FileKind::kPreparedOps:
      return "prepared ops";
    case FileKind::kHandedOn:
      return "handed-on kernels";
    case FileKind::kPlanEntries:
      return "plan entries";
    case FileKind::kHeldBlocks:
      return "held blocks";
  }
  return "unknown";
}

// The encoding version of plans (their fused programs): 2 since programs are blocks around an
// anchor, 3 since anchors may be reductions. Files of another version are another fingerprint: a
// quiet miss, a bundle's an error that says so.
std::string portable_fingerprint() { return "streamfuse " STREAMFUSE_VERSION " plans 3"; }

}  // namespace streamfuse::cache

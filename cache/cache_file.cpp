#include "cache/cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <system_error>

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

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  const fs::path tmp = temporary_beside(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      const int err = errno;
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error("cannot write " + path.string() + ": " + std::strerror(err));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::error_code ec;
    fs::remove(tmp, ec);
    throw Error("cannot write " + path.string() + ": " + std::strerror(err));
  }
}

void write_cache_file(const fs::path& path, FileKind kind, std::string_view fingerprint,
                      std::string_view payload) {
  std::string bytes(kMagic, sizeof kMagic);
  put(bytes, kFormatVersion, 4);
  put(bytes, static_cast<std::uint32_t>(kind), 4);
  put(bytes, fingerprint.size(), 4);
  put(bytes, payload.size(), 8);
  put(bytes, crc32(payload), 4);
  bytes.append(fingerprint);
  bytes.append(payload);
  write_file_atomically(path, bytes);
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
ReadResult read_checked(const fs::path& path, const FileKind* kind,
                        const std::string_view* fingerprint) {
  std::string bytes;
  fs::file_time_type modified;
  if (const std::optional<ReadResult> failed = read_whole_file(path, bytes, modified))
    return *failed;

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
  result.modified = modified;
  return result;
}

}  // namespace

ReadResult read_cache_file(const fs::path& path, FileKind kind, std::string_view fingerprint) {
  return read_checked(path, &kind, &fingerprint);
}

ReadResult inspect_cache_file(const fs::path& path) { return read_checked(path, nullptr, nullptr); }

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
  }
  return "unknown";
}

}  // namespace streamfuse::cache

#include "cache/scratch_area.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "streamfuse/error.h"

namespace streamfuse::cache {
namespace fs = std::filesystem;

namespace {

constexpr const char* kLockName = "lock";
// A folder being made is renamed within microseconds of its mkdir; one older than this was left
// by a process that died in between.
constexpr std::chrono::hours kHalfMadeAge{1};

// Locks byte 0 of `fd` for this open file description without waiting; false when another
// holds it (or the lock cannot be taken).
bool lock_byte(int fd) {
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_start = 0;
  l.l_len = 1;
  int r;
  do {
    r = fcntl(fd, F_OFD_SETLK, &l);
  } while (r != 0 && errno == EINTR);
  return r == 0;
}

bool older_than(const fs::path& path, std::chrono::hours age) {
  std::error_code ec;
  const fs::file_time_type t = fs::last_write_time(path, ec);
  return !ec && t < fs::file_time_type::clock::now() - age;
}

std::uint64_t bytes_under(const fs::path& folder) {
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) bytes += it->file_size(size_ec);
  }
  return bytes;
}

[[noreturn]] void fail(const fs::path& base, const std::string& what, int err) {
  throw CacheError("cache: cannot make a scratch folder in '" + base.string() + "': " + what +
                   ": " + std::strerror(err));
}

}  // namespace

ScratchArea::ScratchArea(const fs::path& base) {
  std::error_code ec;
  fs::create_directories(base, ec);
  // mkdtemp makes the folder 0700: no other user can put a file where this process loads
  // compiled code from.
  std::string making = (base / ("." + std::to_string(getpid()) + "-XXXXXX")).string();
  if (!mkdtemp(making.data())) fail(base, "mkdtemp", errno);
  const fs::path lock = fs::path(making) / kLockName;
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const int err = errno;
  if (lock_fd_ < 0 || !lock_byte(lock_fd_)) {
    if (lock_fd_ >= 0) ::close(lock_fd_);
    fs::remove_all(making, ec);
    fail(base, "its lock", lock_fd_ < 0 ? err : errno);
  }
  // Named as finished only once locked: a cleaner never sees a finished folder without its lock.
  path_ = base / fs::path(making).filename().string().substr(1);
  if (std::rename(making.c_str(), path_.c_str()) != 0) {
    const int rename_err = errno;
    ::close(lock_fd_);
    fs::remove_all(making, ec);
    fail(base, "rename", rename_err);
  }
}

ScratchArea::~ScratchArea() {
  std::error_code ec;
  fs::remove_all(path_, ec);  // while locked: no cleaner races the removal
  ::close(lock_fd_);
}

fs::path ScratchArea::unique_file(std::string_view suffix) {
  static std::atomic<std::uint64_t> counter{0};
  return path_ /
         (std::to_string(counter.fetch_add(1, std::memory_order_relaxed)) + std::string(suffix));
}

std::vector<fs::path> ScratchArea::abandoned(const fs::path& base) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path folder = it->path();
    const std::string name = folder.filename().string();
    if (name.front() == '.' || !it->is_directory(ec)) {  // half made, or not a folder at all
      if (older_than(folder, kHalfMadeAge)) out.push_back(folder);
      ec.clear();
      continue;
    }
    const int fd = ::open((folder / kLockName).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      if (errno == ENOENT && older_than(folder, kHalfMadeAge)) out.push_back(folder);
      continue;  // another user's folder (EACCES), or one whose owner is still making it
    }
    if (lock_byte(fd)) out.push_back(folder);  // nobody holds it: its process ended
    ::close(fd);                               // (which drops the lock just taken)
  }
  return out;
}

ScratchCleanup ScratchArea::remove_abandoned(const fs::path& base) {
  ScratchCleanup out;
  for (const fs::path& folder : abandoned(base)) {
    const std::uint64_t bytes = bytes_under(folder);
    std::error_code ec;
    if (fs::remove_all(folder, ec) > 0 && !ec) {
      ++out.folders;
      out.bytes += bytes;
    }
  }
  return out;
}

std::size_t remove_legacy_build_folders(const fs::path& temp) {
  std::size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(temp, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path folder = it->path();
    if (folder.filename().string().rfind("streamfuse-jit-", 0) != 0) continue;
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        !older_than(folder, kHalfMadeAge))
      continue;
    std::error_code remove_ec;
    if (fs::remove_all(folder, remove_ec) > 0 && !remove_ec) ++removed;
  }
  return removed;
}

fs::path private_scratch_base() {
  std::error_code ec;
  const fs::path own = fs::temp_directory_path(ec) / ("streamfuse-" + std::to_string(getuid()));
  if (::mkdir(own.c_str(), 0700) != 0 && errno != EEXIST)
    throw CacheError("cache: cannot make '" + own.string() + "': " + std::strerror(errno));
  struct stat st {};
  if (::lstat(own.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0)
    throw CacheError("cache: '" + own.string() +
                     "' is not a folder of this user's closed to others; kernels are not built "
                     "there (remove it, or set STREAMFUSE_CACHE_DIR to a writable directory)");
  return own / "scratch";
}

}  // namespace streamfuse::cache

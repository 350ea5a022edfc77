#include "cache/claim_locks.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace streamfuse::cache {
namespace {

// One byte per name, at an offset off_t can hold.
struct flock byte_of(std::uint64_t name, short type) {
  struct flock l {};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = static_cast<off_t>(name & 0x3fffffffffffffffULL);
  l.l_len = 1;
  l.l_pid = 0;  // required by OFD locks
  return l;
}

int lock(int fd, int command, std::uint64_t name, short type) {
  struct flock l = byte_of(name, type);
  int r;
  do {
    r = fcntl(fd, command, &l);
  } while (r != 0 && errno == EINTR);
  return r;
}

}  // namespace

ClaimLocks::ClaimLocks(const std::filesystem::path& path) {
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
}

ClaimLocks::~ClaimLocks() {
  if (fd_ >= 0) close(fd_);
}

bool ClaimLocks::try_claim(std::uint64_t name) {
  if (fd_ < 0) return true;
  if (lock(fd_, F_OFD_SETLK, name, F_WRLCK) == 0) return true;
  // Held elsewhere (EAGAIN / EACCES); any other failure leaves the caller to compile anyway.
  return errno != EAGAIN && errno != EACCES;
}

void ClaimLocks::release(std::uint64_t name) {
  if (fd_ >= 0) lock(fd_, F_OFD_SETLK, name, F_UNLCK);
}

bool ClaimLocks::wait_free(std::uint64_t name, const std::atomic<bool>& give_up) {
  if (fd_ < 0) return true;
  for (;;) {
    if (lock(fd_, F_OFD_SETLK, name, F_WRLCK) == 0) {
      lock(fd_, F_OFD_SETLK, name, F_UNLCK);
      return true;
    }
    if (errno != EAGAIN && errno != EACCES) return true;  // cannot tell: the caller compiles
    if (give_up.load(std::memory_order_relaxed)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace streamfuse::cache

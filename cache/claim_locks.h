// ClaimLocks: exclusive claims on 64-bit names shared by every process that opens the same lock
// file. Each name is one byte of the file, locked with an open-file-description lock
// (F_OFD_SETLK): a claim belongs to this object's descriptor (not to the process, so two objects
// in one process exclude each other like two processes do), and the kernel drops it when its
// holder exits, so a crashed compile never blocks the others.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>

namespace streamfuse::cache {

class ClaimLocks {
 public:
  // Opens (creating) `path`. When it cannot, claims always succeed (no other process can share
  // an unusable directory's work anyway) and valid() is false.
  explicit ClaimLocks(const std::filesystem::path& path);
  ~ClaimLocks();
  ClaimLocks(const ClaimLocks&) = delete;
  ClaimLocks& operator=(const ClaimLocks&) = delete;

  bool valid() const { return fd_ >= 0; }
  // True when `name` is now claimed by this object; false when another holder has it.
  bool try_claim(std::uint64_t name);
  void release(std::uint64_t name);
  // Blocks until `name` is free (without keeping it), or until `give_up` is set: then false.
  // Polls every few milliseconds (a blocking lock could not be given up at exit).
  bool wait_free(std::uint64_t name, const std::atomic<bool>& give_up);

 private:
  int fd_ = -1;
};

}  // namespace streamfuse::cache

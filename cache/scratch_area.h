// ScratchArea: a process's own folder for files that exist only while it works (the sources and
// shared objects of kernels being compiled, the temporaries of cache writes before their rename),
// so that what a process leaves when it dies is in one place, and the next process to look can
// tell it is abandoned. The folder holds a lock file whose byte 0 the owner keeps locked (an
// open-file-description lock, as the compile claims use): the kernel drops the lock when the owner
// exits however it ends, so a lock anyone can take means the owner is gone, whatever became of
// its pid.
//
//   <base>/<pid>-<random>/        a live process's folder (or a dead one's, until removed)
//   <base>/<pid>-<random>/lock    held by its process
//   <base>/.<pid>-<random>/       one being made (renamed once its lock is held)
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace streamfuse::cache {

struct ScratchCleanup {
  std::size_t folders = 0;  // folders of processes that ended, removed
  std::uint64_t bytes = 0;  // what their files took
};

class ScratchArea {
 public:
  // Makes this process's folder under `base` (making `base` too, private to this user when it
  // is new) and locks it. Throws CacheError naming `base` when it cannot.
  explicit ScratchArea(const std::filesystem::path& base);
  // Removes the folder with everything in it.
  ~ScratchArea();
  ScratchArea(const ScratchArea&) = delete;
  ScratchArea& operator=(const ScratchArea&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A file name in the folder that no other call returns: for a temporary.
  std::filesystem::path unique_file(std::string_view suffix);

  // The folders under `base` of processes that ended, and folders left half made more than an
  // hour ago; never a live process's folder. Missing `base`: none.
  static std::vector<std::filesystem::path> abandoned(const std::filesystem::path& base);
  // Removes abandoned(base) with everything in them.
  static ScratchCleanup remove_abandoned(const std::filesystem::path& base);

 private:
  std::filesystem::path path_;
  int lock_fd_ = -1;
};

// Removes the build folders that streamfuse versions before the scratch area left in the
// temporary directory `temp` (streamfuse-jit-XXXXXX: one per process, never removed when it was
// killed or exited mid-compile): this user's, untouched for an hour. How many.
std::size_t remove_legacy_build_folders(const std::filesystem::path& temp);

// Where a process whose cache directory cannot be written makes its scratch folders: a folder of
// this user's in the system's temporary directory (streamfuse-<uid>/scratch), which must be the
// user's own and closed to others, since compiled code is loaded from it. Throws CacheError when
// it is not.
std::filesystem::path private_scratch_base();

}  // namespace streamfuse::cache

// BlockFiles: the blocks a device's caching allocator held at once, by size class, in the last
// process that ran the same program (the same executable and arguments), so that the next one
// makes them while it starts (runtime/preparer.h) instead of faulting in and clearing their pages
// in its first iteration. The file is prepared/<device>.<program>.blocks of the cache directory,
// <program> the hash of the command line: other programs sharing the directory, and other runs
// of one test binary, keep records of their own (a working set is a program's, and making the
// wrong one's would only take memory). Written off the calling thread as the highs grow; the
// record replaces the file's.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cache/archive.h"
#include "cache/background_writer.h"
#include "cache/cache_dir.h"

namespace streamfuse::backends {

// A size class and how many blocks of it were held at once.
struct HeldBlocks {
  std::uint64_t capacity = 0;
  std::uint32_t blocks = 0;

  friend bool operator==(const HeldBlocks&, const HeldBlocks&) = default;
};

// The most size classes a record keeps, and blocks per class (beyond, a class is recorded at the
// cap).
inline constexpr std::size_t kMaxHeldClasses = 1024;
inline constexpr std::uint32_t kMaxHeldBlocks = 4096;

// A record as bytes: the payload of a blocks file, and a part of bundles (runtime/bundle.h).
void put_held_blocks(cache::OutArchive& out, const std::vector<HeldBlocks>& blocks);
// Throws FormatError: a capacity that is not a size class, a count past the caps.
std::vector<HeldBlocks> get_held_blocks(cache::InArchive& in);
std::string encode_held_blocks(const std::vector<HeldBlocks>& blocks);
// Throws FormatError, as get_held_blocks.
std::vector<HeldBlocks> decode_held_blocks(std::string_view bytes);

// The program's key: 16 hex digits of the executable's path and arguments.
std::string program_key();

class BlockFiles {
 public:
  // `program`: program_key() of this process (tests name others).
  BlockFiles(std::shared_ptr<cache::CacheDir> dir, std::string device, std::string program);
  BlockFiles(const BlockFiles&) = delete;
  BlockFiles& operator=(const BlockFiles&) = delete;

  // The record of the last run of this program, in the order its classes first reached their
  // highs (the order it allocated them in); none when missing or bad (warned once).
  std::vector<HeldBlocks> load();
  // A new high of one class in this process; written with the rest of the record, off the
  // calling thread.
  void note(std::uint64_t capacity, std::uint32_t blocks);
  // Returns when every high noted so far is written (or could not be).
  void flush() { writer_.flush(); }
  // This process's highs so far, by first high (what the next run's record will be; a bundle
  // saved now carries them), also where the directory cannot be written.
  std::vector<HeldBlocks> highs() const;

 private:
  void write();
  std::filesystem::path path() const;

  std::shared_ptr<cache::CacheDir> dir_;
  std::string device_, program_;
  mutable std::mutex mutex_;
  std::vector<HeldBlocks> loaded_;  // what load() read: not written again
  std::vector<HeldBlocks> mine_;    // this process's highs, by first high
  bool dirty_ = false;
  cache::BackgroundWriter writer_;  // last: stops before the members its jobs use
};

}  // namespace streamfuse::backends

// PreparedOpFiles: the ops a device's backend prepared in earlier processes, in
// prepared/<device>.ops of the cache directory (at most kMaxPreparedOps). A process reads the file
// once, when its device runtime is made, and prepares those ops in the file's order while it
// starts (runtime/preparer.h). The ops it uses that the file lacks are written to its front by a
// background thread, in the order it first used them (the order the next process will need them
// in), ahead of the earlier processes' ones. Processes that add ops at the same time
// may lose one another's additions (each rewrites the file whole): the op is then added again by
// the next process that uses it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "cache/background_writer.h"
#include "cache/cache_dir.h"

namespace streamfuse::backends {

class PreparedOpFiles {
 public:
  PreparedOpFiles(std::shared_ptr<cache::CacheDir> dir, std::string device);
  PreparedOpFiles(const PreparedOpFiles&) = delete;
  PreparedOpFiles& operator=(const PreparedOpFiles&) = delete;

  // The persisted ops, most recent first; none when the file is missing or bad (warned once).
  std::vector<backends::PreparedOp> load();
  // An op this process used for the first time. Unless load() returned it or it was added
  // before, it is written to the front of the file, off the calling thread.
  void add(const backends::PreparedOp& op);
  // Returns when every op added so far is written (or could not be).
  void flush() { writer_.flush(); }

 private:
  void write();

  std::shared_ptr<cache::CacheDir> dir_;
  std::string device_;
  std::mutex mutex_;
  std::vector<backends::PreparedOp> known_;  // in the file as far as this process knows
  std::vector<backends::PreparedOp> mine_;   // this process's new ones, oldest first
  std::size_t written_ = 0;                  // how many of mine_ a write has taken
  cache::BackgroundWriter writer_;           // last: stops before the members its jobs use
};

}  // namespace streamfuse::backends

// PlanFiles: a device's plans in the cache directory (the PlanStore's PlanPersistence). Plans are
// read when a segment first starts with their first op, and written by a background thread; the
// process writes what is queued before it exits.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "cache/cache_dir.h"
#include "fusion/plan_persistence.h"

namespace streamfuse::cache {

// The triggers to write for a plan of `ops` with `triggers` at `path`, where another process may
// have saved the same plan with other triggers: theirs and ours (ours kept past kMaxTriggers).
// Nullopt when the file there holds every one of ours already.
std::optional<std::vector<fusion::Trigger>> triggers_to_write(
    const std::filesystem::path& path, std::span<const stream::OpDesc> ops,
    const std::vector<fusion::Trigger>& triggers);

class PlanFiles final : public fusion::PlanPersistence {
 public:
  // Plans of `device` ("cpu", "cuda:0": plans/<device>/ in the directory).
  PlanFiles(std::shared_ptr<CacheDir> dir, std::string device);
  // Writes what is queued.
  ~PlanFiles() override;
  PlanFiles(const PlanFiles&) = delete;
  PlanFiles& operator=(const PlanFiles&) = delete;

  std::vector<fusion::PlanDraft> load(const stream::OpDesc& first) override;
  void save(std::shared_ptr<const fusion::ExecutionPlan> plan) override;
  // Returns when every plan saved so far is written (or could not be).
  void flush();

 private:
  void run();
  void write(const fusion::ExecutionPlan& plan);

  std::shared_ptr<CacheDir> dir_;
  std::string device_;
  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  // Plans to write, by plan hash: a plan saved again before it was written (a trigger added) is
  // written once, in its latest form.
  std::deque<std::uint64_t> queue_;
  boost::unordered_flat_map<std::uint64_t, std::shared_ptr<const fusion::ExecutionPlan>> pending_;
  bool writing_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace streamfuse::cache

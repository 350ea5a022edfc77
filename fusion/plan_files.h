// PlanFiles: a device's plans in the cache directory (the PlanStore's PlanPersistence). Plans are
// read when a segment first starts with their first op, and written by a background thread; the
// process writes what is queued before it exits. Beside them, the entries where reading ahead
// starts.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/background_writer.h"
#include "cache/cache_dir.h"
#include "fusion/plan_persistence.h"

namespace streamfuse::fusion {

// The plan to write at `path` for `plan`, where another process may have saved the same plan
// with other triggers and successors: theirs and ours (ours kept past the caps). Nullopt when the
// file there holds every one of ours already.
std::optional<fusion::PlanDraft> plan_to_write(const std::filesystem::path& path,
                                               const fusion::ExecutionPlan& plan);

class PlanFiles final : public fusion::PlanPersistence {
 public:
  // Plans of `device` ("cpu", "cuda:0": plans/<device>/ in the directory).
  PlanFiles(std::shared_ptr<cache::CacheDir> dir, std::string device);
  // Writes what is queued.
  ~PlanFiles() override = default;
  PlanFiles(const PlanFiles&) = delete;
  PlanFiles& operator=(const PlanFiles&) = delete;

  std::vector<fusion::PlanDraft> load(const core::OpDesc& first) override;
  void save(std::shared_ptr<const fusion::ExecutionPlan> plan) override;
  // In plans/<device>.entries, at most kMaxEntries: this process's first, then the ones the
  // file had (processes that add entries at once may lose one another's: the next run adds
  // them again).
  std::vector<core::OpDesc> entries() override;
  void save_entry(const core::OpDesc& first) override;
  // Returns when every plan and entry saved so far is written (or could not be).
  void flush() { writer_.flush(); }

  static constexpr std::size_t kMaxEntries = 16;

 private:
  void write(const fusion::ExecutionPlan& plan);
  void write_entries();
  // Adds `ops` to known_entries_ (they are in the file).
  void know_entries(const std::vector<core::OpDesc>& ops);

  std::shared_ptr<cache::CacheDir> dir_;
  std::string device_;
  std::mutex entries_mutex_;
  std::vector<core::OpDesc> known_entries_;  // in the file as far as this process knows
  std::vector<core::OpDesc> my_entries_;     // this process's, oldest first
  std::size_t entries_written_ = 0;          // how many of my_entries_ a write has taken
  // Jobs by plan hash: a plan saved again before it was written (a trigger added) is written
  // once, in its latest form. Declared last: its thread stops before the members it uses go.
  cache::BackgroundWriter writer_;
};

}  // namespace streamfuse::fusion

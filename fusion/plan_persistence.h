// PlanPersistence: where a PlanStore's plans live between processes. Declared here, implemented
// by cache/ over the cache directory, and handed to the store by the device runtime.
#pragma once

#include <vector>

#include "fusion/plan.h"

namespace streamfuse::fusion {

class PlanPersistence {
 public:
  virtual ~PlanPersistence() = default;
  // The persisted plans whose first op is `first` (relative form). The store asks once per
  // distinct first op, when a segment first starts with it. Bad files are skipped (one warning
  // each). Thread-safe; reads files.
  virtual std::vector<PlanDraft> load(const core::OpDesc& first) = 0;
  // A plan the store added, or to which it added a trigger. Returns at once: the plan is written
  // off the calling thread (plans are immutable once shared).
  virtual void save(std::shared_ptr<const ExecutionPlan> plan) = 0;
  // Entries: the first ops of the segments processes started with (each stream's first segment
  // that ran a plan), most recent first. A process reads its plans ahead from these while it
  // starts, as it reads later ones ahead from each plan's successors: the ops a program runs
  // before its first plan (creating and loading tensors, views) run on their own and have none.
  // Bad files give none (one warning). Thread-safe; reads a file.
  virtual std::vector<core::OpDesc> entries() = 0;
  // An entry of this process (relative form); written off the calling thread unless known.
  virtual void save_entry(const core::OpDesc& first) = 0;
};

}  // namespace streamfuse::fusion

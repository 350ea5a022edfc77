#include "fusion/plan_files.h"

#include <algorithm>

#include "cache/cache_log.h"
#include "core/log.h"
#include "fusion/plan_codec.h"

namespace streamfuse::fusion {
namespace fs = std::filesystem;

PlanFiles::PlanFiles(std::shared_ptr<cache::CacheDir> dir, std::string device)
    : dir_(std::move(dir)), device_(std::move(device)) {}

std::vector<fusion::PlanDraft> PlanFiles::load(const core::OpDesc& first) {
  std::vector<fusion::PlanDraft> plans;
  const fs::path folder = cache::plan_folder(dir_->root(), device_, first_op_hash(first));
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  if (ec) {
    if (cache::cache_logging())
      cache::cache_log("miss: no plans start with " +
                       core::to_string(first, core::OpForm::kRelative));
    return plans;
  }
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    if (path.extension() != ".plan") continue;  // temporaries of writes in flight
    // A plan of another streamfuse version or plan encoding is stale, not broken: a quiet miss,
    // replaced when the plan is learned again (or pruned, never used again).
    std::optional<std::string> payload =
        dir_->read(path, cache::FileKind::kPlan, cache::portable_fingerprint(),
                   cache::CacheDir::Foreign::kMiss);
    if (!payload) continue;
    try {
      fusion::PlanDraft plan = decode_plan(*payload);
      if (plan.ops.front() != first) continue;  // another first op with the same hash
      plans.push_back(std::move(plan));
    } catch (const cache::FormatError& e) {
      dir_->reject_payload(path, e.what());
    }
  }
  if (cache::cache_logging())
    cache::cache_log((plans.empty()
                          ? "miss: no plans start with "
                          : "hit: " + std::to_string(plans.size()) + " plan(s) start with ") +
                     core::to_string(first, core::OpForm::kRelative));
  return plans;
}

void PlanFiles::save(std::shared_ptr<const fusion::ExecutionPlan> plan) {
  if (!dir_->writable() || !persistable(*plan)) return;
  const std::uint64_t hash = plan_hash(plan->ops);
  writer_.submit(hash, [this, plan = std::move(plan)] { write(*plan); });
}

std::optional<fusion::PlanDraft> plan_to_write(const fs::path& path,
                                               const fusion::ExecutionPlan& plan) {
  fusion::PlanDraft ours{plan.ops, plan.optimization, plan.triggers, plan.successors};
  const cache::ReadResult existing =
      cache::read_cache_file(path, cache::FileKind::kPlan, cache::portable_fingerprint());
  if (!existing) return ours;
  try {
    fusion::PlanDraft theirs = decode_plan(existing.payload);
    if (theirs.ops != plan.ops) return ours;
    const std::size_t added = fusion::merge_triggers(theirs.triggers, plan.triggers) +
                              fusion::merge_successors(theirs.successors, plan.successors);
    if (added == 0) return std::nullopt;
    ours.triggers = std::move(theirs.triggers);
    ours.successors = std::move(theirs.successors);
    return ours;
  } catch (const cache::FormatError&) {  // replaced by ours
    return ours;
  }
}

void PlanFiles::write(const fusion::ExecutionPlan& plan) {
  const fs::path path =
      cache::plan_path(dir_->root(), device_, first_op_hash(plan.ops.front()), plan_hash(plan.ops));
  std::optional<fusion::PlanDraft> merged = plan_to_write(path, plan);
  if (!merged) return;  // nothing new to say
  try {
    dir_->write(path, cache::FileKind::kPlan, cache::portable_fingerprint(),
                encode_plan(*fusion::make_plan(std::move(*merged))));
  } catch (const cache::FormatError& e) {
    core::warn_once("cache-encode", std::string("cache: a plan was not persisted: ") + e.what());
  }
}

}  // namespace streamfuse::fusion

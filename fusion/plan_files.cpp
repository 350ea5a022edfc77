#include "fusion/plan_files.h"

#include <algorithm>

#include "cache/cache_log.h"
#include "cache/op_codec.h"
#include "core/log.h"
#include "fusion/plan_codec.h"

namespace streamfuse::fusion {
namespace fs = std::filesystem;
namespace {

bool contains(const std::vector<core::OpDesc>& ops, const core::OpDesc& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// The writer's key for the entries file (plans are keyed by their hash; one that equals this
// would have its write merged with the entries' one: 2^-64).
constexpr std::uint64_t kEntriesJob = ~std::uint64_t{0};

}  // namespace

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

std::vector<core::OpDesc> PlanFiles::entries() {
  const fs::path path = cache::plan_entries_path(dir_->root(), device_);
  // Another version's file is a quiet miss, rewritten as processes start.
  std::vector<core::OpDesc> ops =
      dir_->read_portable(path, cache::FileKind::kPlanEntries, cache::decode_ops);
  if (cache::cache_logging())
    cache::cache_log(ops.empty() ? "miss: no plan entries for " + device_
                                 : "hit: " + std::to_string(ops.size()) + " plan entr" +
                                       (ops.size() == 1 ? "y" : "ies") + " for " + device_);
  know_entries(ops);
  return ops;
}

void PlanFiles::know_entries(const std::vector<core::OpDesc>& ops) {
  std::lock_guard lock(entries_mutex_);
  for (const core::OpDesc& op : ops)
    if (!contains(known_entries_, op)) known_entries_.push_back(op);
}

void PlanFiles::save_entry(const core::OpDesc& first) {
  if (!dir_->writable()) return;
  {
    std::lock_guard lock(entries_mutex_);
    if (contains(known_entries_, first) || contains(my_entries_, first) ||
        my_entries_.size() >= kMaxEntries)
      return;
    my_entries_.push_back(first);
  }
  writer_.submit(kEntriesJob, [this] { write_entries(); });
}

void PlanFiles::write_entries() {
  std::vector<core::OpDesc> ops;
  {
    std::lock_guard lock(entries_mutex_);
    if (entries_written_ == my_entries_.size()) return;  // an earlier job wrote them
    ops = my_entries_;
    entries_written_ = my_entries_.size();
  }
  // This process's entries first; then what the file holds (earlier processes', or another's
  // written since this one read it).
  const fs::path path = cache::plan_entries_path(dir_->root(), device_);
  std::vector<core::OpDesc> theirs;
  if (const cache::ReadResult existing = cache::read_cache_file(path, cache::FileKind::kPlanEntries,
                                                                cache::portable_fingerprint())) {
    try {
      theirs = cache::decode_ops(existing.payload);
    } catch (const cache::FormatError&) {  // replaced by ours
    }
  }
  // The file has them all (this process noted its entry before it read the file): nothing new.
  if (std::all_of(ops.begin(), ops.end(),
                  [&](const core::OpDesc& op) { return contains(theirs, op); })) {
    know_entries(theirs);
    return;
  }
  for (core::OpDesc& op : theirs)
    if (!contains(ops, op)) ops.push_back(std::move(op));
  if (ops.size() > kMaxEntries) ops.resize(kMaxEntries);
  try {
    if (dir_->write(path, cache::FileKind::kPlanEntries, cache::portable_fingerprint(),
                    cache::encode_ops(ops)))
      know_entries(ops);
  } catch (const cache::FormatError& e) {
    core::warn_once("cache-encode", std::string("cache: plan entries not persisted: ") + e.what());
  }
}

}  // namespace streamfuse::fusion

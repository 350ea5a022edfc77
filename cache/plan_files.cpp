#include "cache/plan_files.h"

#include <algorithm>
#include <cstdlib>

#include "cache/cache_log.h"
#include "cache/plan_codec.h"
#include "stream/log.h"

namespace streamfuse::cache {
namespace fs = std::filesystem;

namespace {

// Every PlanFiles alive, so that plans explored just before exit still reach the disk: the device
// runtimes that own them are never destroyed.
struct Live {
  std::mutex mutex;
  std::vector<PlanFiles*> files;
};
Live& live() {
  static Live* l = [] {
    std::atexit([] {
      Live& l = live();
      std::lock_guard lock(l.mutex);
      for (PlanFiles* f : l.files) f->flush();
    });
    return new Live;
  }();
  return *l;
}

}  // namespace

PlanFiles::PlanFiles(std::shared_ptr<CacheDir> dir, std::string device)
    : dir_(std::move(dir)), device_(std::move(device)) {
  thread_ = std::thread(&PlanFiles::run, this);
  Live& l = live();
  std::lock_guard lock(l.mutex);
  l.files.push_back(this);
}

PlanFiles::~PlanFiles() {
  {
    Live& l = live();
    std::lock_guard lock(l.mutex);
    l.files.erase(std::find(l.files.begin(), l.files.end(), this));
  }
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

std::vector<fusion::PlanDraft> PlanFiles::load(const stream::OpDesc& first) {
  std::vector<fusion::PlanDraft> plans;
  const fs::path folder = plan_folder(dir_->root(), device_, first_op_hash(first));
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  if (ec) {
    if (cache_logging()) cache_log("miss: no plans start with " + stream::to_string(first));
    return plans;
  }
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    if (path.extension() != ".plan") continue;  // temporaries of writes in flight
    std::optional<std::string> payload = dir_->read(path, FileKind::kPlan, plan_fingerprint());
    if (!payload) continue;
    try {
      fusion::PlanDraft plan = decode_plan(*payload);
      if (plan.ops.front() != first) continue;  // another first op with the same hash
      plans.push_back(std::move(plan));
    } catch (const FormatError& e) {
      dir_->reject_payload(path, e.what());
    }
  }
  if (cache_logging())
    cache_log((plans.empty() ? "miss: no plans start with "
                             : "hit: " + std::to_string(plans.size()) + " plan(s) start with ") +
              stream::to_string(first));
  return plans;
}

void PlanFiles::save(std::shared_ptr<const fusion::ExecutionPlan> plan) {
  if (!dir_->writable() || !persistable(*plan)) return;
  const std::uint64_t hash = plan_hash(plan->ops);
  {
    std::lock_guard lock(mutex_);
    auto [it, added] = pending_.try_emplace(hash, plan);
    if (!added) {
      it->second = std::move(plan);  // queued already: write the latest form
      return;
    }
    queue_.push_back(hash);
  }
  work_cv_.notify_one();
}

void PlanFiles::flush() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, [&] { return (queue_.empty() && !writing_) || stop_; });
}

void PlanFiles::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, everything written
    const auto it = pending_.find(queue_.front());
    std::shared_ptr<const fusion::ExecutionPlan> plan = std::move(it->second);
    pending_.erase(it);
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    write(*plan);
    lock.lock();
    writing_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
  idle_cv_.notify_all();
}

std::optional<std::vector<fusion::Trigger>> triggers_to_write(
    const fs::path& path, std::span<const stream::OpDesc> ops,
    const std::vector<fusion::Trigger>& triggers) {
  const ReadResult existing = read_cache_file(path, FileKind::kPlan, plan_fingerprint());
  if (!existing) return triggers;
  try {
    fusion::PlanDraft theirs = decode_plan(existing.payload);
    if (!std::equal(ops.begin(), ops.end(), theirs.ops.begin(), theirs.ops.end())) return triggers;
    if (fusion::merge_triggers(theirs.triggers, triggers) == 0) return std::nullopt;
    return std::move(theirs.triggers);
  } catch (const FormatError&) {  // replaced by ours
    return triggers;
  }
}

void PlanFiles::write(const fusion::ExecutionPlan& plan) {
  const fs::path path =
      plan_path(dir_->root(), device_, first_op_hash(plan.ops.front()), plan_hash(plan.ops));
  std::optional<std::vector<fusion::Trigger>> triggers =
      triggers_to_write(path, plan.ops, plan.triggers);
  if (!triggers) return;  // nothing new to say
  fusion::ExecutionPlan merged;
  merged.ops = plan.ops;
  merged.optimization = plan.optimization;
  merged.triggers = std::move(*triggers);
  try {
    dir_->write(path, FileKind::kPlan, plan_fingerprint(), encode_plan(merged));
  } catch (const FormatError& e) {
    stream::warn_once("cache-encode", std::string("cache: a plan was not persisted: ") + e.what());
  }
}

}  // namespace streamfuse::cache

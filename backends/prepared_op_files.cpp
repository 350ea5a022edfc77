#include "backends/prepared_op_files.h"

#include <algorithm>

#include "backends/prepared_op_codec.h"
#include "cache/cache_log.h"
#include "core/log.h"

namespace streamfuse::backends {

namespace {

bool contains(const std::vector<backends::PreparedOp>& ops, const backends::PreparedOp& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

}  // namespace

PreparedOpFiles::PreparedOpFiles(std::shared_ptr<cache::CacheDir> dir, std::string device)
    : dir_(std::move(dir)), device_(std::move(device)) {}

std::vector<backends::PreparedOp> PreparedOpFiles::load() {
  const std::filesystem::path path = cache::prepared_ops_path(dir_->root(), device_);
  // Another streamfuse version's file is a quiet miss, rewritten as ops are used.
  std::vector<backends::PreparedOp> ops =
      dir_->read_portable(path, cache::FileKind::kPreparedOps, decode_prepared_ops);
  if (cache::cache_logging())
    cache::cache_log(ops.empty()
                         ? "miss: no prepared ops for " + device_
                         : "hit: " + std::to_string(ops.size()) + " prepared op(s) for " + device_);
  std::lock_guard lock(mutex_);
  for (const backends::PreparedOp& op : ops)
    if (!contains(known_, op)) known_.push_back(op);
  return ops;
}

void PreparedOpFiles::add(const backends::PreparedOp& op) {
  if (!dir_->writable()) return;
  {
    std::lock_guard lock(mutex_);
    // Past the cap, the first ones used are kept: the ones the next process needs first.
    if (contains(known_, op) || contains(mine_, op) || mine_.size() >= kMaxPreparedOps) return;
    mine_.push_back(op);
  }
  writer_.submit(0, [this] { write(); });  // one job writes every op added until it runs
}

void PreparedOpFiles::write() {
  std::vector<backends::PreparedOp> ops;
  {
    std::lock_guard lock(mutex_);
    if (written_ == mine_.size()) return;  // an earlier job wrote them
    // This process's ops first, in the order it first used them: the order the next process
    // will need them, so the preparer makes each before it is waited for.
    ops = mine_;
    written_ = mine_.size();
  }
  const std::filesystem::path path = cache::prepared_ops_path(dir_->root(), device_);
  // The file holds earlier processes' ops, and maybe what another one wrote since this one read
  // it: kept, behind ours.
  const cache::ReadResult existing =
      cache::read_cache_file(path, cache::FileKind::kPreparedOps, cache::portable_fingerprint());
  if (existing) {
    try {
      for (backends::PreparedOp& op : decode_prepared_ops(existing.payload))
        if (!contains(ops, op)) ops.push_back(std::move(op));
    } catch (const cache::FormatError&) {  // replaced by ours
    }
  }
  if (ops.size() > kMaxPreparedOps) ops.resize(kMaxPreparedOps);
  try {
    if (dir_->write(path, cache::FileKind::kPreparedOps, cache::portable_fingerprint(),
                    encode_prepared_ops(ops))) {
      if (cache::cache_logging())
        cache::cache_log("wrote " + std::to_string(ops.size()) + " prepared op(s) for " + device_);
      std::lock_guard lock(mutex_);
      for (const backends::PreparedOp& op : ops)
        if (!contains(known_, op)) known_.push_back(op);
    }
  } catch (const cache::FormatError& e) {
    core::warn_once("cache-encode", std::string("cache: prepared ops not persisted: ") + e.what());
  }
}

}  // namespace streamfuse::backends

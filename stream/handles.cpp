#include "stream/handles.h"

#include "streamfuse/error.h"

namespace streamfuse::stream {
namespace {
[[noreturn]] void throw_missing(core::TensorId id) {
  throw Error("internal error: tensor t" + std::to_string(id) +
              " has no value (an op ran before the op that makes its input); please report this");
}
}  // namespace

void HandleContainer::insert(core::TensorId id, backends::TensorHandle handle) {
  std::lock_guard lock(mutex_);
  handles_.insert_or_assign(id, std::move(handle));
}

core::Failure HandleContainer::gather(const core::OpDesc& op,
                                      std::span<backends::TensorHandle> out) {
  core::Failure failure;
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const core::TensorDesc& in = op.inputs[i];
    auto it = handles_.find(in.id);
    if (it == handles_.end()) {
      auto f = failures_.find(in.id);
      if (f == failures_.end()) throw_missing(in.id);
      if (!failure) failure = f->second;
      if (in.status == core::TensorStatus::kReadWrite) failures_.erase(f);
      continue;
    }
    if (in.status == core::TensorStatus::kReadWrite) {
      out[i] = std::move(it->second);
      handles_.erase(it);
    } else {
      out[i] = it->second;
    }
  }
  return failure;
}

backends::TensorHandle HandleContainer::get(core::TensorId id, core::Failure* failure) const {
  std::lock_guard lock(mutex_);
  if (auto it = handles_.find(id); it != handles_.end()) return it->second;
  if (auto f = failures_.find(id); f != failures_.end()) {
    *failure = f->second;
    return {};
  }
  throw_missing(id);
}

void HandleContainer::erase(core::TensorId id) {
  std::lock_guard lock(mutex_);
  if (handles_.erase(id) == 0) failures_.erase(id);
}

void HandleContainer::mark_failed(core::TensorId id, core::Failure why) {
  std::lock_guard lock(mutex_);
  failures_.insert_or_assign(id, std::move(why));
}

std::size_t HandleContainer::size() const {
  std::lock_guard lock(mutex_);
  return handles_.size() + failures_.size();
}

}  // namespace streamfuse::stream

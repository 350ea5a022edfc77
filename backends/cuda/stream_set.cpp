#include "backends/cuda/stream_set.h"

#include <bit>
#include <string>

namespace streamfuse::backends::cuda {

StreamSet::StreamSet(std::shared_ptr<const DeviceContext> device) : device_(std::move(device)) {}

StreamSet::~StreamSet() {
  const Driver& d = device_->driver();
  if (d.ctx_set_current(device_->context()) != CUDA_SUCCESS) return;  // the driver is gone
  for (CUstream s : streams_)
    if (s) d.stream_destroy(s);
}

CUstream StreamSet::get(StreamId id) {
  std::lock_guard lock(mutex_);
  if (id < streams_.size() && streams_[id]) return streams_[id];
  if (id >= streams_.size()) streams_.resize(id + 1, nullptr);
  const Driver& d = device_->driver();
  device_->make_current();
  CUstream s = nullptr;
  d.check(d.stream_create(&s, CU_STREAM_NON_BLOCKING),
          "creating stream " + std::to_string(id) + " on " + device_->name());
  streams_[id] = s;
  return s;
}

void StreamSet::order(StreamId producer, StreamId consumer) {
  if (producer == consumer) return;
  const CUstream from = get(producer), to = get(consumer);
  const Driver& d = device_->driver();
  device_->make_current();
  CUevent e = nullptr;
  // Timing off: such events are the cheap kind, made for ordering.
  d.check(d.event_create(&e, CU_EVENT_DISABLE_TIMING), "creating an event on " + device_->name());
  const CUresult recorded = d.event_record(e, from);
  const CUresult waited = recorded == CUDA_SUCCESS ? d.stream_wait_event(to, e, 0) : recorded;
  d.event_destroy(e);  // released once the wait is satisfied
  d.check(waited, "ordering stream " + std::to_string(consumer) + " after stream " +
                      std::to_string(producer) + " on " + device_->name());
}

void StreamSet::note_use(const StorageBlock& block, StreamId consumer) {
  block.users.fetch_or(user_bit(consumer), std::memory_order_relaxed);
}

void StreamSet::synchronize(StreamId id) {
  const CUstream s = get(id);
  const Driver& d = device_->driver();
  device_->make_current();
  d.check(d.stream_synchronize(s), "waiting for stream " + std::to_string(id) + " on " +
                                       device_->name() + " (a kernel or copy failed)");
}

void StreamSet::synchronize_all() {
  std::vector<StreamId> ids;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < streams_.size(); ++i)
      if (streams_[i]) ids.push_back(static_cast<StreamId>(i));
  }
  for (StreamId id : ids) synchronize(id);
}

void StreamSet::handed_out(StorageBlock& block, bool reused) {
  if (reused) return claim(block);
  block.users.store(user_bit(current_stream_id()), std::memory_order_relaxed);
}

void StreamSet::claim(const StorageBlock& block) {
  const StreamId current = current_stream_id();
  const std::uint64_t mine = user_bit(current);
  const std::uint64_t before = block.users.exchange(mine, std::memory_order_relaxed);
  // Streams from 63 up share a bit: for them, the bit being set may mean another such stream.
  const bool maybe_other = (before & ~mine) != 0 || (current >= 63 && (before & mine) != 0);
  if (!maybe_other) return;
  std::vector<StreamId> producers;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t id = 0; id < streams_.size(); ++id) {
      if (!streams_[id] || id == current) continue;
      if (before & user_bit(static_cast<StreamId>(id)))
        producers.push_back(static_cast<StreamId>(id));
    }
  }
  for (StreamId p : producers) order(p, current);
}

}  // namespace streamfuse::backends::cuda

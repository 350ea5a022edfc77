#include "stream/device_streams.h"

#include <exception>
#include <string>

#include "core/log.h"
#include "core/thread_local.h"
#include "stream/stream.h"

namespace streamfuse::stream {
namespace {

// This thread's streams. The destructor runs at thread exit: it drains them (their tensors may
// be read by other threads) and hands them back for reuse. `t_exited` is trivially destructible,
// so it stays readable after that.
SF_THREAD_LOCAL bool t_exited = false;
struct ThreadStreams {
  std::array<Stream*, kDeviceSlots> streams{};
  std::array<DeviceStreams*, kDeviceSlots> owners{};
  ~ThreadStreams() {
    t_exited = true;
    for (int i = 0; i < kDeviceSlots; ++i) {
      if (!streams[i]) continue;
      try {
        streams[i]->drain();
      } catch (const std::exception& e) {
        core::warn_once("thread-exit-drain",
                        std::string("draining a stream at thread exit failed: ") + e.what());
      }
      owners[i]->retire(streams[i]);
    }
  }
};
SF_THREAD_LOCAL ThreadStreams t_streams;

}  // namespace

DeviceStreams::DeviceStreams(StreamDevice device) : device_(device) {}
DeviceStreams::~DeviceStreams() = default;

Stream* DeviceStreams::current() {
  if (t_exited) return nullptr;
  const auto slot = static_cast<std::size_t>(device_slot(device_.device));
  Stream*& s = t_streams.streams[slot];
  if (!s) {
    s = acquire();
    t_streams.owners[slot] = this;
  }
  return s;
}

Stream* DeviceStreams::acquire() {
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    Stream* s = free_.back();
    free_.pop_back();
    return s;
  }
  // Ids from 1 (0 is "no stream"); a retired stream keeps its id for its next thread.
  streams_.push_back(
      std::make_unique<Stream>(*this, static_cast<backends::StreamId>(streams_.size() + 1)));
  return streams_.back().get();
}

void DeviceStreams::retire(Stream* stream) {
  std::lock_guard lock(mutex_);
  free_.push_back(stream);
}

void DeviceStreams::synchronize() {
  std::vector<Stream*> streams;
  {
    std::lock_guard lock(mutex_);
    for (auto& s : streams_) streams.push_back(s.get());
  }
  for (Stream* s : streams) s->drain();
  device_.backend->wait_idle();
}

}  // namespace streamfuse::stream

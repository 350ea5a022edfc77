// The operation streams of one device: one per thread that records on it, made on first use,
// drained and handed back for reuse when the thread exits. What they run on (the device's
// backend, handle container, plan store and kernel launcher) belongs to the device runtime above,
// which outlives them.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.h"
#include "core/ir.h"
#include "fusion/plan_store.h"
#include "jit/launcher.h"
#include "stream/handles.h"
#include "streamfuse/device.h"

namespace streamfuse::stream {

class Stream;

// Where a device's per-thread streams are kept: slot 0 the CPU, 1 + i cuda:i.
inline constexpr int kMaxCudaDevices = 16;
inline constexpr int kDeviceSlots = 1 + kMaxCudaDevices;
// The slot of `device`; out of [0, kDeviceSlots) for a CUDA ordinal past the last.
inline int device_slot(Device device) { return device.is_cpu() ? 0 : 1 + device.index; }

// What a stream runs on: the device runtime's parts (not owned).
struct StreamDevice {
  Device device;
  backends::Backend* backend = nullptr;
  HandleContainer* handles = nullptr;
  fusion::PlanStore* plans = nullptr;
  jit::KernelLauncher* launcher = nullptr;
};

class DeviceStreams {
 public:
  explicit DeviceStreams(StreamDevice device);
  ~DeviceStreams();
  DeviceStreams(const DeviceStreams&) = delete;
  DeviceStreams& operator=(const DeviceStreams&) = delete;

  const StreamDevice& device() const { return device_; }
  backends::Backend& backend() const { return *device_.backend; }
  HandleContainer& handles() const { return *device_.handles; }

  // This thread's stream, made on first use; nullptr while the thread exits (its streams are
  // drained and retired then).
  Stream* current();
  // Drains every stream and waits for the device to finish their work.
  void synchronize();
  // A new tensor id, unique on the device.
  core::TensorId new_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
  // `n` new ids, [first, first + n); returns first.
  core::TensorId new_ids(std::uint64_t n) {
    return next_id_.fetch_add(n, std::memory_order_relaxed);
  }

  // How many ops a stream queues before it must run them; whether streams fuse.
  std::size_t queue_bound() const { return queue_bound_.load(std::memory_order_relaxed); }
  void set_queue_bound(std::size_t ops) {
    queue_bound_.store(ops == 0 ? 1 : ops, std::memory_order_relaxed);
  }
  bool fusion_enabled() const { return fusion_.load(std::memory_order_relaxed); }
  void set_fusion(bool on) { fusion_.store(on, std::memory_order_relaxed); }

  // A retired stream's thread has exited after draining it; the stream may serve a new thread.
  void retire(Stream* stream);

 private:
  Stream* acquire();

  StreamDevice device_;
  std::atomic<core::TensorId> next_id_{1};
  std::atomic<std::size_t> queue_bound_{256};
  std::atomic<bool> fusion_{true};
  std::mutex mutex_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Stream*> free_;
};

}  // namespace streamfuse::stream

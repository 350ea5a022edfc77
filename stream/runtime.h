// The per-device runtime: the backend, the handle container, and the streams of every thread
// using the device. The registry of runtimes is the one process-wide singleton.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.h"
#include "cache/cache_dir.h"
#include "jit/kernel_files.h"
#include "fusion/plan_files.h"
#include "backends/prepared_op_files.h"
#include "fusion/plan_store.h"
#include "jit/cpu_launcher.h"
#include "jit/kernel_cache.h"
#include "jit/launcher.h"
#include "stream/handles.h"
#include "core/ir.h"
#include "stream/preparer.h"
#include "stream/stream.h"
#include "streamfuse/config.h"
#include "streamfuse/device.h"
#include "streamfuse/profiler.h"

namespace streamfuse::stream {

class DeviceRuntime {
 public:
  // The runtime of `device`, created on first use. Throws DeviceError for a device this build
  // or this machine does not have. Runtimes live until the process ends (tensors in static
  // storage may outlive main).
  static DeviceRuntime& get(Device device);
  // Every runtime created so far.
  static std::vector<DeviceRuntime*> all();

  DeviceRuntime(Device device, std::unique_ptr<backends::Backend> backend, const Config& config);
  ~DeviceRuntime();

  Device device() const { return device_; }
  backends::Backend& backend() { return *backend_; }
  HandleContainer& handles() { return handles_; }
  core::TensorId new_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  // This thread's stream on this device, created on first use; nullptr while the thread exits
  // (its streams are drained and retired then).
  Stream* current_stream();
  // Drains every stream of the device and waits for the device to finish their work.
  void synchronize();

  fusion::PlanStore& plan_store() { return plan_store_; }
  jit::KernelLauncher& launcher() { return *launcher_; }
  // The kernel cache (null on devices without one).
  jit::KernelCache* kernel_cache() { return kernel_cache_.get(); }
  // Where the plan store's plans persist.
  fusion::PlanFiles& plan_files() { return *plan_files_; }
  // Prepares ops ahead of their first run: those of the cache directory at start-up, and a
  // loaded bundle's.
  Preparer& preparer() { return *preparer_; }
  backends::PreparedOpFiles& prepared_op_files() { return *prepared_op_files_; }
  // The ops this process used that the backend prepares (for bundles), first used first.
  std::vector<backends::PreparedOp> used_prepared_ops() const;
  FusionStats fusion_stats() const;
  bool fusion_enabled() const { return fusion_.load(std::memory_order_relaxed); }
  std::size_t queue_bound() const { return queue_bound_.load(std::memory_order_relaxed); }
  // Takes up the settings that concern a running device.
  void apply(const Config& config);

  // A retired stream's thread has exited after draining it; the stream may serve a new thread.
  void retire(Stream* stream);

  // How long a process's exit waits for the kernels it is compiling (then they are handed on to
  // the next process and their compilers killed).
  static constexpr std::chrono::milliseconds kExitCompileBudget{2000};
  // The process's exit handler (registered with the first runtime, so that it runs before the
  // handlers of the runtimes' parts): compiles finish or are handed on within
  // kExitCompileBudget, plans are written, scratch folders removed.
  static void finish_at_exit();

 private:
  Stream* acquire_stream();

  Device device_;
  std::unique_ptr<backends::Backend> backend_;
  HandleContainer handles_;
  std::atomic<core::TensorId> next_id_{1};
  std::atomic<std::size_t> queue_bound_{256};
  std::atomic<bool> fusion_{true};
  fusion::PlanStore plan_store_;
  std::shared_ptr<cache::CacheDir> cache_dir_;
  std::shared_ptr<fusion::PlanFiles> plan_files_;
  std::unique_ptr<jit::KernelFiles> kernel_files_;  // outlives the kernel cache that uses it
  std::unique_ptr<jit::KernelCache> kernel_cache_;
  std::unique_ptr<jit::KernelLauncher> launcher_;
  jit::CpuLauncher* cpu_launcher_ = nullptr;  // launcher_ on the CPU, else null
  // Kernel launches that ran a compiled kernel, on devices whose launcher is not the CPU's.
  std::function<std::uint64_t()> device_launches_;
  std::unique_ptr<backends::PreparedOpFiles> prepared_op_files_;
  std::unique_ptr<Preparer> preparer_;  // after the backend and files it uses: stops first
  mutable std::mutex used_prepared_mutex_;
  std::vector<backends::PreparedOp> used_prepared_;
  std::mutex streams_mutex_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Stream*> free_streams_;
};

}  // namespace streamfuse::stream

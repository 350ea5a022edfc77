// The per-device runtime: the parts its device factory made (backend, kernel files and cache,
// launcher), the handle container, the plan store and its files, the preparer, and the streams
// of every thread using the device. The registry of runtimes is the one process-wide singleton.
// The API reaches it only through runtime/runtime.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.h"
#include "backends/block_files.h"
#include "backends/prepared_op_files.h"
#include "cache/cache_dir.h"
#include "core/ir.h"
#include "fusion/plan_files.h"
#include "fusion/plan_store.h"
#include "jit/device_factory.h"
#include "jit/kernel_cache.h"
#include "jit/launcher.h"
#include "runtime/preparer.h"
#include "stream/device_streams.h"
#include "stream/handles.h"
#include "streamfuse/config.h"
#include "streamfuse/device.h"
#include "streamfuse/profiler.h"

namespace streamfuse::runtime {

class DeviceRuntime {
 public:
  // The runtime of `device`, created on first use. Throws DeviceError for a device this build
  // or this machine does not have. Runtimes live until the process ends (tensors in static
  // storage may outlive main).
  static DeviceRuntime& get(Device device);
  // Every runtime created so far.
  static std::vector<DeviceRuntime*> all();

  // The parts come from the factory of the device's type (jit/device_factory.h).
  DeviceRuntime(Device device, const jit::DeviceFactory& factory, const Config& config);
  ~DeviceRuntime();

  Device device() const { return device_; }
  backends::Backend& backend() { return *parts_.backend; }
  stream::HandleContainer& handles() { return handles_; }

  // The device's operation streams, one per thread.
  stream::DeviceStreams& streams() { return *streams_; }
  // Drains every stream of the device and waits for the device to finish their work.
  void synchronize() { streams_->synchronize(); }

  fusion::PlanStore& plan_store() { return plan_store_; }
  jit::KernelLauncher& launcher() { return *parts_.launcher; }
  // The kernel cache (null on devices without one).
  jit::KernelCache* kernel_cache() { return parts_.kernel_cache.get(); }
  // Where the plan store's plans persist.
  fusion::PlanFiles& plan_files() { return *plan_files_; }
  // Prepares ops ahead of their first run: those of the cache directory at start-up, and a
  // loaded bundle's.
  Preparer& preparer() { return *preparer_; }
  backends::PreparedOpFiles& prepared_op_files() { return *prepared_op_files_; }
  // Where the allocator's working set persists; null where the backend has no host allocator.
  backends::BlockFiles* block_files() { return block_files_.get(); }
  // The ops this process used that the backend prepares (for bundles), first used first.
  std::vector<backends::PreparedOp> used_prepared_ops() const;
  // The blocks this process's allocator held at once so far (for bundles); none where the
  // backend has no host allocator.
  std::vector<backends::HeldBlocks> held_blocks() const;
  // Has the preparer make the blocks a loaded bundle's program held, unless the cache directory
  // had a record of this program's own (made at start-up instead: a program's own working set
  // is the better guess).
  void make_bundles_blocks(const std::vector<backends::HeldBlocks>& held);
  FusionStats fusion_stats() const;
  // Takes up the settings that concern a running device.
  void apply(const Config& config);

  // How long a process's exit waits for the kernels it is compiling (then they are handed on to
  // the next process and their compilers killed).
  static constexpr std::chrono::milliseconds kExitCompileBudget{2000};
  // The process's exit handler (registered with the first runtime, so that it runs before the
  // handlers of the runtimes' parts): compiles finish or are handed on within
  // kExitCompileBudget, plans are written, scratch folders removed.
  static void finish_at_exit();

 private:
  // Has the preparer make the blocks the last run of this program held (block_files.h), one
  // per job (make_next_block).
  void make_last_runs_blocks();
  // Lists `held` in blocks_ahead_ (within the budget); returns whether there is a block to make.
  bool list_blocks_ahead(const std::vector<backends::HeldBlocks>& held);
  void make_next_block();

  Device device_;
  std::shared_ptr<cache::CacheDir> cache_dir_;
  // The allocator's working set for the next run of this program: before the backend, whose
  // allocator reports to it.
  std::unique_ptr<backends::BlockFiles> block_files_;
  std::once_flag blocks_made_;  // the last run's working set is made once (apply)
  // The blocks still to make, each (size class, how many held then), and the next one: set
  // before the first job, then used by the preparer's jobs only (a bundle's are listed by a
  // job).
  std::vector<std::pair<std::uint64_t, std::uint32_t>> blocks_ahead_;
  std::size_t next_block_ = 0;
  jit::DeviceParts parts_;  // backend, kernel files and cache, launcher
  stream::HandleContainer handles_;
  fusion::PlanStore plan_store_;
  std::shared_ptr<fusion::PlanFiles> plan_files_;
  std::unique_ptr<backends::PreparedOpFiles> prepared_op_files_;
  std::unique_ptr<Preparer> preparer_;  // after the backend and files it uses: stops first
  mutable std::mutex used_prepared_mutex_;
  std::vector<backends::PreparedOp> used_prepared_;
  std::unique_ptr<stream::DeviceStreams> streams_;  // last: made once every part it uses is
};

}  // namespace streamfuse::runtime

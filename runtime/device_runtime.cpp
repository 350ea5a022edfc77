#include "runtime/device_runtime.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>

#include "backends/caching_allocator.h"
#include "cache/cache_dir.h"
#include "core/log.h"
#include "jit/device_factory.h"
#include "streamfuse/error.h"

namespace streamfuse::runtime {
namespace {

using stream::device_slot;
using stream::kDeviceSlots;
using stream::kMaxCudaDevices;

// The registry: created on first use and never destroyed, so tensors with static storage
// duration can still drop their values after main returns.
struct Registry {
  std::mutex mutex;  // taken only to create a runtime; lookups read the atomics
  std::array<std::atomic<DeviceRuntime*>, kDeviceSlots> runtimes{};
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// The process that made the runtimes (see finish_at_exit).
pid_t creator_pid() {
  static const pid_t pid = getpid();
  return pid;
}

}  // namespace

DeviceRuntime& DeviceRuntime::get(Device device) {
  Registry& r = registry();
  const int slot = device_slot(device);
  if (slot < 0 || slot >= kDeviceSlots)
    throw DeviceError(device.to_string() + ": no such device (CUDA ordinals run from 0 to " +
                      std::to_string(kMaxCudaDevices - 1) + ")");
  std::atomic<DeviceRuntime*>& entry = r.runtimes[static_cast<std::size_t>(slot)];
  if (DeviceRuntime* rt = entry.load(std::memory_order_acquire)) return *rt;  // every op: no lock
  std::lock_guard lock(r.mutex);
  if (DeviceRuntime* rt = entry.load(std::memory_order_relaxed)) return *rt;
  creator_pid();
  const Config settings = config();  // may throw for a bad environment: nothing made yet
  const jit::DeviceFactory* factory = jit::device_factory(device.type);
  if (!factory)
    throw DeviceError(device.to_string() + ": this build of streamfuse has no " +
                      (device.is_cpu() ? "CPU" : "CUDA") + " backend; use Device::cpu()");
  auto created = std::make_unique<DeviceRuntime>(device, *factory, settings);
  created->apply(settings);
  // After the runtime's parts registered theirs: this handler runs before them.
  static std::once_flag exit_handler;
  std::call_once(exit_handler, [] { std::atexit(&DeviceRuntime::finish_at_exit); });
  entry.store(created.get(), std::memory_order_release);
  return *created.release();
}

void DeviceRuntime::finish_at_exit() {
  // A child made by fork() shares the parent's runtimes but not their threads or scratch
  // folders: it leaves them alone.
  if (getpid() != creator_pid()) return;
  const auto deadline = std::chrono::steady_clock::now() + kExitCompileBudget;
  std::vector<DeviceRuntime*> runtimes = all();
  for (DeviceRuntime* rt : runtimes)
    if (rt->parts_.kernel_cache) rt->parts_.kernel_cache->finish_at_exit(deadline);
  for (DeviceRuntime* rt : runtimes) {
    // What was learned last (plans, prepared ops, the allocator's working set), written before
    // the scratch folder its temporaries go through is removed.
    rt->plan_files_->flush();
    rt->prepared_op_files_->flush();
    if (rt->block_files_) rt->block_files_->flush();
    rt->cache_dir_->release_scratch();
  }
}

std::vector<DeviceRuntime*> DeviceRuntime::all() {
  Registry& r = registry();
  std::vector<DeviceRuntime*> out;
  for (const auto& entry : r.runtimes)
    if (DeviceRuntime* rt = entry.load(std::memory_order_acquire)) out.push_back(rt);
  return out;
}

// Plans kept per device, and how many segments may be explored before streams stop exploring
// (a program that never repeats would otherwise explore forever).
constexpr std::size_t kMaxPlans = 4096;
constexpr std::size_t kMaxExplorations = 1'000'000;
// Prepared ops a runtime remembers having used, for bundles (the most recent ones).
constexpr std::size_t kMaxUsedPrepared = 1024;

DeviceRuntime::DeviceRuntime(Device device, const jit::DeviceFactory& factory, const Config& config)
    : device_(device),
      cache_dir_(std::make_shared<cache::CacheDir>(cache::cache_directory(config),
                                                   config.cache_max_bytes)),
      parts_(factory.make(device, cache_dir_)),
      plan_store_(kMaxPlans, kMaxExplorations) {
  plan_files_ = std::make_shared<fusion::PlanFiles>(cache_dir_, device.to_string());
  plan_store_.set_persistence(plan_files_);

  // What earlier processes prepared is prepared again while this one starts; what this one
  // uses for the first time is remembered for the next (and for bundles).
  prepared_op_files_ = std::make_unique<backends::PreparedOpFiles>(cache_dir_, device.to_string());
  preparer_ = std::make_unique<Preparer>(*parts_.backend);
  parts_.backend->set_prepared_listener([this](const backends::PreparedOp& op) {
    {
      std::lock_guard lock(used_prepared_mutex_);
      // Again after the backend evicted and remade it: moved to the back. Bounded, as a
      // process may use ever new shapes.
      std::erase(used_prepared_, op);
      if (used_prepared_.size() >= kMaxUsedPrepared) used_prepared_.erase(used_prepared_.begin());
      used_prepared_.push_back(op);
    }
    prepared_op_files_->add(op);
  });
  // One small file, read here: its first op is prepared on this thread (Preparer::submit_ops).
  preparer_->submit_ops(prepared_op_files_->load());
  if (backends::CachingAllocator* allocator = parts_.backend->host_allocator()) {
    block_files_ = std::make_unique<backends::BlockFiles>(cache_dir_, device.to_string(),
                                                          backends::program_key());
    allocator->set_peak_listener(
        [files = block_files_.get()](std::size_t capacity, std::uint32_t blocks) {
          files->note(capacity, blocks);
        });
  }
  plan_store_.set_background(
      [p = preparer_.get()](std::function<void()> job) { p->submit_job(std::move(job)); },
      [kernels = parts_.kernel_cache.get()](const fusion::ExecutionPlan& plan) {
        if (plan.optimization && kernels) plan.optimization->read_ahead(*kernels);
      });
  // Plans are read ahead from the entries once fusion is on (apply): with fusion off no stream
  // asks the store for a plan, and reading them would only take a core.
  streams_ = std::make_unique<stream::DeviceStreams>(stream::StreamDevice{
      device, parts_.backend.get(), &handles_, &plan_store_, parts_.launcher.get()});
}

std::vector<backends::PreparedOp> DeviceRuntime::used_prepared_ops() const {
  std::lock_guard lock(used_prepared_mutex_);
  return used_prepared_;
}

FusionStats DeviceRuntime::fusion_stats() const {
  FusionStats s;
  s.plans = static_cast<std::int64_t>(plan_store_.size());
  // Plans made, not explorations started: a segment still open (the drops queued after a
  // program's last read) has started one that may never finish.
  s.plans_explored = static_cast<std::int64_t>(plan_store_.explored());
  s.plans_loaded = static_cast<std::int64_t>(plan_store_.loaded());
  if (parts_.kernel_cache) {
    const jit::KernelCacheStats k = parts_.kernel_cache->stats();
    s.kernels_compiled = static_cast<std::int64_t>(k.compiled);
    s.kernels_loaded = static_cast<std::int64_t>(k.loaded);
    s.kernels_failed = static_cast<std::int64_t>(k.failed);
    s.compile_batches = static_cast<std::int64_t>(k.batches);
    s.compile_ms = k.compile_ms;
  }
  s.ops_prepared = static_cast<std::int64_t>(preparer_->prepared());
  s.fused_products = parts_.backend->fused_products();
  s.chained_products = parts_.backend->chained_products();
  const jit::KernelLauncher::Counts launches = parts_.launcher->counts();
  s.compiled_launches = static_cast<std::int64_t>(launches.compiled);
  s.interpreted_launches = static_cast<std::int64_t>(launches.interpreted);
  return s;
}

DeviceRuntime::~DeviceRuntime() = default;

void DeviceRuntime::make_last_runs_blocks() {
  if (!block_files_) return;  // made where the backend has a host allocator
  if (list_blocks_ahead(block_files_->load())) preparer_->submit_job([this] { make_next_block(); });
}

bool DeviceRuntime::list_blocks_ahead(const std::vector<backends::HeldBlocks>& held) {
  // In the order the program first needed each class (its weights, then its first
  // activations), at most a quarter of physical memory in all (the allocator's cache limit
  // bounds it too).
  static const std::uint64_t budget = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                                      static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) / 4;
  std::uint64_t total = 0;
  for (const backends::HeldBlocks& h : held)
    for (std::uint32_t k = 1; k <= h.blocks && (total += h.capacity) <= budget; ++k)
      blocks_ahead_.emplace_back(h.capacity, k);
  return !blocks_ahead_.empty();
}

std::vector<backends::HeldBlocks> DeviceRuntime::held_blocks() const {
  return block_files_ ? block_files_->highs() : std::vector<backends::HeldBlocks>{};
}

void DeviceRuntime::make_bundles_blocks(const std::vector<backends::HeldBlocks>& held) {
  if (!block_files_ || held.empty()) return;
  // On the preparer's thread, which alone uses blocks_ahead_ once the runtime is made: a
  // program's own record was listed then.
  preparer_->submit_job([this, held] {
    if (blocks_ahead_.empty() && list_blocks_ahead(held)) make_next_block();
  });
}

void DeviceRuntime::make_next_block() {
  const auto [capacity, held] = blocks_ahead_[next_block_];
  parts_.backend->host_allocator()->reserve(static_cast<std::size_t>(capacity), held);
  // One block per job, the next submitted behind what was submitted meanwhile: plans read ahead
  // (one op per job too) alternate with blocks instead of waiting for all of them, and an exit
  // waits for one block at most.
  if (++next_block_ < blocks_ahead_.size()) preparer_->submit_job([this] { make_next_block(); });
}

void DeviceRuntime::apply(const Config& config) {
  streams_->set_queue_bound(config.queue_bound);
  parts_.backend->configure({config.num_threads, config.allocator_cache_bytes});
  streams_->set_fusion(config.fusion);
  if (config.fusion) plan_store_.read_ahead_entries();  // after the prepared ops; once
  std::call_once(blocks_made_, [&] { make_last_runs_blocks(); });
  parts_.launcher->configure(config.num_threads, config.jit == JitMode::kCompile);
}

}  // namespace streamfuse::runtime

#include "stream/runtime.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/isa.h"
#include "cache/cache_dir.h"
#include "jit/system_compiler.h"
#if STREAMFUSE_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "jit/cuda_launcher.h"
#include "jit/cuda_op_kernels.h"
#include "jit/cuda_toolchain.h"
#endif
#include "core/log.h"
#include "stream/thread_local.h"
#include "streamfuse/error.h"

namespace streamfuse::stream {
namespace {

constexpr int kMaxCudaDevices = 16;
constexpr int kSlots = 1 + kMaxCudaDevices;  // slot 0: cpu; 1 + i: cuda:i

int slot_of(Device d) { return d.is_cpu() ? 0 : 1 + d.index; }

// The registry: created on first use and never destroyed, so tensors with static storage
// duration can still drop their values after main returns.
struct Registry {
  std::mutex mutex;  // taken only to create a runtime; lookups read the atomics
  std::array<std::atomic<DeviceRuntime*>, kSlots> runtimes{};
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

// This thread's streams. The destructor runs at thread exit: it drains them (their tensors may
// be read by other threads) and hands them back for reuse. `t_exited` is trivially destructible,
// so it stays readable after that.
SF_THREAD_LOCAL bool t_exited = false;
struct ThreadStreams {
  std::array<Stream*, kSlots> streams{};
  std::array<DeviceRuntime*, kSlots> owners{};
  ~ThreadStreams() {
    t_exited = true;
    for (int i = 0; i < kSlots; ++i) {
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

std::unique_ptr<backends::Backend> make_backend(Device device) {
  if (device.is_cpu()) return backends::cpu::make_cpu_backend();
  if (device.index < 0 || device.index >= kMaxCudaDevices)
    throw DeviceError(device.to_string() + ": no such device (CUDA ordinals run from 0 to " +
                      std::to_string(kMaxCudaDevices - 1) + ")");
#if STREAMFUSE_HAVE_CUDA
  return std::make_unique<backends::cuda::CudaBackend>(device.index);  // DeviceError: no GPU
#else
  throw DeviceError(device.to_string() +
                    ": this build of streamfuse has no CUDA backend; use Device::cpu()");
#endif
}

}  // namespace

DeviceRuntime& DeviceRuntime::get(Device device) {
  Registry& r = registry();
  const int slot = slot_of(device);
  if (slot < 0 || slot >= kSlots)
    throw DeviceError(device.to_string() + ": no such device (CUDA ordinals run from 0 to " +
                      std::to_string(kMaxCudaDevices - 1) + ")");
  std::atomic<DeviceRuntime*>& entry = r.runtimes[static_cast<std::size_t>(slot)];
  if (DeviceRuntime* rt = entry.load(std::memory_order_acquire)) return *rt;  // every op: no lock
  std::lock_guard lock(r.mutex);
  if (DeviceRuntime* rt = entry.load(std::memory_order_relaxed)) return *rt;
  creator_pid();
  const Config settings = config();  // may throw for a bad environment: nothing made yet
  auto created = std::make_unique<DeviceRuntime>(device, make_backend(device), settings);
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
    if (rt->kernel_cache_) rt->kernel_cache_->finish_at_exit(deadline);
  for (DeviceRuntime* rt : runtimes) {
    rt->plan_files_->flush();  // the plans learned last, written before the scratch folder goes
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

DeviceRuntime::DeviceRuntime(Device device, std::unique_ptr<backends::Backend> backend,
                             const Config& config)
    : device_(device), backend_(std::move(backend)), plan_store_(kMaxPlans, kMaxExplorations) {
  cache_dir_ =
      std::make_shared<cache::CacheDir>(cache::cache_directory(config), config.cache_max_bytes);
  plan_files_ = std::make_shared<fusion::PlanFiles>(cache_dir_, device.to_string());
  plan_store_.set_persistence(plan_files_);
  jit::KernelCacheOptions options;
  options.mode = JitMode::kCompile;  // the launcher decides per launch (config may change)
  if (device.is_cpu()) {
    options.fingerprint = jit::kernel_fingerprint(backends::cpu::isa_level());
    kernel_files_ = std::make_unique<jit::KernelFiles>(cache_dir_, options.fingerprint);
    options.store = kernel_files_.get();
    // Kernels are built in the cache directory's scratch folder of this process, their files
    // removed once loaded; what persists goes through the KernelFiles.
    options.scratch = [dir = cache_dir_] { return dir->scratch(); };
    kernel_cache_ = std::make_unique<jit::KernelCache>(std::string(), options);
    auto cpu = std::make_unique<jit::CpuLauncher>(backends::cpu::kernels(), kernel_cache_.get());
    cpu_launcher_ = cpu.get();
    launcher_ = std::move(cpu);
  } else {
#if STREAMFUSE_HAVE_CUDA
    // NVRTC builds, the driver loads: kernels persist under the toolchain's fingerprint (NVRTC's
    // version, the architecture, the options), so a process loads only what it could build.
    auto& gpu = dynamic_cast<backends::cuda::CudaBackend&>(*backend_);
    auto toolchain = std::make_unique<jit::CudaToolchain>(gpu.context());
    kernel_files_ = std::make_unique<jit::KernelFiles>(cache_dir_, toolchain->fingerprint());
    options.store = kernel_files_.get();
    kernel_cache_ = std::make_unique<jit::KernelCache>(std::move(toolchain), options);
    std::function<CUstream()> stream_of = [&gpu] { return gpu.streams().current(); };
    auto cuda = std::make_unique<jit::CudaLauncher>(gpu.context(), *kernel_cache_, stream_of);
    device_launches_ = [l = cuda.get()] { return l->launches(); };
    gpu.set_kernels(
        std::make_unique<jit::CudaOpKernels>(gpu.context(), *cuda, stream_of, kernel_files_.get()));
    launcher_ = std::move(cuda);
#endif
  }

  // What earlier processes prepared is prepared again while this one starts; what this one
  // uses for the first time is remembered for the next (and for bundles).
  prepared_op_files_ = std::make_unique<backends::PreparedOpFiles>(cache_dir_, device.to_string());
  preparer_ = std::make_unique<Preparer>(*backend_);
  backend_->set_prepared_listener([this](const backends::PreparedOp& op) {
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
  plan_store_.set_background(
      [p = preparer_.get()](std::function<void()> job) { p->submit_job(std::move(job)); },
      [kernels = kernel_cache_.get()](const fusion::ExecutionPlan& plan) {
        if (plan.optimization) plan.optimization->read_ahead(*kernels);
      });
}

std::vector<backends::PreparedOp> DeviceRuntime::used_prepared_ops() const {
  std::lock_guard lock(used_prepared_mutex_);
  return used_prepared_;
}

FusionStats DeviceRuntime::fusion_stats() const {
  FusionStats s;
  s.plans = static_cast<std::int64_t>(plan_store_.size());
  s.plans_explored = static_cast<std::int64_t>(plan_store_.explorations());
  s.plans_loaded = static_cast<std::int64_t>(plan_store_.loaded());
  if (kernel_cache_) {
    const jit::KernelCacheStats k = kernel_cache_->stats();
    s.kernels_compiled = static_cast<std::int64_t>(k.compiled);
    s.kernels_loaded = static_cast<std::int64_t>(k.loaded);
    s.kernels_failed = static_cast<std::int64_t>(k.failed);
    s.compile_batches = static_cast<std::int64_t>(k.batches);
    s.compile_ms = k.compile_ms;
  }
  s.ops_prepared = static_cast<std::int64_t>(preparer_->prepared());
  if (cpu_launcher_) {
    s.compiled_launches = static_cast<std::int64_t>(cpu_launcher_->compiled_launches());
    s.interpreted_launches = static_cast<std::int64_t>(cpu_launcher_->interpreted_launches());
  } else if (device_launches_) {
    s.compiled_launches = static_cast<std::int64_t>(device_launches_());
  }
  return s;
}

DeviceRuntime::~DeviceRuntime() = default;

Stream* DeviceRuntime::current_stream() {
  if (t_exited) return nullptr;
  const auto slot = static_cast<std::size_t>(slot_of(device_));
  Stream*& s = t_streams.streams[slot];
  if (!s) {
    s = acquire_stream();
    t_streams.owners[slot] = this;
  }
  return s;
}

Stream* DeviceRuntime::acquire_stream() {
  std::lock_guard lock(streams_mutex_);
  if (!free_streams_.empty()) {
    Stream* s = free_streams_.back();
    free_streams_.pop_back();
    return s;
  }
  // Ids from 1 (0 is "no stream"); a retired stream keeps its id for its next thread.
  streams_.push_back(
      std::make_unique<Stream>(*this, static_cast<backends::StreamId>(streams_.size() + 1)));
  return streams_.back().get();
}

void DeviceRuntime::retire(Stream* stream) {
  std::lock_guard lock(streams_mutex_);
  free_streams_.push_back(stream);
}

void DeviceRuntime::synchronize() {
  std::vector<Stream*> streams;
  {
    std::lock_guard lock(streams_mutex_);
    for (auto& s : streams_) streams.push_back(s.get());
  }
  for (Stream* s : streams) s->drain();
  backend_->wait_idle();
}

void DeviceRuntime::apply(const Config& config) {
  queue_bound_.store(config.queue_bound == 0 ? 1 : config.queue_bound, std::memory_order_relaxed);
  backend_->configure({config.num_threads, config.allocator_cache_bytes});
  fusion_.store(config.fusion, std::memory_order_relaxed);
  if (cpu_launcher_) {
    cpu_launcher_->set_num_threads(config.num_threads);
    cpu_launcher_->set_compile(config.jit == JitMode::kCompile);
  }
}

}  // namespace streamfuse::stream

#include "tests/backends/cuda/emulator/emulated_launch.h"

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "tests/backends/cuda/emulator/fiber.h"
#include "tests/backends/cuda/emulator/sanitizers.h"

namespace streamfuse::backends::cuda::emulator {

namespace {

constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr std::size_t kParamAlignment = 64;  // as much as any parameter type asks

struct AlignedFree {
  void operator()(std::byte* p) const { ::operator delete (p, std::align_val_t{kParamAlignment}); }
};

[[noreturn]] void die(const char* what, const char* kernel) {
  std::fprintf(stderr, "streamfuse CUDA emulator: kernel %s %s\n", kernel, what);
  std::abort();
}

}  // namespace

struct Launch {
  KernelRef ref;
  unsigned grid[3], block[3];
  std::unique_ptr<std::byte, AlignedFree> storage;  // the parameters' values
  std::vector<void*> params;                        // into storage
};

namespace {

// A block's threads as fibers, kept by each OS thread that runs cooperative kernels and reused
// from block to block (creating a fiber costs a stack mapping, and a ThreadSanitizer context).
class CooperativeBlocks {
 public:
  ~CooperativeBlocks() {
    for (const std::unique_ptr<Slot>& s : slots_) {
      s->stop = true;
      if (!s->fiber.finished()) s->fiber.resume();  // leaves its loop through finish()
    }
  }

  void run(const Launch& l, const sf_emu_thread& block) {
    const unsigned n = block.block_dim.x * block.block_dim.y * block.block_dim.z;
    while (slots_.size() < n) slots_.push_back(std::make_unique<Slot>(this));
    for (unsigned t = 0; t < n; ++t) {
      Slot& s = *slots_[t];
      s.kernel = l.ref.kernel;
      s.params = l.params.data();
      s.state = block;
      s.state.thread_idx = {t % block.block_dim.x, t / block.block_dim.x % block.block_dim.y,
                            t / (block.block_dim.x * block.block_dim.y)};
      s.state.sync = &barrier;
      s.state.scheduler = &s;
      s.done.store(false, std::memory_order_relaxed);
    }
    // The module's thread-local storage (its __shared__ variables) is made here, before any
    // fiber: ThreadSanitizer orders the scheduler before each fiber, not fibers among themselves.
    l.ref.kernel->bind(&block);
    // Each pass resumes every thread still running, which runs to its next barrier or its end:
    // after a pass, all of them are at the barrier, and the next pass lets them through.
    for (unsigned live = n; live > 0;)
      for (unsigned t = 0; t < n; ++t) {
        Slot& s = *slots_[t];
        if (s.done.load(std::memory_order_relaxed)) continue;
        s.fiber.resume();
        if (s.done.load(std::memory_order_relaxed)) --live;
      }
    tsan_acquire(&block_end_);  // the threads' writes happen before the launch's end
  }

 private:
  struct Slot {
    explicit Slot(CooperativeBlocks* o) : owner(o), fiber(&body, this) {}
    CooperativeBlocks* owner;
    const sf_emu_kernel* kernel = nullptr;
    void* const* params = nullptr;
    sf_emu_thread state{};
    unsigned barriers = 0;  // passed by this thread in this block; the fiber's own
    bool stop = false;
    std::atomic<bool> done{false};  // read by the scheduler, which does not sync with the fiber
    Fiber fiber;
  };

  static void body(void* p) {
    auto* s = static_cast<Slot*>(p);
    for (;;) {
      if (s->stop) s->fiber.finish();
      s->barriers = 0;
      s->kernel->run(s->params, &s->state);
      tsan_release(&s->owner->block_end_);
      s->done.store(true, std::memory_order_relaxed);
      s->fiber.suspend();
    }
  }

  // __syncthreads. Each thread announces its writes on the barrier's sync object and takes the
  // others' when let through. Two objects, alternating: a thread can be one barrier ahead of
  // those still to be let through this one, never two.
  static void barrier(const sf_emu_thread* self) {
    auto* s = static_cast<Slot*>(self->scheduler);
    char* sync = &s->owner->barrier_[s->barriers % 2];
    tsan_release(sync);
    s->fiber.suspend();
    tsan_acquire(sync);
    ++s->barriers;
  }

  std::vector<std::unique_ptr<Slot>> slots_;
  char barrier_[2] = {};
  char block_end_ = 0;
};

// __syncthreads in a kernel the emulated NVRTC did not see call it (it looks for the name in the
// source): its threads run one after another, so no barrier can be honoured.
void barrier_outside_fiber(const sf_emu_thread* self) {
  if (self->block_dim.x * self->block_dim.y * self->block_dim.z > 1)
    die("called __syncthreads, which its module's source does not name: the emulated NVRTC "
        "runs such kernels without barriers",
        static_cast<const sf_emu_kernel*>(self->scheduler)->name);
}

void run_block_sequentially(const Launch& l, sf_emu_thread& t) {
  t.sync = &barrier_outside_fiber;
  t.scheduler = const_cast<sf_emu_kernel*>(l.ref.kernel);  // for barrier_outside_fiber's message
  for (unsigned z = 0; z < l.block[2]; ++z)
    for (unsigned y = 0; y < l.block[1]; ++y)
      for (unsigned x = 0; x < l.block[0]; ++x) {
        t.thread_idx = {x, y, z};
        l.ref.kernel->run(l.params.data(), &t);
      }
}

}  // namespace

CUresult prepare_launch(std::shared_ptr<Launch>& out, CUfunction f, const unsigned grid[3],
                        const unsigned block[3], unsigned shared_bytes, void** params,
                        void** extra) {
  auto l = std::make_shared<Launch>();
  l->ref = find_kernel(f);
  if (!l->ref.kernel) return CUDA_ERROR_INVALID_HANDLE;
  const sf_emu_kernel& k = *l->ref.kernel;
  for (int d = 0; d < 3; ++d) {
    l->grid[d] = grid[d];
    l->block[d] = block[d];
  }
  const unsigned long long threads =
      static_cast<unsigned long long>(block[0]) * block[1] * block[2];
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[1] > 65535 || grid[2] > 65535 ||
      grid[0] > 0x7fffffffu || threads == 0 || threads > kMaxThreadsPerBlock || block[2] > 64)
    return CUDA_ERROR_INVALID_VALUE;
  if (threads > static_cast<unsigned long long>(k.max_threads))
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (shared_bytes > 0 || extra) return CUDA_ERROR_NOT_SUPPORTED;
  if (k.param_count > 0 && !params) return CUDA_ERROR_INVALID_VALUE;

  std::size_t bytes = 0;
  std::vector<std::size_t> offsets;
  for (int p = 0; p < k.param_count; ++p) {
    offsets.push_back(bytes);
    bytes += (k.param_sizes[p] + kParamAlignment - 1) / kParamAlignment * kParamAlignment;
  }
  l->storage.reset(static_cast<std::byte*>(
      ::operator new (bytes ? bytes : 1, std::align_val_t{kParamAlignment})));
  for (int p = 0; p < k.param_count; ++p) {
    if (!params[p]) return CUDA_ERROR_INVALID_VALUE;
    std::byte* copy = l->storage.get() + offsets[static_cast<std::size_t>(p)];
    std::memcpy(copy, params[p], k.param_sizes[p]);
    l->params.push_back(copy);
  }
  out = std::move(l);
  return CUDA_SUCCESS;
}

void run_launch(const Launch& l) {
  thread_local CooperativeBlocks cooperative;
  sf_emu_thread t{};
  t.block_dim = {l.block[0], l.block[1], l.block[2]};
  t.grid_dim = {l.grid[0], l.grid[1], l.grid[2]};
  for (unsigned z = 0; z < l.grid[2]; ++z)
    for (unsigned y = 0; y < l.grid[1]; ++y)
      for (unsigned x = 0; x < l.grid[0]; ++x) {
        t.block_idx = {x, y, z};
        if (l.ref.kernel->cooperative)
          cooperative.run(l, t);
        else
          run_block_sequentially(l, t);
      }
}

}  // namespace streamfuse::backends::cuda::emulator

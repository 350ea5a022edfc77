// KernelCache: compiled kernels by (program, specialization), built in the background by a
// KernelToolchain (the CPU's system compiler, or NVRTC for a CUDA device).
//
// A lookup never waits for a compiler. The first lookup of a kernel asks the KernelStore (the
// cache directory) for it and loads it from there when a process built it before; otherwise it
// is queued and the caller runs the interpreter meanwhile. One background thread compiles
// everything requested since its last compile in one translation unit (a compiler start costs
// ~50-100 ms, so per-kernel cost falls with batch size) under the kernels' cross-process claims,
// has the toolchain build and load it, installs the kernels and hands them to the store.
// Invariants:
// - an entry is pending, ready or failed; a failed entry is never retried (until evicted), and
//   each failure is warned about once, naming the source file;
// - a kernel another process is compiling is waited for and loaded, not compiled twice;
// - at most `max_kernels` entries; the least recently used is evicted first;
// - a library stays loaded while an entry or a caller's ReadyKernel holds it;
// - at the process's exit (finish_at_exit, called by the device runtime's exit handler) what is
//   compiling finishes within a bound; what does not is handed on to the store for the next
//   process, its compiler is killed, and nothing is warned about it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "jit/kernel_abi.h"
#include "jit/kernel_store.h"
#include "jit/kernel_toolchain.h"
#include "jit/program.h"
#include "jit/specialization.h"
#include "streamfuse/config.h"

namespace streamfuse::jit {

struct ReadyKernel {
  void* entry = nullptr;          // the toolchain's handle: a CpuKernelFn, a CUfunction
  std::shared_ptr<void> library;  // keeps the kernel loaded while the caller holds it

  CpuKernelFn cpu() const { return reinterpret_cast<CpuKernelFn>(entry); }
  // A program with a reduction anchor.
  CpuReduceKernelFn cpu_reduce() const { return reinterpret_cast<CpuReduceKernelFn>(entry); }
};

struct KernelCacheOptions {
  JitMode mode = JitMode::kCompile;  // kInterpret: never compile, every lookup misses
  std::size_t max_kernels = 4096;    // entries kept; least recently used evicted
  std::size_t max_batch = 512;       // kernels in one translation unit
  // How long the compile thread gathers further requests after the first one of a batch
  // (wait_idle() cuts it short).
  std::chrono::milliseconds batch_window{5};
  std::chrono::milliseconds compile_timeout = std::chrono::minutes(5);
  // Where kernels persist between processes (not owned; outlives the cache), or null.
  KernelStore* store = nullptr;
  // CPU kernels: what libraries built here are tagged with; empty: kernel_fingerprint(isa_level()).
  std::string fingerprint;
  // CPU kernels built with no directory: where a build makes its files (a folder of this
  // process's, made on first use: the cache directory's scratch folder), which are removed once
  // the library is loaded. Unset: a scratch folder of this process's own under
  // cache::private_scratch_base().
  std::function<std::filesystem::path()> scratch;
  // Handed-on requests (KernelStore::take_handed_on) compile at most this many to a batch, so
  // that a process that lives less than a big batch's compile still finishes some.
  std::size_t max_handed_on_batch = 4;
};

struct KernelCacheStats {
  std::uint64_t compiled = 0;  // kernels compiled and installed
  std::uint64_t loaded = 0;    // kernels installed from the store or a bundle
  std::uint64_t failed = 0;    // kernels marked failed
  std::uint64_t batches = 0;   // translation units built (compiled, or found in the directory)
  std::uint64_t reused = 0;    // batches whose library the directory already held
  double compile_ms = 0;       // wall time of the batches
  std::uint64_t hits = 0;      // lookups that returned a kernel
  std::uint64_t misses = 0;    // lookups that did not
  std::uint64_t evicted = 0;
  std::size_t entries = 0;  // pending, ready and failed
};

class KernelCache {
 public:
  // CPU kernels, built in `directory` (CpuToolchain: created, and the files kept; empty: in
  // options.scratch, and the files removed after each build; one that cannot be written: as if
  // empty, with a warning). In kCompile mode a background thread starts and probes for a compiler
  // (SystemCompiler::probe); none found is warned about once.
  explicit KernelCache(std::string directory, KernelCacheOptions options = {});
  // Kernels built by `toolchain` (its prepare() runs on the cache's thread; a failure is warned
  // about once and every kernel is interpreted). options.fingerprint is ignored: the
  // toolchain's is used.
  KernelCache(std::unique_ptr<KernelToolchain> toolchain, KernelCacheOptions options);
  // Drops pending requests, waits for a compile in flight, joins the thread.
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The kernel of `program` (whose hash is `program_hash`) under `key` when compiled; otherwise
  // nullopt, after queueing it for compilation if it is new. Thread-safe; never blocks on a
  // compile.
  std::optional<ReadyKernel> find_or_request(std::uint64_t program_hash,
                                             const FusedProgram& program,
                                             const SpecializationKey& key);
  // find_or_request, then, while the kernel is being built, waits for it (without the batch
  // window): for targets with no interpreter to fall back on (CUDA), whose launches need the
  // kernel. nullopt when it failed to build, there are no tools, or in kInterpret mode.
  std::optional<ReadyKernel> wait_for(std::uint64_t program_hash, const FusedProgram& program,
                                      const SpecializationKey& key);
  // Loads every kernel of `program` the store holds for this machine, whatever its key, so that
  // their first lookups find them ready (reading ahead, off the calling thread, for a plan that
  // is about to be needed). Compiles nothing. Thread-safe.
  void read_ahead(std::uint64_t program_hash, const FusedProgram& program);
  // Returns when no request is queued or compiling (for tests and benchmarks).
  void wait_idle();
  // For the process's exit (the device runtime's exit handler calls it once): lets what is
  // queued or compiling finish and persist until `deadline`; past it, hands what is left on to
  // the store (KernelStore::hand_on), kills the compiles in flight (stop_child_processes) and
  // stops waiting for other processes' claims. Stops the compile thread: afterwards lookups
  // miss and nothing compiles. Returns by `deadline` plus the time to hand on, unless a build
  // that cannot be killed (NVRTC, in this process) runs on: it is then left to the exit.
  void finish_at_exit(std::chrono::steady_clock::time_point deadline);

  // Every ready kernel with its library (for bundles).
  std::vector<KernelRecord> ready_kernels() const;
  // Installs kernels built elsewhere (a bundle): those built under this cache's fingerprint are
  // loaded and ready at once, and handed to the store in the background; the others are
  // requested, so they compile in the background. Returns how many are ready (installed now or
  // before).
  std::size_t install(std::span<const KernelRecord> kernels);
  const std::string& fingerprint() const { return fingerprint_; }

  KernelCacheStats stats() const;
  // CPU kernels: the directory they are built in (the fallback one when the given one is
  // unusable); empty for other toolchains and in kInterpret mode.
  const std::string& directory() const { return directory_; }

 private:
  struct Key {
    std::uint64_t program_hash;
    SpecializationKey spec;
  };
  struct KeyRef {
    std::uint64_t program_hash;
    const SpecializationKey* spec;
  };
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(const Key& k) const { return hash(k.program_hash, k.spec); }
    std::size_t operator()(const KeyRef& k) const { return hash(k.program_hash, *k.spec); }
    static std::size_t hash(std::uint64_t program_hash, const SpecializationKey& spec);
  };
  struct KeyEq {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return a.program_hash == b.program_hash && spec_of(a) == spec_of(b);
    }
    static const SpecializationKey& spec_of(const Key& k) { return k.spec; }
    static const SpecializationKey& spec_of(const KeyRef& k) { return *k.spec; }
  };
  enum class State : std::uint8_t { kPending, kReady, kFailed };
  struct Entry {
    State state = State::kPending;
    void* entry = nullptr;
    std::shared_ptr<void> library;
    std::shared_ptr<const KernelRecord> record;  // when ready: how to persist or export it
    std::list<Key>::iterator lru;                // position in lru_, most recent first
  };
  struct Request {
    Key key;
    FusedProgram program;
    bool waited = false;     // another process held its claim and saved nothing: compile it here
    bool handed_on = false;  // an earlier process's (small batches)
  };
  struct Loaded {
    void* entry = nullptr;
    std::shared_ptr<void> library;
    std::shared_ptr<const KernelRecord> record;
  };

  void run();
  // Queues what earlier processes handed on (on the compile thread, at its start).
  void take_handed_on();
  // The requests of the next batch, taken from queue_. Requires mutex_.
  std::vector<Request> next_batch();
  // Loads a kernel from its record (a stored library is loaded once while anything holds it).
  std::optional<Loaded> load_record(KernelRecord record);
  // The store's copy of the request's kernel, installed ready; false when it has none.
  bool install_from_store(const Request& r);
  void install_ready(const Key& key, Loaded loaded);  // requires mutex_
  // Requires mutex_. Makes `key` ready with `loaded` (adding its entry where there is none; a
  // pending request is served too), unless it is ready already: then returns false.
  bool install_loaded(const Key& key, Loaded loaded);
  void compile_batch(std::vector<Request>& batch);
  void compile(std::vector<Request>& batch);
  void finish(const std::vector<Request>& batch, const std::vector<void*>& entries,
              const std::shared_ptr<void>& library,
              const std::vector<std::shared_ptr<const KernelRecord>>& records);
  void fail_all(const std::vector<Request>& batch);  // requires mutex_
  // A new pending entry for `key` (absent), most recently used; evicts to stay under the bound.
  void insert_pending(const Key& key);  // requires mutex_
  void evict_one();

  const KernelCacheOptions options_;
  std::unique_ptr<KernelToolchain> toolchain_;  // null in kInterpret mode
  std::string directory_;
  KernelStore* store_;
  std::string fingerprint_;

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;     // requests queued, stop, or a flush wanted
  std::condition_variable idle_cv_;     // nothing queued nor compiling
  std::condition_variable settled_cv_;  // an entry left kPending (ready, failed or evicted)
  boost::unordered_flat_map<Key, Entry, KeyHash, KeyEq> entries_;
  std::list<Key> lru_;
  std::vector<Request> queue_;
  std::vector<std::shared_ptr<const KernelRecord>> to_save_;  // installed kernels to persist
  boost::unordered_flat_map<std::string, std::weak_ptr<void>> libraries_;  // loaded, by name
  bool compiling_ = false;
  bool no_toolchain_ = false;  // prepare() failed: every request fails
  bool stop_ = false;
  bool started_ = false;            // run() probed the toolchain and took what was handed on
  bool exited_ = false;             // run() returned
  std::vector<Request> in_flight_;  // copies of the batch compiling: handed on if abandoned
  // The process is exiting and no longer waits for the compile: failures are not warned about,
  // claims are not waited for.
  std::atomic<bool> abandoned_{false};
  int flush_waiters_ = 0;
  KernelCacheStats stats_;
  std::thread thread_;
};

}  // namespace streamfuse::jit

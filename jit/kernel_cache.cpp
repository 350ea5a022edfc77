#include "jit/kernel_cache.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "backends/cpu/isa.h"
#include "core/busy_cores.h"
#include "core/hash_mix.h"
#include "core/log.h"
#include "jit/child_process.h"
#include "jit/cpu_toolchain.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace {

// The program's pseudo-code as comment lines, so a kernel file explains itself.
std::string commented(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += "//   " + line + "\n";
  return out;
}

std::string first_line_of(const std::string& text) { return text.substr(0, text.find('\n')); }

// A library's name where it persists: its build key (source, command, compiler version) and the
// fingerprint (which also tells compilers of one name and version apart), as 16 hex digits. Two
// machines sharing a cache directory never write the same library file.
std::string library_name(const std::string& build_key, const std::string& fingerprint) {
  const std::string_view end("\0", 1);
  return core::hex16(
      core::fnv1a(end, core::fnv1a(fingerprint, core::fnv1a(end, core::fnv1a(build_key)))));
}

}  // namespace

std::size_t KernelCache::KeyHash::hash(std::uint64_t program_hash, const SpecializationKey& spec) {
  return static_cast<std::size_t>(core::hash_mix(program_hash, spec.hash()));
}

KernelCache::KernelCache(std::string directory, KernelCacheOptions options)
    : options_(std::move(options)),
      store_(options_.store),
      fingerprint_(options_.fingerprint.empty() ? kernel_fingerprint(backends::cpu::isa_level())
                                                : options_.fingerprint) {
  if (options_.mode == JitMode::kInterpret) return;
  auto cpu = std::make_unique<CpuToolchain>(std::move(directory), fingerprint_,
                                            options_.compile_timeout, options_.scratch);
  directory_ = cpu->directory();
  toolchain_ = std::move(cpu);
  thread_ = std::thread(&KernelCache::run, this);
}

KernelCache::KernelCache(std::unique_ptr<KernelToolchain> toolchain, KernelCacheOptions options)
    : options_(std::move(options)), store_(options_.store), fingerprint_(toolchain->fingerprint()) {
  if (options_.mode == JitMode::kInterpret) return;
  toolchain_ = std::move(toolchain);
  thread_ = std::thread(&KernelCache::run, this);
}

KernelCache::~KernelCache() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<ReadyKernel> KernelCache::find_or_request(std::uint64_t program_hash,
                                                        const FusedProgram& program,
                                                        const SpecializationKey& key) {
  // An entry that exists: ready, or pending / failed (a miss).
  auto known = [&]() -> std::optional<std::optional<ReadyKernel>> {
    const auto it = entries_.find(KeyRef{program_hash, &key});
    if (it == entries_.end()) return std::nullopt;
    Entry& e = it->second;
    lru_.splice(lru_.begin(), lru_, e.lru);
    if (e.state != State::kReady) {
      ++stats_.misses;
      return std::optional<ReadyKernel>();
    }
    ++stats_.hits;
    return std::optional<ReadyKernel>(ReadyKernel{e.entry, e.library});
  };
  {
    std::lock_guard lock(mutex_);
    if (auto found = known()) return *found;
    if (options_.mode == JitMode::kInterpret || stop_) {
      ++stats_.misses;
      return std::nullopt;
    }
  }
  // The kernel's first need: a process may have built it before. Read outside the lock.
  std::optional<Loaded> stored;
  if (store_) {
    if (std::optional<KernelRecord> record = store_->load(program_hash, program, key))
      stored = load_record(std::move(*record));
  }
  std::lock_guard lock(mutex_);
  if (auto found = known()) return *found;  // another thread got here first
  if (!stored && (no_toolchain_ || stop_)) {
    ++stats_.misses;
    return std::nullopt;
  }
  insert_pending(Key{program_hash, key});
  if (stored) {
    ++stats_.hits;
    const ReadyKernel ready{stored->entry, stored->library};
    install_ready(lru_.front(), std::move(*stored));
    return ready;
  }
  ++stats_.misses;
  queue_.push_back(Request{lru_.front(), program});
  work_cv_.notify_one();
  return std::nullopt;
}

std::optional<KernelCache::Loaded> KernelCache::load_record(KernelRecord record) {
  if (!toolchain_) return std::nullopt;
  const LibraryImage& image = *record.library;
  std::shared_ptr<void> library;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = libraries_.find(image.name); it != libraries_.end())
      library = it->second.lock();
  }
  if (!library) {
    try {
      library = toolchain_->load(image);
    } catch (const CompileError& e) {
      core::warn_once("jit-load:" + image.name,
                      std::string(e.what()) + "; its kernels are compiled again");
      return std::nullopt;
    }
    std::lock_guard lock(mutex_);
    if (libraries_.size() >= 64)
      boost::unordered::erase_if(libraries_, [](const auto& kv) { return kv.second.expired(); });
    libraries_[image.name] = library;
  }
  void* const entry = toolchain_->find(library, record.symbol);
  if (!entry) {
    core::warn_once("jit-symbol:" + image.name + record.symbol,
                    "jit: kernel library " + image.name + " lacks " + record.symbol +
                        "; the kernel is compiled again");
    return std::nullopt;
  }
  return Loaded{entry, std::move(library), std::make_shared<const KernelRecord>(std::move(record))};
}

void KernelCache::install_ready(const Key& key, Loaded loaded) {
  const auto it = entries_.find(KeyRef{key.program_hash, &key.spec});
  if (it == entries_.end()) return;  // evicted meanwhile
  Entry& e = it->second;
  e.state = State::kReady;
  e.entry = loaded.entry;
  e.library = std::move(loaded.library);
  e.record = std::move(loaded.record);
  ++stats_.loaded;
  settled_cv_.notify_all();
}

bool KernelCache::install_from_store(const Request& r) {
  std::optional<KernelRecord> record = store_->load(r.key.program_hash, r.program, r.key.spec);
  if (!record) return false;
  std::optional<Loaded> loaded = load_record(std::move(*record));
  if (!loaded) return false;
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(KeyRef{r.key.program_hash, &r.key.spec});
  if (it != entries_.end() && it->second.state == State::kPending)
    install_ready(r.key, std::move(*loaded));
  return true;
}

void KernelCache::read_ahead(std::uint64_t program_hash, const FusedProgram& program) {
  {
    std::lock_guard lock(mutex_);
    if (!store_ || options_.mode == JitMode::kInterpret || stop_) return;
  }
  for (KernelRecord& record : store_->load_program(program_hash, program)) {
    const Key key{program_hash, record.key};
    {
      std::lock_guard lock(mutex_);
      if (entries_.contains(KeyRef{key.program_hash, &key.spec})) continue;  // known already
    }
    std::optional<Loaded> loaded = load_record(std::move(record));
    if (!loaded) continue;
    std::lock_guard lock(mutex_);
    install_loaded(key, std::move(*loaded));
  }
}

bool KernelCache::install_loaded(const Key& key, Loaded loaded) {
  const auto it = entries_.find(KeyRef{key.program_hash, &key.spec});
  if (it != entries_.end() && it->second.state == State::kReady) return false;
  if (it == entries_.end()) insert_pending(key);
  install_ready(key, std::move(loaded));
  return true;
}

std::vector<KernelRecord> KernelCache::ready_kernels() const {
  std::lock_guard lock(mutex_);
  std::vector<KernelRecord> out;
  for (const auto& [key, e] : entries_)
    if (e.state == State::kReady && e.record) out.push_back(*e.record);
  return out;
}

std::size_t KernelCache::install(std::span<const KernelRecord> kernels) {
  std::size_t installed = 0;
  for (const KernelRecord& k : kernels) {
    std::optional<Loaded> loaded;
    if (k.library && k.library->fingerprint == fingerprint_ && options_.mode != JitMode::kInterpret)
      loaded = load_record(k);
    if (!loaded) {  // built elsewhere (or unloadable): compile it here, in the background
      find_or_request(k.program_hash, k.program, k.key);
      continue;
    }
    std::lock_guard lock(mutex_);
    std::shared_ptr<const KernelRecord> record = loaded->record;
    // Ready already (this process built or loaded it) counts as ready too.
    if (install_loaded(Key{k.program_hash, k.key}, std::move(*loaded)) && store_)
      to_save_.push_back(std::move(record));
    ++installed;
  }
  work_cv_.notify_one();
  return installed;
}

void KernelCache::insert_pending(const Key& key) {
  while (!entries_.empty() && entries_.size() >= std::max<std::size_t>(options_.max_kernels, 1))
    evict_one();
  lru_.push_front(key);
  Entry e;
  e.lru = lru_.begin();
  entries_.emplace(key, std::move(e));
}

void KernelCache::evict_one() {
  const auto it = entries_.find(KeyRef{lru_.back().program_hash, &lru_.back().spec});
  entries_.erase(it);  // a library no entry and no caller holds is dlclosed here
  lru_.pop_back();
  ++stats_.evicted;
  settled_cv_.notify_all();
}

std::optional<ReadyKernel> KernelCache::wait_for(std::uint64_t program_hash,
                                                 const FusedProgram& program,
                                                 const SpecializationKey& key) {
  if (std::optional<ReadyKernel> ready = find_or_request(program_hash, program, key)) return ready;
  std::unique_lock lock(mutex_);
  ++flush_waiters_;  // the compile thread starts the batch now
  work_cv_.notify_all();
  std::optional<ReadyKernel> out;
  settled_cv_.wait(lock, [&] {
    const auto it = entries_.find(KeyRef{program_hash, &key});
    if (it == entries_.end() || stop_ || no_toolchain_) return true;
    if (it->second.state == State::kReady) out = ReadyKernel{it->second.entry, it->second.library};
    return it->second.state != State::kPending;
  });
  --flush_waiters_;
  return out;
}

void KernelCache::wait_idle() {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return;
  ++flush_waiters_;
  work_cv_.notify_all();
  idle_cv_.wait(lock, [&] { return (queue_.empty() && to_save_.empty() && !compiling_) || stop_; });
  --flush_waiters_;
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard lock(mutex_);
  KernelCacheStats s = stats_;
  s.entries = entries_.size();
  return s;
}

void KernelCache::run() {
  std::string why;
  const bool prepared = toolchain_->prepare(why);
  if (prepared && store_) take_handed_on();
  std::unique_lock lock(mutex_);
  if (prepared) {
    if (core::log_enabled(core::LogChannel::kJit))
      core::log_line(core::LogChannel::kJit, toolchain_->describe());
  } else {
    no_toolchain_ = true;
    core::warn_once("jit-no-toolchain:" + why, why);
  }
  started_ = true;
  idle_cv_.notify_all();
  auto idle = [&] { return queue_.empty() && to_save_.empty(); };
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !idle(); });
    if (stop_) break;
    if (!to_save_.empty()) {  // kernels a bundle installed: persist them
      std::vector<std::shared_ptr<const KernelRecord>> records;
      records.swap(to_save_);
      compiling_ = true;
      lock.unlock();
      store_->save(records);
      lock.lock();
      compiling_ = false;
      if (idle()) idle_cv_.notify_all();
      continue;
    }
    if (no_toolchain_) {  // requests made before prepare() finished
      fail_all(queue_);
      queue_.clear();
      idle_cv_.notify_all();
      continue;
    }
    if (flush_waiters_ == 0)  // gather the requests that come right after the first
      work_cv_.wait_for(lock, options_.batch_window, [&] {
        return stop_ || flush_waiters_ > 0 || queue_.size() >= options_.max_batch;
      });
    if (stop_) break;
    std::vector<Request> batch = next_batch();
    in_flight_ = batch;  // what finish_at_exit hands on should this batch not finish
    compiling_ = true;
    lock.unlock();
    if (!batch.empty()) compile_batch(batch);
    lock.lock();
    in_flight_.clear();
    compiling_ = false;
    if (idle()) idle_cv_.notify_all();
  }
  queue_.clear();
  exited_ = true;
  idle_cv_.notify_all();
  settled_cv_.notify_all();
}

std::vector<KernelCache::Request> KernelCache::next_batch() {
  // Up to max_batch requests whose entries are still pending (not evicted meanwhile); handed-on
  // requests, which come first, in batches small enough to finish before a short process exits.
  std::size_t cap = std::max<std::size_t>(options_.max_batch, 1);
  if (!queue_.empty() && queue_.front().handed_on)
    cap = std::min(cap, std::max<std::size_t>(options_.max_handed_on_batch, 1));
  std::vector<Request> batch;
  std::size_t taken = 0;
  for (; taken < queue_.size() && batch.size() < cap; ++taken) {
    const auto it = entries_.find(KeyRef{queue_[taken].key.program_hash, &queue_[taken].key.spec});
    if (it != entries_.end() && it->second.state == State::kPending)
      batch.push_back(std::move(queue_[taken]));
  }
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(taken));
  return batch;
}

void KernelCache::take_handed_on() {
  std::vector<KernelRequest> handed = store_->take_handed_on();
  if (handed.empty()) return;
  std::unique_lock lock(mutex_);
  if (stop_) {  // the process is exiting before this thread got going: pass them on again
    lock.unlock();
    store_->hand_on(handed);
    return;
  }
  std::size_t queued = 0;
  for (KernelRequest& r : handed) {
    if (stop_ || entries_.contains(KeyRef{r.program_hash, &r.key})) continue;
    insert_pending(Key{r.program_hash, std::move(r.key)});
    queue_.push_back(Request{lru_.front(), std::move(r.program), false, true});
    ++queued;
  }
  if (queued > 0 && core::log_enabled(core::LogChannel::kJit))
    core::log_line(core::LogChannel::kJit,
                   "compiling " + std::to_string(queued) +
                       " kernels an earlier process asked for and could not finish");
}

void KernelCache::finish_at_exit(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return;
  const auto start = std::chrono::steady_clock::now();
  ++flush_waiters_;  // no batch window: start what is queued now
  work_cv_.notify_all();
  const bool finished = idle_cv_.wait_until(lock, deadline, [&] {
    return (started_ && queue_.empty() && to_save_.empty() && !compiling_) || exited_;
  });
  --flush_waiters_;
  if (finished && core::log_enabled(core::LogChannel::kJit) &&
      std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1))
    core::log_line(core::LogChannel::kJit,
                   "exiting: waited " +
                       std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::steady_clock::now() - start)
                                          .count()) +
                       " ms for the compiles in flight");
  std::vector<KernelRequest> unfinished;
  if (!finished) {
    abandoned_ = true;
    for (std::vector<Request>* requests : {&in_flight_, &queue_})
      for (const Request& r : *requests)
        unfinished.push_back(KernelRequest{r.key.program_hash, r.program, r.key.spec});
    queue_.clear();
  }
  stop_ = true;
  work_cv_.notify_all();
  settled_cv_.notify_all();
  lock.unlock();
  if (!finished) {
    stop_child_processes();  // the compiler dies now, not after its compile
    if (store_) store_->hand_on(unfinished);
    if (core::log_enabled(core::LogChannel::kJit))
      core::log_line(core::LogChannel::kJit, "exiting: handed on " +
                                                 std::to_string(unfinished.size()) +
                                                 " kernels still compiling to the next process");
  }
  // The thread ends at once now, unless it is inside a build that cannot be killed (NVRTC):
  // then it is left to the process's exit rather than holding the exit up.
  lock.lock();
  const bool ended =
      idle_cv_.wait_until(lock, std::chrono::steady_clock::now() + std::chrono::milliseconds(500),
                          [&] { return exited_; });
  lock.unlock();
  if (ended)
    thread_.join();
  else
    thread_.detach();
}

void KernelCache::fail_all(const std::vector<Request>& batch) {
  for (const Request& r : batch) {
    const auto it = entries_.find(KeyRef{r.key.program_hash, &r.key.spec});
    if (it != entries_.end() && it->second.state == State::kPending)
      it->second.state = State::kFailed, ++stats_.failed;
  }
  settled_cv_.notify_all();
}

void KernelCache::compile_batch(std::vector<Request>& batch) {
  if (!store_) return compile(batch);
  // Under the store, a kernel is compiled by whoever claims it first; the others wait for the
  // claim and load what it saved.
  std::vector<Request> claimed, waiting;
  std::vector<bool> held;
  for (Request& r : batch) {
    if (install_from_store(r)) continue;  // built elsewhere since it was requested
    const bool got = store_->try_claim(r.key.program_hash, r.key.spec);
    if (!got && !r.waited) {
      waiting.push_back(std::move(r));
      continue;
    }
    held.push_back(got);
    claimed.push_back(std::move(r));
  }
  if (!claimed.empty()) compile(claimed);  // saves to the store before the claims go
  for (std::size_t i = 0; i < claimed.size(); ++i)
    if (held[i]) store_->release(claimed[i].key.program_hash, claimed[i].key.spec);
  for (Request& r : waiting) {
    if (!store_->wait_unclaimed(r.key.program_hash, r.key.spec, abandoned_)) return;  // exiting
    if (install_from_store(r)) continue;
    r.waited = true;  // the holder saved nothing: compile it here
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(r));
  }
}

void KernelCache::compile(std::vector<Request>& batch) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<void*> entries(batch.size(), nullptr);
  std::vector<std::string> names(batch.size());
  std::string source =
      "// streamfuse JIT: " + std::to_string(batch.size()) + " kernels\n" + toolchain_->prelude();
  std::size_t generated = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::string name = "sf_kernel_" + std::to_string(i);
    try {
      const std::string text = toolchain_->kernel_source(batch[i].program, batch[i].key.spec, name);
      source += "\n" + commented(batch[i].program.to_string()) + text;
      names[i] = name;
      ++generated;
    } catch (const CompileError& e) {
      core::warn_once(e.what(), std::string(e.what()) + "; the program runs interpreted");
    }
  }
  std::string path;  // what logs call the translation unit
  std::shared_ptr<void> library;
  std::vector<std::shared_ptr<const KernelRecord>> records(batch.size());
  bool reused = false;
  if (generated) {
    try {
      auto image = std::make_shared<LibraryImage>();
      BuiltLibrary built = [&] {
        const core::BusyCore compiling;  // the CPU kernels run beside it meanwhile
        return toolchain_->build(source);
      }();
      library = std::move(built.library);
      path = std::move(built.label);
      reused = built.reused;
      image->bytes = std::move(built.bytes);
      image->name = library_name(built.key, fingerprint_);
      image->fingerprint = fingerprint_;
      image->source = std::move(source);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (names[i].empty()) continue;
        entries[i] = toolchain_->find(library, names[i]);
        if (!entries[i]) throw CompileError("jit: " + path + " lacks " + names[i]);
        records[i] = std::make_shared<const KernelRecord>(KernelRecord{
            batch[i].key.program_hash, batch[i].program, batch[i].key.spec, names[i], image});
      }
      std::lock_guard lock(mutex_);
      libraries_[image->name] = library;
    } catch (const CompileError& e) {
      std::fill(entries.begin(), entries.end(), nullptr);
      std::fill(records.begin(), records.end(), nullptr);
      library.reset();
      if (abandoned_) return;  // killed at exit: handed on, not failed
      const std::string message = std::string(e.what()) + "\n(" + std::to_string(generated) +
                                  " kernels of this batch run interpreted)";
      core::warn_once("jit-compile-failed", message);  // later failures: jit log only
      if (core::log_enabled(core::LogChannel::kJit))
        core::log_line(core::LogChannel::kJit, "batch failed: " + first_line_of(message));
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (store_ && library) {
    std::vector<std::shared_ptr<const KernelRecord>> saved;
    for (const auto& r : records)
      if (r) saved.push_back(r);
    store_->save(saved);
  }
  std::lock_guard lock(mutex_);
  ++stats_.batches;
  stats_.reused += reused;
  stats_.compile_ms += ms;
  finish(batch, entries, library, records);
  if (core::log_enabled(core::LogChannel::kJit)) {
    char line[64];
    std::snprintf(line, sizeof line, " kernels in %.1f ms%s: ", ms, reused ? " (reused)" : "");
    core::log_line(core::LogChannel::kJit, "batch of " + std::to_string(batch.size()) + line +
                                               (library ? path : std::string("failed ") + path));
  }
}

void KernelCache::finish(const std::vector<Request>& batch, const std::vector<void*>& entries,
                         const std::shared_ptr<void>& library,
                         const std::vector<std::shared_ptr<const KernelRecord>>& records) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto it = entries_.find(KeyRef{batch[i].key.program_hash, &batch[i].key.spec});
    if (it == entries_.end() || it->second.state != State::kPending) continue;  // evicted
    Entry& e = it->second;
    if (entries[i]) {
      e.state = State::kReady;
      e.entry = entries[i];
      e.library = library;
      e.record = records[i];
      ++stats_.compiled;
    } else {
      e.state = State::kFailed;
      ++stats_.failed;
    }
  }
  settled_cv_.notify_all();
}

}  // namespace streamfuse::jit

#include "jit/kernel_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cache/cache_file.h"
#include "jit/cpp_codegen.h"
#include "jit/hash_mix.h"
#include "stream/log.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace {

namespace fs = std::filesystem;

// Writes `text` to `path` atomically (temp file + rename). Throws CompileError.
void write_file(const std::string& path, const std::string& text) {
  try {
    cache::write_file_atomically(path, text);
  } catch (const Error& e) {
    throw CompileError(std::string("jit: kernel source: ") + e.what());
  }
}

bool file_equals(const std::string& path, const std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream os;
  os << in.rdbuf();
  return os.str() == text;
}

// `directory` when it exists (or can be made) and is writable, else a new private directory.
std::string usable_directory(const std::string& directory, bool& is_private) {
  std::error_code ec;
  if (!directory.empty()) {
    fs::create_directories(directory, ec);
    if (fs::is_directory(directory, ec) && access(directory.c_str(), W_OK | X_OK) == 0) {
      is_private = false;
      return directory;
    }
  }
  std::string pattern = (fs::temp_directory_path(ec) / "streamfuse-jit-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    throw CacheError(
        "jit: kernel directory '" + directory +
        "' is not writable and no temporary directory can be made: " + std::strerror(errno));
  is_private = true;
  const std::string why = directory.empty()
                              ? "jit: no kernel directory given"
                              : "jit: kernel directory '" + directory + "' is not writable";
  stream::warn_once("jit-dir:" + directory, why + "; compiled kernels go to " + pattern +
                                                " for this process (set " +
                                                "STREAMFUSE_CACHE_DIR to a writable directory)");
  return pattern;
}

// The program's pseudo-code as comment lines, so a kernel file explains itself.
std::string commented(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += "//   " + line + "\n";
  return out;
}

std::string first_line_of(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

std::size_t KernelCache::KeyHash::hash(std::uint64_t program_hash, const SpecializationKey& spec) {
  return static_cast<std::size_t>(hash_mix(program_hash, spec.hash()));
}

KernelCache::KernelCache(std::string directory, KernelCacheOptions options)
    : options_(options), directory_(std::move(directory)) {
  if (options_.mode == JitMode::kInterpret) return;
  directory_ = usable_directory(directory_, private_directory_);
  thread_ = std::thread(&KernelCache::run, this);
}

KernelCache::~KernelCache() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (private_directory_) {
    std::error_code ec;
    fs::remove_all(directory_, ec);  // loaded libraries stay mapped
  }
}

std::optional<ReadyKernel> KernelCache::find_or_request(std::uint64_t program_hash,
                                                        const FusedProgram& program,
                                                        const SpecializationKey& key) {
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(KeyRef{program_hash, &key}); it != entries_.end()) {
    Entry& e = it->second;
    lru_.splice(lru_.begin(), lru_, e.lru);
    if (e.state == State::kReady) {
      ++stats_.hits;
      return ReadyKernel{e.fn, e.library};
    }
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.misses;
  if (options_.mode == JitMode::kInterpret || no_compiler_ || stop_) return std::nullopt;
  while (!entries_.empty() && entries_.size() >= std::max<std::size_t>(options_.max_kernels, 1))
    evict_one();
  lru_.push_front(Key{program_hash, key});
  Entry e;
  e.lru = lru_.begin();
  entries_.emplace(lru_.front(), std::move(e));
  queue_.push_back(Request{lru_.front(), program});
  work_cv_.notify_one();
  return std::nullopt;
}

void KernelCache::evict_one() {
  const auto it = entries_.find(KeyRef{lru_.back().program_hash, &lru_.back().spec});
  entries_.erase(it);  // a library no entry and no caller holds is dlclosed here
  lru_.pop_back();
  ++stats_.evicted;
}

void KernelCache::wait_idle() {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return;
  ++flush_waiters_;
  work_cv_.notify_all();
  idle_cv_.wait(lock, [&] { return (queue_.empty() && !compiling_) || stop_; });
  --flush_waiters_;
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard lock(mutex_);
  KernelCacheStats s = stats_;
  s.entries = entries_.size();
  return s;
}

void KernelCache::run() {
  std::optional<SystemCompiler> compiler = SystemCompiler::probe();
  std::unique_lock lock(mutex_);
  if (!compiler) {
    no_compiler_ = true;
    for (const Request& r : queue_) {
      if (auto it = entries_.find(KeyRef{r.key.program_hash, &r.key.spec}); it != entries_.end())
        it->second.state = State::kFailed, ++stats_.failed;
    }
    queue_.clear();
    idle_cv_.notify_all();
    const char* env = std::getenv("STREAMFUSE_CXX");
    stream::warn_once("jit-no-compiler",
                      std::string("jit: no C++ compiler found (") +
                          (env && *env ? "STREAMFUSE_CXX=" + std::string(env)
                                       : std::string("tried c++, g++, clang++ on PATH")) +
                          "); fused programs run in the interpreter");
    return;
  }
  compiler_ = std::move(compiler);
  if (stream::log_enabled(stream::LogChannel::kJit))
    stream::log_line(stream::LogChannel::kJit,
                     "compiler: " + compiler_->version() + " (" + compiler_->command_line() + ")");
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) break;
    if (flush_waiters_ == 0)  // gather the requests that come right after the first
      work_cv_.wait_for(lock, options_.batch_window, [&] {
        return stop_ || flush_waiters_ > 0 || queue_.size() >= options_.max_batch;
      });
    if (stop_) break;
    // Take up to max_batch requests whose entries are still pending (not evicted meanwhile).
    std::vector<Request> batch;
    std::size_t taken = 0;
    for (; taken < queue_.size() && batch.size() < std::max<std::size_t>(options_.max_batch, 1);
         ++taken) {
      const auto it =
          entries_.find(KeyRef{queue_[taken].key.program_hash, &queue_[taken].key.spec});
      if (it != entries_.end() && it->second.state == State::kPending)
        batch.push_back(std::move(queue_[taken]));
    }
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(taken));
    compiling_ = true;
    lock.unlock();
    if (!batch.empty()) compile_batch(batch);
    lock.lock();
    compiling_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
  queue_.clear();
  idle_cv_.notify_all();
}

void KernelCache::compile_batch(std::vector<Request>& batch) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<CpuKernelFn> fns(batch.size(), nullptr);
  std::vector<std::string> names(batch.size());
  std::string source =
      "// streamfuse JIT: " + std::to_string(batch.size()) + " kernels\n" + cpu_kernel_prelude();
  std::size_t generated = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::string name = "sf_kernel_" + std::to_string(i);
    try {
      const std::string text = cpu_kernel_source(batch[i].program, batch[i].key.spec, name);
      source += "\n" + commented(batch[i].program.to_string()) + text;
      names[i] = name;
      ++generated;
    } catch (const CompileError& e) {
      stream::warn_once(e.what(), std::string(e.what()) + "; the program runs interpreted");
    }
  }
  std::string path;
  std::shared_ptr<void> library;
  bool reused = false;
  if (generated) {
    try {
      library = build_library(source, path, reused);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (names[i].empty()) continue;
        fns[i] = reinterpret_cast<CpuKernelFn>(find_symbol(library, names[i].c_str()));
        if (!fns[i]) throw CompileError("jit: " + path + " lacks " + names[i]);
      }
    } catch (const CompileError& e) {
      std::fill(fns.begin(), fns.end(), nullptr);
      library.reset();
      const std::string message = std::string(e.what()) + "\n(" + std::to_string(generated) +
                                  " kernels of this batch run interpreted)";
      stream::warn_once("jit-compile-failed", message);  // later failures: jit log only
      if (stream::log_enabled(stream::LogChannel::kJit))
        stream::log_line(stream::LogChannel::kJit, "batch failed: " + first_line_of(message));
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(mutex_);
  ++stats_.batches;
  stats_.reused += reused;
  stats_.compile_ms += ms;
  finish(batch, fns, library);
  if (stream::log_enabled(stream::LogChannel::kJit)) {
    char line[64];
    std::snprintf(line, sizeof line, " kernels in %.1f ms%s: ", ms, reused ? " (reused)" : "");
    stream::log_line(stream::LogChannel::kJit,
                     "batch of " + std::to_string(batch.size()) + line +
                         (library ? path : std::string("failed ") + path));
  }
}

std::shared_ptr<void> KernelCache::build_library(const std::string& source, std::string& path,
                                                 bool& reused) {
  const std::string base = (fs::path(directory_) / compiler_->library_key(source)).string();
  path = base + ".cpp";
  const std::string so = base + ".so";
  std::error_code ec;
  if (fs::exists(so, ec) && file_equals(path, source)) {  // built before, maybe by another process
    try {
      std::shared_ptr<void> library = load_library(so);
      reused = true;
      return library;
    } catch (const CompileError&) {
      fs::remove(so, ec);  // unusable: rebuild
    }
  }
  write_file(path, source);
  const std::string tmp = cache::temporary_beside(so).string();
  try {
    compiler_->compile(path, tmp, options_.compile_timeout);
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  if (std::rename(tmp.c_str(), so.c_str()) != 0) {
    fs::remove(tmp, ec);
    throw CompileError("jit: cannot move the library of " + path +
                       " into place: " + std::strerror(errno));
  }
  return load_library(so);
}

void KernelCache::finish(const std::vector<Request>& batch, const std::vector<CpuKernelFn>& fns,
                         const std::shared_ptr<void>& library) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto it = entries_.find(KeyRef{batch[i].key.program_hash, &batch[i].key.spec});
    if (it == entries_.end() || it->second.state != State::kPending) continue;  // evicted
    Entry& e = it->second;
    if (fns[i]) {
      e.state = State::kReady;
      e.fn = fns[i];
      e.library = library;
      ++stats_.compiled;
    } else {
      e.state = State::kFailed;
      ++stats_.failed;
    }
  }
}

}  // namespace streamfuse::jit

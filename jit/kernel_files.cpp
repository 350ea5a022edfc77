#include "jit/kernel_files.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "cache/cache_log.h"
#include "cache/prune.h"
#include "core/log.h"
#include "jit/kernel_codec.h"

namespace streamfuse::jit {
namespace {

// Requests one process hands on, and one takes: far above one program's kernels.
constexpr std::size_t kMaxHandedOn = 4096;

// The library a kernel record names, for the pruner (which keeps a library and the kernels naming
// it together, and cannot read kernel records itself: cache/ knows no kernels).
std::string library_named_by(std::string_view payload) {
  try {
    return decode_kernel_entry(payload).library;  // checked: a valid library name
  } catch (const std::exception&) {
    return {};
  }
}
[[maybe_unused]] const bool kLibraryReaderSet =
    (cache::set_kernel_library_reader(&library_named_by), true);

}  // namespace

KernelFiles::KernelFiles(std::shared_ptr<cache::CacheDir> dir, std::string fingerprint)
    : dir_(std::move(dir)),
      fingerprint_(std::move(fingerprint)),
      claims_(cache::claims_path(dir_->root())) {}

std::optional<jit::KernelRecord> KernelFiles::load(std::uint64_t program_hash,
                                                   const jit::FusedProgram& program,
                                                   const jit::SpecializationKey& key) {
  const std::uint64_t hash = kernel_hash(program_hash, key, fingerprint_);
  return read_record(cache::kernel_path(dir_->root(), program_hash, hash), program_hash, program,
                     &key);
}

std::vector<jit::KernelRecord> KernelFiles::load_program(std::uint64_t program_hash,
                                                         const jit::FusedProgram& program) {
  std::vector<jit::KernelRecord> records;
  std::error_code ec;
  std::filesystem::directory_iterator it(cache::kernel_folder(dir_->root(), program_hash), ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::filesystem::path& path = it->path();
    if (path.extension() != ".kernel") continue;  // temporaries of writes in flight
    if (auto record = read_record(path, program_hash, program, nullptr))
      records.push_back(std::move(*record));
  }
  return records;
}

std::optional<jit::KernelRecord> KernelFiles::read_record(const std::filesystem::path& path,
                                                          std::uint64_t program_hash,
                                                          const jit::FusedProgram& program,
                                                          const jit::SpecializationKey* key) {
  const std::string name = path.stem().string();
  std::optional<std::string> payload =
      dir_->read(path, cache::FileKind::kCpuKernel, fingerprint_, cache::CacheDir::Foreign::kMiss);
  if (!payload) {
    if (cache::cache_logging()) cache::cache_log("miss: kernel " + name);
    return std::nullopt;
  }
  KernelEntry entry;
  try {
    entry = decode_kernel_entry(*payload);
  } catch (const cache::FormatError& e) {
    dir_->reject_payload(path, e.what());
    return std::nullopt;
  }
  // Its name must be its own (program, key, fingerprint): else it is another kernel whose name
  // collides, or a file put in the wrong place.
  if (entry.program_hash != program_hash || entry.program != program ||
      (key && entry.key != *key) ||
      name != core::hex16(kernel_hash(program_hash, entry.key, fingerprint_))) {
    if (cache::cache_logging())
      cache::cache_log("miss: kernel " + name + " holds another kernel (hash collision)");
    return std::nullopt;
  }
  std::shared_ptr<const jit::LibraryImage> image = library(entry.library);
  if (!image) {
    // Kernel files without their library (removed as broken, here or by another process) can
    // never be used: they go too, so that the directory stays consistent; the kernels are
    // compiled again and written anew with a new library.
    std::error_code ec;
    std::size_t removed = 0;
    if (!std::filesystem::exists(cache::library_path(dir_->root(), entry.library), ec) && !ec &&
        dir_->writable())
      removed = cache::remove_kernels_of_library(dir_->root(), entry.library);
    if (cache::cache_logging())
      cache::cache_log(
          "miss: kernel " + name + ": its library " + entry.library + " is gone" +
          (removed ? "; removed its " + std::to_string(removed) + " kernel files" : ""));
    return std::nullopt;
  }
  if (cache::cache_logging())
    cache::cache_log("hit: kernel " + name + " in library " + entry.library);
  return jit::KernelRecord{program_hash, std::move(entry.program), std::move(entry.key),
                           std::move(entry.symbol), std::move(image)};
}

std::shared_ptr<const jit::LibraryImage> KernelFiles::library(const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    if (const auto it = read_.find(name); it != read_.end())
      if (auto image = it->second.lock()) return image;
  }
  const std::filesystem::path path = cache::library_path(dir_->root(), name);
  std::optional<std::string> payload = dir_->read(path, cache::FileKind::kCpuLibrary, fingerprint_);
  if (!payload) return nullptr;
  auto image = std::make_shared<jit::LibraryImage>();
  try {
    *image = decode_library(*payload);
  } catch (const cache::FormatError& e) {
    dir_->reject_payload(path, e.what());
    return nullptr;
  }
  if (image->name != name) {
    dir_->reject_payload(path, "holds library " + image->name);
    return nullptr;
  }
  image->fingerprint = fingerprint_;
  std::lock_guard lock(mutex_);
  if (read_.size() >= 256)
    boost::unordered::erase_if(read_, [](const auto& kv) { return kv.second.expired(); });
  read_[name] = image;
  return image;
}

void KernelFiles::save(std::span<const std::shared_ptr<const jit::KernelRecord>> kernels) {
  for (const auto& k : kernels) {
    const jit::LibraryImage& image = *k->library;
    if (image.fingerprint != fingerprint_) continue;  // built elsewhere: not this directory's
    // The library first: a process that finds the record finds its library.
    if (!write_library(image)) return;
    const KernelEntry entry{k->program_hash, k->program, k->key, k->symbol, image.name};
    if (!dir_->write(cache::kernel_path(dir_->root(), k->program_hash,
                                        kernel_hash(k->program_hash, k->key, fingerprint_)),
                     cache::FileKind::kCpuKernel, fingerprint_, encode_kernel_entry(entry)))
      return;
  }
}

bool KernelFiles::write_library(const jit::LibraryImage& image) {
  {
    std::lock_guard lock(mutex_);
    if (!written_.insert(image.name).second) return true;
  }
  if (dir_->write(cache::library_path(dir_->root(), image.name), cache::FileKind::kCpuLibrary,
                  fingerprint_, encode_library(image)))
    return true;
  std::lock_guard lock(mutex_);
  written_.erase(image.name);
  return false;
}

void KernelFiles::save_library(const jit::LibraryImage& image) {
  if (image.fingerprint == fingerprint_ && valid_library_name(image.name)) write_library(image);
}

bool KernelFiles::try_claim(std::uint64_t program_hash, const jit::SpecializationKey& key) {
  return claims_.try_claim(kernel_hash(program_hash, key, fingerprint_));
}

void KernelFiles::release(std::uint64_t program_hash, const jit::SpecializationKey& key) {
  claims_.release(kernel_hash(program_hash, key, fingerprint_));
}

bool KernelFiles::wait_unclaimed(std::uint64_t program_hash, const jit::SpecializationKey& key,
                                 const std::atomic<bool>& give_up) {
  return claims_.wait_free(kernel_hash(program_hash, key, fingerprint_), give_up);
}

void KernelFiles::hand_on(std::span<const jit::KernelRequest> requests) {
  if (requests.empty() || !dir_->writable()) return;
  requests = requests.first(std::min(requests.size(), kMaxHandedOn));
  // A name of this process's own: processes exiting together each leave a file.
  static std::atomic<std::uint64_t> counter{0};
  const std::uint64_t name = core::hash_mix(
      core::hash_mix(static_cast<std::uint64_t>(getpid()), counter.fetch_add(1)),
      static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
  const std::filesystem::path path =
      cache::handed_on_folder(dir_->root(), fingerprint_) / (core::hex16(name) + ".pending");
  if (dir_->write(path, cache::FileKind::kHandedOn, fingerprint_, encode_kernel_requests(requests)))
    cache::cache_log("handed on " + std::to_string(requests.size()) +
                     " kernels to compile: " + path.string());
}

std::vector<jit::KernelRequest> KernelFiles::take_handed_on() {
  std::vector<jit::KernelRequest> taken;
  std::error_code ec;
  std::filesystem::directory_iterator it(cache::handed_on_folder(dir_->root(), fingerprint_), ec);
  for (; !ec && it != std::filesystem::directory_iterator() && taken.size() < kMaxHandedOn;
       it.increment(ec)) {
    const std::filesystem::path path = it->path();
    if (path.extension() != ".pending") continue;  // temporaries of writes in flight
    std::optional<std::string> payload = dir_->read(path, cache::FileKind::kHandedOn, fingerprint_);
    if (!payload) continue;
    std::vector<jit::KernelRequest> requests;
    try {
      requests = decode_kernel_requests(*payload);
    } catch (const cache::FormatError& e) {
      dir_->reject_payload(path, e.what());
      continue;
    }
    // Whoever removes the file takes it: of processes that read it together, one succeeds.
    std::error_code remove_ec;
    if (!std::filesystem::remove(path, remove_ec)) continue;
    cache::cache_log("took " + std::to_string(requests.size()) +
                     " handed-on kernels: " + path.string());
    for (jit::KernelRequest& r : requests) taken.push_back(std::move(r));
  }
  return taken;
}

}  // namespace streamfuse::jit

#include "cache/kernel_files.h"

#include "cache/cache_log.h"
#include "cache/kernel_codec.h"
#include "stream/log.h"

namespace streamfuse::cache {
KernelFiles::KernelFiles(std::shared_ptr<CacheDir> dir, std::string fingerprint)
    : dir_(std::move(dir)),
      fingerprint_(std::move(fingerprint)),
      claims_(claims_path(dir_->root())) {}

std::optional<jit::KernelRecord> KernelFiles::load(std::uint64_t program_hash,
                                                   const jit::FusedProgram& program,
                                                   const jit::SpecializationKey& key) {
  const std::uint64_t hash = kernel_hash(program_hash, key, fingerprint_);
  const std::filesystem::path path = kernel_path(dir_->root(), hash);
  std::optional<std::string> payload = dir_->read(path, FileKind::kCpuKernel, fingerprint_);
  if (!payload) {
    if (cache_logging()) cache_log("miss: kernel " + hex16(hash));
    return std::nullopt;
  }
  KernelEntry entry;
  try {
    entry = decode_kernel_entry(*payload);
  } catch (const FormatError& e) {
    dir_->reject_payload(path, e.what());
    return std::nullopt;
  }
  if (entry.program_hash != program_hash || entry.program != program || entry.key != key) {
    if (cache_logging())
      cache_log("miss: kernel " + hex16(hash) + " holds another kernel (hash collision)");
    return std::nullopt;
  }
  std::shared_ptr<const jit::LibraryImage> image = library(entry.library);
  if (!image) {
    if (cache_logging())
      cache_log("miss: kernel " + hex16(hash) + ": its library " + entry.library + " is gone");
    return std::nullopt;
  }
  if (cache_logging()) cache_log("hit: kernel " + hex16(hash) + " in library " + entry.library);
  return jit::KernelRecord{program_hash, std::move(entry.program), std::move(entry.key),
                           std::move(entry.symbol), std::move(image)};
}

std::shared_ptr<const jit::LibraryImage> KernelFiles::library(const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    if (const auto it = read_.find(name); it != read_.end())
      if (auto image = it->second.lock()) return image;
  }
  const std::filesystem::path path = library_path(dir_->root(), name);
  std::optional<std::string> payload = dir_->read(path, FileKind::kCpuLibrary, fingerprint_);
  if (!payload) return nullptr;
  auto image = std::make_shared<jit::LibraryImage>();
  try {
    *image = decode_library(*payload);
  } catch (const FormatError& e) {
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
    bool new_library = false;
    {
      std::lock_guard lock(mutex_);
      new_library = written_.insert(image.name).second;
    }
    // The library first: a process that finds the record finds its library.
    if (new_library && !dir_->write(library_path(dir_->root(), image.name), FileKind::kCpuLibrary,
                                    fingerprint_, encode_library(image))) {
      std::lock_guard lock(mutex_);
      written_.erase(image.name);
      return;
    }
    const KernelEntry entry{k->program_hash, k->program, k->key, k->symbol, image.name};
    if (!dir_->write(kernel_path(dir_->root(), kernel_hash(k->program_hash, k->key, fingerprint_)),
                     FileKind::kCpuKernel, fingerprint_, encode_kernel_entry(entry)))
      return;
  }
}

bool KernelFiles::try_claim(std::uint64_t program_hash, const jit::SpecializationKey& key) {
  return claims_.try_claim(kernel_hash(program_hash, key, fingerprint_));
}

void KernelFiles::release(std::uint64_t program_hash, const jit::SpecializationKey& key) {
  claims_.release(kernel_hash(program_hash, key, fingerprint_));
}

void KernelFiles::wait_unclaimed(std::uint64_t program_hash, const jit::SpecializationKey& key) {
  claims_.wait_free(kernel_hash(program_hash, key, fingerprint_));
}

}  // namespace streamfuse::cache

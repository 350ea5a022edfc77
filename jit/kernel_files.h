// KernelFiles: compiled CPU kernels in the cache directory (the KernelCache's KernelStore). A
// kernel is one small record file naming its library; a library (source and shared object) is
// one file shared by the kernels compiled with it. Both carry the fingerprint of the machine they
// were built for; claims (ClaimLocks on <root>/claims) make processes compile a kernel once.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>

#include "cache/cache_dir.h"
#include "cache/claim_locks.h"
#include "jit/kernel_store.h"

namespace streamfuse::jit {

class KernelFiles final : public jit::KernelStore {
 public:
  // Kernels built under `fingerprint` (jit::kernel_fingerprint).
  KernelFiles(std::shared_ptr<cache::CacheDir> dir, std::string fingerprint);

  std::optional<jit::KernelRecord> load(std::uint64_t program_hash,
                                        const jit::FusedProgram& program,
                                        const jit::SpecializationKey& key) override;
  std::vector<jit::KernelRecord> load_program(std::uint64_t program_hash,
                                              const jit::FusedProgram& program) override;
  void save(std::span<const std::shared_ptr<const jit::KernelRecord>> kernels) override;
  std::shared_ptr<const jit::LibraryImage> load_library(const std::string& name) override {
    return library(name);
  }
  void save_library(const jit::LibraryImage& image) override;
  bool try_claim(std::uint64_t program_hash, const jit::SpecializationKey& key) override;
  void release(std::uint64_t program_hash, const jit::SpecializationKey& key) override;
  bool wait_unclaimed(std::uint64_t program_hash, const jit::SpecializationKey& key,
                      const std::atomic<bool>& give_up) override;
  void hand_on(std::span<const jit::KernelRequest> requests) override;
  std::vector<jit::KernelRequest> take_handed_on() override;

 private:
  std::shared_ptr<const jit::LibraryImage> library(const std::string& name);
  // Writes `image` unless this process did already; false when the directory refused.
  bool write_library(const jit::LibraryImage& image);
  // The record at `path` when it holds a kernel of `program` (and `key`, when given) whose
  // library is good; nullopt otherwise (logged, bad files rejected; another machine's kernels
  // are a quiet miss).
  std::optional<jit::KernelRecord> read_record(const std::filesystem::path& path,
                                               std::uint64_t program_hash,
                                               const jit::FusedProgram& program,
                                               const jit::SpecializationKey* key);

  std::shared_ptr<cache::CacheDir> dir_;
  std::string fingerprint_;
  cache::ClaimLocks claims_;
  std::mutex mutex_;
  // Libraries read (shared by the records that hold them) and written by this process.
  boost::unordered_flat_map<std::string, std::weak_ptr<const jit::LibraryImage>> read_;
  boost::unordered_flat_set<std::string> written_;
};

}  // namespace streamfuse::jit

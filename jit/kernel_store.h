// KernelStore: where compiled kernels persist between processes. Declared here, implemented by
// cache/ over the cache directory, and handed to the KernelCache by the device runtime.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jit/program.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

// A kernel library as built: enough to load it again anywhere with the same fingerprint, and to
// rebuild it anywhere else.
struct LibraryImage {
  std::string name;         // 16 hex digits: hash of source, compile command and compiler version
  std::string fingerprint;  // kernel_fingerprint() of the machine it was built on
  std::string source;       // the generated translation unit
  std::string bytes;        // the shared object
};

// One kernel of a library: what it computes and under which key, and its symbol.
struct KernelRecord {
  std::uint64_t program_hash = 0;  // ProgramFacts::hash of `program`
  FusedProgram program;
  SpecializationKey key;
  std::string symbol;
  std::shared_ptr<const LibraryImage> library;
};

// A kernel to compile: its program and specialization.
struct KernelRequest {
  std::uint64_t program_hash = 0;  // ProgramFacts::hash of `program`
  FusedProgram program;
  SpecializationKey key;
};

class KernelStore {
 public:
  virtual ~KernelStore() = default;

  // The persisted kernel of (program, key) built under this process's fingerprint, or nullopt:
  // not there, or a bad file (rejected with one warning, and the kernel is compiled again).
  // Thread-safe; reads files.
  virtual std::optional<KernelRecord> load(std::uint64_t program_hash, const FusedProgram& program,
                                           const SpecializationKey& key) = 0;
  // Every persisted kernel of `program` built under this process's fingerprint, whatever its key
  // (for reading ahead). Bad files are skipped as load() skips them. Thread-safe; reads files.
  virtual std::vector<KernelRecord> load_program(std::uint64_t program_hash,
                                                 const FusedProgram& program) = 0;
  // Persists one library's kernels. Called on the compile thread before it releases its claims,
  // so a process waiting on a claim finds the kernels when it wakes. Never throws: a directory
  // that cannot be written disables persistence with one warning.
  virtual void save(std::span<const std::shared_ptr<const KernelRecord>> kernels) = 0;

  // Libraries that hold no FusedProgram kernels (the CUDA library kernels: reductions, random
  // values), by LibraryImage::name, under this process's fingerprint: the image, or null (not
  // there, or a bad file, rejected with one warning). Thread-safe; reads files.
  virtual std::shared_ptr<const LibraryImage> load_library(const std::string& name) = 0;
  // Persists such a library. Never throws, as save() does not.
  virtual void save_library(const LibraryImage& image) = 0;

  // Claims across processes: a process compiles a kernel only while it holds the kernel's claim.
  // True when this store now holds it; false when another process (or another store) does.
  virtual bool try_claim(std::uint64_t program_hash, const SpecializationKey& key) = 0;
  virtual void release(std::uint64_t program_hash, const SpecializationKey& key) = 0;
  // Blocks until nobody holds the claim (the holder saved the kernel, gave up, or exited), or
  // `give_up` is set (checked every few milliseconds); false in the latter case.
  virtual bool wait_unclaimed(std::uint64_t program_hash, const SpecializationKey& key,
                              const std::atomic<bool>& give_up) = 0;

  // Kernels this process was asked for and could not compile before it exited, left for the
  // next process of this fingerprint to compile first, so that a short-lived program's kernels
  // get built over its runs however long they take. Never throws.
  virtual void hand_on(std::span<const KernelRequest> requests) = 0;
  // Takes what processes of this fingerprint handed on: each request goes to one process only.
  // Bad files are removed with one warning. Never throws.
  virtual std::vector<KernelRequest> take_handed_on() = 0;
};

}  // namespace streamfuse::jit

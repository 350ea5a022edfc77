// Plan bundles: every plan and compiled kernel a process used, in one file that ships next to a
// model, so the model's first iteration needs no exploration and no compile.
//
//   streamfuse::plans::save_bundle("model.sfplans");   // after running the model once
//   streamfuse::plans::load_bundle("model.sfplans");   // at start-up, before the first iteration
//
// A bundle also lists the library ops the model ran (matmul shapes and layouts): loading it
// prepares them (creates their oneDNN primitives) on a background thread while the process starts.
// Plans are portable between machines. Kernels are loaded only where they were built for this
// machine (library version, compiler and flags, CPU features); the others are recompiled in the
// background at load time, with one log line.
//
// What a bundle is trusted for: its compiled kernels are shared objects, and loading one runs its
// code in this process, so a bundle that carries them is code, to be trusted as much as the
// program itself (its CRC-32 detects accidents, not changes made on purpose). Everything else in
// it is data: plans, kernel programs and keys, and prepared ops are checked as they are read, and
// any bytes whose checksum is valid either load as what this library could have made itself or
// are rejected as corrupt (never a crash). A bundle from a source not trusted with code is loaded
// with {.load_native_code = false}: its kernels then compile here from their programs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace streamfuse::plans {

struct BundleSummary {
  std::size_t plans = 0;               // plans written / added to the plan stores
  std::size_t kernels = 0;             // compiled kernels written / installed ready to run
  std::size_t kernels_recompiled = 0;  // load: kernels built elsewhere (or not loaded, see
                                       // LoadOptions), queued for compilation
  std::size_t prepared_ops = 0;        // library ops written / queued to be prepared
  // The memory the saving process's allocator held at once, in bytes: written / read. A loading
  // program whose cache directory has no record of its own makes those blocks while it starts,
  // so that its first iteration does not fault them in.
  std::uint64_t held_bytes = 0;
};

// Writes every plan and compiled kernel of every device this process used to `path` (atomically:
// a temporary file renamed into place). Waits for compiles in flight first, so what was asked for
// is included. Throws CacheError naming the path when it cannot be written.
BundleSummary save_bundle(const std::string& path);

struct LoadOptions {
  // true: the bundle's kernels built for this machine are loaded from the shared objects it
  // carries. false: no shared object (nor kernel source) of the bundle is loaded, compiled or
  // written to the cache directory; its kernels are queued to compile here, from the programs
  // and keys it lists, as if they had been built for another machine.
  bool load_native_code = true;
};

// Adds the plans and kernels of the bundle at `path` to this process (and, when the cache
// directory is writable, to it). Throws CacheError naming the path and the reason when the file is
// missing, not a bundle, from another format version, or corrupt; nothing is added then.
BundleSummary load_bundle(const std::string& path, const LoadOptions& options = {});

}  // namespace streamfuse::plans

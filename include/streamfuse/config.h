// Process-wide settings, from code or from STREAMFUSE_* environment variables. A variable that is
// unset or empty keeps the default; any other value must be one the variable accepts, exactly as
// written below, or the library's first use throws Error naming the variable and what it accepts.
#pragma once

#include <cstddef>
#include <string>

namespace streamfuse {

// How fused element-wise programs run (used once fusion exists).
enum class JitMode : unsigned char {
  kCompile,    // compile kernels with the system compiler; interpret while they compile
  kInterpret,  // run fused programs through the vectorized interpreter only
};

struct Config {
  // STREAMFUSE_FUSION=1|true|on or 0|false|off: fuse recorded segments, or run every op on its
  // own.
  bool fusion = true;
  // STREAMFUSE_JIT=compile|interpret.
  JitMode jit = JitMode::kCompile;
  // STREAMFUSE_QUEUE_BOUND=N (1 or more): ops a stream holds before it must run some (lazy mode).
  std::size_t queue_bound = 256;
  // STREAMFUSE_LOG: comma-separated channels (stream, fusion, jit, cache, alloc, or all) logged
  // to stderr, one line per decision.
  std::string log;
  // STREAMFUSE_CACHE_DIR: where plans and kernels persist; empty picks $XDG_CACHE_HOME/streamfuse
  // or ~/.cache/streamfuse.
  std::string cache_dir;
  // STREAMFUSE_CACHE_MAX_MB=N (MiB): the most the cache directory may hold; the least recently
  // used files are pruned past it.
  std::size_t cache_max_bytes = std::size_t{1} << 30;
  // STREAMFUSE_ALLOCATOR_CACHE_MB=N (MiB): the most freed memory a device allocator keeps for
  // reuse.
  std::size_t allocator_cache_bytes = std::size_t{2} << 30;
  // STREAMFUSE_NUM_THREADS=N: threads a CPU kernel may use; 0 uses every core.
  int num_threads = 0;

  // Defaults overridden by the environment. Throws Error naming the variable and listing what it
  // accepts when a value does not parse (STREAMFUSE_CPU_ISA, not a setting, included).
  static Config from_env();
};

// The settings in effect: from_env() on first use unless set_config() came first.
Config config();
// Replaces the settings; streams and allocators pick them up at their next op.
void set_config(const Config& c);

}  // namespace streamfuse

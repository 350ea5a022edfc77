// Statistics of a device: its caching allocator, and what fusion learned and compiled.
#pragma once

#include <cstdint>

#include "streamfuse/device.h"

namespace streamfuse {

struct MemoryStats {
  std::int64_t bytes_in_use = 0;       // bytes of live tensors (as requested)
  std::int64_t peak_bytes_in_use = 0;  // highest bytes_in_use since start or the last reset
  std::int64_t bytes_cached = 0;       // freed blocks kept for reuse
  std::int64_t bytes_reserved = 0;     // taken from the system: live blocks plus cached blocks
  std::int64_t live_buffers = 0;       // buffers currently held by tensors
  std::int64_t allocations = 0;        // allocation requests served
  std::int64_t cache_hits = 0;         // requests served from the cache
};

// The statistics of `device`'s allocator. Queued ops that have not run yet are not counted:
// call synchronize() first for a settled figure.
MemoryStats memory_stats(Device device = Device::cpu());
// Restarts peak_bytes_in_use from the current bytes_in_use.
void reset_peak_memory_stats(Device device = Device::cpu());
// Returns every cached block of `device` to the system.
void empty_cache(Device device = Device::cpu());

struct FusionStats {
  std::int64_t plans = 0;                 // plans in the device's plan store
  std::int64_t plans_explored = 0;        // segments explored (a plan made) by this process
  std::int64_t plans_loaded = 0;          // plans read from the cache directory or a bundle
  std::int64_t kernels_compiled = 0;      // kernels compiled by this process
  std::int64_t kernels_loaded = 0;        // kernels loaded from the cache directory or a bundle
  std::int64_t kernels_failed = 0;        // kernels that did not compile (they run interpreted)
  std::int64_t compile_batches = 0;       // compiler runs (each compiles a batch of kernels)
  double compile_ms = 0;                  // wall time spent compiling, summed over batches
  std::int64_t compiled_launches = 0;     // fused kernels launched compiled
  std::int64_t interpreted_launches = 0;  // fused kernels launched through the interpreter
  // Library kernels (oneDNN matmul primitives) made ahead of their first run, for the ops that
  // earlier processes (the cache directory) or a loaded bundle used.
  std::int64_t ops_prepared = 0;
  // Matrix products that applied the element-wise steps after them (bias and residual adds,
  // scaling) as they stored their result, one write instead of one per step (a plan of the
  // matmul kind, on a backend that fuses product epilogues: the CPU's oneDNN post-ops).
  std::int64_t fused_products = 0;
  // Chains of a product, a row-wise kernel over its result and a second product of that
  // (attention's q @ k^T, softmax, att @ v) run a tile of rows at a time, neither intermediate
  // written to memory (a plan of the product-chain kind, on a backend that chains products: the
  // CPU's batched GEMM, on CPUs with FMA).
  std::int64_t chained_products = 0;
};

// What fusion on `device` has done so far in this process.
FusionStats fusion_stats(Device device = Device::cpu());
// Blocks until no kernel of `device` is waiting for the compiler (for benchmarks and tests).
void wait_for_compiles(Device device = Device::cpu());

}  // namespace streamfuse

// What the public API's implementation (api/) uses of the layers below: it validates a call,
// then records, reads, transfers and configures through these functions and nothing else. The
// device runtimes, streams and backends stay behind them.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/ir.h"
#include "stream/tensor_node.h"
#include "streamfuse/config.h"
#include "streamfuse/device.h"
#include "streamfuse/plans.h"
#include "streamfuse/profiler.h"

namespace streamfuse::runtime {

// Tensors. Every node returned carries one reference (the caller's Tensor adopts it).

// Records op `kind` reading `operands` (defined, validated, all on `device`) on this thread's
// stream of `device`; its result is of `shape` and `dtype`. An operand held by one reference only
// is the op's last use: its value becomes the op's (stream/cross_stream.h).
stream::TensorNode* record(Device device, core::OpKind kind,
                           std::span<stream::TensorNode* const> operands, const Shape& shape,
                           DType dtype, const core::OpAttrs& attrs,
                           std::span<const Scalar> scalars);
// A tensor of `device` holding a copy of `data` (`shape` elements of `dtype`, contiguous).
stream::TensorNode* from_host(Device device, const void* data, DType dtype, const Shape& shape);
// A tensor of the CPU reading `data` in place (`shape` elements of `dtype`, contiguous), which
// `lender` keeps alive for as long as the tensor's memory is in use (backends/borrowed_storage.h).
stream::TensorNode* borrow_host(const void* data, DType dtype, const Shape& shape,
                                std::shared_ptr<const void> lender);
// A copy of `node`'s value on `device` (another device than its own): a sync point of the source.
// Throws Error when the value could not be computed, DeviceError when `device` is not there.
stream::TensorNode* transfer(const stream::TensorNode& node, Device device);
// Copies `node`'s value (its own dtype, contiguous) to `dst`, once it is computed. Throws Error
// naming `caller` when it could not be.
void to_host(const stream::TensorNode& node, void* dst, std::string_view caller);

// Devices.
void synchronize(Device device);
// Makes `device`'s runtime now, if it does not exist yet: it reads what the cache directory says
// to prepare and starts preparing it, so that work ahead of need overlaps what the caller does
// next (loading weights) instead of the first ops.
void start(Device device);
MemoryStats memory_stats(Device device);
void reset_peak_memory_stats(Device device);
void empty_cache(Device device);
FusionStats fusion_stats(Device device);
void wait_for_compiles(Device device);
// Takes up `config` on every device made so far (later ones read it as they are made).
void apply_config(const Config& config);
// Checks the environment variables the backends read once per process (STREAMFUSE_CPU_ISA), so
// a bad value is an Error at the library's first use, as a bad setting's is.
void check_environment();

// Plan bundles: the plans, kernels and prepared ops of every device made so far / added to them.
plans::BundleSummary save_bundle(const std::string& path);
plans::BundleSummary load_bundle(const std::string& path, const plans::LoadOptions& options);

}  // namespace streamfuse::runtime

// The interface every device backend implements: memory, eager execution of single ops, and
// transfers to and from the host.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backends/execution_stream.h"
#include "backends/storage.h"
#include "core/ir.h"
#include "streamfuse/device.h"
#include "streamfuse/profiler.h"

namespace streamfuse::backends {

// Where a tensor's elements are: a block, an element offset into it, and element strides per
// dimension (0 for broadcast dimensions). Shape and dtype live in the op's TensorDesc.
struct TensorHandle {
  StorageRef storage;
  std::int64_t offset = 0;
  std::array<std::int64_t, kMaxRank> strides{};
};

// Row-major strides of `shape`.
std::array<std::int64_t, kMaxRank> contiguous_strides(const Shape& shape);
// True when `h` lays out `shape` densely in row-major order (size-1 dimensions ignored).
bool is_contiguous(const TensorHandle& h, const Shape& shape);

// An op a backend can prepare before its first run, for exactly these shapes, dtypes and strides
// (the CPU's: a oneDNN matmul primitive, whose creation JIT-compiles kernels). The op is in
// global form (its tensor ids mean nothing here); `input_strides[i]` are the element strides the
// op reads input i with. Persisted (backends/prepared_op_files.h, bundles), so that a later process
// prepares them while it starts instead of in its first iteration.
struct PreparedOp {
  // A step a product applies as it stores its result (execute_product): its kind (kAdd, kSub,
  // kMul, kDiv) and its operand's element strides over the product's shape (0 where it
  // broadcasts; all 0 for a scalar).
  struct PostOp {
    core::OpKind kind = core::OpKind::kAdd;
    std::array<std::int64_t, kMaxRank> strides{};

    friend bool operator==(const PostOp&, const PostOp&) = default;
  };

  core::OpDesc op;
  std::vector<std::array<std::int64_t, kMaxRank>> input_strides;
  std::vector<PostOp> post_ops;  // a matmul's, made with it as one primitive

  friend bool operator==(const PreparedOp&, const PreparedOp&) = default;
};

// One step of a matrix product's epilogue (fusion/builders/matmul): `op`, a binary arithmetic op
// in global form, takes the product's running value as its input `value_slot` and, when it has
// two tensor inputs, `operand` as the other; a scalar op reads its scalar. The running value
// becomes its result.
struct ProductStep {
  const core::OpDesc* op = nullptr;
  int value_slot = 0;
  TensorHandle operand;
};

// Whether `op` is a step a product of `shape` may apply as it is stored, its running value being
// input `value_slot`: f32 + - * / whose result keeps the product's shape, with a scalar or one
// other f32 tensor, the value on the left unless the op commutes (a + b and a * b round the same
// either way). Shapes compare as given: relative (the matmul builder) or global (a backend).
bool is_product_step(const core::OpDesc& op, int value_slot, const Shape& shape);

// The most steps one execute_product() call fuses (the matmul builder closes after them).
inline constexpr std::size_t kMaxProductSteps = 4;

// The middle of a chain of products (Backend::execute_product_chain): what turns rows of the
// first product's result into rows of the second's left operand.
class RowStage {
 public:
  virtual ~RowStage() = default;
  // Rows [row, row + count) of matrix `matrix` (its place among the first product's matrices,
  // row-major over their batch dimensions): `in` holds them as the first product stored them,
  // `out` receives them, both contiguous, row after row (the first product's n elements a row).
  // Called from several threads at once, on disjoint rows; never throws.
  virtual void rows(std::int64_t matrix, std::int64_t row, std::int64_t count, const float* in,
                    float* out) const noexcept = 0;
  // How many of the first product's columns, from the first, those rows' results depend on, or
  // -1 for all: `in` need not hold the others' values (a causal mask makes the rest of each row
  // -inf whatever the product was there, and the chain does not compute them).
  virtual std::int64_t columns(std::int64_t matrix, std::int64_t row,
                               std::int64_t count) const noexcept {
    (void)matrix, (void)row, (void)count;
    return -1;
  }
};

// The settings of Config that concern a backend.
struct BackendSettings {
  int num_threads = 0;  // 0: every core
  std::size_t allocator_cache_bytes = std::size_t{2} << 30;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual void configure(const BackendSettings& settings) = 0;

  // Runs `op` on its own. inputs[i] holds op.inputs[i]; a ReadWrite input's handle is the
  // op's to keep or reuse. Writes one handle per op.outputs entry. Throws Error on failure
  // (out of memory, a library error), naming the op.
  virtual void execute(const core::OpDesc& op, std::span<TensorHandle> inputs,
                       std::span<TensorHandle> outputs) = 0;

  // A new contiguous, uninitialized tensor. Throws Error when out of memory.
  virtual TensorHandle allocate(const Shape& shape, DType dtype) = 0;
  // A new contiguous tensor holding a copy of `shape.numel()` elements at `host`.
  virtual TensorHandle from_host(const void* host, DType dtype, const Shape& shape) = 0;
  // `to` = `from` converted element by element (equal dtypes: a bitwise copy), both of `shape`
  // in any layout (`to` may be a view into a larger tensor).
  virtual void copy(const Shape& shape, const TensorHandle& from, DType from_dtype,
                    const TensorHandle& to, DType to_dtype) = 0;
  // Copies the elements of `h` to `host` in row-major order.
  virtual void to_host(const TensorHandle& h, DType dtype, const Shape& shape, void* host) = 0;

  // Prepares `p` so that its first run starts at once; thread-safe, and safe beside execute()
  // (a run that needs what is being prepared waits for it). Returns false for an op this
  // backend prepares nothing for. Throws Error for an op that is not well formed.
  virtual bool prepare(const PreparedOp& p) {
    (void)p;
    return false;
  }
  // Sets what is called, on the executing thread, the first time a run in this process uses
  // something prepared (ahead, or by that run): the op to prepare ahead next time.
  virtual void set_prepared_listener(std::function<void(const PreparedOp&)> listener) {
    (void)listener;
  }

  // The allocator whose working set is made ahead in a later process (backends/block_files.h),
  // or null where making memory ahead is not done (a GPU's memory is made on the thread that
  // owns its context).
  virtual CachingAllocator* host_allocator() { return nullptr; }

  // Whether execute_product() applies steps as it stores a product (the matmul builder is made
  // only where it does: elsewhere a product and one element-wise kernel after it are what the
  // element-wise builder already makes of the same ops).
  virtual bool fuses_product_epilogues() const { return false; }
  // Runs matrix product `product` (inputs: its two operands' handles, neither lent) and applies
  // `steps` in order as it stores the result where it can: returns true when `out` holds the
  // last step's result (equal bit for bit to running the ops one by one), false when it holds
  // the product alone and the caller applies the steps. Throws Error as execute() does.
  virtual bool execute_product(const core::OpDesc& product, std::span<TensorHandle> inputs,
                               std::span<const ProductStep> steps, TensorHandle& out) {
    (void)steps;
    execute(product, inputs, std::span(&out, 1));
    return false;
  }
  // Products execute_product() ran with their steps applied as the product was stored.
  virtual std::int64_t fused_products() const { return 0; }
  // Runs `first` (inputs: its operands' handles), `stage` over its result's rows, and `second`
  // with the stage's result as its left operand (second_b: its right operand's handle), a few
  // rows at a time, so that neither intermediate is written to memory: attention's q @ k^T,
  // softmax and att @ v. Both products are f32, the stage's result has the first product's shape,
  // and the second's left operand is that result. Returns true with `out` holding the second
  // product, equal bit for bit to running the three one after the other; false, having run
  // nothing, where this backend has no kernel for these operands (the caller runs them one after
  // the other). Throws Error as execute() does.
  virtual bool execute_product_chain(const core::OpDesc& first, std::span<TensorHandle> inputs,
                                     const RowStage& stage, const core::OpDesc& second,
                                     const TensorHandle& second_b, TensorHandle& out) {
    (void)first, (void)inputs, (void)stage, (void)second, (void)second_b, (void)out;
    return false;
  }
  // Whether execute_product_chain() runs any chain (the product-chain builder is made only where
  // it does), and how many it ran.
  virtual bool chains_products() const { return false; }
  virtual std::int64_t chained_products() const { return 0; }

  // Streams (backends/execution_stream.h): the calls made for one stream's ops run in order; a
  // backend that queues work (CUDA) may overlap those of different streams. A tensor `h` made by
  // ops of stream `producer` is read from now on by ops of stream `consumer`: their work must
  // wait for everything `producer` ran so far, and `h`'s memory must not be handed out again
  // before it is done. The CPU runs every call to completion: nothing to do.
  virtual void share(const TensorHandle& h, StreamId producer, StreamId consumer) {
    (void)h, (void)producer, (void)consumer;
  }
  // Called before an op of the current stream overwrites `h`'s memory in place (a last-use input
  // lent to the output): on a device that queues work, what other streams queued that reads it
  // must finish first. Nothing on the CPU, whose calls finish before they return.
  virtual void overwrite(const TensorHandle& h) { (void)h; }
  // Waits until the work of every call made so far, on every stream, has finished (to_host
  // waits for its own stream; this is for synchronize() and timing).
  virtual void wait_idle() {}

  // The output of element-wise `op`: a last-use input of the output's dtype and shape that
  // nothing else shares takes that role (each element is read before the same element is
  // written; overwrite() orders it on a device that queues), otherwise new memory.
  TensorHandle elementwise_output(const core::OpDesc& op, std::span<TensorHandle> inputs);

  virtual MemoryStats memory_stats() const = 0;
  virtual void reset_peak_memory_stats() = 0;
  virtual void empty_cache() = 0;
};

}  // namespace streamfuse::backends

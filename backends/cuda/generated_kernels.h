// The kernels of the CUDA backend that are generated and compiled at run time. The JIT, which
// sits above the backends, implements this (jit/cuda_op_kernels.h) and the device runtime hands
// it to the backend. Every call queues its work on the calling thread's current CUDA stream
// (StreamSet::current()) and returns; it throws Error naming the op when a kernel cannot be built
// or launched. Device pointers of handles are addresses in the device's memory.
#pragma once

#include <cstddef>
#include <functional>
#include <span>

#include "backends/backend.h"
#include "backends/matmul_layout.h"
#include "core/ir.h"

namespace streamfuse::backends::cuda {

class GeneratedKernels {
 public:
  virtual ~GeneratedKernels() = default;

  // out = op(inputs) for an element-wise op (unary, binary, compare, logical, where, cast) or
  // full(); inputs broadcast to the output's shape; `out` holds the output's shape.
  virtual void elementwise(const core::OpDesc& op, std::span<const TensorHandle> inputs,
                           const TensorHandle& out) = 0;
  // `to` = `from` converted element by element (equal dtypes: a bitwise copy), both of `shape`
  // in any layout.
  virtual void copy(const Shape& shape, const TensorHandle& from, DType from_dtype,
                    const TensorHandle& to, DType to_dtype) = 0;
  // arange(), rand(), randn() into a contiguous `out`, with the CPU's values.
  virtual void arange(const core::OpDesc& op, const TensorHandle& out) = 0;
  virtual void random(const core::OpDesc& op, const TensorHandle& out) = 0;
  // A reduction (sum, mean, max, min, argmax) of op.inputs[0] into a contiguous `out`;
  // `scratch(bytes)` gives device memory for partial results, alive while the work is queued.
  virtual void reduce(const core::OpDesc& op, const TensorHandle& in, const TensorHandle& out,
                      const std::function<TensorHandle(std::size_t bytes)>& scratch) = 0;
  // out = a @ b for i32 / i64 operands (cuBLAS has no such product), wrapping like the CPU;
  // `out` contiguous of `out_shape`, operand data device pointers.
  virtual void integer_matmul(DType dtype, const MatmulOperand& a, const MatmulOperand& b,
                              void* out, const Shape& out_shape) = 0;
  // IndexSelect or Gather (core/ir.h) of contiguous `x` and `indices` into a contiguous `out`.
  // Zeroes the 4 bytes of `bad` first, and sets them to 1 where an index is out of range
  // (leaving that element of `out` unwritten).
  virtual void index(const core::OpDesc& op, const TensorHandle& x, const TensorHandle& indices,
                     const TensorHandle& out, const TensorHandle& bad) = 0;
  // Cumsum or Argsort (core/ir.h) of a contiguous `x` into a contiguous `out`, with the CPU's
  // values; `scratch(bytes)` gives device memory alive while the work is queued.
  virtual void scan(const core::OpDesc& op, const TensorHandle& x, const TensorHandle& out,
                    const std::function<TensorHandle(std::size_t bytes)>& scratch) = 0;
  // Scatter or ScatterAdd (core/ir.h) of contiguous `index` and `src` into `out` (x's result:
  // any strides). Zeroes the 4 bytes of `bad` first, and sets them to 1 where an index is out of
  // range (leaving that element unwritten).
  virtual void scatter(const core::OpDesc& op, const TensorHandle& index, const TensorHandle& src,
                       const TensorHandle& out, const TensorHandle& bad) = 0;
  // Conv2d, MaxPool2d or AvgPool2d (core/ir.h) of a contiguous `x` (and for Conv2d a contiguous
  // weight `w`, of x's dtype) into a contiguous `out`; pools give the CPU's values.
  virtual void window(const core::OpDesc& op, const TensorHandle& x, const TensorHandle* w,
                      const TensorHandle& out) = 0;
};

}  // namespace streamfuse::backends::cuda

#include "backends/cpu/cpu_backend.h"

#include <array>
#include <cstring>
#include <span>

#include "backends/cpu/index_ops.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/pool_ops.h"
#include "backends/cpu/scan_ops.h"
#include "backends/cpu/scatter_ops.h"
#include "backends/cpu/views.h"
#include "backends/movement.h"
#include "backends/update.h"
#include "backends/views.h"
#include "core/scalar_values.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu {

using core::OpCategory;
using core::OpDesc;
using core::OpKind;
using core::TensorDesc;

CpuBackend::CpuBackend()
    : allocator_(memory_, BackendSettings{}.allocator_cache_bytes), kernels_(cpu::kernels()) {}

void CpuBackend::configure(const BackendSettings& settings) {
  num_threads_.store(settings.num_threads, std::memory_order_relaxed);
  allocator_.set_cache_limit(settings.allocator_cache_bytes);
}

TensorHandle CpuBackend::allocate(const Shape& shape, DType dtype) {
  return allocate(shape, dtype, nullptr);
}

TensorHandle CpuBackend::allocate(const Shape& shape, DType dtype, bool* zeroed) {
  const auto bytes = static_cast<std::size_t>(shape.numel()) * element_size(dtype);
  TensorHandle h;
  h.storage = zeroed ? allocator_.allocate_zeroed(bytes, zeroed) : allocator_.allocate(bytes);
  h.strides = contiguous_strides(shape);
  return h;
}

void CpuBackend::execute(const core::OpDesc& op, std::span<TensorHandle> inputs,
                         std::span<TensorHandle> outputs) {
  TensorHandle& out = outputs[0];
  const core::TensorDesc& od = op.outputs[0];
  switch (core::op_category(op.kind)) {
    case core::OpCategory::kCreation:
      if (op.kind == core::OpKind::kFull && core::fill_scalar_bits(op.scalars[0], od.dtype) == 0) {
        // zeros: a fresh large block reads as zeros already, and stays untouched until written
        bool zeroed = false;
        out = allocate(od.shape, od.dtype, &zeroed);
        if (zeroed) return;
      } else {
        out = allocate(od.shape, od.dtype);
      }
      if (op.kind == core::OpKind::kFull || op.kind == core::OpKind::kArange) {
        kernels_.fill({op.kind, od.dtype, out.storage.data(), od.shape.numel(), op.scalars[0],
                       op.kind == core::OpKind::kArange ? op.scalars[1] : Scalar{}, threads()});
      } else {
        kernels_.random({op.kind, od.dtype, out.storage.data(), od.shape.numel(),
                         static_cast<std::uint64_t>(op.scalars[0].to_int()),
                         static_cast<std::uint64_t>(op.scalars[1].to_int()),
                         op.scalars[2].to_double(), op.scalars[3].to_double(), threads()});
      }
      return;
    case core::OpCategory::kCast:
      out = copy_contiguous(*this, inputs[0], op.inputs[0].shape, op.inputs[0].dtype, od.dtype);
      return;
    case core::OpCategory::kUnary:
    case core::OpCategory::kBinary:
    case core::OpCategory::kCompare:
    case core::OpCategory::kLogical:
    case core::OpCategory::kSelect:
      return run_elementwise(op, inputs, out);
    case core::OpCategory::kReduce:
      return run_reduce(op, inputs[0], out);
    case core::OpCategory::kMatmul:
      return run_matmul(op, inputs, out);
    case core::OpCategory::kMovement:
      return run_movement(*this, op, inputs, out);
    case core::OpCategory::kIndex:
      return run_index(*this, op, inputs, out, threads());
    case core::OpCategory::kUpdate:
      if (op.kind == core::OpKind::kScatter || op.kind == core::OpKind::kScatterAdd)
        return run_scatter(*this, op, inputs, out, threads());
      return run_update(*this, op, inputs, out);
    case core::OpCategory::kScan:
      return run_scan(*this, op, inputs, out, threads());
    case core::OpCategory::kWindow:
      if (op.kind == core::OpKind::kConv2d) return run_conv(op, inputs, out);
      return run_pool(*this, op, inputs, out, threads());
    case core::OpCategory::kLifetime:
      return;
  }
}

void CpuBackend::run_elementwise(const core::OpDesc& op, std::span<TensorHandle> inputs,
                                 TensorHandle& out) {
  const core::TensorDesc& od = op.outputs[0];
  ElementwiseArgs a;
  a.kind = op.kind;
  a.compute = op.attrs.dtype;
  a.shape = od.shape;
  a.num_threads = threads();
  // The scalar operand as a broadcast one-element operand of the compute type (little-endian:
  // the value sits in the low bytes of its 64 bits).
  std::int64_t scalar = 0;
  auto add_scalar = [&] {
    const DType d = storage_dtype_of(compute_type_of(op.attrs.dtype));
    scalar = core::operand_scalar_bits(op.scalars[0], d);
    a.inputs[static_cast<std::size_t>(a.num_inputs++)] =
        Operand{reinterpret_cast<char*>(&scalar), d, {}};
  };
  if (op.attrs.scalar_side == core::ScalarSide::kLhs) add_scalar();
  for (std::size_t i = 0; i < inputs.size(); ++i)
    a.inputs[static_cast<std::size_t>(a.num_inputs++)] =
        broadcast_operand(inputs[i], op.inputs[i].shape, op.inputs[i].dtype, od.shape);
  if (op.attrs.scalar_side == core::ScalarSide::kRhs) add_scalar();

  out = elementwise_output(op, inputs);
  a.output = Operand{element_ptr(out, od.dtype), od.dtype, out.strides};
  kernels_.elementwise(a);
}

void CpuBackend::run_reduce(const core::OpDesc& op, TensorHandle& in, TensorHandle& out) {
  const core::TensorDesc& id = op.inputs[0];
  const core::TensorDesc& od = op.outputs[0];
  out = allocate(od.shape, od.dtype);
  kernels_.reduce({op.kind, id.shape, Operand{element_ptr(in, id.dtype), id.dtype, in.strides},
                   op.attrs.axis, od.dtype, out.storage.data(), threads()});
}

void CpuBackend::run_matmul(const core::OpDesc& op, std::span<TensorHandle> inputs,
                            TensorHandle& out) {
  const DType dtype = op.attrs.dtype;
  MatmulOperand m[2];
  TensorHandle converted[2];
  for (std::size_t i = 0; i < 2; ++i) {
    const core::TensorDesc& d = op.inputs[i];
    const TensorHandle* h = &inputs[i];
    if (d.dtype != dtype) {  // mixed dtypes: promote the other operand first
      converted[i] = copy_contiguous(*this, inputs[i], d.shape, d.dtype, dtype);
      h = &converted[i];
    }
    m[i] = MatmulOperand{element_ptr(*h, dtype), d.shape, h->strides};
  }
  const core::TensorDesc& od = op.outputs[0];
  out = allocate(od.shape, od.dtype);
  if (!matmul_.run(dtype, m[0], m[1], out.storage.data(), od.shape, configured_threads())) return;
  report_first_use(op, {m[0].strides, m[1].strides});
}

bool CpuBackend::execute_product_chain(const core::OpDesc& first, std::span<TensorHandle> inputs,
                                       const RowStage& stage, const core::OpDesc& second,
                                       const TensorHandle& second_b, TensorHandle& out) {
  for (const core::OpDesc* op : {&first, &second}) {
    if (op->attrs.dtype != kF32 || op->outputs[0].dtype != kF32) return false;
    for (const core::TensorDesc& in : op->inputs)
      if (in.dtype != kF32) return false;
  }
  const MatmulOperand a{element_ptr(inputs[0], kF32), first.inputs[0].shape, inputs[0].strides};
  const MatmulOperand b{element_ptr(inputs[1], kF32), first.inputs[1].shape, inputs[1].strides};
  const MatmulOperand v{element_ptr(second_b, kF32), second.inputs[1].shape, second_b.strides};
  const core::TensorDesc& od = second.outputs[0];
  TensorHandle result = allocate(od.shape, kF32);
  if (!matmul_.run_chain(a, b, first.outputs[0].shape, stage, v, result.storage.data(), od.shape,
                         configured_threads()))
    return false;  // the block goes back to the allocator unused
  out = std::move(result);
  chained_products_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool CpuBackend::execute_product(const core::OpDesc& product, std::span<TensorHandle> inputs,
                                 std::span<const ProductStep> steps, TensorHandle& out) {
  const core::TensorDesc& od = product.outputs[0];
  bool fusable = product.attrs.dtype == kF32 && product.inputs[0].dtype == kF32 &&
                 product.inputs[1].dtype == kF32 && steps.size() <= kMaxProductPostOps;
  std::array<ProductPostOp, kMaxProductPostOps> post_ops;
  std::array<float, kMaxProductPostOps> scalars{};
  for (std::size_t i = 0; fusable && i < steps.size(); ++i) {
    const ProductStep& step = steps[i];
    fusable = is_product_step(*step.op, step.value_slot, od.shape);
    if (!fusable) break;
    post_ops[i].kind = step.op->kind;
    if (step.op->attrs.scalar_side != core::ScalarSide::kNone) {
      const std::int64_t bits = core::operand_scalar_bits(step.op->scalars[0], kF32);
      std::memcpy(&scalars[i], &bits, sizeof(float));  // little-endian: the low bytes
      post_ops[i].data = &scalars[i];
    } else {
      const core::TensorDesc& d = step.op->inputs[static_cast<std::size_t>(1 - step.value_slot)];
      post_ops[i].data = reinterpret_cast<const float*>(element_ptr(step.operand, kF32));
      post_ops[i].strides = backends::broadcast_strides(d.shape, step.operand.strides, od.shape);
    }
  }

  if (!fusable) {
    run_matmul(product, inputs, out);
    return false;
  }
  const MatmulOperand a{element_ptr(inputs[0], kF32), product.inputs[0].shape, inputs[0].strides};
  const MatmulOperand b{element_ptr(inputs[1], kF32), product.inputs[1].shape, inputs[1].strides};
  out = allocate(od.shape, kF32);
  bool applied = false;
  const bool first_use = matmul_.run(a, b, out.storage.data(), od.shape, configured_threads(),
                                     std::span(post_ops.data(), steps.size()), &applied);
  if (applied) fused_products_.fetch_add(1, std::memory_order_relaxed);
  if (first_use) {
    std::vector<PreparedOp::PostOp> prepared(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i)
      prepared[i] = {post_ops[i].kind, post_ops[i].strides};
    report_first_use(product, {a.strides, b.strides}, std::move(prepared));
  }
  return applied;
}

void CpuBackend::run_conv(const core::OpDesc& op, std::span<TensorHandle> inputs,
                          TensorHandle& out) {
  const DType dtype = op.attrs.dtype;
  TensorHandle operands[2];
  for (std::size_t i = 0; i < 2; ++i) {
    const core::TensorDesc& d = op.inputs[i];
    operands[i] = d.dtype != dtype ? copy_contiguous(*this, inputs[i], d.shape, d.dtype, dtype)
                                   : contiguous_or_copy(*this, inputs[i], d.shape, dtype);
  }
  const core::TensorDesc& od = op.outputs[0];
  out = allocate(od.shape, od.dtype);
  const ConvProblem p{dtype, op.inputs[0].shape, op.inputs[1].shape, od.shape, op.attrs.window};
  if (!conv_.run(p, element_ptr(operands[0], dtype), element_ptr(operands[1], dtype),
                 out.storage.data(), threads()))
    return;
  report_first_use(op, {contiguous_strides(p.x), contiguous_strides(p.w)});
}

void CpuBackend::report_first_use(const core::OpDesc& op,
                                  std::vector<std::array<std::int64_t, kMaxRank>> input_strides,
                                  std::vector<PreparedOp::PostOp> post_ops) {
  std::function<void(const PreparedOp&)> listener;
  {
    std::lock_guard lock(listener_mutex_);
    listener = listener_;
  }
  if (!listener) return;
  PreparedOp p{op, std::move(input_strides), std::move(post_ops)};
  for (core::TensorDesc& t : p.op.inputs) {
    t.id = 0;
    t.status = core::TensorStatus::kReadOnly;
    t.dtype = op.attrs.dtype;  // as the op reads them
  }
  p.op.outputs[0].id = 0;
  p.op.outputs[0].status = core::TensorStatus::kNotInit;
  listener(p);
}

bool CpuBackend::prepare(const PreparedOp& p) {
  const core::OpDesc& op = p.op;
  if (op.kind == core::OpKind::kConv2d) {
    if (op.inputs.size() != 2 || op.outputs.size() != 1)
      throw Error("prepare: " + core::to_string(op) + " is not a well-formed conv2d");
    return conv_.prepare({op.attrs.dtype, op.inputs[0].shape, op.inputs[1].shape,
                          op.outputs[0].shape, op.attrs.window},
                         configured_threads());
  }
  if (op.kind != core::OpKind::kMatmul) return false;
  if (op.inputs.size() != 2 || op.outputs.size() != 1 || p.input_strides.size() != 2)
    throw Error("prepare: " + core::to_string(op) + " is not a well-formed matmul");
  const MatmulOperand a{nullptr, op.inputs[0].shape, p.input_strides[0]};
  const MatmulOperand b{nullptr, op.inputs[1].shape, p.input_strides[1]};
  std::array<ProductPostOp, kMaxProductPostOps> post_ops;
  if (p.post_ops.size() > post_ops.size())
    throw Error("prepare: " + core::to_string(op) + " has more post-ops than a product takes");
  for (std::size_t i = 0; i < p.post_ops.size(); ++i)
    post_ops[i] = {p.post_ops[i].kind, nullptr, p.post_ops[i].strides};
  return matmul_.prepare(op.attrs.dtype, a, b, op.outputs[0].shape, configured_threads(),
                         std::span(post_ops.data(), p.post_ops.size()));
}

void CpuBackend::set_prepared_listener(std::function<void(const PreparedOp&)> listener) {
  std::lock_guard lock(listener_mutex_);
  listener_ = std::move(listener);
}

void CpuBackend::copy(const Shape& shape, const TensorHandle& from, DType from_dtype,
                      const TensorHandle& to, DType to_dtype) {
  kernels_.copy({shape, Operand{element_ptr(from, from_dtype), from_dtype, from.strides},
                 Operand{element_ptr(to, to_dtype), to_dtype, to.strides}, threads()});
}

TensorHandle CpuBackend::from_host(const void* host, DType dtype, const Shape& shape) {
  TensorHandle h = allocate(shape, dtype);
  if (shape.numel() > 0)
    std::memcpy(h.storage.data(), host,
                static_cast<std::size_t>(shape.numel()) * element_size(dtype));
  return h;
}

void CpuBackend::to_host(const TensorHandle& h, DType dtype, const Shape& shape, void* host) {
  if (shape.numel() == 0) return;
  if (is_contiguous(h, shape)) {
    std::memcpy(host, element_ptr(h, dtype),
                static_cast<std::size_t>(shape.numel()) * element_size(dtype));
    return;
  }
  kernels_.copy({shape, Operand{element_ptr(h, dtype), dtype, h.strides},
                 Operand{static_cast<char*>(host), dtype, contiguous_strides(shape)}, threads()});
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace streamfuse::backends::cpu

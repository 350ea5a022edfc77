#include "backends/cuda/cuda_backend.h"

#include <vector>

#include "backends/index_layout.h"
#include "backends/movement.h"
#include "backends/update.h"
#include "backends/views.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {
namespace {

using core::OpCategory;
using core::OpDesc;
using core::OpKind;
using core::TensorDesc;

}  // namespace

CudaBackend::CudaBackend(int ordinal)
    : device_(DeviceContext::open(ordinal)),
      memory_(device_),
      streams_(device_),
      allocator_(memory_, BackendSettings{}.allocator_cache_bytes),
      staging_(device_),
      matmul_(device_) {
  allocator_.set_handoff(&streams_);
}

CudaBackend::~CudaBackend() {
  // Queued work may still read cached blocks: let it finish before they are freed. At exit the
  // driver may be gone already; nothing to report then.
  try {
    streams_.synchronize_all();
  } catch (const std::exception&) {
  }
}

void CudaBackend::configure(const BackendSettings& settings) {
  allocator_.set_cache_limit(settings.allocator_cache_bytes);
}

void CudaBackend::empty_cache() {
  streams_.synchronize_all();
  allocator_.empty_cache();
}

GeneratedKernels& CudaBackend::kernels() {
  if (!kernels_)
    throw Error("internal error: " + device_->name() + " has no kernels; please report this");
  return *kernels_;
}

TensorHandle CudaBackend::allocate(const Shape& shape, DType dtype) {
  TensorHandle h;
  h.storage = allocator_.allocate(static_cast<std::size_t>(shape.numel()) * element_size(dtype));
  h.strides = contiguous_strides(shape);
  return h;
}

void CudaBackend::execute(const core::OpDesc& op, std::span<TensorHandle> inputs,
                          std::span<TensorHandle> outputs) {
  TensorHandle& out = outputs[0];
  const core::TensorDesc& od = op.outputs[0];
  switch (core::op_category(op.kind)) {
    case core::OpCategory::kCreation:
      out = allocate(od.shape, od.dtype);
      if (od.shape.numel() == 0) return;
      if (op.kind == core::OpKind::kFull)
        kernels().elementwise(op, {}, out);
      else if (op.kind == core::OpKind::kArange)
        kernels().arange(op, out);
      else
        kernels().random(op, out);
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
      out = allocate(od.shape, od.dtype);
      if (op.inputs[0].shape.numel() == 0 && od.shape.numel() == 0) return;
      kernels().reduce(op, inputs[0], out, [this](std::size_t bytes) {
        return allocate(Shape{static_cast<std::int64_t>(bytes)}, kBool);
      });
      return;
    case core::OpCategory::kMatmul:
      return run_matmul(op, inputs, out);
    case core::OpCategory::kMovement:
      return run_movement(*this, op, inputs, out);
    case core::OpCategory::kIndex:
      return run_index(op, inputs, out);
    case core::OpCategory::kUpdate:
      if (op.kind == core::OpKind::kScatter || op.kind == core::OpKind::kScatterAdd)
        return run_scatter(op, inputs, out);
      return run_update(*this, op, inputs, out);
    case core::OpCategory::kScan: {
      out = allocate(od.shape, od.dtype);
      if (od.shape.numel() == 0) return;
      const core::TensorDesc& xd = op.inputs[0];
      const TensorHandle x = contiguous_or_copy(*this, inputs[0], xd.shape, xd.dtype);
      kernels().scan(op, x, out, [this](std::size_t bytes) {
        return allocate(Shape{static_cast<std::int64_t>(bytes)}, kBool);
      });
      return;
    }
    case core::OpCategory::kWindow:
      return run_window(op, inputs, out);
    case core::OpCategory::kLifetime:
      return;
  }
}

void CudaBackend::run_window(const core::OpDesc& op, std::span<TensorHandle> inputs,
                             TensorHandle& out) {
  const core::TensorDesc& od = op.outputs[0];
  const DType dtype = op.attrs.dtype;
  TensorHandle operands[2];
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const core::TensorDesc& d = op.inputs[i];
    operands[i] = d.dtype != dtype ? copy_contiguous(*this, inputs[i], d.shape, d.dtype, dtype)
                                   : contiguous_or_copy(*this, inputs[i], d.shape, dtype);
  }
  out = allocate(od.shape, od.dtype);
  if (od.shape.numel() == 0) return;
  kernels().window(op, operands[0], inputs.size() > 1 ? &operands[1] : nullptr, out);
}

void CudaBackend::run_elementwise(const core::OpDesc& op, std::span<TensorHandle> inputs,
                                  TensorHandle& out) {
  const core::TensorDesc& od = op.outputs[0];
  out = elementwise_output(op, inputs);
  if (od.shape.numel() == 0) return;
  kernels().elementwise(op, inputs, out);
}

void CudaBackend::run_index(const core::OpDesc& op, std::span<TensorHandle> inputs,
                            TensorHandle& out) {
  const core::TensorDesc& xd = op.inputs[0];
  const core::TensorDesc& id = op.inputs[1];
  const core::TensorDesc& od = op.outputs[0];
  out = allocate(od.shape, od.dtype);
  if (od.shape.numel() == 0) return;
  const TensorHandle indices = contiguous_or_copy(*this, inputs[1], id.shape, id.dtype);
  const TensorHandle bad = allocate(Shape{1}, kI32);
  kernels().index(op, contiguous_or_copy(*this, inputs[0], xd.shape, xd.dtype), indices, out, bad);
  raise_flagged_index(op, bad, indices);
}

void CudaBackend::run_scatter(const core::OpDesc& op, std::span<TensorHandle> inputs,
                              TensorHandle& out) {
  const core::TensorDesc& id = op.inputs[1];
  const core::TensorDesc& sd = op.inputs[2];
  out = claim_or_copy(*this, op.inputs[0], inputs[0]);
  if (id.shape.numel() == 0) return;
  const TensorHandle index = contiguous_or_copy(*this, inputs[1], id.shape, id.dtype);
  const TensorHandle bad = allocate(Shape{1}, kI32);
  kernels().scatter(op, index, contiguous_or_copy(*this, inputs[2], sd.shape, sd.dtype), out, bad);
  raise_flagged_index(op, bad, index);
}

void CudaBackend::raise_flagged_index(const core::OpDesc& op, const TensorHandle& bad,
                                      const TensorHandle& indices) {
  const core::TensorDesc& id = op.inputs[1];
  // The check's flag, then on a bad index the indices themselves, read back: a sync point, so
  // the error names the same index as the CPU's (the first) and surfaces with this op.
  std::int32_t flag = 0;
  to_host(bad, kI32, Shape{1}, &flag);
  if (!flag) return;
  std::vector<char> host(static_cast<std::size_t>(id.shape.numel()) * element_size(id.dtype));
  to_host(indices, id.dtype, id.shape, host.data());
  check_indices(op, host.data());
  throw Error("internal error: " + std::string(core::op_name(op.kind)) +
              " flagged an index the host finds in range; please report this");
}

void CudaBackend::run_matmul(const core::OpDesc& op, std::span<TensorHandle> inputs,
                             TensorHandle& out) {
  const DType dtype = op.attrs.dtype;
  const core::TensorDesc& od = op.outputs[0];
  MatmulOperand m[2];
  TensorHandle copies[2];
  for (std::size_t i = 0; i < 2; ++i) {
    const core::TensorDesc& d = op.inputs[i];
    const TensorHandle* h = &inputs[i];
    m[i] = MatmulOperand{element_ptr(*h, d.dtype), d.shape, h->strides};
    // Mixed dtypes promote the other operand first; cuBLAS reads only some layouts as they are.
    const bool looped = is_integral(dtype) || dtype == kF64;  // not cuBLAS: any strides
    if (d.dtype != dtype || (!looped && !CudaMatmul::reads_directly(m[i]))) {
      copies[i] = copy_contiguous(*this, inputs[i], d.shape, d.dtype, dtype);
      m[i] = MatmulOperand{element_ptr(copies[i], dtype), d.shape, copies[i].strides};
    }
  }
  out = allocate(od.shape, od.dtype);
  if (od.shape.numel() == 0) return;
  if (is_integral(dtype) || dtype == kF64)  // f64: the library kernel, in double
    kernels().integer_matmul(dtype, m[0], m[1], out.storage.data(), od.shape);
  else
    matmul_.run(dtype, m[0], m[1], out.storage.data(), od.shape, streams_.current());
}

void CudaBackend::copy(const Shape& shape, const TensorHandle& from, DType from_dtype,
                       const TensorHandle& to, DType to_dtype) {
  kernels().copy(shape, from, from_dtype, to, to_dtype);
}

TensorHandle CudaBackend::from_host(const void* host, DType dtype, const Shape& shape) {
  TensorHandle h = allocate(shape, dtype);
  staging_.to_device(device_address(h.storage.data()), host,
                     static_cast<std::size_t>(shape.numel()) * element_size(dtype),
                     streams_.current());
  return h;
}

void CudaBackend::to_host(const TensorHandle& h, DType dtype, const Shape& shape, void* host) {
  if (shape.numel() == 0) return;
  const TensorHandle src = contiguous_or_copy(*this, h, shape, dtype);
  staging_.to_host(host, device_address(element_ptr(src, dtype)),
                   static_cast<std::size_t>(shape.numel()) * element_size(dtype),
                   streams_.current());
}

void CudaBackend::overwrite(const TensorHandle& h) {
  if (h.storage) streams_.claim(*h.storage.block());
}

void CudaBackend::share(const TensorHandle& h, StreamId producer, StreamId consumer) {
  if (producer == consumer) return;
  if (h.storage) StreamSet::note_use(*h.storage.block(), consumer);
  streams_.order(producer, consumer);
}

}  // namespace streamfuse::backends::cuda

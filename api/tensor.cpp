// Tensor's members: reference counting, metadata, conversions and reading values back.
#include "streamfuse/tensor.h"

#include <string>
#include <vector>

#include "api/recorder.h"
#include "runtime/runtime.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"

namespace streamfuse {

using api::node_of;

Tensor::Tensor(const Tensor& other) : node_(other.node_) {
  if (node_) stream::retain(node_);
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (other.node_) stream::retain(other.node_);
  if (node_) stream::release(node_);
  node_ = other.node_;
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    if (node_) stream::release(node_);
    node_ = other.node_;
    other.node_ = nullptr;
  }
  return *this;
}

Tensor::~Tensor() {
  if (node_) stream::release(node_);
}

const Shape& Tensor::shape() const { return node_of(*this, "shape").shape; }
DType Tensor::dtype() const { return node_of(*this, "dtype").dtype; }
Device Tensor::device() const { return node_of(*this, "device").device; }

// Each names itself in errors (an undefined tensor), rather than the shape() it reads.
int Tensor::rank() const { return node_of(*this, "rank").shape.rank(); }
std::int64_t Tensor::numel() const { return node_of(*this, "numel").shape.numel(); }

std::int64_t Tensor::size(int axis) const {
  const Shape& s = node_of(*this, "size").shape;
  const int a = axis < 0 ? axis + s.rank() : axis;
  if (a < 0 || a >= s.rank())
    throw ShapeError("size: axis " + std::to_string(axis) +
                     " is out of range for a tensor of shape " + s.to_string() + " (rank " +
                     std::to_string(s.rank()) + ")");
  return s[a];
}

Tensor Tensor::to(Device device) const& { return Tensor(*this).to(device); }
Tensor Tensor::to(Device device) && {
  const stream::TensorNode& n = node_of(*this, "to");
  if (n.device == device) return std::move(*this);
  return Tensor(runtime::transfer(n, device));
}

Tensor Tensor::to(DType dtype) const& { return Tensor(*this).to(dtype); }
#define STREAMFUSE_REDUCTION_MEMBERS(name)                               \
  Tensor Tensor::name() const& { return streamfuse::name(*this); }       \
  Tensor Tensor::name()&& { return streamfuse::name(std::move(*this)); } \
  Tensor Tensor::name(int axis, bool keepdim) const& {                   \
    return streamfuse::name(*this, axis, keepdim);                       \
  }                                                                      \
  Tensor Tensor::name(int axis, bool keepdim)&& {                        \
    return streamfuse::name(std::move(*this), axis, keepdim);            \
  }
STREAMFUSE_REDUCTION_MEMBERS(sum)
STREAMFUSE_REDUCTION_MEMBERS(mean)
STREAMFUSE_REDUCTION_MEMBERS(max)
STREAMFUSE_REDUCTION_MEMBERS(min)
STREAMFUSE_REDUCTION_MEMBERS(argmax)
#undef STREAMFUSE_REDUCTION_MEMBERS
Tensor Tensor::reshape(Shape s) const& { return streamfuse::reshape(*this, s); }
Tensor Tensor::reshape(Shape s) && { return streamfuse::reshape(std::move(*this), s); }
Tensor Tensor::permute(std::initializer_list<int> axes) const& {
  return streamfuse::permute(*this, axes);
}
Tensor Tensor::permute(std::initializer_list<int> axes) && {
  return streamfuse::permute(std::move(*this), axes);
}
Tensor Tensor::transpose(int a, int b) const& { return streamfuse::transpose(*this, a, b); }
Tensor Tensor::transpose(int a, int b) && { return streamfuse::transpose(std::move(*this), a, b); }
Tensor Tensor::expand(Shape s) const& { return streamfuse::expand(*this, s); }
Tensor Tensor::expand(Shape s) && { return streamfuse::expand(std::move(*this), s); }
Tensor Tensor::slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step) const& {
  return streamfuse::slice(*this, axis, start, stop, step);
}
Tensor Tensor::slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step) && {
  return streamfuse::slice(std::move(*this), axis, start, stop, step);
}
Tensor Tensor::contiguous() const& { return streamfuse::contiguous(*this); }
Tensor Tensor::contiguous() && { return streamfuse::contiguous(std::move(*this)); }

void Tensor::read(DType as, void* dst, std::size_t n, const char* caller) const {
  const stream::TensorNode& node = node_of(*this, caller);
  if (node.dtype != as)
    throw DTypeError(std::string(caller) + ": the tensor holds " +
                     std::string(dtype_name(node.dtype)) + " elements (shape " +
                     node.shape.to_string() + "), not " + std::string(dtype_name(as)) +
                     "; read it as its own type or convert it with .to(" +
                     std::string(dtype_name(as)) + ") first");
  if (static_cast<std::int64_t>(n) != node.shape.numel())
    throw ShapeError(std::string(caller) + ": " + std::to_string(n) +
                     " elements requested from a tensor of shape " + node.shape.to_string() +
                     " with " + std::to_string(node.shape.numel()) + " elements" +
                     (n == 1 ? "; item() needs exactly one element" : ""));
  runtime::to_host(node, dst, caller);
}

void synchronize(Device device) { runtime::synchronize(device); }

}  // namespace streamfuse

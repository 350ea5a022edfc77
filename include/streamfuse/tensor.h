// The tensor handle users hold. Ops on it are recorded, not run: values are computed when
// something reads them (to_vector, item, copy_to, printing, synchronize) or when a stream's queue
// fills.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <vector>

#include "streamfuse/device.h"
#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse {

namespace stream {
struct TensorNode;  // the shared state behind a handle (stream/tensor_node.h)
}

// A value type: copies share one immutable value; the value never changes after the op that made
// it. Passing a temporary (or std::move) to an op lets the op reuse its memory.
class Tensor {
 public:
  // An undefined tensor; every op on it throws Error.
  Tensor() = default;
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept : node_(other.node_) { other.node_ = nullptr; }
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  bool defined() const { return node_ != nullptr; }
  // Shape, dtype, device: known at once, without running anything. Throw Error if undefined.
  const Shape& shape() const;
  DType dtype() const;
  Device device() const;
  int rank() const;
  std::int64_t numel() const;
  // Size of one dimension; negative axes count from the end. Throws ShapeError out of range.
  std::int64_t size(int axis) const;

  // Conversions (no-ops when already there).
  Tensor to(DType dtype) const&;
  Tensor to(DType dtype) &&;
  Tensor to(Device device) const&;
  Tensor to(Device device) &&;

  // Movement, as the free functions of the same name in ops.h.
  Tensor reshape(Shape shape) const&;
  Tensor reshape(Shape shape) &&;
  Tensor permute(std::initializer_list<int> axes) const&;
  Tensor permute(std::initializer_list<int> axes) &&;
  Tensor transpose(int axis0, int axis1) const&;
  Tensor transpose(int axis0, int axis1) &&;
  Tensor expand(Shape shape) const&;
  Tensor expand(Shape shape) &&;
  Tensor slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1) const&;
  Tensor slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1) &&;
  Tensor contiguous() const&;
  Tensor contiguous() &&;

  // Reductions as members (the functions of ops.h): x.sum(), x.mean(-1, true), ...
  Tensor sum() const&;
  Tensor sum() &&;
  Tensor sum(int axis, bool keepdim = false) const&;
  Tensor sum(int axis, bool keepdim = false) &&;
  Tensor mean() const&;
  Tensor mean() &&;
  Tensor mean(int axis, bool keepdim = false) const&;
  Tensor mean(int axis, bool keepdim = false) &&;
  Tensor max() const&;
  Tensor max() &&;
  Tensor max(int axis, bool keepdim = false) const&;
  Tensor max(int axis, bool keepdim = false) &&;
  Tensor min() const&;
  Tensor min() &&;
  Tensor min(int axis, bool keepdim = false) const&;
  Tensor min(int axis, bool keepdim = false) &&;
  Tensor argmax() const&;
  Tensor argmax() &&;
  Tensor argmax(int axis, bool keepdim = false) const&;
  Tensor argmax(int axis, bool keepdim = false) &&;

  // Sync points. T must be the C++ type of dtype() exactly (see dtype_of); anything else throws
  // DTypeError rather than converting silently: convert with to() first.
  template <class T>
  std::vector<T> to_vector() const;
  // The single element of a one-element tensor; throws ShapeError otherwise.
  template <class T>
  T item() const;
  // Copies all numel() elements, in row-major order, to dst; n must equal numel().
  template <class T>
  void copy_to(T* dst, std::size_t n) const;

  // Internal: adopts one reference to `node`.
  explicit Tensor(stream::TensorNode* node) : node_(node) {}
  stream::TensorNode* node() const { return node_; }

 private:
  // Waits for the value and copies it, converted to row-major order, to dst.
  void read(DType as, void* dst, std::size_t n, const char* caller) const;

  stream::TensorNode* node_ = nullptr;
};

// Prints the values (a sync point), PyTorch style; large tensors are abbreviated.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Runs everything recorded so far on `device`, on every thread's stream.
void synchronize(Device device = Device::cpu());

template <class T>
std::vector<T> Tensor::to_vector() const {
  const std::size_t n =
      defined() ? static_cast<std::size_t>(numel()) : 0;  // read() names the error
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<unsigned char> bytes(n);
    read(kBool, bytes.data(), n, "to_vector<bool>");
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> out(n);
    read(dtype_of<T>(), out.data(), n, "to_vector");
    return out;
  }
}

template <class T>
T Tensor::item() const {
  T value{};
  read(dtype_of<T>(), &value, 1, "item");  // bool is one byte holding 0 or 1, as stored
  return value;
}

template <class T>
void Tensor::copy_to(T* dst, std::size_t n) const {
  read(dtype_of<T>(), dst, n, "copy_to");
}

}  // namespace streamfuse

// The public Shape and Device value types.
#include "streamfuse/shape.h"

#include <string>

#include "streamfuse/device.h"
#include "streamfuse/error.h"

namespace streamfuse {
namespace {
[[noreturn]] void throw_rank(std::size_t rank) {
  throw ShapeError("Shape: " + std::to_string(rank) +
                   " dimensions given; streamfuse tensors have at most " +
                   std::to_string(kMaxRank) + " (reshape to fewer dimensions)");
}
}  // namespace

Shape::Shape(std::initializer_list<std::int64_t> dims)
    : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  if (dims.size() > static_cast<std::size_t>(kMaxRank)) throw_rank(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) dims_[i] = dims[i];
  rank_ = static_cast<std::int8_t>(dims.size());
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

void Shape::push_back(std::int64_t d) {
  if (rank_ >= kMaxRank) throw_rank(static_cast<std::size_t>(rank_) + 1);
  dims_[static_cast<std::size_t>(rank_++)] = d;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[static_cast<std::size_t>(i)]);
  }
  return s + "]";
}

std::string Device::to_string() const {
  return type == DeviceType::kCpu ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace streamfuse

// Creation ops: copies of host data, constants, ranges and random tensors. Those made of other
// ops (zeros over full, the *_like functions) name themselves in errors (api_call).
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "api/api_call.h"
#include "api/recorder.h"
#include "api/shape_rules.h"
#include "runtime/runtime.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"

namespace streamfuse {

using api::api_call;
using api::check_new_shape;
using api::node_of;
using api::record;
using core::OpKind;

namespace {

// The random stream: a Philox counter that advances by the counters each random op consumes.
// An op's values depend only on (seed, offset), so they are the same fused or not, on any
// number of threads.
struct Generator {
  std::mutex mutex;
  std::uint64_t seed = 67280421310721ULL;  // PyTorch's default: reproducible without a seed
  std::uint64_t offset = 0;
};
Generator& generator() {
  static Generator* g = new Generator;
  return *g;
}

// Reserves the Philox counters of `numel` random values. A counter gives four 32-bit words: four
// uniform values, or two Box-Muller pairs (four normal values).
std::pair<std::uint64_t, std::uint64_t> take_counters(std::int64_t numel) {
  Generator& g = generator();
  std::lock_guard lock(g.mutex);
  const std::uint64_t offset = g.offset;
  g.offset += (static_cast<std::uint64_t>(numel) + 3) / 4;
  return {g.seed, offset};
}

Tensor random(core::OpKind kind, const Shape& shape, DType dtype, Device device, double a,
              double b) {
  const std::string name(core::op_name(kind));
  if (!is_floating(dtype))
    throw DTypeError(name + ": random values need a float dtype (f32, f16, bf16), got " +
                     std::string(dtype_name(dtype)) +
                     "; convert the result if integers are wanted");
  check_new_shape(shape, dtype, name);
  const auto [seed, offset] = take_counters(shape.numel());
  const Scalar scalars[] = {static_cast<std::int64_t>(seed), static_cast<std::int64_t>(offset), a,
                            b};
  return record(kind, {}, shape, dtype, device, {}, scalars);
}

}  // namespace

Tensor from_blob(const void* data, DType dtype, Shape shape, Device device) {
  check_new_shape(shape, dtype, "from_blob");
  if (!data && shape.numel() > 0) throw Error("from_blob: data is null");
  return Tensor(runtime::from_host(device, data, dtype, shape));
}

Tensor from_blob(const void* data, DType dtype, Shape shape, std::shared_ptr<const void> owner) {
  return api_call("from_blob", [&] {
    check_new_shape(shape, dtype, "from_blob");
    if (!owner)
      throw Error(
          "from_blob: the zero-copy form needs an owner that keeps the memory alive (a "
          "std::shared_ptr; the form without one copies)");
    if (!data && shape.numel() > 0) throw Error("from_blob: data is null");
    const std::size_t align = element_size(dtype);
    if (reinterpret_cast<std::uintptr_t>(data) % align != 0)
      throw Error("from_blob: data at " + std::to_string(reinterpret_cast<std::uintptr_t>(data)) +
                  " is not aligned to its " + std::to_string(align) + "-byte elements (" +
                  std::string(dtype_name(dtype)) + "); copy it with the form without an owner");
    return Tensor(runtime::borrow_host(data, dtype, shape, std::move(owner)));
  });
}

namespace detail {
Tensor from_vector_bytes(const void* data, std::size_t n, DType dtype, Shape shape, Device device) {
  return api_call("from_vector", [&] {
    if (static_cast<std::int64_t>(n) != shape.numel())
      throw ShapeError("from_vector: " + std::to_string(n) + " values for shape " +
                       shape.to_string() + " of " + std::to_string(shape.numel()) + " elements");
    return from_blob(data, dtype, shape, device);
  });
}
}  // namespace detail

Tensor full(Shape shape, Scalar value, std::optional<DType> dtype, Device device) {
  const DType d = dtype.value_or(value.default_dtype());
  check_new_shape(shape, d, "full");
  return record(core::OpKind::kFull, {}, shape, d, device, {}, {&value, 1});
}
Tensor zeros(Shape shape, DType dtype, Device device) {
  return api_call("zeros", [&] { return full(shape, 0, dtype, device); });
}
Tensor ones(Shape shape, DType dtype, Device device) {
  return api_call("ones", [&] { return full(shape, 1, dtype, device); });
}

Tensor arange(Scalar end, std::optional<DType> dtype, Device device) {
  return arange(0, end, 1, dtype, device);
}

Tensor arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype, Device device) {
  const bool integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  const DType d = dtype.value_or(integral ? kI64 : kF32);
  std::int64_t count;
  if (integral) {
    const std::int64_t s = start.to_int(), e = end.to_int(), st = step.to_int();
    if (st == 0) throw Error("arange: step must not be zero");
    const std::int64_t span = e - s;
    count = (span > 0) != (st > 0) || span == 0 ? 0 : (span + st - (st > 0 ? 1 : -1)) / st;
  } else {
    const double s = start.to_double(), e = end.to_double(), st = step.to_double();
    if (st == 0 || !std::isfinite(s) || !std::isfinite(e) || !std::isfinite(st))
      throw Error("arange: start, end and step must be finite and step non-zero");
    count = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil((e - s) / st)));
  }
  const Shape shape{count};
  check_new_shape(shape, d, "arange");
  const Scalar scalars[] = {start, step};
  return record(core::OpKind::kArange, {}, shape, d, device, {}, scalars);
}

Tensor rand(Shape shape, DType dtype, Device device) {
  return random(core::OpKind::kRandUniform, shape, dtype, device, 0.0, 1.0);
}
Tensor randn(Shape shape, DType dtype, Device device) {
  return random(core::OpKind::kRandNormal, shape, dtype, device, 0.0, 1.0);
}

void manual_seed(std::uint64_t seed) {
  Generator& g = generator();
  std::lock_guard lock(g.mutex);
  g.seed = seed;
  g.offset = 0;
}

Tensor zeros_like(const Tensor& t, std::optional<DType> dtype) {
  return api_call("zeros_like", [&] {
    const stream::TensorNode& n = node_of(t, "zeros_like");
    return zeros(n.shape, dtype.value_or(n.dtype), n.device);
  });
}
Tensor ones_like(const Tensor& t, std::optional<DType> dtype) {
  return api_call("ones_like", [&] {
    const stream::TensorNode& n = node_of(t, "ones_like");
    return ones(n.shape, dtype.value_or(n.dtype), n.device);
  });
}
Tensor full_like(const Tensor& t, Scalar value, std::optional<DType> dtype) {
  return api_call("full_like", [&] {
    const stream::TensorNode& n = node_of(t, "full_like");
    return full(n.shape, value, dtype.value_or(n.dtype), n.device);
  });
}
Tensor rand_like(const Tensor& t, std::optional<DType> dtype) {
  return api_call("rand_like", [&] {
    const stream::TensorNode& n = node_of(t, "rand_like");
    return rand(n.shape, dtype.value_or(n.dtype), n.device);
  });
}
Tensor randn_like(const Tensor& t, std::optional<DType> dtype) {
  return api_call("randn_like", [&] {
    const stream::TensorNode& n = node_of(t, "randn_like");
    return randn(n.shape, dtype.value_or(n.dtype), n.device);
  });
}

}  // namespace streamfuse

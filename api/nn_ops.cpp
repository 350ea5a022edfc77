// nn:: functions, composed from API ops so that fusion sees (and fuses) their parts. Each runs its
// steps through api_call, so that an error names the function the user called.
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <string>

#include "api/api_call.h"
#include "api/recorder.h"
#include "api/shape_rules.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"

namespace streamfuse::nn {

using api::api_call;
using api::describe;
using api::node_of;

Tensor gelu(Tensor x, GeluApproximation approximation) {
  return api_call("gelu", [&] {
    node_of(x, "gelu");
    if (approximation == GeluApproximation::kNone) {
      const float inv_sqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
      Tensor t = x * inv_sqrt2;
      return x * (erf(std::move(t)) + 1.0f) * 0.5f;
    }
    const float k = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
    Tensor cube = x * x * x;
    Tensor inner = (x + std::move(cube) * 0.044715f) * k;
    return x * (tanh(std::move(inner)) + 1.0f) * 0.5f;
  });
}

// The result of softmax or log_softmax of x when x has no elements (as in PyTorch: an empty
// tensor of x's shape, though a maximum over an empty axis is undefined), or nothing.
std::optional<Tensor> empty_softmax(const Tensor& x, int axis, const char* fn) {
  const auto& node = node_of(x, fn);
  api::normalize_axis(axis, node.shape.rank(), fn, x);
  if (node.shape.numel() != 0) return std::nullopt;
  return is_floating(node.dtype) ? x : x.to(kF32);
}

Tensor softmax(Tensor x, int axis) {
  return api_call("softmax", [&] {
    const DType in = node_of(x, "softmax").dtype;
    if (std::optional<Tensor> empty = empty_softmax(x, axis, "softmax")) return *empty;
    // f16/bf16 (and integer) inputs compute in f32, as in PyTorch; float results convert back.
    Tensor xf = std::move(x).to(kF32);
    Tensor shifted = xf - max(xf, axis, /*keepdim=*/true);
    Tensor e = exp(std::move(shifted));
    // e times the reciprocal of its row's sum, as PyTorch's CPU kernel computes it (within
    // 1.5 ulp of e / s): a division per element costs more than the rest of a fused softmax
    // but the exp.
    Tensor s = sum(e, axis, /*keepdim=*/true);
    Tensor out = std::move(e) * recip(std::move(s));
    return is_floating(in) ? std::move(out).to(in) : out;
  });
}

Tensor log_softmax(Tensor x, int axis) {
  return api_call("log_softmax", [&] {
    const DType in = node_of(x, "log_softmax").dtype;
    if (std::optional<Tensor> empty = empty_softmax(x, axis, "log_softmax")) return *empty;
    Tensor xf = std::move(x).to(kF32);  // as softmax: f32 for f16/bf16 and integers
    Tensor shifted = xf - max(xf, axis, /*keepdim=*/true);
    Tensor lse = log(sum(exp(shifted), axis, /*keepdim=*/true));
    Tensor out = std::move(shifted) - std::move(lse);
    return is_floating(in) ? std::move(out).to(in) : out;
  });
}

// Checks that `normalized_shape` is x's trailing dimensions and each of `params` (weight, bias)
// has its shape; returns x's shape with those dimensions flattened into the last.
Shape flat_normalized_shape(const char* fn, const Tensor& x, const Shape& normalized_shape,
                            std::initializer_list<const std::optional<Tensor>*> params) {
  const Shape shape = node_of(x, fn).shape;
  const int k = normalized_shape.rank(), lead = shape.rank() - k;
  bool ok = k >= 1 && lead >= 0;
  for (int i = 0; ok && i < k; ++i) ok = shape[lead + i] == normalized_shape[i];
  if (!ok)
    throw ShapeError(std::string(fn) + ": normalized_shape " + normalized_shape.to_string() +
                     " must be the trailing dimensions of the input " + describe(x));
  const char* const names[] = {"weight", "bias"};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::optional<Tensor>& p = *params.begin()[i];
    if (p && !(node_of(*p, fn).shape == normalized_shape))
      throw ShapeError(std::string(fn) + ": " + names[i] + " must have shape " +
                       normalized_shape.to_string() + " (normalized_shape), got " + describe(*p));
  }
  Shape flat;
  for (int i = 0; i < lead; ++i) flat.push_back(shape[i]);
  flat.push_back(normalized_shape.numel());
  return flat;
}

Tensor layer_norm(Tensor x, Shape normalized_shape, std::optional<Tensor> weight,
                  std::optional<Tensor> bias, double eps) {
  return api_call("layer_norm", [&] {
    const Shape flat = flat_normalized_shape("layer_norm", x, normalized_shape, {&weight, &bias});
    const Shape shape = x.shape();
    const DType in = x.dtype();
    // Normalize along the flattened trailing dimensions, then restore the shape.
    Tensor xf = reshape(std::move(x), flat).to(kF32);  // f16/bf16 normalize in f32
    Tensor centered = xf - mean(xf, -1, /*keepdim=*/true);
    Tensor var = mean(centered * centered, -1, /*keepdim=*/true);
    Tensor y = reshape(std::move(centered) * rsqrt(std::move(var) + eps), shape);
    if (weight) y = std::move(y) * *weight;
    if (bias) y = std::move(y) + *bias;
    return is_floating(in) ? std::move(y).to(in) : y;
  });
}

Tensor rms_norm(Tensor x, Shape normalized_shape, std::optional<Tensor> weight,
                std::optional<double> eps) {
  return api_call("rms_norm", [&] {
    const Shape flat = flat_normalized_shape("rms_norm", x, normalized_shape, {&weight});
    const Shape shape = x.shape();
    const DType in = x.dtype();
    Tensor xf = reshape(std::move(x), flat).to(kF32);  // f16/bf16 normalize in f32
    Tensor ms = mean(xf * xf, -1, /*keepdim=*/true);
    const double e = eps.value_or(static_cast<double>(std::numeric_limits<float>::epsilon()));
    Tensor y = reshape(std::move(xf) * rsqrt(std::move(ms) + e), shape);
    if (weight) y = std::move(y) * *weight;
    return is_floating(in) ? std::move(y).to(in) : y;
  });
}

Tensor silu(Tensor x) {
  return api_call("silu", [&] {
    node_of(x, "silu");
    return x * sigmoid(x);
  });
}

}  // namespace streamfuse::nn

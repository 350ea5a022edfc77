// The output shape of the sliding-window ops (conv2d and the 2-D pools), with PyTorch's rules for
// the sizes: floor((in + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1, rounded up
// instead in ceil_mode unless that last window would start past the input and left padding.
#include <limits>

#include "core/ir.h"

namespace streamfuse::core {
namespace {

constexpr std::int64_t kMaxWindowValue = std::numeric_limits<std::int32_t>::max();

std::string pair(const std::array<std::int32_t, 2>& v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

// Why window's parameters are not usable, or empty.
std::string parameters_problem(OpKind kind, const Window& w) {
  for (int i = 0; i < 2; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (w.kernel[u] < 1) return "kernel size " + pair(w.kernel) + " must be positive";
    if (w.stride[u] < 1) return "stride " + pair(w.stride) + " must be positive";
    if (w.dilation[u] < 1) return "dilation " + pair(w.dilation) + " must be positive";
    if (w.padding[u] < 0) return "padding " + pair(w.padding) + " must not be negative";
    // PyTorch's rule for pools: a window must always overlap the input.
    if (kind != OpKind::kConv2d && w.padding[u] > w.kernel[u] / 2)
      return "padding " + pair(w.padding) + " must be at most half the kernel size " +
             pair(w.kernel);
  }
  if (w.groups < 1) return "groups " + std::to_string(w.groups) + " must be positive";
  if (kind != OpKind::kConv2d && w.groups != 1) return "pools have no groups";
  if (kind == OpKind::kAvgPool2d && w.dilation != std::array<std::int32_t, 2>{1, 1})
    return "avg_pool2d has no dilation";
  if (kind == OpKind::kConv2d && w.ceil_mode) return "conv2d has no ceil_mode";
  return {};
}

// Output size along one dimension, or -1 when no window fits.
std::int64_t output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                         std::int64_t padding, std::int64_t dilation, bool ceil_mode) {
  const std::int64_t span = in + 2 * padding - dilation * (kernel - 1) - 1;
  if (span < 0) return -1;
  std::int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + padding) --out;
  return out;
}

}  // namespace

std::optional<Shape> window_result_shape(OpKind kind, const Shape& input, const Shape& weight,
                                         const Window& window, std::string& why) {
  if (op_category(kind) != OpCategory::kWindow) {
    why = std::string(op_name(kind)) + " is not a window op";
    return std::nullopt;
  }
  if (input.rank() != 4) {
    why = "the input " + input.to_string() + " must be [N, C, H, W]";
    return std::nullopt;
  }
  Window w = window;
  std::int64_t channels = input[1];
  if (kind == OpKind::kConv2d) {
    if (weight.rank() != 4) {
      why = "the weight " + weight.to_string() +
            " must be [out_channels, in_channels / groups, kH, kW]";
      return std::nullopt;
    }
    if (weight[2] > kMaxWindowValue || weight[3] > kMaxWindowValue) {
      why = "the kernel " + weight.to_string() + " is too large";
      return std::nullopt;
    }
    if (w.kernel[0] != weight[2] || w.kernel[1] != weight[3]) {
      why = "the kernel size " + pair(w.kernel) + " is not the weight's " + weight.to_string();
      return std::nullopt;
    }
  }
  if (why = parameters_problem(kind, w); !why.empty()) return std::nullopt;
  if (kind == OpKind::kConv2d) {
    const std::int64_t groups = w.groups;
    if (input[1] % groups != 0 || weight[1] * groups != input[1]) {
      why = "the input's " + std::to_string(input[1]) + " channels in " + std::to_string(groups) +
            (groups == 1 ? " group" : " groups") + " need a weight of " +
            (input[1] % groups == 0 ? std::to_string(input[1] / groups)
                                    : std::string("(channels / groups)")) +
            " input channels per output channel, not " + weight.to_string();
      return std::nullopt;
    }
    if (weight[0] % groups != 0) {
      why = "the weight's " + std::to_string(weight[0]) + " output channels do not split into " +
            std::to_string(groups) + " groups";
      return std::nullopt;
    }
    channels = weight[0];
  }
  Shape out{input[0], channels, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const std::int64_t size = output_size(input[2 + i], w.kernel[u], w.stride[u], w.padding[u],
                                          w.dilation[u], w.ceil_mode);
    if (size < 1) {
      why = "the window (kernel " + pair(w.kernel) + ", dilation " + pair(w.dilation) +
            ") does not fit the input's " + std::to_string(input[2]) + "x" +
            std::to_string(input[3]) + " plus padding " + pair(w.padding);
      return std::nullopt;
    }
    out[2 + i] = size;
  }
  return out;
}

}  // namespace streamfuse::core

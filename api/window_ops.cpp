// nn::conv1d / conv2d and the 2-D pools: validated here with PyTorch's rules (core/window.cpp),
// then one window op each. A bias is an element-wise add after the convolution, so it fuses with
// the ops that follow (an activation, a residual add); conv1d and unbatched inputs are views of
// the 2-D, batched op.
#include <limits>
#include <string>
#include <vector>

#include "api/api_call.h"
#include "api/recorder.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"

namespace streamfuse::nn {

using api::api_call;
using api::describe;
using api::node_of;

namespace {

std::string pair(const std::array<std::int64_t, 2>& v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

// `v` as the window's int32 pair; values beyond int32 are not a window any input could have.
std::array<std::int32_t, 2> window_pair(const std::array<std::int64_t, 2>& v, const char* what,
                                        std::string_view fn) {
  for (std::int64_t x : v)
    if (x < std::numeric_limits<std::int32_t>::min() ||
        x > std::numeric_limits<std::int32_t>::max())
      throw ShapeError(std::string(fn) + ": " + what + " " + pair(v) + " is out of range");
  return {static_cast<std::int32_t>(v[0]), static_cast<std::int32_t>(v[1])};
}

void check_floating(const Tensor& t, const char* what, std::string_view fn) {
  const DType d = node_of(t, fn).dtype;
  if (d != kF32 && d != kF16 && d != kBF16)
    throw DTypeError(std::string(fn) + ": " + what + " " + describe(t) +
                     " must be f32, f16 or bf16 (convert with .to(kF32))");
}

// x as [N, C, H, W]: a [C, H, W] input (unbatched) gains a batch of one; `batched` says which.
Tensor batched_input(Tensor x, std::string_view fn, bool& batched) {
  const int rank = node_of(x, fn).shape.rank();
  if (rank != 3 && rank != 4)
    throw ShapeError(std::string(fn) + ": input " + describe(x) +
                     " must be [N, C, H, W] or unbatched [C, H, W]");
  batched = rank == 4;
  return batched ? std::move(x) : unsqueeze(std::move(x), 0);
}

// The window op `kind` over x ([N, C, H, W]) and, for conv2d, the weight; shapes checked here.
Tensor record_window(core::OpKind kind, std::vector<Tensor> ops, const core::Window& window,
                     std::string_view fn) {
  const Device device = api::common_device(ops, fn);
  DType dtype = ops[0].node()->dtype;
  for (const Tensor& t : ops) dtype = promote_types(dtype, t.node()->dtype);
  std::string why;
  const Shape none;
  const std::optional<Shape> out = core::window_result_shape(
      kind, ops[0].node()->shape, ops.size() > 1 ? ops[1].node()->shape : none, window, why);
  if (!out) throw ShapeError(std::string(fn) + ": " + why + ": operands " + api::describe_all(ops));
  core::OpAttrs attrs;
  attrs.dtype = dtype;
  attrs.window = window;
  return api::record(kind, ops, *out, dtype, device, attrs);
}

}  // namespace

Tensor conv2d(Tensor x, Tensor weight, std::optional<Tensor> bias, const Conv2dOptions& options) {
  return api_call("conv2d", [&] {
    check_floating(x, "input", "conv2d");
    check_floating(weight, "weight", "conv2d");
    bool batched = true;
    Tensor in = batched_input(std::move(x), "conv2d", batched);
    const Shape ws = weight.node()->shape;
    core::Window window;
    if (ws.rank() == 4) window.kernel = window_pair({ws[2], ws[3]}, "kernel size", "conv2d");
    window.stride = window_pair(options.stride, "stride", "conv2d");
    window.padding = window_pair(options.padding, "padding", "conv2d");
    window.dilation = window_pair(options.dilation, "dilation", "conv2d");
    if (options.groups < 1 || options.groups > std::numeric_limits<std::int32_t>::max())
      throw ShapeError("conv2d: groups " + std::to_string(options.groups) + " must be positive");
    window.groups = static_cast<std::int32_t>(options.groups);
    if (bias) {
      check_floating(*bias, "bias", "conv2d");
      const Shape& bs = bias->node()->shape;
      if (ws.rank() == 4 && (bs.rank() != 1 || bs[0] != ws[0]))
        throw ShapeError("conv2d: bias " + describe(*bias) + " must be [" + std::to_string(ws[0]) +
                         "], one per output channel of weight " + describe(weight));
    }
    Tensor out =
        record_window(core::OpKind::kConv2d, {std::move(in), std::move(weight)}, window, "conv2d");
    if (bias) {
      const std::int64_t channels = bias->node()->shape[0];
      out = std::move(out) + reshape(std::move(*bias), Shape{channels, 1, 1});
    }
    return batched ? out : squeeze(std::move(out), 0);
  });
}

Tensor conv1d(Tensor x, Tensor weight, std::optional<Tensor> bias, const Conv1dOptions& options) {
  return api_call("conv1d", [&] {
    const Shape xs = node_of(x, "conv1d").shape;
    const Shape ws = node_of(weight, "conv1d").shape;
    if (xs.rank() != 2 && xs.rank() != 3)
      throw ShapeError("conv1d: input " + describe(x) + " must be [N, C, L] or unbatched [C, L]");
    if (ws.rank() != 3)
      throw ShapeError("conv1d: weight " + describe(weight) +
                       " must be [out_channels, in_channels / groups, kernel size]");
    // A convolution over [.., 1, L] with a [O, C / groups, 1, K] weight.
    Shape xs2 = xs;
    xs2.push_back(xs[xs.rank() - 1]);
    xs2[xs.rank() - 1] = 1;
    Tensor x2 = reshape(std::move(x), xs2);
    Tensor w2 = reshape(std::move(weight), Shape{ws[0], ws[1], 1, ws[2]});
    Conv2dOptions o2;
    o2.stride = {1, options.stride};
    o2.padding = {0, options.padding};
    o2.dilation = {1, options.dilation};
    o2.groups = options.groups;
    Tensor out = conv2d(std::move(x2), std::move(w2), std::move(bias), o2);
    return squeeze(std::move(out), -2);
  });
}

namespace {

Tensor pool2d(core::OpKind kind, Tensor x, const std::array<std::int64_t, 2>& kernel_size,
              const Pool2dOptions& options, const char* fn) {
  check_floating(x, "input", fn);
  bool batched = true;
  Tensor in = batched_input(std::move(x), fn, batched);
  core::Window window;
  window.kernel = window_pair(kernel_size, "kernel size", fn);
  // PyTorch's default stride is the kernel size; 0 asks for it here.
  std::array<std::int64_t, 2> stride = options.stride;
  for (std::size_t i = 0; i < 2; ++i)
    if (stride[i] == 0) stride[i] = kernel_size[i];
  window.stride = window_pair(stride, "stride", fn);
  window.padding = window_pair(options.padding, "padding", fn);
  window.dilation = window_pair(options.dilation, "dilation", fn);
  window.ceil_mode = options.ceil_mode;
  window.count_include_pad = options.count_include_pad;
  Tensor out = record_window(kind, {std::move(in)}, window, fn);
  return batched ? out : squeeze(std::move(out), 0);
}

}  // namespace

Tensor max_pool2d(Tensor x, std::array<std::int64_t, 2> kernel_size, const Pool2dOptions& options) {
  return api_call("max_pool2d", [&] {
    return pool2d(core::OpKind::kMaxPool2d, std::move(x), kernel_size, options, "max_pool2d");
  });
}

Tensor avg_pool2d(Tensor x, std::array<std::int64_t, 2> kernel_size, const Pool2dOptions& options) {
  return api_call("avg_pool2d", [&] {
    return pool2d(core::OpKind::kAvgPool2d, std::move(x), kernel_size, options, "avg_pool2d");
  });
}

}  // namespace streamfuse::nn

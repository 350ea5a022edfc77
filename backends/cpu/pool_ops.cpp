#include "backends/cpu/pool_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/parallel.h"
#include "backends/movement.h"
#include "backends/views.h"
#include "core/float16.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu {
namespace {

// Element i of a float dtype as float; D is the dtype, fixed per instantiation so that the
// window loops carry no dtype branch.
template <DType D>
float load(const char* p, std::int64_t i) {
  if constexpr (D == kF32) {
    float v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  std::uint16_t h;
  std::memcpy(&h, p + i * 2, 2);
  return D == kF16 ? core::half_bits_to_float(h) : core::bf16_bits_to_float(h);
}

void store(char* p, DType d, std::int64_t i, float v) {
  if (d == kF32) {
    std::memcpy(p + i * 4, &v, 4);
    return;
  }
  const std::uint16_t h = d == kF16 ? core::float_to_half_bits(v) : core::float_to_bf16_bits(v);
  std::memcpy(p + i * 2, &h, 2);
}

// One output element of plane `x` (H x W) at (oh, ow).
template <DType D>
float pool_element(core::OpKind kind, const core::Window& w, const char* x, std::int64_t height,
                   std::int64_t width, std::int64_t oh, std::int64_t ow) {
  const std::int64_t h0 = oh * w.stride[0] - w.padding[0];
  const std::int64_t w0 = ow * w.stride[1] - w.padding[1];
  if (kind == core::OpKind::kMaxPool2d) {
    float best = -std::numeric_limits<float>::infinity();
    for (std::int64_t kh = 0; kh < w.kernel[0]; ++kh) {
      const std::int64_t ih = h0 + kh * w.dilation[0];
      if (ih < 0 || ih >= height) continue;
      for (std::int64_t kw = 0; kw < w.kernel[1]; ++kw) {
        const std::int64_t iw = w0 + kw * w.dilation[1];
        if (iw < 0 || iw >= width) continue;
        const float v = load<D>(x, ih * width + iw);
        if (v > best || std::isnan(v)) best = v;  // PyTorch's: a NaN wins (the last one)
      }
    }
    return best;
  }
  // The divisor counts the window clipped to the padded input; the sum the part in the input.
  const std::int64_t h1 = std::min<std::int64_t>(h0 + w.kernel[0], height + w.padding[0]);
  const std::int64_t w1 = std::min<std::int64_t>(w0 + w.kernel[1], width + w.padding[1]);
  const std::int64_t padded = (h1 - h0) * (w1 - w0);
  const std::int64_t hs = std::max<std::int64_t>(h0, 0), he = std::min(h1, height);
  const std::int64_t ws = std::max<std::int64_t>(w0, 0), we = std::min(w1, width);
  float sum = 0;
  for (std::int64_t ih = hs; ih < he; ++ih)
    for (std::int64_t iw = ws; iw < we; ++iw) sum += load<D>(x, ih * width + iw);
  const std::int64_t count = w.count_include_pad ? padded : (he - hs) * (we - ws);
  return sum / static_cast<float>(count);
}

}  // namespace

void run_pool(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
              TensorHandle& out, int num_threads) {
  const core::TensorDesc& xd = op.inputs[0];
  const core::TensorDesc& od = op.outputs[0];
  out = backend.allocate(od.shape, od.dtype);
  if (od.shape.numel() == 0) return;
  const TensorHandle x = contiguous_or_copy(backend, inputs[0], xd.shape, xd.dtype);
  const char* xp = element_ptr(x, xd.dtype);
  char* op_out = static_cast<char*>(out.storage.data());
  const DType d = od.dtype;
  const std::int64_t height = xd.shape[2], width = xd.shape[3];
  const std::int64_t oh_size = od.shape[2], ow_size = od.shape[3];
  const std::int64_t rows = od.shape[0] * od.shape[1] * oh_size;  // output rows of every plane
  const std::size_t plane_bytes = static_cast<std::size_t>(height * width) * element_size(d);
  const core::Window& w = op.attrs.window;
  const std::int64_t grain =
      std::max<std::int64_t>(1, 4096 / (ow_size * w.kernel[0] * w.kernel[1]));
  auto run = [&]<DType D>() {
    parallel_for(rows, grain, num_threads, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end; ++r) {
        const std::int64_t plane = r / oh_size, oh = r % oh_size;
        const char* xplane = xp + static_cast<std::size_t>(plane) * plane_bytes;
        for (std::int64_t ow = 0; ow < ow_size; ++ow)
          store(op_out, d, r * ow_size + ow,
                pool_element<D>(op.kind, w, xplane, height, width, oh, ow));
      }
    });
  };
  switch (d) {
    case kF16:
      return run.template operator()<kF16>();
    case kBF16:
      return run.template operator()<kBF16>();
    case kF32:
      return run.template operator()<kF32>();
    default:
      throw DTypeError(core::to_string(op) + ": pools take f32, f16 or bf16");
  }
}

}  // namespace streamfuse::backends::cpu

#include "backends/cpu/pool_ops.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/movement.h"
#include "backends/views.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu {
namespace {

// Element i of dtype D (f32, f16, bf16) as float, and a float stored as one, with the eager
// kernels' conversions (kernels/convert.h); D is fixed per instantiation so that the window
// loops carry no dtype branch.
template <DType D>
float load(const char* p, std::int64_t i) {
  storage_t<D> v;
  std::memcpy(&v, p + i * static_cast<std::int64_t>(sizeof v), sizeof v);
  return convert<float>(v);
}

template <DType D>
void store(char* p, std::int64_t i, float v) {
  const storage_t<D> s = convert<storage_t<D>>(v);
  std::memcpy(p + i * static_cast<std::int64_t>(sizeof s), &s, sizeof s);
}

// The taps k in [first, end) of a window starting at `start` (k * dilation from it, k below
// `kernel`) that land in [0, size).
struct TapRange {
  std::int64_t first, end;
};
TapRange taps(std::int64_t start, std::int64_t kernel, std::int64_t dilation, std::int64_t size) {
  const std::int64_t first = start < 0 ? (-start + dilation - 1) / dilation : 0;
  const std::int64_t end =
      start < size ? std::min<std::int64_t>(kernel, (size - 1 - start) / dilation + 1) : 0;
  return {first, std::max(first, end)};
}

// Output row `oh` of max_pool2d over plane `x` (H x W) into `out`. The window's rows inside the
// input are found once per row, its columns once per element at the borders only; the
// parameters are locals, so the stores through `out` (a char*) make the compiler reload nothing.
template <DType D>
void max_pool_row(const core::Window& win, const char* x, std::int64_t height, std::int64_t width,
                  std::int64_t oh, std::int64_t ow_size, char* out) {
  const std::int64_t kw_size = win.kernel[1], sw = win.stride[1], pw = win.padding[1];
  const std::int64_t dh = win.dilation[0], dw = win.dilation[1];
  const std::int64_t h0 = oh * win.stride[0] - win.padding[0];
  const TapRange rows = taps(h0, win.kernel[0], dh, height);
  for (std::int64_t ow = 0; ow < ow_size; ++ow) {
    const std::int64_t w0 = ow * sw - pw;
    const TapRange cols = w0 >= 0 && w0 + (kw_size - 1) * dw < width ? TapRange{0, kw_size}
                                                                     : taps(w0, kw_size, dw, width);
    // PyTorch's rule is `if (v > best || isnan(v)) best = v`: a NaN wins, the last one. As a
    // branch it mispredicts on every other element of random data (24 ms for a [8, 64, 112,
    // 112] pool); as a max (one maxss) plus a NaN flag it does not, and a window holding a NaN
    // is walked again to find the last one.
    float best = -std::numeric_limits<float>::infinity();
    bool nan = false;
    for (std::int64_t kh = rows.first; kh < rows.end; ++kh) {
      const std::int64_t row = (h0 + kh * dh) * width + w0;
      for (std::int64_t kw = cols.first; kw < cols.end; ++kw) {
        const float v = load<D>(x, row + kw * dw);
        best = v > best ? v : best;
        nan |= v != v;
      }
    }
    if (nan) {
      for (std::int64_t kh = rows.first; kh < rows.end; ++kh)
        for (std::int64_t kw = cols.first; kw < cols.end; ++kw) {
          const float v = load<D>(x, (h0 + kh * dh) * width + w0 + kw * dw);
          if (v != v) best = v;
        }
    }
    store<D>(out, ow, best);
  }
}

// One output element of avg_pool2d over plane `x` (H x W) at (oh, ow).
template <DType D>
float avg_pool_element(const core::Window& w, const char* x, std::int64_t height,
                       std::int64_t width, std::int64_t oh, std::int64_t ow) {
  const std::int64_t h0 = oh * w.stride[0] - w.padding[0];
  const std::int64_t w0 = ow * w.stride[1] - w.padding[1];
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
        char* out_row = op_out + static_cast<std::size_t>(r * ow_size) * element_size(D);
        if (op.kind == core::OpKind::kMaxPool2d) {
          max_pool_row<D>(w, xplane, height, width, oh, ow_size, out_row);
          continue;
        }
        for (std::int64_t ow = 0; ow < ow_size; ++ow)
          store<D>(out_row, ow, avg_pool_element<D>(w, xplane, height, width, oh, ow));
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

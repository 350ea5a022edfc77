#include "backends/cpu/scan_ops.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "backends/cpu/kernels/parallel.h"
#include "backends/movement.h"
#include "backends/scan_layout.h"
#include "backends/views.h"
#include "core/float16.h"

namespace streamfuse::backends::cpu {
namespace {

// Element i of a float dtype as a double (exact), or of an integer dtype or bool as an int64.
double load_float(const char* p, DType d, std::int64_t i) {
  if (d == kF64) {
    double v;
    std::memcpy(&v, p + i * 8, 8);
    return v;
  }
  if (d == kF32) {
    float v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  std::uint16_t h;
  std::memcpy(&h, p + i * 2, 2);
  return d == kF16 ? core::half_bits_to_float(h) : core::bf16_bits_to_float(h);
}
std::int64_t load_int(const char* p, DType d, std::int64_t i) {
  if (d == kI64) {
    std::int64_t v;
    std::memcpy(&v, p + i * 8, 8);
    return v;
  }
  if (d == kI32) {
    std::int32_t v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  if (d == kI8) return static_cast<signed char>(p[i]);
  return static_cast<unsigned char>(p[i]);  // u8, bool
}
// A float prefix sum stored in dtype d: rounded to float, then to 16 bits where d has them; f64
// stores the double.
void store_float(char* p, DType d, std::int64_t i, double v) {
  if (d == kF64) {
    std::memcpy(p + i * 8, &v, 8);
    return;
  }
  const float f = static_cast<float>(v);
  if (d == kF32) {
    std::memcpy(p + i * 4, &f, 4);
    return;
  }
  const std::uint16_t h = d == kF16 ? core::float_to_half_bits(f) : core::float_to_bf16_bits(f);
  std::memcpy(p + i * 2, &h, 2);
}

void cumsum(const ScanLayout& l, const char* x, DType in, char* out, DType to, std::int64_t begin,
            std::int64_t end) {
  for (std::int64_t line = begin; line < end; ++line) {
    const std::int64_t first = l.first(line);
    if (is_floating(in)) {
      double acc = 0;
      for (std::int64_t k = 0; k < l.size; ++k) {
        acc += load_float(x, in, first + k * l.inner);
        store_float(out, to, first + k * l.inner, acc);
      }
    } else {
      std::uint64_t acc = 0;  // wrapping
      for (std::int64_t k = 0; k < l.size; ++k) {
        acc += static_cast<std::uint64_t>(load_int(x, in, first + k * l.inner));
        const auto v = static_cast<std::int64_t>(acc);
        std::memcpy(out + (first + k * l.inner) * 8, &v, 8);
      }
    }
  }
}

// Each line's positions sorted stably by load(element) (sorts_before; descending: reversed,
// ties still in order), written along the line.
template <class Key, class Load>
void argsort(const ScanLayout& l, Load load, bool descending, std::int64_t* out, std::int64_t begin,
             std::int64_t end) {
  std::vector<Key> keys(static_cast<std::size_t>(l.size));
  std::vector<std::int64_t> order(static_cast<std::size_t>(l.size));
  const auto before = [&](std::int64_t a, std::int64_t b) {
    const Key& ka = keys[static_cast<std::size_t>(a)];
    const Key& kb = keys[static_cast<std::size_t>(b)];
    return descending ? sorts_before(kb, ka) : sorts_before(ka, kb);
  };
  for (std::int64_t line = begin; line < end; ++line) {
    const std::int64_t first = l.first(line);
    for (std::int64_t k = 0; k < l.size; ++k)
      keys[static_cast<std::size_t>(k)] = load(first + k * l.inner);
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::stable_sort(order.begin(), order.end(), before);
    for (std::int64_t k = 0; k < l.size; ++k)
      out[first + k * l.inner] = order[static_cast<std::size_t>(k)];
  }
}

}  // namespace

void run_scan(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
              TensorHandle& out, int num_threads) {
  const core::TensorDesc& xd = op.inputs[0];
  const core::TensorDesc& od = op.outputs[0];
  out = backend.allocate(od.shape, od.dtype);
  if (od.shape.numel() == 0) return;
  const TensorHandle dense = contiguous_or_copy(backend, inputs[0], xd.shape, xd.dtype);
  const char* x = static_cast<const char*>(element_ptr(dense, xd.dtype));
  char* o = static_cast<char*>(out.storage.data());
  auto* order = reinterpret_cast<std::int64_t*>(o);
  const DType in = xd.dtype;
  const bool descending = op.kind == core::OpKind::kArgsort && op.scalars[0].to_int() != 0;
  const ScanLayout l = scan_layout(xd.shape, op.attrs.axis);
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / l.size);
  parallel_for(l.lines(), grain, num_threads, [&](std::int64_t begin, std::int64_t end) {
    if (op.kind == core::OpKind::kCumsum)
      cumsum(l, x, in, o, od.dtype, begin, end);
    else if (is_floating(in))
      argsort<double>(
          l, [&](std::int64_t e) { return load_float(x, in, e); }, descending, order, begin, end);
    else
      argsort<std::int64_t>(
          l, [&](std::int64_t e) { return load_int(x, in, e); }, descending, order, begin, end);
  });
}

}  // namespace streamfuse::backends::cpu

#include "backends/cpu/scatter_ops.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/index_layout.h"
#include "backends/movement.h"
#include "backends/update.h"
#include "backends/views.h"

namespace streamfuse::backends::cpu {
namespace {

// *to += from in T's arithmetic as PyTorch's CPU scatter_add does it: 16-bit floats through
// float, rounded at each step; integers wrapping.
template <class T>
void add_element(char* to, const char* from) {
  T a, b;
  std::memcpy(&a, to, sizeof(T));
  std::memcpy(&b, from, sizeof(T));
  T sum;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    sum = T(static_cast<float>(a) + static_cast<float>(b));
  } else if constexpr (std::is_floating_point_v<T>) {
    sum = a + b;
  } else {
    using U = std::make_unsigned_t<T>;
    sum = static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  }
  std::memcpy(to, &sum, sizeof(T));
}

}  // namespace

void run_scatter(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
                 TensorHandle& out, int num_threads) {
  const core::TensorDesc& xd = op.inputs[0];
  const core::TensorDesc& id = op.inputs[1];
  const core::TensorDesc& sd = op.inputs[2];
  const TensorHandle index = contiguous_or_copy(backend, inputs[1], id.shape, id.dtype);
  const char* ip = element_ptr(index, id.dtype);
  check_indices(op, ip);
  out = claim_or_copy(backend, xd, inputs[0]);
  const std::int64_t n = id.shape.numel();
  if (n == 0) return;
  const TensorHandle src = contiguous_or_copy(backend, inputs[2], sd.shape, sd.dtype);
  const char* sp = element_ptr(src, sd.dtype);
  char* op_out = element_ptr(out, xd.dtype);
  const std::size_t bytes = element_size(xd.dtype);
  const int rank = id.shape.rank(), axis = op.attrs.axis;
  const auto index_strides = contiguous_strides(id.shape);
  const auto src_strides = contiguous_strides(sd.shape);
  const std::int64_t line_size = id.shape[axis], lines = n / line_size;
  const auto ua = static_cast<std::size_t>(axis);
  auto run = [&](auto write) {
    parallel_for(lines, std::max<std::int64_t>(1, 16384 / line_size), num_threads,
                 [&](std::int64_t begin, std::int64_t end) {
                   for (std::int64_t line = begin; line < end; ++line) {
                     std::int64_t i0 = 0, s0 = 0, o0 = 0;
                     std::int64_t rest = line;
                     for (int d = rank - 1; d >= 0; --d) {
                       if (d == axis) continue;
                       const auto u = static_cast<std::size_t>(d);
                       const std::int64_t c = rest % id.shape[d];
                       rest /= id.shape[d];
                       i0 += c * index_strides[u];
                       s0 += c * src_strides[u];
                       o0 += c * out.strides[u];
                     }
                     for (std::int64_t j = 0; j < line_size; ++j) {
                       const std::int64_t at =
                           o0 +
                           index_value(ip, id.dtype, i0 + j * index_strides[ua]) * out.strides[ua];
                       write(op_out + at * static_cast<std::int64_t>(bytes),
                             sp + (s0 + j * src_strides[ua]) * static_cast<std::int64_t>(bytes));
                     }
                   }
                 });
  };
  if (op.kind == core::OpKind::kScatter) {
    run([bytes](char* to, const char* from) { std::memcpy(to, from, bytes); });
  } else {
    visit_dtype(xd.dtype, [&](auto tag) {
      using T = decltype(tag);
      run([](char* to, const char* from) { add_element<T>(to, from); });
    });
  }
}

}  // namespace streamfuse::backends::cpu

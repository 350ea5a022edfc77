#include "backends/cpu/index_ops.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "backends/cpu/kernels/parallel.h"
#include "backends/index_layout.h"
#include "backends/movement.h"
#include "backends/views.h"

namespace streamfuse::backends::cpu {
namespace {

void copy_element(char* to, const char* from, std::size_t bytes) {
  switch (bytes) {
    case 1:
      *to = *from;
      return;
    case 2:
      std::memcpy(to, from, 2);
      return;
    case 4:
      std::memcpy(to, from, 4);
      return;
    default:
      std::memcpy(to, from, 8);
      return;
  }
}

void index_select(const core::OpDesc& op, const char* x, const char* indices, char* out,
                  int num_threads) {
  const IndexSelectLayout l = index_select_layout(op);
  const DType idx = op.inputs[1].dtype;
  const auto row = static_cast<std::size_t>(l.inner) * element_size(op.inputs[0].dtype);
  const std::int64_t rows = l.outer * l.count;
  if (row == 0) return;
  const std::int64_t grain = std::max<std::int64_t>(1, (64 << 10) / static_cast<std::int64_t>(row));
  parallel_for(rows, grain, num_threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t o = r / l.count, j = r % l.count;
      const std::int64_t from = o * l.axis_size + index_value(indices, idx, j);
      std::memcpy(out + static_cast<std::size_t>(r) * row, x + static_cast<std::size_t>(from) * row,
                  row);
    }
  });
}

void gather(const core::OpDesc& op, const char* x, const char* indices, char* out,
            int num_threads) {
  const Shape& xs = op.inputs[0].shape;
  const Shape& is = op.inputs[1].shape;
  const DType idx = op.inputs[1].dtype;
  const int rank = is.rank(), axis = op.attrs.axis;
  const std::size_t bytes = element_size(op.inputs[0].dtype);
  const std::array<std::int64_t, kMaxRank> stride = contiguous_strides(xs);
  parallel_for(is.numel(), 16384, num_threads, [&](std::int64_t begin, std::int64_t end) {
    std::array<std::int64_t, kMaxRank> at{};  // begin's coordinates in the index's shape
    for (std::int64_t d = rank - 1, rest = begin; d >= 0; --d) {
      at[static_cast<std::size_t>(d)] = rest % is[static_cast<int>(d)];
      rest /= is[static_cast<int>(d)];
    }
    for (std::int64_t p = begin; p < end; ++p) {
      std::int64_t from = 0;
      for (int d = 0; d < rank; ++d)
        from += (d == axis ? index_value(indices, idx, p) : at[static_cast<std::size_t>(d)]) *
                stride[static_cast<std::size_t>(d)];
      copy_element(out + static_cast<std::size_t>(p) * bytes,
                   x + static_cast<std::size_t>(from) * bytes, bytes);
      for (int d = rank - 1; d >= 0 && ++at[static_cast<std::size_t>(d)] == is[d]; --d)
        at[static_cast<std::size_t>(d)] = 0;
    }
  });
}

}  // namespace

void run_index(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
               TensorHandle& out, int num_threads) {
  const core::TensorDesc& xd = op.inputs[0];
  const core::TensorDesc& id = op.inputs[1];
  const core::TensorDesc& od = op.outputs[0];
  const TensorHandle indices = contiguous_or_copy(backend, inputs[1], id.shape, id.dtype);
  const char* ip = static_cast<const char*>(element_ptr(indices, id.dtype));
  check_indices(op, ip);
  out = backend.allocate(od.shape, od.dtype);
  if (od.shape.numel() == 0) return;
  const TensorHandle x = contiguous_or_copy(backend, inputs[0], xd.shape, xd.dtype);
  const char* xp = static_cast<const char*>(element_ptr(x, xd.dtype));
  char* o = static_cast<char*>(out.storage.data());
  if (op.kind == core::OpKind::kIndexSelect)
    index_select(op, xp, ip, o, num_threads);
  else
    gather(op, xp, ip, o, num_threads);
}

}  // namespace streamfuse::backends::cpu

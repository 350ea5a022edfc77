#include "jit/reduce_layout.h"

#include <algorithm>
#include <array>
#include <vector>

#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/kernels/reduce_ops.h"
#include "backends/cpu/views.h"
#include "jit/kernel_abi.h"
#include "jit/reduce_launch_memo.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {

using backends::cpu::Iteration;
using backends::cpu::Operand;
using backends::cpu::Strides;

int stage_input_load(const FusedProgram& program, std::size_t k) {
  const std::int32_t reg = program.anchor.stages[k].input;
  for (const Instruction& in : program.prologue)
    if (in.out == reg) return in.kind == InstrKind::kLoad ? in.index : -1;
  return -1;
}

namespace {

// The walk of a layout whose dimensions, strides and lanes are set (see ReduceWalk).
ReduceWalk choose_walk(const ReduceLayout& layout, int count) {
  const auto unit = [](std::int64_t stride) { return stride == 0 || stride == 1; };
  if (layout.outer_rank == 0) {  // every element: one row, in lanes where it is contiguous
    for (int lanes : layout.lanes)
      if (!lanes) return ReduceWalk::kStrided;
    return ReduceWalk::kRows;
  }
  const auto axis = static_cast<std::size_t>(layout.outer_rank);
  const auto column = static_cast<std::size_t>(layout.outer_rank - 1);
  bool rows = true, columns = true;
  for (int k = 0; k < count; ++k) {
    rows = rows && unit(layout.it.strides[static_cast<std::size_t>(k)][axis]);
    columns = columns && unit(layout.it.strides[static_cast<std::size_t>(k)][column]);
  }
  for (int lanes : layout.lanes) columns = columns && !lanes;
  return rows ? ReduceWalk::kRows : columns ? ReduceWalk::kColumns : ReduceWalk::kStrided;
}

}  // namespace

ReduceLayout make_reduce_layout(const FusedProgram& program, const Shape& shape,
                                std::span<const Operand> operands) {
  ReduceLayout layout;
  const int count = static_cast<int>(operands.size());
  const int axis = program.anchor.axis;
  if (axis != core::kAllAxes && (axis < 0 || axis >= shape.rank()))
    throw Error("internal error: a reduction over axis " + std::to_string(axis) + " of a rank " +
                std::to_string(shape.rank()) + " shape");
  const Strides* strides[backends::cpu::kMaxOperands];
  for (int k = 0; k < count; ++k) strides[k] = &operands[static_cast<std::size_t>(k)].strides;
  if (axis == core::kAllAxes) {
    backends::cpu::make_iteration(layout.it, shape, strides, count);
    if (layout.it.rank == 0) {  // one element (or none): one dimension, so the walk has a run
      layout.it.rank = 1;
      layout.it.sizes[0] = shape.numel();
      for (int k = 0; k < count; ++k) layout.it.strides[static_cast<std::size_t>(k)][0] = 0;
    }
    layout.outer_rank = 0;
    layout.inner_rank = layout.it.rank;
    layout.rows = 1;
    layout.n = shape.numel();
  } else {
    Shape outer;
    std::array<Strides, backends::cpu::kMaxOperands> outer_strides;  // no allocation per launch
    for (int d = 0; d < shape.rank(); ++d) {
      if (d == axis) continue;
      for (int k = 0; k < count; ++k)
        outer_strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(outer.rank())] =
            (*strides[k])[static_cast<std::size_t>(d)];
      outer.push_back(shape[d]);
    }
    const Strides* outer_ptrs[backends::cpu::kMaxOperands];
    for (int k = 0; k < count; ++k) outer_ptrs[k] = &outer_strides[static_cast<std::size_t>(k)];
    backends::cpu::make_iteration(layout.it, outer, outer_ptrs, count);
    layout.outer_rank = layout.it.rank;
    layout.inner_rank = 1;
    layout.rows = outer.numel();
    layout.n = shape[axis];
    const auto inner = static_cast<std::size_t>(layout.it.rank);
    layout.it.sizes[inner] = layout.n;
    for (int k = 0; k < count; ++k)
      layout.it.strides[static_cast<std::size_t>(k)][inner] =
          (*strides[k])[static_cast<std::size_t>(axis)];
    ++layout.it.rank;
    layout.it.numel = layout.rows * layout.n;
  }

  // A tensor the segment makes is contiguous: along the axis its stride is the product of the
  // dimensions after it; with every element reduced it is one run.
  std::int64_t made_stride = 1;
  if (axis != core::kAllAxes)
    for (int d = axis + 1; d < shape.rank(); ++d) made_stride *= shape[d];
  for (std::size_t k = 0; k < program.anchor.stages.size(); ++k) {
    const int in = stage_input_load(program, k);
    bool adjacent = made_stride == 1;
    if (in >= 0) {
      const Strides& s = *strides[in];
      if (axis != core::kAllAxes) {
        adjacent = s[static_cast<std::size_t>(axis)] == 1;
      } else {
        const Strides* one[1] = {&s};
        const Iteration alone = backends::cpu::make_iteration(shape, one, 1);
        adjacent = alone.rank == 0 || (alone.rank == 1 && alone.strides[0][0] == 1);
      }
    }
    layout.lanes.push_back(adjacent ? 1 : 0);
  }
  layout.walk = choose_walk(layout, count);
  return layout;
}

bool reduce_walks_well(const FusedProgram& program, std::uint64_t hash, const Shape& shape,
                       std::span<const LaunchOperand> inputs) {
  boost::container::small_vector<Operand, 16> ops;
  for (const LaunchOperand& in : inputs)
    ops.push_back(backends::cpu::broadcast_operand(*in.handle, in.shape, in.dtype, shape));
  Shape rows = shape;  // the per-row outputs' shape
  for (int d = 0; d < rows.rank(); ++d)
    if (program.anchor.axis == core::kAllAxes || d == program.anchor.axis) rows[d] = 1;
  for (const ProgramOutput& out : program.outputs) {
    Operand o;
    o.dtype = out.dtype;
    o.strides = backends::contiguous_strides(out.per_row ? rows : shape);
    for (int d = 0; d < shape.rank(); ++d)
      if (out.per_row && rows[d] != shape[d]) o.strides[static_cast<std::size_t>(d)] = 0;
    ops.push_back(o);
  }
  return ReduceLaunchMemo::layout(program, hash, shape, ops).walk != ReduceWalk::kStrided;
}

void run_reduce(const ReduceLayout& layout, std::size_t num_stages, int num_threads,
                ReduceExecutor& executor) {
  if (layout.rows == 0) return;
  const int threads = backends::cpu::max_threads(num_threads);
  const std::int64_t n = layout.n;
  if (layout.walk == ReduceWalk::kColumns) {
    // At least 64 rows per task, and ~64 KiB (the kernels tile what they are given: ends of
    // tasks cut tiles). Not a whole tile (kColumnTile): 200 columns still take two threads.
    constexpr std::int64_t kMinRowsPerTask = 64;
    const std::int64_t grain =
        std::max<std::int64_t>(kMinRowsPerTask, 16384 / std::max<std::int64_t>(n, 1));
    backends::cpu::parallel_for(
        layout.rows, grain, num_threads,
        [&](std::int64_t lo, std::int64_t hi) { executor.column_rows(lo, hi); });
    return;
  }
  if (threads <= 1 || layout.rows >= threads || n < 2 * SF_REDUCE_BLOCK) {
    // Whole rows: enough of them per task that a task reads ~64 KiB.
    const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(n, 1));
    backends::cpu::parallel_for(
        layout.rows, grain, num_threads,
        [&](std::int64_t lo, std::int64_t hi) { executor.whole_rows(lo, hi); });
    return;
  }
  const std::int64_t blocks = sf_reduce_blocks(n);
  std::vector<unsigned char> partials(static_cast<std::size_t>(blocks) * kCpuReduceAccBytes);
  std::vector<std::int64_t> results(num_stages, 0);
  for (std::int64_t row = 0; row < layout.rows; ++row) {
    for (std::size_t k = 0; k < num_stages; ++k) {
      backends::cpu::parallel_for(blocks, 1, num_threads, [&](std::int64_t lo, std::int64_t hi) {
        executor.stage_blocks(row, static_cast<int>(k), lo, hi, partials.data(), results.data());
      });
      executor.merge_stage(row, static_cast<int>(k), partials.data(), results.data());
    }
    backends::cpu::parallel_for(n, 16384, num_threads, [&](std::int64_t lo, std::int64_t hi) {
      executor.outputs(row, lo, hi, results.data());
    });
  }
}

}  // namespace streamfuse::jit

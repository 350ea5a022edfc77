// ReduceRunner's column tiles (jit/reduce_runner.h, ReduceWalk::kColumns): up to kTile
// consecutive rows strided along the axis, column_steps_ steps along it per pass, each row
// folding its values in order as the unfused reduction of a strided row does.
#include "jit/reduce_runner.h"

#include "core/scalar_ops.h"
#include "jit/kernel_abi.h"

// Prelude text (sf_reduce_blocks): it includes nothing and needs core/scalar_ops.h before it.
#include "core/reduce_math.h"

namespace streamfuse::jit {

using backends::cpu::FoldFns;
using backends::cpu::Operand;

namespace {

// Rows a tile walks together: a register's worth, so that a pass reads each operand's step as one
// run of up to kChunk values (4 KiB of f32), in place where the run is dense. Tiles of 64 rows (the
// compiled kernels' tile then) read 256-byte pieces 16 KiB apart for a [4096, 4096] operand, and
// the interpreted x - mean(x, 0) took 3.7x the unfused ops' time. Tiles of fewer than
// kMinInPlaceTile rows, and tiles whose steps follow one another in memory, take several steps per
// pass (column_steps_): a register holds a value per row of the tile and step, gathered and
// scattered piece by piece where the steps do not adjoin. Other tiles take one step per pass, read
// and written in place: in several steps per pass, the interpreted x - mean(x, 0) on [32768, 512]
// (tiles of 256) took 1.56x the time, and with one step per pass softmax(x, 1) on [64, 512, 256]
// (whose steps adjoin) 1.05x its time in several. Results do not depend on the tile: every row
// folds its own values in order.
constexpr std::int64_t kTile = kChunk;
constexpr std::int64_t kMinInPlaceTile = 256;
// Steps along the axis a pass asks for the memory of ahead of the step it reads, at least (the
// compiled kernels' distance).
constexpr std::int64_t kPrefetchSteps = 8;

}  // namespace

// Column tiles: up to kTile consecutive rows along the innermost outer dimension (tile_:
// one value per row), and spans of column_steps_ steps along the axis of such a tile (span_:
// step-major, a value per row and step).
void ReduceRunner::prepare_columns() {
  const auto column = static_cast<std::size_t>(layout_.outer_rank - 1);
  const auto axis = static_cast<std::size_t>(layout_.outer_rank);
  tile_.rank = 1;
  span_.rank = 2;
  tile_.num_operands = span_.num_operands = static_cast<int>(operands_.size());
  axis_bytes_.clear();
  for (std::size_t k = 0; k < operands_.size(); ++k) {
    tile_.strides[k][0] = span_.strides[k][1] = layout_.it.strides[k][column];
    span_.strides[k][0] = layout_.it.strides[k][axis];
    axis_bytes_.push_back(layout_.it.strides[k][axis] *
                          static_cast<std::int64_t>(element_size(operands_[k].dtype)));
  }
}

// Whether each operand's steps of a tile of tlen rows follow one another in memory (a step's
// values are a run and the next step's start where it ends), so that a span of several steps is
// read and written in place as one run. Operands the same for every row and step do not count.
bool ReduceRunner::steps_adjoin(std::int64_t tlen) const {
  for (int k = 0; k < span_.num_operands; ++k) {
    const std::int64_t axis = span_.strides[k][0], column = span_.strides[k][1];
    if ((axis != 0 || column != 0) && (column != 1 || axis != tlen)) return false;
  }
  return true;
}

// Rows [begin, end) by column tiles (ReduceWalk::kColumns): a step along the axis at a time,
// each of a tile's rows folding its values in order.
void ReduceRunner::column_rows(std::int64_t begin, std::int64_t end) {
  prepare_columns();
  const std::int64_t columns = layout_.it.sizes[static_cast<std::size_t>(layout_.outer_rank - 1)];
  const std::size_t stages = p_.anchor.stages.size();
  std::vector<std::int64_t> results(stages * std::size_t{kTile});
  for (std::int64_t row = begin; row < end;) {
    const std::int64_t tlen = std::min({kTile, columns - row % columns, end - row});
    set_row(row);
    tile_.sizes[0] = span_.sizes[1] = tlen;
    tile_.numel = tlen;
    // Steps that adjoin are one stream, which the hardware's prefetchers follow.
    const bool adjoin = steps_adjoin(tlen);
    column_steps_ = tlen < kMinInPlaceTile || adjoin ? kChunk / tlen : 1;
    prefetch_ahead_ = adjoin ? 0 : std::max<std::int64_t>(2 * column_steps_, kPrefetchSteps);
    for (std::size_t k = 0; k < stages; ++k) {
      column_group(k, results.data(), tlen);
      column_stage(k, results.data() + k * std::size_t{kTile}, tlen);
    }
    column_group(stages, results.data(), tlen);
    column_outputs(tlen);
    row += tlen;
  }
}

// The per-row code of group g over a tile of tlen rows: a per-row register holds its value
// for each row, repeated for each step of a span (so that element code reads it by position).
void ReduceRunner::column_group(std::size_t g, const std::int64_t* results, std::int64_t tlen) {
  for (std::size_t i : plan_.row_code[g]) {
    const Instruction& in = p_.epilogue[i];
    const std::size_t size = value_size(plan_.types[static_cast<std::size_t>(in.out)]);
    switch (in.kind) {
      case InstrKind::kScalar:
        continue;
      case InstrKind::kReduced:
        for (std::int64_t t = 0; t < tlen; ++t)
          std::memcpy(
              reg(in.out) + t * static_cast<std::int64_t>(size),
              &results[static_cast<std::size_t>(in.index * kTile) + static_cast<std::size_t>(t)],
              size);
        break;
      case InstrKind::kLoad:
        chunk_.gather(tile_, row_ops_[static_cast<std::size_t>(in.index)], in.index,
                      storage_dtype_of(in.type), 0, tlen, reg(in.out));
        break;
      default:
        run_step(in, plan_.epilogue_fns[i], chunk_, plan_.types, reg_fn(), tlen);
        break;
    }
    const std::int64_t bytes = tlen * static_cast<std::int64_t>(size);
    for (std::int64_t s = 1; s < column_steps_; ++s)
      std::memcpy(reg(in.out) + s * bytes, reg(in.out), static_cast<std::size_t>(bytes));
  }
}

// Operand k at step jj along the axis of the tile's first row.
Operand ReduceRunner::step_operand(std::size_t k, std::int64_t jj) const {
  Operand o = row_ops_[k];
  o.data += jj * axis_bytes_[k];
  return o;
}

// Asks for operand k's values of steps [jj, jj + steps), prefetch_ahead_ steps further on, where
// each step's are a run of memory (to read them, or an output's to write them). A pass reads a
// piece of each step, the next step's a whole stride of the axis further, which the hardware's
// prefetchers follow poorly: the interpreted x - mean(x, 0) on [32768, 512] spent 59% of its time
// waiting in the loads of those pieces (bench/README.md "Column reductions"). A prefetch past the
// operand's end is harmless.
void ReduceRunner::prefetch_steps(std::size_t k, std::int64_t jj, std::int64_t steps,
                                  std::int64_t tlen, bool write) const {
  if (prefetch_ahead_ == 0 || tile_.strides[k][0] != 1 || axis_bytes_[k] == 0) return;
  const std::int64_t bytes = tlen * static_cast<std::int64_t>(element_size(operands_[k].dtype));
  const char* step = row_ops_[k].data + (jj + prefetch_ahead_) * axis_bytes_[k];
  for (std::int64_t s = 0; s < steps; ++s, step += axis_bytes_[k])
    for (std::int64_t o = 0; o < bytes; o += 64)
      write ? __builtin_prefetch(step + o, 1) : __builtin_prefetch(step + o);
}

// Per-element instructions `code` over steps [jj, jj + steps) of the tile's rows (span_'s
// order: step-major).
void ReduceRunner::column_pass(const std::vector<std::size_t>& code, std::int64_t jj,
                               std::int64_t steps) {
  span_.sizes[0] = steps;
  span_.numel = steps * span_.sizes[1];
  for (std::size_t i : code) {
    const Instruction& in = p_.prologue[i];
    if (in.kind == InstrKind::kLoad) {
      prefetch_steps(static_cast<std::size_t>(in.index), jj, steps, span_.sizes[1]);
      const Operand operand = step_operand(static_cast<std::size_t>(in.index), jj);
      unsigned char*& at = regs_[static_cast<std::size_t>(in.out)];
      at =
          in_place_values(in, operand, span_, plan_.is_output[static_cast<std::size_t>(in.out)], 0);
      if (!at) {
        at = slots_[static_cast<std::size_t>(in.out)];
        chunk_.gather(span_, operand, in.index, storage_dtype_of(in.type), 0, span_.numel, at);
      }
    } else if (in.kind != InstrKind::kScalar)
      run_step(in, plan_.prologue_fns[i], chunk_, plan_.types, reg_fn(), span_.numel);
  }
}

// Stage k over the tile, block by block, each row's values folded in order, into results[t].
void ReduceRunner::column_stage(std::size_t k, std::int64_t* results, std::int64_t tlen) {
  const FoldFns& f = *plan_.folds[k];
  alignas(64) unsigned char acc[kTile * backends::cpu::kFoldAccBytes];
  alignas(64) unsigned char part[kTile * backends::cpu::kFoldAccBytes];
  const std::int32_t input = p_.anchor.stages[k].input;
  const std::int64_t bytes =
      tlen * static_cast<std::int64_t>(value_size(plan_.types[static_cast<std::size_t>(input)]));
  f.column_identity(acc, tlen);
  for (std::int64_t b = 0, blocks = sf_reduce_blocks(layout_.n); b < blocks; ++b) {
    const std::int64_t start = b * SF_REDUCE_BLOCK;
    const std::int64_t stop = start + sf_reduce_block_len(layout_.n, b);
    f.column_identity(part, tlen);
    for (std::int64_t jj = start; jj < stop; jj += column_steps_) {
      const std::int64_t steps = std::min(column_steps_, stop - jj);
      column_pass(plan_.stage_code[k], jj, steps);
      for (std::int64_t s = 0; s < steps; ++s)
        f.column_step(part, reg(input) + s * bytes, tlen, jj + s);
    }
    f.column_merge(acc, part, tlen);
  }
  f.column_finish(acc, tlen, layout_.n, results);
}

// The tile's outputs: every element's, a span at a time, then every row's.
void ReduceRunner::column_outputs(std::int64_t tlen) {
  const std::size_t ni = p_.inputs.size();
  for (std::int64_t jj = 0; jj < layout_.n; jj += column_steps_) {
    column_pass(plan_.output_code, jj, std::min(column_steps_, layout_.n - jj));
    for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
      if (p_.outputs[o].per_row) continue;
      const std::size_t k = ni + o;
      prefetch_steps(k, jj, span_.sizes[0], span_.sizes[1], /*write=*/true);
      chunk_.scatter(span_, step_operand(k, jj), static_cast<int>(k),
                     storage_dtype_of(plan_.types[static_cast<std::size_t>(p_.outputs[o].reg)]), 0,
                     span_.numel, reg(p_.outputs[o].reg));
    }
  }
  for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
    if (!p_.outputs[o].per_row) continue;
    const std::size_t k = ni + o;
    chunk_.scatter(tile_, row_ops_[k], static_cast<int>(k),
                   storage_dtype_of(plan_.types[static_cast<std::size_t>(p_.outputs[o].reg)]), 0,
                   tlen, reg(p_.outputs[o].reg));
  }
}

}  // namespace streamfuse::jit

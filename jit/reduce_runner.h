// The interpreter's state for programs with a reduction anchor (jit/reduce_interpreter.cpp runs
// it over a launch's rows): what a program's rows run, worked out once per program (ReducePlan),
// and one thread's registers and the operands of the row or column tile it works on
// (ReduceRunner). Rows: jit/reduce_runner.cpp; column tiles: jit/reduce_column_runner.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"
#include "jit/interpreter_step.h"
#include "jit/program.h"
#include "jit/reduce_layout.h"

namespace streamfuse::jit {

// What a program's rows run: the same for every launch of the program (the interpreter keeps one
// per thread and program).
struct ReducePlan {
  std::vector<ValueType> types;                      // per register
  std::vector<std::size_t> needs;                    // per register: stages that must have run
  std::vector<backends::cpu::ChunkFn> prologue_fns;  // per prologue instruction (kOp)
  std::vector<backends::cpu::ChunkFn> epilogue_fns;  // per epilogue instruction (kOp)
  std::vector<std::vector<std::size_t>> stage_code;  // per stage: prologue instructions
  std::vector<std::size_t> output_code;              // prologue instructions of the outputs
  // The same for row_batch, whose rows one pass covers, so every value an earlier pass
  // computed is still in its register: each pass runs only what no earlier one ran (a layer
  // norm after a GELU computes erf once per element, not three times).
  std::vector<std::vector<std::size_t>> stage_code_one_pass;
  std::vector<std::size_t> output_code_one_pass;
  std::vector<std::vector<std::size_t>> row_code;  // per group g: epilogue instructions
  // Per register: whether per-element code reads it (a prologue instruction, a stage or an
  // element output). Only such per-row values are repeated along the row; the rest are read
  // at their row's first position only (by per-row code and per-row outputs).
  std::vector<char> element_read;
  std::vector<char> is_output;  // per register: whether an output stores it
  // Per register: whether it holds a row's value of its own (an epilogue register other than a
  // scalar). row_batch computes such values for its rows at once, one per row, in a slot of
  // their own (ReduceRunner::row_values).
  std::vector<char> row_value;
  std::vector<const backends::cpu::FoldFns*> folds;  // per stage
};

// The plan of `p` (throws an internal Error where the kernel table lacks a loop or fold).
ReducePlan make_reduce_plan(const FusedProgram& p, const backends::cpu::KernelTable& kernels);

// One thread's registers and the operands of the row (or column tile) it works on.
class ReduceRunner {
  using Iteration = backends::cpu::Iteration;
  using Operand = backends::cpu::Operand;

  unsigned char* reg(std::int32_t r) const { return regs_[static_cast<std::size_t>(r)]; }
  auto reg_fn() const {
    return [this](std::int32_t r) { return reg(r); };
  }

 public:
  // `span`: the most positions a pass of this runner reads (row_span(layout) along rows,
  // kChunk for column tiles): registers hold that many values, not kChunk, so that a launch
  // over short rows neither allocates nor fills 8 KiB per register (a [4, 32] layer norm and
  // GELU: 19 registers, 152 KiB allocated and freed per launch, each free consolidating the
  // heap).
  // What a runner runs, which decides what it sets up: batches of short rows (row_batch), whole
  // rows or their blocks (whole_row, set_row), or column tiles (column_rows).
  enum class Walk : unsigned char { kRowBatches, kWholeRows, kColumnTiles };
  ReduceRunner(const FusedProgram& p, const ReducePlan& plan, const ReduceLayout& layout,
               std::span<const Operand> operands, std::span<const std::int64_t> scalars,
               const backends::cpu::ChunkOps& chunk, std::int64_t span, Walk walk);
  // The positions a pass along a row reads at most.
  static std::int64_t row_span(const ReduceLayout& layout) {
    return std::min(kChunk, std::max<std::int64_t>(layout.n, 1));
  }

  // Whether row_batch runs this launch's rows (ReduceWalk::kRows): rows of one pass (one block,
  // one chunk, not empty), whose values stay in their registers from pass to pass. Longer or
  // empty rows run by whole_row.
  static bool batches(const ReduceLayout& layout) { return layout.n >= 1 && layout.n <= kChunk; }
  // How many of `rows` rows row_batch runs at once (batches() holds): up to kBatchRows, as many
  // as fit in a chunk. Registers then hold batch_rows * n positions.
  static std::int64_t batch_rows(const ReduceLayout& layout, std::int64_t rows) {
    return std::clamp<std::int64_t>(std::min(kChunk / layout.n, rows), 1, kBatchRows);
  }
  // Rows [row, row + count) of a launch that batches(), count <= batch_rows(), by a runner
  // made for kRowBatches: every pass of per-element code runs over all of them at once (each
  // instruction's loop over count * n values instead of count loops over n: a [4, 32] layer
  // norm dispatched every instruction per row), each pass runs only what earlier passes did not
  // (a layer norm after a GELU computes erf once per element), each stage's rows fold by one
  // call, each on its own as stage() folds a row of one block, and the per-row code runs each
  // instruction once for all the rows (row_values).
  void row_batch(std::int64_t row, std::int64_t count);

  void set_row(std::int64_t row);

  // The per-row code of groups 0 .. upto of the row set_row() chose, given its stage results
  // (kWholeRows).
  void row_groups(std::size_t upto, const std::int64_t* results) {
    for (std::size_t g = 0; g <= upto; ++g) row_code(g, row_, 1, results, 0);
  }

  // Stage k's accumulator of block b of the row (the row's code up to stage k has run).
  void fold_block(std::size_t k, std::int64_t b, void* acc);

  // Stage k of the row, every block, into results[k].
  void stage(std::size_t k, std::int64_t* results);

  // Per-element outputs of elements [begin, end) of the row (every row group has run).
  void outputs(std::int64_t begin, std::int64_t end) {
    outputs(plan_.output_code, inner_, row_ops_, begin, end);
  }
  // The per-row outputs of the row set_row() chose (kWholeRows).
  void row_outputs() { row_outputs(row_, 1); }

  // Rows [begin, end) by column tiles (ReduceWalk::kColumns): a step along the axis at a time,
  // each of a tile's rows folding its values in order.
  void column_rows(std::int64_t begin, std::int64_t end);

  void whole_row(std::int64_t row);

 private:
  static constexpr std::int64_t kBatchRows = 64;

  // Register r holds `value` (of its type) in positions [from, from + count).
  void splat(std::int32_t r, const void* value, std::int64_t count, std::int64_t from = 0);
  // The outputs computed by `code` for flat elements [begin, end) of iteration `it` over
  // `operands`.
  void outputs(const std::vector<std::size_t>& code, const Iteration& it,
               std::span<const Operand> operands, std::int64_t begin, std::int64_t end);
  template <class Bits>
  void fill(std::int32_t r, const void* value, std::int64_t count, std::int64_t from) {
    Bits v;
    std::memcpy(&v, value, sizeof v);
    std::fill_n(reinterpret_cast<Bits*>(reg(r)) + from, count, v);
  }
  // Register r's per-row values: one per row of a batch (or the one row), in order. A scalar's
  // are its own slot (filled by the constructor).
  unsigned char* row_values(std::int32_t r) const {
    return plan_.row_value[static_cast<std::size_t>(r)]
               ? slots_[static_cast<std::size_t>(p_.num_registers + r)]
               : reg(r);
  }
  // The per-row code of group g for rows [row, row + count), each instruction once for all of
  // them, into row_values; row t's stage results are at results + t * stride. A value that
  // per-element code reads is then repeated along its row (register positions t * n on, as far
  // as a pass reads).
  void row_code(std::size_t g, std::int64_t row, std::int64_t count, const std::int64_t* results,
                std::size_t stride);
  // The per-row outputs of rows [row, row + count), from row_values.
  void row_outputs(std::int64_t row, std::int64_t count);
  // tile_, span_ and axis_bytes_, for column_rows.
  void prepare_columns();
  // The per-row code of group g over a tile of tlen rows: a per-row register holds its value
  // for each row, repeated for each step of a span (so that element code reads it by position).
  void column_group(std::size_t g, const std::int64_t* results, std::int64_t tlen);
  // Operand k at step jj along the axis of the tile's first row.
  Operand step_operand(std::size_t k, std::int64_t jj) const;
  // Per-element instructions `code` over steps [jj, jj + steps) of the tile's rows (span_'s
  // order: step-major).
  void column_pass(const std::vector<std::size_t>& code, std::int64_t jj, std::int64_t steps);
  // Whether every operand's steps of a tile of tlen rows adjoin in memory (column_rows).
  bool steps_adjoin(std::int64_t tlen) const;
  // Prefetches operand k's values of steps [jj, jj + steps) of a tile of tlen rows,
  // prefetch_ahead_ steps further on.
  void prefetch_steps(std::size_t k, std::int64_t jj, std::int64_t steps, std::int64_t tlen,
                      bool write = false) const;
  // Stage k over the tile, block by block, each row's values folded in order, into results[t].
  void column_stage(std::size_t k, std::int64_t* results, std::int64_t tlen);
  // The tile's outputs: every element's, a span at a time, then every row's.
  void column_outputs(std::int64_t tlen);

  // Per-element instructions `code` for elements [j, j + m) of the row.
  void pass(const std::vector<std::size_t>& code, std::int64_t j, std::int64_t m);
  // The same for flat elements [j, j + m) of iteration `it` over `operands`.
  void pass(const std::vector<std::size_t>& code, const Iteration& it,
            std::span<const Operand> operands, std::int64_t j, std::int64_t m);

  const FusedProgram& p_;
  const ReducePlan& plan_;
  const ReduceLayout& layout_;
  std::span<const Operand> operands_;
  const backends::cpu::ChunkOps& chunk_;
  // kWholeRows and kColumnTiles: the row set_row() chose, its operands and (kWholeRows) its
  // inner dimensions. kRowBatches and kWholeRows: the launch's rows, one value each (per-row
  // loads and outputs).
  std::int64_t row_ = 0;
  boost::container::small_vector<Operand, 8> row_ops_;
  Iteration inner_;
  Iteration rows_;
  Iteration tile_;                 // a column tile's rows (its size: the tile's)
  Iteration span_;                 // steps along the axis of a tile's rows
  std::int64_t column_steps_ = 1;  // steps a column pass computes: kChunk / the tile's rows
  // How many steps ahead column passes prefetch their operands' steps (the pass after next's, at
  // least kPrefetchSteps), 0 where a tile's steps adjoin (one stream the hardware follows).
  std::int64_t prefetch_ahead_ = 0;
  boost::container::small_vector<std::int64_t, 8> axis_bytes_;  // per operand: bytes of a step
                                                                // along the axis
  std::int64_t span_positions_;                                 // the constructor's span
  // The registers (made at every launch and thread), then, but for kColumnTiles, a slot per
  // register for its per-row values (row_values).
  Slots slots_;
  // Where each register's values are: its slot, or, for a load of an operand that lies in the
  // pass's order in its own dtype, the operand's memory itself (pass()).
  boost::container::small_vector<unsigned char*, 32> regs_;
};

}  // namespace streamfuse::jit

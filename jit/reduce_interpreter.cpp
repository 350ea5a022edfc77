// The interpreter of programs with a reduction anchor: rows of the iteration, each run as the
// program says (per-row code, per-element code over L1-sized chunks of the row folded into each
// stage's accumulator, then the outputs), through the eager kernels' own loops and the one
// reduction template, so results equal unfused ones bit for bit.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "core/scalar_ops.h"
#include "jit/interpreter.h"
#include "jit/interpreter_step.h"
#include "jit/kernel_abi.h"
#include "jit/reduce_program.h"
#include "streamfuse/error.h"

// Prelude text (sf_reduce_blocks): it includes nothing and needs core/scalar_ops.h before it.
#include "core/reduce_math.h"

namespace streamfuse::jit {

using backends::cpu::ChunkFn;
using backends::cpu::Iteration;
using backends::cpu::Operand;

namespace {

// Steps along the axis a column pass computes at once: a register holds a value per row of a
// tile and step.
constexpr std::int64_t kColumnSteps = kChunk / kColumnTile;

using backends::cpu::FoldFns;
constexpr std::size_t kFoldBytes = backends::cpu::kFoldStateBytes;
static_assert(backends::cpu::kFoldAccBytes == kCpuReduceAccBytes);

// Stage st's fold, from the kernel table (compiled for this CPU's ISA level).
const FoldFns& fold_of(const ReduceStage& st, const backends::cpu::KernelTable& kernels) {
  const FoldFns* f = kernels.chunk.fold(st.op, storage_dtype_of(value_type_of(st.dtype)));
  if (!f)
    throw Error("internal error: no fold for " + std::string(core::op_name(st.op)) + " of " +
                std::string(dtype_name(st.dtype)));
  return *f;
}

// What a program's rows run, worked out once per launch.
struct Plan {
  std::vector<ValueType> types;                      // per register
  std::vector<std::size_t> needs;                    // per register: stages that must have run
  std::vector<ChunkFn> prologue_fns;                 // per prologue instruction (kOp)
  std::vector<ChunkFn> epilogue_fns;                 // per epilogue instruction (kOp)
  std::vector<std::vector<std::size_t>> stage_code;  // per stage: prologue instructions
  std::vector<std::size_t> output_code;              // prologue instructions of the outputs
  std::vector<std::vector<std::size_t>> row_code;    // per group g: epilogue instructions
  std::vector<const FoldFns*> folds;                 // per stage
};

ChunkFn op_fn(const Instruction& in, const backends::cpu::KernelTable& kernels) {
  if (in.kind != InstrKind::kOp) return nullptr;
  ChunkFn fn = kernels.chunk.op(in.op, storage_dtype_of(in.type));
  if (!fn)
    throw Error(std::string("internal error: no interpreter loop for ") +
                std::string(core::op_name(in.op)) + " on " + value_type_name(in.type));
  return fn;
}

Plan make_plan(const FusedProgram& p, const backends::cpu::KernelTable& kernels) {
  Plan plan;
  plan.types = p.register_types();
  plan.needs = stages_needed(p);
  for (const Instruction& in : p.prologue) plan.prologue_fns.push_back(op_fn(in, kernels));
  for (const Instruction& in : p.epilogue) plan.epilogue_fns.push_back(op_fn(in, kernels));
  for (const ReduceStage& st : p.anchor.stages) {
    plan.stage_code.push_back(prologue_closure(p, std::span(&st.input, 1)));
    plan.folds.push_back(&fold_of(st, kernels));
  }
  std::vector<std::int32_t> outs;
  for (const ProgramOutput& o : p.outputs)
    if (!o.per_row) outs.push_back(o.reg);
  plan.output_code = prologue_closure(p, outs);
  plan.row_code.resize(p.anchor.stages.size() + 1);
  for (std::size_t i = 0; i < p.epilogue.size(); ++i)
    plan.row_code[plan.needs[static_cast<std::size_t>(p.epilogue[i].out)]].push_back(i);
  return plan;
}

// One thread's registers and the operands of the row it works on.
class RowRunner {
  unsigned char* reg(std::int32_t r) const {
    return base_ + static_cast<std::size_t>(r) * kSlotBytes;
  }
  auto reg_fn() const {
    return [this](std::int32_t r) { return reg(r); };
  }

 public:
  RowRunner(const FusedProgram& p, const Plan& plan, const ReduceLayout& layout,
            std::span<const Operand> operands, std::span<const std::int64_t> scalars,
            const backends::cpu::ChunkOps& chunk)
      : p_(p),
        plan_(plan),
        layout_(layout),
        operands_(operands),
        chunk_(chunk),
        row_ops_(operands.begin(), operands.end()),
        storage_(static_cast<std::size_t>(p.num_registers) * kSlotBytes + 64) {
    base_ = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<std::uintptr_t>(storage_.data()) + 63) & ~std::uintptr_t{63});
    // The rows' inner dimensions, for gathers and scatters along a row.
    inner_.rank = layout.inner_rank;
    inner_.num_operands = static_cast<int>(operands.size());
    inner_.numel = layout.n;
    // A per-row value's one position, which the row's first element has (also where the row
    // has none: a reduction over an empty axis still has its results to store).
    point_.rank = 1;
    point_.num_operands = inner_.num_operands;
    point_.numel = 1;
    point_.sizes[0] = 1;
    for (std::size_t k = 0; k < operands.size(); ++k) point_.strides[k][0] = 0;
    for (int d = 0; d < layout.inner_rank; ++d) {
      const auto from = static_cast<std::size_t>(layout.outer_rank + d);
      inner_.sizes[static_cast<std::size_t>(d)] = layout.it.sizes[from];
      for (std::size_t k = 0; k < operands.size(); ++k)
        inner_.strides[k][static_cast<std::size_t>(d)] = layout.it.strides[k][from];
    }
    // Column tiles: up to kColumnTile consecutive rows along the innermost outer dimension
    // (tile_: one value per row), and spans of kColumnSteps steps along the axis of such a tile
    // (span_: step-major, a value per row and step).
    if (layout.outer_rank > 0) {
      const auto column = static_cast<std::size_t>(layout.outer_rank - 1);
      const auto axis = static_cast<std::size_t>(layout.outer_rank);
      tile_.rank = 1;
      span_.rank = 2;
      tile_.num_operands = span_.num_operands = inner_.num_operands;
      for (std::size_t k = 0; k < operands.size(); ++k) {
        tile_.strides[k][0] = span_.strides[k][1] = layout.it.strides[k][column];
        span_.strides[k][0] = layout.it.strides[k][axis];
        axis_bytes_.push_back(layout.it.strides[k][axis] *
                              static_cast<std::int64_t>(element_size(operands[k].dtype)));
      }
    }
    for (const std::vector<Instruction>* block : p.blocks())
      for (const Instruction& in : *block)
        if (in.kind == InstrKind::kScalar)
          splat(in.out, &scalars[static_cast<std::size_t>(in.index)]);
  }

  void set_row(std::int64_t row) {
    std::int64_t rest = row;
    std::int64_t index[kMaxRank] = {};
    for (int d = layout_.outer_rank - 1; d >= 0; --d) {
      const std::int64_t size = layout_.it.sizes[static_cast<std::size_t>(d)];
      index[d] = rest % size;
      rest /= size;
    }
    for (std::size_t k = 0; k < operands_.size(); ++k) {
      std::int64_t offset = 0;
      for (int d = 0; d < layout_.outer_rank; ++d)
        offset += index[d] * layout_.it.strides[k][static_cast<std::size_t>(d)];
      row_ops_[k].data =
          operands_[k].data + offset * static_cast<std::int64_t>(element_size(operands_[k].dtype));
    }
  }

  // The per-row code that needs exactly `group` stages, given their results.
  void row_group(std::size_t group, const std::int64_t* results) {
    for (std::size_t i : plan_.row_code[group]) {
      const Instruction& in = p_.epilogue[i];
      switch (in.kind) {
        case InstrKind::kScalar:
          break;
        case InstrKind::kReduced:
          splat(in.out, &results[in.index], row_span());
          break;
        case InstrKind::kLoad:
          chunk_.gather(point_, row_ops_[static_cast<std::size_t>(in.index)], in.index,
                        storage_dtype_of(in.type), 0, 1, reg(in.out));
          splat(in.out, reg(in.out), row_span());
          break;
        default:
          run_step(in, plan_.epilogue_fns[i], chunk_, plan_.types, reg_fn(), 1);
          splat(in.out, reg(in.out), row_span());
          break;
      }
    }
  }
  void row_groups(std::size_t upto, const std::int64_t* results) {
    for (std::size_t g = 0; g <= upto; ++g) row_group(g, results);
  }

  // Stage k's accumulator of block b of the row (the row's code up to stage k has run).
  void fold_block(std::size_t k, std::int64_t b, void* acc) {
    const FoldFns& f = *plan_.folds[k];
    const std::int64_t start = b * SF_REDUCE_BLOCK, len = sf_reduce_block_len(layout_.n, b);
    alignas(64) unsigned char state[kFoldBytes];
    f.begin(state, layout_.lanes[k], len, start);
    const std::int32_t input = p_.anchor.stages[k].input;
    for (std::int64_t c = 0; c < len; c += kChunk) {
      const std::int64_t m = std::min(kChunk, len - c);
      pass(plan_.stage_code[k], start + c, m);
      f.push(state, reg(input), m);
    }
    f.result(state, acc);
  }

  // Stage k of the row, every block, into results[k].
  void stage(std::size_t k, std::int64_t* results) {
    const FoldFns& f = *plan_.folds[k];
    alignas(16) unsigned char acc[kCpuReduceAccBytes], part[kCpuReduceAccBytes];
    f.identity(acc);
    for (std::int64_t b = 0, blocks = sf_reduce_blocks(layout_.n); b < blocks; ++b) {
      fold_block(k, b, part);
      f.merge(acc, part);
    }
    results[k] = f.finish(acc, layout_.n);
  }

  // Per-element outputs of elements [begin, end) of the row (every row group has run).
  void outputs(std::int64_t begin, std::int64_t end) {
    const std::size_t ni = p_.inputs.size();
    for (std::int64_t j = begin; j < end; j += kChunk) {
      const std::int64_t m = std::min(kChunk, end - j);
      pass(plan_.output_code, j, m);
      for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
        if (p_.outputs[o].per_row) continue;
        const int k = static_cast<int>(ni + o);
        chunk_.scatter(inner_, row_ops_[static_cast<std::size_t>(k)], k,
                       storage_dtype_of(plan_.types[static_cast<std::size_t>(p_.outputs[o].reg)]),
                       j, m, reg(p_.outputs[o].reg));
      }
    }
  }
  void row_outputs() {
    const std::size_t ni = p_.inputs.size();
    for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
      if (!p_.outputs[o].per_row) continue;
      const int k = static_cast<int>(ni + o);
      chunk_.scatter(point_, row_ops_[static_cast<std::size_t>(k)], k,
                     storage_dtype_of(plan_.types[static_cast<std::size_t>(p_.outputs[o].reg)]), 0,
                     1, reg(p_.outputs[o].reg));
    }
  }

  // Rows [begin, end) by column tiles (ReduceWalk::kColumns): a step along the axis at a time,
  // each of a tile's rows folding its values in order.
  void column_rows(std::int64_t begin, std::int64_t end) {
    const std::int64_t columns = layout_.it.sizes[static_cast<std::size_t>(layout_.outer_rank - 1)];
    const std::size_t stages = p_.anchor.stages.size();
    std::vector<std::int64_t> results(stages * std::size_t{kColumnTile});
    for (std::int64_t row = begin; row < end;) {
      const std::int64_t tlen =
          std::min({std::int64_t{kColumnTile}, columns - row % columns, end - row});
      set_row(row);
      tile_.sizes[0] = span_.sizes[1] = tlen;
      tile_.numel = tlen;
      for (std::size_t k = 0; k < stages; ++k) {
        column_group(k, results.data(), tlen);
        column_stage(k, results.data() + k * std::size_t{kColumnTile}, tlen);
      }
      column_group(stages, results.data(), tlen);
      column_outputs(tlen);
      row += tlen;
    }
  }

  void whole_row(std::int64_t row) {
    set_row(row);
    std::int64_t results[kMaxReduceStages] = {};
    const std::size_t stages = p_.anchor.stages.size();
    for (std::size_t k = 0; k < stages; ++k) {
      row_group(k, results);
      stage(k, results);
    }
    row_group(stages, results);
    outputs(0, layout_.n);
    row_outputs();
  }

 private:
  // Register r holds `value` (of its type) in its first `count` positions.
  void splat(std::int32_t r, const void* value, std::int64_t count = kChunk) {
    switch (value_size(plan_.types[static_cast<std::size_t>(r)])) {
      case 1:
        fill<std::uint8_t>(r, value, count);
        break;
      case 2:
        fill<std::uint16_t>(r, value, count);
        break;
      case 4:
        fill<std::uint32_t>(r, value, count);
        break;
      default:
        fill<std::uint64_t>(r, value, count);
        break;
    }
  }
  // The positions a pass over a row reads (a per-row value is splatted once per row; filling a
  // whole slot for a short row had cost 23 stores per element of a softmax of rows of 128).
  std::int64_t row_span() const { return std::min(kChunk, std::max<std::int64_t>(layout_.n, 1)); }
  template <class Bits>
  void fill(std::int32_t r, const void* value, std::int64_t count) {
    Bits v;
    std::memcpy(&v, value, sizeof v);
    std::fill_n(reinterpret_cast<Bits*>(reg(r)), count, v);
  }
  // The per-row code of group g over a tile of tlen rows: a per-row register holds its value
  // for each row, repeated for each step of a span (so that element code reads it by position).
  void column_group(std::size_t g, const std::int64_t* results, std::int64_t tlen) {
    for (std::size_t i : plan_.row_code[g]) {
      const Instruction& in = p_.epilogue[i];
      const std::size_t size = value_size(plan_.types[static_cast<std::size_t>(in.out)]);
      switch (in.kind) {
        case InstrKind::kScalar:
          continue;
        case InstrKind::kReduced:
          for (std::int64_t t = 0; t < tlen; ++t)
            std::memcpy(reg(in.out) + t * static_cast<std::int64_t>(size),
                        &results[static_cast<std::size_t>(in.index) * kColumnTile +
                                 static_cast<std::size_t>(t)],
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
      for (std::int64_t s = 1; s < kColumnSteps; ++s)
        std::memcpy(reg(in.out) + s * bytes, reg(in.out), static_cast<std::size_t>(bytes));
    }
  }
  // Operand k at step jj along the axis of the tile's first row.
  Operand step_operand(std::size_t k, std::int64_t jj) const {
    Operand o = row_ops_[k];
    o.data += jj * axis_bytes_[k];
    return o;
  }
  // Per-element instructions `code` over steps [jj, jj + steps) of the tile's rows (span_'s
  // order: step-major).
  void column_pass(const std::vector<std::size_t>& code, std::int64_t jj, std::int64_t steps) {
    span_.sizes[0] = steps;
    span_.numel = steps * span_.sizes[1];
    for (std::size_t i : code) {
      const Instruction& in = p_.prologue[i];
      if (in.kind == InstrKind::kLoad)
        chunk_.gather(span_, step_operand(static_cast<std::size_t>(in.index), jj), in.index,
                      storage_dtype_of(in.type), 0, span_.numel, reg(in.out));
      else if (in.kind != InstrKind::kScalar)
        run_step(in, plan_.prologue_fns[i], chunk_, plan_.types, reg_fn(), span_.numel);
    }
  }
  // Stage k over the tile, block by block, each row's values folded in order, into results[t].
  void column_stage(std::size_t k, std::int64_t* results, std::int64_t tlen) {
    const FoldFns& f = *plan_.folds[k];
    alignas(64) unsigned char acc[kColumnTile * backends::cpu::kFoldAccBytes];
    alignas(64) unsigned char part[kColumnTile * backends::cpu::kFoldAccBytes];
    const std::int32_t input = p_.anchor.stages[k].input;
    const std::int64_t bytes =
        tlen * static_cast<std::int64_t>(value_size(plan_.types[static_cast<std::size_t>(input)]));
    f.column_identity(acc, tlen);
    for (std::int64_t b = 0, blocks = sf_reduce_blocks(layout_.n); b < blocks; ++b) {
      const std::int64_t start = b * SF_REDUCE_BLOCK;
      const std::int64_t stop = start + sf_reduce_block_len(layout_.n, b);
      f.column_identity(part, tlen);
      for (std::int64_t jj = start; jj < stop; jj += kColumnSteps) {
        const std::int64_t steps = std::min(kColumnSteps, stop - jj);
        column_pass(plan_.stage_code[k], jj, steps);
        for (std::int64_t s = 0; s < steps; ++s)
          f.column_step(part, reg(input) + s * bytes, tlen, jj + s);
      }
      f.column_merge(acc, part, tlen);
    }
    f.column_finish(acc, tlen, layout_.n, results);
  }
  // The tile's outputs: every element's, a span at a time, then every row's.
  void column_outputs(std::int64_t tlen) {
    const std::size_t ni = p_.inputs.size();
    for (std::int64_t jj = 0; jj < layout_.n; jj += kColumnSteps) {
      column_pass(plan_.output_code, jj, std::min(kColumnSteps, layout_.n - jj));
      for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
        if (p_.outputs[o].per_row) continue;
        const std::size_t k = ni + o;
        chunk_.scatter(span_, step_operand(k, jj), static_cast<int>(k),
                       storage_dtype_of(plan_.types[static_cast<std::size_t>(p_.outputs[o].reg)]),
                       0, span_.numel, reg(p_.outputs[o].reg));
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

  // Per-element instructions `code` for elements [j, j + m) of the row.
  void pass(const std::vector<std::size_t>& code, std::int64_t j, std::int64_t m) {
    for (std::size_t i : code) {
      const Instruction& in = p_.prologue[i];
      if (in.kind == InstrKind::kLoad)
        chunk_.gather(inner_, row_ops_[static_cast<std::size_t>(in.index)], in.index,
                      storage_dtype_of(in.type), j, m, reg(in.out));
      else if (in.kind != InstrKind::kScalar)
        run_step(in, plan_.prologue_fns[i], chunk_, plan_.types, reg_fn(), m);
    }
  }

  const FusedProgram& p_;
  const Plan& plan_;
  const ReduceLayout& layout_;
  std::span<const Operand> operands_;
  const backends::cpu::ChunkOps& chunk_;
  std::vector<Operand> row_ops_;
  Iteration inner_;
  Iteration point_;                       // one element, strides 0
  Iteration tile_;                        // a column tile's rows (its size: the tile's)
  Iteration span_;                        // steps along the axis of a tile's rows
  std::vector<std::int64_t> axis_bytes_;  // per operand: bytes of a step along the axis
  std::vector<unsigned char> storage_;
  unsigned char* base_ = nullptr;
};

class Interpreted final : public ReduceExecutor {
 public:
  Interpreted(const FusedProgram& p, const ReduceLayout& layout, std::span<const Operand> operands,
              std::span<const std::int64_t> scalars, const backends::cpu::KernelTable& kernels)
      : p_(p),
        layout_(layout),
        operands_(operands),
        scalars_(scalars),
        kernels_(kernels),
        plan_(make_plan(p, kernels)) {}

  void whole_rows(std::int64_t begin, std::int64_t end) override {
    RowRunner run = runner();
    for (std::int64_t row = begin; row < end; ++row) run.whole_row(row);
  }
  void stage_blocks(std::int64_t row, int stage, std::int64_t begin, std::int64_t end,
                    void* partials, const std::int64_t* results) override {
    RowRunner run = runner();
    run.set_row(row);
    run.row_groups(static_cast<std::size_t>(stage), results);
    for (std::int64_t b = begin; b < end; ++b)
      run.fold_block(static_cast<std::size_t>(stage), b,
                     static_cast<unsigned char*>(partials) + b * kCpuReduceAccBytes);
  }
  void merge_stage(std::int64_t, int stage, const void* partials, std::int64_t* results) override {
    const FoldFns& f = *plan_.folds[static_cast<std::size_t>(stage)];
    alignas(16) unsigned char acc[kCpuReduceAccBytes];
    f.identity(acc);
    for (std::int64_t b = 0, blocks = sf_reduce_blocks(layout_.n); b < blocks; ++b)
      f.merge(acc, static_cast<const unsigned char*>(partials) + b * kCpuReduceAccBytes);
    results[stage] = f.finish(acc, layout_.n);
  }
  void column_rows(std::int64_t begin, std::int64_t end) override {
    runner().column_rows(begin, end);
  }
  void outputs(std::int64_t row, std::int64_t begin, std::int64_t end,
               const std::int64_t* results) override {
    RowRunner run = runner();
    run.set_row(row);
    run.row_groups(p_.anchor.stages.size(), results);
    run.outputs(begin, end);
    if (begin == 0) run.row_outputs();
  }

 private:
  RowRunner runner() const {
    return RowRunner(p_, plan_, layout_, operands_, scalars_, kernels_.chunk);
  }

  const FusedProgram& p_;
  const ReduceLayout& layout_;
  std::span<const Operand> operands_;
  std::span<const std::int64_t> scalars_;
  const backends::cpu::KernelTable& kernels_;
  Plan plan_;
};

}  // namespace

void interpret_reduce(const FusedProgram& program, const ReduceLayout& layout,
                      std::span<const Operand> operands, std::span<const std::int64_t> scalars,
                      const backends::cpu::KernelTable& kernels, int num_threads) {
  if (program.anchor.kind != AnchorKind::kReduce)
    throw Error("internal error: a program with no reduction interpreted by rows");
  Interpreted executor(program, layout, operands, scalars, kernels);
  run_reduce(layout, program.anchor.stages.size(), num_threads, executor);
}

}  // namespace streamfuse::jit

// ReduceRunner's rows (jit/reduce_runner.h): per-row code, per-element code over L1-sized chunks
// of the row folded into each stage's accumulator, then the outputs, through the eager kernels'
// own loops and the one reduction template, so results equal unfused ones bit for bit.
#include "jit/reduce_runner.h"

#include <string>

#include "core/scalar_ops.h"
#include "jit/kernel_abi.h"
#include "jit/reduce_program.h"
#include "streamfuse/error.h"

// Prelude text (sf_reduce_blocks): it includes nothing and needs core/scalar_ops.h before it.
#include "core/reduce_math.h"

namespace streamfuse::jit {

using backends::cpu::ChunkFn;
using backends::cpu::FoldFns;
using backends::cpu::Iteration;
using backends::cpu::Operand;

namespace {

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

ChunkFn op_fn(const Instruction& in, const backends::cpu::KernelTable& kernels) {
  if (in.kind != InstrKind::kOp) return nullptr;
  ChunkFn fn = kernels.chunk.op(in.op, storage_dtype_of(in.type));
  if (!fn)
    throw Error(std::string("internal error: no interpreter loop for ") +
                std::string(core::op_name(in.op)) + " on " + value_type_name(in.type));
  return fn;
}

}  // namespace

ReducePlan make_reduce_plan(const FusedProgram& p, const backends::cpu::KernelTable& kernels) {
  ReducePlan plan;
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
  std::vector<char> computed(p.prologue.size(), 0);
  const auto not_yet = [&](const std::vector<std::size_t>& code) {
    std::vector<std::size_t> fresh;
    for (std::size_t i : code)
      if (!computed[i]) fresh.push_back(i);
    for (std::size_t i : code) computed[i] = 1;
    return fresh;
  };
  for (const std::vector<std::size_t>& code : plan.stage_code)
    plan.stage_code_one_pass.push_back(not_yet(code));
  plan.output_code_one_pass = not_yet(plan.output_code);
  plan.row_code.resize(p.anchor.stages.size() + 1);
  plan.element_read.resize(static_cast<std::size_t>(p.num_registers), 0);
  for (const Instruction& in : p.prologue)
    for (std::int32_t a : in.args)
      if (a >= 0) plan.element_read[static_cast<std::size_t>(a)] = 1;
  for (const ReduceStage& st : p.anchor.stages)
    plan.element_read[static_cast<std::size_t>(st.input)] = 1;
  plan.is_output.resize(static_cast<std::size_t>(p.num_registers), 0);
  for (const ProgramOutput& o : p.outputs) {
    if (!o.per_row) plan.element_read[static_cast<std::size_t>(o.reg)] = 1;
    plan.is_output[static_cast<std::size_t>(o.reg)] = 1;
  }
  plan.row_value.resize(static_cast<std::size_t>(p.num_registers), 0);
  for (const Instruction& in : p.epilogue)
    if (in.kind != InstrKind::kScalar) plan.row_value[static_cast<std::size_t>(in.out)] = 1;
  for (std::size_t i = 0; i < p.epilogue.size(); ++i) {
    const std::size_t group = plan.needs[static_cast<std::size_t>(p.epilogue[i].out)];
    plan.row_code[group].push_back(i);
  }
  return plan;
}

ReduceRunner::ReduceRunner(const FusedProgram& p, const ReducePlan& plan,
                           const ReduceLayout& layout, std::span<const Operand> operands,
                           std::span<const std::int64_t> scalars,
                           const backends::cpu::ChunkOps& chunk, std::int64_t span, Walk walk)
    : p_(p),
      plan_(plan),
      layout_(layout),
      operands_(operands),
      chunk_(chunk),
      span_positions_(std::clamp<std::int64_t>(span, 1, kChunk)),
      slots_(static_cast<std::size_t>(p.num_registers) * (walk == Walk::kColumnTiles ? 1 : 2),
             span_positions_) {
  for (std::int32_t r = 0; r < p.num_registers; ++r)
    regs_.push_back(slots_[static_cast<std::size_t>(r)]);
  const int num_operands = static_cast<int>(operands.size());
  // Row batches need no row operands nor inner iteration: setting them up was a fifth of a
  // one-row softmax's interpreted launch.
  if (walk != Walk::kRowBatches) row_ops_.assign(operands.begin(), operands.end());
  if (walk == Walk::kWholeRows) {
    // The rows' inner dimensions, for gathers and scatters along a row.
    inner_.rank = layout.inner_rank;
    inner_.num_operands = num_operands;
    inner_.numel = layout.n;
    for (int d = 0; d < layout.inner_rank; ++d) {
      const auto from = static_cast<std::size_t>(layout.outer_rank + d);
      inner_.sizes[static_cast<std::size_t>(d)] = layout.it.sizes[from];
      for (std::size_t k = 0; k < operands.size(); ++k)
        inner_.strides[k][static_cast<std::size_t>(d)] = layout.it.strides[k][from];
    }
  }
  if (walk != Walk::kColumnTiles) {
    // The rows as a flat index over the outer dimensions: per-row loads and outputs are one
    // gather or scatter over a batch's rows (or the one row).
    rows_.rank = layout.outer_rank;
    rows_.num_operands = num_operands;
    rows_.numel = 1;
    for (int d = 0; d < layout.outer_rank; ++d) {
      const auto u = static_cast<std::size_t>(d);
      rows_.sizes[u] = layout.it.sizes[u];
      rows_.numel *= layout.it.sizes[u];
      for (std::size_t k = 0; k < operands.size(); ++k)
        rows_.strides[k][u] = layout.it.strides[k][u];
    }
  }
  for (const std::vector<Instruction>* block : p.blocks())
    for (const Instruction& in : *block)
      if (in.kind == InstrKind::kScalar)
        splat(in.out, &scalars[static_cast<std::size_t>(in.index)], span_positions_);
}

void ReduceRunner::set_row(std::int64_t row) {
  row_ = row;
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

// Stage k's accumulator of block b of the row (the row's code up to stage k has run).
void ReduceRunner::fold_block(std::size_t k, std::int64_t b, void* acc) {
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
void ReduceRunner::stage(std::size_t k, std::int64_t* results) {
  const FoldFns& f = *plan_.folds[k];
  alignas(16) unsigned char acc[kCpuReduceAccBytes], part[kCpuReduceAccBytes];
  f.identity(acc);
  for (std::int64_t b = 0, blocks = sf_reduce_blocks(layout_.n); b < blocks; ++b) {
    fold_block(k, b, part);
    f.merge(acc, part);
  }
  results[k] = f.finish(acc, layout_.n);
}

void ReduceRunner::outputs(const std::vector<std::size_t>& code, const Iteration& it,
                           std::span<const Operand> operands, std::int64_t begin,
                           std::int64_t end) {
  const std::size_t ni = p_.inputs.size();
  for (std::int64_t j = begin; j < end; j += kChunk) {
    const std::int64_t m = std::min(kChunk, end - j);
    pass(code, it, operands, j, m);
    for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
      if (p_.outputs[o].per_row) continue;
      const auto k = ni + o;
      chunk_.scatter(it, operands[k], static_cast<int>(k),
                     storage_dtype_of(plan_.types[static_cast<std::size_t>(p_.outputs[o].reg)]), j,
                     m, reg(p_.outputs[o].reg));
    }
  }
}

void ReduceRunner::whole_row(std::int64_t row) {
  set_row(row);
  std::int64_t results[kMaxReduceStages] = {};
  const std::size_t stages = p_.anchor.stages.size();
  for (std::size_t k = 0; k < stages; ++k) {
    row_code(k, row, 1, results, 0);
    stage(k, results);
  }
  row_code(stages, row, 1, results, 0);
  outputs(0, layout_.n);
  row_outputs(row, 1);
}

void ReduceRunner::row_batch(std::int64_t row, std::int64_t count) {
  static_assert(SF_REDUCE_BLOCK >= kChunk);  // a row that batches() is one block
  const std::int64_t n = layout_.n;
  const std::size_t stages = p_.anchor.stages.size();
  // Not cleared (4 KiB, about what a one-row launch's fold costs): row t's result of stage k is
  // written by the fold before any per-row code that needs stage k reads it.
  std::int64_t results[kBatchRows][kMaxReduceStages];
  for (std::size_t k = 0; k < stages; ++k) {
    row_code(k, row, count, &results[0][0], kMaxReduceStages);
    pass(plan_.stage_code_one_pass[k], layout_.it, operands_, row * n, count * n);
    plan_.folds[k]->rows(reg(p_.anchor.stages[k].input), count, n, layout_.lanes[k], &results[0][k],
                         kMaxReduceStages);
  }
  row_code(stages, row, count, &results[0][0], kMaxReduceStages);
  outputs(plan_.output_code_one_pass, layout_.it, operands_, row * n, (row + count) * n);
  row_outputs(row, count);
}

void ReduceRunner::row_code(std::size_t g, std::int64_t row, std::int64_t count,
                            const std::int64_t* results, std::size_t stride) {
  const std::int64_t n = layout_.n;
  // A batch's registers hold count * n positions; a whole row's, the span of one pass.
  const std::int64_t repeat = std::min(n, span_positions_);
  const auto values = [this](std::int32_t r) { return row_values(r); };
  for (std::size_t i : plan_.row_code[g]) {
    const Instruction& in = p_.epilogue[i];
    if (in.kind == InstrKind::kScalar) continue;  // its slot is filled
    unsigned char* out = row_values(in.out);
    // The register's type: an instruction's own is its operands' (a comparison's is not bool).
    const std::size_t size = value_size(plan_.types[static_cast<std::size_t>(in.out)]);
    switch (in.kind) {
      case InstrKind::kReduced:
        // A result's bits are the low bytes of its word (as splat() reads them).
        for (std::int64_t t = 0; t < count; ++t)
          std::memcpy(out + static_cast<std::size_t>(t) * size,
                      results + static_cast<std::size_t>(t) * stride + in.index, size);
        break;
      case InstrKind::kLoad:
        chunk_.gather(rows_, operands_[static_cast<std::size_t>(in.index)], in.index,
                      storage_dtype_of(in.type), row, count, out);
        break;
      default:
        run_step(in, plan_.epilogue_fns[i], chunk_, plan_.types, values, count);
        break;
    }
    if (plan_.element_read[static_cast<std::size_t>(in.out)])
      for (std::int64_t t = 0; t < count; ++t)
        splat(in.out, out + static_cast<std::size_t>(t) * size, repeat, t * n);
  }
}

void ReduceRunner::row_outputs(std::int64_t row, std::int64_t count) {
  const std::size_t ni = p_.inputs.size();
  for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
    if (!p_.outputs[o].per_row) continue;
    const std::size_t k = ni + o;
    chunk_.scatter(rows_, operands_[k], static_cast<int>(k),
                   storage_dtype_of(plan_.types[static_cast<std::size_t>(p_.outputs[o].reg)]), row,
                   count, row_values(p_.outputs[o].reg));
  }
}

// Register r holds `value` (of its type) in positions [from, from + count).
void ReduceRunner::splat(std::int32_t r, const void* value, std::int64_t count, std::int64_t from) {
  switch (value_size(plan_.types[static_cast<std::size_t>(r)])) {
    case 1:
      fill<std::uint8_t>(r, value, count, from);
      break;
    case 2:
      fill<std::uint16_t>(r, value, count, from);
      break;
    case 4:
      fill<std::uint32_t>(r, value, count, from);
      break;
    default:
      fill<std::uint64_t>(r, value, count, from);
      break;
  }
}

void ReduceRunner::pass(const std::vector<std::size_t>& code, std::int64_t j, std::int64_t m) {
  pass(code, inner_, row_ops_, j, m);
}

void ReduceRunner::pass(const std::vector<std::size_t>& code, const Iteration& it,
                        std::span<const Operand> operands, std::int64_t j, std::int64_t m) {
  for (std::size_t i : code) {
    const Instruction& in = p_.prologue[i];
    if (in.kind == InstrKind::kLoad) {
      const Operand& operand = operands[static_cast<std::size_t>(in.index)];
      unsigned char*& at = regs_[static_cast<std::size_t>(in.out)];
      at = in_place_values(in, operand, it, plan_.is_output[static_cast<std::size_t>(in.out)], j);
      if (!at) {
        at = slots_[static_cast<std::size_t>(in.out)];
        chunk_.gather(it, operand, in.index, storage_dtype_of(in.type), j, m, at);
      }
    } else if (in.kind != InstrKind::kScalar)
      run_step(in, plan_.prologue_fns[i], chunk_, plan_.types, reg_fn(), m);
  }
}

}  // namespace streamfuse::jit

// The interpreter of programs with a reduction anchor: a launch's rows (or column tiles of rows)
// over the threads, each run by a ReduceRunner (jit/reduce_runner.h) as the program says.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "backends/cpu/kernels/kernels.h"
#include "core/hash_mix.h"
#include "core/scalar_ops.h"
#include "jit/interpreter.h"
#include "jit/kernel_abi.h"
#include "jit/reduce_runner.h"
#include "streamfuse/error.h"

// Prelude text (sf_reduce_blocks): it includes nothing and needs core/scalar_ops.h before it.
#include "core/reduce_math.h"

namespace streamfuse::jit {

using backends::cpu::FoldFns;
using backends::cpu::Operand;

namespace {

class Interpreted final : public ReduceExecutor {
 public:
  Interpreted(const FusedProgram& p, const ReducePlan& plan, const ReduceLayout& layout,
              std::span<const Operand> operands, std::span<const std::int64_t> scalars,
              const backends::cpu::KernelTable& kernels)
      : p_(p),
        layout_(layout),
        operands_(operands),
        scalars_(scalars),
        kernels_(kernels),
        plan_(plan) {}

  void whole_rows(std::int64_t begin, std::int64_t end) override {
    if (ReduceRunner::batches(layout_)) {
      const std::int64_t batch = ReduceRunner::batch_rows(layout_, end - begin);
      ReduceRunner run = runner(batch * layout_.n, ReduceRunner::Walk::kRowBatches);
      for (std::int64_t row = begin; row < end; row += batch)
        run.row_batch(row, std::min(batch, end - row));
      return;
    }
    ReduceRunner run = runner(ReduceRunner::row_span(layout_), ReduceRunner::Walk::kWholeRows);
    for (std::int64_t row = begin; row < end; ++row) run.whole_row(row);
  }
  void stage_blocks(std::int64_t row, int stage, std::int64_t begin, std::int64_t end,
                    void* partials, const std::int64_t* results) override {
    ReduceRunner run = runner(ReduceRunner::row_span(layout_), ReduceRunner::Walk::kWholeRows);
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
    runner(kChunk, ReduceRunner::Walk::kColumnTiles).column_rows(begin, end);
  }
  void outputs(std::int64_t row, std::int64_t begin, std::int64_t end,
               const std::int64_t* results) override {
    ReduceRunner run = runner(ReduceRunner::row_span(layout_), ReduceRunner::Walk::kWholeRows);
    run.set_row(row);
    run.row_groups(p_.anchor.stages.size(), results);
    run.outputs(begin, end);
    if (begin == 0) run.row_outputs();
  }

 private:
  // `span`: as ReduceRunner's.
  ReduceRunner runner(std::int64_t span, ReduceRunner::Walk walk) const {
    return ReduceRunner(p_, plan_, layout_, operands_, scalars_, kernels_.chunk, span, walk);
  }

  const FusedProgram& p_;
  const ReduceLayout& layout_;
  std::span<const Operand> operands_;
  std::span<const std::int64_t> scalars_;
  const backends::cpu::KernelTable& kernels_;
  const ReducePlan& plan_;
};

// What a program's rows run, kept per thread for the last programs interpreted: making it
// allocates a dozen vectors, which at a few elements per row cost more than the rows (a 1x8
// softmax: a fifth of its launch). An entry is the program's own (its address and hash both
// match), for the kernel table it was made with.
const ReducePlan& plan_of(const FusedProgram& program, std::uint64_t hash,
                          const backends::cpu::KernelTable& kernels) {
  struct Entry {
    const FusedProgram* program = nullptr;
    std::uint64_t hash = 0;
    const backends::cpu::KernelTable* kernels = nullptr;
    std::unique_ptr<ReducePlan> plan;
  };
  thread_local std::array<Entry, 64> cache;
  // The slot mixes the address in: plans of segments that differ only in their drops hold equal
  // programs (one hash) in objects of their own, and a model alternating between them would
  // otherwise make the plan again at every launch (a small MLP: a twentieth of its time).
  const std::uint64_t slot = core::hash_mix(hash, reinterpret_cast<std::uintptr_t>(&program));
  Entry& e = cache[slot % cache.size()];
  if (!e.plan || e.program != &program || e.hash != hash || e.kernels != &kernels) {
    e.plan = std::make_unique<ReducePlan>(make_reduce_plan(program, kernels));
    e.program = &program;
    e.hash = hash;
    e.kernels = &kernels;
  }
  return *e.plan;
}

}  // namespace

void interpret_reduce(const FusedProgram& program, const ReduceLayout& layout,
                      std::span<const Operand> operands, std::span<const std::int64_t> scalars,
                      const backends::cpu::KernelTable& kernels, int num_threads,
                      std::uint64_t hash) {
  if (program.anchor.kind != AnchorKind::kReduce)
    throw Error("internal error: a program with no reduction interpreted by rows");
  Interpreted executor(program, plan_of(program, hash, kernels), layout, operands, scalars,
                       kernels);
  run_reduce(layout, program.anchor.stages.size(), num_threads, executor);
}

}  // namespace streamfuse::jit

#include "jit/cpu_launcher.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/views.h"
#include "jit/interpreter.h"
#include "jit/launch_key.h"
#include "jit/reduce_launch_memo.h"
#include "jit/reduce_layout.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {

using backends::cpu::Iteration;
using backends::cpu::Operand;

namespace {

constexpr std::int64_t kGrain = 16384;  // elements a thread must have before another starts

// A compiled reduction kernel doing what the layout's split asks (jit/kernel_abi.h).
class CompiledReduce final : public ReduceExecutor {
 public:
  CompiledReduce(CpuReduceKernelFn fn, const ReduceLayout& layout, std::span<const Operand> ops,
                 std::span<const std::int64_t> scalars)
      : fn_(fn), scalars_(scalars.begin(), scalars.end()) {
    const backends::cpu::Iteration& it = layout.it;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      data_.push_back(ops[k].data);
      for (int d = 0; d < it.rank; ++d)
        strides_.push_back(it.strides[k][static_cast<std::size_t>(d)]);
    }
    for (int d = 0; d < it.rank; ++d) sizes_[d] = it.sizes[static_cast<std::size_t>(d)];
    lanes_.assign(layout.lanes.begin(), layout.lanes.end());
    base_.data = data_.data();
    base_.sizes = sizes_;
    base_.strides = strides_.data();
    base_.scalars = scalars_.data();
    base_.lanes = lanes_.data();
    base_.n = layout.n;
  }
  void whole_rows(std::int64_t begin, std::int64_t end) override {
    call(kWholeRows, begin, end, 0, 0, 0, nullptr, nullptr);
  }
  void stage_blocks(std::int64_t row, int stage, std::int64_t begin, std::int64_t end,
                    void* partials, const std::int64_t* results) override {
    call(kStageBlocks, row, row + 1, begin, end, stage, partials, results);
  }
  void merge_stage(std::int64_t row, int stage, const void* partials,
                   std::int64_t* results) override {
    call(kMergeStage, row, row + 1, 0, 0, stage, const_cast<void*>(partials), results);
  }
  void outputs(std::int64_t row, std::int64_t begin, std::int64_t end,
               const std::int64_t* results) override {
    call(kOutputs, row, row + 1, begin, end, 0, nullptr, results);
  }
  void column_rows(std::int64_t begin, std::int64_t end) override {
    call(kColumnRows, begin, end, 0, 0, 0, nullptr, nullptr);
  }

 private:
  void call(int mode, std::int64_t row_begin, std::int64_t row_end, std::int64_t begin,
            std::int64_t end, int stage, void* partials, const std::int64_t* results) {
    CpuReduceLaunch launch = base_;
    launch.mode = mode;
    launch.row_begin = row_begin;
    launch.row_end = row_end;
    launch.begin = begin;
    launch.end = end;
    launch.stage = stage;
    launch.partials = partials;
    // The kernel writes results only in kMergeStage, where the caller passes its own array.
    launch.results = reinterpret_cast<long long*>(const_cast<std::int64_t*>(results));
    fn_(&launch);
  }

  CpuReduceKernelFn fn_;
  boost::container::small_vector<long long, 8> scalars_;
  boost::container::small_vector<char*, 16> data_;
  boost::container::small_vector<long long, 64> strides_;
  long long sizes_[kMaxRank] = {};
  boost::container::small_vector<int, 8> lanes_;
  CpuReduceLaunch base_{};
};

}  // namespace

void CpuLauncher::launch_reduce(const FusedProgram& program, const ProgramFacts& facts,
                                const Shape& shape, std::span<const Operand> ops,
                                std::span<const LaunchOperand> inputs,
                                std::span<const LaunchOperand> outputs,
                                std::span<const std::int64_t> scalars) {
  const ReduceLayout& layout = ReduceLaunchMemo::layout(program, facts.hash, shape, ops);
  if (layout.rows == 0) return;
  const int threads =
      backends::cpu::threads_beside_background(num_threads_.load(std::memory_order_relaxed));
  if (cache_ && compile_.load(std::memory_order_relaxed)) {
    const SpecializationKey& key =
        ReduceLaunchMemo::key(program, facts, ops, inputs, outputs, scalars);
    if (std::optional<ReadyKernel> kernel = cache_->find_or_request(facts.hash, program, key)) {
      CompiledReduce executor(kernel->cpu_reduce(), layout, ops, scalars);
      run_reduce(layout, program.anchor.stages.size(), threads, executor);
      compiled_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  interpret_reduce(program, layout, ops, scalars, kernels_, threads, facts.hash);
  interpreted_.fetch_add(1, std::memory_order_relaxed);
}

// Only while compiling: with STREAMFUSE_JIT=interpret (no compiler, or asked for) the
// interpreter runs every launch, as that mode promises (and the tests of its column walk rely on).
bool CpuLauncher::ops_are_faster(const FusedProgram& program, const ProgramFacts& facts,
                                 const Shape& shape, std::span<const LaunchOperand> inputs,
                                 std::span<const LaunchOperand> outputs,
                                 std::span<const std::int64_t> scalars) {
  if (program.anchor.kind != AnchorKind::kReduce || !cache_ ||
      !compile_.load(std::memory_order_relaxed) || shape.numel() < kOpsBeforeColumnKernelElements)
    return false;
  boost::container::small_vector<Operand, 16> ops;
  for (std::span<const LaunchOperand> list : {inputs, outputs})
    for (const LaunchOperand& o : list)
      ops.push_back(backends::cpu::broadcast_operand(*o.handle, o.shape, o.dtype, shape));
  if (ReduceLaunchMemo::layout(program, facts.hash, shape, ops).walk != ReduceWalk::kColumns)
    return false;
  const SpecializationKey& key =
      ReduceLaunchMemo::key(program, facts, ops, inputs, outputs, scalars);
  return !cache_->find_or_request(facts.hash, program, key).has_value();
}

CpuLauncher::CpuLauncher(const backends::cpu::KernelTable& kernels, KernelCache* cache)
    : kernels_(kernels), cache_(cache) {}

void CpuLauncher::launch(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
                         std::span<const LaunchOperand> inputs,
                         std::span<const LaunchOperand> outputs,
                         std::span<const std::int64_t> scalars) {
  const std::size_t n = inputs.size() + outputs.size();
  if (n > static_cast<std::size_t>(backends::cpu::kMaxOperands))
    throw Error("internal error: a fused kernel with " + std::to_string(n) + " operands");
  boost::container::small_vector<Operand, 16> ops;
  for (std::span<const LaunchOperand> list : {inputs, outputs})
    for (const LaunchOperand& o : list)
      ops.push_back(backends::cpu::broadcast_operand(*o.handle, o.shape, o.dtype, shape));
  if (program.anchor.kind == AnchorKind::kReduce) {
    launch_reduce(program, facts, shape, ops, inputs, outputs, scalars);
    return;
  }
  const backends::cpu::Strides* strides[backends::cpu::kMaxOperands];
  for (std::size_t k = 0; k < n; ++k) strides[k] = &ops[k].strides;
  const Iteration it = backends::cpu::make_iteration(shape, strides, static_cast<int>(n));
  if (it.numel == 0) return;
  const int threads =
      backends::cpu::threads_beside_background(num_threads_.load(std::memory_order_relaxed));

  if (cache_ && compile_.load(std::memory_order_relaxed)) {
    const SpecializationKey key = launch_key(program, facts, it, ops, inputs, outputs, scalars);
    if (std::optional<ReadyKernel> kernel = cache_->find_or_request(facts.hash, program, key)) {
      boost::container::small_vector<char*, 16> data;
      boost::container::small_vector<long long, 64> flat_strides;
      for (std::size_t k = 0; k < n; ++k) {
        data.push_back(ops[k].data);
        for (int d = 0; d < it.rank; ++d)
          flat_strides.push_back(it.strides[k][static_cast<std::size_t>(d)]);
      }
      long long sizes[kMaxRank];
      for (int d = 0; d < it.rank; ++d) sizes[d] = it.sizes[static_cast<std::size_t>(d)];
      boost::container::small_vector<long long, 8> scalar_args(scalars.begin(), scalars.end());
      const CpuKernelFn fn = kernel->cpu();
      backends::cpu::parallel_for(it.numel, kGrain, threads, [&](std::int64_t lo, std::int64_t hi) {
        fn(data.data(), sizes, flat_strides.data(), scalar_args.data(), lo, hi);
      });
      compiled_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  interpret(program, it, ops, scalars, kernels_, threads);
  interpreted_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace streamfuse::jit

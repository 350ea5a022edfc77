#include "jit/cpu_launcher.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/views.h"
#include "backends/views.h"
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

using Operands = boost::container::small_vector<Operand, 16>;

// The launch's operands (inputs, then outputs) broadcast to `shape`. A buffered one (its index in
// `buffered`) has no memory: a distinct address of its own stands in for it, so that a
// specialization key sees no output written over an input; it is never read.
Operands launch_operands(std::span<const LaunchOperand> inputs,
                         std::span<const LaunchOperand> outputs, const Shape& shape,
                         std::span<const int> buffered = {}) {
  static char stand_ins[backends::cpu::kMaxOperands];
  Operands ops;
  std::size_t k = 0;
  for (std::span<const LaunchOperand> list : {inputs, outputs})
    for (const LaunchOperand& o : list) {
      const bool stand_in =
          std::find(buffered.begin(), buffered.end(), static_cast<int>(k)) != buffered.end();
      ops.push_back(stand_in
                        ? Operand{&stand_ins[k], o.dtype,
                                  backends::broadcast_strides(o.shape, o.handle->strides, shape)}
                        : backends::cpu::broadcast_operand(*o.handle, o.shape, o.dtype, shape));
      ++k;
    }
  return ops;
}

// A reduction launch's arguments as a compiled kernel reads them (jit/kernel_abi.h): the
// operands' data and strides flattened, the sizes, lanes and scalars; `base` points into them
// (so it is neither copied nor moved).
struct FlatLaunch {
  FlatLaunch(const ReduceLayout& layout, std::span<const Operand> ops,
             std::span<const std::int64_t> scalar_args)
      : rank(layout.it.rank), scalars(scalar_args.begin(), scalar_args.end()) {
    const backends::cpu::Iteration& it = layout.it;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      data.push_back(ops[k].data);
      for (int d = 0; d < it.rank; ++d)
        strides.push_back(it.strides[k][static_cast<std::size_t>(d)]);
    }
    for (int d = 0; d < it.rank; ++d) sizes[d] = it.sizes[static_cast<std::size_t>(d)];
    lanes.assign(layout.lanes.begin(), layout.lanes.end());
    base.data = data.data();
    base.sizes = sizes;
    base.strides = strides.data();
    base.scalars = scalars.data();
    base.lanes = lanes.data();
    base.n = layout.n;
  }
  FlatLaunch(const FlatLaunch&) = delete;
  FlatLaunch& operator=(const FlatLaunch&) = delete;

  // Operand k's stride along dimension d.
  long long stride(std::size_t k, int d) const {
    return strides[k * static_cast<std::size_t>(rank) + static_cast<std::size_t>(d)];
  }

  int rank;
  boost::container::small_vector<long long, 8> scalars;
  boost::container::small_vector<char*, 16> data;
  boost::container::small_vector<long long, 64> strides;
  long long sizes[kMaxRank] = {};
  boost::container::small_vector<int, 8> lanes;
  CpuReduceLaunch base{};
};

// A compiled reduction kernel doing what the layout's split asks (jit/kernel_abi.h).
class CompiledReduce final : public ReduceExecutor {
 public:
  CompiledReduce(CpuReduceKernelFn fn, const ReduceLayout& layout, std::span<const Operand> ops,
                 std::span<const std::int64_t> scalars)
      : fn_(fn), args_(layout, ops, scalars) {}
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
    CpuReduceLaunch launch = args_.base;
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
  FlatLaunch args_;
};

// A compiled reduction kernel run a piece of rows at a time (jit/launcher.h's RowKernel): each
// piece within one run of the innermost outer dimension is a launch of its own, of that many
// rows, the outer dimensions above it of size 1 and every operand's data at the piece's first
// row (a buffered one at its buffer). The kernel reads sizes at run time and the strides of its
// specialization's classes stay what they were: the piece's rows compute as in the whole launch.
class CompiledRows final : public RowKernel {
 public:
  CompiledRows(CpuReduceKernelFn fn, const ReduceLayout& layout, std::span<const Operand> ops,
               std::span<const std::int64_t> scalars, std::span<const int> buffered,
               std::atomic<std::uint64_t>& launches)
      : fn_(fn),
        args_(layout, ops, scalars),
        outer_rank_(layout.outer_rank),
        buffer_(ops.size(), -1),
        launches_(launches) {
    for (const Operand& o : ops) bytes_.push_back(static_cast<std::int64_t>(element_size(o.dtype)));
    for (std::size_t i = 0; i < buffered.size(); ++i)
      buffer_[static_cast<std::size_t>(buffered[i])] = static_cast<int>(i);
    args_.base.mode = kWholeRows;
  }
  ~CompiledRows() override {
    if (ran_.load(std::memory_order_relaxed)) launches_.fetch_add(1, std::memory_order_relaxed);
  }

  void rows(std::int64_t row, std::int64_t count,
            std::span<char* const> buffers) const noexcept override {
    ran_.store(true, std::memory_order_relaxed);
    const int inner = outer_rank_ - 1;  // the outer dimension whose run a piece stays in
    const long long* sizes = args_.sizes;
    std::int64_t done = 0;
    while (done < count) {
      const std::int64_t g = row + done;
      const std::int64_t at = g % sizes[inner];
      const std::int64_t piece = std::min<std::int64_t>(count - done, sizes[inner] - at);
      std::int64_t index[kMaxRank] = {};
      index[inner] = at;
      std::int64_t rest = g / sizes[inner];
      for (int d = inner - 1; d >= 0; --d) {
        index[d] = rest % sizes[d];
        rest /= sizes[d];
      }
      boost::container::small_vector<char*, 16> data(args_.data.size());
      for (std::size_t k = 0; k < data.size(); ++k) {
        if (buffer_[k] >= 0) {
          data[k] = buffers[static_cast<std::size_t>(buffer_[k])] + done * args_.base.n * bytes_[k];
          continue;
        }
        std::int64_t offset = 0;
        for (int d = 0; d <= inner; ++d) offset += index[d] * args_.stride(k, d);
        data[k] = args_.data[k] + offset * bytes_[k];
      }
      long long piece_sizes[kMaxRank];
      for (int d = 0; d < args_.rank; ++d) piece_sizes[d] = d < inner ? 1 : sizes[d];
      piece_sizes[inner] = piece;
      CpuReduceLaunch launch = args_.base;
      launch.data = data.data();
      launch.sizes = piece_sizes;
      launch.row_begin = 0;
      launch.row_end = piece;
      fn_(&launch);
      done += piece;
    }
  }

 private:
  CpuReduceKernelFn fn_;
  FlatLaunch args_;
  int outer_rank_;
  boost::container::small_vector<std::int64_t, 16> bytes_;  // per operand: its element's
  boost::container::small_vector<int, 16> buffer_;  // per operand: its buffer's index, or -1
  std::atomic<std::uint64_t>& launches_;
  mutable std::atomic<bool> ran_{false};
};

}  // namespace

std::unique_ptr<RowKernel> CpuLauncher::row_kernel(const FusedProgram& program,
                                                   const ProgramFacts& facts, const Shape& shape,
                                                   std::span<const LaunchOperand> inputs,
                                                   std::span<const LaunchOperand> outputs,
                                                   std::span<const std::int64_t> scalars,
                                                   std::span<const int> buffered) {
  const std::size_t n = inputs.size() + outputs.size();
  if (program.anchor.kind != AnchorKind::kReduce || !cache_ ||
      !compile_.load(std::memory_order_relaxed) ||
      n > static_cast<std::size_t>(backends::cpu::kMaxOperands))
    return nullptr;
  const Operands ops = launch_operands(inputs, outputs, shape, buffered);
  const ReduceLayout& layout = ReduceLaunchMemo::layout(program, facts.hash, shape, ops);
  if (layout.rows == 0 || layout.walk != ReduceWalk::kRows || layout.inner_rank != 1 ||
      layout.outer_rank < 1)
    return nullptr;
  const backends::cpu::Iteration& it = layout.it;
  for (int b : buffered) {  // rows n elements apart, elements adjacent
    const auto& st = it.strides[static_cast<std::size_t>(b)];
    if (st[static_cast<std::size_t>(it.rank - 1)] != 1 ||
        st[static_cast<std::size_t>(layout.outer_rank - 1)] != layout.n)
      return nullptr;
  }
  const SpecializationKey& key =
      ReduceLaunchMemo::key(program, facts, ops, inputs, outputs, scalars);
  std::optional<ReadyKernel> kernel = cache_->find_or_request(facts.hash, program, key);
  if (!kernel) return nullptr;
  return std::make_unique<CompiledRows>(kernel->cpu_reduce(), layout, ops, scalars, buffered,
                                        compiled_);
}

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
  const Operands ops = launch_operands(inputs, outputs, shape);
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
  const Operands ops = launch_operands(inputs, outputs, shape);
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

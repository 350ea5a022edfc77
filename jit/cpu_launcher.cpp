#include "jit/cpu_launcher.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/views.h"
#include "jit/interpreter.h"
#include "jit/launch_key.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {

using backends::cpu::Iteration;
using backends::cpu::Operand;

namespace {

constexpr std::int64_t kGrain = 16384;  // elements a thread must have before another starts

}  // namespace

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
  const backends::cpu::Strides* strides[backends::cpu::kMaxOperands];
  for (std::size_t k = 0; k < n; ++k) strides[k] = &ops[k].strides;
  const Iteration it = backends::cpu::make_iteration(shape, strides, static_cast<int>(n));
  if (it.numel == 0) return;
  const int threads = num_threads_.load(std::memory_order_relaxed);

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

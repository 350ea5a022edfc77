#include "jit/cuda_launcher.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/views.h"
#include "jit/cuda_kernel_abi.h"
#include "jit/cuda_launch_args.h"
#include "jit/launch_key.h"
#include "jit/reduce_layout.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {

CudaLauncher::CudaLauncher(std::shared_ptr<const backends::cuda::DeviceContext> device,
                           KernelCache& cache, std::function<CUstream()> stream_of)
    : device_(std::move(device)), cache_(cache), stream_of_(std::move(stream_of)) {}

struct CudaLauncher::Prepared {
  boost::container::small_vector<backends::cpu::Operand, 16> ops;
  backends::cpu::Iteration it;
  std::optional<ReduceLayout> reduce;  // a program with a reduction anchor: its rows
  std::optional<ReadyKernel> kernel;
};

CudaLauncher::Prepared CudaLauncher::prepare(const FusedProgram& program, const ProgramFacts& facts,
                                             const Shape& shape,
                                             std::span<const LaunchOperand> inputs,
                                             std::span<const LaunchOperand> outputs,
                                             std::span<const std::int64_t> scalars) {
  const std::size_t n = inputs.size() + outputs.size();
  if (n > static_cast<std::size_t>(backends::cpu::kMaxOperands))
    throw Error("internal error: a fused kernel with " + std::to_string(n) + " operands");
  Prepared p;
  // Operands as the CPU sees them: element pointers (here device addresses, used only for
  // arithmetic) and strides broadcast to the launch shape, then merged dimensions.
  for (std::span<const LaunchOperand> list : {inputs, outputs})
    for (const LaunchOperand& o : list)
      p.ops.push_back(backends::cpu::broadcast_operand(*o.handle, o.shape, o.dtype, shape));
  if (program.anchor.kind == AnchorKind::kReduce) {
    p.reduce = make_reduce_layout(program, shape, p.ops);
    p.it = p.reduce->it;
    if (p.reduce->rows == 0) return p;
  } else {
    const backends::cpu::Strides* strides[backends::cpu::kMaxOperands];
    for (std::size_t k = 0; k < n; ++k) strides[k] = &p.ops[k].strides;
    p.it = backends::cpu::make_iteration(shape, strides, static_cast<int>(n));
    if (p.it.numel == 0) return p;
  }

  const SpecializationKey key = launch_key(program, facts, p.it, p.ops, inputs, outputs, scalars);
  p.kernel = cache_.wait_for(facts.hash, program, key);
  if (!p.kernel)
    throw Error("cuda: no kernel for the fused program on " + device_->name() + " (" +
                key.to_string() + "); see the jit warning above\n" + program.to_string());
  return p;
}

void CudaLauncher::require(const FusedProgram& program, const ProgramFacts& facts,
                           const Shape& shape, std::span<const LaunchOperand> inputs,
                           std::span<const LaunchOperand> outputs,
                           std::span<const std::int64_t> scalars) {
  prepare(program, facts, shape, inputs, outputs, scalars);
}

void CudaLauncher::launch(const FusedProgram& program, const ProgramFacts& facts,
                          const Shape& shape, std::span<const LaunchOperand> inputs,
                          std::span<const LaunchOperand> outputs,
                          std::span<const std::int64_t> scalars) {
  const Prepared p = prepare(program, facts, shape, inputs, outputs, scalars);
  if (!p.kernel) return;  // nothing to compute
  std::vector<long long> args = cuda_launch_args(p.it, p.ops, scalars);
  unsigned blocks = 0;
  if (p.reduce) {  // numel counts rows, then the row length, the walk and the lanes flags
    const CudaArgsLayout l{p.ops.size(), static_cast<std::size_t>(p.it.rank), scalars.size()};
    const bool columns = p.reduce->walk == ReduceWalk::kColumns;
    args[l.numel()] = p.reduce->rows;
    args.push_back(p.reduce->n);
    args.push_back(columns ? 1 : 0);
    for (int lanes : p.reduce->lanes) args.push_back(lanes);
    // A block per row, or (columns) a thread per row.
    blocks = columns
                 ? cuda_grid_blocks(p.reduce->rows, device_->properties().multiprocessors)
                 : static_cast<unsigned>(std::min<std::int64_t>(
                       p.reduce->rows, std::int64_t{32} * device_->properties().multiprocessors));
  } else {
    blocks = cuda_grid_blocks(p.it.numel, device_->properties().multiprocessors);
  }
  void* params[] = {args.data()};  // one parameter: the argument struct, by value
  const backends::cuda::Driver& d = device_->driver();
  device_->make_current();
  d.check(d.launch_kernel(static_cast<CUfunction>(p.kernel->entry), blocks, 1, 1, kCudaBlockSize, 1,
                          1, 0, stream_of_(), params, nullptr),
          "launching a fused kernel on " + device_->name());
  launches_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace streamfuse::jit

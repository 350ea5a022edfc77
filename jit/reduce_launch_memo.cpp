#include "jit/reduce_launch_memo.h"

#include <algorithm>
#include <array>

#include "core/hash_mix.h"
#include "jit/launch_key.h"

namespace streamfuse::jit {
namespace {

using backends::cpu::Operand;

constexpr std::size_t kEntries = 16;

struct ThreadMemo {
  std::array<ReduceLaunchMemo::Entry, kEntries> entries;
  ReduceLaunchMemo::Entry* last = nullptr;  // the entry of this thread's last layout() call
};

ThreadMemo& thread_memo() {
  thread_local ThreadMemo memo;
  return memo;
}

bool holds(const ReduceLaunchMemo::Entry& e, const FusedProgram& program, std::uint64_t hash,
           const Shape& shape, std::span<const Operand> ops) {
  if (e.program != &program || e.hash != hash || e.shape != shape || e.dtypes.size() != ops.size())
    return false;
  // make_reduce_layout reads strides along the axis and along dimensions of other sizes than 1
  // (the walk check and the launch give a size-1 dimension's stride differently).
  const auto rank = static_cast<std::size_t>(shape.rank());
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (e.dtypes[k] != ops[k].dtype) return false;
    for (std::size_t d = 0; d < rank; ++d)
      if (ops[k].strides[d] != e.strides[k * rank + d] &&
          (shape[static_cast<int>(d)] != 1 || static_cast<int>(d) == program.anchor.axis))
        return false;
  }
  return true;
}

// Bit o: output o's data is one of the inputs' (launch_key then marks an alias).
std::uint64_t aliases(std::span<const Operand> ops, std::size_t num_inputs) {
  std::uint64_t bits = 0;
  for (std::size_t o = 0; num_inputs + o < ops.size() && o < 64; ++o)
    for (std::size_t i = 0; i < num_inputs; ++i)
      if (ops[num_inputs + o].data == ops[i].data) bits |= std::uint64_t{1} << o;
  return bits;
}

}  // namespace

const ReduceLayout& ReduceLaunchMemo::layout(const FusedProgram& program, std::uint64_t hash,
                                             const Shape& shape, std::span<const Operand> ops) {
  ThreadMemo& memo = thread_memo();
  Entry& e =
      memo.entries[core::hash_mix(hash, reinterpret_cast<std::uintptr_t>(&program)) % kEntries];
  memo.last = &e;
  if (holds(e, program, hash, shape, ops)) return e.layout;
  e.program = nullptr;  // holds nothing until its layout is made (making it may throw)
  e.key.reset();
  e.layout = make_reduce_layout(program, shape, ops);
  e.hash = hash;
  e.shape = shape;
  e.dtypes.clear();
  e.strides.clear();
  const auto rank = static_cast<std::size_t>(shape.rank());
  for (const Operand& op : ops) {
    e.dtypes.push_back(op.dtype);
    e.strides.insert(e.strides.end(), op.strides.begin(), op.strides.begin() + rank);
  }
  e.program = &program;
  return e.layout;
}

const SpecializationKey& ReduceLaunchMemo::key(const FusedProgram& program,
                                               const ProgramFacts& facts,
                                               std::span<const Operand> ops,
                                               std::span<const LaunchOperand> inputs,
                                               std::span<const LaunchOperand> outputs,
                                               std::span<const std::int64_t> scalars) {
  Entry& e = *thread_memo().last;
  const std::uint64_t alias_bits = aliases(ops, inputs.size());
  if (e.key && e.key_aliases == alias_bits &&
      std::equal(scalars.begin(), scalars.end(), e.key_scalars.begin(), e.key_scalars.end()))
    return *e.key;
  e.key = launch_key(program, facts, e.layout.it, ops, inputs, outputs, scalars);
  e.key_scalars.assign(scalars.begin(), scalars.end());
  e.key_aliases = alias_bits;
  return *e.key;
}

}  // namespace streamfuse::jit

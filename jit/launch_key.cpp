#include "jit/launch_key.h"

#include <algorithm>

namespace streamfuse::jit {
namespace {

using backends::cpu::Iteration;

OperandKey key_of(const Iteration& it, int k, DType dtype) {
  OperandKey key;
  key.dtype = dtype;
  std::int64_t dense = 1;
  for (int d = it.rank - 1; d >= 0; --d) {
    const std::int64_t s = it.strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
    key.strides[static_cast<std::size_t>(d)] = s == 0       ? StrideClass::kZero
                                               : s == dense ? StrideClass::kContiguous
                                                            : StrideClass::kArgument;
    dense *= it.sizes[static_cast<std::size_t>(d)];
  }
  return key;
}

}  // namespace

SpecializationKey launch_key(const FusedProgram& program, const ProgramFacts& facts,
                             const Iteration& it, std::span<const backends::cpu::Operand> ops,
                             std::span<const LaunchOperand> inputs,
                             std::span<const LaunchOperand> outputs,
                             std::span<const std::int64_t> scalars) {
  SpecializationKey key;
  key.rank = static_cast<std::int8_t>(it.rank);
  for (std::size_t k = 0; k < inputs.size(); ++k)
    key.inputs.push_back(key_of(it, static_cast<int>(k), inputs[k].dtype));
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const int k = static_cast<int>(inputs.size() + o);
    OperandKey out = key_of(it, k, outputs[o].dtype);
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (ops[i].data == ops[static_cast<std::size_t>(k)].data &&
          std::equal(it.strides[i].begin(), it.strides[i].begin() + it.rank,
                     it.strides[static_cast<std::size_t>(k)].begin()))
        out.alias = static_cast<std::int8_t>(i);
    key.outputs.push_back(out);
  }
  key.scalar_classes = equal_scalar_classes(program.scalars, scalars);
  key.exact_reciprocals = exact_reciprocal_scalars(facts.divisor_scalars, scalars);
  return key;
}

}  // namespace streamfuse::jit

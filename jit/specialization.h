// SpecializationKey: what a compiled kernel may assume about the tensors of one launch, and
// nothing more. Sizes and scalar values are kernel arguments, so a new batch size or constant
// reuses the compiled kernel.
//
// The key is taken after the launch's dimensions are merged (backends/cpu/kernels/layout.h:
// size-1 dimensions vanish, dimensions contiguous for every operand fold together), so a
// contiguous tensor of any rank is rank 1 and a broadcast dimension ("one" in NNC's key) shows
// as the zero stride class.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <boost/container/small_vector.hpp>

#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::jit {

enum class StrideClass : std::uint8_t {
  kContiguous,  // stride == product of the inner sizes (1 for the innermost dimension)
  kZero,        // broadcast: the same element along the dimension
  kArgument,    // anything else: read from the kernel's stride arguments
};

struct OperandKey {
  DType dtype = kF32;
  std::array<StrideClass, kMaxRank> strides{};  // [0, rank) used, outermost first
  // Outputs: the input whose buffer this output reuses in place (same layout), or -1.
  std::int8_t alias = -1;

  friend bool operator==(const OperandKey&, const OperandKey&) = default;
};

struct SpecializationKey {
  std::int8_t rank = 0;  // merged dimensions
  boost::container::small_vector<OperandKey, 8> inputs;
  boost::container::small_vector<OperandKey, 4> outputs;

  std::uint64_t hash() const;
  // "rank 1; in f32[c] f16[z]; out f32[c]=in0" for logs.
  std::string to_string() const;

  friend bool operator==(const SpecializationKey&, const SpecializationKey&) = default;
};

}  // namespace streamfuse::jit

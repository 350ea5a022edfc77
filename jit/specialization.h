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
#include <span>
#include <string>

#include <boost/container/small_vector.hpp>

#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::jit {

struct ScalarArg;  // jit/program.h

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
  // Scalar arguments that were equal at launch (same type and bits): scalar_classes[i] is the
  // first argument equal to argument i; empty when no two are equal. The kernel reads one
  // argument per class, so simplification merges what equal constants compute (both branches
  // of a sign-split erf use the same coefficients). Like sizes, values stay arguments: only
  // their equalities are part of the key, checked at every launch.
  boost::container::small_vector<std::uint8_t, 16> scalar_classes;
  // Bit i: float scalar argument i (i < 64) divides something and is a power of two whose
  // reciprocal is a normal float, so x / s == x * (1 / s) for every x, bit for bit, and the
  // kernel multiplies (a division costs ~10x a multiplication in a vector loop).
  std::uint64_t exact_reciprocals = 0;

  std::uint64_t hash() const;
  // "rank 1; in f32[c] f16[z]; out f32[c]=in0; scalars 0 1 0" for logs.
  std::string to_string() const;

  friend bool operator==(const SpecializationKey&, const SpecializationKey&) = default;
};

// The exact_reciprocals of a launch: which of the program's divisor scalars (ProgramFacts) have
// values `bits` that are powers of two with a normal reciprocal.
std::uint64_t exact_reciprocal_scalars(std::uint64_t divisor_scalars,
                                       std::span<const std::int64_t> bits);

// The scalar_classes of a launch: `args` describes the program's scalar arguments and `bits` their
// values. Empty when no two are equal (or there are more than 256).
boost::container::small_vector<std::uint8_t, 16> equal_scalar_classes(
    std::span<const ScalarArg> args, std::span<const std::int64_t> bits);

}  // namespace streamfuse::jit

// What a reduction launch derives from its operands and scalars, kept per thread for the programs
// launched last: the layout (from the shape and every operand's broadcast strides and dtype) and
// the kernel's specialization key (from the layout, the outputs' aliasing and the scalars). A
// launch over small tensors spent more on deriving them again than on its rows: a [1, 8]
// softmax made its layout twice (the walk check, then the launch) and its key once, a fifth of
// its time.
//
// An entry is found by the program's address and hash and holds only when the shape, strides and
// dtypes are the ones it was made from (the key also needs the same scalars and aliasing), so a
// hit derives exactly what a fresh derivation would. Kernels are not kept here: the kernel cache
// stays where they are found.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include <boost/container/small_vector.hpp>

#include "backends/cpu/kernels/kernels.h"
#include "jit/launcher.h"
#include "jit/program.h"
#include "jit/reduce_layout.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

class ReduceLaunchMemo {
 public:
  // The layout of `program` over `shape` with operands `ops` (inputs then outputs, broadcast to
  // `shape`): make_reduce_layout's, made again only when this thread's entry for the program
  // does not hold for these operands. The reference holds until this thread's next call.
  static const ReduceLayout& layout(const FusedProgram& program, std::uint64_t hash,
                                    const Shape& shape,
                                    std::span<const backends::cpu::Operand> ops);
  // launch_key's key for the launch whose layout() was the last call on this thread (same
  // arguments), made again only when the scalars or the outputs' aliasing differ.
  static const SpecializationKey& key(const FusedProgram& program, const ProgramFacts& facts,
                                      std::span<const backends::cpu::Operand> ops,
                                      std::span<const LaunchOperand> inputs,
                                      std::span<const LaunchOperand> outputs,
                                      std::span<const std::int64_t> scalars);

  struct Entry {
    const FusedProgram* program = nullptr;
    std::uint64_t hash = 0;
    Shape shape;
    boost::container::small_vector<std::int64_t, 32> strides;  // per operand, rank of shape each
    boost::container::small_vector<DType, 16> dtypes;
    ReduceLayout layout;
    // The key, for these scalars and this aliasing (bit o: output o's data is an input's).
    std::optional<SpecializationKey> key;
    boost::container::small_vector<std::int64_t, 8> key_scalars;
    std::uint64_t key_aliases = 0;
  };
};

}  // namespace streamfuse::jit

// Random tensor programs for the differential tests: element-wise ops of every kind over
// broadcasting shapes and every dtype, with scalars, constants, casts, reductions, reads at
// indices (index_select, gather: fused into element-wise kernels), matrix products (whose
// element-wise steps after them fuse into the product) and movement ops in between,
// and handles dropped or moved. Shapes are mostly small; one program in 32 has
// rows longer than a kernel's chunk or a reduction block, one in 32 an empty dimension. A program
// is generated once (on the fly, so every step is valid) and can then be replayed under any
// configuration.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

namespace streamfuse::testing {

struct Step {
  enum class Kind : std::uint8_t {
    kInput,    // from host data
    kStrided,  // a transposed or sliced view of a fresh input
    kUnary,
    kBinary,
    kScalarRhs,
    kScalarLhs,
    kWhere,
    kCast,
    kFull,
    kReduce,
    kDrop,
    kIndex,  // op 0: index_select(a, axis b, indices), op 1: gather(a, axis b, index); in range
    // matmul(a, w), w a fresh square input of `shape` and `dtype` (a's shape again); op 1 to 4:
    // then + - * / with b (b on the left when c, for + and *), op 5: then * the scalar.
    kMatmul,
  };
  Kind kind = Kind::kInput;
  int op = 0;                  // which unary/binary/reduction
  int a = -1, b = -1, c = -1;  // operand values (kReduce: a, then the axis and keepdim)
  bool move_a = false;         // pass `a` (for where: `b`) as a moved temporary (its last use)
  Scalar scalar;
  DType dtype = kF32;
  Shape shape;               // kIndex: the indices'; kMatmul: w's
  std::vector<double> data;  // kInput, kStrided, kMatmul (w); kIndex: the indices (of dtype)
};

class RandomProgram {
 public:
  // Generates a program of up to `max_ops` steps from `seed`, running it once under the current
  // configuration (which checks every step is valid). Without `products`, no kMatmul steps (the
  // emulated GPU has no cuBLAS to run them).
  RandomProgram(std::uint64_t seed, int max_ops, bool products = true);
  // Replays it on `device`; returns the values still held at the end: each its value number,
  // then its elements as bit patterns (NaN canonical).
  std::vector<std::vector<std::uint64_t>> run(Device device = Device::cpu()) const;
  // Runs it `calls` times as an sf::compile'd function of its host data (fresh tensors each call;
  // later calls replay); returns each call's values as run() does, and the function's stats.
  std::vector<std::vector<std::vector<std::uint64_t>>> run_compiled(
      int calls, CompileStats* stats, Device device = Device::cpu()) const;
  const std::vector<Step>& steps() const { return steps_; }
  std::string describe() const;

 private:
  std::vector<Step> steps_;
};

}  // namespace streamfuse::testing

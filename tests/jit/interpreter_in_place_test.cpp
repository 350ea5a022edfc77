// Both interpreters read a dense input of the dtype its load reads in place, instead of copying
// it into a register's slot. What that must not change: an output stored over an input's memory
// (an op's result reusing a dying input's buffer) does not alter what other outputs read from
// that input, whatever order the outputs are stored in, including an output that is the loaded
// input itself. (Broadcast, strided and converted inputs, still copied, are the differential
// suite's.)
#include <gtest/gtest.h>

#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/kernels.h"
#include "jit/interpreter.h"
#include "jit/program_check.h"
#include "jit/reduce_layout.h"

namespace streamfuse::jit {
namespace {

using backends::cpu::Operand;

Instruction load(std::int32_t out, std::int32_t input) {
  return {InstrKind::kLoad, core::OpKind::kAdd, ValueType::kFloat, kF16, out, input};
}
Instruction neg(std::int32_t out, std::int32_t in) {
  return {InstrKind::kOp, core::OpKind::kNeg, ValueType::kFloat, kF16, out, 0, {in, -1, -1}};
}

// out0 = -x (stored first, over x's memory), out1 = x itself (the load, stored after).
FusedProgram negate_and_pass_through() {
  FusedProgram p;
  p.inputs = {kF32};
  p.prologue = {load(0, 0), neg(1, 0)};
  p.outputs = {{1, kF32, false}, {0, kF32, false}};
  p.num_registers = 2;
  return p;
}

// Rows of x: out0 = -x (over x's memory), out1 = x, out2[row] = sum(-x).
FusedProgram negate_pass_through_and_sum() {
  FusedProgram p = negate_and_pass_through();
  p.anchor.kind = AnchorKind::kReduce;
  p.anchor.axis = 1;
  p.anchor.stages = {{core::OpKind::kSum, kF32, 1}};
  p.epilogue = {{InstrKind::kReduced, core::OpKind::kAdd, ValueType::kFloat, kF16, 2, 0}};
  p.outputs.push_back({2, kF32, true});
  p.num_registers = 3;
  return p;
}

std::vector<float> values(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 97) - 40.0f;
  return v;
}

Operand dense(std::vector<float>& v, std::int64_t row) {
  return {reinterpret_cast<char*>(v.data()), kF32, {row, 1}};
}

class InterpreterInPlace : public ::testing::TestWithParam<Shape> {};

TEST_P(InterpreterInPlace, AnOutputOverAnInputLeavesWhatOthersReadOfIt) {
  const Shape shape = GetParam();
  const FusedProgram p = negate_and_pass_through();
  ASSERT_EQ(program_problem(p), "");
  const std::vector<float> x = values(shape.numel());
  std::vector<float> memory = x, passed(x.size());
  // out0 over the input's memory: the buffer a dying input hands on.
  const std::vector<Operand> operands = {dense(memory, shape[1]), dense(memory, shape[1]),
                                         dense(passed, shape[1])};
  std::vector<const backends::cpu::Strides*> strides;
  for (const Operand& o : operands) strides.push_back(&o.strides);
  const backends::cpu::Iteration it = backends::cpu::make_iteration(shape, strides.data(), 3);
  interpret(p, it, operands, {}, backends::cpu::kernels(), 1);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(memory[i], -x[i]) << i;
    ASSERT_EQ(passed[i], x[i]) << i;
  }
}

TEST_P(InterpreterInPlace, AReductionsOutputOverAnInputLeavesWhatOthersReadOfIt) {
  const Shape shape = GetParam();
  const FusedProgram p = negate_pass_through_and_sum();
  ASSERT_EQ(program_problem(p), "");
  const std::vector<float> x = values(shape.numel());
  std::vector<float> memory = x, passed(x.size()), sums(static_cast<std::size_t>(shape[0]));
  const std::vector<Operand> operands = {dense(memory, shape[1]),
                                         dense(memory, shape[1]),
                                         dense(passed, shape[1]),
                                         {reinterpret_cast<char*>(sums.data()), kF32, {1, 0}}};
  const ReduceLayout layout = make_reduce_layout(p, shape, operands);
  interpret_reduce(p, layout, operands, {}, backends::cpu::kernels(), 1, ProgramFacts::of(p).hash);
  for (std::int64_t r = 0; r < shape[0]; ++r) {
    float sum = 0;  // exact: small integers
    for (std::int64_t c = 0; c < shape[1]; ++c) {
      const auto i = static_cast<std::size_t>(r * shape[1] + c);
      ASSERT_EQ(memory[i], -x[i]) << i;
      ASSERT_EQ(passed[i], x[i]) << i;
      sum -= x[i];
    }
    ASSERT_EQ(sums[static_cast<std::size_t>(r)], sum) << r;
  }
}

// Rows batched in one pass (short), a row of one chunk, and rows of several chunks.
INSTANTIATE_TEST_SUITE_P(Shapes, InterpreterInPlace,
                         ::testing::Values(Shape{4, 32}, Shape{3, 1024}, Shape{2, 5000}),
                         [](const auto& info) {
                           return std::to_string(info.param[0]) + "x" +
                                  std::to_string(info.param[1]);
                         });

}  // namespace
}  // namespace streamfuse::jit

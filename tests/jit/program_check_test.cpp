// program_problem, key_problem and key_fit_problem: every program and key the library makes
// passes, and each way a program or key read from a file could break what the interpreter and the
// code generators assume is caught.
#include <gtest/gtest.h>

#include <functional>

#include "backends/cpu/isa.h"
#include "jit/kernel_expressions.h"
#include "jit/program_check.h"
#include "jit/single_op_program.h"
#include "tests/jit/chain_program.h"

namespace streamfuse::jit {
namespace {

using core::OpCategory;

constexpr DType kAll[] = {kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64};
constexpr ValueType kTypes[] = {ValueType::kFloat, ValueType::kI32, ValueType::kI64,
                                ValueType::kBool, ValueType::kF64};

// `op` of kind `kind` over dtype `d` with `side` (0: tensors only, 1/2: a scalar on the left /
// right), as the frontend records it.
core::OpDesc elementwise_op(core::OpKind kind, DType d, int side, DType cast_to = kF32) {
  const core::OpCategory cat = core::op_category(kind);
  core::OpDesc op;
  op.kind = kind;
  op.attrs.dtype = d;
  op.attrs.scalar_side = static_cast<core::ScalarSide>(side);
  const int tensors = side == 0 ? core::op_info(kind).arity : 1;
  for (int i = 0; i < tensors; ++i)
    op.inputs.push_back({static_cast<core::TensorId>(i), Shape{4},
                         cat == core::OpCategory::kSelect && i == 0 ? kBool : d,
                         core::TensorStatus::kReadOnly});
  if (side != 0) op.scalars.push_back(Scalar(2));
  const DType out = cat == core::OpCategory::kCompare || cat == core::OpCategory::kLogical ? kBool
                    : cat == core::OpCategory::kCast                                       ? cast_to
                                                                                           : d;
  op.outputs.push_back({9, Shape{4}, out, core::TensorStatus::kNotInit});
  return op;
}

TEST(ProgramCheck, FormsAreTheInterpretersLoops) {
  const backends::cpu::ChunkOps& chunk = backends::cpu::kernels().chunk;
  for (int k = 0; k <= static_cast<int>(core::OpKind::kWhere); ++k) {
    const auto kind = static_cast<core::OpKind>(k);
    if (!core::is_elementwise(kind)) continue;
    for (ValueType t : kTypes)
      EXPECT_EQ(has_form(kind, t), chunk.op(kind, storage_dtype_of(t)) != nullptr)
          << core::op_name(kind) << " on " << value_type_name(t);
  }
}

// The programs of every element-wise op the eager path has a form for pass; the others fail for
// that reason alone.
TEST(ProgramCheck, EveryOpProgramWithAFormPasses) {
  int passed = 0;
  for (int k = 0; k <= static_cast<int>(core::OpKind::kCast); ++k) {
    const auto kind = static_cast<core::OpKind>(k);
    if (!core::is_elementwise(kind)) continue;
    const core::OpCategory cat = core::op_category(kind);
    const bool binary = cat == core::OpCategory::kBinary || cat == core::OpCategory::kCompare;
    for (DType d : kAll)
      for (DType to : kAll)
        for (int side = 0; side < (binary ? 3 : 1); ++side) {
          if (cat != core::OpCategory::kCast && to != kF32) continue;
          const FusedProgram p = single_op_program(elementwise_op(kind, d, side, to));
          bool formed = true;
          for (const Instruction& in : p.prologue)
            formed = formed && (in.kind != InstrKind::kOp || has_form(in.op, in.type));
          const std::string why = program_problem(p);
          if (formed) {
            EXPECT_EQ(why, "") << core::op_name(kind) << " " << dtype_name(d) << "\n"
                               << p.to_string();
            ++passed;
          } else {
            EXPECT_NE(why.find("form"), std::string::npos) << why;
          }
        }
  }
  EXPECT_GT(passed, 150);
  for (DType d : kAll) {
    core::OpDesc full;
    full.kind = core::OpKind::kFull;
    full.scalars.push_back(Scalar(1.5));
    full.outputs.push_back({0, Shape{4}, d, core::TensorStatus::kNotInit});
    EXPECT_EQ(program_problem(single_op_program(full)), "");
    for (DType to : kAll) EXPECT_EQ(program_problem(copy_program(d, to)), "");
  }
  EXPECT_EQ(program_problem(chain(3)), "");
}

// A well-formed program of every instruction kind: r0 = load in0 (f16 as float), r1 = scalar s0,
// r2 = r0 * r1, r3 = r2 > r0 (bool), r4 = where(r3, r2, r0), r5 = round r4 to f16, r6 = convert
// r3 to i32; outputs r5 as f16 and r6 as i32.
FusedProgram every_kind() {
  FusedProgram p;
  p.inputs = {kF16};
  p.scalars = {{ScalarArg::Mode::kOperand, ValueType::kFloat, kF32}};
  const auto op = [](core::OpKind k, std::int32_t out, std::int32_t a, std::int32_t b,
                     std::int32_t c) {
    return Instruction{InstrKind::kOp, k, ValueType::kFloat, kF16, out, 0, {a, b, c}};
  };
  p.prologue = {
      {InstrKind::kLoad, core::OpKind::kAdd, ValueType::kFloat, kF16, 0, 0},
      {InstrKind::kScalar, core::OpKind::kAdd, ValueType::kFloat, kF16, 1, 0},
      op(core::OpKind::kMul, 2, 0, 1, -1),
      op(core::OpKind::kGt, 3, 2, 0, -1),
      op(core::OpKind::kWhere, 4, 3, 2, 0),
      {InstrKind::kRound, core::OpKind::kAdd, ValueType::kFloat, kF16, 5, 0, {4, -1, -1}},
      {InstrKind::kConvert, core::OpKind::kAdd, ValueType::kI32, kF16, 6, 0, {3, -1, -1}}};
  p.outputs = {{5, kF16}, {6, kI32}};
  p.num_registers = 7;
  return p;
}

TEST(ProgramCheck, EachBrokenRuleIsCaught) {
  ASSERT_EQ(program_problem(every_kind()), "");
  const auto broken = [](const std::function<void(FusedProgram&)>& change) {
    FusedProgram p = every_kind();
    change(p);
    return program_problem(p);
  };
  EXPECT_NE(broken([](auto& p) { p.prologue[2].args[1] = 3; }), "") << "read before written";
  EXPECT_NE(broken([](auto& p) { p.prologue[2].args[1] = 99; }), "") << "no such register";
  EXPECT_NE(broken([](auto& p) { p.prologue[3].out = 2; }), "") << "written twice";
  EXPECT_NE(broken([](auto& p) { p.prologue[2].args[2] = 0; }), "") << "an operand past the op's";
  EXPECT_NE(broken([](auto& p) { p.prologue[4].args[0] = 2; }), "") << "where on a float condition";
  EXPECT_NE(broken([](auto& p) { p.prologue[4].args[1] = 3; }), "") << "where of a bool value";
  EXPECT_NE(broken([](auto& p) { p.prologue[2].op = core::OpKind::kLogicalAnd; }), "")
      << "logical in float";
  EXPECT_NE(broken([](auto& p) { p.prologue[2].op = core::OpKind::kCast; }), "")
      << "a cast as an op";
  EXPECT_NE(broken([](auto& p) { p.prologue[2].op = core::OpKind::kMatmul; }), "")
      << "not element-wise";
  EXPECT_NE(broken([](auto& p) { p.prologue[0].index = 1; }), "") << "load of no input";
  EXPECT_NE(broken([](auto& p) { p.prologue[1].index = -1; }), "") << "no such scalar";
  EXPECT_NE(broken([](auto& p) { p.scalars[0].type = ValueType::kI32; }), "") << "scalar type";
  EXPECT_NE(broken([](auto& p) { p.prologue[5].round = kF32; }), "") << "round to f32";
  EXPECT_NE(broken([](auto& p) { p.outputs[1].reg = 5; }), "") << "float stored as i32";
  EXPECT_NE(broken([](auto& p) { p.outputs[0].reg = 7; }), "") << "output of no register";
  EXPECT_NE(broken([](auto& p) { p.num_registers = 8; }), "") << "more registers than writes";
  // With no anchor all the code is the prologue: the same kernel has one form, one hash.
  EXPECT_EQ(broken([](auto& p) {
              p.epilogue.assign(p.prologue.begin() + 5, p.prologue.end());
              p.prologue.resize(5);
            }),
            "an epilogue with no anchor");
  EXPECT_NE(broken([](auto& p) {
              p.prologue[2].type = ValueType::kI32;
              p.prologue[2].op = core::OpKind::kDiv;
            }),
            "")
      << "integer division has no form";
  EXPECT_NE(broken([](auto& p) { p.inputs.assign(64, kF16); }), "") << "more than 64 operands";
}

SpecializationKey two_in_one_out() {
  SpecializationKey k;
  k.rank = 2;
  k.inputs = {{kF32, {StrideClass::kContiguous, StrideClass::kContiguous}, -1},
              {kF16, {StrideClass::kZero, StrideClass::kContiguous}, -1}};
  k.outputs = {{kF32, {StrideClass::kContiguous, StrideClass::kContiguous}, 0}};
  return k;
}

TEST(ProgramCheck, KeysOnTheirOwn) {
  ASSERT_EQ(key_problem(two_in_one_out()), "");
  const auto broken = [](const std::function<void(SpecializationKey&)>& change) {
    SpecializationKey k = two_in_one_out();
    change(k);
    return key_problem(k);
  };
  EXPECT_NE(broken([](auto& k) { k.rank = 9; }), "");
  EXPECT_NE(broken([](auto& k) { k.inputs[0].strides[2] = StrideClass::kZero; }), "")
      << "a class past the rank";
  EXPECT_NE(broken([](auto& k) { k.inputs[1].alias = 0; }), "") << "an input aliases";
  EXPECT_NE(broken([](auto& k) { k.outputs[0].alias = 2; }), "") << "alias of no input";
  EXPECT_NE(broken([](auto& k) { k.scalar_classes = {0}; }), "") << "one argument";
  EXPECT_NE(broken([](auto& k) { k.scalar_classes = {0, 1, 2}; }), "") << "no two equal";
  EXPECT_NE(broken([](auto& k) { k.scalar_classes = {0, 0, 1}; }), "") << "1 names no class";
  EXPECT_NE(broken([](auto& k) { k.scalar_classes = {0, 2, 0}; }), "") << "a later argument";
  EXPECT_EQ(broken([](auto& k) { k.scalar_classes = {0, 1, 0, 1}; }), "");
}

TEST(ProgramCheck, KeysAgainstTheirProgram) {
  // out = in0 + in1 / s0, s1 unused, s0 a divisor.
  FusedProgram p;
  p.inputs = {kF32, kF16};
  p.scalars = {{ScalarArg::Mode::kOperand, ValueType::kFloat, kF32},
               {ScalarArg::Mode::kOperand, ValueType::kFloat, kF32},
               {ScalarArg::Mode::kOperand, ValueType::kI32, kF32}};
  p.prologue = {{InstrKind::kLoad, core::OpKind::kAdd, ValueType::kFloat, kF16, 0, 0},
                {InstrKind::kLoad, core::OpKind::kAdd, ValueType::kFloat, kF16, 1, 1},
                {InstrKind::kScalar, core::OpKind::kAdd, ValueType::kFloat, kF16, 2, 0},
                {InstrKind::kOp, core::OpKind::kDiv, ValueType::kFloat, kF16, 3, 0, {1, 2, -1}},
                {InstrKind::kOp, core::OpKind::kAdd, ValueType::kFloat, kF16, 4, 0, {0, 3, -1}}};
  p.outputs = {{4, kF32}};
  p.num_registers = 5;
  ASSERT_EQ(program_problem(p), "");
  SpecializationKey key = two_in_one_out();
  key.exact_reciprocals = 1;
  key.scalar_classes = {0, 0, 2};
  ASSERT_EQ(key_fit_problem(p, key), "");
  const auto broken = [&](const std::function<void(SpecializationKey&)>& change) {
    SpecializationKey k = key;
    change(k);
    return key_fit_problem(p, k);
  };
  EXPECT_NE(broken([](auto& k) { k.inputs.pop_back(); }), "") << "operand count";
  EXPECT_NE(broken([](auto& k) { k.inputs[1].dtype = kF32; }), "") << "input dtype";
  EXPECT_NE(broken([](auto& k) { k.outputs[0].dtype = kF16; }), "") << "output dtype";
  EXPECT_NE(broken([](auto& k) { k.outputs[0].alias = 1; }), "") << "alias of another dtype";
  EXPECT_NE(broken([](auto& k) { k.outputs[0].strides[0] = StrideClass::kArgument; }), "")
      << "alias of another layout";
  EXPECT_NE(broken([](auto& k) { k.scalar_classes = {0, 0}; }), "") << "class count";
  EXPECT_NE(broken([](auto& k) { k.scalar_classes = {0, 1, 0}; }), "") << "i32 joins a float";
  EXPECT_NE(broken([](auto& k) { k.exact_reciprocals = 2; }), "") << "s1 divides nothing";
}

}  // namespace
}  // namespace streamfuse::jit

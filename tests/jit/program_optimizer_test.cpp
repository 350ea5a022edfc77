// Program simplification and scalar-equality specialization, on the programs themselves (their
// results are checked against unfused execution by tests/differential).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "jit/program_optimizer.h"
#include "jit/specialization.h"

namespace streamfuse::jit {
namespace {

using core::OpKind;

struct Builder {
  FusedProgram p;
  std::int32_t emit(Instruction in) {
    in.out = p.num_registers++;
    p.prologue.push_back(in);
    return in.out;
  }
  std::int32_t load(std::int32_t input) {
    if (static_cast<std::size_t>(input) >= p.inputs.size()) p.inputs.resize(input + 1, kF32);
    return emit({.kind = InstrKind::kLoad, .index = input});
  }
  std::int32_t scalar(std::int32_t index, ValueType t = ValueType::kFloat) {
    if (static_cast<std::size_t>(index) >= p.scalars.size())
      p.scalars.resize(index + 1, ScalarArg{});
    p.scalars[static_cast<std::size_t>(index)].type = t;
    return emit({.kind = InstrKind::kScalar, .type = t, .index = index});
  }
  std::int32_t op(core::OpKind k, std::int32_t a, std::int32_t b = -1, std::int32_t c = -1) {
    return emit({.kind = InstrKind::kOp, .op = k, .args = {a, b, c}});
  }
  void store(std::int32_t r) { p.outputs.push_back({r, kF32}); }
};

std::size_t count_ops(const FusedProgram& p, core::OpKind k) {
  std::size_t n = 0;
  for (const Instruction& in : p.prologue) n += in.kind == InstrKind::kOp && in.op == k;
  return n;
}

TEST(ProgramOptimizer, FoldsSignIdentities) {
  Builder b;
  const auto x = b.load(0);
  const auto nx = b.op(core::OpKind::kNeg, x);
  b.store(b.op(core::OpKind::kNeg, nx));                               // neg(neg x) = x
  b.store(b.op(core::OpKind::kAbs, nx));                               // abs(neg x) = abs x
  b.store(b.op(core::OpKind::kMul, nx, b.op(core::OpKind::kNeg, x)));  // (-x)(-x) = x x
  simplify(b.p);
  EXPECT_EQ(b.p.outputs[0].reg, 0) << b.p.to_string();  // the load itself
  EXPECT_EQ(count_ops(b.p, core::OpKind::kNeg), 0u) << b.p.to_string();
  EXPECT_EQ(count_ops(b.p, core::OpKind::kAbs), 1u);
  EXPECT_EQ(count_ops(b.p, core::OpKind::kMul), 1u);
}

TEST(ProgramOptimizer, MergesIdenticalInstructionsWithCommutativeOperandsInAnyOrder) {
  Builder b;
  const auto x = b.load(0), y = b.load(1);
  b.store(b.op(core::OpKind::kAdd, x, y));
  b.store(b.op(core::OpKind::kAdd, y, x));
  b.store(b.op(core::OpKind::kSub, x, y));
  b.store(b.op(core::OpKind::kSub, y, x));  // not commutative: kept
  b.store(b.op(core::OpKind::kExp, b.load(0)));
  b.store(b.op(core::OpKind::kExp, x));
  simplify(b.p);
  EXPECT_EQ(b.p.outputs[0].reg, b.p.outputs[1].reg) << b.p.to_string();
  EXPECT_NE(b.p.outputs[2].reg, b.p.outputs[3].reg);
  EXPECT_EQ(b.p.outputs[4].reg, b.p.outputs[5].reg);
  EXPECT_EQ(b.p.prologue.size(), 6u) << b.p.to_string();  // 2 loads, add, 2 subs, exp
}

TEST(ProgramOptimizer, DropsDeadCodeAndNumbersRegistersDensely) {
  Builder b;
  const auto x = b.load(0);
  b.op(core::OpKind::kExp, b.load(1));  // nothing stores it
  const auto s = b.scalar(0);
  b.store(b.op(core::OpKind::kMul, x, s));
  simplify(b.p);
  ASSERT_EQ(b.p.prologue.size(), 3u) << b.p.to_string();
  EXPECT_EQ(b.p.num_registers, 3);
  for (std::size_t i = 0; i < b.p.prologue.size(); ++i)
    EXPECT_EQ(b.p.prologue[i].out, static_cast<std::int32_t>(i));
  // Inputs and scalars keep their indices, so the caller's operand lists stay valid.
  EXPECT_EQ(b.p.inputs.size(), 2u);
  EXPECT_EQ(b.p.prologue[0].index, 0);
}

// The A&S erf of the GELU benchmark, split by sign: both branches use their own scalar arguments
// for the same coefficients. Merging equal arguments makes the branches one computation.
TEST(ProgramOptimizer, MergingEqualScalarsMergesWhatTheyCompute) {
  Builder b;
  const auto x = b.load(0);
  const auto branch = [&](std::int32_t v, std::int32_t first_scalar) {
    const auto t =
        b.op(core::OpKind::kRecip,
             b.op(core::OpKind::kAdd,
                  b.op(core::OpKind::kMul, b.op(core::OpKind::kAbs, v), b.scalar(first_scalar)),
                  b.scalar(first_scalar + 1)));
    return b.op(core::OpKind::kMul, t,
                b.op(core::OpKind::kExp, b.op(core::OpKind::kMul, b.op(core::OpKind::kNeg, v), v)));
  };
  const auto pos = branch(x, 0);
  const auto neg = b.op(core::OpKind::kNeg, branch(b.op(core::OpKind::kNeg, x), 2));
  b.store(b.op(core::OpKind::kWhere, b.op(core::OpKind::kGt, x, b.scalar(4)), pos, neg));

  FusedProgram distinct = b.p;
  simplify(distinct);
  EXPECT_EQ(count_ops(distinct, core::OpKind::kRecip), 2u) << distinct.to_string();

  const std::vector<std::int64_t> bits = {7, 9, 7, 9, 0};
  const auto classes = equal_scalar_classes(b.p.scalars, bits);
  ASSERT_EQ(classes.size(), 5u);
  EXPECT_EQ(std::vector<int>(classes.begin(), classes.end()), (std::vector<int>{0, 1, 0, 1, 4}));
  FusedProgram merged = b.p;
  merge_equal_scalars(merged, classes);
  EXPECT_EQ(count_ops(merged, core::OpKind::kRecip), 1u) << merged.to_string();
  EXPECT_EQ(count_ops(merged, core::OpKind::kExp), 1u);
  EXPECT_EQ(merged.scalars.size(), 5u) << "argument indices stay valid";
}

TEST(ProgramOptimizer, ScalarClassesNeedEqualBitsAndEqualTypes) {
  Builder b;
  b.scalar(0, ValueType::kFloat);
  b.scalar(1, ValueType::kI32);
  b.scalar(2, ValueType::kFloat);
  EXPECT_TRUE(equal_scalar_classes(b.p.scalars, std::vector<std::int64_t>{1, 1, 2}).empty())
      << "equal bits of different types are different values";
  const auto c = equal_scalar_classes(b.p.scalars, std::vector<std::int64_t>{5, 1, 5});
  EXPECT_EQ(std::vector<int>(c.begin(), c.end()), (std::vector<int>{0, 1, 0}));
}

TEST(ProgramOptimizer, ScalarClassesAreInTheKey) {
  SpecializationKey a, b;
  a.rank = b.rank = 1;
  b.scalar_classes = {0, 0};
  EXPECT_NE(a, b);
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_NE(b.to_string().find("scalars 0 0"), std::string::npos) << b.to_string();
}

std::int64_t float_bits(float f) {
  return static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(f));
}

TEST(ProgramOptimizer, ExactReciprocalsAreFloatPowersOfTwoThatDivide) {
  Builder b;
  const auto x = b.load(0);
  b.store(b.op(core::OpKind::kDiv, x, b.scalar(0)));
  b.store(b.op(core::OpKind::kMul, x, b.scalar(1)));  // multiplies: never flagged
  b.store(b.op(core::OpKind::kDiv, b.scalar(2), x));  // the dividend: never flagged
  const auto mask = [&](float divisor) {
    const std::vector<std::int64_t> bits = {float_bits(divisor), float_bits(2.0f),
                                            float_bits(4.0f)};
    return exact_reciprocal_scalars(ProgramFacts::of(b.p).divisor_scalars, bits);
  };
  EXPECT_EQ(mask(2.0f), 1u);
  EXPECT_EQ(mask(-0.5f), 1u);
  EXPECT_EQ(mask(0x1p-126f), 1u) << "1/s = 2^126 is a normal float";
  EXPECT_EQ(mask(0x1p126f), 1u);
  EXPECT_EQ(mask(0x1p127f), 0u) << "1/s = 2^-127 is subnormal";
  EXPECT_EQ(mask(0x1p-127f), 0u) << "a subnormal divisor";
  EXPECT_EQ(mask(3.0f), 0u);
  EXPECT_EQ(mask(std::sqrt(2.0f)), 0u);
  EXPECT_EQ(mask(0.0f), 0u);
  EXPECT_EQ(mask(std::numeric_limits<float>::infinity()), 0u);
  EXPECT_EQ(mask(std::numeric_limits<float>::quiet_NaN()), 0u);
}

TEST(ProgramOptimizer, DivisionsByExactReciprocalsBecomeMultiplications) {
  Builder b;
  const auto x = b.load(0);
  const auto s = b.scalar(0);
  b.store(b.op(core::OpKind::kDiv, b.op(core::OpKind::kDiv, x, s), s));
  b.store(b.op(core::OpKind::kDiv, x, b.scalar(1)));  // not flagged: stays a division
  multiply_by_exact_reciprocals(b.p, 1);
  EXPECT_EQ(count_ops(b.p, core::OpKind::kDiv), 1u) << b.p.to_string();
  EXPECT_EQ(count_ops(b.p, core::OpKind::kMul), 2u);
  EXPECT_EQ(count_ops(b.p, core::OpKind::kRecip), 1u) << "one reciprocal serves both";
}

}  // namespace
}  // namespace streamfuse::jit

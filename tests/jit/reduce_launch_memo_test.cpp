// jit::ReduceLaunchMemo: what a reduction launch derives, kept per thread, is what a fresh
// derivation gives, over launches of one program whose shapes, strides, aliasing and scalars
// change from one launch to the next (the memo must notice every change that matters).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/kernels/kernels.h"
#include "jit/launch_key.h"
#include "jit/reduce_launch_memo.h"
#include "jit/reduce_layout.h"

namespace streamfuse::jit {
namespace {

using backends::cpu::Operand;

// out[row] = sum(in0 * s0) over axis `axis`, one value per row.
FusedProgram row_sums(int axis) {
  FusedProgram p;
  p.inputs = {kF32};
  p.scalars = {{ScalarArg::Mode::kOperand, ValueType::kFloat}};
  p.prologue.push_back({InstrKind::kLoad, core::OpKind::kAdd, ValueType::kFloat, kF16, 0, 0});
  p.prologue.push_back({InstrKind::kScalar, core::OpKind::kAdd, ValueType::kFloat, kF16, 1, 0});
  p.prologue.push_back(
      {InstrKind::kOp, core::OpKind::kMul, ValueType::kFloat, kF16, 2, 0, {0, 1, -1}});
  p.anchor.kind = AnchorKind::kReduce;
  p.anchor.axis = axis;
  p.anchor.stages = {{core::OpKind::kSum, kF32, 2}};
  p.epilogue.push_back({InstrKind::kReduced, core::OpKind::kAdd, ValueType::kFloat, kF16, 3, 0});
  p.outputs = {{3, kF32, true}};
  p.num_registers = 4;
  return p;
}

// A launch: the input's strides over `shape`, the per-row output's (0 along the axis), and
// where each lies.
struct Launch {
  Shape shape;
  backends::cpu::Strides in_strides;
  backends::cpu::Strides out_strides;
  char* in_data;
  char* out_data;
  std::int64_t scale_bits;
  std::string what;
};

void expect_same_layout(const ReduceLayout& a, const ReduceLayout& b, int count) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.walk, b.walk);
  EXPECT_EQ(a.outer_rank, b.outer_rank);
  EXPECT_EQ(a.inner_rank, b.inner_rank);
  EXPECT_EQ(std::vector<int>(a.lanes.begin(), a.lanes.end()),
            std::vector<int>(b.lanes.begin(), b.lanes.end()));
  ASSERT_EQ(a.it.rank, b.it.rank);
  EXPECT_EQ(a.it.numel, b.it.numel);
  for (int d = 0; d < a.it.rank; ++d) {
    EXPECT_EQ(a.it.sizes[static_cast<std::size_t>(d)], b.it.sizes[static_cast<std::size_t>(d)]);
    for (int k = 0; k < count; ++k)
      EXPECT_EQ(a.it.strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)],
                b.it.strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)])
          << "operand " << k << ", dimension " << d;
  }
}

TEST(ReduceLaunchMemoTest, EveryLaunchDerivesWhatAFreshDerivationWould) {
  const FusedProgram p = row_sums(1);
  const ProgramFacts facts = ProgramFacts::of(p);
  std::vector<float> a(4096), b(4096);
  char* in = reinterpret_cast<char*>(a.data());
  char* out = reinterpret_cast<char*>(b.data());
  const std::int64_t one = 0x3f800000, two = 0x40000000;
  const std::vector<Launch> launches = {
      {{4, 32}, {32, 1}, {1, 0}, in, out, one, "[4, 32] rows"},
      {{4, 32}, {32, 1}, {1, 0}, in + 64, out + 64, one, "the same at other addresses"},
      {{4, 64}, {64, 1}, {1, 0}, in, out, one, "longer rows"},
      {{32, 4}, {1, 32}, {1, 0}, in, out, one, "transposed: rows strided along the axis"},
      {{32, 4}, {0, 1}, {1, 0}, in, out, one, "one row broadcast down the columns"},
      {{4, 32}, {32, 1}, {1, 0}, in, out, two, "rows again, another scale"},
      {{4, 32}, {32, 1}, {1, 0}, in, in, two, "written over its input"},
      {{1, 8}, {8, 1}, {1, 0}, in, out, one, "one row"},
      {{1, 8}, {0, 1}, {0, 0}, in, out, one, "one row, size-1 strides given otherwise"},
      {{4, 1}, {1, 1}, {1, 0}, in, out, one, "rows of one element"},
      {{4, 1}, {1, 0}, {1, 0}, in, out, one, "rows of one element, axis stride 0"},
      {{0, 8}, {8, 1}, {1, 0}, in, out, one, "no rows"},
  };
  for (int round = 0; round < 2; ++round) {
    for (const Launch& l : launches) {
      SCOPED_TRACE(l.what + (round ? " (again)" : ""));
      std::vector<Operand> ops(2);
      ops[0] = {l.in_data, kF32, l.in_strides};
      ops[1] = {l.out_data, kF32, l.out_strides};
      const ReduceLayout fresh = make_reduce_layout(p, l.shape, ops);
      expect_same_layout(ReduceLaunchMemo::layout(p, facts.hash, l.shape, ops), fresh, 2);
      Shape rows = l.shape;
      rows[1] = 1;
      const backends::TensorHandle none;
      const LaunchOperand inputs[] = {{&none, l.shape, kF32}};
      const LaunchOperand outputs[] = {{&none, rows, kF32}};
      const std::int64_t scalars[] = {l.scale_bits};
      const SpecializationKey& memo =
          ReduceLaunchMemo::key(p, facts, ops, inputs, outputs, scalars);
      const SpecializationKey key = launch_key(p, facts, fresh.it, ops, inputs, outputs, scalars);
      EXPECT_TRUE(memo == key) << memo.to_string() << " against " << key.to_string();
    }
  }
}

// Two programs whose entries share a thread's memo keep their own layouts.
TEST(ReduceLaunchMemoTest, ProgramsKeepTheirOwnEntries) {
  const FusedProgram by_rows = row_sums(1), by_columns = row_sums(0);
  std::vector<float> a(256), b(256);
  std::vector<Operand> ops(2);
  ops[0] = {reinterpret_cast<char*>(a.data()), kF32, {16, 1}};
  ops[1] = {reinterpret_cast<char*>(b.data()), kF32, {1, 0}};
  std::vector<Operand> column_ops = ops;
  column_ops[1].strides = {0, 1};
  const Shape shape{8, 16};
  for (int i = 0; i < 3; ++i) {
    expect_same_layout(
        ReduceLaunchMemo::layout(by_rows, ProgramFacts::of(by_rows).hash, shape, ops),
        make_reduce_layout(by_rows, shape, ops), 2);
    expect_same_layout(
        ReduceLaunchMemo::layout(by_columns, ProgramFacts::of(by_columns).hash, shape, column_ops),
        make_reduce_layout(by_columns, shape, column_ops), 2);
  }
}

}  // namespace
}  // namespace streamfuse::jit

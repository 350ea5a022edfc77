// The relative form: equal for programs that differ only in sizes or scalar values, different
// for programs that differ in structure, dtype, broadcast pattern or lifetimes.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include <streamfuse/streamfuse.h>

#include "core/relative.h"
#include "runtime/device_runtime.h"
#include "stream/stream.h"

namespace runtime = streamfuse::runtime;

namespace core = streamfuse::core;

namespace sf = streamfuse;
namespace st = streamfuse::stream;

namespace {

// Records what `program` does (from fresh inputs made outside the recording) and returns the
// relative form of those ops, then runs them.
std::vector<core::OpDesc> relative_form(const std::function<void()>& program) {
  sf::synchronize();
  const sf::Config saved = sf::config();
  sf::Config big = saved;
  big.queue_bound = 1 << 20;  // nothing runs before we look
  big.fusion = false;         // (the segment processor would run what it can)
  sf::set_config(big);
  st::Stream* s = runtime::DeviceRuntime::get(sf::Device::cpu()).streams().current();
  program();
  std::vector<core::OpDesc> ops;
  const st::OperationQueue& q = s->queue_for_testing();
  for (std::size_t i = 0; i < q.size(); ++i) ops.push_back(q.relative(i));
  sf::synchronize();
  sf::set_config(saved);
  return ops;
}

// A GELU-like program over x of shape [batch, 64], scaled by `c`.
std::function<void()> program(std::int64_t batch, float c, sf::DType dtype = sf::kF32) {
  return [=] {
    sf::Tensor x = sf::ones({batch, 64}, dtype);
    sf::Tensor b = sf::ones({64}, dtype);
    sf::Tensor y = (x * c + b) * sf::erf(x / 1.41f);
    sf::Tensor z = sf::sum(y, 1);
  };
}

TEST(RelativeFormTest, SizesAndScalarsDropOut) {
  const auto a = relative_form(program(32, 0.5f));
  const auto b = relative_form(program(7, 3.0f));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(core::hash_op(a[i]), core::hash_op(b[i])) << core::to_string(a[i]);
}

TEST(RelativeFormTest, IdsAndSizesAreDenseAndSizeOneIsPinned) {
  const auto ops = relative_form([] {
    sf::Tensor x = sf::ones({5, 1, 9});
    sf::Tensor y = sf::ones({9});
    sf::Tensor z = x * y;
  });
  // full, full, mul, then drops of x, y, z.
  ASSERT_GE(ops.size(), 3u);
  EXPECT_EQ(ops[0].outputs[0].id, 0u);
  EXPECT_EQ(ops[0].outputs[0].shape, (sf::Shape{1, 0, 2})) << "5 -> 1, 1 -> 0, 9 -> 2";
  EXPECT_EQ(ops[1].outputs[0].shape, (sf::Shape{2}));
  EXPECT_EQ(ops[2].inputs[0].id, 0u);
  EXPECT_EQ(ops[2].inputs[1].id, 1u);
  EXPECT_EQ(ops[2].outputs[0].id, 2u);
  EXPECT_EQ(ops[2].outputs[0].shape, (sf::Shape{1, 0, 2}));
  // Scalars are positional placeholders, numbered across the segment.
  EXPECT_EQ(ops[0].scalars[0].bits(), 0);
  EXPECT_EQ(ops[1].scalars[0].bits(), 1);
}

// Numbering scans while keys are few and indexes them past that: both number the same way,
// first appearance first, across the switch and after a clear.
TEST(DenseNumbering, NumbersByFirstAppearanceAcrossTheSwitchToAnIndex) {
  core::DenseNumbering numbering;
  for (int round = 0; round < 2; ++round) {
    std::vector<std::uint64_t> keys;
    for (std::uint64_t k = 0; k < 100; ++k) keys.push_back(k * 7919 % 1000 + 3);
    std::vector<std::uint64_t> first_seen;
    for (int pass = 0; pass < 3; ++pass) {
      for (std::uint64_t key : keys) {
        const auto at = std::find(first_seen.begin(), first_seen.end(), key);
        const std::uint64_t expected = static_cast<std::uint64_t>(at - first_seen.begin());
        if (at == first_seen.end()) first_seen.push_back(key);
        ASSERT_EQ(numbering.number(key), expected) << "round " << round << " key " << key;
      }
      EXPECT_EQ(numbering.size(), first_seen.size());
    }
    numbering.clear();
    EXPECT_EQ(numbering.size(), 0u);
  }
}

// A segment with more distinct tensors and sizes than the scan covers numbers them densely too.
TEST(RelativeFormTest, ManyTensorsAndSizesStayDense) {
  core::RelativeConverter converter;
  std::int64_t next_size = 0, next_id = 0;
  for (int i = 0; i < 60; ++i) {
    core::OpDesc op;
    op.kind = core::OpKind::kExp;
    const sf::Shape shape{100 + i, 200 + i};
    op.inputs.push_back({static_cast<core::TensorId>(1000 + 2 * i), shape, sf::kF32,
                         core::TensorStatus::kReadOnly});
    op.outputs.push_back({static_cast<core::TensorId>(1001 + 2 * i), shape, sf::kF32,
                          core::TensorStatus::kNotInit});
    core::OpDesc relative;
    converter.convert(op, relative);
    EXPECT_EQ(relative.inputs[0].id, static_cast<core::TensorId>(next_id++));
    EXPECT_EQ(relative.outputs[0].id, static_cast<core::TensorId>(next_id++));
    EXPECT_EQ(relative.inputs[0].shape, (sf::Shape{next_size + 1, next_size + 2}));
    EXPECT_EQ(relative.outputs[0].shape, relative.inputs[0].shape);
    next_size += 2;
  }
}

TEST(RelativeFormTest, StructureDtypeBroadcastAndLifetimesShowThrough) {
  const auto base = relative_form(program(32, 0.5f));
  EXPECT_NE(base, relative_form(program(32, 0.5f, sf::kF16))) << "dtype";
  EXPECT_NE(base, relative_form(program(1, 0.5f))) << "a size-1 batch broadcasts differently";
  EXPECT_NE(base, relative_form(program(64, 0.5f))) << "batch equal to the feature size";
  EXPECT_NE(base, relative_form([] {
              sf::Tensor x = sf::ones({32, 64});
              sf::Tensor b = sf::ones({64});
              sf::Tensor y = (x * 0.5f - b) * sf::erf(x / 1.41f);  // - instead of +
              sf::Tensor z = sf::sum(y, 1);
            }))
      << "structure";
  // Lifetimes: the same ops, but x's last use moves it (ReadWrite) instead of reading it.
  const auto kept = relative_form([] {
    sf::Tensor x = sf::ones({8});
    sf::Tensor y = x * 2.0f;
    sf::Tensor z = x + 1.0f;
  });
  const auto moved = relative_form([] {
    sf::Tensor x = sf::ones({8});
    sf::Tensor y = x * 2.0f;
    sf::Tensor z = std::move(x) + 1.0f;
  });
  EXPECT_NE(kept, moved);
  bool found_rw = false;
  for (const core::OpDesc& op : moved)
    for (const core::TensorDesc& in : op.inputs)
      found_rw |= op.kind == core::OpKind::kAdd && in.status == core::TensorStatus::kReadWrite;
  EXPECT_TRUE(found_rw);
}

TEST(RelativeFormTest, DropsRecordDestroyedHandles) {
  const auto ops = relative_form([] {
    sf::Tensor x = sf::ones({4});
    { sf::Tensor y = x + 1.0f; }  // y dies here
    sf::Tensor z = x * 3.0f;
  });
  ASSERT_GE(ops.size(), 4u);
  EXPECT_EQ(ops[2].kind, core::OpKind::kDrop);
  EXPECT_EQ(ops[2].inputs[0].id, 1u) << "y, the second tensor of the segment";
  EXPECT_EQ(ops[3].kind, core::OpKind::kMul);
}

// RelativeFormCheck accepts what the converter writes, op by op, and nothing a stream could not
// have recorded.
bool accepted(const std::vector<core::OpDesc>& ops) {
  core::RelativeFormCheck check;
  for (const core::OpDesc& op : ops)
    if (!check.accept(op)) return false;
  return true;
}

TEST(RelativeFormCheck, AcceptsWhatTheConverterWrites) {
  const auto ops = relative_form([] {
    sf::Tensor x = sf::ones({4, 64});
    sf::Tensor y = sf::where(x > 0.5f, x * 2.0f, sf::full({4, 64}, 1.0f));
    { sf::Tensor t = y + 1.0f; }
    sf::Tensor z = sf::sum(std::move(y), 1) + sf::ones({1});
  });
  ASSERT_GT(ops.size(), 6u);
  EXPECT_TRUE(accepted(ops));
  // A continuation is checked from the state the ops before it left: the final add (the drops
  // of x and y follow it; x, tensor 0, would also pass a fresh check).
  std::size_t last = ops.size() - 1;
  while (ops[last].kind == core::OpKind::kDrop) --last;
  ASSERT_EQ(ops[last].kind, core::OpKind::kAdd);
  core::RelativeFormCheck check;
  for (std::size_t i = 0; i < last; ++i) ASSERT_TRUE(check.accept(ops[i]));
  core::RelativeFormCheck copy = check;
  EXPECT_TRUE(copy.accept(ops[last]));
  EXPECT_FALSE(core::RelativeFormCheck().accept(ops[last])) << "numbered on, not from zero";
}

TEST(RelativeFormCheck, RejectsWhatNoStreamRecords) {
  const auto ops = relative_form([] {
    sf::Tensor x = sf::ones({4, 64});
    sf::Tensor y = x * 2.0f + 1.0f;
  });
  ASSERT_EQ(ops.size(), 5u);  // ones, mul, add, then the drops of y and x
  ASSERT_TRUE(accepted(ops));
  const auto with = [&](const std::function<void(std::vector<core::OpDesc>&)>& change) {
    std::vector<core::OpDesc> bad = ops;
    change(bad);
    return accepted(bad);
  };
  EXPECT_FALSE(with([](auto& o) { o[1].outputs[0].id = 7; })) << "an id skipped";
  EXPECT_FALSE(with([](auto& o) { o[1].outputs[0].id = 0; })) << "an output that exists";
  EXPECT_FALSE(with([](auto& o) {
    o[2].inputs[0].shape = sf::Shape{4, 64};
  })) << "a tensor reshaped";
  EXPECT_FALSE(with([](auto& o) { o[2].inputs[0].dtype = sf::kF16; })) << "a tensor's dtype";
  EXPECT_FALSE(with([](auto& o) {
    o[0].outputs[0].shape = sf::Shape{2, 1};
  })) << "a size id skipped";
  EXPECT_FALSE(with([](auto& o) {
    o[2].scalars[0] = sf::Scalar::from_bits(sf::Scalar::Kind::kFloat, 0);
  })) << "a placeholder out of order";
}

}  // namespace

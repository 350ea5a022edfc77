// The element-wise builder on segments recorded through the API: what it accepts, how it
// groups ops into kernels, what it stores, and which buffers it reuses.
#include <gtest/gtest.h>

#include <streamfuse/streamfuse.h>

#include "bench/gelu_variants.h"
#include "fusion/builders/elementwise/builder.h"
#include "tests/fusion/recorded_segment.h"

namespace sf = streamfuse;
namespace fu = streamfuse::fusion;

namespace {

using streamfuse::testing::build_elementwise;
using streamfuse::testing::Built;

std::size_t published(const fu::ElementwiseOptimization& o) {
  std::size_t n = 0;
  for (const auto& t : o.tensors()) n += t.publish;
  return n;
}

TEST(ElementwiseBuilderTest, AChainBecomesOneKernelWritingOnlyTheResult) {
  const sf::Tensor x = sf::randn({8, 32});
  sf::Tensor y;
  const Built b = build_elementwise([&] {
    sf::Tensor t = sf::recip(sf::abs(x) * 0.3f + 1.0f);
    sf::Tensor e = 1.0f - t * t * sf::exp(-x * x);
    y = sf::where(x > 0.0f, e, -e) * x;
  });
  ASSERT_TRUE(b.optimization);
  EXPECT_EQ(b.len, b.recorded) << "every op, drops included, was taken";
  ASSERT_EQ(b.optimization->kernels().size(), 1u);
  const fu::ElementwiseKernel& k = b.optimization->kernels()[0];
  EXPECT_EQ(k.inputs.size(), 1u) << "x is read once";
  EXPECT_EQ(k.outputs.size(), 1u) << "intermediates whose handles died are not written";
  EXPECT_EQ(published(*b.optimization), 1u);
  // 14 ops reading and writing 1 KiB tensors (256 B for the bool mask) unfused; fused: 2 KiB.
  EXPECT_GT(b.score, 20 * 1024);
}

TEST(ElementwiseBuilderTest, IntermediatesStillHeldAreWritten) {
  const sf::Tensor x = sf::randn({16});
  sf::Tensor kept, y;
  const Built b = build_elementwise([&] {
    kept = sf::exp(x);
    y = kept * 2.0f + 1.0f;
  });
  ASSERT_TRUE(b.optimization);
  ASSERT_EQ(b.optimization->kernels().size(), 1u);
  EXPECT_EQ(b.optimization->kernels()[0].outputs.size(), 2u);
  EXPECT_EQ(published(*b.optimization), 2u);
}

TEST(ElementwiseBuilderTest, ShapesMakeSeparateKernelsInOneSegment) {
  const sf::Tensor a = sf::randn({4, 8}), c = sf::randn({16});
  sf::Tensor p, q;
  const Built b = build_elementwise([&] {
    sf::Tensor a1 = a * 2.0f;
    sf::Tensor c1 = c + 1.0f;  // another shape, independent
    p = sf::exp(a1) - a1;
    q = sf::exp(c1) * c1;
  });
  ASSERT_TRUE(b.optimization);
  EXPECT_EQ(b.len, b.recorded);
  EXPECT_EQ(b.optimization->kernels().size(), 2u);
}

TEST(ElementwiseBuilderTest, ALaterGroupReadsWhatAnEarlierOneStores) {
  const sf::Tensor v = sf::randn({8}), m = sf::randn({4, 8});
  sf::Tensor out;
  const Built b = build_elementwise([&] {
    sf::Tensor v2 = v * v;  // group 0: [8]
    out = m * v2 + 1.0f;    // group 1: [4, 8], broadcasts v2
  });
  ASSERT_TRUE(b.optimization);
  ASSERT_EQ(b.optimization->kernels().size(), 2u);
  EXPECT_EQ(b.optimization->kernels()[0].outputs.size(), 1u) << "v2 is stored for group 1";
  EXPECT_EQ(published(*b.optimization), 1u) << "but its handle died: not published";
}

TEST(ElementwiseBuilderTest, ClosesOnOpsItCannotFuse) {
  const sf::Tensor x = sf::randn({4, 8});
  sf::Tensor s;
  const Built b = build_elementwise([&] {
    sf::Tensor y = sf::exp(x) + 1.0f;
    s = sf::sum(y, 1);
  });
  EXPECT_EQ(b.len, 2u) << "exp and add; the reduction closes the builder";
  EXPECT_LT(b.len, b.recorded);
}

TEST(ElementwiseBuilderTest, MovedInputsLendTheirBuffer) {
  sf::Tensor x = sf::randn({64});
  sf::Tensor y;
  const Built b = build_elementwise([&] { y = sf::exp(std::move(x)) * 2.0f; });
  ASSERT_TRUE(b.optimization);
  const fu::ElementwiseKernel& k = b.optimization->kernels()[0];
  ASSERT_EQ(k.lend.size(), 1u);
  EXPECT_EQ(k.lend[0], 0) << "x dies here and has y's dtype and shape";
  bool erased = false;
  for (const auto& t : b.optimization->tensors()) erased |= t.erase;
  EXPECT_TRUE(erased) << "x's handle goes after the run";
}

TEST(ElementwiseBuilderTest, ConstantsFromFullAreInlined) {
  const sf::Tensor x = sf::randn({32});
  sf::Tensor y;
  const Built b =
      build_elementwise([&] { y = sf::where(x > 0.0f, x, 0.5f); });  // 0.5 becomes full({})
  ASSERT_TRUE(b.optimization);
  ASSERT_EQ(b.optimization->kernels().size(), 1u);
  const fu::ElementwiseKernel& k = b.optimization->kernels()[0];
  EXPECT_EQ(k.inputs.size(), 1u) << "the constant is a scalar argument, not a tensor read";
  EXPECT_EQ(k.scalars.size(), 2u) << "0.0 for the comparison and the fill value 0.5";
}

TEST(ElementwiseBuilderTest, ScoreIsNotPositiveForASingleOp) {
  const sf::Tensor x = sf::randn({32});
  sf::Tensor y;
  const Built b = build_elementwise([&] { y = sf::exp(x); });
  EXPECT_LE(b.score, 0) << "one op reads and writes the same either way";
}

// The README's gelu_custom (about 20 ops, a sign-split A&S erf) is one kernel reading x once and
// writing the result once.
TEST(ElementwiseBuilderTest, TheReadmesGeluCustomIsOneKernel) {
  const sf::Tensor x = sf::randn({4, 64});
  sf::Tensor y;
  const Built b =
      build_elementwise([&] { y = sf::bench::gelu(x, sf::bench::GeluVariant::kWithCustomErf); });
  ASSERT_TRUE(b.optimization);
  EXPECT_EQ(b.len, b.recorded);
  ASSERT_EQ(b.optimization->kernels().size(), 1u);
  EXPECT_EQ(b.optimization->kernels()[0].inputs.size(), 1u);
  EXPECT_EQ(b.optimization->kernels()[0].outputs.size(), 1u);
}

// In a loop, the previous iteration's result is dropped in the segment that makes the next one;
// its memory is released before the new result is allocated, so the loop holds one at a time.
TEST(ElementwiseBuilderTest, ALoopHoldsOneResultAtATime) {
  const sf::Config saved = sf::config();
  sf::Config c = saved;
  c.fusion = true;
  c.jit = sf::JitMode::kInterpret;
  sf::set_config(c);
  const sf::Tensor x = sf::randn({256, 1024});
  const auto bytes = static_cast<std::int64_t>(x.numel() * sizeof(float));
  for (int i = 0; i < 2; ++i) {  // explore and store the plans
    sf::Tensor y = sf::bench::gelu(x, sf::bench::GeluVariant::kWithCustomErf);
    sf::synchronize();
  }
  sf::synchronize();
  sf::reset_peak_memory_stats();
  const std::int64_t base = sf::memory_stats().bytes_in_use;
  for (int i = 0; i < 4; ++i) {
    sf::Tensor y = sf::bench::gelu(x, sf::bench::GeluVariant::kWithCustomErf);
    sf::synchronize();
  }
  EXPECT_LE(sf::memory_stats().peak_bytes_in_use - base, bytes);
  sf::set_config(saved);
}

}  // namespace

// Preparing convolutions ahead of their first run, as matmuls are: prepare() makes the oneDNN
// primitive a later run() uses (run reports the process's first use), checks the shapes it is
// given (they come from files), and the runtime remembers the convolutions a process ran.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/cpu/conv.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu {
namespace {

ConvProblem problem(std::int64_t channels = 4, std::int32_t stride = 1) {
  ConvProblem p;
  p.x = Shape{2, channels, 8, 8};
  p.w = Shape{3, channels, 3, 3};
  p.window.kernel = {3, 3};
  p.window.stride = {stride, stride};
  p.window.padding = {1, 1};
  const std::int64_t out = (8 + 2 - 3) / stride + 1;
  p.out = Shape{2, 3, out, out};
  return p;
}

TEST(ConvPrepare, MakesThePrimitiveTheFirstRunUses) {
  ConvEngine engine;
  const ConvProblem p = problem();
  EXPECT_TRUE(engine.prepare(p, 0));
  EXPECT_TRUE(engine.prepare(p, 0));  // found: nothing new
  EXPECT_EQ(engine.cached_primitives(), 1u);
  std::vector<float> x(2 * 4 * 64, 1.0f), w(3 * 4 * 9, 0.5f), out(2 * 3 * 64, -1.0f);
  EXPECT_TRUE(engine.run(p, x.data(), w.data(), out.data(), 0));  // the first run
  EXPECT_FALSE(engine.run(p, x.data(), w.data(), out.data(), 0));
  EXPECT_EQ(engine.cached_primitives(), 1u);
  EXPECT_FLOAT_EQ(out[9], 4 * 9 * 0.5f);  // (1, 1): the whole window inside
  EXPECT_FLOAT_EQ(out[0], 4 * 4 * 0.5f);  // (0, 0): a corner, 4 of 9 positions inside
  // Another stride: another primitive.
  EXPECT_TRUE(engine.prepare(problem(4, 2), 0));
  EXPECT_EQ(engine.cached_primitives(), 2u);
}

TEST(ConvPrepare, ShapesThatAreNotAConvolutionAreErrors) {
  ConvEngine engine;
  ConvProblem p = problem();
  p.out = Shape{2, 3, 7, 8};
  EXPECT_THROW(engine.prepare(p, 0), ShapeError);  // not its result
  p = problem();
  p.w = Shape{3, 5, 3, 3};
  EXPECT_THROW(engine.prepare(p, 0), ShapeError);  // channels differ
  p = problem();
  p.window.kernel = {2, 3};
  EXPECT_THROW(engine.prepare(p, 0), ShapeError);  // not the weight's kernel
  p = problem();
  p.dtype = kI32;
  EXPECT_THROW(engine.prepare(p, 0), DTypeError);
  EXPECT_EQ(engine.cached_primitives(), 0u);
  // Empty problems prepare nothing.
  p = problem(0);
  EXPECT_FALSE(engine.prepare(p, 0));
}

}  // namespace
}  // namespace streamfuse::backends::cpu

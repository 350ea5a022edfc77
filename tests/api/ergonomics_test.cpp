// What users reach for first: += -= *= /= with value semantics, reductions as members, and
// DType, Shape and Device printed with <<.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"

namespace sf = streamfuse;
using streamfuse::testing::expect_error;

namespace {

TEST(CompoundAssignment, ComputesAsTheBinaryOps) {
  sf::Tensor a = sf::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  const sf::Tensor b = sf::from_vector(std::vector<float>{10, 20});
  a += b;     // b broadcasts
  a -= 1.0f;  // scalars
  a *= a;     // itself
  a /= 2;
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{50, 220.5f, 72, 264.5f}));
  EXPECT_EQ(a.shape(), sf::Shape({2, 2}));
}

// The handle is rebound: another handle of the old value keeps it; a lone handle's memory takes
// the result (no new memory for a loop of updates).
TEST(CompoundAssignment, HasValueSemanticsAndReusesALoneHandlesMemory) {
  sf::Tensor a = sf::ones({4});
  const sf::Tensor kept = a;
  a += 1.0f;
  EXPECT_EQ(kept.to_vector<float>(), std::vector<float>(4, 1.0f));
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(4, 2.0f));

  sf::Tensor x = sf::zeros({256, 256});
  sf::synchronize();
  sf::reset_peak_memory_stats();
  const std::int64_t before = sf::memory_stats().bytes_in_use;
  for (int i = 0; i < 20; ++i) x += 0.5f;
  sf::synchronize();
  EXPECT_LT(sf::memory_stats().peak_bytes_in_use - before, 256 * 256 * 4);
  EXPECT_EQ(x.to_vector<float>()[7], 10.0f);
}

// The result keeps a's dtype; within floats or within integers it converts back, a float result
// for an integer tensor is an error, and an error loses nothing.
TEST(CompoundAssignment, KeepsTheDtypeAndShapeOrSaysWhy) {
  sf::Tensor h = sf::ones({2}, sf::kF16);
  h += sf::ones({2}) * 0.5f;  // f32 operand, f16 result
  EXPECT_EQ(h.dtype(), sf::kF16);
  EXPECT_EQ(h.to(sf::kF32).to_vector<float>(), (std::vector<float>{1.5f, 1.5f}));
  sf::Tensor i = sf::ones({2}, sf::kI32);
  i *= sf::full({2}, 3, sf::kI64);
  EXPECT_EQ(i.dtype(), sf::kI32);
  EXPECT_EQ(i.to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 3}));

  expect_error<sf::DTypeError>([&] { i += 0.5f; }, {"add=", "f32", "[2] i32"});
  expect_error<sf::DTypeError>([&] { i /= 2; }, {"div=", "f32"});
  EXPECT_EQ(i.to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 3})) << "the error lost i";
  sf::Tensor small = sf::ones({3});
  expect_error<sf::ShapeError>(
      [&] {
        small += sf::ones({2, 3});
      },
      {"add=", "[3] f32", "[2, 3] f32"});
  EXPECT_EQ(small.shape(), sf::Shape({3}));
  sf::Tensor flags = sf::ones({2}, sf::kBool);
  expect_error<sf::DTypeError>([&] { flags += flags; }, {"add", "bool"});
  sf::Tensor undefined;
  expect_error<sf::Error>([&] { undefined += 1.0f; }, {"add="});
}

TEST(ReductionMembers, AreTheFunctions) {
  const sf::Tensor x = sf::from_vector(std::vector<float>{1, 5, 3, 4, 2, 6}, {2, 3});
  EXPECT_EQ(x.sum().item<float>(), 21.0f);
  EXPECT_EQ(x.sum(1).to_vector<float>(), (std::vector<float>{9, 12}));
  EXPECT_EQ(x.mean(-1, true).shape(), sf::Shape({2, 1}));
  EXPECT_EQ(x.max(0).to_vector<float>(), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(x.min().item<float>(), 1.0f);
  EXPECT_EQ(x.argmax(1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(sf::Tensor(x).sum(0).to_vector<float>(), (std::vector<float>{5, 7, 9}));
}

TEST(Printing, DtypeShapeAndDevice) {
  std::ostringstream os;
  os << sf::kBF16 << " " << sf::Shape({2, 3}) << " " << sf::Device::cpu() << " "
     << sf::Device::cuda(1) << " " << sf::Shape({});
  EXPECT_EQ(os.str(), "bf16 [2, 3] cpu cuda:1 []");
}

}  // namespace

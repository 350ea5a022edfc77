// operator<< formats.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include <streamfuse/streamfuse.h>

namespace sf = streamfuse;

namespace {

std::string print(const sf::Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

TEST(PrintingTest, MatricesAlignLikePyTorch) {
  EXPECT_EQ(print(sf::matmul(sf::ones({2, 3}), sf::ones({3, 4}))),
            "tensor([[3., 3., 3., 3.],\n        [3., 3., 3., 3.]])");
  EXPECT_EQ(print(sf::from_vector(std::vector<float>{1.5f, -20.25f})),
            "tensor([  1.5000, -20.2500])");
  EXPECT_EQ(print(sf::arange(3)), "tensor([0, 1, 2])");
  EXPECT_EQ(print(sf::arange(3).to(sf::kI32)), "tensor([0, 1, 2], dtype=i32)");
  EXPECT_EQ(print(sf::from_vector(std::vector<bool>{true, false})),
            "tensor([ true, false], dtype=bool)");
  EXPECT_EQ(print(sf::full({}, 2.0f)), "tensor(2.)");
  EXPECT_EQ(print(sf::zeros({0, 2})), "tensor([], shape=[0, 2])");
  EXPECT_EQ(print(sf::Tensor()), "tensor(undefined)");
}

TEST(PrintingTest, ThreeDimensionsSeparateBlocks) {
  EXPECT_EQ(print(sf::arange(8).reshape({2, 2, 2})),
            "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])");
}

TEST(PrintingTest, SpecialValuesAndScientific) {
  EXPECT_EQ(print(sf::from_vector(std::vector<float>{NAN, INFINITY, -INFINITY, 1})),
            "tensor([ nan,  inf, -inf,   1.])");
  EXPECT_EQ(print(sf::from_vector(std::vector<float>{1e-6f, 1.0f})),
            "tensor([1.0000e-06, 1.0000e+00])");
  EXPECT_EQ(print(sf::full({1}, 0.5, sf::kF16)), "tensor([0.5000], dtype=f16)");
}

TEST(PrintingTest, LargeTensorsAreSummarized) {
  const std::string s = print(sf::arange(2000));
  EXPECT_EQ(s, "tensor([   0,    1,    2, ..., 1997, 1998, 1999])");
  const std::string m = print(sf::zeros({100, 100}, sf::kI32));
  EXPECT_NE(m.find("..."), std::string::npos);
  EXPECT_LT(m.size(), 400u);
}

}  // namespace

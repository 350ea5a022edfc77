// Tensor shapes: up to kMaxRank dimensions stored inline, so shapes never allocate.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>

namespace streamfuse {

// The most dimensions a tensor may have. Bounded so shapes, strides and kernel signatures live
// inline without allocation; more dimensions throw ShapeError.
inline constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);  // NOLINT: `randn({2, 3})` reads naturally
  explicit Shape(std::span<const std::int64_t> dims);

  int rank() const { return rank_; }
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) { return dims_[static_cast<std::size_t>(i)]; }
  // Product of the dimensions (1 for rank 0).
  std::int64_t numel() const;
  const std::int64_t* begin() const { return dims_.data(); }
  const std::int64_t* end() const { return dims_.data() + rank_; }
  std::span<const std::int64_t> dims() const {
    return {dims_.data(), static_cast<std::size_t>(rank_)};
  }

  // Appends a dimension; throws ShapeError past kMaxRank.
  void push_back(std::int64_t d);
  // "[2, 3]".
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.rank_ != b.rank_) return false;
    for (int i = 0; i < a.rank_; ++i)
      if (a.dims_[static_cast<std::size_t>(i)] != b.dims_[static_cast<std::size_t>(i)])
        return false;
    return true;
  }

 private:
  std::array<std::int64_t, kMaxRank> dims_{};
  std::int8_t rank_ = 0;
};

// Writes to_string(): "[2, 3]".
std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace streamfuse

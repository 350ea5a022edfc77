// Element types, the 16-bit float value types, scalars and type promotion.
#pragma once

#include <bit>
#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <type_traits>

namespace streamfuse {

// Element type of a tensor. `using enum` below lets users write `sf::kF16`. New dtypes are
// appended: the values are persisted (plans, kernels), so an existing one never changes.
enum class DType : std::uint8_t { kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64 };
using enum DType;

inline constexpr int kNumDTypes = 9;

// Bytes per element.
constexpr std::size_t element_size(DType d) {
  switch (d) {
    case kF32:
    case kI32:
      return 4;
    case kF16:
    case kBF16:
      return 2;
    case kI64:
    case kF64:
      return 8;
    case kBool:
    case kI8:
    case kU8:
      return 1;
  }
  return 0;
}
constexpr bool is_floating(DType d) { return d == kF32 || d == kF16 || d == kBF16 || d == kF64; }
constexpr bool is_integral(DType d) { return d == kI32 || d == kI64 || d == kI8 || d == kU8; }

// Short name as used in messages: "f32", "bool", ...
std::string_view dtype_name(DType d);

// The dtype both operands convert to in a binary op (NumPy/PyTorch rules over this lattice:
// bool < {u8, i8} < i32 < i64 < {f16, bf16} < f32 < f64; f16 with bf16 gives f32). u8 with i8 gives
// i32: PyTorch gives i16, the smallest type holding both ranges, and streamfuse has no i16; i32
// is the next one that does (so `u8 + i8` never wraps, as in PyTorch, but is wider).
DType promote_types(DType a, DType b);

// IEEE binary16 value, stored as its bits. Converts to and from float with round-to-nearest-even.
struct Half {
  std::uint16_t bits = 0;
  Half() = default;
  explicit Half(float f);
  explicit operator float() const;
  static constexpr Half from_bits(std::uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  friend bool operator==(Half a, Half b) { return a.bits == b.bits; }
};

// bfloat16 value (the upper half of a float), stored as its bits; round-to-nearest-even.
struct BFloat16 {
  std::uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f);
  explicit operator float() const { return std::bit_cast<float>(std::uint32_t{bits} << 16); }
  static constexpr BFloat16 from_bits(std::uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  friend bool operator==(BFloat16 a, BFloat16 b) { return a.bits == b.bits; }
};

// The dtype that stores C++ type T (float, Half, BFloat16, int32_t, int64_t, bool, int8_t,
// uint8_t, double).
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return kF32;
  else if constexpr (std::is_same_v<T, Half>)
    return kF16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return kBF16;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return kI32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return kI64;
  else if constexpr (std::is_same_v<T, bool>)
    return kBool;
  else if constexpr (std::is_same_v<T, std::int8_t>)
    return kI8;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return kU8;
  else if constexpr (std::is_same_v<T, double>)
    return kF64;
  else
    static_assert(sizeof(T) == 0, "streamfuse: no dtype stores this C++ type");
}

// A number given where a tensor could be: `x * 2.0f`, `full(shape, 3)`. It keeps its category
// (bool, integer, floating), which decides promotion: a scalar never widens a tensor of its own
// category or above (`f16 * 2.5` stays f16), and lifts a lower one to the category's default
// dtype (`i32 * 2.5` is f32, `bool + 1` is i64, `u8 + 1` stays u8, `f64 * 2.5` stays f64), as in
// PyTorch.
class Scalar {
 public:
  enum class Kind : std::uint8_t { kBool, kInt, kFloat };

  Scalar() = default;
  template <class T>
  requires std::is_arithmetic_v<T> Scalar(
      T v) {  // NOLINT(google-explicit-constructor): scalars convert implicitly by design
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::kBool;
      bits_ = v ? 1 : 0;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::kInt;
      bits_ = static_cast<std::int64_t>(v);
    } else {
      kind_ = Kind::kFloat;
      bits_ = std::bit_cast<std::int64_t>(static_cast<double>(v));
    }
  }
  Scalar(Half h) : Scalar(static_cast<float>(h)) {}      // NOLINT
  Scalar(BFloat16 h) : Scalar(static_cast<float>(h)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::kFloat; }
  // The value as double / int64 (a float truncates toward zero, saturating; NaN gives 0).
  double to_double() const {
    return kind_ == Kind::kFloat ? std::bit_cast<double>(bits_) : static_cast<double>(bits_);
  }
  std::int64_t to_int() const;
  // The dtype a scalar of this category has on its own: f32, i64 or bool.
  DType default_dtype() const;
  // The raw 64 bits (an int64 or the bits of a double) and the inverse, for serialization and
  // for the placeholders of an op's relative form.
  std::int64_t bits() const { return bits_; }
  static Scalar from_bits(Kind kind, std::int64_t bits) {
    Scalar s;
    s.kind_ = kind;
    s.bits_ = bits;
    return s;
  }

  // Bitwise: two NaNs with the same bits are equal, 0.0 and -0.0 are not.
  friend bool operator==(const Scalar& a, const Scalar& b) = default;

 private:
  Kind kind_ = Kind::kInt;
  std::int64_t bits_ = 0;
};

// The dtype of `tensor op scalar` for an arithmetic op (see Scalar).
DType promote_with_scalar(DType tensor, const Scalar& s);

// Writes dtype_name(d): "f32", "bf16", ...
std::ostream& operator<<(std::ostream& os, DType d);

}  // namespace streamfuse

// The public value types of dtype.h.
#include "streamfuse/dtype.h"

#include <cmath>
#include <limits>

#include "core/float16.h"

namespace streamfuse {

std::string_view dtype_name(DType d) {
  switch (d) {
    case kF32:
      return "f32";
    case kF16:
      return "f16";
    case kBF16:
      return "bf16";
    case kI32:
      return "i32";
    case kI64:
      return "i64";
    case kBool:
      return "bool";
    case kI8:
      return "i8";
    case kU8:
      return "u8";
    case kF64:
      return "f64";
  }
  return "?";
}

namespace {
// Position in the promotion lattice. Of two dtypes of one rank neither holds the other: f16 and
// bf16 meet at f32, u8 and i8 at i32 (see promote_types).
int promotion_rank(DType d) {
  switch (d) {
    case kBool:
      return 0;
    case kU8:
    case kI8:
      return 1;
    case kI32:
      return 2;
    case kI64:
      return 3;
    case kF16:
    case kBF16:
      return 4;
    case kF32:
      return 5;
    case kF64:
      return 6;
  }
  return 0;
}
// 0 bool, 1 integer, 2 floating.
int category(DType d) { return d == kBool ? 0 : is_integral(d) ? 1 : 2; }
int category(Scalar::Kind k) {
  return k == Scalar::Kind::kBool ? 0 : k == Scalar::Kind::kInt ? 1 : 2;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const int ra = promotion_rank(a), rb = promotion_rank(b);
  if (ra == rb) return is_floating(a) ? kF32 : kI32;  // f16 with bf16, u8 with i8
  return ra > rb ? a : b;
}

DType promote_with_scalar(DType tensor, const Scalar& s) {
  return category(s.kind()) <= category(tensor) ? tensor : s.default_dtype();
}

std::int64_t Scalar::to_int() const {
  if (kind_ != Kind::kFloat) return bits_;
  const double d = std::bit_cast<double>(bits_);
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775807.0) return std::numeric_limits<std::int64_t>::max();
  if (d <= -9223372036854775808.0) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(d);
}

DType Scalar::default_dtype() const {
  switch (kind_) {
    case Kind::kBool:
      return kBool;
    case Kind::kInt:
      return kI64;
    case Kind::kFloat:
      return kF32;
  }
  return kF32;
}

Half::Half(float f) : bits(core::float_to_half_bits(f)) {}
Half::operator float() const { return core::half_bits_to_float(bits); }
BFloat16::BFloat16(float f) : bits(core::float_to_bf16_bits(f)) {}

}  // namespace streamfuse

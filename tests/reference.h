// Test helpers: tensors from and to doubles, rounding to a dtype, and distances in ulps, so
// tests can compare any op with a double-precision reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

namespace streamfuse::testing {

// Tests say `using namespace streamfuse::testing;` and get the dtype vocabulary with it.
using ::streamfuse::DType;
using ::streamfuse::dtype_name;
using ::streamfuse::is_floating;
using enum ::streamfuse::DType;

// `x` rounded to the nearest value of `dtype` (integers truncate, saturating; i8 and u8 then wrap
// the i32 to 8 bits, as a cast to them does; bool is != 0).
inline double round_to(double x, DType dtype) {
  switch (dtype) {
    case kF32:
      return static_cast<float>(x);
    case kF64:
      return x;
    case kF16:
      return static_cast<float>(Half(static_cast<float>(x)));
    case kBF16:
      return static_cast<float>(BFloat16(static_cast<float>(x)));
    case kI32:
      if (std::isnan(x)) return 0;
      return static_cast<double>(static_cast<std::int32_t>(
          std::fmax(-2147483648.0, std::fmin(2147483647.0, std::trunc(x)))));
    case kI64:
      if (std::isnan(x)) return 0;
      if (x >= 9223372036854775807.0) return 9223372036854775807.0;
      if (x <= -9223372036854775808.0) return -9223372036854775808.0;
      return static_cast<double>(static_cast<std::int64_t>(x));
    case kBool:
      return x != 0 ? 1 : 0;
    case kI8:
      return static_cast<std::int8_t>(
          static_cast<std::uint8_t>(static_cast<std::int64_t>(round_to(x, kI32)) & 0xff));
    case kU8:
      return static_cast<double>(static_cast<std::int64_t>(round_to(x, kI32)) & 0xff);
  }
  return x;
}

// The spacing of `dtype`'s values at the magnitude of x (subnormal spacing below the normals).
inline double ulp_of(double x, DType dtype) {
  const int mant = dtype == kF64 ? 52 : dtype == kF32 ? 23 : dtype == kF16 ? 10 : 7;
  const int min_exp = dtype == kF64 ? -1022 : dtype == kF32 ? -126 : dtype == kF16 ? -14 : -126;
  int e = std::isfinite(x) && x != 0 ? std::ilogb(x) : min_exp;
  if (e < min_exp) e = min_exp;
  return std::ldexp(1.0, e - mant);
}

// |got - want| in ulps of `dtype`; 0 when both are the same infinity or both NaN; infinite
// when only one is NaN or infinite.
inline double ulp_error(double got, double want, DType dtype) {
  if (std::isnan(got) || std::isnan(want))
    return std::isnan(got) && std::isnan(want) ? 0 : INFINITY;
  if (std::isinf(got) || std::isinf(want)) return got == want ? 0 : INFINITY;
  return std::fabs(got - want) / ulp_of(want, dtype);
}

// A tensor of `dtype` holding `values` (rounded to the dtype).
inline Tensor tensor_of(const std::vector<double>& values, Shape shape, DType dtype) {
  switch (dtype) {
    case kF32: {
      std::vector<float> v(values.begin(), values.end());
      return from_vector(v, shape);
    }
    case kF16: {
      std::vector<Half> v;
      for (double x : values) v.emplace_back(static_cast<float>(x));
      return from_vector(v, shape);
    }
    case kBF16: {
      std::vector<BFloat16> v;
      for (double x : values) v.emplace_back(static_cast<float>(x));
      return from_vector(v, shape);
    }
    case kI32: {
      std::vector<std::int32_t> v;
      for (double x : values) v.push_back(static_cast<std::int32_t>(round_to(x, kI32)));
      return from_vector(v, shape);
    }
    case kI64: {
      std::vector<std::int64_t> v;
      for (double x : values) v.push_back(static_cast<std::int64_t>(round_to(x, kI64)));
      return from_vector(v, shape);
    }
    case kBool: {
      std::vector<bool> v;
      for (double x : values) v.push_back(x != 0);
      return from_vector(v, shape);
    }
    case kI8: {
      std::vector<std::int8_t> v;
      for (double x : values) v.push_back(static_cast<std::int8_t>(round_to(x, kI8)));
      return from_vector(v, shape);
    }
    case kU8: {
      std::vector<std::uint8_t> v;
      for (double x : values) v.push_back(static_cast<std::uint8_t>(round_to(x, kU8)));
      return from_vector(v, shape);
    }
    case kF64:
      return from_vector(values, shape);
  }
  return {};
}

// Every element as double (a sync point).
inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out;
  switch (t.dtype()) {
    case kF32:
      for (float x : t.to_vector<float>()) out.push_back(x);
      break;
    case kF16:
      for (Half x : t.to_vector<Half>()) out.push_back(static_cast<float>(x));
      break;
    case kBF16:
      for (BFloat16 x : t.to_vector<BFloat16>()) out.push_back(static_cast<float>(x));
      break;
    case kI32:
      for (std::int32_t x : t.to_vector<std::int32_t>()) out.push_back(x);
      break;
    case kI64:
      for (std::int64_t x : t.to_vector<std::int64_t>()) out.push_back(static_cast<double>(x));
      break;
    case kBool:
      for (bool x : t.to_vector<bool>()) out.push_back(x);
      break;
    case kI8:
      for (std::int8_t x : t.to_vector<std::int8_t>()) out.push_back(x);
      break;
    case kU8:
      for (std::uint8_t x : t.to_vector<std::uint8_t>()) out.push_back(x);
      break;
    case kF64:
      out = t.to_vector<double>();
      break;
  }
  return out;
}

// `n` values of `dtype` uniform in [lo, hi) (integers: whole numbers in range).
inline std::vector<double> random_values(std::size_t n, DType dtype, double lo, double hi,
                                         std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = round_to(is_floating(dtype) ? u(rng) : std::floor(u(rng)), dtype);
  return v;
}

inline std::string all_dtypes_name(DType d) { return std::string(dtype_name(d)); }

}  // namespace streamfuse::testing

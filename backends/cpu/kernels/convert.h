// Element storage types and the conversions between them, as every CPU kernel performs them.
// Branch-free where it matters so conversion loops vectorize.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/float16.h"
#include "streamfuse/dtype.h"

namespace streamfuse::backends::cpu {

// bool is stored as one byte holding 0 or 1; kernels handle it as uint8_t.
using BoolStorage = std::uint8_t;
// u8 is stored as one byte too, and kernels must tell it from bool by type (a conversion to bool
// is `!= 0`, to u8 a wrap): char8_t is C++20's distinct unsigned byte type, so it is u8's. The
// public type of u8 values stays std::uint8_t (dtype_of); the bytes are the same.
using U8Storage = char8_t;

template <DType D>
struct StorageOf;
template <>
struct StorageOf<kF32> {
  using type = float;
};
template <>
struct StorageOf<kF16> {
  using type = Half;
};
template <>
struct StorageOf<kBF16> {
  using type = BFloat16;
};
template <>
struct StorageOf<kI32> {
  using type = std::int32_t;
};
template <>
struct StorageOf<kI64> {
  using type = std::int64_t;
};
template <>
struct StorageOf<kBool> {
  using type = BoolStorage;
};
template <>
struct StorageOf<kI8> {
  using type = std::int8_t;
};
template <>
struct StorageOf<kU8> {
  using type = U8Storage;
};
template <>
struct StorageOf<kF64> {
  using type = double;
};
template <DType D>
using storage_t = typename StorageOf<D>::type;

// The dtype stored as T (the inverse of storage_t).
template <class T>
constexpr DType dtype_of_storage() {
  if constexpr (std::is_same_v<T, BoolStorage>)
    return kBool;
  else if constexpr (std::is_same_v<T, U8Storage>)
    return kU8;
  else
    return dtype_of<T>();
}

// Calls f(T{}) with T the storage type of `d`.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case kF32:
      return f(float{});
    case kF16:
      return f(Half{});
    case kBF16:
      return f(BFloat16{});
    case kI32:
      return f(std::int32_t{});
    case kI64:
      return f(std::int64_t{});
    case kBool:
      return f(BoolStorage{});
    case kI8:
      return f(std::int8_t{});
    case kU8:
      return f(U8Storage{});
    case kF64:
      return f(double{});
  }
  return f(float{});
}

// The type kernels compute in for operands read as `d`: float for f32, f16 and bf16, double for
// f64, int32 for i8 and u8 (their results are stored back wrapped to 8 bits, which for + - * and
// pow is what 8-bit arithmetic gives: wrapping commutes with them).
enum class ComputeType : std::uint8_t { kFloat, kI32, kI64, kBool, kF64 };
constexpr ComputeType compute_type_of(DType d) {
  switch (d) {
    case kI32:
    case kI8:
    case kU8:
      return ComputeType::kI32;
    case kI64:
      return ComputeType::kI64;
    case kBool:
      return ComputeType::kBool;
    case kF64:
      return ComputeType::kF64;
    default:
      return ComputeType::kFloat;
  }
}
// The dtype whose storage is the compute type itself (so such operands need no conversion).
constexpr DType storage_dtype_of(ComputeType c) {
  switch (c) {
    case ComputeType::kI32:
      return kI32;
    case ComputeType::kI64:
      return kI64;
    case ComputeType::kBool:
      return kBool;
    case ComputeType::kF64:
      return kF64;
    default:
      return kF32;
  }
}
template <class F>
decltype(auto) visit_compute(ComputeType c, F&& f) {
  switch (c) {
    case ComputeType::kFloat:
      return f(float{});
    case ComputeType::kI32:
      return f(std::int32_t{});
    case ComputeType::kI64:
      return f(std::int64_t{});
    case ComputeType::kBool:
      return f(BoolStorage{});
    case ComputeType::kF64:
      return f(double{});
  }
  return f(float{});
}

// Float (or double) to integer: truncation toward zero, saturating, NaN to 0 (scalar_ops.h). To
// i8 and u8: to i32 so, then wrapped to 8 bits (sf_float_to_i8, sf_float_to_u8).
template <class I>
inline I saturate_cast(double v) {
  if constexpr (std::is_same_v<I, std::int8_t>)
    return static_cast<I>(sf_double_to_i8(v));
  else if constexpr (std::is_same_v<I, U8Storage>)
    return static_cast<I>(sf_double_to_u8(v));
  else if constexpr (sizeof(I) == 4)
    return sf_double_to_i32(v);
  else
    return sf_double_to_i64(v);
}
template <class I>
inline I saturate_cast(float v) {
  if constexpr (std::is_same_v<I, std::int8_t>)
    return static_cast<I>(sf_float_to_i8(v));
  else if constexpr (std::is_same_v<I, U8Storage>)
    return static_cast<I>(sf_float_to_u8(v));
  else if constexpr (sizeof(I) == 4)
    return sf_float_to_i32(v);
  else
    return sf_float_to_i64(v);
}

// Converts one element between storage types with streamfuse's semantics: floats round to
// nearest even (f64 to f16/bf16 through f32, twice, as PyTorch's c10::Half(double) does), float to
// integer saturates (see saturate_cast), integers narrow by wrapping (C++20 defines the narrowing
// static_cast as modular), anything to bool is "!= 0" (NaN is true), bool to anything is 0 or 1.
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half>) {
    return convert<To>(core::half_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<From, BFloat16>) {
    return convert<To>(core::bf16_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half::from_bits(core::float_to_half_bits(convert<float>(v)));
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16::from_bits(core::float_to_bf16_bits(convert<float>(v)));
  } else if constexpr (std::is_same_v<To, BoolStorage>) {
    return static_cast<BoolStorage>(v != From{0});
  } else if constexpr ((std::is_same_v<From, float> ||
                        std::is_same_v<From, double>)&&std::is_integral_v<To>) {
    return saturate_cast<To>(v);
  } else {
    return static_cast<To>(v);  // int widening/narrowing (wraps), int and bool to float
  }
}

}  // namespace streamfuse::backends::cpu

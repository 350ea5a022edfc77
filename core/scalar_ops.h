// Element semantics shared by every kernel streamfuse runs: the eager CPU kernels, the fused
// interpreter and the code the JIT generates for the CPU and CUDA all call these functions, so
// fused and unfused results agree bit for bit.
//
// Like vector_math.h, the text is pasted verbatim into generated kernels: it includes nothing,
// uses plain C types (float, int, long long, unsigned short for f16/bf16 bits, unsigned char for
// bool), and reaches the platform only through the SF_MATH_* macros (a prelude may predefine
// them; vector_math.h defines the same ones the same way).
#ifndef STREAMFUSE_CORE_SCALAR_OPS_H_
#define STREAMFUSE_CORE_SCALAR_OPS_H_

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#ifndef SF_MATH_FN
#define SF_MATH_FN static __device__ __forceinline__
#endif
#ifndef SF_MATH_AS_UINT
#define SF_MATH_AS_UINT(f) __float_as_uint(f)
#endif
#ifndef SF_MATH_AS_FLOAT
#define SF_MATH_AS_FLOAT(u) __uint_as_float(u)
#endif
#ifndef SF_MATH_SQRT
#define SF_MATH_SQRT(x) __fsqrt_rn(x)
#endif
#ifndef SF_MATH_AS_ULL
#define SF_MATH_AS_ULL(d) ((unsigned long long)__double_as_longlong(d))
#endif
#ifndef SF_MATH_AS_DOUBLE
#define SF_MATH_AS_DOUBLE(u) __longlong_as_double((long long)(u))
#endif
// f64 math: the platform's double functions, exp(x) on CUDA (its correctly rounded sqrt, its
// double exp...), __builtin_exp(x) elsewhere (libm's). Never through float.
#ifndef SF_MATH_F64
#define SF_MATH_F64(fn) fn
#endif
#endif  // CUDA
#ifndef SF_MATH_FN
#define SF_MATH_FN static inline __attribute__((always_inline))
#endif
#ifndef SF_MATH_AS_UINT
#define SF_MATH_AS_UINT(f) __builtin_bit_cast(unsigned int, (f))
#endif
#ifndef SF_MATH_AS_FLOAT
#define SF_MATH_AS_FLOAT(u) __builtin_bit_cast(float, (u))
#endif
#ifndef SF_MATH_SQRT
#define SF_MATH_SQRT(x) __builtin_sqrtf(x)
#endif
#ifndef SF_MATH_AS_ULL
#define SF_MATH_AS_ULL(d) __builtin_bit_cast(unsigned long long, (d))
#endif
#ifndef SF_MATH_AS_DOUBLE
#define SF_MATH_AS_DOUBLE(u) __builtin_bit_cast(double, (unsigned long long)(u))
#endif
#ifndef SF_MATH_F64
#define SF_MATH_F64(fn) __builtin_##fn
#endif

// ---- 16-bit floats (round to nearest even) ---------------------------------------------------

// Normals move exponent and mantissa into a float's fields and rebias by 127 - 15; subnormals
// are mantissa * 2^-24 computed from an integer, so no denormal float operand takes the slow
// microcode path; inf and NaN keep their payload.
SF_MATH_FN float sf_half_to_float(unsigned short h) {
  const unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
  const unsigned int em = h & 0x7fffu;
  const unsigned int normal = (em << 13) + 0x38000000u;
  const unsigned int subnormal = SF_MATH_AS_UINT((float)em * 0x1p-24f);
  const unsigned int special = 0x7f800000u | (em << 13);
  const unsigned int bits = em >= 0x7c00u ? special : em >= 0x0400u ? normal : subnormal;
  return SF_MATH_AS_FLOAT(bits | sign);
}

SF_MATH_FN unsigned short sf_float_to_half(float x) {
  unsigned int f = SF_MATH_AS_UINT(x);
  const unsigned int sign = f & 0x80000000u;
  f ^= sign;
  // Overflow (>= 2^16), inf and NaN: inf, or a quiet NaN.
  const unsigned int huge = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
  // Below 2^-14: adding 0.5 aligns the value to the subnormal grid (ulp 2^-24) and the FPU
  // rounds to nearest even. The operand is clamped so the branch-free path never sees NaN.
  const float small_in = SF_MATH_AS_FLOAT(f < 0x38800000u ? f : 0u);
  const unsigned int small = SF_MATH_AS_UINT(small_in + 0.5f) - 0x3f000000u;
  // Normal: rebias the exponent by (15 - 127) << 23 and round half to even on bit 13; a carry
  // into exponent 31 gives inf, as it should.
  const unsigned int normal = (f + 0xc8000fffu + ((f >> 13) & 1u)) >> 13;
  const unsigned int out = f >= 0x47800000u ? huge : f < 0x38800000u ? small : normal;
  return (unsigned short)(out | (sign >> 16));
}

SF_MATH_FN float sf_bf16_to_float(unsigned short b) {
  return SF_MATH_AS_FLOAT((unsigned int)b << 16);
}

SF_MATH_FN unsigned short sf_float_to_bf16(float x) {
  const unsigned int f = SF_MATH_AS_UINT(x);
  const unsigned int rounded = (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
  const unsigned int quiet_nan = (f >> 16) | 0x40u;
  return (unsigned short)((f & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// A float result of an op whose dtype is f16 / bf16: computed in float, rounded once.
SF_MATH_FN float sf_round_f16(float x) { return sf_half_to_float(sf_float_to_half(x)); }
SF_MATH_FN float sf_round_bf16(float x) { return sf_bf16_to_float(sf_float_to_bf16(x)); }

// ---- conversions -----------------------------------------------------------------------------

// Float to integer: truncation toward zero, saturating at the type's range, NaN to 0. (C and C++
// leave out-of-range conversions undefined; this makes them deterministic everywhere.)
SF_MATH_FN int sf_float_to_i32(float v) {
  const float in_range = v >= -2147483648.0f && v < 2147483648.0f ? v : 0.0f;  // NaN fails both
  int r = (int)in_range;
  r = v >= 2147483648.0f ? 2147483647 : r;
  r = v < -2147483648.0f ? (-2147483647 - 1) : r;
  return r;
}
SF_MATH_FN long long sf_float_to_i64(float v) {
  const float in_range = v >= -9223372036854775808.0f && v < 9223372036854775808.0f ? v : 0.0f;
  long long r = (long long)in_range;
  r = v >= 9223372036854775808.0f ? 9223372036854775807LL : r;
  r = v < -9223372036854775808.0f ? (-9223372036854775807LL - 1) : r;
  return r;
}

// 8-bit integers live in int registers (i8 and u8 compute in int) and are stored wrapped to 8
// bits, as 8-bit arithmetic wraps: the low byte, sign-extended for i8. Written with masks, not a
// narrowing cast, which C leaves implementation-defined.
SF_MATH_FN int sf_wrap_i8(int v) { return ((v & 0xff) ^ 0x80) - 0x80; }
SF_MATH_FN int sf_wrap_u8(int v) { return v & 0xff; }
// Float to i8 / u8: to i32 as above (truncation, saturating, NaN to 0), then wrapped to 8 bits.
// PyTorch's float-to-uint8/int8 cast is a C cast, undefined out of range; on x86 it goes through
// a 32-bit conversion and keeps the low byte, which this matches for |v| < 2^31 (300.5 -> 44,
// -1.5 -> u8 255). Beyond, and for inf, the saturated i32 wraps (inf -> i8 -1, u8 255; -inf ->
// 0), where x86 gives 0 for both.
SF_MATH_FN int sf_float_to_i8(float v) { return sf_wrap_i8(sf_float_to_i32(v)); }
SF_MATH_FN int sf_float_to_u8(float v) { return sf_wrap_u8(sf_float_to_i32(v)); }

// f64 to integers: as from float, with the double's own value (no rounding through float).
SF_MATH_FN int sf_double_to_i32(double v) {
  const double in_range = v >= -2147483648.0 && v < 2147483648.0 ? v : 0.0;  // NaN fails both
  int r = (int)in_range;
  r = v >= 2147483648.0 ? 2147483647 : r;
  r = v < -2147483648.0 ? (-2147483647 - 1) : r;
  return r;
}
SF_MATH_FN long long sf_double_to_i64(double v) {
  const double in_range = v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? v : 0.0;
  long long r = (long long)in_range;
  r = v >= 9223372036854775808.0 ? 9223372036854775807LL : r;
  r = v < -9223372036854775808.0 ? (-9223372036854775807LL - 1) : r;
  return r;
}
SF_MATH_FN int sf_double_to_i8(double v) { return sf_wrap_i8(sf_double_to_i32(v)); }
SF_MATH_FN int sf_double_to_u8(double v) { return sf_wrap_u8(sf_double_to_i32(v)); }

// An integer as float or double, with a +0 for 0. A kernel that converts a float to an integer
// and back must give +0 for -0.5, as the eager kernels do through memory; but GCC folds
// (float)(int)x into trunc(x) under -fno-trapping-math (the kernels' flags), which keeps the
// sign (-0), and drops a `+ 0.0f` after an int conversion as a no-op first. Clearing the sign
// bit unless the integer is negative is not something it proves away (and vectorizes).
SF_MATH_FN float sf_int_to_float(int v) {
  return SF_MATH_AS_FLOAT(SF_MATH_AS_UINT((float)v) & (v < 0 ? 0xffffffffu : 0x7fffffffu));
}
SF_MATH_FN float sf_int_to_float(long long v) {
  return SF_MATH_AS_FLOAT(SF_MATH_AS_UINT((float)v) & (v < 0 ? 0xffffffffu : 0x7fffffffu));
}
SF_MATH_FN double sf_int_to_double(int v) {
  return SF_MATH_AS_DOUBLE(SF_MATH_AS_ULL((double)v) &
                           (v < 0 ? 0xffffffffffffffffULL : 0x7fffffffffffffffULL));
}
SF_MATH_FN double sf_int_to_double(long long v) {
  return SF_MATH_AS_DOUBLE(SF_MATH_AS_ULL((double)v) &
                           (v < 0 ? 0xffffffffffffffffULL : 0x7fffffffffffffffULL));
}

// ---- arithmetic ------------------------------------------------------------------------------

// Integer arithmetic wraps: computed unsigned (signed overflow is undefined in C and C++).
SF_MATH_FN int sf_add(int a, int b) { return (int)((unsigned int)a + (unsigned int)b); }
SF_MATH_FN int sf_sub(int a, int b) { return (int)((unsigned int)a - (unsigned int)b); }
SF_MATH_FN int sf_mul(int a, int b) { return (int)((unsigned int)a * (unsigned int)b); }
SF_MATH_FN long long sf_add(long long a, long long b) {
  return (long long)((unsigned long long)a + (unsigned long long)b);
}
SF_MATH_FN long long sf_sub(long long a, long long b) {
  return (long long)((unsigned long long)a - (unsigned long long)b);
}
SF_MATH_FN long long sf_mul(long long a, long long b) {
  return (long long)((unsigned long long)a * (unsigned long long)b);
}
SF_MATH_FN int sf_neg(int a) { return sf_sub(0, a); }
SF_MATH_FN long long sf_neg(long long a) { return sf_sub(0LL, a); }
SF_MATH_FN int sf_abs(int a) { return a < 0 ? sf_neg(a) : a; }
SF_MATH_FN long long sf_abs(long long a) { return a < 0 ? sf_neg(a) : a; }
SF_MATH_FN float sf_abs(float a) { return SF_MATH_AS_FLOAT(SF_MATH_AS_UINT(a) & 0x7fffffffu); }
SF_MATH_FN float sf_sqrt(float a) { return SF_MATH_SQRT(a); }  // correctly rounded
SF_MATH_FN float sf_rsqrt(float a) { return 1.0f / SF_MATH_SQRT(a); }
SF_MATH_FN float sf_recip(float a) { return 1.0f / a; }
SF_MATH_FN float sf_relu(float a) { return a <= 0.0f ? 0.0f : a; }  // NaN stays NaN
SF_MATH_FN int sf_relu(int a) { return a < 0 ? 0 : a; }
SF_MATH_FN long long sf_relu(long long a) { return a < 0 ? 0LL : a; }

// Integer power by squaring, wrapping. A negative exponent gives the truncated reciprocal: 1 for
// base 1, +-1 for base -1, 0 otherwise (also for base 0, rather than a division trap).
SF_MATH_FN int sf_ipow(int base, int e) {
  const int negative = base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  int result = 1;
  for (int k = e < 0 ? 0 : e; k; k >>= 1) {
    if (k & 1) result = sf_mul(result, base);
    base = sf_mul(base, base);
  }
  return e < 0 ? negative : result;
}
SF_MATH_FN long long sf_ipow(long long base, long long e) {
  const long long negative = base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  long long result = 1;
  for (long long k = e < 0 ? 0 : e; k; k >>= 1) {
    if (k & 1) result = sf_mul(result, base);
    base = sf_mul(base, base);
  }
  return e < 0 ? negative : result;
}

// max / min with NaN winning (the first operand's, if both are); equal values (+0 and -0) give
// +0 for max and -0 for min, so the result does not depend on operand order otherwise. Computed
// on the bits with integer compares only: a float's bits, with the magnitude bits flipped when it
// is negative, order floats as signed integers (-0 just below +0), and a NaN is a magnitude above
// infinity's. No float compare, and no select: the result's bits are picked with masks made of
// the compares (0 or all ones), so scalar code has no branch to mispredict (GCC 12 made even
// integer selects of a float's bits into branches in a reduction's last merges: a quarter of a
// fused softmax of rows of 128 on random data) and vector code gets masked blends or ands (1.7x
// the throughput of the float form).
SF_MATH_FN int sf_float_order(float x) {
  const int i = (int)SF_MATH_AS_UINT(x);
  return i ^ ((i >> 31) & 0x7fffffff);
}
SF_MATH_FN int sf_float_is_nan(float x) { return (SF_MATH_AS_UINT(x) & 0x7fffffffu) > 0x7f800000u; }
// a's bits, or b's where b is NaN and a is not, or neither is NaN and b_wins (all ones).
SF_MATH_FN float sf_pick(float a, float b, unsigned int b_wins) {
  const unsigned int ua = SF_MATH_AS_UINT(a), ub = SF_MATH_AS_UINT(b);
  const unsigned int nan_a = 0u - (unsigned int)sf_float_is_nan(a);
  const unsigned int nan_b = 0u - (unsigned int)sf_float_is_nan(b);
  const unsigned int take_b = ~nan_a & (nan_b | b_wins);
  return SF_MATH_AS_FLOAT(ua ^ ((ua ^ ub) & take_b));
}
SF_MATH_FN float sf_max(float a, float b) {
  return sf_pick(a, b, 0u - (unsigned int)(sf_float_order(a) < sf_float_order(b)));
}
SF_MATH_FN float sf_min(float a, float b) {
  return sf_pick(a, b, 0u - (unsigned int)(sf_float_order(b) < sf_float_order(a)));
}
SF_MATH_FN int sf_max(int a, int b) { return a > b ? a : b; }
SF_MATH_FN int sf_min(int a, int b) { return a < b ? a : b; }
SF_MATH_FN long long sf_max(long long a, long long b) { return a > b ? a : b; }
SF_MATH_FN long long sf_min(long long a, long long b) { return a < b ? a : b; }
SF_MATH_FN unsigned char sf_max(unsigned char a, unsigned char b) { return a | b; }
SF_MATH_FN unsigned char sf_min(unsigned char a, unsigned char b) { return a & b; }

// ---- f64: IEEE double arithmetic; max / min as for float (NaN wins, -0 below +0) ---------------
SF_MATH_FN double sf_abs(double a) {
  return SF_MATH_AS_DOUBLE(SF_MATH_AS_ULL(a) & 0x7fffffffffffffffULL);
}
SF_MATH_FN double sf_relu(double a) { return a <= 0.0 ? 0.0 : a; }  // NaN stays NaN
SF_MATH_FN long long sf_double_order(double x) {
  const long long i = (long long)SF_MATH_AS_ULL(x);
  return i ^ ((i >> 63) & 0x7fffffffffffffffLL);
}
SF_MATH_FN int sf_double_is_nan(double x) {
  return (SF_MATH_AS_ULL(x) & 0x7fffffffffffffffULL) > 0x7ff0000000000000ULL;
}
SF_MATH_FN double sf_max(double a, double b) {
  if (sf_double_is_nan(a)) return a;
  if (sf_double_is_nan(b)) return b;
  return sf_double_order(a) < sf_double_order(b) ? b : a;
}
SF_MATH_FN double sf_min(double a, double b) {
  if (sf_double_is_nan(a)) return a;
  if (sf_double_is_nan(b)) return b;
  return sf_double_order(b) < sf_double_order(a) ? b : a;
}

#endif  // STREAMFUSE_CORE_SCALAR_OPS_H_

// Single-precision vector math: exp, log, erf, tanh, sin, cos, sigmoid and pow.
//
// Every function is branch-free (both sides of each case are computed and one is selected), so a
// loop such as `for (i) out[i] = sf_exp(in[i]);` auto-vectorizes, and it uses only IEEE-exact
// operations (+ - * /, conversions, bit casts and, where the target has it, fma), so the same
// source compiled with the same ISA flags gives the same bits on every compiler and device.
//
// The text is pasted verbatim into JIT-generated C++ and CUDA kernels, so it includes nothing
// (compile time matters there) and reaches the platform only through the SF_MATH_* macros below,
// which a prelude may predefine. CUDA kernels must be compiled with --fmad=false, as the C++ JIT
// uses -ffp-contract=off: several steps rely on a*b+c being rounded twice.
//
// GCC 12 if-converts every select, and so vectorizes every function, only under -fno-trapping-math
// (with trapping math it will not evaluate an ordered float comparison unconditionally): compile
// kernels with the project's STREAMFUSE_KERNEL_FLAGS (-O3 -ffp-contract=off -fno-math-errno
// -fno-trapping-math).
//
// Accuracy: maximum error in ulp of the float result against a double-precision reference,
// measured over all 2^32 inputs by tools/math_ulp_sweep.cpp (pow: 2^28 random pairs), with and
// without FMA; each function's comment gives its figure. Denormal inputs and outputs, ±0, ±inf and
// NaN follow C99 Annex F.
#ifndef STREAMFUSE_CORE_VECTOR_MATH_H_
#define STREAMFUSE_CORE_VECTOR_MATH_H_

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
#ifndef SF_MATH_AS_ULL
#define SF_MATH_AS_ULL(d) ((unsigned long long)__double_as_longlong(d))
#endif
#ifndef SF_MATH_AS_DOUBLE
#define SF_MATH_AS_DOUBLE(u) __longlong_as_double((long long)(u))
#endif
#ifndef SF_MATH_FMA
#define SF_MATH_FMA(a, b, c) __fmaf_rn((a), (b), (c))
#endif
#ifndef SF_MATH_FMA_D
#define SF_MATH_FMA_D(a, b, c) __fma_rn((a), (b), (c))
#endif
#ifndef SF_MATH_HAS_FMA
#define SF_MATH_HAS_FMA 1
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
#ifndef SF_MATH_AS_ULL
#define SF_MATH_AS_ULL(d) __builtin_bit_cast(unsigned long long, (d))
#endif
#ifndef SF_MATH_AS_DOUBLE
#define SF_MATH_AS_DOUBLE(u) __builtin_bit_cast(double, (u))
#endif

// A true fma where the hardware has one; a libm fmaf call would stop vectorization, so targets
// without FMA (x86-64-v2) round twice. Polynomials are accurate enough either way; where a
// function's form relies on the single rounding it tests SF_MATH_HAS_FMA, which a prelude that
// predefines SF_MATH_FMA as a true fma predefines as 1.
#if defined(__FMA__)
#ifndef SF_MATH_HAS_FMA
#define SF_MATH_HAS_FMA 1
#endif
#ifndef SF_MATH_FMA
#define SF_MATH_FMA(a, b, c) __builtin_fmaf((a), (b), (c))
#endif
#ifndef SF_MATH_FMA_D
#define SF_MATH_FMA_D(a, b, c) __builtin_fma((a), (b), (c))
#endif
#else
#ifndef SF_MATH_HAS_FMA
#define SF_MATH_HAS_FMA 0
#endif
#ifndef SF_MATH_FMA
#define SF_MATH_FMA(a, b, c) ((a) * (b) + (c))
#endif
#ifndef SF_MATH_FMA_D
#define SF_MATH_FMA_D(a, b, c) ((a) * (b) + (c))
#endif
#endif

#define SF_MATH_INF SF_MATH_AS_FLOAT(0x7f800000u)
#define SF_MATH_NAN SF_MATH_AS_FLOAT(0x7fc00000u)

// ---------------------------------------------------------------------------------------------
// Helpers (double precision). Double has the exponent range and 29 spare bits that make one final
// rounding to float nearly always correct, and float inputs convert to it exactly.

// Returns p and sets *scale so that e^x = scale * (1 + p), for |x| <= 150: x = k ln2 + r with
// |r| <= ln2/2 (Cody–Waite, k * ln2 head exact), p = expm1(r) by a degree-9 minimax polynomial
// (relative error 2^-45), scale = 2^k. scale * p + (scale - 1) is expm1(x) without cancellation.
// Other x (infinities, NaN) give meaningless values, without undefined behaviour: callers select
// past them.
SF_MATH_FN double sf_exp_d(double x, double* scale) {
  const double kShift = 0x1.8p52;  // adding it rounds to an integer, kept in the low bits
  double t = x * 0x1.71547652b82fep+0 + kShift;
  double k = t - kShift;
  double r = (x - k * 0x1.62e42fefa3900p-1) - k * 0x1.de6af278ece60p-46;
  double q = SF_MATH_FMA_D(r, 0x1.710157854973fp-19, 0x1.a16e7194efc9fp-16);
  q = SF_MATH_FMA_D(q, r, 0x1.a01b740fcf049p-13);
  q = SF_MATH_FMA_D(q, r, 0x1.6c163bb7f09acp-10);
  q = SF_MATH_FMA_D(q, r, 0x1.1111108de2ea9p-7);
  q = SF_MATH_FMA_D(q, r, 0x1.5555557e05477p-5);
  q = SF_MATH_FMA_D(q, r, 0x1.555555558a177p-3);
  q = SF_MATH_FMA_D(q, r, 0x1.fffffffff134ap-2);
  // The low bits of t hold k; (k + 1023) << 52 is the double 2^k.
  *scale = SF_MATH_AS_DOUBLE((SF_MATH_AS_ULL(t) + 1023u) << 52);
  return SF_MATH_FMA_D(r * r, q, r);
}

// ---------------------------------------------------------------------------------------------

// e^x. x = k ln2 + r, |r| <= ln2/2; e^r scaled by 2^k in two steps (2^128 is not a float), the
// first exact, the second rounding only a denormal result. Out of range (e^89 overflows, e^-104
// rounds to 0) the result is selected at the end, not the input clamped first: GCC 12 threads two
// correlated clamps of the input (x > 89 rules out x < -104) into three copies of the whole body,
// one per range, and vectorizes them as masked blends of all three (1.4x the time). Either way the
// bits are the same for all 2^32 inputs.
//
// With a fused multiply-add (SF_MATH_HAS_FMA: x86-64-v3 and up, CUDA): r = x - k ln2 in two fmas
// (ln2 as a float head and tail), e^r = 1 + r (1 + r (c2 + r (... c6))) by Horner, c2..c6 a
// minimax fit of (e^r - 1 - r) / r^2 (2^-28.3 relative to e^r). Max error 0.91 ulp; 0.63x the
// time of the form below, whose exact sums cost more than the softmax and attention scores it
// serves need: a fused softmax spends over half its time in the exponentials. (PyTorch's CPU exp,
// Sleef's u10, bounds its error by 1.0 ulp.)
//
// Without one, k ln2's head has 15 bits so that k * head is exact, r is kept as rh + rl, and
// 1 + rh is summed exactly, so only the small terms are rounded before the final addition (Taylor
// terms to r^7). Max error 0.77 ulp (0.75 for normal results). The rounding of the one-fma form's steps without a fused multiply-add would give 1.17.
SF_MATH_FN float sf_exp(float x) {
  const float kShift = 0x1.8p23f;
  float t = x * 0x1.715476p+0f + kShift;
  float k = t - kShift;
#if SF_MATH_HAS_FMA
  float r = SF_MATH_FMA(k, -0x1.62e43p-1f, x);
  r = SF_MATH_FMA(k, 0x1.05c610p-29f, r);
  float q = SF_MATH_FMA(r, 0x1.6a2242p-10f, 0x1.123b0ep-7f);
  q = SF_MATH_FMA(q, r, 0x1.5558f8p-5f);
  q = SF_MATH_FMA(q, r, 0x1.55549p-3f);
  q = SF_MATH_FMA(q, r, 0x1.fffffcp-2f);
  q = SF_MATH_FMA(q, r, 1.0f);
  float y = SF_MATH_FMA(q, r, 1.0f);
#else
  float a = x - k * 0x1.62e4p-1f;  // exact where it counts: 15-bit ln2 head times |k| <= 150
  float b = k * 0x1.7f7d1cp-20f;
  float rh = a - b;
  float rl = (a - rh) - b;
  float q = SF_MATH_FMA(rh, 0x1.a01a02p-13f, 0x1.6c16c2p-10f);  // 1/5040, 1/720
  q = SF_MATH_FMA(q, rh, 0x1.111112p-7f);                       // 1/120
  q = SF_MATH_FMA(q, rh, 0x1.555556p-5f);                       // 1/24
  q = SF_MATH_FMA(q, rh, 0x1.555556p-3f);                       // 1/6
  q = SF_MATH_FMA(q, rh, 0.5f);
  float small = SF_MATH_FMA(rh * rh, q, rl);
  float s = 1.0f + rh;
  float e = (1.0f - s) + rh;  // 1 + rh = s + e exactly
  float y = s + (e + small);
#endif
  int ki = (int)(SF_MATH_AS_UINT(t) - SF_MATH_AS_UINT(kShift));
  int k1 = ki >> 1;
  int k2 = ki - k1;
  float s1 = SF_MATH_AS_FLOAT((unsigned int)(k1 + 127) << 23);
  float s2 = SF_MATH_AS_FLOAT((unsigned int)(k2 + 127) << 23);
  float e_x = (y * s1) * s2;  // NaN stays NaN; the selects below fail for it
  e_x = x > 89.0f ? SF_MATH_INF : e_x;
  return x < -104.0f ? 0.0f : e_x;
}

// Natural log. x = 2^e m with m in [sqrt(1/2), sqrt(2)) (denormals prescaled by 2^23), f = m - 1
// exact; log = e ln2 + f - f^2/2 + f^3 P(f), P of degree 8 (2^-28.8). The big terms are summed
// exactly: f^2/2 is split with f's top 12 bits (fh^2 is exact without FMA), and e*kLn2Hi, f and
// -fh^2/2 are added with error-free sums, so little more than the final rounding remains. Max
// error 0.61 ulp with FMA, 0.66 without.
SF_MATH_FN float sf_log(float x) {
  bool tiny = x < 0x1p-126f;
  float xs = tiny ? x * 0x1p23f : x;
  unsigned int u = SF_MATH_AS_UINT(xs);
  int e = (int)(u - 0x3f3504f3u) >> 23;  // 0x3f3504f3 = sqrt(1/2)
  float f = SF_MATH_AS_FLOAT(u - ((unsigned int)e << 23)) - 1.0f;
  float ef = (float)(e - (tiny ? 23 : 0));
  float fh = SF_MATH_AS_FLOAT(SF_MATH_AS_UINT(f) & 0xfffff000u);
  float fl = f - fh;
  float sq = fh * fh;           // exact
  float sq_lo = fl * (f + fh);  // f^2 = sq + sq_lo, the small part rounded
  float h2 = 0.5f * sq;
  float d = f - h2;
  float d_err = (f - d) - h2;   // exact: |f| >= h2
  float a = ef * 0x1.62e4p-1f;  // exact: 15-bit ln2 head, |e| < 2^8
  float hi = a + d;
  float hi_err = (a - hi) + d;  // exact: |a| >= |d| or a == 0
  float p = SF_MATH_FMA(f, 0x1.b54664p-5f, -0x1.bf1bdcp-4f);
  p = SF_MATH_FMA(p, f, 0x1.eff29ap-4f);
  p = SF_MATH_FMA(p, f, -0x1.0103e2p-3f);
  p = SF_MATH_FMA(p, f, 0x1.23036ep-3f);
  p = SF_MATH_FMA(p, f, -0x1.552f18p-3f);
  p = SF_MATH_FMA(p, f, 0x1.99a540p-3f);
  p = SF_MATH_FMA(p, f, -0x1.000070p-2f);
  p = SF_MATH_FMA(p, f, 0x1.555548p-2f);
  // What is left: the ln2 tail, the polynomial and the rest of -f^2/2.
  float f3 = SF_MATH_FMA(f, sq, f * sq_lo);
  float rest = SF_MATH_FMA(f3, p, -0.5f * sq_lo);
  float lo = hi_err + (d_err + SF_MATH_FMA(ef, 0x1.7f7d1cp-20f, rest));
  float r = hi + lo;
  r = x == SF_MATH_INF ? x : r;
  r = x == 0.0f ? -SF_MATH_INF : r;
  return x >= 0.0f ? r : SF_MATH_NAN;  // negative or NaN
}

// 1 / (1 + e^-x), as (x >= 0 ? 1 : z) / (1 + z) with z = e^-|x| in double, so neither end
// overflows and tiny results come out as correctly rounded denormals. Max error 0.50000 ulp.
SF_MATH_FN float sf_sigmoid(float x) {
  double a = x < 0.0f ? (double)x : -(double)x;
  a = a < -120.0 ? -120.0 : a;  // NaN passes
  double scale;
  double p = sf_exp_d(a, &scale);
  double e = scale * (1.0 + p);
  return (float)((x >= 0.0f ? 1.0 : e) / (1.0 + e));
}

// tanh(x) = -m / (2 + m) with m = expm1(-2|x|) in double (accurate down to denormal x), sign
// restored from x. Max error 0.50000 ulp.
SF_MATH_FN float sf_tanh(float x) {
  unsigned int sign = SF_MATH_AS_UINT(x) & 0x80000000u;
  double a = -2.0 * (double)SF_MATH_AS_FLOAT(SF_MATH_AS_UINT(x) ^ sign);
  a = a < -40.0 ? -40.0 : a;  // tanh(20) rounds to 1; NaN passes
  double scale;
  double p = sf_exp_d(a, &scale);
  double m = SF_MATH_FMA_D(scale, p, scale - 1.0);
  float t = (float)(-m / (2.0 + m));
  return SF_MATH_AS_FLOAT((SF_MATH_AS_UINT(t) & 0x7fffffffu) | sign);
}

// erf, in float only. For a = |x| < 0.8203125: erf = a + a r(a^2), r a degree-6 minimax
// polynomial for erf(a)/a - 1 (2^-30 relative to erf); with FMA the rounding error of a^2 is added
// back. Above, with a clamped to 4 (erf rounds to 1 from 3.92): erfc = 2^l, l a degree-6 polynomial
// in a - 0.8203125 for log2 erfc(a) + 5/2, fitted with the weight erfc(a) its error has in erf
// (2^-28 absolute). l = k + f, k an integer and |f| <= 1/2 exact, and 2^(f - 1/2) = 1 + q(f)
// (degree 6, 2^-28.7; the 1/2 is 0.500000025, so that q's constant term is a float), so erfc =
// 2^(k-2) (1 + q) with 1 + q <= 1: 2^(k-2) >= erfc, and 1 - 2^(k-2) is exact wherever erf does not
// round to 1. erf = (1 - 2^(k-2)) - 2^(k-2) q then rounds once at size 1. Max error 0.733 ulp with
// FMA, 0.883 without.
SF_MATH_FN float sf_erf(float x) {
  unsigned int sign = SF_MATH_AS_UINT(x) & 0x80000000u;
  float a = SF_MATH_AS_FLOAT(SF_MATH_AS_UINT(x) ^ sign);
  float s = a * a;
  float s_lo = SF_MATH_FMA(a, a, -s);  // a^2 - s with FMA; 0 without
  float r1 = SF_MATH_FMA(s, 0x1.3ff644p-14f, -0x1.a2e702p-11f);
  r1 = SF_MATH_FMA(r1, s, 0x1.541202p-8f);
  r1 = SF_MATH_FMA(r1, s, -0x1.b7fe04p-6f);
  r1 = SF_MATH_FMA(r1, s, 0x1.ce2d56p-4f);
  r1 = SF_MATH_FMA(r1, s, -0x1.81274p-2f);
  float r = SF_MATH_FMA(r1, s, 0x1.06eba8p-3f);  // 2/sqrt(pi) - 1
  r = SF_MATH_FMA(r1, s_lo, r);
  float y_near = SF_MATH_FMA(a, r, a);
  float t = (a > 4.0f ? 4.0f : a) - 0x1.a4p-1f;  // NaN passes
  float l = SF_MATH_FMA(t, 0x1.397a7p-12f, -0x1.92d586p-9f);
  l = SF_MATH_FMA(l, t, 0x1.172634p-6f);
  l = SF_MATH_FMA(l, t, -0x1.23d1aep-4f);
  l = SF_MATH_FMA(l, t, -0x1.2e5a56p+0f);
  l = SF_MATH_FMA(l, t, -0x1.b0293ep+1f);
  l = SF_MATH_FMA(l, t, 0x1.e83a4p-2f);
  const float kShift = 0x1.8p23f;  // adding it rounds to an integer, kept in the low bits
  float kl = l + kShift;
  float f = l - (kl - kShift);
  float q = SF_MATH_FMA(f, 0x1.c9e55p-14f, 0x1.f0ba02p-11f);
  q = SF_MATH_FMA(q, f, 0x1.bdb58p-8f);
  q = SF_MATH_FMA(q, f, 0x1.41826cp-5f);
  q = SF_MATH_FMA(q, f, 0x1.5be29ap-3f);
  q = SF_MATH_FMA(q, f, 0x1.f5e466p-2f);
  q = SF_MATH_FMA(q, f, -0x1.2bec34p-2f);  // 2^g - 1, g = -0.500000025
  // 2^(k-2) from the low bits of kl, k in [-23, 0] where y_far is used.
  float scale = SF_MATH_AS_FLOAT((SF_MATH_AS_UINT(kl) + 125u) << 23);
  float y_far = SF_MATH_FMA(-scale, q, 1.0f - scale);
  float y = a < 0x1.a4p-1f ? y_near : y_far;
  return SF_MATH_AS_FLOAT(SF_MATH_AS_UINT(y) | sign);
}

// Moves the window of 2/pi chunks d[0..4] on by one when `on`. Five two-way selects: a nested
// ?: chain would become a multi-way branch, which GCC does not if-convert, so the loop would not
// vectorize.
SF_MATH_FN void sf_window_step(bool on, double next, double* d) {
  d[0] = on ? d[1] : d[0];
  d[1] = on ? d[2] : d[1];
  d[2] = on ? d[3] : d[2];
  d[3] = on ? d[4] : d[3];
  d[4] = on ? next : d[4];
}

// Reduces |x| (a float, exact in double) by pi/2: returns r in double with |r| <= pi/4 and sets
// *quadrant to q mod 4, |x| = (q + r / (pi/2)) * pi/2 mod 2pi. Payne–Hanek for every input: 2/pi
// is stored as 24-bit chunks D_i (doubles), each product |x| * D_i is exact, chunks whose
// product is a multiple of 4 are skipped (the window is picked by |x|'s magnitude with selects,
// not a table lookup), and five chunks leave an absolute error below 2^-70 in quarter-turns,
// far below the closest approach of a float to a multiple of pi/2 (2^-29.2, at 0x1.f37c8ap+95).
SF_MATH_FN double sf_reduce_pio2(double ax, int* quadrant) {
  const double kD0 = 0x1.45f306p-1, kD1 = 0x1.b93910p-26, kD2 = 0x1.529fc0p-52;
  const double kD3 = 0x1.3abe88p-75, kD4 = 0x1.ea69bap-97, kD5 = 0x1.81b6c4p-121;
  const double kD6 = 0x1.2b3278p-145, kD7 = 0x1.0e4104p-170, kD8 = 0x1.fca2c6p-193;
  const double kShift = 0x1.8p52;
  double d[5] = {kD0, kD1, kD2, kD3, kD4};
  sf_window_step(ax >= 0x1p49, kD5, d);
  sf_window_step(ax >= 0x1p73, kD6, d);
  sf_window_step(ax >= 0x1p97, kD7, d);
  sf_window_step(ax >= 0x1p121, kD8, d);
  // The two leading products are below 2^49 and 2^25: drop their multiples of 4 exactly.
  double t0 = ax * d[0];
  t0 = t0 - 4.0 * ((t0 * 0.25 + kShift) - kShift);
  double t1 = ax * d[1];
  t1 = t1 - 4.0 * ((t1 * 0.25 + kShift) - kShift);
  double t2 = ax * d[2], t3 = ax * d[3], t4 = ax * d[4];
  // h + l = t0 + t1 + t2 exactly (two TwoSums), then the nearest quadrant comes off h exactly.
  double h = t0 + t1;
  double v = h - t0;
  double l = (t0 - (h - v)) + (t1 - v);
  double h2 = h + t2;
  v = h2 - h;
  l += (h - (h2 - v)) + (t2 - v);
  double q = (h2 + kShift) - kShift;
  double f = (h2 - q) + (l + (t3 + t4));
  *quadrant = (int)q & 3;
  return f * 0x1.921fb54442d18p+0;
}

// sin and cos of r, |r| <= pi/4, to about 2^-37 relative (minimax, degrees 9 and 10).
SF_MATH_FN double sf_sin_poly(double r) {
  double u = r * r;
  double s = SF_MATH_FMA_D(u, 0x1.6d0d71ad1868dp-19, -0x1.a010b4833a828p-13);
  s = SF_MATH_FMA_D(s, u, 0x1.11110a6141383p-7);
  s = SF_MATH_FMA_D(s, u, -0x1.555555505406dp-3);
  return SF_MATH_FMA_D(r * u, s, r);
}
SF_MATH_FN double sf_cos_poly(double r) {
  double u = r * r;
  double c = SF_MATH_FMA_D(u, -0x1.24880f56c0436p-22, 0x1.a0132fdf6835ep-16);
  c = SF_MATH_FMA_D(c, u, -0x1.6c16bc5a33912p-10);
  c = SF_MATH_FMA_D(c, u, 0x1.55555553a9a83p-5);
  return SF_MATH_FMA_D(u * u, c, SF_MATH_FMA_D(u, -0.5, 1.0));
}

// sin and cos share the reduction; `phase` is 0 for sin, 1 for cos (cos x = sin(x + pi/2)).
// |x| < pi/4 skips the reduction, so tiny inputs and -0 come through exactly.
SF_MATH_FN float sf_sincos_impl(float x, int phase) {
  unsigned int sign = SF_MATH_AS_UINT(x) & 0x80000000u;
  float axf = SF_MATH_AS_FLOAT(SF_MATH_AS_UINT(x) ^ sign);
  double ax = axf;
  int q;
  double r = sf_reduce_pio2(ax, &q);
  bool near0 = axf < 0x1.921fb4p-1f;  // below pi/4
  r = near0 ? ax : r;
  q = (near0 ? 0 : q) + phase;
  double vs = sf_sin_poly(r);
  double vc = sf_cos_poly(r);
  double v = (q & 1) ? vc : vs;
  unsigned int flip = (unsigned int)(q & 2) << 30;
  flip ^= phase ? 0u : sign;  // sin is odd, cos even
  float y = SF_MATH_AS_FLOAT(SF_MATH_AS_UINT((float)v) ^ flip);
  return axf <= 0x1.fffffep127f ? y : x - x;  // inf and NaN give NaN
}

// sin: exact Payne–Hanek reduction to |r| <= pi/4, then a double polynomial. Max error
// 0.5001 ulp.
SF_MATH_FN float sf_sin(float x) { return sf_sincos_impl(x, 0); }

// cos: as sin, one quadrant on. Max error 0.5001 ulp.
SF_MATH_FN float sf_cos(float x) { return sf_sincos_impl(x, 1); }

// x^y = e^(y ln|x|) in double. ln|x| = e ln2 + 2 atanh(s), s = f / (2 + f) with f = m - 1 as in
// sf_log, atanh's odd series fitted to degree 13 (2^-51); e^t from sf_exp_d (2^-45). The only
// rounding that matters is the last one to float: error at most 0.5 ulp + 2^-20. Special cases
// follow C99 F.9.4.4: pow(x, ±0) = 1 and pow(1, y) = 1 even for NaN, pow(-1, ±inf) = 1, a negative
// finite base with a non-integer exponent gives NaN, an odd integer exponent keeps the base's
// sign, and zeros and infinities fall out of ln|x| = ∓inf.
SF_MATH_FN float sf_pow(float x, float y) {
  float ax = SF_MATH_AS_FLOAT(SF_MATH_AS_UINT(x) & 0x7fffffffu);
  bool tiny = ax < 0x1p-126f;
  float xs = tiny ? ax * 0x1p23f : ax;
  unsigned int u = SF_MATH_AS_UINT(xs);
  int e = (int)(u - 0x3f3504f3u) >> 23;
  double f = SF_MATH_AS_FLOAT(u - ((unsigned int)e << 23)) - 1.0f;  // exact
  double ed = (double)(e - (tiny ? 23 : 0));
  double s = f / (2.0 + f);
  double w = s * s;
  double l = SF_MATH_FMA_D(w, 0x1.577aa27728b68p-3, 0x1.73436d9792165p-3);
  l = SF_MATH_FMA_D(l, w, 0x1.c721a8905943fp-3);
  l = SF_MATH_FMA_D(l, w, 0x1.2492432620475p-2);
  l = SF_MATH_FMA_D(l, w, 0x1.9999999f67e9dp-2);
  l = SF_MATH_FMA_D(l, w, 0x1.5555555554a21p-1);
  double ln = SF_MATH_FMA_D(s * w, l, 2.0 * s);
  ln = ed * 0x1.62e42fefa3900p-1 + SF_MATH_FMA_D(ed, 0x1.de6af278ece60p-46, ln);
  ln = ax == 0.0f ? -(double)SF_MATH_INF : ln;
  ln = ax == SF_MATH_INF || ax != ax ? (double)ax : ln;
  double t = (double)y * ln;
  double scale;
  double p = sf_exp_d(t, &scale);
  float r = (float)(scale * (1.0 + p));
  // Beyond float range, selected after the fact (as in sf_exp: two clamps of t first were
  // threaded into copies of the body, 1.1x the time); NaN passes both.
  r = t > 100.0 ? SF_MATH_INF : r;
  r = t < -110.0 ? 0.0f : r;
  // y is an integer when |y| >= 2^23 or rounding it changes nothing; odd when, also, |y| < 2^24
  // and rounding y/2 does change it.
  float ay = SF_MATH_AS_FLOAT(SF_MATH_AS_UINT(y) & 0x7fffffffu);
  float hy = ay * 0.5f;
  bool y_int = ay >= 0x1p23f || (ay + 0x1p23f) - 0x1p23f == ay;
  bool y_odd = y_int && ay < 0x1p24f && (hy + 0x1p23f) - 0x1p23f != hy;
  unsigned int sign = y_odd ? SF_MATH_AS_UINT(x) & 0x80000000u : 0u;
  r = SF_MATH_AS_FLOAT(SF_MATH_AS_UINT(r) | sign);
  r = x < 0.0f && x > -SF_MATH_INF && !y_int ? SF_MATH_NAN : r;
  r = x == -1.0f && ay == SF_MATH_INF ? 1.0f : r;
  return y == 0.0f || x == 1.0f ? 1.0f : r;
}

#endif  // STREAMFUSE_CORE_VECTOR_MATH_H_

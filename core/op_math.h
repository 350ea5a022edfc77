// What each element-wise op computes, once: one function per op (named after its OpKind,
// sf_op_<Kind>) and compute type. The eager CPU kernels and the interpreter instantiate them
// (backends/cpu/kernels/elementwise_ops.h dispatches an OpKind to its function), and the code the
// JIT generates for the CPU and for CUDA calls them by name (jit/kernel_expressions.cpp), so a
// fused result equals the unfused one bit for bit by construction.
//
// Like scalar_ops.h and vector_math.h, the text is pasted verbatim into generated kernels after
// them: it includes nothing (include those two first), uses plain C types (float, double, int,
// long long, unsigned char for bool) and reaches the platform only through the SF_MATH_* macros.
// An op has a function for exactly the compute types it has a form in (jit::has_form); f64 has
// every form float has, computed in double with the platform's double functions (SF_MATH_F64).
#ifndef STREAMFUSE_CORE_OP_MATH_H_
#define STREAMFUSE_CORE_OP_MATH_H_

// ---- unary -----------------------------------------------------------------------------------
SF_MATH_FN float sf_op_Neg(float a) { return -a; }
SF_MATH_FN int sf_op_Neg(int a) { return sf_neg(a); }
SF_MATH_FN long long sf_op_Neg(long long a) { return sf_neg(a); }
SF_MATH_FN float sf_op_Abs(float a) { return sf_abs(a); }
SF_MATH_FN int sf_op_Abs(int a) { return sf_abs(a); }
SF_MATH_FN long long sf_op_Abs(long long a) { return sf_abs(a); }
SF_MATH_FN float sf_op_Relu(float a) { return sf_relu(a); }
SF_MATH_FN int sf_op_Relu(int a) { return sf_relu(a); }
SF_MATH_FN long long sf_op_Relu(long long a) { return sf_relu(a); }
SF_MATH_FN float sf_op_Exp(float a) { return sf_exp(a); }
SF_MATH_FN float sf_op_Log(float a) { return sf_log(a); }
SF_MATH_FN float sf_op_Sqrt(float a) { return sf_sqrt(a); }
SF_MATH_FN float sf_op_Rsqrt(float a) { return sf_rsqrt(a); }
SF_MATH_FN float sf_op_Recip(float a) { return sf_recip(a); }
SF_MATH_FN float sf_op_Sin(float a) { return sf_sin(a); }
SF_MATH_FN float sf_op_Cos(float a) { return sf_cos(a); }
SF_MATH_FN float sf_op_Tanh(float a) { return sf_tanh(a); }
SF_MATH_FN float sf_op_Erf(float a) { return sf_erf(a); }
SF_MATH_FN float sf_op_Sigmoid(float a) { return sf_sigmoid(a); }
SF_MATH_FN double sf_op_Neg(double a) { return -a; }
SF_MATH_FN double sf_op_Abs(double a) { return sf_abs(a); }
SF_MATH_FN double sf_op_Relu(double a) { return sf_relu(a); }
SF_MATH_FN double sf_op_Exp(double a) { return SF_MATH_F64(exp)(a); }
SF_MATH_FN double sf_op_Log(double a) { return SF_MATH_F64(log)(a); }
SF_MATH_FN double sf_op_Sqrt(double a) { return SF_MATH_F64(sqrt)(a); }  // correctly rounded
SF_MATH_FN double sf_op_Rsqrt(double a) { return 1.0 / SF_MATH_F64(sqrt)(a); }
SF_MATH_FN double sf_op_Recip(double a) { return 1.0 / a; }
SF_MATH_FN double sf_op_Sin(double a) { return SF_MATH_F64(sin)(a); }
SF_MATH_FN double sf_op_Cos(double a) { return SF_MATH_F64(cos)(a); }
SF_MATH_FN double sf_op_Tanh(double a) { return SF_MATH_F64(tanh)(a); }
SF_MATH_FN double sf_op_Erf(double a) { return SF_MATH_F64(erf)(a); }
SF_MATH_FN double sf_op_Sigmoid(double a) { return 1.0 / (1.0 + SF_MATH_F64(exp)(-a)); }

// ---- binary: IEEE arithmetic in float, wrapping in integers -----------------------------------
SF_MATH_FN float sf_op_Add(float a, float b) { return a + b; }
SF_MATH_FN float sf_op_Sub(float a, float b) { return a - b; }
SF_MATH_FN float sf_op_Mul(float a, float b) { return a * b; }
SF_MATH_FN float sf_op_Div(float a, float b) { return a / b; }
SF_MATH_FN double sf_op_Add(double a, double b) { return a + b; }
SF_MATH_FN double sf_op_Sub(double a, double b) { return a - b; }
SF_MATH_FN double sf_op_Mul(double a, double b) { return a * b; }
SF_MATH_FN double sf_op_Div(double a, double b) { return a / b; }
SF_MATH_FN double sf_op_Pow(double a, double b) { return SF_MATH_F64(pow)(a, b); }
SF_MATH_FN int sf_op_Add(int a, int b) { return sf_add(a, b); }
SF_MATH_FN long long sf_op_Add(long long a, long long b) { return sf_add(a, b); }
SF_MATH_FN int sf_op_Sub(int a, int b) { return sf_sub(a, b); }
SF_MATH_FN long long sf_op_Sub(long long a, long long b) { return sf_sub(a, b); }
SF_MATH_FN int sf_op_Mul(int a, int b) { return sf_mul(a, b); }
SF_MATH_FN long long sf_op_Mul(long long a, long long b) { return sf_mul(a, b); }
SF_MATH_FN float sf_op_Pow(float a, float b) { return sf_pow(a, b); }
SF_MATH_FN int sf_op_Pow(int a, int b) { return sf_ipow(a, b); }
SF_MATH_FN long long sf_op_Pow(long long a, long long b) { return sf_ipow(a, b); }
// float and f64: NaN wins; bool: or / and.
SF_MATH_FN float sf_op_Maximum(float a, float b) { return sf_max(a, b); }
SF_MATH_FN double sf_op_Maximum(double a, double b) { return sf_max(a, b); }
SF_MATH_FN double sf_op_Minimum(double a, double b) { return sf_min(a, b); }
SF_MATH_FN int sf_op_Maximum(int a, int b) { return sf_max(a, b); }
SF_MATH_FN long long sf_op_Maximum(long long a, long long b) { return sf_max(a, b); }
SF_MATH_FN unsigned char sf_op_Maximum(unsigned char a, unsigned char b) { return sf_max(a, b); }
SF_MATH_FN float sf_op_Minimum(float a, float b) { return sf_min(a, b); }
SF_MATH_FN int sf_op_Minimum(int a, int b) { return sf_min(a, b); }
SF_MATH_FN long long sf_op_Minimum(long long a, long long b) { return sf_min(a, b); }
SF_MATH_FN unsigned char sf_op_Minimum(unsigned char a, unsigned char b) { return sf_min(a, b); }

// ---- comparisons: bool results ----------------------------------------------------------------
SF_MATH_FN unsigned char sf_op_Eq(double a, double b) { return (unsigned char)(a == b); }
SF_MATH_FN unsigned char sf_op_Ne(double a, double b) { return (unsigned char)(a != b); }
SF_MATH_FN unsigned char sf_op_Lt(double a, double b) { return (unsigned char)(a < b); }
SF_MATH_FN unsigned char sf_op_Le(double a, double b) { return (unsigned char)(a <= b); }
SF_MATH_FN unsigned char sf_op_Gt(double a, double b) { return (unsigned char)(a > b); }
SF_MATH_FN unsigned char sf_op_Ge(double a, double b) { return (unsigned char)(a >= b); }
SF_MATH_FN unsigned char sf_op_Eq(float a, float b) { return (unsigned char)(a == b); }
SF_MATH_FN unsigned char sf_op_Eq(int a, int b) { return (unsigned char)(a == b); }
SF_MATH_FN unsigned char sf_op_Eq(long long a, long long b) { return (unsigned char)(a == b); }
SF_MATH_FN unsigned char sf_op_Eq(unsigned char a, unsigned char b) {
  return (unsigned char)(a == b);
}
SF_MATH_FN unsigned char sf_op_Ne(float a, float b) { return (unsigned char)(a != b); }
SF_MATH_FN unsigned char sf_op_Ne(int a, int b) { return (unsigned char)(a != b); }
SF_MATH_FN unsigned char sf_op_Ne(long long a, long long b) { return (unsigned char)(a != b); }
SF_MATH_FN unsigned char sf_op_Ne(unsigned char a, unsigned char b) {
  return (unsigned char)(a != b);
}
SF_MATH_FN unsigned char sf_op_Lt(float a, float b) { return (unsigned char)(a < b); }
SF_MATH_FN unsigned char sf_op_Lt(int a, int b) { return (unsigned char)(a < b); }
SF_MATH_FN unsigned char sf_op_Lt(long long a, long long b) { return (unsigned char)(a < b); }
SF_MATH_FN unsigned char sf_op_Lt(unsigned char a, unsigned char b) {
  return (unsigned char)(a < b);
}
SF_MATH_FN unsigned char sf_op_Le(float a, float b) { return (unsigned char)(a <= b); }
SF_MATH_FN unsigned char sf_op_Le(int a, int b) { return (unsigned char)(a <= b); }
SF_MATH_FN unsigned char sf_op_Le(long long a, long long b) { return (unsigned char)(a <= b); }
SF_MATH_FN unsigned char sf_op_Le(unsigned char a, unsigned char b) {
  return (unsigned char)(a <= b);
}
SF_MATH_FN unsigned char sf_op_Gt(float a, float b) { return (unsigned char)(a > b); }
SF_MATH_FN unsigned char sf_op_Gt(int a, int b) { return (unsigned char)(a > b); }
SF_MATH_FN unsigned char sf_op_Gt(long long a, long long b) { return (unsigned char)(a > b); }
SF_MATH_FN unsigned char sf_op_Gt(unsigned char a, unsigned char b) {
  return (unsigned char)(a > b);
}
SF_MATH_FN unsigned char sf_op_Ge(float a, float b) { return (unsigned char)(a >= b); }
SF_MATH_FN unsigned char sf_op_Ge(int a, int b) { return (unsigned char)(a >= b); }
SF_MATH_FN unsigned char sf_op_Ge(long long a, long long b) { return (unsigned char)(a >= b); }
SF_MATH_FN unsigned char sf_op_Ge(unsigned char a, unsigned char b) {
  return (unsigned char)(a >= b);
}

// ---- logical: operands are bool (0 or 1) -------------------------------------------------------
SF_MATH_FN unsigned char sf_op_LogicalAnd(unsigned char a, unsigned char b) {
  return (unsigned char)(a & b);
}
SF_MATH_FN unsigned char sf_op_LogicalOr(unsigned char a, unsigned char b) {
  return (unsigned char)(a | b);
}
SF_MATH_FN unsigned char sf_op_LogicalNot(unsigned char a) { return (unsigned char)(a ^ 1); }

// ---- where ------------------------------------------------------------------------------------
// Floats select bits, so that the value not taken is still computed: GCC turns `c ? a : b` into
// the computation of `a` under c's mask, loads included, and on an AMD EPYC (Zen 5 class) an
// AVX-512 multiply of memory under a mask with many lanes off (a causal mask's rows) made
// softmax(where(mask, s * scale, -inf)) over [8,12,512,512] take 11.4 ms instead of 7.8. The
// mask is c's byte of all ones or zeros, sign-extended: one vector instruction per 16 lanes (a
// zero-extended 0 or 1, negated, took two and more). Any nonzero c is true, as for `c ? a : b`,
// and the bits are those of the value chosen.
SF_MATH_FN float sf_op_Where(unsigned char c, float a, float b) {
  const unsigned int m = (unsigned int)(int)(signed char)(0 - (c != 0));
  return SF_MATH_AS_FLOAT((SF_MATH_AS_UINT(a) & m) | (SF_MATH_AS_UINT(b) & ~m));
}
SF_MATH_FN double sf_op_Where(unsigned char c, double a, double b) {
  const unsigned long long m = (unsigned long long)(long long)(signed char)(0 - (c != 0));
  return SF_MATH_AS_DOUBLE((SF_MATH_AS_ULL(a) & m) | (SF_MATH_AS_ULL(b) & ~m));
}
SF_MATH_FN int sf_op_Where(unsigned char c, int a, int b) { return c ? a : b; }
SF_MATH_FN long long sf_op_Where(unsigned char c, long long a, long long b) { return c ? a : b; }
SF_MATH_FN unsigned char sf_op_Where(unsigned char c, unsigned char a, unsigned char b) {
  return c ? a : b;
}

#endif  // STREAMFUSE_CORE_OP_MATH_H_

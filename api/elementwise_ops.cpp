// The element-wise API ops: validation, promotion and recording. clamp and where with a scalar
// are made of other ops and name themselves in errors (api_call).
#include <array>
#include <string>

#include "api/api_call.h"
#include "api/recorder.h"
#include "api/shape_rules.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"

namespace streamfuse {

using api::api_call;
using api::common_device;
using api::describe_all;
using api::node_of;
using api::record;
using core::OpAttrs;
using core::OpCategory;
using core::OpKind;
using core::ScalarSide;

namespace {

std::string name_of(core::OpKind kind) { return std::string(core::op_name(kind)); }

// Unary ops: math functions of integer and bool inputs compute in f32; the rest keep the dtype
// and refuse bool, which has no sign and no magnitude.
Tensor unary(core::OpKind kind, Tensor x) {
  const DType in = node_of(x, core::op_name(kind)).dtype;
  DType out = in;
  switch (kind) {
    case core::OpKind::kNeg:
    case core::OpKind::kAbs:
    case core::OpKind::kRelu:
      if (in == kBool)
        throw DTypeError(name_of(kind) + ": not defined for bool tensors (" +
                         describe_all({&x, 1}) + "); convert with .to(kI32) or use logical_not");
      break;
    default:
      if (!is_floating(in)) out = kF32;
  }
  core::OpAttrs attrs;
  attrs.dtype = out;
  const Shape shape = x.node()->shape;
  const Device device = x.node()->device;
  return record(kind, {&x, 1}, shape, out, device, attrs);
}

// The dtype two operands are read as, or a DTypeError for arithmetic on two bools.
DType arithmetic_dtype(core::OpKind kind, DType promoted, std::span<const Tensor> operands) {
  if (promoted == kBool && kind != core::OpKind::kMaximum && kind != core::OpKind::kMinimum)
    throw DTypeError(name_of(kind) + ": arithmetic on bool operands (" + describe_all(operands) +
                     ") is not defined; use logical_and / logical_or, or convert with .to(kI32)");
  if (kind == core::OpKind::kDiv && !is_floating(promoted)) return kF32;  // true division
  return promoted;
}

Tensor binary(core::OpKind kind, Tensor a, Tensor b) {
  std::array<Tensor, 2> ops{std::move(a), std::move(b)};
  const std::string name = name_of(kind);
  const Device device = common_device(ops, name);
  const Shape shape = api::broadcast_shapes(ops, name);
  const DType promoted = promote_types(ops[0].node()->dtype, ops[1].node()->dtype);
  core::OpAttrs attrs;
  DType out;
  switch (core::op_category(kind)) {
    case core::OpCategory::kCompare:
      attrs.dtype = promoted;
      out = kBool;
      break;
    case core::OpCategory::kLogical:
      attrs.dtype = kBool;
      out = kBool;
      break;
    default:
      out = attrs.dtype = arithmetic_dtype(kind, promoted, ops);
  }
  return record(kind, ops, shape, out, device, attrs);
}

// `t op s` (side kRhs) or `s op t` (side kLhs).
Tensor binary_scalar(core::OpKind kind, Tensor t, Scalar s, core::ScalarSide side) {
  const std::string name = name_of(kind);
  const stream::TensorNode& n = node_of(t, name);
  const DType promoted = promote_with_scalar(n.dtype, s);
  core::OpAttrs attrs;
  attrs.scalar_side = side;
  DType out;
  if (core::op_category(kind) == core::OpCategory::kCompare) {
    attrs.dtype = promoted;
    out = kBool;
  } else {
    out = attrs.dtype = arithmetic_dtype(kind, promoted, {&t, 1});
  }
  const Shape shape = n.shape;
  const Device device = n.device;
  return record(kind, {&t, 1}, shape, out, device, attrs, {&s, 1});
}

// a op= b (b a tensor) or a op= s: checked while a's handle is still held, so that an error
// loses nothing; then a is moved in (its last use when no other handle shares it, so the op
// writes a's memory) and rebound. The result keeps a's shape and dtype: a result of another
// float dtype, or of another integer dtype, converts back (f16 += f32, i32 += i64), as PyTorch's
// in-place ops do; a float result for an integer a is an error.
Tensor& compound(core::OpKind kind, Tensor& a, const Tensor* b, const Scalar* s) {
  const std::string call = name_of(kind) + "=";  // "add=": the op, assigned
  return api_call(call, [&]() -> Tensor& {
    const stream::TensorNode& n = node_of(a, call);
    const DType want = n.dtype;
    DType out;
    if (b) {
      const std::array<Tensor, 2> check{a, *b};
      common_device(check, call);
      if (api::broadcast_shapes(check, call) != n.shape)
        throw ShapeError(call + ": " + describe_all(check) + " broadcast to another shape than " +
                         "the first's, which an assignment keeps; write a = a " +
                         "op b to get the broadcast result");
      out = arithmetic_dtype(kind, promote_types(want, node_of(*b, call).dtype), check);
    } else {
      out = arithmetic_dtype(kind, promote_with_scalar(want, *s), {&a, 1});
    }
    if (is_floating(out) != is_floating(want))
      throw DTypeError(call + ": the result is " + std::string(dtype_name(out)) + ", which " +
                       api::describe(a) + " cannot hold; write a = a op b for a new tensor");
    if (b) {
      Tensor other = *b;  // before a moves: b may be a itself (a *= a)
      a = binary(kind, std::move(a), std::move(other));
    } else {
      a = binary_scalar(kind, std::move(a), *s, core::ScalarSide::kRhs);
    }
    if (out != want) a = std::move(a).to(want);
    return a;
  });
}

}  // namespace

Tensor& operator+=(Tensor& a, const Tensor& b) {
  return compound(core::OpKind::kAdd, a, &b, nullptr);
}
Tensor& operator-=(Tensor& a, const Tensor& b) {
  return compound(core::OpKind::kSub, a, &b, nullptr);
}
Tensor& operator*=(Tensor& a, const Tensor& b) {
  return compound(core::OpKind::kMul, a, &b, nullptr);
}
Tensor& operator/=(Tensor& a, const Tensor& b) {
  return compound(core::OpKind::kDiv, a, &b, nullptr);
}
Tensor& operator+=(Tensor& a, Scalar b) { return compound(core::OpKind::kAdd, a, nullptr, &b); }
Tensor& operator-=(Tensor& a, Scalar b) { return compound(core::OpKind::kSub, a, nullptr, &b); }
Tensor& operator*=(Tensor& a, Scalar b) { return compound(core::OpKind::kMul, a, nullptr, &b); }
Tensor& operator/=(Tensor& a, Scalar b) { return compound(core::OpKind::kDiv, a, nullptr, &b); }

Tensor operator+(Tensor a, Tensor b) {
  return binary(core::OpKind::kAdd, std::move(a), std::move(b));
}
Tensor operator+(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kAdd, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor operator+(Scalar a, Tensor b) {
  return binary_scalar(core::OpKind::kAdd, std::move(b), a, core::ScalarSide::kLhs);
}
Tensor operator-(Tensor a, Tensor b) {
  return binary(core::OpKind::kSub, std::move(a), std::move(b));
}
Tensor operator-(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kSub, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor operator-(Scalar a, Tensor b) {
  return binary_scalar(core::OpKind::kSub, std::move(b), a, core::ScalarSide::kLhs);
}
Tensor operator*(Tensor a, Tensor b) {
  return binary(core::OpKind::kMul, std::move(a), std::move(b));
}
Tensor operator*(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kMul, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor operator*(Scalar a, Tensor b) {
  return binary_scalar(core::OpKind::kMul, std::move(b), a, core::ScalarSide::kLhs);
}
Tensor operator/(Tensor a, Tensor b) {
  return binary(core::OpKind::kDiv, std::move(a), std::move(b));
}
Tensor operator/(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kDiv, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor operator/(Scalar a, Tensor b) {
  return binary_scalar(core::OpKind::kDiv, std::move(b), a, core::ScalarSide::kLhs);
}
Tensor operator-(Tensor a) { return unary(core::OpKind::kNeg, std::move(a)); }

Tensor neg(Tensor x) { return unary(core::OpKind::kNeg, std::move(x)); }
Tensor abs(Tensor x) { return unary(core::OpKind::kAbs, std::move(x)); }
Tensor exp(Tensor x) { return unary(core::OpKind::kExp, std::move(x)); }
Tensor log(Tensor x) { return unary(core::OpKind::kLog, std::move(x)); }
Tensor sqrt(Tensor x) { return unary(core::OpKind::kSqrt, std::move(x)); }
Tensor rsqrt(Tensor x) { return unary(core::OpKind::kRsqrt, std::move(x)); }
Tensor recip(Tensor x) { return unary(core::OpKind::kRecip, std::move(x)); }
Tensor sin(Tensor x) { return unary(core::OpKind::kSin, std::move(x)); }
Tensor cos(Tensor x) { return unary(core::OpKind::kCos, std::move(x)); }
Tensor tanh(Tensor x) { return unary(core::OpKind::kTanh, std::move(x)); }
Tensor erf(Tensor x) { return unary(core::OpKind::kErf, std::move(x)); }
Tensor sigmoid(Tensor x) { return unary(core::OpKind::kSigmoid, std::move(x)); }
Tensor relu(Tensor x) { return unary(core::OpKind::kRelu, std::move(x)); }

Tensor pow(Tensor base, Tensor exponent) {
  return binary(core::OpKind::kPow, std::move(base), std::move(exponent));
}
Tensor pow(Tensor base, Scalar exponent) {
  return binary_scalar(core::OpKind::kPow, std::move(base), exponent, core::ScalarSide::kRhs);
}
Tensor pow(Scalar base, Tensor exponent) {
  return binary_scalar(core::OpKind::kPow, std::move(exponent), base, core::ScalarSide::kLhs);
}
Tensor maximum(Tensor a, Tensor b) {
  return binary(core::OpKind::kMaximum, std::move(a), std::move(b));
}
Tensor maximum(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kMaximum, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor minimum(Tensor a, Tensor b) {
  return binary(core::OpKind::kMinimum, std::move(a), std::move(b));
}
Tensor minimum(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kMinimum, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor clamp(Tensor x, Scalar lo, Scalar hi) {
  return api_call("clamp", [&] { return minimum(maximum(std::move(x), lo), hi); });
}
Tensor clamp(Tensor x, Tensor lo, Tensor hi) {
  return api_call("clamp",
                  [&] { return minimum(maximum(std::move(x), std::move(lo)), std::move(hi)); });
}

Tensor operator==(Tensor a, Tensor b) {
  return binary(core::OpKind::kEq, std::move(a), std::move(b));
}
Tensor operator==(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kEq, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor operator!=(Tensor a, Tensor b) {
  return binary(core::OpKind::kNe, std::move(a), std::move(b));
}
Tensor operator!=(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kNe, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor operator<(Tensor a, Tensor b) {
  return binary(core::OpKind::kLt, std::move(a), std::move(b));
}
Tensor operator<(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kLt, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor operator<=(Tensor a, Tensor b) {
  return binary(core::OpKind::kLe, std::move(a), std::move(b));
}
Tensor operator<=(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kLe, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor operator>(Tensor a, Tensor b) {
  return binary(core::OpKind::kGt, std::move(a), std::move(b));
}
Tensor operator>(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kGt, std::move(a), b, core::ScalarSide::kRhs);
}
Tensor operator>=(Tensor a, Tensor b) {
  return binary(core::OpKind::kGe, std::move(a), std::move(b));
}
Tensor operator>=(Tensor a, Scalar b) {
  return binary_scalar(core::OpKind::kGe, std::move(a), b, core::ScalarSide::kRhs);
}

Tensor logical_and(Tensor a, Tensor b) {
  return binary(core::OpKind::kLogicalAnd, std::move(a), std::move(b));
}
Tensor logical_or(Tensor a, Tensor b) {
  return binary(core::OpKind::kLogicalOr, std::move(a), std::move(b));
}
Tensor logical_not(Tensor x) {
  const stream::TensorNode& n = node_of(x, "logical_not");
  core::OpAttrs attrs;
  attrs.dtype = kBool;
  const Shape shape = n.shape;
  const Device device = n.device;
  return record(core::OpKind::kLogicalNot, {&x, 1}, shape, kBool, device, attrs);
}

Tensor where(Tensor cond, Tensor a, Tensor b) {
  std::array<Tensor, 3> ops{std::move(cond), std::move(a), std::move(b)};
  const Device device = common_device(ops, "where");
  if (ops[0].node()->dtype != kBool)
    throw DTypeError("where: the condition must be a bool tensor, got " + describe_all(ops) +
                     "; compare first (e.g. x > 0) or convert with .to(kBool)");
  const Shape shape = api::broadcast_shapes(ops, "where");
  core::OpAttrs attrs;
  attrs.dtype = promote_types(ops[1].node()->dtype, ops[2].node()->dtype);
  return record(core::OpKind::kWhere, ops, shape, attrs.dtype, device, attrs);
}

// A scalar branch of where is a 0-d tensor of the other branch's dtype where the scalar does not
// promote it (so `where(c, x_f16, 0.5)` stays f16, as in PyTorch).
Tensor where(Tensor cond, Tensor a, Scalar b) {
  return api_call("where", [&] {
    const stream::TensorNode& n = node_of(a, "where");
    Tensor bt = full({}, b, promote_with_scalar(n.dtype, b), n.device);
    return where(std::move(cond), std::move(a), std::move(bt));
  });
}
Tensor where(Tensor cond, Scalar a, Tensor b) {
  return api_call("where", [&] {
    const stream::TensorNode& n = node_of(b, "where");
    Tensor at = full({}, a, promote_with_scalar(n.dtype, a), n.device);
    return where(std::move(cond), std::move(at), std::move(b));
  });
}

Tensor Tensor::to(DType dtype) && {
  const stream::TensorNode& n = node_of(*this, "to");
  if (n.dtype == dtype) return std::move(*this);
  core::OpAttrs attrs;
  attrs.dtype = n.dtype;  // read as the source dtype
  const Shape shape = n.shape;
  const Device device = n.device;
  return record(core::OpKind::kCast, {this, 1}, shape, dtype, device, attrs);
}

}  // namespace streamfuse

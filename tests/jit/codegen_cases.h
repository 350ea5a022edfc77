// The programs and keys the code generator tests compile: every op on every value type it has a
// form for, loads and stores of every dtype, conversions, rounding, scalar arguments, layouts of
// rank 0 to 3 with broadcast and strided operands, and outputs over their inputs. The CPU test
// runs them against a scalar reference; the CUDA test compiles them through NVRTC.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/ir.h"
#include "jit/program.h"
#include "jit/specialization.h"

namespace streamfuse::jit::testing {

using core::OpCategory;
using core::OpKind;
using VT = ValueType;

// ---- programs --------------------------------------------------------------------------------

struct Builder {
  FusedProgram p;
  int reg() { return p.num_registers++; }
  int emit(Instruction in) {
    in.out = reg();
    p.prologue.push_back(in);
    return in.out;
  }
  int load(int input, VT t) {
    return emit({InstrKind::kLoad, core::OpKind::kAdd, t, kF16, 0, input});
  }
  int scalar(ScalarArg arg) {
    p.scalars.push_back(arg);
    return emit({InstrKind::kScalar, core::OpKind::kAdd, arg.type, kF16, 0,
                 static_cast<int>(p.scalars.size()) - 1});
  }
  int op(core::OpKind k, VT t, int a, int b = -1, int c = -1) {
    return emit({InstrKind::kOp, k, t, kF16, 0, 0, {a, b, c}});
  }
  int convert(int a, VT t) {
    return emit({InstrKind::kConvert, core::OpKind::kAdd, t, kF16, 0, 0, {a}});
  }
  int round(int a, DType d) {
    return emit({InstrKind::kRound, core::OpKind::kAdd, value_type_of(d), d, 0, 0, {a}});
  }
  void store(int r, DType d) { p.outputs.push_back({r, d}); }
};

constexpr VT kTypes[] = {VT::kFloat, VT::kI32, VT::kI64, VT::kBool};
constexpr DType kDTypes[] = {kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64};

inline bool has_form(core::OpKind k, VT t) {
  const core::OpCategory c = core::op_category(k);
  if (c == core::OpCategory::kCompare || k == core::OpKind::kWhere) return true;
  if (c == core::OpCategory::kLogical) return t == VT::kBool;
  if (k == core::OpKind::kMaximum || k == core::OpKind::kMinimum) return true;
  if (t == VT::kBool) return false;
  if (t == VT::kFloat) return true;
  return k == core::OpKind::kNeg || k == core::OpKind::kAbs || k == core::OpKind::kRelu ||
         k == core::OpKind::kAdd || k == core::OpKind::kSub || k == core::OpKind::kMul ||
         k == core::OpKind::kPow;
}

inline std::vector<core::OpKind> elementwise_ops(core::OpCategory category) {
  std::vector<core::OpKind> out;
  for (int k = 0; k <= static_cast<int>(core::OpKind::kCast); ++k) {
    const auto op = static_cast<core::OpKind>(k);
    if (core::op_category(op) == category) out.push_back(op);
  }
  return out;
}

// x * (erf(x / sqrt 2) + 1) / 2, optionally in f16 (each op's result rounded).
inline FusedProgram gelu(DType d) {
  Builder b;
  b.p.inputs = {d};
  const auto rnd = [&](int r) { return d == kF32 ? r : b.round(r, d); };
  const int x = b.load(0, VT::kFloat);
  const int c = b.scalar({ScalarArg::Mode::kOperand, VT::kFloat});
  const int one = b.scalar({ScalarArg::Mode::kOperand, VT::kFloat});
  const int two = b.scalar({ScalarArg::Mode::kOperand, VT::kFloat});
  const int q = rnd(b.op(core::OpKind::kDiv, VT::kFloat, x, c));
  const int e = rnd(b.op(core::OpKind::kErf, VT::kFloat, q));
  const int s = rnd(b.op(core::OpKind::kAdd, VT::kFloat, e, one));
  const int m = rnd(b.op(core::OpKind::kMul, VT::kFloat, x, s));
  b.store(rnd(b.op(core::OpKind::kDiv, VT::kFloat, m, two)), d);
  return b.p;
}

struct Case {
  std::string name;
  FusedProgram program;
  SpecializationKey key;
  std::vector<long long> sizes;
  std::vector<Scalar> scalar_values;  // one per program scalar
};

// A key of rank `classes[k].size()`: per operand a string of c (contiguous), z (zero), a
// (argument), outermost first; `alias` for the first output.
inline SpecializationKey make_key(const FusedProgram& p, const std::vector<std::string>& classes,
                                  int alias = -1) {
  SpecializationKey key;
  key.rank = static_cast<std::int8_t>(classes.empty() ? 0 : classes[0].size());
  for (std::size_t k = 0; k < p.inputs.size() + p.outputs.size(); ++k) {
    OperandKey ok;
    ok.dtype = k < p.inputs.size() ? p.inputs[k] : p.outputs[k - p.inputs.size()].dtype;
    const std::string& c = classes[std::min(k, classes.size() - 1)];
    for (std::size_t d = 0; d < c.size(); ++d)
      ok.strides[d] = c[d] == 'c'   ? StrideClass::kContiguous
                      : c[d] == 'z' ? StrideClass::kZero
                                    : StrideClass::kArgument;
    if (k < p.inputs.size()) {
      key.inputs.push_back(ok);
    } else {
      if (k == p.inputs.size()) ok.alias = static_cast<std::int8_t>(alias);
      key.outputs.push_back(ok);
    }
  }
  return key;
}

inline std::string type_name(VT t) { return value_type_name(t); }

inline std::vector<Case> build_cases() {
  std::vector<Case> cases;
  const auto add = [&](std::string name, FusedProgram p, std::vector<std::string> classes,
                       std::vector<long long> sizes, std::vector<Scalar> scalars = {},
                       int alias = -1) {
    Case& c = cases.emplace_back();
    c.key = make_key(p, classes, alias);
    c.name = std::move(name);
    c.program = std::move(p);
    c.sizes = std::move(sizes);
    c.scalar_values = std::move(scalars);
  };
  const std::vector<long long> flat = {203};

  // Every op kind of every category on every value type it has a form for; each result stored.
  for (VT t : kTypes) {
    const DType d = storage_dtype_of(t);
    for (core::OpCategory cat :
         {core::OpCategory::kUnary, core::OpCategory::kBinary, core::OpCategory::kCompare,
          core::OpCategory::kLogical, core::OpCategory::kSelect}) {
      Builder b;
      b.p.inputs = {d, d, kBool};
      const int x = b.load(0, t), y = b.load(1, t), c = b.load(2, VT::kBool);
      for (core::OpKind k : elementwise_ops(cat)) {
        if (!has_form(k, t)) continue;
        const int r = k == core::OpKind::kWhere     ? b.op(k, t, c, x, y)
                      : core::op_info(k).arity == 1 ? b.op(k, t, x)
                                                    : b.op(k, t, x, y);
        const bool is_bool = cat == core::OpCategory::kCompare || cat == core::OpCategory::kLogical;
        b.store(r, is_bool ? kBool : d);
      }
      if (b.p.outputs.empty()) continue;
      add("op/" + type_name(t) + "/" + std::to_string(static_cast<int>(cat)), b.p, {"c"}, flat);
    }
  }
  // Loads of every dtype as every value type, stored to every dtype.
  for (DType in : kDTypes) {
    Builder b;
    b.p.inputs = {in};
    for (VT t : {VT::kFloat, VT::kI32, VT::kI64, VT::kBool, VT::kF64}) {
      const int r = b.load(0, t);
      for (DType out : kDTypes) b.store(r, out);
    }
    add("load/" + std::string(dtype_name(in)), b.p, {"c"}, flat);
  }
  // Conversions between value types.
  {
    Builder b;
    b.p.inputs = {kF32, kI32, kI64, kBool};
    for (int j = 0; j < 4; ++j) {
      const int r = b.load(j, kTypes[j]);
      for (VT to : kTypes) b.store(b.convert(r, to), storage_dtype_of(to));
    }
    add("convert", b.p, {"c"}, flat);
  }
  // Float to integer and back in one kernel: -0.5 gives +0, as through memory, also where an op
  // reads the sign (tanh: GCC made it the input's, -0).
  {
    Builder b;
    b.p.inputs = {kF32, kF64};
    const int x = b.load(0, VT::kFloat), d = b.load(1, VT::kF64);
    const int back = b.convert(b.convert(x, VT::kI32), VT::kFloat);
    b.store(back, kF32);
    b.store(b.op(core::OpKind::kTanh, VT::kFloat, back), kF32);
    b.store(b.op(core::OpKind::kTanh, VT::kFloat, b.convert(b.convert(x, VT::kI64), VT::kFloat)),
            kF32);
    b.store(b.convert(b.convert(d, VT::kI32), VT::kF64), kF64);
    b.store(b.convert(b.convert(d, VT::kI64), VT::kF64), kF64);
    add("convert/round trip", b.p, {"c"}, flat);
  }
  // Rounding to the 16-bit grids, kept in float.
  {
    Builder b;
    b.p.inputs = {kF32};
    const int x = b.load(0, VT::kFloat);
    b.store(b.round(x, kF16), kF32);
    b.store(b.round(x, kBF16), kF32);
    b.store(b.round(b.op(core::OpKind::kExp, VT::kFloat, x), kBF16), kBF16);
    add("round", b.p, {"c"}, flat);
  }
  // Wrapping int values to 8 bits, kept in int, and 8-bit arithmetic as the fusion emits it.
  {
    Builder b;
    b.p.inputs = {kI32, kI8, kU8};
    const int x = b.load(0, VT::kI32);
    b.store(b.round(x, kI8), kI32);
    b.store(b.round(x, kU8), kI32);
    const int s = b.load(1, VT::kI32), u = b.load(2, VT::kI32);
    b.store(b.round(b.op(core::OpKind::kMul, VT::kI32, s, s), kI8), kI8);
    b.store(b.round(b.op(core::OpKind::kAdd, VT::kI32, u, x), kU8), kU8);
    add("round/8-bit", b.p, {"c"}, flat);
  }
  add("gelu/f32", gelu(kF32), {"c"}, flat, {1.41421356f, 1.0f, 2.0f});
  add("gelu/f16", gelu(kF16), {"c"}, flat, {1.41421356f, 1.0f, 2.0f});
  add("gelu/bf16", gelu(kBF16), {"c"}, flat, {1.41421356f, 1.0f, 2.0f});
  // Scalar arguments of every type in both modes.
  {
    Builder b;
    b.p.inputs = {kF32, kI32, kI64, kBool};
    const int x = b.load(0, VT::kFloat), i = b.load(1, VT::kI32), l = b.load(2, VT::kI64);
    const int c = b.load(3, VT::kBool);
    const int sf = b.scalar({ScalarArg::Mode::kOperand, VT::kFloat});
    const int sh = b.scalar({ScalarArg::Mode::kFill, VT::kFloat, kF16});
    const int sn = b.scalar({ScalarArg::Mode::kOperand, VT::kFloat});
    const int si = b.scalar({ScalarArg::Mode::kOperand, VT::kI32});
    const int sl = b.scalar({ScalarArg::Mode::kFill, VT::kI64, kI64});
    const int sb = b.scalar({ScalarArg::Mode::kFill, VT::kBool, kBool});
    const int si2 = b.scalar({ScalarArg::Mode::kFill, VT::kI32, kI32});
    b.store(b.op(core::OpKind::kMul, VT::kFloat, b.op(core::OpKind::kAdd, VT::kFloat, x, sf), sh),
            kF32);
    b.store(b.op(core::OpKind::kMaximum, VT::kFloat, x, sn), kF32);
    b.store(b.op(core::OpKind::kAdd, VT::kI32, b.op(core::OpKind::kMul, VT::kI32, i, si), si2),
            kI32);
    b.store(b.op(core::OpKind::kSub, VT::kI64, l, sl), kI64);
    b.store(b.op(core::OpKind::kWhere, VT::kFloat,
                 b.op(core::OpKind::kLogicalAnd, VT::kBool, c, sb), x, sn),
            kF16);
    add("scalars", b.p, {"c"}, flat, {0.1, 0.1, -3.5f, 7, 3000000000LL, true, -2.9});
  }
  // Layouts: rank 0 to 3, broadcast (z) and strided (a) operands, over a two-input program.
  Builder lb;
  lb.p.inputs = {kF32, kF16};
  lb.store(
      lb.op(core::OpKind::kAdd, VT::kFloat,
            lb.op(core::OpKind::kMul, VT::kFloat, lb.load(0, VT::kFloat), lb.load(1, VT::kFloat)),
            lb.scalar({ScalarArg::Mode::kOperand, VT::kFloat})),
      kF32);
  const FusedProgram two = lb.p;
  add("layout/rank0", two, {"", "", ""}, {}, {0.25f});
  add("layout/rank1/cc", two, {"c", "c", "c"}, {1001}, {0.25f});
  add("layout/rank1/zc", two, {"z", "c", "c"}, {77}, {0.25f});
  add("layout/rank1/aa", two, {"a", "c", "a"}, {77}, {0.25f});
  add("layout/rank2/zc.cz", two, {"zc", "cz", "cc"}, {9, 13}, {0.25f});
  add("layout/rank2/ac.ca", two, {"ac", "ca", "cc"}, {9, 13}, {0.25f});
  add("layout/rank2/out-aa", two, {"cc", "zz", "aa"}, {5, 17}, {0.25f});
  add("layout/rank3/czc.aca", two, {"czc", "aca", "ccc"}, {3, 5, 7}, {0.25f});
  add("layout/rank3/zzz", two, {"zzz", "ccz", "ccc"}, {4, 3, 19}, {0.25f});
  add("layout/rank3/gelu", gelu(kF32), {"cac", "ccc"}, {2, 3, 45}, {1.41421356f, 1.0f, 2.0f});
  // Outputs written over an input's buffer: same type (shared pointer) and another type of the
  // same size (no restrict).
  add("alias/same", gelu(kF32), {"cc", "cc"}, {6, 41}, {1.41421356f, 1.0f, 2.0f}, 0);
  {
    Builder b;
    b.p.inputs = {kI32, kF32};
    b.store(b.op(core::OpKind::kMul, VT::kFloat, b.convert(b.load(0, VT::kI32), VT::kFloat),
                 b.load(1, VT::kFloat)),
            kF32);
    add("alias/i32-to-f32", b.p, {"ac", "cc", "ac"}, {5, 31}, {}, 0);
  }
  return cases;
}

}  // namespace streamfuse::jit::testing

// A reference for generated kernels: each program evaluated element by element with the sf_*
// functions the kernels call, operand buffers laid out as a case's key says (contiguous,
// broadcast, strided with gaps), filled with special and random values, and a bitwise
// comparison (any NaN matches any NaN). Shared by the CPU codegen test and the CUDA kernel test;
// the including file includes core/scalar_ops.h and core/vector_math.h first, built
// with the ISA flags whose FMA use the kernels under test match.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/jit/codegen_cases.h"

namespace streamfuse::jit::testing {

// ---- reference evaluation --------------------------------------------------------------------

union Value {
  float f;
  int i;
  long long l;
  unsigned char b;
  double d;
};

inline Value convert(Value v, VT from, VT to) {
  Value r{};
  if (from == to) return v;
  if (from == VT::kF64) {  // as convert.h: through the double's own value
    switch (to) {
      case VT::kFloat:
        r.f = static_cast<float>(v.d);
        break;
      case VT::kI32:
        r.i = sf_double_to_i32(v.d);
        break;
      case VT::kI64:
        r.l = sf_double_to_i64(v.d);
        break;
      case VT::kBool:
        r.b = v.d != 0.0;
        break;
      case VT::kF64:
        break;
    }
    return r;
  }
  if (to == VT::kF64) {
    r.d = from == VT::kFloat ? v.f
          : from == VT::kI32 ? v.i
          : from == VT::kI64 ? static_cast<double>(v.l)
                             : v.b;
    return r;
  }
  switch (to) {
    case VT::kBool:
      r.b = from == VT::kFloat ? v.f != 0.0f : from == VT::kI32 ? v.i != 0 : v.l != 0;
      break;
    case VT::kFloat:
      r.f = from == VT::kI32   ? static_cast<float>(v.i)
            : from == VT::kI64 ? static_cast<float>(v.l)
                               : static_cast<float>(v.b);
      break;
    case VT::kI32:
      r.i = from == VT::kFloat ? sf_float_to_i32(v.f)
            : from == VT::kI64 ? static_cast<int>(v.l)
                               : v.b;
      break;
    case VT::kI64:
      r.l = from == VT::kFloat ? sf_float_to_i64(v.f) : from == VT::kI32 ? v.i : v.b;
      break;
    case VT::kF64:  // handled above
      break;
  }
  return r;
}

inline std::size_t elem_size(DType d) { return element_size(d); }

inline Value load(const unsigned char* p, DType d, VT to) {
  Value v{};
  VT from = value_type_of(d);
  unsigned short h;
  switch (d) {
    case kF32:
      std::memcpy(&v.f, p, 4);
      break;
    case kF16:
      std::memcpy(&h, p, 2), v.f = sf_half_to_float(h);
      break;
    case kBF16:
      std::memcpy(&h, p, 2), v.f = sf_bf16_to_float(h);
      break;
    case kI32:
      std::memcpy(&v.i, p, 4);
      break;
    case kI64:
      std::memcpy(&v.l, p, 8);
      break;
    case kBool:
      v.b = *p;
      break;
    case kI8:
      v.i = static_cast<signed char>(*p);
      break;
    case kU8:
      v.i = *p;
      break;
    case kF64:
      std::memcpy(&v.d, p, 8);
      break;
  }
  return convert(v, from, to);
}

inline void store(unsigned char* p, DType d, Value v, VT from) {
  v = convert(v, from, value_type_of(d));
  unsigned short h;
  switch (d) {
    case kF32:
      std::memcpy(p, &v.f, 4);
      break;
    case kF16:
      h = sf_float_to_half(v.f), std::memcpy(p, &h, 2);
      break;
    case kBF16:
      h = sf_float_to_bf16(v.f), std::memcpy(p, &h, 2);
      break;
    case kI32:
      std::memcpy(p, &v.i, 4);
      break;
    case kI64:
      std::memcpy(p, &v.l, 8);
      break;
    case kBool:
      *p = v.b;
      break;
    case kI8:  // the low byte (two's complement)
      *p = static_cast<unsigned char>(sf_wrap_i8(v.i));
      break;
    case kU8:
      *p = static_cast<unsigned char>(sf_wrap_u8(v.i));
      break;
    case kF64:
      std::memcpy(p, &v.d, 8);
      break;
  }
}

template <class I>
I int_op(core::OpKind k, I a, I b) {
  switch (k) {
    case core::OpKind::kNeg:
      return sf_neg(a);
    case core::OpKind::kAbs:
      return sf_abs(a);
    case core::OpKind::kRelu:
      return sf_relu(a);
    case core::OpKind::kAdd:
      return sf_add(a, b);
    case core::OpKind::kSub:
      return sf_sub(a, b);
    case core::OpKind::kMul:
      return sf_mul(a, b);
    case core::OpKind::kPow:
      return sf_ipow(a, b);
    case core::OpKind::kMaximum:
      return sf_max(a, b);
    case core::OpKind::kMinimum:
      return sf_min(a, b);
    default:
      ADD_FAILURE() << "no integer form";
      return 0;
  }
}

inline float float_op(core::OpKind k, float a, float b) {
  switch (k) {
    case core::OpKind::kNeg:
      return -a;
    case core::OpKind::kAbs:
      return sf_abs(a);
    case core::OpKind::kExp:
      return sf_exp(a);
    case core::OpKind::kLog:
      return sf_log(a);
    case core::OpKind::kSqrt:
      return sf_sqrt(a);
    case core::OpKind::kRsqrt:
      return sf_rsqrt(a);
    case core::OpKind::kRecip:
      return sf_recip(a);
    case core::OpKind::kSin:
      return sf_sin(a);
    case core::OpKind::kCos:
      return sf_cos(a);
    case core::OpKind::kTanh:
      return sf_tanh(a);
    case core::OpKind::kErf:
      return sf_erf(a);
    case core::OpKind::kSigmoid:
      return sf_sigmoid(a);
    case core::OpKind::kRelu:
      return sf_relu(a);
    case core::OpKind::kAdd:
      return a + b;
    case core::OpKind::kSub:
      return a - b;
    case core::OpKind::kMul:
      return a * b;
    case core::OpKind::kDiv:
      return a / b;
    case core::OpKind::kPow:
      return sf_pow(a, b);
    case core::OpKind::kMaximum:
      return sf_max(a, b);
    case core::OpKind::kMinimum:
      return sf_min(a, b);
    default:
      ADD_FAILURE() << "no float form";
      return 0;
  }
}

template <class T>
unsigned char compare(core::OpKind k, T a, T b) {
  switch (k) {
    case core::OpKind::kEq:
      return a == b;
    case core::OpKind::kNe:
      return a != b;
    case core::OpKind::kLt:
      return a < b;
    case core::OpKind::kLe:
      return a <= b;
    case core::OpKind::kGt:
      return a > b;
    default:
      return a >= b;
  }
}

inline Value eval_op(core::OpKind k, VT t, Value a, Value b, Value c) {
  Value r{};
  const core::OpCategory cat = core::op_category(k);
  if (k == core::OpKind::kWhere) return a.b ? b : c;
  if (cat == core::OpCategory::kLogical) {
    r.b = k == core::OpKind::kLogicalAnd  ? a.b & b.b
          : k == core::OpKind::kLogicalOr ? a.b | b.b
                                          : a.b ^ 1;
    return r;
  }
  if (cat == core::OpCategory::kCompare) {
    r.b = t == VT::kFloat ? compare(k, a.f, b.f)
          : t == VT::kI32 ? compare(k, a.i, b.i)
          : t == VT::kI64 ? compare(k, a.l, b.l)
                          : compare(k, a.b, b.b);
    return r;
  }
  switch (t) {
    case VT::kFloat:
      r.f = float_op(k, a.f, b.f);
      break;
    case VT::kI32:
      r.i = int_op(k, a.i, b.i);
      break;
    case VT::kI64:
      r.l = int_op(k, a.l, b.l);
      break;
    case VT::kBool:
      r.b = k == core::OpKind::kMaximum ? sf_max(a.b, b.b) : sf_min(a.b, b.b);
      break;
    case VT::kF64:  // no case computes in f64 (the differential suite does)
      ADD_FAILURE() << "no f64 reference";
      break;
  }
  return r;
}

inline Value scalar_value(std::int64_t bits, VT t) {
  Value v{};
  switch (t) {
    case VT::kFloat: {
      const auto u = static_cast<std::uint32_t>(bits);
      std::memcpy(&v.f, &u, 4);
      break;
    }
    case VT::kI32:
      v.i = static_cast<int>(bits);
      break;
    case VT::kI64:
      v.l = bits;
      break;
    case VT::kBool:
      v.b = static_cast<unsigned char>(bits);
      break;
    case VT::kF64:
      std::memcpy(&v.d, &bits, 8);
      break;
  }
  return v;
}

// ---- buffers and launches --------------------------------------------------------------------

struct Operand {
  DType dtype;
  std::vector<long long> strides;  // elements, per merged dimension
  std::vector<unsigned char> bytes;
};

inline std::vector<long long> strides_for(const OperandKey& k,
                                          const std::vector<long long>& sizes) {
  std::vector<long long> s(sizes.size());
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    long long inner = 1;
    for (std::size_t e = d + 1; e < sizes.size(); ++e) inner *= sizes[e];
    s[d] = k.strides[d] == StrideClass::kContiguous ? inner
           : k.strides[d] == StrideClass::kZero     ? 0
                                                    : 2 * inner + 1;
  }
  return s;
}

inline std::size_t span(const std::vector<long long>& strides,
                        const std::vector<long long>& sizes) {
  std::size_t n = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d)
    n += static_cast<std::size_t>((sizes[d] - 1) * strides[d]);
  return n;
}

// The first elements walk through the special values (operand `phase` in another order, so
// binary ops meet many pairs); the rest are random, a quarter of them special.
inline void fill(Operand& op, int phase, std::mt19937& rng) {
  static const float specials[] = {0.0f,
                                   -0.0f,
                                   1.0f,
                                   -1.0f,
                                   0.5f,
                                   2.0f,
                                   3.0f,
                                   -2.5f,
                                   std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::quiet_NaN(),
                                   1e-40f,
                                   1e30f,
                                   -1e30f,
                                   88.7f,
                                   -104.0f,
                                   65504.0f,
                                   7e4f,
                                   3e9f,
                                   -1e19f};
  static const long long int_specials[] = {0,
                                           1,
                                           -1,
                                           2,
                                           -2,
                                           31,
                                           63,
                                           std::numeric_limits<int>::max(),
                                           std::numeric_limits<int>::min(),
                                           std::numeric_limits<long long>::max(),
                                           std::numeric_limits<long long>::min(),
                                           1000000007};
  std::uniform_real_distribution<float> real(-6.0f, 6.0f);
  std::uniform_int_distribution<int> small(-12, 12), pick(0, 3);
  const std::size_t n = op.bytes.size() / elem_size(op.dtype);
  for (std::size_t e = 0; e < n; ++e) {
    Value v{};
    VT from = VT::kFloat;
    const bool special = e < 60 || pick(rng) == 0;
    const std::size_t which =
        e < 60 ? e * (2 * static_cast<std::size_t>(phase) + 1) + phase : rng();
    if (!is_floating(op.dtype)) {  // integers and bool
      from = VT::kI64;
      v.l = special ? int_specials[which % std::size(int_specials)] : small(rng);
      if (op.dtype == kBool) v.l = op.dtype == kBool && e < 60 ? (e >> phase) & 1 : v.l & 1;
    } else {
      v.f = special ? specials[which % std::size(specials)] : real(rng);
    }
    store(op.bytes.data() + e * elem_size(op.dtype), op.dtype, v, from);
  }
}

// The reference: every element evaluated on its own, in program order.
inline void evaluate(const Case& c, const std::vector<long long>& scalars,
                     const std::vector<Operand*>& ops) {
  const FusedProgram& p = c.program;
  const std::vector<VT> types = p.register_types();
  long long numel = 1;
  for (long long s : c.sizes) numel *= s;
  std::vector<Value> regs(static_cast<std::size_t>(p.num_registers));
  for (long long flat = 0; flat < numel; ++flat) {
    std::vector<long long> offset(ops.size(), 0);
    long long rest = flat;
    for (int d = static_cast<int>(c.sizes.size()) - 1; d >= 0; --d) {
      const long long idx = rest % c.sizes[static_cast<std::size_t>(d)];
      rest /= c.sizes[static_cast<std::size_t>(d)];
      for (std::size_t k = 0; k < ops.size(); ++k)
        offset[k] += idx * ops[k]->strides[static_cast<std::size_t>(d)];
    }
    const auto at = [&](std::size_t k) {
      return ops[k]->bytes.data() + offset[k] * static_cast<long long>(elem_size(ops[k]->dtype));
    };
    for (const Instruction& in : p.prologue) {
      const auto arg = [&](int j) {
        return in.args[j] >= 0 ? regs[static_cast<std::size_t>(in.args[j])] : Value{};
      };
      Value& out = regs[static_cast<std::size_t>(in.out)];
      switch (in.kind) {
        case InstrKind::kLoad:
          out = load(at(static_cast<std::size_t>(in.index)),
                     p.inputs[static_cast<std::size_t>(in.index)], in.type);
          break;
        case InstrKind::kScalar: {
          const VT t = p.scalars[static_cast<std::size_t>(in.index)].type;
          out = convert(scalar_value(scalars[static_cast<std::size_t>(in.index)], t), t, in.type);
          break;
        }
        case InstrKind::kOp:
          out = eval_op(in.op, in.type, arg(0), arg(1), arg(2));
          break;
        case InstrKind::kConvert:
          out = convert(arg(0), types[static_cast<std::size_t>(in.args[0])], in.type);
          break;
        case InstrKind::kRound:
          if (in.round == kI8 || in.round == kU8)
            out.i = in.round == kI8 ? sf_wrap_i8(arg(0).i) : sf_wrap_u8(arg(0).i);
          else
            out.f = in.round == kF16 ? sf_round_f16(arg(0).f) : sf_round_bf16(arg(0).f);
          break;
        case InstrKind::kLoadAt: {  // the case's strides make every index's address valid
          const auto k = static_cast<std::size_t>(in.index);
          const long long idx =
              types[static_cast<std::size_t>(in.args[0])] == VT::kI32 ? arg(0).i : arg(0).l;
          out = load(at(k) + idx * arg(1).l * static_cast<long long>(elem_size(ops[k]->dtype)),
                     p.inputs[k], in.type);
          break;
        }
        case InstrKind::kReduced:  // element-wise programs only
          break;
      }
    }
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
      const ProgramOutput& po = p.outputs[o];
      store(at(p.inputs.size() + o), po.dtype, regs[static_cast<std::size_t>(po.reg)],
            types[static_cast<std::size_t>(po.reg)]);
    }
  }
}

inline bool is_nan(const unsigned char* p, DType d) {
  if (d == kF64) return load(p, d, VT::kF64).d != load(p, d, VT::kF64).d;
  if (d == kF32 || d == kF16 || d == kBF16)
    return load(p, d, VT::kFloat).f != load(p, d, VT::kFloat).f;
  return false;
}

// A case's operands (inputs filled, outputs 0xA5), its scalar argument bits, and the expected
// operands (the reference's outputs; an in-place output starts from its input's bytes).
struct PreparedCase {
  std::vector<Operand> operands;
  std::vector<long long> scalars;
  std::vector<Operand> expected;
};

inline PreparedCase prepare_case(const Case& c) {
  PreparedCase out;
  std::mt19937 rng(1234);
  const std::size_t ni = c.program.inputs.size();
  for (std::size_t k = 0; k < ni + c.program.outputs.size(); ++k) {
    const OperandKey& ok = k < ni ? c.key.inputs[k] : c.key.outputs[k - ni];
    Operand op{ok.dtype, strides_for(ok, c.sizes), {}};
    op.bytes.assign(span(op.strides, c.sizes) * elem_size(op.dtype), 0xA5);
    if (k < ni) fill(op, static_cast<int>(k), rng);
    out.operands.push_back(std::move(op));
  }
  for (std::size_t s = 0; s < c.program.scalars.size(); ++s)
    out.scalars.push_back(scalar_bits(c.program.scalars[s], c.scalar_values[s]));
  // Reference on separate buffers; a kernel writes aliased outputs over its input's copy.
  out.expected = out.operands;
  for (std::size_t k = ni; k < out.operands.size(); ++k)
    if (const int alias = c.key.outputs[k - ni].alias; alias >= 0)
      out.expected[k].bytes = out.operands[static_cast<std::size_t>(alias)].bytes;  // gaps kept
  std::vector<Operand*> ref_ptrs;
  for (Operand& op : out.expected) ref_ptrs.push_back(&op);
  evaluate(c, out.scalars, ref_ptrs);
  return out;
}

// The operand whose buffer operand `k` is written through: its aliased input's for an in-place
// output, else its own.
inline std::size_t written_buffer(const Case& c, std::size_t k) {
  const std::size_t ni = c.program.inputs.size();
  const int alias = k >= ni ? c.key.outputs[k - ni].alias : -1;
  return alias >= 0 ? static_cast<std::size_t>(alias) : k;
}

// Every output element of `actual` (as a kernel left the buffers) equals `expected`'s, bit for
// bit, any NaN matching any NaN; the first difference is reported.
inline void expect_outputs(const Case& c, const std::vector<Operand>& actual,
                           const std::vector<Operand>& expected) {
  const std::size_t ni = c.program.inputs.size();
  for (std::size_t k = ni; k < actual.size(); ++k) {
    const Operand& got = actual[written_buffer(c, k)];
    const Operand& want = expected[k];
    const std::size_t es = elem_size(want.dtype);
    for (std::size_t e = 0; e < want.bytes.size() / es; ++e) {
      const unsigned char* a = got.bytes.data() + e * es;
      const unsigned char* b = want.bytes.data() + e * es;
      if (std::memcmp(a, b, es) == 0 || (is_nan(a, want.dtype) && is_nan(b, want.dtype))) continue;
      ADD_FAILURE() << c.name << ": output " << k - ni << " (" << dtype_name(want.dtype)
                    << ") element " << e << ": got " << load(a, want.dtype, VT::kFloat).f
                    << " want " << load(b, want.dtype, VT::kFloat).f
                    << " (as i64: " << load(a, want.dtype, VT::kI64).l << " vs "
                    << load(b, want.dtype, VT::kI64).l << ")";
      return;
    }
  }
}

}  // namespace streamfuse::jit::testing

// The per-instruction expressions here mirror backends/cpu/kernels/elementwise_ops.h (ops) and
// convert.h (conversions) one for one: change one, change the other.
#include "jit/cpp_codegen.h"

#include "jit/program_optimizer.h"

#include <string>

#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace detail {
// The prelude text, generated from the headers at build time (jit/CMakeLists.txt).
extern const char* const kCpuKernelPrelude;
}  // namespace detail

namespace {

using stream::OpCategory;
using stream::OpKind;

[[noreturn]] void fail(std::string_view function_name, const std::string& why) {
  throw CompileError("jit: cannot generate kernel " + std::string(function_name) + ": " + why);
}

const char* c_type(ValueType t) {
  switch (t) {
    case ValueType::kI32:
      return "int";
    case ValueType::kI64:
      return "long long";
    case ValueType::kBool:
      return "unsigned char";
    default:
      return "float";
  }
}

const char* storage_c_type(DType d) {
  switch (d) {
    case kF16:
    case kBF16:
      return "unsigned short";
    default:
      return c_type(value_type_of(d));
  }
}

std::string reg(std::int32_t r) { return "r" + std::to_string(r); }

// `expr` of value type `from` as value type `to` (convert.h's convert<To, From>).
std::string convert_value(const std::string& expr, ValueType from, ValueType to) {
  if (from == to) return expr;
  if (to == ValueType::kBool) return "(unsigned char)(" + expr + " != 0)";  // NaN is true
  if (from == ValueType::kFloat && to == ValueType::kI32) return "sf_float_to_i32(" + expr + ")";
  if (from == ValueType::kFloat && to == ValueType::kI64) return "sf_float_to_i64(" + expr + ")";
  return "(" + std::string(c_type(to)) + ")(" + expr + ")";  // int/bool to float, int wraps
}

// An element of storage dtype `d` (expression `access`) as value type `to`.
std::string load_value(const std::string& access, DType d, ValueType to) {
  if (d == kF16) return convert_value("sf_half_to_float(" + access + ")", ValueType::kFloat, to);
  if (d == kBF16) return convert_value("sf_bf16_to_float(" + access + ")", ValueType::kFloat, to);
  return convert_value(access, value_type_of(d), to);
}

// Register value `expr` of type `from` as storage of dtype `d`.
std::string store_value(const std::string& expr, ValueType from, DType d) {
  const std::string v = convert_value(expr, from, value_type_of(d));
  if (d == kF16) return "sf_float_to_half(" + v + ")";
  if (d == kBF16) return "sf_float_to_bf16(" + v + ")";
  return v;
}

std::string scalar_value(std::int32_t index, ValueType t) {
  const std::string s = "scalars[" + std::to_string(index) + "]";
  switch (t) {
    case ValueType::kFloat:
      return "__builtin_bit_cast(float, (unsigned int)" + s + ")";
    case ValueType::kI32:
      return "(int)" + s;
    case ValueType::kI64:
      return s;
    case ValueType::kBool:
      return "(unsigned char)" + s;
  }
  return s;
}

// The expression of op `k` computed in `t` over registers a, b, c; empty when `t` has no form.
std::string op_expr(OpKind k, ValueType t, const std::string& a, const std::string& b,
                    const std::string& c) {
  const bool is_float = t == ValueType::kFloat;
  const bool is_int = t == ValueType::kI32 || t == ValueType::kI64;
  const auto call = [](const char* f, const std::string& x) {
    return std::string(f) + "(" + x + ")";
  };
  const auto call2 = [&](const char* f) { return std::string(f) + "(" + a + ", " + b + ")"; };
  const auto compare = [&](const char* op) {
    return "(unsigned char)(" + a + " " + op + " " + b + ")";
  };
  switch (k) {
    case OpKind::kNeg:
      return is_float ? "-" + a : is_int ? call("sf_neg", a) : "";
    case OpKind::kAbs:
      return is_float || is_int ? call("sf_abs", a) : "";
    case OpKind::kRelu:
      return is_float || is_int ? call("sf_relu", a) : "";
    case OpKind::kExp:
      return is_float ? call("sf_exp", a) : "";
    case OpKind::kLog:
      return is_float ? call("sf_log", a) : "";
    case OpKind::kSqrt:
      return is_float ? call("sf_sqrt", a) : "";
    case OpKind::kRsqrt:
      return is_float ? call("sf_rsqrt", a) : "";
    case OpKind::kRecip:
      return is_float ? call("sf_recip", a) : "";
    case OpKind::kSin:
      return is_float ? call("sf_sin", a) : "";
    case OpKind::kCos:
      return is_float ? call("sf_cos", a) : "";
    case OpKind::kTanh:
      return is_float ? call("sf_tanh", a) : "";
    case OpKind::kErf:
      return is_float ? call("sf_erf", a) : "";
    case OpKind::kSigmoid:
      return is_float ? call("sf_sigmoid", a) : "";
    case OpKind::kAdd:
      return is_float ? a + " + " + b : is_int ? call2("sf_add") : "";
    case OpKind::kSub:
      return is_float ? a + " - " + b : is_int ? call2("sf_sub") : "";
    case OpKind::kMul:
      return is_float ? a + " * " + b : is_int ? call2("sf_mul") : "";
    case OpKind::kDiv:
      return is_float ? a + " / " + b : "";
    case OpKind::kPow:
      return is_float ? call2("sf_pow") : is_int ? call2("sf_ipow") : "";
    case OpKind::kMaximum:
      return call2("sf_max");  // float, int, long long, unsigned char
    case OpKind::kMinimum:
      return call2("sf_min");
    case OpKind::kEq:
      return compare("==");
    case OpKind::kNe:
      return compare("!=");
    case OpKind::kLt:
      return compare("<");
    case OpKind::kLe:
      return compare("<=");
    case OpKind::kGt:
      return compare(">");
    case OpKind::kGe:
      return compare(">=");
    // Logical operands are bool registers (0 or 1).
    case OpKind::kLogicalAnd:
      return "(unsigned char)(" + a + " & " + b + ")";
    case OpKind::kLogicalOr:
      return "(unsigned char)(" + a + " | " + b + ")";
    case OpKind::kLogicalNot:
      return "(unsigned char)(" + a + " ^ 1)";
    case OpKind::kWhere:
      return a + " ? " + b + " : " + c;
    default:
      return "";
  }
}

// How the kernel addresses one operand.
struct Access {
  const char* c_type;
  bool is_output;
  bool restrict_ok;
  std::string pointer;  // name of the run's base pointer
  std::string element;  // p[i], p[0] or p[i * s]
};

// Operands of one kernel: inputs then outputs, with the pointers an in-place output shares.
std::vector<Access> plan_accesses(const FusedProgram& p, const SpecializationKey& key,
                                  std::string_view name) {
  const int rank = key.rank;
  const std::size_t ni = key.inputs.size();
  std::vector<Access> acc;
  for (std::size_t k = 0; k < ni + key.outputs.size(); ++k) {
    const bool out = k >= ni;
    const OperandKey& ok = out ? key.outputs[k - ni] : key.inputs[k];
    const DType program_dtype = out ? p.outputs[k - ni].dtype : p.inputs[k];
    if (ok.dtype != program_dtype)
      fail(name, "operand " + std::to_string(k) + " is " + std::string(dtype_name(ok.dtype)) +
                     " in the key but " + std::string(dtype_name(program_dtype)) +
                     " in the program");
    Access a{storage_c_type(ok.dtype), out, true, "p" + std::to_string(k), {}};
    const StrideClass inner =
        rank ? ok.strides[static_cast<std::size_t>(rank - 1)] : StrideClass::kZero;
    a.element = inner == StrideClass::kContiguous ? a.pointer + "[i]"
                : inner == StrideClass::kZero     ? a.pointer + "[0]"
                                                  : a.pointer + "[i * s" + std::to_string(k) + "]";
    acc.push_back(std::move(a));
  }
  // An output written over an input's buffer: with the same element type and layout it writes
  // through the input's pointer (restrict still holds: one pointer, same index); otherwise
  // neither pointer is restrict.
  for (std::size_t o = 0; o < key.outputs.size(); ++o) {
    const int in = key.outputs[o].alias;
    if (in < 0) continue;
    if (static_cast<std::size_t>(in) >= ni) fail(name, "output alias names no input");
    Access& a = acc[ni + o];
    Access& b = acc[static_cast<std::size_t>(in)];
    bool same_layout = std::string_view(a.c_type) == b.c_type;
    for (std::size_t d = 0; d < static_cast<std::size_t>(key.rank); ++d)
      same_layout = same_layout && key.outputs[o].strides[d] ==
                                       key.inputs[static_cast<std::size_t>(in)].strides[d];
    if (same_layout && b.restrict_ok) {
      b.is_output = true;  // written through: not const
      a.pointer = b.pointer;
      a.element = b.element;
    } else {
      a.restrict_ok = b.restrict_ok = false;
    }
  }
  return acc;
}

void check_program(const FusedProgram& p, const SpecializationKey& key, std::string_view name) {
  if (key.rank < 0 || key.rank > kMaxRank) fail(name, "rank " + std::to_string(key.rank));
  if (key.inputs.size() != p.inputs.size() || key.outputs.size() != p.outputs.size())
    fail(name, "the key has " + std::to_string(key.inputs.size()) + " inputs and " +
                   std::to_string(key.outputs.size()) + " outputs, the program " +
                   std::to_string(p.inputs.size()) + " and " + std::to_string(p.outputs.size()));
  for (const Instruction& in : p.body) {
    if (in.out < 0 || in.out >= p.num_registers) fail(name, "register out of range");
    for (std::int32_t a : in.args)
      if (a >= p.num_registers) fail(name, "register out of range");
    if (in.kind == InstrKind::kLoad &&
        (in.index < 0 || in.index >= static_cast<int>(p.inputs.size())))
      fail(name, "load of input " + std::to_string(in.index));
    if (in.kind == InstrKind::kScalar &&
        (in.index < 0 || in.index >= static_cast<int>(p.scalars.size())))
      fail(name, "scalar argument " + std::to_string(in.index));
  }
  for (const ProgramOutput& o : p.outputs)
    if (o.reg < 0 || o.reg >= p.num_registers) fail(name, "output register out of range");
}

// `const T rN = expr;` for one instruction (not kScalar), reading operands through `acc`.
std::string instruction_line(const FusedProgram& p, const Instruction& in,
                             const std::vector<ValueType>& types, const std::vector<Access>& acc,
                             std::string_view name) {
  const auto arg = [&](int j) { return in.args[j] >= 0 ? reg(in.args[j]) : std::string(); };
  const auto arg_type = [&](int j) { return types[static_cast<std::size_t>(in.args[j])]; };
  std::string expr;
  switch (in.kind) {
    case InstrKind::kLoad: {
      const auto j = static_cast<std::size_t>(in.index);
      expr = load_value(acc[j].element, p.inputs[j], in.type);
      break;
    }
    case InstrKind::kConvert:
      expr = convert_value(arg(0), arg_type(0), in.type);
      break;
    case InstrKind::kRound:
      if (in.round != kF16 && in.round != kBF16) fail(name, "round to a non-16-bit dtype");
      expr = (in.round == kF16 ? "sf_round_f16(" : "sf_round_bf16(") + arg(0) + ")";
      break;
    case InstrKind::kOp: {
      const int arity = stream::op_info(in.op).arity;
      for (int j = 0; j < arity; ++j)
        if (in.args[j] < 0)
          fail(name, "op " + std::string(stream::op_name(in.op)) + " lacks operands");
      expr = op_expr(in.op, in.type, arg(0), arg(1), arg(2));
      if (expr.empty())
        fail(name, "op " + std::string(stream::op_name(in.op)) + " has no " +
                       value_type_name(in.type) + " form");
      break;
    }
    case InstrKind::kScalar:
      break;
  }
  return std::string("const ") + c_type(types[static_cast<std::size_t>(in.out)]) + " " +
         reg(in.out) + " = " + expr + ";";
}

}  // namespace

const std::string& cpu_kernel_prelude() {
  // Never destroyed: the kernel cache's compiler thread may still read it while the process
  // exits (the device runtime that owns that thread lives until the end, by design).
  static const std::string* text = new std::string(detail::kCpuKernelPrelude);
  return *text;
}

namespace {

std::string emit_kernel(const FusedProgram& p, const SpecializationKey& key,
                        std::string_view name) {
  check_program(p, key, name);
  const int rank = key.rank;
  const std::vector<ValueType> types = p.register_types();
  const std::vector<Access> acc = plan_accesses(p, key, name);
  const std::size_t ni = key.inputs.size();
  const auto classes = [&](std::size_t k) -> const OperandKey& {
    return k < ni ? key.inputs[k] : key.outputs[k - ni];
  };
  const auto n = [](int d) { return "n" + std::to_string(d); };
  const auto i_ = [](int d) { return "i" + std::to_string(d); };
  const std::string fn(name);

  // The entry point: scalars, sizes and strides, then one call of the run function per run
  // along the innermost dimension. Each operand's offset at a run's start is the sum over
  // dimensions of index * stride, a contiguous dimension's stride being the product of the
  // inner sizes.
  std::string entry = "extern \"C\" void " + fn +
                      "(char* const* data, const long long* sizes, const long long* strides,\n"
                      "    const long long* scalars, long long begin, long long end) {\n"
                      "  (void)data; (void)sizes; (void)strides; (void)scalars;\n"
                      "  if (begin >= end) return;\n";
  // The run function: the inner loop, over pointers that are restrict parameters (GCC honours
  // restrict on parameters, also once inlined, but not on local pointers).
  std::vector<std::string> params = {"long long len"}, args = {"len"};
  for (const Instruction& in : p.body) {
    if (in.kind != InstrKind::kScalar) continue;
    const ValueType from = p.scalars[static_cast<std::size_t>(in.index)].type;
    entry += std::string("  const ") + c_type(in.type) + " " + reg(in.out) + " = " +
             convert_value(scalar_value(in.index, from), from, in.type) + ";\n";
    params.push_back(std::string("const ") + c_type(in.type) + " " + reg(in.out));
    args.push_back(reg(in.out));
  }
  for (int d = 0; d < rank; ++d)
    entry += "  const long long " + n(d) + " = sizes[" + std::to_string(d) + "];\n";
  std::vector<std::string> offset(acc.size(), "0");
  for (std::size_t k = 0; k < acc.size(); ++k) {
    std::string terms;
    for (int d = 0; d < rank; ++d) {
      const StrideClass c = classes(k).strides[static_cast<std::size_t>(d)];
      if (c == StrideClass::kZero) continue;
      std::string stride;
      if (c == StrideClass::kArgument) {
        const bool inner = d == rank - 1;
        stride = "s" + std::to_string(k) + (inner ? "" : "_" + std::to_string(d));
        entry +=
            "  const long long " + stride + " = strides[" + std::to_string(k * rank + d) + "];\n";
        if (inner) params.push_back("const long long " + stride), args.push_back(stride);
      } else {
        for (int e = d + 1; e < rank; ++e) stride += (stride.empty() ? "" : " * ") + n(e);
      }
      terms += (terms.empty() ? "" : " + ") + i_(d) + (stride.empty() ? "" : " * " + stride);
    }
    if (!terms.empty()) offset[k] = terms;
    const Access& a = acc[k];
    if (a.pointer != "p" + std::to_string(k)) continue;  // writes through an input's pointer
    const std::string t = std::string(a.is_output ? "" : "const ") + a.c_type;
    params.push_back(t + "* " + (a.restrict_ok ? "__restrict__ " : "") + a.pointer);
    args.push_back("(" + t + "*)data[" + std::to_string(k) + "] + (" + offset[k] + ")");
  }

  std::string s = "// " + fn + ": " + key.to_string() + "\n";
  s += "static inline __attribute__((always_inline)) void " + fn + "_run(";
  for (std::size_t j = 0; j < params.size(); ++j) s += (j ? ", " : "") + params[j];
  s += ") {\n  for (long long i = 0; i < len; ++i) {\n";
  for (const Instruction& in : p.body)
    if (in.kind != InstrKind::kScalar)
      s += "    " + instruction_line(p, in, types, acc, name) + "\n";
  for (std::size_t o = 0; o < p.outputs.size(); ++o) {
    const ProgramOutput& out = p.outputs[o];
    s += "    " + acc[ni + o].element + " = " +
         store_value(reg(out.reg), types[static_cast<std::size_t>(out.reg)], out.dtype) + ";\n";
  }
  s += "  }\n}\n";

  // The multi-index of `begin`, then the runs.
  std::string len = "end - begin";
  if (rank > 0) {
    entry += "  long long rest = begin;\n";
    for (int d = rank - 1; d > 0; --d)
      entry += "  long long " + i_(d) + " = rest % " + n(d) + ";\n  rest /= " + n(d) + ";\n";
    entry += "  long long i0 = rest;\n";
    const std::string left = n(rank - 1) + " - " + i_(rank - 1);
    len = left + " < end - begin ? " + left + " : end - begin";
  }
  entry += "  while (begin < end) {\n    const long long len = " + len + ";\n    " + fn + "_run(";
  for (std::size_t j = 0; j < args.size(); ++j) entry += (j ? ", " : "") + args[j];
  entry += ");\n    begin += len;\n";
  if (rank > 0) {
    entry += "    " + i_(rank - 1) + " += len;\n";
    for (int d = rank - 1; d > 0; --d)
      entry +=
          "    if (" + i_(d) + " == " + n(d) + ") { " + i_(d) + " = 0; ++" + i_(d - 1) + "; }\n";
  }
  entry += "  }\n}\n";
  return s + entry;
}

}  // namespace

std::string cpu_kernel_source(const FusedProgram& program, const SpecializationKey& key,
                              std::string_view name) {
  if (key.scalar_classes.empty() && key.exact_reciprocals == 0)
    return emit_kernel(program, key, name);
  // Reciprocals first: their bits name the program's own argument indices.
  FusedProgram specialized = program;
  if (key.exact_reciprocals != 0) multiply_by_exact_reciprocals(specialized, key.exact_reciprocals);
  if (!key.scalar_classes.empty()) {
    if (key.scalar_classes.size() != program.scalars.size())
      fail(name, "the key's scalar classes do not fit the program");
    merge_equal_scalars(specialized, key.scalar_classes);
  }
  return emit_kernel(specialized, key, name);
}

}  // namespace streamfuse::jit

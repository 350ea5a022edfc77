#include "jit/cpp_codegen.h"

#include <string>

#include "jit/kernel_expressions.h"

namespace streamfuse::jit {
namespace detail {
// The prelude text, generated from the headers at build time (jit/CMakeLists.txt).
extern const char* const kCpuKernelPrelude;
}  // namespace detail

namespace {

// How the kernel addresses one operand.
struct Access {
  const char* c_type;
  bool is_output;
  bool restrict_ok;
  std::string pointer;  // name of the run's base pointer
  std::string index;    // the element's index in it: i, 0 or i * s

  // The element: p[i], p[0] or p[i * s], moved by `shift` elements when given.
  std::string element(const std::string& shift = {}) const {
    return pointer + "[" + index + (shift.empty() ? "" : " + " + shift) + "]";
  }
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
    Access a{storage_c_type(ok.dtype), out, true, "p" + std::to_string(k), {}};
    const StrideClass inner =
        rank ? ok.strides[static_cast<std::size_t>(rank - 1)] : StrideClass::kZero;
    a.index = inner == StrideClass::kContiguous ? "i"
              : inner == StrideClass::kZero     ? "0"
                                                : "i * s" + std::to_string(k);
    acc.push_back(std::move(a));
  }
  // An output written over an input's buffer: with the same element type and layout it writes
  // through the input's pointer (restrict still holds: one pointer, same index); otherwise
  // neither pointer is restrict.
  for (std::size_t o = 0; o < key.outputs.size(); ++o) {
    const int in = key.outputs[o].alias;
    if (in < 0) continue;
    if (static_cast<std::size_t>(in) >= ni) fail_generation(name, "output alias names no input");
    Access& a = acc[ni + o];
    Access& b = acc[static_cast<std::size_t>(in)];
    bool same_layout = std::string_view(a.c_type) == b.c_type;
    for (std::size_t d = 0; d < static_cast<std::size_t>(key.rank); ++d)
      same_layout = same_layout && key.outputs[o].strides[d] ==
                                       key.inputs[static_cast<std::size_t>(in)].strides[d];
    if (same_layout && b.restrict_ok) {
      b.is_output = true;  // written through: not const
      a.pointer = b.pointer;
      a.index = b.index;
    } else {
      a.restrict_ok = b.restrict_ok = false;
    }
  }
  return acc;
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
  for (const Instruction& in : p.prologue) {
    if (in.kind != InstrKind::kScalar) continue;
    entry += "  " + scalar_line(p, in, "scalars") + "\n";
    params.push_back(std::string("const ") + c_type(in.type) + " " + register_name(in.out));
    args.push_back(register_name(in.out));
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
  for (const Instruction& in : p.prologue)
    if (in.kind != InstrKind::kScalar)
      s += "    " +
           instruction_line(
               p, in, types, [&](std::size_t j) { return acc[j].element(); }, name,
               [&](std::size_t j, const std::string& shift) { return acc[j].element(shift); }) +
           "\n";
  for (std::size_t o = 0; o < p.outputs.size(); ++o) {
    const ProgramOutput& out = p.outputs[o];
    s += "    " + acc[ni + o].element() + " = " +
         store_value(register_name(out.reg), types[static_cast<std::size_t>(out.reg)], out.dtype) +
         ";\n";
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
  const auto emit = [&](const FusedProgram& p) {
    return p.anchor.kind == AnchorKind::kReduce ? cpu_reduce_kernel_source(p, key, name)
                                                : emit_kernel(p, key, name);
  };
  if (key.scalar_classes.empty() && key.exact_reciprocals == 0) return emit(program);
  return emit(specialize(program, key, name));
}

}  // namespace streamfuse::jit

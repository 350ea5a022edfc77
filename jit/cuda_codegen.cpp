#include "jit/cuda_codegen.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "jit/cpp_codegen.h"
#include "jit/cuda_kernel_abi.h"
#include "jit/kernel_expressions.h"

namespace streamfuse::jit {
namespace {

// An operand's layout over the whole key, which decides how the generator addresses it.
enum class Layout : std::uint8_t {
  kScalar,      // zero stride in every dimension (or rank 0): element 0
  kContiguous,  // contiguous in every dimension: element i
  kIndexed,     // anything else: sum over dimensions of index * stride
};

struct Operand {
  DType dtype;
  bool is_output;
  Layout layout;
  const OperandKey* key;
};

std::vector<Operand> operands_of(const SpecializationKey& key) {
  std::vector<Operand> ops;
  const auto add = [&](const OperandKey& k, bool out) {
    bool all_zero = true, all_contiguous = true;
    for (int d = 0; d < key.rank; ++d) {
      all_zero = all_zero && k.strides[static_cast<std::size_t>(d)] == StrideClass::kZero;
      all_contiguous =
          all_contiguous && k.strides[static_cast<std::size_t>(d)] == StrideClass::kContiguous;
    }
    const Layout l = all_zero         ? Layout::kScalar
                     : all_contiguous ? Layout::kContiguous
                                      : Layout::kIndexed;
    ops.push_back({k.dtype, out, l, &k});
  };
  for (const OperandKey& k : key.inputs) add(k, false);
  for (const OperandKey& k : key.outputs) add(k, true);
  return ops;
}

std::string pointer(const Operand& o, std::size_t k) {
  return std::string("((") + (o.is_output ? "" : "const ") + storage_c_type(o.dtype) + "*)a.data[" +
         std::to_string(k) + "])";
}

// The element offset of operand k at the multi-index i0..i{rank-1}, in index type I.
std::string indexed_offset(const Operand& o, std::size_t k, int rank) {
  std::string terms;
  for (int d = 0; d < rank; ++d) {
    const StrideClass c = o.key->strides[static_cast<std::size_t>(d)];
    if (c == StrideClass::kZero) continue;
    const std::string stride = c == StrideClass::kContiguous
                                   ? "c" + std::to_string(d)
                                   : "(I)a.strides[" + std::to_string(k * rank + d) + "]";
    terms += (terms.empty() ? "" : " + ") + ("i" + std::to_string(d)) + " * " + stride;
  }
  return terms.empty() ? "0" : terms;
}

// The straight-line code of one element: loads through `element`, the body, stores through
// `store_to`. Scalar instructions are hoisted to the kernel's entry.
std::string element_code(const FusedProgram& p, const std::vector<ValueType>& types,
                         const std::function<std::string(std::size_t)>& element,
                         const std::function<std::string(std::size_t)>& store_to,
                         std::string_view name, const std::string& indent,
                         const ShiftedElement& shifted) {
  std::string s;
  for (const Instruction& in : p.prologue)
    if (in.kind != InstrKind::kScalar)
      s += indent + instruction_line(p, in, types, element, name, shifted) + "\n";
  for (std::size_t o = 0; o < p.outputs.size(); ++o) {
    const ProgramOutput& out = p.outputs[o];
    s += indent + store_to(o) + " = " +
         store_value(register_name(out.reg), types[static_cast<std::size_t>(out.reg)], out.dtype) +
         ";\n";
  }
  return s;
}

std::string emit_kernel(const FusedProgram& p, const SpecializationKey& key,
                        std::string_view name) {
  check_program(p, key, name);
  const int rank = key.rank;
  const std::string fn(name);
  const std::vector<ValueType> types = p.register_types();
  const std::vector<Operand> ops = operands_of(key);
  const std::size_t ni = key.inputs.size();
  const CudaArgsLayout layout{ops.size(), static_cast<std::size_t>(rank), p.scalars.size()};

  // The argument struct: every field 8 bytes, so it matches CudaArgsLayout word for word.
  std::string s = "// " + fn + ": " + key.to_string() + "\nstruct " + fn + "_args {\n";
  s += "  char* data[" + std::to_string(layout.operands) + "];\n";
  if (rank > 0) {
    s += "  long long sizes[" + std::to_string(layout.rank) + "];\n";
    s += "  long long strides[" + std::to_string(layout.operands * layout.rank) + "];\n";
  }
  if (layout.scalars > 0) s += "  long long scalars[" + std::to_string(layout.scalars) + "];\n";
  s += "  long long numel;\n  long long narrow;\n};\n";

  // The body, templated on the index type.
  s += "template <class I>\nstatic __device__ __forceinline__ void " + fn + "_body(const " + fn +
       "_args& a) {\n";
  for (const Instruction& in : p.prologue)
    if (in.kind == InstrKind::kScalar) s += "  " + scalar_line(p, in, "a.scalars") + "\n";
  s += "  const I numel = (I)a.numel;\n";
  s += "  const I first = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;\n";
  s += "  const I step = (I)gridDim.x * (I)blockDim.x;\n";
  const bool indexed = std::any_of(ops.begin(), ops.end(),
                                   [](const Operand& o) { return o.layout == Layout::kIndexed; });
  if (indexed) {  // contiguous strides: products of the inner sizes
    for (int d = 0; d < rank; ++d) {
      std::string c;
      for (int e = d + 1; e < rank; ++e)
        c += (c.empty() ? "" : " * ") + ("(I)a.sizes[" + std::to_string(e) + "]");
      s += "  const I c" + std::to_string(d) + " = " + (c.empty() ? "1" : c) + ";\n";
    }
  }

  // Vector path: every operand contiguous or a broadcast scalar, at least one contiguous.
  std::size_t widest = 0;
  bool vectorizable = rank > 0;
  for (const Operand& o : ops) {
    if (o.layout == Layout::kIndexed) vectorizable = false;
    if (o.layout == Layout::kContiguous) widest = std::max(widest, element_size(o.dtype));
  }
  // An indexed load reads away from the element: the scalar loop's addressing only.
  const bool loads_at =
      std::any_of(p.prologue.begin(), p.prologue.end(),
                  [](const Instruction& in) { return in.kind == InstrKind::kLoadAt; });
  vectorizable = vectorizable && widest > 0 && !loads_at;
  if (vectorizable) {
    const std::size_t vec = 16 / widest;
    const std::string V = std::to_string(vec);
    std::string aligned;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].layout != Layout::kContiguous) continue;
      aligned += std::string(aligned.empty() ? "" : " && ") + "((unsigned long long)a.data[" +
                 std::to_string(k) + "] % " + std::to_string(vec * element_size(ops[k].dtype)) +
                 " == 0)";
    }
    s += "  I start = first;\n  if (" + aligned + ") {\n";
    s += "    const I vectors = numel / " + V + ";\n";
    s += "    for (I v = first; v < vectors; v += step) {\n";
    for (std::size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].layout != Layout::kContiguous) continue;
      const std::string vt = std::string("sf_vec<") + storage_c_type(ops[k].dtype) + ", " + V + ">";
      if (ops[k].is_output)
        s += "      " + vt + " x" + std::to_string(k) + ";\n";
      else
        s += "      const " + vt + " x" + std::to_string(k) + " = *(const " + vt + "*)(" +
             pointer(ops[k], k) + " + v * " + V + ");\n";
    }
    s += "#pragma unroll\n      for (int l = 0; l < " + V + "; ++l) {\n";
    const auto lane = [&](std::size_t k) {
      return ops[k].layout == Layout::kScalar ? pointer(ops[k], k) + "[0]"
                                              : "x" + std::to_string(k) + ".v[l]";
    };
    s += element_code(p, types, lane, [&](std::size_t o) { return lane(ni + o); }, name, "        ",
                      {});
    s += "      }\n";
    for (std::size_t k = ni; k < ops.size(); ++k)
      if (ops[k].layout == Layout::kContiguous)
        s += "      *(sf_vec<" + std::string(storage_c_type(ops[k].dtype)) + ", " + V + ">*)(" +
             pointer(ops[k], k) + " + v * " + V + ") = x" + std::to_string(k) + ";\n";
    s += "    }\n    start = vectors * " + V + " + first;\n  }\n";
  }
  // The scalar loop: all of an unaligned or non-vectorizable launch, or the vector loop's tail.
  s += std::string("  for (I i = ") + (vectorizable ? "start" : "first") +
       "; i < numel; i += step) {\n";
  if (indexed) {
    s += "    I rest = i;\n";
    for (int d = rank - 1; d > 0; --d) {
      const std::string n = "(I)a.sizes[" + std::to_string(d) + "]";
      s += "    const I i" + std::to_string(d) + " = rest % " + n + ";\n    rest /= " + n + ";\n";
    }
    s += "    const I i0 = rest;\n";
  }
  // Operand k's element offset at the loop's index.
  const auto offset = [&](std::size_t k) -> std::string {
    switch (ops[k].layout) {
      case Layout::kScalar:
        return "0";
      case Layout::kContiguous:
        return "i";
      case Layout::kIndexed:
        break;
    }
    return indexed_offset(ops[k], k, rank);
  };
  const auto at = [&](std::size_t k) { return pointer(ops[k], k) + "[" + offset(k) + "]"; };
  s += element_code(
      p, types, at, [&](std::size_t o) { return at(ni + o); }, name, "    ",
      [&](std::size_t k, const std::string& shift) {
        // In 64 bits: the launch's narrow indexing covers the view, not the indexed axis.
        return pointer(ops[k], k) + "[(long long)(" + offset(k) + ") + " + shift + "]";
      });
  s += "  }\n}\n";

  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kCudaBlockSize) + ") " +
       fn + "(const " + fn + "_args a) {\n";
  s += "  if (a.narrow) " + fn + "_body<int>(a);\n  else " + fn + "_body<long long>(a);\n}\n";
  return s;
}

}  // namespace

std::string cuda_kernel_source(const FusedProgram& program, const SpecializationKey& key,
                               std::string_view name) {
  const auto emit = [&](const FusedProgram& p) {
    return p.anchor.kind == AnchorKind::kReduce ? cuda_reduce_kernel_source(p, key, name)
                                                : emit_kernel(p, key, name);
  };
  if (key.scalar_classes.empty() && key.exact_reciprocals == 0) return emit(program);
  return emit(specialize(program, key, name));
}

const std::string& cuda_kernel_prelude() {
  // Never destroyed, like cpu_kernel_prelude(): compiler threads may read it at exit.
  static const std::string* text = new std::string(
      cpu_kernel_prelude() +
      "\n// One operand's elements of a vector iteration: a single aligned load or store.\n"
      "template <class T, int N>\nstruct __align__(sizeof(T) * N) sf_vec {\n  T v[N];\n};\n");
  return *text;
}

std::span<const char* const> cuda_kernel_options() {
  // 177: "variable declared but never referenced", for a program's loads that no output needs
  // (the CPU compiler drops them silently too).
  static constexpr std::array<const char*, 3> kOptions = {"--fmad=false", "--std=c++17",
                                                          "--diag-suppress=177"};
  return kOptions;
}

}  // namespace streamfuse::jit

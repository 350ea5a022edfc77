// What the C++ and the CUDA generators of reduction kernels (jit/cpp_reduce_codegen.cpp,
// jit/cuda_reduce_codegen.cpp) share: the program and key they generate from, how the key splits
// into the rows' (outer) and the reduced (inner) dimensions, each operand's stride expressions,
// the per-row code of each group of stages and the per-element code an output or stage needs.
// Each generator names sizes, stride arguments and a row's first element its own way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jit/kernel_expressions.h"
#include "jit/program.h"
#include "jit/reduce_program.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

class ReduceSource {
 public:
  virtual ~ReduceSource() = default;

 protected:
  ReduceSource(const FusedProgram& p, const SpecializationKey& key, std::string_view name)
      : p_(p), key_(key), name_(name), types_(p.register_types()), needs_(stages_needed(p)) {
    check_program(p, key, name);
    rank_ = key.rank;
    inner_rank_ = p.anchor.axis == core::kAllAxes ? rank_ : 1;
    outer_rank_ = rank_ - inner_rank_;
    if (outer_rank_ < 0) fail_generation(name, "a reduction key of rank 0");
  }

  // The generated code's expression of the iteration's size d, of operand k's stride argument
  // along d, and of input j's element at the row's first element.
  virtual std::string size(int d) const = 0;
  virtual std::string stride_arg(std::size_t k, int d) const = 0;
  virtual std::string row_element(std::size_t j) const = 0;

  StrideClass cls(std::size_t k, int d) const {
    const std::size_t ni = key_.inputs.size();
    const OperandKey& ok = k < ni ? key_.inputs[k] : key_.outputs[k - ni];
    return ok.strides[static_cast<std::size_t>(d)];
  }
  // Operand k's stride along dimension d as an expression, or empty for zero.
  std::string stride(std::size_t k, int d) const {
    switch (cls(k, d)) {
      case StrideClass::kZero:
        return {};
      case StrideClass::kArgument:
        return stride_arg(k, d);
      case StrideClass::kContiguous: {
        std::string product;
        for (int e = d + 1; e < rank_; ++e) product += (product.empty() ? "" : " * ") + size(e);
        return product.empty() ? "1" : "(" + product + ")";
      }
    }
    return {};
  }

  // The per-row code that needs exactly `group` stages, at the row's scope.
  std::string row_group(std::size_t group) const {
    std::string s;
    for (const Instruction& in : p_.epilogue) {
      if (needs_[static_cast<std::size_t>(in.out)] != group || in.kind == InstrKind::kScalar)
        continue;
      s += "    " +
           instruction_line(
               p_, in, types_, [&](std::size_t j) { return row_element(j); }, name_) +
           "\n    (void)" + register_name(in.out) + ";\n";
    }
    return s;
  }

  // The prologue instructions `roots` need, in order (registers in `leaves` taken as they are).
  std::vector<const Instruction*> closure(const std::vector<std::int32_t>& roots,
                                          const std::vector<char>& leaves = {}) const {
    std::vector<const Instruction*> code;
    for (std::size_t i : prologue_closure(p_, roots, leaves)) code.push_back(&p_.prologue[i]);
    return code;
  }

  // The statement storing output `out`'s register at `at` (an element expression).
  std::string store_line(const ProgramOutput& out, const std::string& at) const {
    return at + " = " +
           store_value(register_name(out.reg), types_[static_cast<std::size_t>(out.reg)],
                       out.dtype) +
           ";\n";
  }

  const FusedProgram& p_;
  const SpecializationKey& key_;
  std::string_view name_;
  std::vector<ValueType> types_;
  std::vector<std::size_t> needs_;  // per register: stages that must have run
  int rank_ = 0, inner_rank_ = 1, outer_rank_ = 0;
};

}  // namespace streamfuse::jit

// What the C++ generators of reduction kernels share: how sizes, stride arguments and operand
// pointers are named, and how per-element code is written once an element's expression is known.
// The kernel is one function: jit/cpp_reduce_codegen.cpp writes it and its row walk
// (CppRowSource), jit/cpp_reduce_columns.cpp the branch that walks column tiles.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/kernel_expressions.h"
#include "jit/reduce_source.h"

namespace streamfuse::jit {

class CppReduceSource : public ReduceSource {
 protected:
  CppReduceSource(const FusedProgram& p, const SpecializationKey& key, std::string_view name)
      : ReduceSource(p, key, name) {}

  std::string size(int d) const override { return "n" + std::to_string(d); }
  std::string stride_arg(std::size_t k, int d) const override {
    return "s" + std::to_string(k) + "_" + std::to_string(d);
  }
  // Input j's element, as the walk that writes the code reads it.
  virtual std::string element(std::size_t j) const = 0;

  // The position of `row` (o0 .. o<outer rank - 1>) and each operand's pointer at the row's first
  // element (b<k>), as statements at `indent`.
  std::string row_pointers(const std::string& indent) const;

  // A loop that prefetches `bytes` (an expression) from `pointer` on, a line at a time, for
  // writing if `write`, as a statement at `indent`.
  static std::string prefetch_loop(const std::string& pointer, const std::string& bytes, bool write,
                                   const std::string& indent) {
    return indent + "for (long long o = 0; o < " + bytes +
           "; o += 64) __builtin_prefetch((const char*)(" + pointer + ") + o, " +
           (write ? "1" : "0") + ", 3);\n";
  }

  // The registers the outputs of every element are computed from.
  std::vector<std::int32_t> output_roots() const {
    std::vector<std::int32_t> roots;
    for (const ProgramOutput& o : p_.outputs)
      if (!o.per_row) roots.push_back(o.reg);
    return roots;
  }

  // The instructions' lines (scalars are declared once, at the function's scope). `taken(r)`, if
  // not empty for register r, is an expression r is read from instead of computed.
  std::string lines(const std::vector<const Instruction*>& code, const std::string& indent,
                    const std::function<std::string(std::int32_t)>& taken = {}) const;
};

// The kColumnRows branch of a reduction kernel's function (a program with rows: outer rank >= 1):
// statements that use the function's sizes and stride arguments and return.
std::string cpu_reduce_column_branch(const FusedProgram& program, const SpecializationKey& key,
                                     std::string_view name);

}  // namespace streamfuse::jit

// CUDA C++ for programs with a reduction anchor: a block per row (grid-stride over rows). Each
// stage folds in the CPU's order (core/reduce_math.h), so CUDA gives the CPU's bits: a thread
// per lane of a reduction block (sf_reduce_lane) where the unfused reduction folds lanes, a
// thread per reduction block where it folds in order, partial accumulators in shared memory
// merged by thread 0 in block order (with the lanes' tails). Not a shared-memory tree: a tree
// adds in another order, and results would differ from the CPU's and the eager kernels'. The
// outputs then run a thread per element of the row. Rows strided along the axis (column walks,
// jit/reduce_layout.h) run a thread per row instead: a warp reads adjacent rows at each step.
#include <string>
#include <vector>

#include "jit/cuda_codegen.h"
#include "jit/cuda_kernel_abi.h"
#include "jit/kernel_expressions.h"
#include "jit/reduce_source.h"

namespace streamfuse::jit {
namespace {

class CudaReduceSource final : public ReduceSource {
 public:
  CudaReduceSource(const FusedProgram& p, const SpecializationKey& key, std::string_view name)
      : ReduceSource(p, key, name) {}

  std::string text() const {
    const std::string fn(name_);
    const std::size_t count = key_.inputs.size() + key_.outputs.size();
    const CudaArgsLayout layout{count, static_cast<std::size_t>(rank_), p_.scalars.size()};
    const std::size_t stages = p_.anchor.stages.size();
    // The argument struct: CudaArgsLayout's words (numel is the number of rows), then the row
    // length, whether rows walk by columns (ReduceWalk::kColumns) and each stage's lanes flag.
    std::string s = "// " + fn + ": " + key_.to_string() + "\nstruct " + fn + "_args {\n";
    s += "  char* data[" + std::to_string(layout.operands) + "];\n";
    s += "  long long sizes[" + std::to_string(layout.rank) + "];\n";
    s += "  long long strides[" + std::to_string(layout.operands * layout.rank) + "];\n";
    if (layout.scalars > 0) s += "  long long scalars[" + std::to_string(layout.scalars) + "];\n";
    s += "  long long numel;\n  long long narrow;\n  long long n;\n  long long columns;\n";
    s += "  long long lanes[" + std::to_string(stages) + "];\n};\n";

    s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kCudaBlockSize) + ") " +
         fn + "(const " + fn + "_args a) {\n";
    for (const std::vector<Instruction>* block : p_.blocks())
      for (const Instruction& in : *block)
        if (in.kind == InstrKind::kScalar) s += "  " + scalar_line(p_, in, "a.scalars") + "\n";
    s += "  const long long rows = a.numel, n = a.n;\n";
    s += "  __shared__ unsigned long long sf_shared[" + std::to_string(2 * kCudaBlockSize) +
         "];  // an accumulator of 16 bytes per thread\n";
    s += "  __shared__ long long sf_results[" + std::to_string(stages) + "];\n";
    s += columns();
    s += "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n";
    s += row_offsets();
    s += "    long long res[" + std::to_string(stages) + "];\n    (void)res;\n";
    for (std::size_t k = 0; k < stages; ++k) {
      s += row_group(k);
      s += stage(k);
    }
    s += row_group(stages);
    s += outputs(/*block_per_row=*/true);
    s += "    __syncthreads();  // the next row's stages reuse the shared accumulators\n";
    s += "  }\n}\n";
    return s;
  }

 private:
  // The position of `row` (o<d>) and each operand's offset at the row's first element (off<k>).
  std::string row_offsets() const {
    const std::size_t count = key_.inputs.size() + key_.outputs.size();
    std::string s;
    if (outer_rank_ > 0) {
      s += "    long long rest = row;\n";
      for (int d = outer_rank_ - 1; d > 0; --d)
        s += "    const long long o" + std::to_string(d) + " = rest % a.sizes[" +
             std::to_string(d) + "];\n    rest /= a.sizes[" + std::to_string(d) + "];\n";
      s += "    const long long o0 = rest;\n";
    }
    for (std::size_t k = 0; k < count; ++k) {
      std::string offset;
      for (int d = 0; d < outer_rank_; ++d) {
        const std::string st = stride(k, d);
        if (!st.empty())
          offset += (offset.empty() ? "" : " + ") + ("o" + std::to_string(d)) + " * " + st;
      }
      s += "    const long long off" + std::to_string(k) + " = " + (offset.empty() ? "0" : offset) +
           ";\n";
    }
    return s;
  }

  // Rows strided along the axis (ReduceWalk::kColumns: every stage folds in order): a thread per
  // row, so that a warp's loads of one step along the axis are adjacent; each stage folds block
  // by block with the template's in-order run, the outputs follow along the row.
  std::string columns() const {
    const std::size_t stages = p_.anchor.stages.size();
    std::string s = "  if (a.columns) {\n";
    s += "  for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < rows;\n"
         "       row += (long long)gridDim.x * blockDim.x) {\n";
    s += row_offsets();
    s += "    long long res[" + std::to_string(stages) + "];\n    (void)res;\n";
    for (std::size_t k = 0; k < stages; ++k) {
      const ReduceStage& st = p_.anchor.stages[k];
      const std::string op = "Op" + std::to_string(k);
      s += row_group(k);
      s += "    {\n";
      s += stage_op(st, op);
      s += "      " + op + "::acc total = " + op + "::identity();\n";
      s += "      for (long long b = 0; b < sf_reduce_blocks(n); ++b) {\n";
      s += "        const long long start = b * SF_REDUCE_BLOCK;\n";
      s += "        total = " + op + "::merge(total, sf_reduce_run<" + op +
           ">(load, start, sf_reduce_block_len(n, b), 0, start, " + op + "::identity()));\n";
      s += "      }\n";
      s += "      res[" + std::to_string(k) + "] = " + reduce_result_bits(st.op, "total", "n", op) +
           ";\n    }\n";
    }
    s += row_group(stages);
    s += outputs(/*block_per_row=*/false);
    s += "  }\n  return;\n  }\n";
    return s;
  }

  std::string size(int d) const override { return "a.sizes[" + std::to_string(d) + "]"; }
  std::string stride_arg(std::size_t k, int d) const override {
    return "a.strides[" +
           std::to_string(k * static_cast<std::size_t>(rank_) + static_cast<std::size_t>(d)) + "]";
  }
  std::string row_element(std::size_t j) const override {
    return pointer(j) + "[off" + std::to_string(j) + "]";
  }
  std::string pointer(std::size_t k) const {
    const std::size_t ni = key_.inputs.size();
    const bool out = k >= ni;
    const DType d = out ? key_.outputs[k - ni].dtype : key_.inputs[k].dtype;
    return std::string("((") + (out ? "" : "const ") + storage_c_type(d) + "*)a.data[" +
           std::to_string(k) + "])";
  }
  // Operand k at element `j` (a variable) of the row: its inner index, then the offset.
  std::string at(std::size_t k) const {
    std::string offset = "off" + std::to_string(k);
    for (int d = outer_rank_; d < rank_; ++d) {
      const std::string st = stride(k, d);
      if (!st.empty()) offset += " + e" + std::to_string(d) + " * " + st;
    }
    return pointer(k) + "[" + offset + "]";
  }
  // The inner index of `j`: e<d> for the inner dimensions.
  std::string inner_index(const std::string& indent) const {
    std::string s = indent + "long long rest_j = j;\n";
    for (int d = rank_ - 1; d > outer_rank_; --d)
      s += indent + "const long long e" + std::to_string(d) + " = rest_j % a.sizes[" +
           std::to_string(d) + "];\n" + indent + "rest_j /= a.sizes[" + std::to_string(d) + "];\n";
    s += indent + "const long long e" + std::to_string(outer_rank_) + " = rest_j;\n";
    return s;
  }

  std::string lines(const std::vector<const Instruction*>& code, const std::string& indent) const {
    std::string s;
    for (const Instruction* in : code)
      if (in->kind != InstrKind::kScalar)
        s += indent +
             instruction_line(
                 p_, *in, types_, [&](std::size_t j) { return at(j); }, name_) +
             "\n";
    return s;
  }

  std::string stage(std::size_t k) const {
    const ReduceStage& st = p_.anchor.stages[k];
    const std::string ks = std::to_string(k), op = "Op" + ks;
    const std::string B = std::to_string(kCudaBlockSize);
    std::string s = "    {\n";
    s += stage_op(st, op);
    s += "      " + op + "::acc* const part = (" + op + "::acc*)sf_shared;\n";
    s += "      const int lanes = (int)a.lanes[" + ks + "];\n";
    s += "      const long long blocks = sf_reduce_blocks(n);\n";
    // A round: 16 reduction blocks a lane per thread, or " + B + " blocks a thread each.
    s += "      const long long per_round = lanes ? " + B + " / SF_REDUCE_LANES : " + B + ";\n";
    s += "      " + op + "::acc total = " + op + "::identity();\n";
    s += "      for (long long g = 0; g < blocks; g += per_round) {\n";
    s += "        const long long b = g + (lanes ? threadIdx.x / SF_REDUCE_LANES : threadIdx.x);\n";
    s += "        if (b < blocks) {\n";
    s +=
        "          const long long start = b * SF_REDUCE_BLOCK, len = sf_reduce_block_len(n, b);\n";
    s += "          part[threadIdx.x] = lanes ? sf_reduce_lane<" + op +
         ">(load, start, sf_reduce_lane_span(1, len), start, (int)(threadIdx.x % "
         "SF_REDUCE_LANES))\n";
    s += "                                    : sf_reduce_run<" + op +
         ">(load, start, len, 0, start, " + op + "::identity());\n";
    s += "        }\n        __syncthreads();\n";
    s += "        if (threadIdx.x == 0) {\n";
    s += "          for (long long bb = g; bb < blocks && bb < g + per_round; ++bb) {\n";
    s += "            " + op + "::acc block = " + op + "::identity();\n";
    s += "            if (lanes) {\n";
    s += "              const long long start = bb * SF_REDUCE_BLOCK, len = sf_reduce_block_len(n, "
         "bb);\n";
    s += "              for (int l = 0; l < SF_REDUCE_LANES; ++l)\n";
    s +=
        "                block = " + op + "::merge(block, part[(bb - g) * SF_REDUCE_LANES + l]);\n";
    s += "              block = sf_reduce_tail<" + op +
         ">(load, start, sf_reduce_lane_span(1, len), len, start, block);\n";
    s += "            } else {\n              block = part[bb - g];\n            }\n";
    s += "            total = " + op + "::merge(total, block);\n";
    s += "          }\n        }\n        __syncthreads();\n      }\n";
    s += "      if (threadIdx.x == 0) sf_results[" + ks +
         "] = " + reduce_result_bits(st.op, "total", "n", op) + ";\n";
    s += "      __syncthreads();\n";
    s += "      res[" + ks + "] = sf_results[" + ks + "];\n";
    s += "    }\n";
    return s;
  }

  // The row's outputs: every element's, then every row's; block_per_row: the block's threads
  // share the elements and thread 0 stores the row's, else the row's one thread stores all.
  std::string outputs(bool block_per_row) const {
    const std::size_t ni = p_.inputs.size();
    std::vector<std::int32_t> roots;
    for (const ProgramOutput& o : p_.outputs)
      if (!o.per_row) roots.push_back(o.reg);
    std::string s;
    if (!roots.empty()) {
      s += block_per_row ? "    for (long long j = threadIdx.x; j < n; j += blockDim.x) {\n"
                         : "    for (long long j = 0; j < n; ++j) {\n";
      s += inner_index("      ");
      s += lines(closure(roots), "      ");
      for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
        const ProgramOutput& out = p_.outputs[o];
        if (out.per_row) continue;
        s += "      " + store_line(out, at(ni + o));
      }
      s += "    }\n";
    }
    s += block_per_row ? "    if (threadIdx.x == 0) {\n" : "    {\n";
    for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
      const ProgramOutput& out = p_.outputs[o];
      if (!out.per_row) continue;
      s += "      " + store_line(out, row_element(ni + o));
    }
    s += "    }\n";
    return s;
  }
  // Stage st's accumulator type, named `op`, and its value at element j of the row as `load`
  // (for the template's folds).
  std::string stage_op(const ReduceStage& st, const std::string& op) const {
    std::string s = "      typedef " +
                    reduce_op_type(st.op, types_[static_cast<std::size_t>(st.input)]) + " " + op +
                    ";\n";
    s += "      const auto load = [&](long long j) -> " + op + "::value {\n";
    s += inner_index("        ");
    s += lines(closure({st.input}), "        ");
    s += "        return " + register_name(st.input) + ";\n      };\n";
    return s;
  }
};

}  // namespace

std::string cuda_reduce_kernel_source(const FusedProgram& program, const SpecializationKey& key,
                                      std::string_view name) {
  return CudaReduceSource(program, key, name).text();
}

}  // namespace streamfuse::jit

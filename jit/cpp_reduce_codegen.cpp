// C++ for programs with a reduction anchor: one extern "C" function with the CpuReduceLaunch ABI
// (jit/kernel_abi.h). Each row: its per-row code as locals, each stage's per-element code over
// the row in chunks that the reduction template's fold (core/reduce_math.h: the eager kernel's
// order) consumes, then the outputs. Along a single inner dimension, a stage whose values the
// outputs do not read again is folded as it is computed, without the row buffer. The same text runs
// a whole row or, for long rows, the part of one that a call's mode asks for; rows strided along
// the axis run by column tiles (jit/cpp_reduce_columns.cpp).
//
// Whole rows of at most one chunk run in a function of their own (group_function): up to
// kGroupRows rows at a time, each stage for all of them before the next. A short row's stages are
// a chain of dependent steps (its max, then its exponentials, its sum's lanes merged in order, a
// reciprocal, then its outputs); one row after another, the chain is the row's time. Stage by
// stage over a group, the next row's steps overlap the last one's (a softmax over rows of 128
// floats in 0.6 of the time).
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/cpp_codegen.h"
#include "jit/cpp_reduce_source.h"
#include "jit/kernel_expressions.h"
#include "jit/reduce_layout.h"

namespace streamfuse::jit {
namespace {

// The ABI struct, once per translation unit (a unit holds many kernels).
constexpr const char* kLaunchStruct = R"(#ifndef SF_REDUCE_LAUNCH_DECLARED
#define SF_REDUCE_LAUNCH_DECLARED
struct sf_reduce_launch {
  char* const* data;
  const long long* sizes;
  const long long* strides;
  const long long* scalars;
  const int* lanes;
  long long n;
  long long row_begin, row_end;
  long long begin, end;
  int mode;
  int stage;
  void* partials;
  long long* results;
};
#endif
)";

// Elements a stage's code computes before the fold takes them (and a row that the outputs read
// from the stages' buffers is at most this long).
constexpr int kChunk = 2048;

// Rows of at most one chunk that group_function runs stage by stage, at most (their stages' row
// buffers hold them all). Measured with softmax over rows of 128 floats: 4 rows at a time in 0.59
// of one row's time, 8 in 0.63, 16 in 0.71 (their buffers leave the L1 cache).
constexpr int kGroupRows = 4;

class CppRowSource final : public CppReduceSource {
 public:
  CppRowSource(const FusedProgram& p, const SpecializationKey& key, std::string_view name)
      : CppReduceSource(p, key, name) {}

  std::string text() {
    std::string s =
        std::string(kLaunchStruct) + "// " + std::string(name_) + ": " + key_.to_string() + "\n";
    s += group_function();
    s += "extern \"C\" void " + std::string(name_) + "(const sf_reduce_launch* L) {\n";
    s += "  if (L->mode == 0 && L->n > 0 && L->n <= " + std::to_string(kChunk) + ") {\n    " +
         group_function_name() + "(L);\n    return;\n  }\n";
    s += declarations();
    if (may_walk_columns()) s += cpu_reduce_column_branch(p_, key_, name_);
    s += "  for (long long row = L->row_begin; row < L->row_end; ++row) {\n";
    s += row_pointers("    ");
    s += "    long long res[" + std::to_string(p_.anchor.stages.size()) + "] = {0};\n";
    s += "    if (L->mode != 0)\n      for (int k = 0; k < " +
         std::to_string(p_.anchor.stages.size()) + "; ++k) res[k] = L->results[k];\n";
    s += "    (void)res;\n";
    for (std::size_t k = 0; k < p_.anchor.stages.size(); ++k) {
      s += row_group(k);
      s += stage(k);
    }
    s += row_group(p_.anchor.stages.size());
    s += outputs();
    s += "  }\n}\n";
    return s;
  }

 private:
  std::string row_element(std::size_t j) const override { return "b" + std::to_string(j) + "[0]"; }

  // Whether a launch of this key can walk column tiles (mode 4): only where an operand's stride
  // along the axis is neither 0 nor 1 (jit/reduce_layout.cpp's choose_walk), which the key
  // classes as an argument. Elsewhere the branch is never run, and it was 40% of the compile
  // time of a softmax over the last axis (1.68 s of user time against 0.98 without it).
  bool may_walk_columns() const {
    if (outer_rank_ == 0) return false;
    const std::size_t count = key_.inputs.size() + key_.outputs.size();
    for (std::size_t k = 0; k < count; ++k)
      if (cls(k, rank_ - 1) == StrideClass::kArgument) return true;
    return false;
  }

  // What a kernel function declares first: the scalar arguments, the row length n, the sizes and
  // the stride arguments.
  std::string declarations() const {
    const std::size_t count = p_.inputs.size() + p_.outputs.size();
    std::string s = "  const long long* scalars = L->scalars;\n  (void)scalars;\n";
    s += "  const long long n = L->n;\n";
    for (const std::vector<Instruction>* block : p_.blocks())
      for (const Instruction& in : *block)
        if (in.kind == InstrKind::kScalar) s += "  " + scalar_line(p_, in, "scalars") + "\n";
    for (int d = 0; d < rank_; ++d)
      s += "  const long long " + size(d) + " = L->sizes[" + std::to_string(d) + "];\n";
    for (std::size_t k = 0; k < count; ++k)
      for (int d = 0; d < rank_; ++d)
        if (cls(k, d) == StrideClass::kArgument)
          s += "  const long long " + stride_arg(k, d) + " = L->strides[" +
               std::to_string(k * static_cast<std::size_t>(rank_) + static_cast<std::size_t>(d)) +
               "];\n";
    return s;
  }

  std::string group_function_name() const { return std::string(name_) + "_row_groups"; }

  // The function that runs kWholeRows of 1 to kChunk elements, groups of kGroupRows rows stage by
  // stage (kGroupRows above). A row's part of a stage buffer starts at go = g * n, g its place
  // in the group. Each loop over the group's rows computes the rows' pointers and the per-row
  // code its stage needs again (a few scalar operations a row; what it does not read, the
  // compiler drops). A row is one block: its values folded in one piece (an array of them by
  // sf_reduce_contiguous, others pushed to sf_reduce_fold as computed), and its accumulator that
  // fold merged into the identity, as the row walk computes it. (sf_reduce_run is the same fold,
  // but out of line: 1.05x the time here.) Separate from the kernel's other walks: in one
  // function with them, GCC kept this code's values on the stack (1.07x its time).
  std::string group_function() const {
    const std::size_t stages = p_.anchor.stages.size();
    const std::string chunk = std::to_string(kChunk), group_rows = std::to_string(kGroupRows);
    std::string s = "static __attribute__((noinline)) void " + group_function_name() +
                    "(const sf_reduce_launch* L) {\n";
    s += declarations();
    s += "  long long group = " + chunk + " / n;\n  if (group > " + group_rows +
         ") group = " + group_rows + ";\n";
    // Rows under 512 elements gained nothing from it (softmax over 24 M floats in rows of 128 and
    // 256: within noise of no prefetch, 0.95-1.1x), rows of 512 to 2048 took 0.75-0.85x the time.
    if (prefetches_next_group()) s += "  const bool prefetch_next = n >= 512;\n";
    s += "  for (long long row0 = L->row_begin; row0 < L->row_end; row0 += group) {\n";
    s += "    const long long rows = L->row_end - row0 < group ? L->row_end - row0 : group;\n";
    s += "    long long res_g[" + std::to_string(stages) + "][" + group_rows + "];\n";
    s += "    (void)res_g;\n";
    for (std::size_t k = 0; k < stages; ++k)
      if (!folds_directly(k))
        s += "    " +
             std::string(c_type(types_[static_cast<std::size_t>(p_.anchor.stages[k].input)])) +
             " tmp" + std::to_string(k) + "[" + chunk + "];\n";
    // The loop over the group's rows for code that needs `group` stages: the row's pointers, its
    // stage results so far and its per-row code.
    const auto row_loop = [&](std::size_t group) {
      std::string l = "    for (long long g = 0; g < rows; ++g) {\n";
      l += "      const long long row = row0 + g, go = g * n;\n      (void)go;\n";
      l += row_pointers("      ");
      l += "      long long res[" + std::to_string(stages) + "];\n";
      for (std::size_t k = 0; k < group; ++k)
        l += "      res[" + std::to_string(k) + "] = res_g[" + std::to_string(k) + "][g];\n";
      l += "      (void)res;\n";
      for (std::size_t k = 0; k <= group; ++k) l += row_group(k);
      if (group == 1 && prefetches_next_group()) l += next_group_prefetch();
      return l;
    };
    for (std::size_t k = 0; k < stages; ++k) {
      const ReduceStage& st = p_.anchor.stages[k];
      const std::string ks = std::to_string(k), op = "Op" + ks;
      s += "    typedef " + reduce_op_type(st.op, types_[static_cast<std::size_t>(st.input)]) +
           " " + op + ";\n";
      s += row_loop(k);
      const std::vector<const Instruction*> code = closure({st.input}, buffered(k));
      // The stage's values as an array, where they are one: its input as it is stored, or its
      // row buffer. sf_reduce_contiguous folds an array as the fold would (float max and min
      // as vectors of keys); other values are pushed to the fold as computed.
      std::string array;
      const int load = stage_input_load(p_, k);
      const ValueType vt = types_[static_cast<std::size_t>(st.input)];
      if (!folds_directly(k)) {
        s += "      long long t = 0;\n";
        s += walk("0", "n",
                  lines(code, "          ", k, "go + t + i") + "          tmp" + ks +
                      "[go + t + i] = " + register_name(st.input) + ";\n",
                  "          t += len;\n", "      ");
        array = "tmp" + ks + " + go";
      } else if (load >= 0 &&
                 cls(static_cast<std::size_t>(load), rank_ - 1) == StrideClass::kContiguous &&
                 std::string_view(storage_c_type(p_.inputs[static_cast<std::size_t>(load)])) ==
                     c_type(vt)) {
        array = "b" + std::to_string(load);
      }
      std::string fold;
      if (!array.empty()) {
        fold = "sf_reduce_contiguous<" + op + ">(" + array + ", n, L->lanes[" + ks + "], 0)";
      } else {
        for (std::size_t j = 0; j < key_.inputs.size(); ++j)
          s += "      const auto q" + std::to_string(j) + " = b" + std::to_string(j) +
               ";\n      (void)q" + std::to_string(j) + ";\n";
        s += "      sf_reduce_fold<" + op + "> f;\n      f.begin(L->lanes[" + ks + "], n, 0);\n";
        s += "      f.push([&](long long i) -> " + op + "::value {\n" +
             lines(code, "        ", k, "go + i") + "        return " + register_name(st.input) +
             ";\n      }, n);\n";
        fold = "f.result()";
      }
      s += "      const " + op + "::acc acc = " + op + "::merge(" + op + "::identity(), " + fold +
           ");\n";
      s += "      res_g[" + ks + "][g] = " + reduce_result_bits(st.op, "acc", "n", op) + ";\n";
      s += "    }\n";
    }
    s += row_loop(stages);
    const std::vector<std::int32_t> roots = output_roots();
    if (!roots.empty()) {
      s += "      long long t = 0;\n";
      s += walk("0", "n",
                lines(closure(roots, buffered(stages)), "          ", stages, "go + t + i") +
                    element_stores("          "),
                "          t += len;\n", "      ");
    }
    s += per_row_stores("      ");
    s += "    }\n  }\n}\n";
    return s;
  }

  // Whether the group function prefetches the next group (next_group_prefetch): where the passes
  // after the first compute a transcendental function per element, whose time can hide the next
  // group's reads from memory. Where they only add and multiply (layer norm, RMS norm), the
  // hardware prefetcher kept up and the prefetches cost time: layer_norm [4096, 768] took 1.35x.
  bool prefetches_next_group() const {
    std::vector<std::int32_t> roots = output_roots();
    for (std::size_t k = 1; k < p_.anchor.stages.size(); ++k)
      roots.push_back(p_.anchor.stages[k].input);
    for (const Instruction* in : closure(roots)) {
      if (in->kind != InstrKind::kOp) continue;
      switch (in->op) {
        case core::OpKind::kExp:
        case core::OpKind::kLog:
        case core::OpKind::kSin:
        case core::OpKind::kCos:
        case core::OpKind::kTanh:
        case core::OpKind::kErf:
        case core::OpKind::kSigmoid:
        case core::OpKind::kPow:
          return true;
        default:
          break;
      }
    }
    return false;
  }

  // Prefetches row g of the next group (its operands whose rows are contiguous spans) in the
  // group's second pass over its rows (stage 1, or the outputs after a lone stage). The first pass
  // reads the group's rows from memory and the passes after it compute from the cache: with the
  // hardware prefetcher following demand misses only, a group's memory and its computation took
  // turns (softmax over rows of 512 floats spent a third of its time in the first pass). Issued
  // here, the next group's lines arrive while this group computes. Outputs are prefetched for
  // writing, so that their lines are owned before the stores reach them.
  std::string next_group_prefetch() const {
    const std::size_t ni = key_.inputs.size(), count = ni + key_.outputs.size();
    std::string body;
    for (std::size_t k = 0; k < count; ++k) {
      if (k >= ni && key_.outputs[k - ni].alias >= 0) continue;  // its input's lines
      bool span = true;
      for (int d = outer_rank_; d < rank_; ++d)
        span = span && cls(k, d) == StrideClass::kContiguous;
      if (!span) continue;
      const char* t =
          k >= ni ? storage_c_type(p_.outputs[k - ni].dtype) : storage_c_type(p_.inputs[k]);
      body += prefetch_loop("b" + std::to_string(k),
                            "n * (long long)sizeof(" + std::string(t) + ")", k >= ni, "        ");
    }
    if (body.empty()) return {};
    return "      if (prefetch_next && row0 + rows + g < L->row_end) {\n"
           "        const long long row = row0 + rows + g;\n" +
           row_pointers("        ") + body + "      }\n";
  }

  // The stores of the per-element outputs at element i of a walk's run, and of the per-row ones.
  std::string element_stores(const std::string& indent) const {
    const std::size_t ni = p_.inputs.size();
    std::string stores;
    for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
      const ProgramOutput& out = p_.outputs[o];
      if (out.per_row) continue;
      const std::size_t k = ni + o;
      const int last = rank_ - 1;
      const std::string at = cls(k, last) == StrideClass::kArgument
                                 ? "q" + std::to_string(k) + "[i * " + stride_arg(k, last) + "]"
                                 : "q" + std::to_string(k) + "[i]";
      stores += indent + store_line(out, at);
    }
    return stores;
  }
  std::string per_row_stores(const std::string& indent) const {
    const std::size_t ni = p_.inputs.size();
    std::string s;
    for (std::size_t o = 0; o < p_.outputs.size(); ++o)
      if (p_.outputs[o].per_row) s += indent + store_line(p_.outputs[o], row_element(ni + o));
    return s;
  }

  // Whether stage k folds its values as it computes them, with no row buffer: along a single
  // inner dimension, where they are an input as it is loaded (as cheap to read again) or the
  // outputs do not read them.
  bool folds_directly(std::size_t k) const {
    if (inner_rank_ != 1) return false;
    if (stage_input_load(p_, k) >= 0) return true;
    for (std::size_t i : prologue_closure(p_, output_roots()))
      if (p_.prologue[i].out == p_.anchor.stages[k].input) return false;
    return true;
  }

  // The stage below `before` whose values (kept in its row buffer) register r is, or -1: a stage
  // input the program computes and the outputs read.
  int cached_stage(std::int32_t r, std::size_t before) const {
    for (std::size_t k = 0; k < std::min(before, p_.anchor.stages.size()); ++k)
      if (p_.anchor.stages[k].input == r && stage_input_load(p_, k) < 0 && !folds_directly(k))
        return static_cast<int>(k);
    return -1;
  }

  // The registers kept in the row buffers of stages below `before` (1 each).
  std::vector<char> buffered(std::size_t before) const {
    std::vector<char> leaves(static_cast<std::size_t>(p_.num_registers), 0);
    for (std::size_t r = 0; r < leaves.size(); ++r)
      if (cached_stage(static_cast<std::int32_t>(r), before) >= 0) leaves[r] = 1;
    return leaves;
  }

  // A walk over elements [j0, j1) of the row, as runs along the innermost dimension: `body` is
  // the inner loop's statements over element i of a run, with q<k> each operand's pointer at the
  // run's start; `after_run` runs after each run (len: its length).
  std::string walk(const std::string& j0, const std::string& j1, const std::string& body,
                   const std::string& after_run, const std::string& indent) const {
    const std::size_t count = key_.inputs.size() + key_.outputs.size();
    const int last = rank_ - 1;
    // Nothing to walk in an empty row (and its position would divide by an empty dimension).
    std::string s = indent + "if (" + j0 + " < " + j1 + ") {\n";
    const std::string in = indent + "  ";
    s += in + "long long j = " + j0 + ";\n";
    // The inner index of j.
    s += in + "long long rest = j;\n";
    for (int d = last; d > outer_rank_; --d)
      s += in + "long long e" + std::to_string(d) + " = rest % " + size(d) + ";\n" + in +
           "rest /= " + size(d) + ";\n";
    s += in + "long long e" + std::to_string(outer_rank_) + " = rest;\n";
    s += in + "while (j < " + j1 + ") {\n";
    const std::string body_indent = in + "  ";
    const std::string left = size(last) + " - e" + std::to_string(last);
    s += body_indent + "const long long len = " + left + " < " + j1 + " - j ? " + left + " : " +
         j1 + " - j;\n";
    for (std::size_t k = 0; k < count; ++k) {
      std::string offset;
      for (int d = outer_rank_; d < rank_; ++d) {
        const std::string st = stride(k, d);
        if (st.empty()) continue;
        offset += (offset.empty() ? "" : " + ") + ("e" + std::to_string(d)) + " * " + st;
      }
      s += body_indent + "const auto q" + std::to_string(k) + " = b" + std::to_string(k) +
           (offset.empty() ? "" : " + (" + offset + ")") + ";\n" + body_indent + "(void)q" +
           std::to_string(k) + ";\n";
    }
    s += body_indent + "for (long long i = 0; i < len; ++i) {\n" + body + body_indent + "}\n";
    s += after_run;
    s += body_indent + "j += len;\n" + body_indent + "e" + std::to_string(last) + " += len;\n";
    for (int d = last; d > outer_rank_; --d)
      s += body_indent + "if (e" + std::to_string(d) + " == " + size(d) + ") { e" +
           std::to_string(d) + " = 0; ++e" + std::to_string(d - 1) + "; }\n";
    s += in + "}\n" + indent + "}\n";
    return s;
  }

  // Element i of input j inside a walk.
  std::string element(std::size_t j) const override {
    const int last = rank_ - 1;
    switch (cls(j, last)) {
      case StrideClass::kZero:
        return "q" + std::to_string(j) + "[0]";
      case StrideClass::kArgument:
        return "q" + std::to_string(j) + "[i * " + stride_arg(j, last) + "]";
      case StrideClass::kContiguous:
        break;
    }
    return "q" + std::to_string(j) + "[i]";
  }

  // The instructions' lines. In group_function (rows of one chunk, whose stages' values are all
  // in their buffers), a stage input of a stage below `buffers_before` reads the stage's row buffer
  // at the element's index in the row (`at`) instead of being computed again.
  std::string lines(const std::vector<const Instruction*>& code, const std::string& indent,
                    std::size_t buffers_before = 0, const std::string& at = {}) const {
    return CppReduceSource::lines(code, indent, [&](std::int32_t r) -> std::string {
      const int k = cached_stage(r, buffers_before);
      return k < 0 ? std::string() : "tmp" + std::to_string(k) + "[" + at + "]";
    });
  }

  // A block's fold of stage k that computes each value as the fold takes it (folds_directly),
  // each input read at the block's start plus i elements along the inner dimension.
  std::string fold_directly(std::size_t k) const {
    std::string s = "        {\n";
    for (std::size_t j = 0; j < key_.inputs.size(); ++j) {
      const std::string js = std::to_string(j), st = stride(j, rank_ - 1);
      s += "          const auto q" + js + " = b" + js + (st.empty() ? "" : " + start * " + st) +
           ";\n          (void)q" + js + ";\n";
    }
    const std::int32_t input = p_.anchor.stages[k].input;
    s += "          f.push([&](long long i) -> Op" + std::to_string(k) + "::value {\n";
    s += lines(closure({input}), "            ");
    s += "            return " + register_name(input) + ";\n          }, blen);\n";
    s += "        }\n";
    return s;
  }

  // A block's fold of stage k whose values the program computes: chunk by chunk into the row
  // buffer, which the fold then reads.
  std::string fold_computed(std::size_t k) const {
    const ReduceStage& st = p_.anchor.stages[k];
    const std::string ks = std::to_string(k), op = "Op" + ks;
    std::string s =
        "        for (long long c = 0; c < blen; c += " + std::to_string(kChunk) + ") {\n";
    s += "          const long long m = blen - c < " + std::to_string(kChunk) +
         " ? blen - c : " + std::to_string(kChunk) + ";\n";
    s += "          long long t = 0;\n";
    const std::string body = lines(closure({st.input}), "              ") + "              tmp" +
                             ks + "[t + i] = " + register_name(st.input) + ";\n";
    s += walk("start + c", "start + c + m", body, "            t += len;\n", "          ");
    s += "          f.push([&](long long i) -> " + op + "::value { return tmp" + ks +
         "[i]; }, m);\n";
    s += "        }\n";
    return s;
  }

  std::string stage(std::size_t k) const {
    const ReduceStage& st = p_.anchor.stages[k];
    const std::string ks = std::to_string(k);
    const ValueType vt = types_[static_cast<std::size_t>(st.input)];
    const std::string op = "Op" + ks;
    const bool direct = folds_directly(k);
    std::string s;
    // The row buffer: a chunk of the stage's values; with a row of one chunk, all of them, which
    // the outputs then read instead of computing them again.
    if (!direct)
      s += std::string("    ") + c_type(vt) + " tmp" + ks + "[" + std::to_string(kChunk) + "];\n";
    s += "    typedef " + reduce_op_type(st.op, vt) + " " + op + ";\n";
    s += "    if (L->mode == 0 || (L->mode == 1 && L->stage == " + ks + ")) {\n";
    s += "      " + op + "::acc acc = " + op + "::identity();\n";
    s += "      const long long blk_begin = L->mode == 0 ? 0 : L->begin;\n";
    s += "      const long long blk_end = L->mode == 0 ? sf_reduce_blocks(n) : L->end;\n";
    s += "      for (long long blk = blk_begin; blk < blk_end; ++blk) {\n";
    s += "        const long long start = blk * SF_REDUCE_BLOCK, blen = sf_reduce_block_len(n, "
         "blk);\n";
    s += "        sf_reduce_fold<" + op + "> f;\n";
    s += "        f.begin(L->lanes[" + ks + "], blen, start);\n";
    s += direct ? fold_directly(k) : fold_computed(k);
    s += "        if (L->mode == 0) acc = " + op + "::merge(acc, f.result());\n";
    s += "        else ((" + op + "::acc*)L->partials)[blk] = f.result();\n";
    s += "      }\n";
    s += "      if (L->mode == 1) return;\n";
    s += "      res[" + ks + "] = " + reduce_result_bits(st.op, "acc", "n", op) + ";\n";
    s += "    }\n";
    s += "    if (L->mode == 2 && L->stage == " + ks + ") {\n";
    s += "      " + op + "::acc acc = " + op + "::identity();\n";
    s += "      for (long long blk = 0; blk < sf_reduce_blocks(n); ++blk)\n";
    s += "        acc = " + op + "::merge(acc, ((const " + op + "::acc*)L->partials)[blk]);\n";
    s += "      L->results[" + ks + "] = " + reduce_result_bits(st.op, "acc", "n", op) + ";\n";
    s += "      return;\n    }\n";
    return s;
  }

  std::string outputs() const {
    std::string s = "    {\n";
    s += "      const long long j0 = L->mode == 0 ? 0 : L->begin;\n";
    s += "      const long long j1 = L->mode == 0 ? n : L->end;\n";
    const std::vector<std::int32_t> roots = output_roots();
    if (!roots.empty())
      s += walk("j0", "j1", lines(closure(roots), "          ") + element_stores("          "), "",
                "      ");
    s += "      if (j0 == 0) {\n" + per_row_stores("        ") + "      }\n    }\n";
    return s;
  }
};

}  // namespace

std::string CppReduceSource::row_pointers(const std::string& indent) const {
  const std::size_t ni = p_.inputs.size(), count = ni + p_.outputs.size();
  std::string s;
  if (outer_rank_ > 0) {
    s += indent + "long long rest = row;\n";
    for (int d = outer_rank_ - 1; d > 0; --d)
      s += indent + "const long long o" + std::to_string(d) + " = rest % " + size(d) + ";\n" +
           indent + "rest /= " + size(d) + ";\n";
    s += indent + "const long long o0 = rest;\n";
  }
  for (std::size_t k = 0; k < count; ++k) {
    std::string offset;
    for (int d = 0; d < outer_rank_; ++d) {
      const std::string st = stride(k, d);
      if (st.empty()) continue;
      offset += (offset.empty() ? "" : " + ") + ("o" + std::to_string(d)) + " * " + st;
    }
    const bool out = k >= ni;
    const char* t = out ? storage_c_type(p_.outputs[k - ni].dtype) : storage_c_type(p_.inputs[k]);
    s += indent + (out ? "" : "const ") + t + "* const b" + std::to_string(k) + " = (" +
         (out ? "" : "const ") + t + "*)L->data[" + std::to_string(k) + "]" +
         (offset.empty() ? "" : " + (" + offset + ")") + ";\n";
  }
  return s;
}

std::string CppReduceSource::lines(const std::vector<const Instruction*>& code,
                                   const std::string& indent,
                                   const std::function<std::string(std::int32_t)>& taken) const {
  std::string s;
  for (const Instruction* in : code) {
    if (in->kind == InstrKind::kScalar) continue;
    const std::string from = taken ? taken(in->out) : std::string();
    if (!from.empty()) {
      s += indent + "const " + c_type(types_[static_cast<std::size_t>(in->out)]) + " " +
           register_name(in->out) + " = " + from + ";\n";
      continue;
    }
    s += indent +
         instruction_line(
             p_, *in, types_, [&](std::size_t j) { return element(j); }, name_) +
         "\n";
  }
  return s;
}

std::string cpu_reduce_kernel_source(const FusedProgram& program, const SpecializationKey& key,
                                     std::string_view name) {
  return CppRowSource(program, key, name).text();
}

}  // namespace streamfuse::jit

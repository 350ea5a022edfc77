// The kColumnRows branch of a reduction kernel (jit/kernel_abi.h): rows strided along the axis
// (ReduceWalk::kColumns), walked by tiles of up to kColumnTile consecutive rows, a step along the
// axis at a time. Per-row registers and stage results become tiles (r<N>_t, res_t), an element
// of row t is base[t * c<k>] (c<k>: operand k's stride along the innermost outer dimension), and
// each step's loop over the tile's rows runs twice in the text: with every c<k> a constant 1
// where they all are 1 at run time (so it vectorizes), and as it is otherwise. Each row's values
// fold in order, block by block, as the unfused reduction of a strided row folds them.
#include <string>
#include <vector>

#include "jit/cpp_reduce_source.h"
#include "jit/kernel_abi.h"
#include "jit/kernel_expressions.h"

namespace streamfuse::jit {
namespace {

class CppColumnSource final : public CppReduceSource {
 public:
  CppColumnSource(const FusedProgram& p, const SpecializationKey& key, std::string_view name)
      : CppReduceSource(p, key, name) {}

  std::string branch() const {
    const std::size_t count = key_.inputs.size() + key_.outputs.size();
    const std::size_t stages = p_.anchor.stages.size();
    std::string s = "  if (L->mode == 4) {\n";
    for (std::size_t k = 0; k < count; ++k) {
      const std::string st = stride(k, outer_rank_ - 1);
      if (!st.empty()) s += "    const long long c" + std::to_string(k) + " = " + st + ";\n";
    }
    // Tiles of kTile rows where this thread's share of the walk is larger than the L2, else of
    // kSmallTile (see kernel_abi.h's kColumnTile).
    s += "    const long long tile = n * (L->row_end - L->row_begin) > " +
         std::to_string(kSmallTileElements) + "LL ? " + std::to_string(kTile) + " : " +
         std::to_string(kSmallTile) + ";\n";
    s += "    for (long long row = L->row_begin; row < L->row_end;) {\n";
    s += row_pointers("      ");
    const std::string last = std::to_string(outer_rank_ - 1);
    s += "      long long tlen = " + size(outer_rank_ - 1) + " - o" + last + ";\n";
    s += "      if (tlen > tile) tlen = tile;\n";
    s += "      if (tlen > L->row_end - row) tlen = L->row_end - row;\n";
    for (std::int32_t r : row_registers())
      s += "      " + std::string(c_type(types_[static_cast<std::size_t>(r)])) + " " +
           register_name(r) + "_t[" + std::to_string(kTile) + "];\n";
    s += "      long long res_t[" + std::to_string(stages) + "][" + std::to_string(kTile) +
         "];\n      (void)res_t;\n";
    for (std::size_t k = 0; k < stages; ++k) {
      s += column_group(k);
      s += column_stage(k);
    }
    s += column_group(stages);
    s += column_outputs();
    s += "      row += tlen;\n    }\n    return;\n  }\n";
    return s;
  }

 private:
  static constexpr int kTile = kColumnTile;
  static constexpr int kSmallTile = kColumnTileSmall;
  static constexpr long long kSmallTileElements = kColumnTileSmallElements;
  static constexpr int kPrefetchSteps = 8;

  std::string element(std::size_t j) const override { return column_element(j, "q"); }
  std::string row_element(std::size_t j) const override { return column_element(j, "b"); }

  // Operand k's element of row t of the tile, from `base` (b: the row's first element; q: the
  // step's).
  std::string column_element(std::size_t k, const char* base) const {
    const std::string p = base + std::to_string(k);
    return cls(k, outer_rank_ - 1) == StrideClass::kZero ? p + "[0]"
                                                         : p + "[t * c" + std::to_string(k) + "]";
  }

  // The per-row registers (every epilogue instruction but the scalars').
  std::vector<std::int32_t> row_registers() const {
    std::vector<std::int32_t> regs;
    for (const Instruction& in : p_.epilogue)
      if (in.kind != InstrKind::kScalar) regs.push_back(in.out);
    return regs;
  }

  // Loads, at the top of a loop over t, the per-row registers computed by groups < `groups` and
  // the results of stages < `stages`.
  std::string tile_loads(std::size_t groups, std::size_t stages, const std::string& indent) const {
    std::string s;
    if (stages > 0) {
      s += indent + "long long res[" + std::to_string(stages) + "];\n";
      for (std::size_t k = 0; k < stages; ++k)
        s += indent + "res[" + std::to_string(k) + "] = res_t[" + std::to_string(k) + "][t];\n";
      s += indent + "(void)res;\n";
    }
    for (std::int32_t r : row_registers())
      if (needs_[static_cast<std::size_t>(r)] < groups)
        s += indent + "const " + c_type(types_[static_cast<std::size_t>(r)]) + " " +
             register_name(r) + " = " + register_name(r) + "_t[t];\n" + indent + "(void)" +
             register_name(r) + ";\n";
    return s;
  }

  // `body` (statements over row t) in a loop over the tile, twice: every column stride 1, then
  // as they are.
  std::string tile_loop(const std::string& body, const std::string& indent) const {
    const std::size_t count = key_.inputs.size() + key_.outputs.size();
    std::string unit, ones;
    for (std::size_t k = 0; k < count; ++k) {
      if (cls(k, outer_rank_ - 1) == StrideClass::kZero) continue;
      unit += std::string(unit.empty() ? "" : " && ") + "c" + std::to_string(k) + " == 1";
      ones += indent + "  const long long c" + std::to_string(k) + " = 1;\n";
    }
    const std::string loop =
        indent + "  for (long long t = 0; t < tlen; ++t) {\n" + body + indent + "  }\n";
    if (unit.empty()) return indent + "{\n" + loop + indent + "}\n";
    return indent + "if (" + unit + ") {\n" + ones + loop + indent + "} else {\n" + loop + indent +
           "}\n";
  }

  // Each operand's pointer at step jj along the axis of the tile's first row (q<k>).
  std::string step_pointers(std::size_t count, const std::string& indent) const {
    std::string s;
    for (std::size_t k = 0; k < count; ++k) {
      const std::string st = stride(k, outer_rank_);
      s += indent + "const auto q" + std::to_string(k) + " = b" + std::to_string(k) +
           (st.empty() ? "" : " + jj * " + st) + ";\n" + indent + "(void)q" + std::to_string(k) +
           ";\n";
    }
    return s;
  }

  // Asks for each input's tile kPrefetchSteps steps along the axis ahead of step jj. A step's
  // tile is a piece of each input (1 KiB of f32), the next one a whole stride of the axis
  // further: the hardware's prefetchers follow such pieces poorly. Without these, a fused batch
  // normalization over axis 0 of [16384, 2048] (three passes over each tile) took 19-20 ms,
  // with them 12.4-12.8 (bench/README.md "Column reductions"). Only inputs whose tile is a run
  // of memory (a tile of strided rows runs as it is); a prefetch past an operand's end is
  // harmless.
  std::string step_prefetches(const std::string& indent) const {
    std::string s;
    for (std::size_t k = 0; k < key_.inputs.size(); ++k) {
      const std::string st = stride(k, outer_rank_);
      if (st.empty() || cls(k, outer_rank_ - 1) == StrideClass::kZero) continue;
      const std::string ks = std::to_string(k);
      s += indent + "if (c" + ks + " == 1)\n";
      s += prefetch_loop("q" + ks + " + " + std::to_string(kPrefetchSteps) + " * " + st,
                         "tlen * (long long)sizeof(*q" + ks + ")", false, indent + "  ");
    }
    return s;
  }

  // The per-row code of group g over the tile's rows, into the registers' tiles.
  std::string column_group(std::size_t g) const {
    std::string body = tile_loads(g, g, "        ");
    std::string stores;
    for (const Instruction& in : p_.epilogue) {
      if (needs_[static_cast<std::size_t>(in.out)] != g || in.kind == InstrKind::kScalar) continue;
      body += "        " +
              instruction_line(
                  p_, in, types_, [&](std::size_t j) { return row_element(j); }, name_) +
              "\n";
      stores += "        " + register_name(in.out) + "_t[t] = " + register_name(in.out) + ";\n";
    }
    if (stores.empty()) return {};
    return tile_loop(body + stores, "      ");
  }

  // Stage k over the tile: each row's values folded in order, block by block.
  std::string column_stage(std::size_t k) const {
    const ReduceStage& st = p_.anchor.stages[k];
    const std::string ks = std::to_string(k), op = "Op" + ks;
    const ValueType vt = types_[static_cast<std::size_t>(st.input)];
    std::string s = "      {\n";
    s += "        typedef " + reduce_op_type(st.op, vt) + " " + op + ";\n";
    s += "        " + op + "::acc acc[" + std::to_string(kTile) + "], part[" +
         std::to_string(kTile) + "];\n";
    s += "        for (long long t = 0; t < tlen; ++t) acc[t] = " + op + "::identity();\n";
    s += "        for (long long blk = 0; blk < sf_reduce_blocks(n); ++blk) {\n";
    s += "          const long long start = blk * SF_REDUCE_BLOCK, end = start + "
         "sf_reduce_block_len(n, blk);\n";
    s += "          for (long long t = 0; t < tlen; ++t) part[t] = " + op + "::identity();\n";
    s += "          for (long long jj = start; jj < end; ++jj) {\n";
    s += step_pointers(key_.inputs.size(), "            ");
    s += step_prefetches("            ");
    const std::string body = tile_loads(k + 1, k, "                ") +
                             lines(closure({st.input}), "                ") +
                             "                part[t] = " + op + "::step(part[t], (" + op +
                             "::value)" + register_name(st.input) + ", jj);\n";
    s += tile_loop(body, "            ");
    s += "          }\n";
    s += "          for (long long t = 0; t < tlen; ++t) acc[t] = " + op +
         "::merge(acc[t], part[t]);\n";
    s += "        }\n";
    s += "        for (long long t = 0; t < tlen; ++t) res_t[" + ks +
         "][t] = " + reduce_result_bits(st.op, "acc[t]", "n", op) + ";\n";
    s += "      }\n";
    return s;
  }

  // The outputs of the tile: every element's, a step at a time, then every row's.
  std::string column_outputs() const {
    const std::size_t ni = p_.inputs.size(), count = ni + p_.outputs.size();
    const std::size_t stages = p_.anchor.stages.size();
    std::string s;
    std::string stores, row_stores;
    for (std::size_t o = 0; o < p_.outputs.size(); ++o) {
      const ProgramOutput& out = p_.outputs[o];
      (out.per_row ? row_stores : stores) +=
          "          " + store_line(out, column_element(ni + o, out.per_row ? "b" : "q"));
    }
    if (!stores.empty()) {
      s += "      for (long long jj = 0; jj < n; ++jj) {\n";
      s += step_pointers(count, "        ");
      s += step_prefetches("        ");
      s += tile_loop(tile_loads(stages + 1, stages, "          ") +
                         lines(closure(output_roots()), "          ") + stores,
                     "        ");
      s += "      }\n";
    }
    if (!row_stores.empty())
      s += tile_loop(tile_loads(stages + 1, stages, "          ") + row_stores, "      ");
    return s;
  }
};

}  // namespace

std::string cpu_reduce_column_branch(const FusedProgram& program, const SpecializationKey& key,
                                     std::string_view name) {
  return CppColumnSource(program, key, name).branch();
}

}  // namespace streamfuse::jit

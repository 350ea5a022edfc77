#include "jit/program_optimizer.h"

#include <algorithm>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

namespace streamfuse::jit {
namespace {

using core::OpKind;

bool commutative(core::OpKind k) {
  switch (k) {
    case core::OpKind::kAdd:
    case core::OpKind::kMul:
    case core::OpKind::kMaximum:
    case core::OpKind::kMinimum:
    case core::OpKind::kEq:
    case core::OpKind::kNe:
    case core::OpKind::kLogicalAnd:
    case core::OpKind::kLogicalOr:
      return true;
    default:
      return false;
  }
}

struct Key {
  Instruction in;  // with out = 0
  friend bool operator==(const Key&, const Key&) = default;
};
struct KeyHash {
  std::size_t operator()(const Key& k) const {
    std::size_t h = static_cast<std::size_t>(k.in.kind) * 131 + static_cast<std::size_t>(k.in.op);
    h = h * 131 + static_cast<std::size_t>(k.in.type) * 7 + static_cast<std::size_t>(k.in.round);
    h = h * 1000003 + static_cast<std::size_t>(k.in.index);
    for (std::int32_t a : k.in.args) h = h * 1000003 + static_cast<std::size_t>(a + 1);
    return h;
  }
};

// The code the rewrites work on: every block, in dependency order (program.blocks()), each
// instruction tagged with its block so the code splits back after rewriting. With a reduction
// anchor, per-row code comes first: per-element code may read it (an instruction merged into an
// earlier one of the per-row block is computed once per row), never the reverse.
struct Tagged {
  Instruction in;
  std::uint8_t block;
};
std::vector<Tagged> code_of(FusedProgram& program) {
  std::vector<Tagged> code;
  std::uint8_t b = 0;
  for (std::vector<Instruction>* block : program.blocks()) {
    for (const Instruction& in : *block) code.push_back({in, b});
    ++b;
  }
  return code;
}
void set_code(FusedProgram& program, const std::vector<Tagged>& code) {
  const auto blocks = program.blocks();
  for (std::vector<Instruction>* block : blocks) block->clear();
  for (const Tagged& t : code) blocks[t.block]->push_back(t.in);
}

}  // namespace

void simplify(FusedProgram& program) {
  std::vector<Tagged> code = code_of(program);
  const auto n = static_cast<std::size_t>(program.num_registers);
  std::vector<std::int32_t> replace(n);
  for (std::size_t r = 0; r < n; ++r) replace[r] = static_cast<std::int32_t>(r);
  std::vector<const Instruction*> def(n, nullptr);  // after rewriting
  std::vector<Tagged> kept;
  kept.reserve(code.size());
  boost::unordered_flat_map<Key, std::int32_t, KeyHash> seen;

  auto negated = [&](std::int32_t r) -> std::int32_t {  // a if r = neg(a), else -1
    const Instruction* d = def[static_cast<std::size_t>(r)];
    return d && d->kind == InstrKind::kOp && d->op == core::OpKind::kNeg ? d->args[0] : -1;
  };

  for (auto [in, block] : code) {
    for (std::int32_t& a : in.args)
      if (a >= 0) a = replace[static_cast<std::size_t>(a)];
    if (in.kind == InstrKind::kOp) {
      if (in.op == core::OpKind::kNeg && negated(in.args[0]) >= 0) {
        replace[static_cast<std::size_t>(in.out)] = negated(in.args[0]);
        continue;
      }
      if (in.op == core::OpKind::kAbs && negated(in.args[0]) >= 0) in.args[0] = negated(in.args[0]);
      if (in.op == core::OpKind::kMul && negated(in.args[0]) >= 0 && negated(in.args[1]) >= 0) {
        in.args[0] = negated(in.args[0]);
        in.args[1] = negated(in.args[1]);
      }
      if (commutative(in.op) && in.args[0] > in.args[1]) std::swap(in.args[0], in.args[1]);
    }
    Key key{in};
    key.in.out = 0;
    auto [it, inserted] = seen.try_emplace(key, in.out);
    if (!inserted) {
      replace[static_cast<std::size_t>(in.out)] = it->second;
      continue;
    }
    kept.push_back({in, block});
    def[static_cast<std::size_t>(in.out)] = &kept.back().in;  // reserved: no reallocation
  }
  for (ProgramOutput& o : program.outputs) o.reg = replace[static_cast<std::size_t>(o.reg)];
  for (ReduceStage& st : program.anchor.stages)
    st.input = replace[static_cast<std::size_t>(st.input)];

  // Keep what the outputs and the anchor need, then number registers in order of definition.
  std::vector<char> live(n, 0);
  for (const ProgramOutput& o : program.outputs) live[static_cast<std::size_t>(o.reg)] = 1;
  for (const ReduceStage& st : program.anchor.stages) live[static_cast<std::size_t>(st.input)] = 1;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    if (!live[static_cast<std::size_t>(it->in.out)]) continue;
    for (std::int32_t a : it->in.args)
      if (a >= 0) live[static_cast<std::size_t>(a)] = 1;
  }
  std::vector<std::int32_t> renumber(n, -1);
  code.clear();
  std::int32_t next = 0;
  for (auto [in, block] : kept) {
    if (!live[static_cast<std::size_t>(in.out)]) continue;
    for (std::int32_t& a : in.args)
      if (a >= 0) a = renumber[static_cast<std::size_t>(a)];
    renumber[static_cast<std::size_t>(in.out)] = next;
    in.out = next++;
    code.push_back({in, block});
  }
  for (ProgramOutput& o : program.outputs) o.reg = renumber[static_cast<std::size_t>(o.reg)];
  for (ReduceStage& st : program.anchor.stages)
    st.input = renumber[static_cast<std::size_t>(st.input)];
  program.num_registers = next;
  set_code(program, code);
}

void merge_equal_scalars(FusedProgram& program, std::span<const std::uint8_t> classes) {
  for (std::vector<Instruction>* block : program.blocks())
    for (Instruction& in : *block)
      if (in.kind == InstrKind::kScalar && static_cast<std::size_t>(in.index) < classes.size())
        in.index = classes[static_cast<std::size_t>(in.index)];
  simplify(program);
}

void multiply_by_exact_reciprocals(FusedProgram& program, std::uint64_t exact_reciprocals) {
  std::vector<std::int32_t> scalar_of(static_cast<std::size_t>(program.num_registers), -1);
  std::vector<Tagged> code = code_of(program);
  std::vector<Tagged> body;
  body.reserve(code.size() + 4);
  for (auto [in, block] : code) {
    if (in.kind == InstrKind::kScalar) scalar_of[static_cast<std::size_t>(in.out)] = in.index;
    if (in.kind == InstrKind::kOp && in.op == core::OpKind::kDiv && in.type == ValueType::kFloat) {
      const std::int32_t s = scalar_of[static_cast<std::size_t>(in.args[1])];
      if (s >= 0 && s < 64 && (exact_reciprocals >> s & 1)) {
        Instruction recip{.kind = InstrKind::kOp,
                          .op = core::OpKind::kRecip,
                          .type = ValueType::kFloat,
                          .out = program.num_registers++,
                          .args = {in.args[1], -1, -1}};
        body.push_back({recip, block});
        in.op = core::OpKind::kMul;
        in.args[1] = recip.out;
      }
    }
    body.push_back({in, block});
  }
  set_code(program, body);
  simplify(program);
}

}  // namespace streamfuse::jit

#include "fusion/builders/elementwise/builder.h"

#include <algorithm>

#include "jit/op_instructions.h"
#include "jit/program_optimizer.h"

namespace streamfuse::fusion {

using jit::InstrKind;
using jit::Instruction;
using jit::ValueType;
using core::OpCategory;
using core::OpDesc;
using core::TensorId;

namespace {

std::int64_t bytes_of(const core::TensorDesc& d) {
  return d.shape.numel() * static_cast<std::int64_t>(element_size(d.dtype));
}

}  // namespace

void ElementwiseBuilder::reset() {
  status_ = BuilderStatus::kOpen;
  len_ = 0;
  unfused_bytes_ = 0;
  values_.clear();
  order_.clear();
  groups_.clear();
}

void ElementwiseBuilder::register_op(const core::OpDesc& relative, const core::OpDesc& global) {
  if (status_ == BuilderStatus::kClosed) return;
  if (!accept(relative, global)) {
    status_ = BuilderStatus::kClosed;
    return;
  }
  ++len_;
}

ElementwiseBuilder::Value& ElementwiseBuilder::value(core::TensorId id, const core::TensorDesc& real,
                                                     TensorSource source) {
  auto [it, inserted] = values_.try_emplace(id);
  if (inserted) {
    it->second.dtype = real.dtype;
    it->second.bytes = bytes_of(real);
    it->second.source = source;
    order_.push_back(id);
  }
  return it->second;
}

bool ElementwiseBuilder::accept(const core::OpDesc& rel, const core::OpDesc& real) {
  const auto j = static_cast<std::uint32_t>(len_);
  const core::OpCategory category = core::op_category(rel.kind);
  if (category == core::OpCategory::kLifetime) {
    value(rel.inputs[0].id, real.inputs[0], {j, 0}).dies = true;
    return true;
  }
  if (rel.kind == core::OpKind::kFull) {
    Value& v = value(rel.outputs[0].id, real.outputs[0], {j, -1});
    v.origin = Origin::kConstant;
    v.shape = rel.outputs[0].shape;
    v.constant = {j, 0};
    unfused_bytes_ += v.bytes;
    return true;
  }
  if (!core::is_elementwise(rel.kind)) return false;
  const std::int32_t g = choose_group(rel);
  if (g < 0) return false;
  {  // every input may be a new load and the output a new store: stay within a kernel's operands
    const Group& group = groups_[static_cast<std::size_t>(g)];
    if (group.inputs.size() + group.produced.size() + rel.inputs.size() + 1 > kMaxKernelOperands)
      return false;
  }
  value(rel.outputs[0].id, real.outputs[0], {j, -1});  // new: every op makes a new tensor
  for (std::size_t k = 0; k < rel.inputs.size(); ++k) {
    Value& v = value(rel.inputs[k].id, real.inputs[k], {j, static_cast<std::int32_t>(k)});
    if (v.origin == Origin::kExternal) v.shape = rel.inputs[k].shape;
    unfused_bytes_ += v.bytes;
  }
  emit_op(groups_[static_cast<std::size_t>(g)], g, rel, j);
  for (const core::TensorDesc& in : rel.inputs) {
    Value& v = values_[in.id];
    v.last_reader = std::max(v.last_reader, g);
    if (in.status == core::TensorStatus::kReadWrite) v.dies = true;
  }
  unfused_bytes_ += values_[rel.outputs[0].id].bytes;
  return true;
}

std::int32_t ElementwiseBuilder::choose_group(const core::OpDesc& rel) {
  std::size_t first = 0;
  for (const core::TensorDesc& in : rel.inputs) {
    auto it = values_.find(in.id);
    if (it != values_.end() && it->second.origin == Origin::kGroup)
      first = std::max(first, static_cast<std::size_t>(it->second.group));
  }
  const Shape& shape = rel.outputs[0].shape;
  for (std::size_t g = first; g < groups_.size(); ++g)
    if (groups_[g].shape == shape) return static_cast<std::int32_t>(g);
  if (groups_.size() >= kMaxGroups) return -1;
  Group& group = groups_.emplace_back();
  group.shape = shape;
  group.shape_source = {static_cast<std::uint32_t>(len_), -1};
  return static_cast<std::int32_t>(groups_.size() - 1);
}

std::int32_t ElementwiseBuilder::emit(Group& g, Instruction in, ValueType result) {
  in.out = g.program.num_registers++;
  g.types.push_back(result);
  g.program.body.push_back(in);
  return in.out;
}

std::int32_t ElementwiseBuilder::scalar(Group& g, ScalarSource src, jit::ScalarArg arg) {
  const std::uint64_t key = (std::uint64_t{src.op} << 32) | (std::uint64_t{src.slot} << 8) |
                            (static_cast<std::uint64_t>(arg.mode) << 4) |
                            static_cast<std::uint64_t>(arg.type);
  if (auto it = g.scalar_regs.find(key); it != g.scalar_regs.end()) return it->second;
  Instruction in;
  in.kind = InstrKind::kScalar;
  in.type = arg.type;
  in.index = static_cast<std::int32_t>(g.scalars.size());
  g.scalars.push_back(src);
  g.program.scalars.push_back(arg);
  const std::int32_t r = emit(g, in, arg.type);
  g.scalar_regs.emplace(key, r);
  return r;
}

std::int32_t ElementwiseBuilder::operand(Group& g, std::int32_t gi, core::TensorId id, ValueType type) {
  std::int32_t r;
  if (auto it = g.regs.find(id); it != g.regs.end()) {
    r = it->second;
  } else {
    const Value& v = values_[id];
    if (v.origin == Origin::kConstant) {
      r = scalar(g, v.constant,
                 {jit::ScalarArg::Mode::kFill, jit::value_type_of(v.dtype), v.dtype});
    } else {  // an existing tensor, or one an earlier group stores
      Instruction load;
      load.kind = InstrKind::kLoad;
      load.type = jit::value_type_of(v.dtype);
      load.index = static_cast<std::int32_t>(g.inputs.size());
      g.inputs.push_back(id);
      g.program.inputs.push_back(v.dtype);
      r = emit(g, load, load.type);
    }
    g.regs.emplace(id, r);
  }
  (void)gi;
  if (g.types[static_cast<std::size_t>(r)] == type) return r;
  const std::uint64_t key = (static_cast<std::uint64_t>(r) << 8) | static_cast<std::uint64_t>(type);
  if (auto it = g.converted.find(key); it != g.converted.end()) return it->second;
  Instruction conv;
  conv.kind = InstrKind::kConvert;
  conv.type = type;
  conv.args[0] = r;
  const std::int32_t c = emit(g, conv, type);
  g.converted.emplace(key, c);
  return c;
}

void ElementwiseBuilder::emit_op(Group& g, std::int32_t gi, const core::OpDesc& rel, std::uint32_t j) {
  // The group's registers for the op's operands (loaded or converted once per group), and its
  // scalar arguments by source.
  struct GroupEmitter final : jit::OpEmitter {
    ElementwiseBuilder& b;
    Group& g;
    std::int32_t gi;
    const core::OpDesc& rel;
    std::uint32_t j;
    GroupEmitter(ElementwiseBuilder& b_, Group& g_, std::int32_t gi_, const core::OpDesc& rel_,
                 std::uint32_t j_)
        : b(b_), g(g_), gi(gi_), rel(rel_), j(j_) {}
    std::int32_t operand(std::size_t i, ValueType type) override {
      return b.operand(g, gi, rel.inputs[i].id, type);
    }
    std::int32_t scalar(const jit::ScalarArg& arg) override { return b.scalar(g, {j, 0}, arg); }
    std::int32_t emit(Instruction in, ValueType result) override { return b.emit(g, in, result); }
  } emitter(*this, g, gi, rel, j);
  const std::int32_t r = jit::emit_elementwise_op(rel, emitter);
  const core::TensorDesc& out = rel.outputs[0];
  Value& v = values_[out.id];
  v.origin = Origin::kGroup;
  v.group = gi;
  v.reg = r;
  v.dtype = out.dtype;
  v.shape = out.shape;
  g.regs[out.id] = r;
  g.produced.push_back(out.id);
}

bool ElementwiseBuilder::stored(const Value& v) const {
  if (v.origin == Origin::kConstant) return !v.dies;
  return v.origin == Origin::kGroup && (!v.dies || v.last_reader > v.group);
}

std::int64_t ElementwiseBuilder::score() const {
  std::int64_t fused = 0;
  for (const Group& g : groups_) {
    for (core::TensorId id : g.inputs) fused += values_.at(id).bytes;
    for (core::TensorId id : g.produced)
      if (stored(values_.at(id))) fused += values_.at(id).bytes;
  }
  for (const auto& [id, v] : values_)
    if (v.origin == Origin::kConstant && stored(v)) fused += v.bytes;
  return unfused_bytes_ - fused;
}

std::unique_ptr<Optimization> ElementwiseBuilder::build() const {
  std::vector<ElementwiseOptimization::Tensor> tensors;
  boost::unordered_flat_map<core::TensorId, std::uint32_t> index;
  auto tensor_index = [&](core::TensorId id) {
    auto [it, inserted] = index.try_emplace(id, static_cast<std::uint32_t>(tensors.size()));
    if (inserted) {
      const Value& v = values_.at(id);
      tensors.push_back({v.source, v.origin != Origin::kExternal && !v.dies,
                         v.origin == Origin::kExternal && v.dies});
    }
    return it->second;
  };

  std::vector<ElementwiseKernel> kernels;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    ElementwiseKernel k;
    k.program = g.program;
    k.shape_source = g.shape_source;
    std::vector<bool> lent(g.inputs.size(), false);
    for (core::TensorId id : g.produced) {
      const Value& v = values_.at(id);
      if (!stored(v) || v.group != static_cast<std::int32_t>(gi)) continue;
      k.program.outputs.push_back({v.reg, v.dtype});
      k.outputs.push_back(tensor_index(id));
      std::int32_t lend = -1;
      for (std::size_t in = 0; in < g.inputs.size() && lend < 0; ++in) {
        const Value& src = values_.at(g.inputs[in]);
        if (!lent[in] && src.origin == Origin::kExternal && src.dies &&
            src.last_reader == static_cast<std::int32_t>(gi) && src.dtype == v.dtype &&
            src.shape == v.shape) {
          lent[in] = true;
          lend = static_cast<std::int32_t>(in);
        }
      }
      k.lend.push_back(lend);
    }
    if (k.outputs.empty()) continue;  // nothing of this group is needed
    for (core::TensorId id : g.inputs) k.inputs.push_back(tensor_index(id));
    k.scalars = g.scalars;
    jit::simplify(k.program);
    k.facts = jit::ProgramFacts::of(k.program);
    kernels.push_back(std::move(k));
  }
  // A constant a handle still holds is written by a kernel of its own.
  for (core::TensorId id : order_) {
    const Value& v = values_.at(id);
    if (v.origin != Origin::kConstant || !stored(v)) continue;
    ElementwiseKernel k;
    k.shape_source = v.source;
    k.program.scalars.push_back(
        {jit::ScalarArg::Mode::kFill, jit::value_type_of(v.dtype), v.dtype});
    Instruction s;
    s.kind = InstrKind::kScalar;
    s.type = jit::value_type_of(v.dtype);
    s.out = 0;
    k.program.body.push_back(s);
    k.program.num_registers = 1;
    k.program.outputs.push_back({0, v.dtype});
    k.scalars.push_back(v.constant);
    k.outputs.push_back(tensor_index(id));
    k.lend.push_back(-1);
    k.facts = jit::ProgramFacts::of(k.program);
    kernels.push_back(std::move(k));
  }
  for (core::TensorId id : order_) {  // drops of tensors nothing here read still erase them
    const Value& v = values_.at(id);
    if (v.origin == Origin::kExternal && v.dies) tensor_index(id);
  }
  return std::make_unique<ElementwiseOptimization>(len_, std::move(tensors), std::move(kernels));
}

}  // namespace streamfuse::fusion

#include "fusion/trace.h"

#include <algorithm>

#include "jit/op_instructions.h"
#include "jit/program_optimizer.h"

namespace streamfuse::fusion {

using jit::InstrKind;
using jit::Instruction;
using jit::ValueType;

std::array<std::int64_t, kMaxRank> indexed_source_strides(
    const core::OpDesc& op, const std::array<std::int64_t, kMaxRank>& x) {
  const int axis = op.attrs.axis;
  std::array<std::int64_t, kMaxRank> s{};
  if (op.kind == core::OpKind::kGather) {
    s = x;
    s[static_cast<std::size_t>(axis)] = 0;
    return s;
  }
  std::size_t o = 0;
  for (int d = 0; d < axis; ++d) s[o++] = x[static_cast<std::size_t>(d)];
  o += static_cast<std::size_t>(op.inputs[1].shape.rank());  // the indices' dimensions: 0
  for (int d = axis + 1; d < op.inputs[0].shape.rank(); ++d)
    s[o++] = x[static_cast<std::size_t>(d)];
  return s;
}

std::array<std::int64_t, kMaxRank> indexed_indices_strides(
    const core::OpDesc& op, const std::array<std::int64_t, kMaxRank>& indices) {
  if (op.kind == core::OpKind::kGather) return indices;  // of the result's shape
  std::array<std::int64_t, kMaxRank> s{};
  for (int d = 0; d < op.inputs[1].shape.rank(); ++d)
    s[static_cast<std::size_t>(op.attrs.axis + d)] = indices[static_cast<std::size_t>(d)];
  return s;
}

std::int64_t scored_bytes(const core::TensorDesc& d) {
  return std::max<std::int64_t>(d.shape.numel(), 1) *
         static_cast<std::int64_t>(element_size(d.dtype));
}

void Trace::reset() {
  unfused_bytes_ = 0;
  values_.clear();
  order_.clear();
  blocks_.clear();
}

Trace::Value& Trace::value(core::TensorId id, const core::TensorDesc& real, TensorSource source) {
  auto [it, inserted] = values_.try_emplace(id);
  if (inserted) {
    it->second.dtype = real.dtype;
    it->second.bytes = scored_bytes(real);
    it->second.source = source;
    order_.push_back(id);
  }
  return it->second;
}

bool Trace::may_start_with(core::OpKind kind) const {
  if (kind == core::OpKind::kIndexSelect || kind == core::OpKind::kGather)
    return limits_.indexed_reads;
  return kind == core::OpKind::kFull || core::is_elementwise(kind);
}

bool Trace::take(const core::OpDesc& rel, const core::OpDesc& real, std::uint32_t index) {
  const core::OpCategory category = core::op_category(rel.kind);
  if (category == core::OpCategory::kLifetime) {
    value(rel.inputs[0].id, real.inputs[0], {index, 0}).dies = true;
    return true;
  }
  if (rel.kind == core::OpKind::kFull) {
    Value& v = value(rel.outputs[0].id, real.outputs[0], {index, -1});
    v.origin = Origin::kConstant;
    v.shape = rel.outputs[0].shape;
    v.constant = {index, 0};
    unfused_bytes_ += v.bytes;
    return true;
  }
  if (rel.kind == core::OpKind::kIndexSelect || rel.kind == core::OpKind::kGather)
    return limits_.indexed_reads && take_indexed(rel, real, index);
  if (!core::is_elementwise(rel.kind)) return false;
  const std::int32_t bi = choose_block(rel, index);
  if (bi < 0) return false;
  {  // every input may be a new load and the output a new store: stay within a kernel's operands
    const Block& b = blocks_[static_cast<std::size_t>(bi)];
    if (b.inputs.size() + b.produced.size() + rel.inputs.size() + 1 > limits_.max_block_operands)
      return false;
  }
  note_operands(rel, real, index);
  emit_op(blocks_[static_cast<std::size_t>(bi)], bi, rel, index);
  read_by(rel, bi);
  unfused_bytes_ += values_[rel.outputs[0].id].bytes;
  return true;
}

std::int32_t Trace::choose_block(const core::OpDesc& rel, std::uint32_t index) {
  std::size_t first = 0;
  for (const core::TensorDesc& in : rel.inputs) {
    auto it = values_.find(in.id);
    if (it != values_.end() && it->second.origin == Origin::kBlock)
      first = std::max(first, static_cast<std::size_t>(it->second.block));
  }
  return block_for(rel.outputs[0].shape, first, index);
}

std::int32_t Trace::block_for(const Shape& shape, std::size_t first, std::uint32_t index) {
  for (std::size_t b = first; b < blocks_.size(); ++b)
    if (blocks_[b].shape == shape) return static_cast<std::int32_t>(b);
  if (blocks_.size() >= limits_.max_blocks) return -1;
  Block& block = blocks_.emplace_back();
  block.shape = shape;
  block.shape_source = {index, -1};
  return static_cast<std::int32_t>(blocks_.size() - 1);
}

bool Trace::take_indexed(const core::OpDesc& rel, const core::OpDesc& real, std::uint32_t index) {
  // The source and the indices are read from memory: a value of this segment must be stored by
  // an earlier block (one the result's block runs after); a constant nothing stores is not.
  std::size_t first = 0;
  for (const core::TensorDesc& in : rel.inputs) {
    auto it = values_.find(in.id);
    if (it == values_.end()) continue;
    if (it->second.origin == Origin::kConstant) return false;
    if (it->second.origin == Origin::kBlock)
      first = std::max(first, static_cast<std::size_t>(it->second.block) + 1);
  }
  const std::int32_t bi = block_for(rel.outputs[0].shape, first, index);
  if (bi < 0) return false;
  {
    const Block& b = blocks_[static_cast<std::size_t>(bi)];
    if (b.indexed.size() >= kMaxIndexedReads ||
        b.inputs.size() + b.produced.size() + 3 > limits_.max_block_operands)
      return false;
  }
  Block& b = blocks_[static_cast<std::size_t>(bi)];
  note_operands(rel, real, index);
  // Both operands are inputs of their own (views, never in b.regs: a plain read of the same
  // tensor is another input).
  const auto view_input = [&](const core::TensorDesc& t) {
    b.inputs.push_back(t.id);
    b.program.inputs.push_back(t.dtype);
    return static_cast<std::uint32_t>(b.inputs.size() - 1);
  };
  IndexedRead read;
  read.op = index;
  read.indices = view_input(rel.inputs[1]);
  Instruction load;
  load.kind = InstrKind::kLoad;
  load.type = jit::value_type_of(rel.inputs[1].dtype);
  load.index = static_cast<std::int32_t>(read.indices);
  const std::int32_t at = emit(b, load, load.type);
  read.stride = static_cast<std::uint32_t>(b.scalars.size());
  const jit::ScalarArg stride_arg{jit::ScalarArg::Mode::kOperand, ValueType::kI64, kF32};
  b.scalars.push_back({index, 0});
  b.program.scalars.push_back(stride_arg);
  Instruction stride;
  stride.kind = InstrKind::kScalar;
  stride.type = ValueType::kI64;
  stride.index = static_cast<std::int32_t>(read.stride);
  const std::int32_t by = emit(b, stride, ValueType::kI64);
  read.source = view_input(rel.inputs[0]);
  Instruction gather;
  gather.kind = InstrKind::kLoadAt;
  gather.type = jit::value_type_of(rel.inputs[0].dtype);
  gather.index = static_cast<std::int32_t>(read.source);
  gather.args[0] = at;
  gather.args[1] = by;
  const std::int32_t r = emit(b, gather, gather.type);
  b.indexed.push_back(read);

  produce(b, bi, rel.outputs[0], r);
  read_by(rel, bi);
  unfused_bytes_ += values_[rel.outputs[0].id].bytes;
  return true;
}

void Trace::note_operands(const core::OpDesc& rel, const core::OpDesc& real, std::uint32_t index) {
  value(rel.outputs[0].id, real.outputs[0], {index, -1});  // new: every op makes a new tensor
  for (std::size_t k = 0; k < rel.inputs.size(); ++k) {
    Value& v = value(rel.inputs[k].id, real.inputs[k], {index, static_cast<std::int32_t>(k)});
    if (v.origin == Origin::kExternal) v.shape = rel.inputs[k].shape;
    unfused_bytes_ += v.bytes;  // each read of an op unfused
  }
}

void Trace::produce(Block& b, std::int32_t bi, const core::TensorDesc& out, std::int32_t reg) {
  Value& v = values_[out.id];
  v.origin = Origin::kBlock;
  v.block = bi;
  v.reg = reg;
  v.dtype = out.dtype;
  v.shape = out.shape;
  b.regs[out.id] = reg;
  b.produced.push_back(out.id);
}

void Trace::read_by(const core::OpDesc& rel, std::int32_t bi) {
  for (const core::TensorDesc& in : rel.inputs) {
    Value& v = values_[in.id];
    v.last_reader = std::max(v.last_reader, bi);
    if (in.status == core::TensorStatus::kReadWrite) v.dies = true;
  }
}

std::int32_t Trace::emit(Block& b, Instruction in, ValueType result) {
  in.out = b.program.num_registers++;
  b.types.push_back(result);
  b.program.prologue.push_back(in);
  return in.out;
}

std::int32_t Trace::scalar(Block& b, ScalarSource src, jit::ScalarArg arg) {
  const std::uint64_t key = (std::uint64_t{src.op} << 32) | (std::uint64_t{src.slot} << 8) |
                            (static_cast<std::uint64_t>(arg.mode) << 4) |
                            static_cast<std::uint64_t>(arg.type);
  if (auto it = b.scalar_regs.find(key); it != b.scalar_regs.end()) return it->second;
  Instruction in;
  in.kind = InstrKind::kScalar;
  in.type = arg.type;
  in.index = static_cast<std::int32_t>(b.scalars.size());
  b.scalars.push_back(src);
  b.program.scalars.push_back(arg);
  const std::int32_t r = emit(b, in, arg.type);
  b.scalar_regs.emplace(key, r);
  return r;
}

std::int32_t Trace::operand(Block& b, core::TensorId id, ValueType type) {
  std::int32_t r;
  if (auto it = b.regs.find(id); it != b.regs.end()) {
    r = it->second;
  } else {
    const Value& v = values_[id];
    if (v.origin == Origin::kConstant) {
      r = scalar(b, v.constant,
                 {jit::ScalarArg::Mode::kFill, jit::value_type_of(v.dtype), v.dtype});
    } else {  // an existing tensor, or one an earlier block stores
      Instruction load;
      load.kind = InstrKind::kLoad;
      load.type = jit::value_type_of(v.dtype);
      load.index = static_cast<std::int32_t>(b.inputs.size());
      b.inputs.push_back(id);
      b.program.inputs.push_back(v.dtype);
      r = emit(b, load, load.type);
    }
    b.regs.emplace(id, r);
  }
  if (b.types[static_cast<std::size_t>(r)] == type) return r;
  const std::uint64_t key = (static_cast<std::uint64_t>(r) << 8) | static_cast<std::uint64_t>(type);
  if (auto it = b.converted.find(key); it != b.converted.end()) return it->second;
  Instruction conv;
  conv.kind = InstrKind::kConvert;
  conv.type = type;
  conv.args[0] = r;
  const std::int32_t c = emit(b, conv, type);
  b.converted.emplace(key, c);
  return c;
}

void Trace::emit_op(Block& b, std::int32_t bi, const core::OpDesc& rel, std::uint32_t index) {
  // The block's registers for the op's operands (loaded or converted once per block), and its
  // scalar arguments by source.
  struct BlockEmitter final : jit::OpEmitter {
    Trace& trace;
    Block& b;
    const core::OpDesc& rel;
    std::uint32_t index;
    BlockEmitter(Trace& t, Block& b_, const core::OpDesc& r, std::uint32_t i)
        : trace(t), b(b_), rel(r), index(i) {}
    std::int32_t operand(std::size_t i, ValueType type) override {
      return trace.operand(b, rel.inputs[i].id, type);
    }
    std::int32_t scalar(const jit::ScalarArg& arg) override {
      return trace.scalar(b, {index, 0}, arg);
    }
    std::int32_t emit(Instruction in, ValueType result) override {
      return trace.emit(b, in, result);
    }
  } emitter(*this, b, rel, index);
  produce(b, bi, rel.outputs[0], jit::emit_elementwise_op(rel, emitter));
}

bool Trace::stored(const Value& v) const {
  if (v.origin == Origin::kConstant) return !v.dies;
  return v.origin == Origin::kBlock && (!v.dies || v.last_reader > v.block);
}

std::int64_t Trace::saved_bytes() const {
  std::int64_t fused = 0;
  for (const Block& b : blocks_) {
    for (core::TensorId id : b.inputs) fused += values_.at(id).bytes;
    for (core::TensorId id : b.produced)
      if (stored(values_.at(id))) fused += values_.at(id).bytes;
  }
  for (const auto& [id, v] : values_)
    if (v.origin == Origin::kConstant && stored(v)) fused += v.bytes;
  return unfused_bytes_ - fused;
}

TraceResult Trace::finish() const {
  TraceResult result;
  boost::unordered_flat_map<core::TensorId, std::uint32_t> index;
  auto tensor_index = [&](core::TensorId id) {
    auto [it, inserted] = index.try_emplace(id, static_cast<std::uint32_t>(result.tensors.size()));
    if (inserted) {
      const Value& v = values_.at(id);
      result.tensors.push_back({v.source, v.origin != Origin::kExternal && !v.dies,
                                v.origin == Origin::kExternal && v.dies});
    }
    return it->second;
  };

  for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
    const Block& b = blocks_[bi];
    TracedBlock k;
    k.program = b.program;
    k.shape_source = b.shape_source;
    std::vector<bool> lent(b.inputs.size(), false);
    for (core::TensorId id : b.produced) {
      const Value& v = values_.at(id);
      if (!stored(v) || v.block != static_cast<std::int32_t>(bi)) continue;
      k.program.outputs.push_back({v.reg, v.dtype});
      k.outputs.push_back(tensor_index(id));
      std::int32_t lend = -1;
      for (std::size_t in = 0; in < b.inputs.size() && lend < 0; ++in) {
        const Value& src = values_.at(b.inputs[in]);
        // A view of an indexed read, or a tensor read at indices anywhere in the block: an
        // output written over it could change elements still to be read.
        const bool viewed =
            std::any_of(b.indexed.begin(), b.indexed.end(), [&](const IndexedRead& r) {
              return r.indices == in || b.inputs[r.source] == b.inputs[in];
            });
        if (!viewed && !lent[in] && src.origin == Origin::kExternal && src.dies &&
            src.last_reader == static_cast<std::int32_t>(bi) && src.dtype == v.dtype &&
            src.shape == v.shape) {
          lent[in] = true;
          lend = static_cast<std::int32_t>(in);
        }
      }
      k.lend.push_back(lend);
    }
    if (k.outputs.empty()) continue;  // nothing of this block is needed
    for (core::TensorId id : b.inputs) k.inputs.push_back(tensor_index(id));
    k.scalars = b.scalars;
    k.indexed = b.indexed;
    jit::simplify(k.program);
    k.facts = jit::ProgramFacts::of(k.program);
    result.blocks.push_back(std::move(k));
  }
  // A constant a handle still holds is written by a block of its own.
  for (core::TensorId id : order_) {
    const Value& v = values_.at(id);
    if (v.origin != Origin::kConstant || !stored(v)) continue;
    TracedBlock k;
    k.shape_source = v.source;
    k.program.scalars.push_back(
        {jit::ScalarArg::Mode::kFill, jit::value_type_of(v.dtype), v.dtype});
    Instruction s;
    s.kind = InstrKind::kScalar;
    s.type = jit::value_type_of(v.dtype);
    s.out = 0;
    k.program.prologue.push_back(s);
    k.program.num_registers = 1;
    k.program.outputs.push_back({0, v.dtype});
    k.scalars.push_back(v.constant);
    k.outputs.push_back(tensor_index(id));
    k.lend.push_back(-1);
    k.facts = jit::ProgramFacts::of(k.program);
    result.blocks.push_back(std::move(k));
  }
  for (core::TensorId id : order_) {  // drops of tensors nothing here read still erase them
    const Value& v = values_.at(id);
    if (v.origin == Origin::kExternal && v.dies) tensor_index(id);
  }
  return result;
}

}  // namespace streamfuse::fusion

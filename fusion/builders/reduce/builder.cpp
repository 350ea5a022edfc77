#include "fusion/builders/reduce/builder.h"

#include <algorithm>

#include "backends/cpu/kernels/layout.h"
#include "fusion/builders/reduce/optimization.h"
#include "fusion/builders/reduce/reduced_shape.h"
#include "jit/op_instructions.h"
#include "jit/program_optimizer.h"
#include "streamfuse/error.h"

namespace streamfuse::fusion {

using jit::InstrKind;
using jit::Instruction;
using jit::ValueType;

namespace {

// A row whose values (every input, per element) take more bytes than this is read from memory
// again by each pass over it (a stage's, and the outputs'); one that fits is read once.
constexpr std::int64_t kRowCacheBytes = 512 * 1024;

}  // namespace

void ReduceBuilder::reset() { *this = ReduceBuilder(); }

ReduceBuilder::Value& ReduceBuilder::value(const core::TensorDesc& rel,
                                           const core::TensorDesc& real, TensorSource source) {
  auto [it, inserted] = values_.try_emplace(rel.id);
  if (inserted) {
    it->second.dtype = real.dtype;
    it->second.bytes = scored_bytes(real);
    it->second.shape = rel.shape;
    it->second.source = source;
    order_.push_back(rel.id);
  }
  return it->second;
}

void ReduceBuilder::register_op(const core::OpDesc& relative, const core::OpDesc& global) {
  if (status_ == BuilderStatus::kClosed) return;
  if (!take(relative, global)) {
    status_ = BuilderStatus::kClosed;
    return;
  }
  ++len_;
}

bool ReduceBuilder::may_start_with(core::OpKind kind) const {
  return core::op_category(kind) == core::OpCategory::kReduce || kind == core::OpKind::kFull ||
         core::is_elementwise(kind);
}

bool ReduceBuilder::take(const core::OpDesc& rel, const core::OpDesc& real) {
  const auto index = static_cast<std::uint32_t>(len_);
  switch (core::op_category(rel.kind)) {
    case core::OpCategory::kLifetime:
      value(rel.inputs[0], real.inputs[0], {index, 0}).dies = true;
      return true;
    case core::OpCategory::kReduce:
      return take_reduce(rel, real);
    case core::OpCategory::kCreation:
      return rel.kind == core::OpKind::kFull && take_full(rel, real);
    default:
      return core::is_elementwise(rel.kind) && take_elementwise(rel, real);
  }
}

bool ReduceBuilder::row_broadcasts(const Shape& s) const {
  // Aligned from the right with S, each dimension is S's, or of size 1 where it is the axis (a
  // missing leading dimension counts as size 1).
  if (s.rank() > shape_.rank()) return false;
  const int pad = shape_.rank() - s.rank();
  const int axis = program_.anchor.axis;
  for (int d = 0; d < shape_.rank(); ++d) {
    const std::int64_t size = d < pad ? 0 : s[d - pad];
    const bool reduced = axis == core::kAllAxes || d == axis;
    if (size != (reduced ? 0 : shape_[d])) return false;
  }
  return true;
}

bool ReduceBuilder::operand_limit_reached(std::size_t more) const {
  std::size_t made = 0;
  for (const auto& [id, v] : values_)
    if (v.level != Level::kExternal) ++made;
  return inputs_.size() + made + more > static_cast<std::size_t>(backends::cpu::kMaxOperands);
}

std::int32_t ReduceBuilder::emit(bool per_row, Instruction in, ValueType type) {
  in.out = program_.num_registers++;
  types_.push_back(type);
  per_row_.push_back(per_row);
  (per_row ? program_.epilogue : program_.prologue).push_back(in);
  return in.out;
}

std::int32_t ReduceBuilder::operand(bool per_row, core::TensorId id, ValueType type) {
  Value& v = values_.at(id);
  std::int32_t r = v.reg;
  if (v.level == Level::kExternal) {
    std::int32_t& load = v.loads[per_row ? 1 : 0];
    if (load < 0) {
      Instruction in;
      in.kind = InstrKind::kLoad;
      in.type = jit::value_type_of(v.dtype);
      in.index = static_cast<std::int32_t>(inputs_.size());
      inputs_.push_back(id);
      program_.inputs.push_back(v.dtype);
      load = emit(per_row, in, in.type);
    }
    r = load;
  }
  if (types_[static_cast<std::size_t>(r)] == type) return r;
  const std::uint64_t key = (static_cast<std::uint64_t>(r) << 8) | static_cast<std::uint64_t>(type);
  if (auto it = converted_.find(key); it != converted_.end()) return it->second;
  Instruction conv;
  conv.kind = InstrKind::kConvert;
  conv.type = type;
  conv.args[0] = r;
  // At the level of the value converted: a per-row value is converted once per row.
  const std::int32_t c = emit(per_row_[static_cast<std::size_t>(r)], conv, type);
  converted_.emplace(key, c);
  return c;
}

std::int32_t ReduceBuilder::scalar(TensorSource op_source, jit::ScalarArg arg) {
  const std::uint64_t key = (std::uint64_t{op_source.op} << 16) |
                            (static_cast<std::uint64_t>(arg.mode) << 8) |
                            static_cast<std::uint64_t>(arg.type);
  if (auto it = scalar_regs_.find(key); it != scalar_regs_.end()) return it->second;
  Instruction in;
  in.kind = InstrKind::kScalar;
  in.type = arg.type;
  in.index = static_cast<std::int32_t>(scalars_.size());
  scalars_.push_back({op_source.op, 0});
  program_.scalars.push_back(arg);
  // Scalars are per-row code: every element and row reads them.
  const std::int32_t r = emit(true, in, arg.type);
  scalar_regs_.emplace(key, r);
  return r;
}

// A constant is a scalar argument wherever it is read (of any shape: the same value everywhere);
// one a handle still holds is written as an output, so it must then have the shape the rows are
// cut from or the reduced shape (see storable()).
bool ReduceBuilder::take_full(const core::OpDesc& rel, const core::OpDesc& real) {
  const auto index = static_cast<std::uint32_t>(len_);
  if (operand_limit_reached(1)) return false;
  Value& v = value(rel.outputs[0], real.outputs[0], {index, -1});
  v.level = Level::kConstant;
  const DType dtype = rel.outputs[0].dtype;
  v.reg = scalar({index, -1}, {jit::ScalarArg::Mode::kFill, jit::value_type_of(dtype), dtype});
  unfused_bytes_ += v.bytes;
  return true;
}

bool ReduceBuilder::take_elementwise(const core::OpDesc& rel, const core::OpDesc& real) {
  const auto index = static_cast<std::uint32_t>(len_);
  const Shape& out = rel.outputs[0].shape;
  bool per_row = false;
  if (!anchored_) {
    if (!has_shape_) {  // the first op fixes S
      has_shape_ = true;
      shape_ = out;
      shape_source_ = {index, -1};
    } else if (out != shape_) {
      return false;
    }
  } else if (out == shape_) {
    per_row = false;
  } else if (is_reduced_shape(out, shape_, program_.anchor.axis)) {
    per_row = true;
  } else {
    return false;
  }
  for (std::size_t k = 0; k < rel.inputs.size(); ++k) {
    auto it = values_.find(rel.inputs[k].id);
    if (it == values_.end() || it->second.level == Level::kExternal) {
      // An input read per row must not vary along the axis, and where the row shape drops the
      // axis only a single value aligns with S the same way.
      if (per_row && out.rank() != shape_.rank())
        for (std::int64_t d : rel.inputs[k].shape)
          if (d != 0) return false;
      continue;
    }
    const Value& v = it->second;
    if (v.level == Level::kConstant) continue;  // the same value everywhere
    if (per_row && (v.level != Level::kRow || v.shape != out)) return false;
    if (!per_row && v.level == Level::kRow && !row_broadcasts(v.shape)) return false;
  }
  if (operand_limit_reached(rel.inputs.size() + 1)) return false;

  for (std::size_t k = 0; k < rel.inputs.size(); ++k) {
    Value& v = value(rel.inputs[k], real.inputs[k], {index, static_cast<std::int32_t>(k)});
    unfused_bytes_ += v.bytes;
  }
  struct Emitter final : jit::OpEmitter {
    ReduceBuilder& b;
    const core::OpDesc& rel;
    std::uint32_t index;
    bool per_row;
    Emitter(ReduceBuilder& b_, const core::OpDesc& r, std::uint32_t i, bool row)
        : b(b_), rel(r), index(i), per_row(row) {}
    std::int32_t operand(std::size_t i, ValueType type) override {
      return b.operand(per_row, rel.inputs[i].id, type);
    }
    std::int32_t scalar(const jit::ScalarArg& arg) override { return b.scalar({index, 0}, arg); }
    std::int32_t emit(Instruction in, ValueType result) override {
      return b.emit(per_row, in, result);
    }
  } emitter(*this, rel, index, per_row);
  const std::int32_t r = jit::emit_elementwise_op(rel, emitter);
  Value& v = value(rel.outputs[0], real.outputs[0], {index, -1});
  v.level = per_row ? Level::kRow : Level::kElement;
  v.reg = r;
  unfused_bytes_ += v.bytes;
  for (const core::TensorDesc& in : rel.inputs)
    if (in.status == core::TensorStatus::kReadWrite) values_.at(in.id).dies = true;
  return true;
}

bool ReduceBuilder::take_reduce(const core::OpDesc& rel, const core::OpDesc& real) {
  const auto index = static_cast<std::uint32_t>(len_);
  const core::TensorDesc& in = rel.inputs[0];
  if (auto it = values_.find(in.id); it != values_.end() && it->second.level == Level::kRow)
    return false;  // a reduction of reduced values: another shape
  if (!anchored_) {
    if (has_shape_ && in.shape != shape_) return false;
    // Rows along an axis with dimensions of more than one element after it are strided in a
    // contiguous tensor: kernels walk them by column tiles (jit/reduce_layout.h), as the unfused
    // reduction accumulates neighbouring rows together.
    has_shape_ = true;
    shape_ = in.shape;
    shape_source_ = {index, 0};
    program_.anchor.kind = jit::AnchorKind::kReduce;
    program_.anchor.axis = rel.attrs.axis;
    const Shape& s = real.inputs[0].shape;
    row_len_ = rel.attrs.axis == core::kAllAxes ? s.numel() : s[rel.attrs.axis];
  } else if (in.shape != shape_ || rel.attrs.axis != program_.anchor.axis ||
             program_.anchor.stages.size() >= jit::kMaxReduceStages) {
    return false;
  }
  if (operand_limit_reached(2)) return false;
  anchored_ = true;

  Value& v = value(in, real.inputs[0], {index, 0});
  unfused_bytes_ += v.bytes;
  jit::ReduceStage stage;
  stage.op = rel.kind;
  stage.dtype = in.dtype;
  stage.input = operand(false, in.id, jit::value_type_of(in.dtype));
  program_.anchor.stages.push_back(stage);
  if (in.status == core::TensorStatus::kReadWrite) v.dies = true;

  const DType out = rel.outputs[0].dtype;
  Instruction reduced;
  reduced.kind = InstrKind::kReduced;
  reduced.type = jit::value_type_of(out);
  reduced.index = static_cast<std::int32_t>(program_.anchor.stages.size() - 1);
  std::int32_t r = emit(true, reduced, reduced.type);
  if (jit::rounds_in_registers(out)) {  // registers hold what an unfused op stores
    Instruction round;
    round.kind = InstrKind::kRound;
    round.type = reduced.type;
    round.round = out;
    round.args[0] = r;
    r = emit(true, round, round.type);
  }
  Value& result = value(rel.outputs[0], real.outputs[0], {index, -1});
  result.level = Level::kRow;
  result.reg = r;
  unfused_bytes_ += result.bytes;
  return true;
}

bool ReduceBuilder::storable() const {
  for (const auto& [id, v] : values_)
    if (v.level == Level::kConstant && !v.dies && v.shape != shape_ &&
        !is_reduced_shape(v.shape, shape_, program_.anchor.axis))
      return false;
  return true;
}

std::int64_t ReduceBuilder::score() const {
  // Nothing this builder does better than the element-wise one without a reduction; and a
  // constant a handle holds in a shape the kernel does not write is the element-wise builder's.
  if (!anchored_ || !storable()) return 0;
  std::int64_t read = 0, written = 0, element_read = 0;
  for (core::TensorId id : inputs_) {
    const Value& v = values_.at(id);
    read += v.bytes;
    if (v.loads[0] >= 0) element_read += v.bytes;
  }
  for (const auto& [id, v] : values_)
    if (v.level != Level::kExternal && !v.dies) written += v.bytes;
  // Rows too long for the cache are read again by every pass (each stage's, then the outputs').
  std::int64_t row_bytes = 0;
  for (core::TensorId id : inputs_) {
    const Value& v = values_.at(id);
    if (v.loads[0] >= 0) row_bytes += row_len_ * static_cast<std::int64_t>(element_size(v.dtype));
  }
  if (row_bytes > kRowCacheBytes)
    read += element_read * static_cast<std::int64_t>(program_.anchor.stages.size());
  return unfused_bytes_ - read - written;
}

std::unique_ptr<Optimization> ReduceBuilder::build() const {
  // Without a reduction there is no kernel to build (and score() is 0: the explorer never asks).
  if (!anchored_ || !storable())
    throw Error(
        "internal error: a reduce plan without a reduction, or with a constant it cannot "
        "write");
  TracedBlock k;
  k.program = program_;
  std::vector<TracedTensor> tensors;
  boost::unordered_flat_map<core::TensorId, std::uint32_t> index;
  auto tensor_index = [&](core::TensorId id) {
    auto [it, inserted] = index.try_emplace(id, static_cast<std::uint32_t>(tensors.size()));
    if (inserted) {
      const Value& v = values_.at(id);
      tensors.push_back({v.source, v.level != Level::kExternal && !v.dies,
                         v.level == Level::kExternal && v.dies});
    }
    return it->second;
  };
  for (core::TensorId id : order_) {
    const Value& v = values_.at(id);
    if (v.level == Level::kExternal || v.dies) continue;
    const bool per_row =
        v.level == Level::kRow || (v.level == Level::kConstant && v.shape != shape_);
    k.program.outputs.push_back({v.reg, v.dtype, per_row});
    k.outputs.push_back(tensor_index(id));
    k.lend.push_back(-1);
  }
  for (core::TensorId id : inputs_) k.inputs.push_back(tensor_index(id));
  for (core::TensorId id : order_) {  // drops of tensors nothing here reads still erase them
    const Value& v = values_.at(id);
    if (v.level == Level::kExternal && v.dies) tensor_index(id);
  }
  k.shape_source = shape_source_;
  k.scalars = scalars_;
  jit::simplify(k.program);
  k.facts = jit::ProgramFacts::of(k.program);
  return std::make_unique<ReduceOptimization>(len_, std::move(tensors), std::move(k));
}

}  // namespace streamfuse::fusion

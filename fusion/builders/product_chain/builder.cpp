#include "fusion/builders/product_chain/builder.h"

#include <algorithm>

#include "fusion/builders/product_chain/optimization.h"
#include "fusion/builders/reduce/optimization.h"
#include "fusion/trace.h"
#include "streamfuse/error.h"

namespace streamfuse::fusion {
namespace {

// A matrix product of two f32 operands into f32: what both of the chain's products are.
bool is_f32_product(const core::OpDesc& rel) {
  if (rel.kind != core::OpKind::kMatmul || rel.inputs.size() != 2 || rel.outputs.size() != 1 ||
      rel.attrs.dtype != kF32 || rel.outputs[0].dtype != kF32)
    return false;
  for (const core::TensorDesc& in : rel.inputs)
    if (in.dtype != kF32) return false;
  return true;
}

}  // namespace

void ProductChainBuilder::reset() {
  status_ = BuilderStatus::kOpen;
  phase_ = Phase::kFirst;
  len_ = middle_len_ = aside_ = lead_ = middle_fed_ = 0;
  relative_.clear();
  made_.clear();
  read_.clear();
  pending_.clear();
  middle_.reset();
  shape_ = Shape();
  product_ = weights_ = 0;
  product_input_ = -1;
  product_bytes_ = 0;
}

void ProductChainBuilder::register_op(const core::OpDesc& relative, const core::OpDesc& global) {
  if (status_ == BuilderStatus::kClosed) return;
  relative_.push_back(relative);
  bool taken = false;
  switch (phase_) {
    case Phase::kFirst:
      taken = take_first(relative, global);
      phase_ = Phase::kMiddle;
      break;
    case Phase::kMiddle:
      // Views of what exists (v's, as C++ may evaluate matmul's arguments right to left) before
      // the middle's first op.
      if (middle_fed_ == 0 && is_aside(relative)) {
        taken = takes_aside(relative);
        ++lead_;
        break;
      }
      ++middle_fed_;
      middle_.register_op(relative, global);
      if (middle_.status() == BuilderStatus::kOpen) return;
      // The op that closed it, and any it took past its longest kernel, are the second
      // product's to take.
      taken = middle_fits();
      phase_ = Phase::kSecond;
      for (std::size_t i = middle_first() + middle_len_; taken && i < relative_.size(); ++i)
        taken = phase_ == Phase::kSecond && take_second(relative_[i]);
      break;
    case Phase::kSecond:
      taken = take_second(relative);
      break;
    case Phase::kDrops:
      taken = take_drop(relative);
      break;
    case Phase::kDone:
      break;  // the chain ends once P and W are dead
  }
  if (!taken) status_ = BuilderStatus::kClosed;
}

bool ProductChainBuilder::batched_per_matrix(const core::OpDesc& op) const {
  const Shape& b = op.inputs[1].shape;
  const Shape& out = op.outputs[0].shape;
  if (out.rank() != shape_.rank() || b.rank() != shape_.rank()) return false;
  for (int d = 0; d + 2 < shape_.rank(); ++d)
    if (b[d] != shape_[d] || out[d] != shape_[d]) return false;
  return true;
}

bool ProductChainBuilder::take_first(const core::OpDesc& rel, const core::OpDesc& real) {
  if (!is_f32_product(rel)) return false;
  shape_ = rel.outputs[0].shape;
  // Size id 0 is one row (a decode step's): the few-row kernels' product, never tiled.
  if (shape_.rank() < 3 || shape_[shape_.rank() - 2] == 0 || !batched_per_matrix(rel)) return false;
  product_ = rel.outputs[0].id;
  product_bytes_ = scored_bytes(real.outputs[0]);
  made_.push_back(product_);
  for (const core::TensorDesc& in : rel.inputs) read_.push_back(in.id);
  return true;
}

bool ProductChainBuilder::middle_fits() {
  middle_len_ = middle_.len();
  // A score of 0: no kernel the reduce builder would build (no reduction taken).
  if (middle_len_ == 0 || middle_.score() <= 0) return false;
  const std::unique_ptr<Optimization> built = middle_.build();
  const auto* reduce = dynamic_cast<const ReduceOptimization*>(built.get());
  if (!reduce) return false;
  const TracedBlock& k = reduce->kernel();
  const jit::FusedProgram& p = k.program;
  // The middle's sources number its own ops: op 0 is the segment's op 1.
  const auto desc = [&](TensorSource s) -> const core::TensorDesc& {
    const core::OpDesc& op = relative_[middle_first() + s.op];
    return s.slot < 0 ? op.outputs[0] : op.inputs[static_cast<std::size_t>(s.slot)];
  };
  if (p.anchor.kind != jit::AnchorKind::kReduce || p.anchor.axis != shape_.rank() - 1 ||
      desc(k.shape_source).shape != shape_ || !k.indexed.empty() || k.outputs.size() != 1 ||
      p.outputs[0].per_row)
    return false;
  const core::TensorDesc& w = desc(reduce->tensors()[k.outputs[0]].source);
  if (w.dtype != kF32 || w.shape != shape_) return false;
  weights_ = w.id;
  // P is one of the kernel's inputs, and dies in it or at a drop after the chain (a variable's);
  // nothing but W is published.
  product_input_ = -1;
  for (std::size_t i = 0; i < k.inputs.size(); ++i)
    if (desc(reduce->tensors()[k.inputs[i]].source).id == product_)
      product_input_ = static_cast<int>(i);
  if (product_input_ < 0) return false;
  if (!reduce->tensors()[k.inputs[static_cast<std::size_t>(product_input_)]].erase)
    pending_.push_back(product_);
  for (const TracedTensor& t : reduce->tensors())
    if (t.publish && desc(t.source).id != weights_) return false;
  for (std::size_t i = middle_first(); i < middle_first() + middle_len_; ++i) {
    for (const core::TensorDesc& out : relative_[i].outputs) made_.push_back(out.id);
    for (const core::TensorDesc& in : relative_[i].inputs) read_.push_back(in.id);
  }
  return true;
}

bool ProductChainBuilder::made_in_chain(core::TensorId id) const {
  return std::find(made_.begin(), made_.end(), id) != made_.end();
}

bool ProductChainBuilder::take_second(const core::OpDesc& rel) {
  // Views and drops of what exists before the chain (attention's v, a view of the projection,
  // is recorded just before the product that reads it) run on their own first.
  if (is_aside(rel)) {
    if (!takes_aside(rel)) return false;
    ++aside_;
    return true;
  }
  phase_ = Phase::kDrops;
  if (!is_f32_product(rel)) return false;
  const core::TensorDesc& a = rel.inputs[0];
  if (a.id != weights_ || made_in_chain(rel.inputs[1].id) ||
      rel.outputs[0].shape.rank() != shape_.rank() || !batched_per_matrix(rel))
    return false;
  if (a.status != core::TensorStatus::kReadWrite) pending_.push_back(weights_);
  settle();
  return true;
}

bool ProductChainBuilder::takes_aside(const core::OpDesc& rel) {
  if (rel.kind == core::OpKind::kDrop) {  // run after the chain: a tensor may live longer
    const core::TensorId id = rel.inputs[0].id;
    if (std::find(pending_.begin(), pending_.end(), id) != pending_.end()) {
      std::erase(pending_, id);  // P, held by a variable until here
      return true;
    }
    return !made_in_chain(id);
  }
  // A view runs before the chain's ops: it may read nothing they make, nor be the last use of
  // something they read.
  for (const core::TensorDesc& in : rel.inputs)
    if (made_in_chain(in.id) || (in.status == core::TensorStatus::kReadWrite &&
                                 std::find(read_.begin(), read_.end(), in.id) != read_.end()))
      return false;
  return true;
}

bool ProductChainBuilder::is_aside(const core::OpDesc& rel) {
  const core::OpCategory category = core::op_category(rel.kind);
  return category == core::OpCategory::kMovement || category == core::OpCategory::kLifetime;
}

bool ProductChainBuilder::take_drop(const core::OpDesc& rel) {
  if (rel.kind != core::OpKind::kDrop) return false;
  std::erase(pending_, rel.inputs[0].id);
  settle();
  return true;
}

void ProductChainBuilder::settle() {
  if (!pending_.empty()) return;
  len_ = relative_.size();
  phase_ = Phase::kDone;
}

std::unique_ptr<Optimization> ProductChainBuilder::build() const {
  std::unique_ptr<Optimization> middle = middle_.build();
  auto* reduce = dynamic_cast<ReduceOptimization*>(middle.get());
  if (!reduce || len_ <= second())
    throw Error("product chain builder: the middle is not the reduce kernel it took");
  middle.release();
  return std::make_unique<ProductChainOptimization>(lead_, middle_len_, aside_, len_ - second() - 1,
                                                    product_input_,
                                                    std::unique_ptr<ReduceOptimization>(reduce));
}

}  // namespace streamfuse::fusion

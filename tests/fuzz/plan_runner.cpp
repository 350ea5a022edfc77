#include "tests/fuzz/plan_runner.h"

#include <map>
#include <set>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "fusion/context.h"
#include "jit/cpu_launcher.h"
#include "tests/fuzz/fuzz_target.h"

namespace streamfuse::fuzz {
namespace {

// Segments past these sizes are not run (a plan's relative sizes become 1, 2, 3, ...: only a
// plan of many distinct sizes or a high rank gets there).
constexpr std::int64_t kMaxElements = 1 << 12;

// The segment a plan of relative ops matches: size id 0 is 1 and id k is k + 1 (distinct ids stay
// distinct sizes), scalar placeholders become values of their kind. Empty when too large.
std::vector<core::OpDesc> segment_of(const std::vector<core::OpDesc>& relative) {
  std::vector<core::OpDesc> ops = relative;
  for (core::OpDesc& op : ops) {
    const auto real_shape = [](core::TensorDesc& t) {
      std::int64_t numel = 1;
      for (int d = 0; d < t.shape.rank(); ++d) {
        t.shape[d] += 1;
        numel *= t.shape[d];
        if (numel > kMaxElements) return false;
      }
      return true;
    };
    for (core::TensorDesc& t : op.inputs)
      if (!real_shape(t)) return {};
    for (core::TensorDesc& t : op.outputs)
      if (!real_shape(t)) return {};
    for (Scalar& s : op.scalars) {
      const std::int64_t p = s.bits();
      switch (s.kind()) {
        case Scalar::Kind::kBool:
          s = Scalar(p % 2 == 1);
          break;
        case Scalar::Kind::kInt:
          s = Scalar(p + 2);
          break;
        case Scalar::Kind::kFloat:
          s = Scalar(0.5 * static_cast<double>(p) + 0.25);
          break;
      }
    }
  }
  return ops;
}

// Elements `h` spans for `shape` from its offset (strides of a lent or new buffer are >= 0).
std::int64_t span_of(const backends::TensorHandle& h, const Shape& shape) {
  std::int64_t last = h.offset;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 0) return 0;
    last += (shape[d] - 1) * h.strides[static_cast<std::size_t>(d)];
  }
  return last + 1;
}

void check_operand(const jit::LaunchOperand& o, const Shape& shape, bool output) {
  if (!o.handle || !o.handle->storage) fail("a kernel operand without a buffer");
  const std::size_t need =
      static_cast<std::size_t>(span_of(*o.handle, o.shape)) * element_size(o.dtype);
  if (need > o.handle->storage.bytes()) fail("a kernel operand larger than its buffer");
  if (output ? o.shape != shape : o.shape.rank() > shape.rank())
    fail("a kernel operand of another shape than the launch's");
}

// Checks each launch, tells the observer, and interprets it.
class CheckingLauncher final : public jit::KernelLauncher {
 public:
  CheckingLauncher(jit::KernelLauncher& inner, const LaunchObserver& observe)
      : inner_(inner), observe_(observe) {}
  void launch(const jit::FusedProgram& program, const jit::ProgramFacts& facts, const Shape& shape,
              std::span<const jit::LaunchOperand> inputs,
              std::span<const jit::LaunchOperand> outputs,
              std::span<const std::int64_t> scalars) override {
    if (inputs.size() != program.inputs.size() || outputs.size() != program.outputs.size() ||
        scalars.size() != program.scalars.size())
      fail("a launch whose operands do not fit its program");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      check_operand(inputs[i], shape, false);
      if (inputs[i].dtype != program.inputs[i]) fail("a kernel input of another dtype");
    }
    // Per-row outputs of a reduction have the launch's shape with the reduced axis (or every
    // axis) of size 1.
    Shape rows = shape;
    for (int d = 0; d < rows.rank(); ++d)
      if (program.anchor.kind == jit::AnchorKind::kReduce &&
          (program.anchor.axis == core::kAllAxes || d == program.anchor.axis))
        rows[d] = 1;
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      check_operand(outputs[o], program.outputs[o].per_row ? rows : shape, true);
      if (outputs[o].dtype != program.outputs[o].dtype) fail("a kernel output of another dtype");
    }
    if (facts.hash != program.hash()) fail("program facts of another program");
    if (observe_) observe_(program, facts, shape, inputs, outputs, scalars);
    inner_.launch(program, facts, shape, inputs, outputs, scalars);
  }

 private:
  jit::KernelLauncher& inner_;
  const LaunchObserver& observe_;
};

// The stream's side of a run: the handles of tensors that exist before the segment (made on first
// use), and what the run publishes and erases, checked against what the segment's ops say.
class RunContext final : public fusion::ExecutionContext {
 public:
  RunContext(const std::vector<core::OpDesc>& ops, backends::Backend& backend,
             jit::KernelLauncher& launcher)
      : ops_(ops), backend_(backend), launcher_(launcher) {
    for (const core::OpDesc& op : ops) {
      for (const core::TensorDesc& t : op.outputs) made_.insert(t.id);
      if (op.kind != core::OpKind::kIndexSelect && op.kind != core::OpKind::kGather) continue;
      indices_.insert(op.inputs[1].id);
      reads_empty_axis_ = reads_empty_axis_ || (op.inputs[0].shape[op.attrs.axis] == 0 &&
                                                op.inputs[1].shape.numel() > 0);
    }
  }

  const core::OpDesc& op(std::size_t i) const override {
    if (i >= ops_.size()) fail("a run reads op " + std::to_string(i) + " of a shorter segment");
    return ops_[i];
  }
  void run_operation(std::size_t) override { fail("a fused run ran an op on its own"); }
  backends::TensorHandle handle(core::TensorId id, core::Failure*) override {
    if (auto it = held_.find(id); it != held_.end()) return it->second;
    if (made_.contains(id)) fail("a run read a tensor of the segment that nothing wrote yet");
    if (gone_.contains(id)) fail("a run read a tensor it erased");
    const core::TensorDesc* desc = find_input(id);
    if (!desc) fail("a run read a tensor its segment does not have");
    // Ones in every byte: a valid value of every dtype (bool 1, tiny floats and integers);
    // zeros for the indices of an index op (in range wherever its axis is not empty).
    std::vector<unsigned char> bytes(
        static_cast<std::size_t>(desc->shape.numel()) * element_size(desc->dtype),
        indices_.contains(id) ? 0 : 1);
    return held_[id] = backend_.from_host(bytes.data(), desc->dtype, desc->shape);
  }
  void set_handle(core::TensorId id, backends::TensorHandle h) override {
    if (!made_.contains(id) || !published_.insert(id).second)
      fail("a run published a tensor that is not the segment's to publish");
    const core::TensorDesc* desc = find_output(id);
    if (!h.storage || static_cast<std::size_t>(desc->shape.numel()) * element_size(desc->dtype) >
                          h.storage.bytes())
      fail("a run published a buffer smaller than its tensor");
    held_[id] = std::move(h);
  }
  void set_failed(core::TensorId, core::Failure) override {
    // Indices into an empty axis are out of range whatever they hold: the op's error is right.
    if (!reads_empty_axis_) fail("a run failed a tensor, though no input had failed");
  }
  void erase(core::TensorId id) override {
    if (made_.contains(id)) fail("a run erased a tensor the segment makes");
    gone_.insert(id);
    held_.erase(id);
  }
  backends::Backend& backend() override { return backend_; }
  jit::KernelLauncher& launcher() override { return launcher_; }

 private:
  const core::TensorDesc* find_input(core::TensorId id) const {
    for (const core::OpDesc& op : ops_)
      for (const core::TensorDesc& t : op.inputs)
        if (t.id == id) return &t;
    return nullptr;
  }
  const core::TensorDesc* find_output(core::TensorId id) const {
    for (const core::OpDesc& op : ops_)
      for (const core::TensorDesc& t : op.outputs)
        if (t.id == id) return &t;
    fail("no op makes tensor " + std::to_string(id));
  }

  const std::vector<core::OpDesc>& ops_;
  backends::Backend& backend_;
  jit::KernelLauncher& launcher_;
  std::set<core::TensorId> made_, published_, gone_;
  std::set<core::TensorId> indices_;  // of index ops: filled with zeros
  bool reads_empty_axis_ = false;     // an index op with indices into an empty axis
  std::map<core::TensorId, backends::TensorHandle> held_;
};

}  // namespace

bool run_plan(const fusion::ExecutionPlan& plan, const LaunchObserver& observe) {
  if (!plan.optimization) return false;
  if (plan.optimization->len() != plan.ops.size()) fail("an optimization of another length");
  const std::vector<core::OpDesc> segment = segment_of(plan.ops);
  if (segment.empty()) return false;
  // One thread: runs are deterministic and cheap.
  static backends::cpu::CpuBackend* backend = [] {
    auto* b = new backends::cpu::CpuBackend;
    b->configure({.num_threads = 1});
    return b;
  }();
  static jit::CpuLauncher* interpreter = [] {
    auto* l = new jit::CpuLauncher(backend->kernels(), nullptr);
    l->set_num_threads(1);
    return l;
  }();
  CheckingLauncher launcher(*interpreter, observe);
  RunContext context(segment, *backend, launcher);
  plan.optimization->execute(context);
  return true;
}

}  // namespace streamfuse::fuzz

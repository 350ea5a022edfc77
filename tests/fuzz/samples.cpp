#include "tests/fuzz/samples.h"

#include <cstdio>
#include <functional>

#include <streamfuse/streamfuse.h>

#include "backends/cpu/views.h"
#include "bench/gelu_variants.h"
#include "core/hash_mix.h"
#include "core/relative.h"
#include "fusion/builders/elementwise/builder.h"
#include "fusion/builders/reduce/builder.h"
#include "jit/cpp_codegen.h"
#include "jit/launch_key.h"
#include "jit/reduce_layout.h"
#include "tests/fusion/recorded_segment.h"
#include "tests/fuzz/plan_runner.h"

namespace core = streamfuse::core;

namespace sf = streamfuse;

namespace streamfuse::fuzz {
namespace {

// The plan the explorer makes of `program`'s ops with `Builder` (the element-wise or the reduce
// one): its optimization over the ops it takes, triggered by the next ops (or at a sync when it
// took them all), with the next segment's first op as successor.
template <class Builder = fusion::ElementwiseBuilder>
std::shared_ptr<fusion::ExecutionPlan> elementwise_plan(const std::function<void()>& program) {
  const testing::RecordedOps ops = testing::record_without_running(program);
  Builder builder;
  for (std::size_t i = 0; i < ops.global.size() && builder.status() == fusion::BuilderStatus::kOpen;
       ++i)
    builder.register_op(ops.relative[i], ops.global[i]);
  const std::size_t len = builder.len();
  auto plan = std::make_shared<fusion::ExecutionPlan>();
  plan->ops.assign(ops.relative.begin(), ops.relative.begin() + static_cast<std::ptrdiff_t>(len));
  plan->optimization = builder.build();
  if (len < ops.relative.size()) {
    fusion::Trigger next{fusion::Trigger::Kind::kOnOperations, {}};
    for (std::size_t i = len; i < ops.relative.size() && i < len + 2; ++i)
      next.ops.push_back(ops.relative[i]);
    plan->triggers.push_back(std::move(next));
    core::RelativeConverter first;
    plan->successors.emplace_back();
    first.convert(ops.global[len], plan->successors.back());
  } else {
    plan->triggers.push_back({fusion::Trigger::Kind::kOnSync, {}});
  }
  plan->triggers.push_back({fusion::Trigger::Kind::kAlways, {}});
  return plan;
}

std::vector<std::shared_ptr<fusion::ExecutionPlan>> make_plans() {
  std::vector<std::shared_ptr<fusion::ExecutionPlan>> plans;
  const sf::Tensor x = sf::randn({4, 64});
  const sf::Tensor bias = sf::randn({64});
  const sf::Tensor a = sf::randn({4, 8});
  const sf::Tensor v = sf::randn({8});
  const sf::Tensor n = sf::arange(0, 32, 1, sf::kI32).reshape({4, 8});
  const sf::Tensor h = sf::randn({4, 8}, sf::kF16);
  sf::Tensor keep1, keep2, keep3;

  // GELU with its custom erf: several kernels, many scalars (equal ones among them), broadcasts.
  plans.push_back(elementwise_plan(
      [&] { keep1 = sf::bench::gelu(x + bias, sf::bench::GeluVariant::kWithCustomErf) * 0.5f; }));
  // Compare, logical, select, casts, integer and f16 arithmetic, a division by a power of two;
  // a reduction closes the segment.
  plans.push_back(elementwise_plan([&] {
    const sf::Tensor t = a + v;
    const sf::Tensor m = sf::logical_and(t > 0.5f, n < 7);
    const sf::Tensor w = sf::where(m, t, t * 0.1f);
    keep1 = (w.to(sf::kF16) * h).to(sf::kF32) / 4.0f;
    keep2 = (n * 3 + 1).to(sf::kI64);
    keep3 = sf::sum(keep1);
  }));
  // A constant a handle holds (a kernel of its own), bf16, and two iteration shapes.
  plans.push_back(elementwise_plan([&] {
    keep1 = sf::full({4, 8}, 2.0f);
    const sf::Tensor r = sf::exp(v * 2.0f);
    keep2 = (a.to(sf::kBF16) * keep1.to(sf::kBF16) + 1.0f).to(sf::kF32) - r;
    keep3 = sf::maximum(r, 0.0f) / 3.0f;
  }));
  // Inputs whose last use is here lend their buffers to outputs.
  {
    sf::Tensor moved = a * 1.0f, dropped = v + 1.0f;
    sf::synchronize();
    plans.push_back(elementwise_plan([&] {
      keep1 = sf::sigmoid(std::move(moved)) * 2.0f;
      keep2 = sf::relu(dropped) + sf::abs(dropped);
      dropped = sf::Tensor();
    }));
  }
  // Reads at indices in element-wise kernels: an embedding with positions, and a gather.
  {
    const sf::Tensor table = sf::randn({10, 8}), positions = sf::randn({3, 8});
    const sf::Tensor ids = sf::from_vector(std::vector<std::int64_t>{4, 0, 9});
    const sf::Tensor index = sf::from_vector(std::vector<std::int32_t>{7, 0, 1, 2}, {4, 1});
    sf::synchronize();
    plans.push_back(elementwise_plan([&] {
      keep1 = sf::embedding(table, ids) * 2.0f + positions;
      keep2 = sf::exp(sf::gather(a, 1, index));
    }));
  }
  // Reductions with element-wise code around them: softmax (two stages, per-element outputs),
  // layer_norm with weights and a bias (broadcast inputs, per-row code), and per-row outputs
  // of every reduction kind with keepdim both ways, over every element too, on f16.
  plans.push_back(elementwise_plan<fusion::ReduceBuilder>([&] { keep1 = sf::nn::softmax(x, -1); }));
  const sf::Tensor half_bias = bias * 0.5f;
  plans.push_back(elementwise_plan<fusion::ReduceBuilder>(
      [&] { keep1 = sf::nn::layer_norm(x * 2.0f, {64}, bias, half_bias); }));
  plans.push_back(elementwise_plan<fusion::ReduceBuilder>([&] {
    const sf::Tensor t = h * 2.0f;
    keep1 = sf::sum(t, 1, true) + sf::max(t, -1, true);
    keep2 = sf::argmax(t, 1);
    keep3 = sf::mean(t, 1) - sf::min(t, 1);
  }));
  plans.push_back(elementwise_plan<fusion::ReduceBuilder>([&] {
    const sf::Tensor e = sf::exp(a);
    keep1 = e / sf::sum(e);
  }));
  // The Operations strategy: no optimization.
  auto operations = std::make_shared<fusion::ExecutionPlan>();
  operations->ops = {plans.back()->ops.front()};
  operations->triggers.push_back({fusion::Trigger::Kind::kAlways, {}});
  plans.push_back(std::move(operations));
  sf::synchronize();
  return plans;
}

std::vector<std::vector<core::OpDesc>> make_ops() {
  const sf::Tensor x = sf::randn({4, 6});
  const sf::Tensor i = sf::arange(0, 6, 1, sf::kI64);
  const testing::RecordedOps ops = testing::record_without_running([&] {
    sf::Tensor a = sf::where(x > 0.5f, x * 2.0f, sf::full({4, 6}, -1.0f));
    sf::Tensor b = sf::sum(a.to(sf::kF16), 1, true) + sf::sum(sf::argmax(x, 0).to(sf::kF16));
    sf::Tensor m = sf::matmul(x, sf::permute(x, {1, 0}));
    sf::Tensor s = sf::slice(x, 1, 1, 5, 2) - sf::mean(x) + sf::max(x, 1, true) * sf::min(x);
    sf::Tensor c = sf::cat({x, x}, 0);
    sf::Tensor r =
        sf::reshape(c, {2, 24}) + i.to(sf::kF32).reshape({1, 6}).expand({4, 6}).reshape({1, 24});
    sf::Tensor n = sf::logical_not(sf::logical_or(x != 1.0f, x <= 0.0f)) == (x >= 2.0f);
    sf::Tensor u = sf::rand({3}) + sf::sum(sf::contiguous(sf::pow(sf::abs(x), 2.0f)));
  });
  return {ops.global, ops.relative};
}

// Each plan's kernels with the keys of launches on the plan's own segment, one library per plan.
std::vector<jit::KernelRecord> make_kernels() {
  std::vector<jit::KernelRecord> kernels;
  for (const auto& plan : sample_plans()) {
    std::vector<jit::KernelRecord> ours;
    run_plan(*plan, [&](const jit::FusedProgram& program, const jit::ProgramFacts& facts,
                        const Shape& shape, std::span<const jit::LaunchOperand> inputs,
                        std::span<const jit::LaunchOperand> outputs,
                        std::span<const std::int64_t> scalars) {
      // As CpuLauncher::launch takes its key.
      std::vector<backends::cpu::Operand> ops;
      for (std::span<const jit::LaunchOperand> list : {inputs, outputs})
        for (const jit::LaunchOperand& o : list)
          ops.push_back(backends::cpu::broadcast_operand(*o.handle, o.shape, o.dtype, shape));
      std::vector<const backends::cpu::Strides*> strides;
      for (const backends::cpu::Operand& o : ops) strides.push_back(&o.strides);
      const backends::cpu::Iteration it =
          program.anchor.kind == jit::AnchorKind::kReduce
              ? jit::make_reduce_layout(program, shape, ops).it
              : backends::cpu::make_iteration(shape, strides.data(), static_cast<int>(ops.size()));
      ours.push_back({facts.hash, program,
                      jit::launch_key(program, facts, it, ops, inputs, outputs, scalars),
                      "sf_fuzz_kernel_" + std::to_string(kernels.size() + ours.size()), nullptr});
    });
    if (ours.empty()) continue;
    auto library = std::make_shared<jit::LibraryImage>();
    library->fingerprint = "fuzz samples";
    for (const jit::KernelRecord& k : ours)
      library->source += jit::cpu_kernel_source(k.program, k.key, k.symbol);
    library->name = core::hex16(core::fnv1a(library->source));
    library->bytes = std::string(
        "\x7f"
        "ELF not a shared object",
        24);
    for (jit::KernelRecord& k : ours) {
      k.library = library;
      kernels.push_back(std::move(k));
    }
  }
  return kernels;
}

// [m, k] @ [k, n] as CpuBackend records it, `b` read transposed when `transposed`.
backends::PreparedOp matmul(Shape a, Shape b, Shape out, DType dtype, bool transposed = false) {
  backends::PreparedOp p;
  p.op.kind = core::OpKind::kMatmul;
  p.op.attrs.dtype = dtype;
  p.op.inputs = {{0, a, dtype, core::TensorStatus::kReadOnly},
                 {0, b, dtype, core::TensorStatus::kReadOnly}};
  p.op.outputs = {{0, out, dtype, core::TensorStatus::kNotInit}};
  p.input_strides = {backends::contiguous_strides(a), backends::contiguous_strides(b)};
  if (transposed && b.rank() == 2) p.input_strides[1] = {1, b[0]};
  return p;
}

// A conv2d as the CPU backend reports its first run: contiguous operands of its dtype.
backends::PreparedOp conv2d(Shape x, Shape w, Shape out, core::Window window) {
  backends::PreparedOp p;
  p.op.kind = core::OpKind::kConv2d;
  p.op.attrs.dtype = kF32;
  p.op.attrs.window = window;
  p.op.inputs = {{0, x, kF32, core::TensorStatus::kReadOnly},
                 {0, w, kF32, core::TensorStatus::kReadOnly}};
  p.op.outputs = {{0, out, kF32, core::TensorStatus::kNotInit}};
  p.input_strides = {backends::contiguous_strides(x), backends::contiguous_strides(w)};
  return p;
}

core::Window conv_window(std::int32_t k, std::int32_t stride, std::int32_t padding,
                         std::int32_t groups) {
  core::Window w;
  w.kernel = {k, k};
  w.stride = {stride, stride};
  w.padding = {padding, padding};
  w.groups = groups;
  return w;
}

}  // namespace

const std::vector<std::vector<core::OpDesc>>& sample_ops() {
  static const auto* ops = new std::vector<std::vector<core::OpDesc>>(make_ops());
  return *ops;
}

const std::vector<std::shared_ptr<fusion::ExecutionPlan>>& sample_plans() {
  static const auto* plans = new std::vector<std::shared_ptr<fusion::ExecutionPlan>>(make_plans());
  return *plans;
}

const std::vector<jit::KernelRecord>& sample_kernels() {
  static const auto* kernels = new std::vector<jit::KernelRecord>(make_kernels());
  return *kernels;
}

const std::vector<backends::PreparedOp>& sample_prepared_ops() {
  static const auto* ops = new std::vector<backends::PreparedOp>{
      matmul({64, 512}, {512, 2048}, {64, 2048}, kF32),
      matmul({3, 5}, {5, 7}, {3, 7}, kF32, true),
      matmul({2, 3, 4}, {4, 5}, {2, 3, 5}, kBF16),
      matmul({4}, {2, 4, 6}, {2, 6}, kF16),
      conv2d({2, 8, 16, 16}, {16, 8, 3, 3}, {2, 16, 8, 8}, conv_window(3, 2, 1, 1)),
      conv2d({1, 8, 9, 9}, {8, 1, 3, 3}, {1, 8, 9, 9}, conv_window(3, 1, 1, 8)),
  };
  return *ops;
}

std::vector<runtime::BundleSection> sample_bundle() {
  runtime::BundleSection cpu{
      "cpu", {}, sample_kernels(), sample_prepared_ops(), {{4096, 3}, {1 << 20, 1}, {64, 2}}};
  for (const auto& plan : sample_plans()) cpu.plans.push_back(plan);
  return {std::move(cpu), runtime::BundleSection{"cuda:0", {}, {}, {}, {}}};
}

}  // namespace streamfuse::fuzz

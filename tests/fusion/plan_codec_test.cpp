// Plan files' payloads: an element-wise plan round-trips exactly, and no truncation, flipped byte
// or state that does not fit its ops decodes into something unsafe to run.
#include <gtest/gtest.h>

#include <functional>

#include <streamfuse/streamfuse.h>

#include "bench/gelu_variants.h"
#include "fusion/builders/elementwise/optimization.h"
#include "fusion/builders/matmul/builder.h"
#include "fusion/builders/matmul/optimization.h"
#include "fusion/builders/reduce/builder.h"
#include "fusion/builders/reduce/optimization.h"
#include "fusion/plan_codec.h"
#include "jit/program_codec.h"
#include "tests/fusion/recorded_segment.h"

namespace sf = streamfuse;

namespace streamfuse::cache {
namespace {

using fusion::ElementwiseOptimization;

// Plans as the explorer makes them, from segments recorded through the API.
std::shared_ptr<fusion::ExecutionPlan> plan_of(const std::function<void()>& program) {
  fusion::ElementwiseBuilder builder;
  return streamfuse::testing::plan_of(builder,
                                      streamfuse::testing::record_without_running(program));
}

// The element-wise plan of a GELU with its custom erf (several kernels, scalars, broadcasts).
std::shared_ptr<fusion::ExecutionPlan> gelu_plan() {
  const sf::Tensor x = sf::randn({4, 64});
  const sf::Tensor bias = sf::randn({64});
  sf::Tensor y;
  auto plan = plan_of(
      [&] { y = sf::bench::gelu(x + bias, sf::bench::GeluVariant::kWithCustomErf) * 0.5f; });
  plan->triggers.push_back({fusion::Trigger::Kind::kOnOperations, {plan->ops.front()}});
  plan->successors = {plan->ops[1], plan->ops.front()};
  return plan;
}

void expect_same_state(const ElementwiseOptimization& a, const ElementwiseOptimization& b) {
  EXPECT_EQ(a.len(), b.len());
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (std::size_t t = 0; t < a.tensors().size(); ++t) {
    EXPECT_EQ(a.tensors()[t].source.op, b.tensors()[t].source.op);
    EXPECT_EQ(a.tensors()[t].source.slot, b.tensors()[t].source.slot);
    EXPECT_EQ(a.tensors()[t].publish, b.tensors()[t].publish);
    EXPECT_EQ(a.tensors()[t].erase, b.tensors()[t].erase);
  }
  ASSERT_EQ(a.kernels().size(), b.kernels().size());
  for (std::size_t k = 0; k < a.kernels().size(); ++k) {
    const fusion::ElementwiseKernel& x = a.kernels()[k];
    const fusion::ElementwiseKernel& y = b.kernels()[k];
    EXPECT_EQ(x.program, y.program);
    EXPECT_EQ(x.facts.hash, y.facts.hash);
    EXPECT_EQ(x.facts.divisor_scalars, y.facts.divisor_scalars);
    EXPECT_EQ(x.shape_source.op, y.shape_source.op);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    EXPECT_EQ(x.lend, y.lend);
    EXPECT_EQ(x.indexed, y.indexed);
    ASSERT_EQ(x.scalars.size(), y.scalars.size());
    for (std::size_t s = 0; s < x.scalars.size(); ++s) {
      EXPECT_EQ(x.scalars[s].op, y.scalars[s].op);
      EXPECT_EQ(x.scalars[s].slot, y.scalars[s].slot);
    }
  }
}

// A decoded plan encoded again (the encoding is canonical: the same bytes).
std::string encode_again(const fusion::PlanDraft& back) {
  fusion::ExecutionPlan again;
  again.ops = back.ops;
  again.optimization = back.optimization;
  again.triggers = back.triggers;
  again.successors = back.successors;
  return fusion::encode_plan(again);
}

// `plan` encoded and decoded: the decoded draft, after checking that its ops are the plan's and
// that it encodes to the same bytes again (the encoding is canonical).
fusion::PlanDraft round_trip(const fusion::ExecutionPlan& plan) {
  const std::string bytes = fusion::encode_plan(plan);
  fusion::PlanDraft back = fusion::decode_plan(bytes);
  EXPECT_EQ(back.ops, plan.ops);
  EXPECT_EQ(encode_again(back), bytes);  // canonical
  return back;
}

TEST(PlanCodec, ElementwisePlansRoundTripExactly) {
  const auto plan = gelu_plan();
  ASSERT_GT(plan->ops.size(), 10u);
  const fusion::PlanDraft back = round_trip(*plan);
  EXPECT_EQ(back.triggers, plan->triggers);
  EXPECT_EQ(back.successors, plan->successors);
  const auto* opt = dynamic_cast<const ElementwiseOptimization*>(back.optimization.get());
  ASSERT_NE(opt, nullptr);
  expect_same_state(static_cast<const ElementwiseOptimization&>(*plan->optimization), *opt);
}

// The reduce plan of a layer_norm followed by a softmax (four stages, per-row code, broadcast
// weights) and a per-row output.
std::shared_ptr<fusion::ExecutionPlan> norm_plan() {
  const sf::Tensor x = sf::randn({4, 64}), w = sf::randn({64});
  sf::Tensor y, s;
  const streamfuse::testing::RecordedOps ops = streamfuse::testing::record_without_running([&] {
    y = sf::nn::softmax(sf::nn::layer_norm(x, {64}, w), -1);
    s = sf::sum(y * y, -1);
  });
  fusion::ReduceBuilder builder;
  return streamfuse::testing::plan_of(builder, ops);
}

TEST(PlanCodec, ReducePlansRoundTripExactly) {
  const auto plan = norm_plan();
  const auto& built = static_cast<const fusion::ReduceOptimization&>(*plan->optimization);
  ASSERT_EQ(built.kernel().program.anchor.stages.size(), 5u) << built.kernel().program.to_string();
  const fusion::PlanDraft back = round_trip(*plan);
  const auto* opt = dynamic_cast<const fusion::ReduceOptimization*>(back.optimization.get());
  ASSERT_NE(opt, nullptr);
  EXPECT_EQ(opt->len(), built.len());
  EXPECT_EQ(opt->kernel().program, built.kernel().program);
  EXPECT_EQ(opt->kernel().facts.hash, built.kernel().facts.hash);
  EXPECT_EQ(opt->kernel().inputs, built.kernel().inputs);
  EXPECT_EQ(opt->kernel().outputs, built.kernel().outputs);
}

// A reduction whose input is a constant reduces the constant's scalar register, which is per-row
// code (every scalar is): such plans, and their kernels handed on to the next process, must
// decode. They did not ("stage 0 reduces register 0, not per-element code"): every process made
// the plan again and dropped the handed-on kernel.
TEST(PlanCodec, AReductionOfAConstantRoundTrips) {
  sf::Tensor x, s;
  const streamfuse::testing::RecordedOps ops = streamfuse::testing::record_without_running([&] {
    x = sf::full({4, 1000}, 255, sf::kU8);
    s = sf::sum(x, 1);
  });
  fusion::ReduceBuilder builder;
  const auto plan = streamfuse::testing::plan_of(builder, ops);
  ASSERT_EQ(builder.len(), ops.global.size());
  const auto& built = static_cast<const fusion::ReduceOptimization&>(*plan->optimization);
  const std::string bytes = fusion::encode_plan(*plan);
  fusion::PlanDraft back;
  ASSERT_NO_THROW(back = fusion::decode_plan(bytes)) << built.kernel().program.to_string();
  const auto* opt = dynamic_cast<const fusion::ReduceOptimization*>(back.optimization.get());
  ASSERT_NE(opt, nullptr);
  EXPECT_EQ(opt->kernel().program, built.kernel().program);
  EXPECT_NO_THROW(jit::decode_program(jit::encode_program(built.kernel().program)));
}

TEST(PlanCodec, ReducePlansTruncatedOrFlippedAreFormatErrorsOrCheckedPlans) {
  const std::string bytes = fusion::encode_plan(*norm_plan());
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(fusion::decode_plan(std::string_view(bytes).substr(0, n)), FormatError) << n;
  int errors = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    try {
      EXPECT_FALSE(fusion::decode_plan(bad).ops.empty());
    } catch (const FormatError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, static_cast<int>(bytes.size() / 2));
}

// A product and its steps, with a held value dropped inside the plan: x @ w + b, then + r.
std::shared_ptr<fusion::ExecutionPlan> linear_plan() {
  const sf::Tensor x = sf::randn({8, 16}), w = sf::randn({16, 4}), b = sf::randn({4});
  const sf::Tensor r = sf::randn({8, 4});
  sf::Tensor y;
  const streamfuse::testing::RecordedOps ops = streamfuse::testing::record_without_running([&] {
    const sf::Tensor h = sf::matmul(x, w) + b;
    y = h + r;
  });
  fusion::MatmulBuilder builder;
  auto plan = streamfuse::testing::plan_of(builder, ops);
  EXPECT_EQ(builder.len(), 4u);  // matmul, add, add, drop(h)
  return plan;
}

TEST(PlanCodec, MatmulPlansRoundTripExactly) {
  const auto plan = linear_plan();
  const auto& built = static_cast<const fusion::MatmulOptimization&>(*plan->optimization);
  ASSERT_EQ(built.steps().size(), 2u);
  const fusion::PlanDraft back = round_trip(*plan);
  const auto* opt = dynamic_cast<const fusion::MatmulOptimization*>(back.optimization.get());
  ASSERT_NE(opt, nullptr);
  EXPECT_EQ(opt->len(), built.len());
  EXPECT_EQ(opt->steps(), built.steps());
}

// The decoder replays the builder over the plan's ops: ops it would not have taken (the product
// on the right of a subtraction, a step of another dtype) or a length that is not the plan's are
// rejected, truncations are format errors, and a flipped byte gives a checked plan or an error.
TEST(PlanCodec, MatmulPlansTheBuilderWouldNotMakeAreRejected) {
  auto plan = linear_plan();
  const auto changed = [&](const std::function<void(std::vector<core::OpDesc>&)>& change) {
    fusion::ExecutionPlan p;
    p.ops = plan->ops;
    change(p.ops);
    p.optimization = plan->optimization;
    p.triggers = plan->triggers;
    return fusion::encode_plan(p);
  };
  EXPECT_THROW(fusion::decode_plan(changed([](std::vector<core::OpDesc>& ops) {
                 ops[1].kind = core::OpKind::kSub;
                 std::swap(ops[1].inputs[0], ops[1].inputs[1]);  // b - (x @ w)
               })),
               FormatError);
  EXPECT_THROW(fusion::decode_plan(
                   changed([](std::vector<core::OpDesc>& ops) { ops[2].inputs[1].dtype = kF16; })),
               FormatError);
  // h never dropped: it would have to be stored (the encoded length is the old one, so this
  // also checks the decoder's own replay against a plan of the right length).
  EXPECT_THROW(
      fusion::decode_plan(changed([](std::vector<core::OpDesc>& ops) { ops.back() = ops[2]; })),
      FormatError);
  const std::string bytes = fusion::encode_plan(*plan);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(fusion::decode_plan(std::string_view(bytes).substr(0, n)), FormatError) << n;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    try {
      EXPECT_FALSE(fusion::decode_plan(bad).ops.empty());
    } catch (const FormatError&) {
    }
  }
}

TEST(PlanCodec, OperationsPlansHaveNoOptimization) {
  fusion::ExecutionPlan plan;
  plan.ops = gelu_plan()->ops;
  const fusion::PlanDraft back = fusion::decode_plan(fusion::encode_plan(plan));
  EXPECT_EQ(back.ops, plan.ops);
  EXPECT_EQ(back.optimization, nullptr);
}

TEST(PlanCodec, EveryTruncationIsAFormatError) {
  const std::string bytes = fusion::encode_plan(*gelu_plan());
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(fusion::decode_plan(std::string_view(bytes).substr(0, n)), FormatError) << n;
}

// A flipped byte either fails to decode or gives a plan that passed every check (its kernels fit
// its ops); it never crashes (the sanitizer presets run this too).
TEST(PlanCodec, FlippedBytesAreFormatErrorsOrCheckedPlans) {
  const std::string bytes = fusion::encode_plan(*gelu_plan());
  int errors = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    try {
      const fusion::PlanDraft plan = fusion::decode_plan(bad);
      EXPECT_FALSE(plan.ops.empty());
    } catch (const FormatError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, static_cast<int>(bytes.size() / 2));
}

// The state is checked against the plan's ops: a kernel whose input is now an i32 tensor (a plan
// from a buggy build) does not decode.
TEST(PlanCodec, StateThatDoesNotFitItsOpsIsRejected) {
  auto plan = gelu_plan();
  ASSERT_FALSE(plan->ops.front().inputs.empty());
  for (core::TensorDesc& t : plan->ops.front().inputs) t.dtype = kI32;
  EXPECT_THROW(fusion::decode_plan(fusion::encode_plan(*plan)), FormatError);
}

// `plan` with its element-wise state changed as `change` says: what a payload whose bytes changed
// after its checksum was computed could hold.
std::string with_state(const fusion::ExecutionPlan& plan,
                       const std::function<void(std::vector<ElementwiseOptimization::Tensor>&,
                                                std::vector<fusion::ElementwiseKernel>&)>& change) {
  const auto& o = static_cast<const ElementwiseOptimization&>(*plan.optimization);
  auto tensors = o.tensors();
  auto kernels = o.kernels();
  change(tensors, kernels);
  fusion::ExecutionPlan changed;
  changed.ops = plan.ops;
  changed.triggers = plan.triggers;
  changed.optimization =
      std::make_shared<ElementwiseOptimization>(o.len(), std::move(tensors), std::move(kernels));
  return fusion::encode_plan(changed);
}

// The relative tensor a state's tensor names.
const core::TensorDesc& desc(const fusion::ExecutionPlan& plan, fusion::TensorSource s) {
  const core::OpDesc& op = plan.ops.at(s.op);
  return s.slot < 0 ? op.outputs.at(0) : op.inputs.at(static_cast<std::size_t>(s.slot));
}

// Two kernels: the first makes t of shape [8], the second reads it over [4, 8]. `wide` dies here
// (moved into the second), a broadcast input of another shape than the output.
struct TwoKernels {
  sf::Tensor a = sf::randn({4, 8}), v = sf::randn({8}), wide = sf::randn({8}), t, y;
  std::shared_ptr<fusion::ExecutionPlan> plan = plan_of([&] {
    t = v * 2.0f;
    y = a + t + std::move(wide);
  });
};

TEST(PlanCodec, KernelsRunInTheOrderTheirTensorsAreMade) {
  TwoKernels s;
  const auto& o = static_cast<const ElementwiseOptimization&>(*s.plan->optimization);
  ASSERT_EQ(o.kernels().size(), 2u);
  ASSERT_NO_THROW(fusion::decode_plan(fusion::encode_plan(*s.plan)));
  // The second kernel first: it would read t before anything wrote it.
  EXPECT_THROW(
      fusion::decode_plan(with_state(*s.plan, [](auto&, auto& k) { std::swap(k[0], k[1]); })),
      FormatError);
}

TEST(PlanCodec, AKernelWritesOnlyTensorsTheSegmentMakes) {
  TwoKernels s;
  // The second kernel's output written over `a`, an input of the same shape and dtype.
  bool found = false;
  EXPECT_THROW(
      fusion::decode_plan(with_state(*s.plan,
                                     [&](auto& tensors, auto& k) {
                                       const Shape& shape =
                                           desc(*s.plan, tensors[k[1].outputs[0]].source).shape;
                                       for (std::uint32_t t = 0; t < tensors.size(); ++t)
                                         if (tensors[t].source.slot >= 0 && !tensors[t].erase &&
                                             desc(*s.plan, tensors[t].source).shape == shape) {
                                           k[1].outputs[0] = t;
                                           found = true;
                                         }
                                     })),
      FormatError);
  EXPECT_TRUE(found);
}

TEST(PlanCodec, ABroadcastInputIsNotLentToAWiderOutput) {
  TwoKernels s;
  // `wide` dies in the segment, but holds 8 elements where the output needs 32: lent, the kernel
  // would write past its buffer.
  EXPECT_THROW(fusion::decode_plan(with_state(*s.plan,
                                              [&](auto& tensors, auto& k) {
                                                for (std::size_t i = 0; i < k[1].inputs.size(); ++i)
                                                  if (tensors[k[1].inputs[i]].erase)
                                                    k[1].lend[0] = static_cast<std::int32_t>(i);
                                              })),
               FormatError);
}

// An embedding feeding element-wise ops: one kernel reading at indices.
struct EmbeddingKernel {
  sf::Tensor table = sf::randn({10, 4}), ids = sf::from_vector(std::vector<std::int64_t>{3, 1}), y;
  std::shared_ptr<fusion::ExecutionPlan> plan =
      plan_of([&] { y = sf::embedding(table, ids) * 2.0f + 1.0f; });
};

TEST(PlanCodec, IndexedReadsRoundTripExactly) {
  EmbeddingKernel s;
  const auto& o = static_cast<const ElementwiseOptimization&>(*s.plan->optimization);
  ASSERT_EQ(o.kernels().size(), 1u);
  ASSERT_EQ(o.kernels()[0].indexed.size(), 1u);
  const fusion::PlanDraft decoded = fusion::decode_plan(fusion::encode_plan(*s.plan));
  expect_same_state(o, static_cast<const ElementwiseOptimization&>(*decoded.optimization));
}

// What makes a kLoadAt's addresses safe is checked: it reads its read's source at that read's
// (checked) indices times its stride, and nothing reads a source plainly.
TEST(PlanCodec, AnIndexedLoadReadsOnlyThroughItsRead) {
  EmbeddingKernel s;
  using Change = std::function<void(fusion::ElementwiseKernel&)>;
  const std::vector<std::pair<std::string, Change>> changes = {
      {"no read", [](auto& k) { k.indexed.clear(); }},
      {"source and indices swapped",
       [](auto& k) { std::swap(k.indexed[0].source, k.indexed[0].indices); }},
      {"the op is not an index op", [](auto& k) { k.indexed[0].op = 1; }},
      {"a stride that is no scalar", [](auto& k) { k.indexed[0].stride = 7; }},
      {"a plain load of the source",
       [](auto& k) {
         for (jit::Instruction& in : k.program.prologue)
           if (in.kind == jit::InstrKind::kLoad) in.index = static_cast<int>(k.indexed[0].source);
       }},
      {"the index register is not the indices' load",
       [](auto& k) {
         for (jit::Instruction& in : k.program.prologue)
           if (in.kind == jit::InstrKind::kLoadAt) std::swap(in.args[0], in.args[1]);
       }},
  };
  for (const auto& [what, change] : changes)
    EXPECT_THROW(
        fusion::decode_plan(with_state(*s.plan, [&](auto&, auto& kernels) { change(kernels[0]); })),
        FormatError)
        << what;
}

TEST(PlanCodec, PublishedAndErasedTensorsAreExactlyThoseTheSegmentSays) {
  TwoKernels s;
  EXPECT_THROW(fusion::decode_plan(with_state(*s.plan,
                                              [](auto& tensors, auto&) {
                                                for (auto& t : tensors) t.publish = false;
                                              })),
               FormatError)
      << "a value the program holds would be lost";
  EXPECT_THROW(fusion::decode_plan(with_state(*s.plan,
                                              [](auto& tensors, auto&) {
                                                for (auto& t : tensors) t.erase = false;
                                              })),
               FormatError)
      << "a dead tensor's handle would leak";
  EXPECT_THROW(fusion::decode_plan(with_state(
                   *s.plan, [](auto& tensors, auto&) { tensors.push_back(tensors[0]); })),
               FormatError)
      << "one tensor listed twice";
}

TEST(PlanCodec, PlanOpsAreASegmentsRelativeForm) {
  auto plan = gelu_plan();
  ASSERT_NO_THROW(fusion::decode_plan(fusion::encode_plan(*plan)));
  for (std::size_t i = 1; i < plan->ops.size(); ++i)
    if (!plan->ops[i].outputs.empty()) {
      plan->ops[i].outputs[0].id += 5;  // an id no converter gives
      break;
    }
  EXPECT_THROW(fusion::decode_plan(fusion::encode_plan(*plan)), FormatError);
}

TEST(PlanCodec, TriggersWaitForOpsOnlyWhenTheySaySo) {
  auto plan = gelu_plan();
  plan->triggers = {{fusion::Trigger::Kind::kOnOperations, {}}};
  EXPECT_THROW(fusion::decode_plan(fusion::encode_plan(*plan)), FormatError)
      << "a trigger that names nothing";
  plan->triggers = {{fusion::Trigger::Kind::kAlways, {plan->ops.front()}}};
  EXPECT_THROW(fusion::decode_plan(fusion::encode_plan(*plan)), FormatError);
}

TEST(PlanCodec, PlansWithoutACodecAreNotPersistable) {
  struct Opaque final : fusion::Optimization {
    std::size_t len() const override { return 1; }
    void execute(fusion::ExecutionContext&) override {}
    std::string describe() const override { return "opaque"; }
  };
  fusion::ExecutionPlan plan;
  plan.ops = {gelu_plan()->ops.front()};
  plan.optimization = std::make_shared<Opaque>();
  EXPECT_FALSE(fusion::persistable(plan));
  EXPECT_THROW(fusion::encode_plan(plan), FormatError);
}

TEST(PlanCodec, HashesAreStable) {
  // File names derive from these: the same ops give the same names in every process.
  const auto plan = gelu_plan();
  EXPECT_EQ(fusion::plan_hash(plan->ops),
            fusion::plan_hash(fusion::decode_plan(fusion::encode_plan(*plan)).ops));
  EXPECT_EQ(fusion::first_op_hash(plan->ops.front()), core::stable_hash_op(plan->ops.front()));
  EXPECT_NE(fusion::plan_hash(plan->ops), fusion::plan_hash(std::span(plan->ops).first(1)));
}

}  // namespace
}  // namespace streamfuse::cache

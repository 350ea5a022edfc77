#include "tests/fuzz/exercise.h"

#include <vector>

#include "backends/cpu/isa.h"
#include "backends/matmul_layout.h"
#include "fusion/plan_codec.h"
#include "jit/cpp_codegen.h"
#include "jit/cuda_codegen.h"
#include "jit/interpreter.h"
#include "jit/launch_key.h"
#include "jit/program_check.h"
#include "jit/program_optimizer.h"
#include "streamfuse/error.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/plan_runner.h"

namespace streamfuse::fuzz {
namespace {

// Keeps a computed value from being optimized away (its only use is to be computed).
volatile std::uint64_t sink;

void consume(std::uint64_t v) { sink = sink + v; }
void consume(const std::string& s) { consume(s.size()); }

// The C++ and CUDA kernel sources of (program, key): a program and key the decoders let through
// must never make a generator refuse them.
void generate(const jit::FusedProgram& program, const jit::SpecializationKey& key) {
  try {
    consume(jit::cpu_kernel_source(program, key, "sf_fuzz_kernel"));
    consume(jit::cuda_kernel_source(program, key, "sf_fuzz_kernel"));
  } catch (const CompileError& e) {
    fail(std::string("a code generator refused a decoded kernel: ") + e.what() + "\n" +
         program.to_string() + key.to_string());
  }
}

}  // namespace

bool native_byte_order(std::string_view bytes) {
  return !bytes.empty() && static_cast<unsigned char>(bytes[0]) == 1;
}

void use_program(const jit::FusedProgram& p) {
  if (std::string why = jit::program_problem(p); !why.empty())
    fail("a decoded program is not well formed: " + why);
  consume(p.to_string());
  const jit::ProgramFacts facts = jit::ProgramFacts::of(p);
  consume(facts.hash ^ facts.divisor_scalars);
  consume(p.register_types().size());
  jit::FusedProgram simplified = p;
  jit::simplify(simplified);
  if (std::string why = jit::program_problem(simplified); !why.empty())
    fail("simplify() made a well-formed program ill formed: " + why);

  // Over [3, 5]: odd inputs broadcast along the outer dimension, the others full; buffers of
  // exactly their size, so AddressSanitizer sees every access past them. A reduction's per-row
  // outputs have its reduced shape.
  const Shape shape{3, 5}, row{5};
  const bool reduce = p.anchor.kind == jit::AnchorKind::kReduce;
  if (reduce && p.anchor.axis != core::kAllAxes && p.anchor.axis >= shape.rank()) return;
  Shape reduced = shape;
  for (int d = 0; d < shape.rank(); ++d)
    if (reduce && (p.anchor.axis == core::kAllAxes || d == p.anchor.axis)) reduced[d] = 1;
  // A kLoadAt reads at an index the launch has checked: plans only run those whose index is a
  // load of an input (traced_codec::indexed_reads_problem), whose values the launch checks. Such
  // inputs hold zeros here (in range; any stride then reads the view's own element); a program
  // whose index is computed is never run, so it is only generated.
  std::vector<char> zeros(p.inputs.size(), 0);
  {
    std::vector<const jit::Instruction*> def(static_cast<std::size_t>(p.num_registers), nullptr);
    bool runnable = true;
    for (const std::vector<jit::Instruction>* block : p.blocks())
      for (const jit::Instruction& in : *block) {
        def[static_cast<std::size_t>(in.out)] = &in;
        if (in.kind != jit::InstrKind::kLoadAt) continue;
        const jit::Instruction* index = def[static_cast<std::size_t>(in.args[0])];
        if (index && index->kind == jit::InstrKind::kLoad)
          zeros[static_cast<std::size_t>(index->index)] = 1;
        else
          runnable = false;
      }
    if (!runnable) return;
  }
  const std::size_t n = p.inputs.size() + p.outputs.size();
  std::vector<std::vector<unsigned char>> buffers(n);
  std::vector<backends::cpu::Operand> operands(n);
  std::vector<jit::LaunchOperand> inputs, outputs;
  for (std::size_t k = 0; k < n; ++k) {
    const bool out = k >= p.inputs.size();
    const DType dtype = out ? p.outputs[k - p.inputs.size()].dtype : p.inputs[k];
    const bool broadcast = !out && k % 2 == 1;
    const bool per_row = out && p.outputs[k - p.inputs.size()].per_row;
    const Shape& own = broadcast ? row : per_row ? reduced : shape;
    buffers[k].assign(static_cast<std::size_t>(own.numel()) * element_size(dtype),
                      !out && zeros[k] ? 0 : 1);  // 1s: valid values of every dtype
    operands[k] = {reinterpret_cast<char*>(buffers[k].data()), dtype, {}};
    if (per_row) {  // [3, 1]: a stride per row; [1, 5]: one per column; [1, 1]: none
      operands[k].strides[0] = reduced[0] == 1 ? 0 : reduced[1];
      operands[k].strides[1] = reduced[1] == 1 ? 0 : 1;
    } else {
      operands[k].strides[0] = broadcast ? 0 : 5;
      operands[k].strides[1] = 1;
    }
    (out ? outputs : inputs).push_back({nullptr, own, dtype});
  }
  std::vector<const backends::cpu::Strides*> strides;
  for (const backends::cpu::Operand& o : operands) strides.push_back(&o.strides);
  const backends::cpu::Iteration it =
      backends::cpu::make_iteration(shape, strides.data(), static_cast<int>(n));
  // Scalar values: powers of two among them (exact reciprocals), some equal (scalar classes).
  std::vector<std::int64_t> scalars;
  for (std::size_t s = 0; s < p.scalars.size(); ++s)
    scalars.push_back(jit::scalar_bits(p.scalars[s], s % 3 == 0 ? Scalar(2.0) : Scalar(1.5)));
  if (reduce) {
    const jit::ReduceLayout layout = jit::make_reduce_layout(p, shape, operands);
    jit::interpret_reduce(p, layout, operands, scalars, backends::cpu::kernels(), 1, facts.hash);
    generate(p, jit::launch_key(p, facts, layout.it, operands, inputs, outputs, scalars));
    return;
  }
  jit::interpret(p, it, operands, scalars, backends::cpu::kernels(), 1);
  generate(p, jit::launch_key(p, facts, it, operands, inputs, outputs, scalars));
}

void use_key(const jit::SpecializationKey& key) {
  consume(key.hash());
  consume(key.to_string());
}

void use_kernel(const jit::FusedProgram& program, const jit::SpecializationKey& key) {
  if (std::string why = jit::key_fit_problem(program, key); !why.empty())
    fail("a decoded key does not fit its program: " + why);
  generate(program, key);
}

void use_plan(const fusion::ExecutionPlan& plan) {
  if (plan.ops.empty()) fail("a decoded plan without ops");
  for (const core::OpDesc& op : plan.ops) consume(core::to_string(op));
  for (const fusion::Trigger& t : plan.triggers)
    for (const core::OpDesc& op : t.ops) consume(core::hash_op(op));
  for (const core::OpDesc& op : plan.successors) consume(core::to_string(op));
  consume(fusion::plan_hash(plan.ops) ^ fusion::first_op_hash(plan.ops.front()));
  if (!fusion::persistable(plan)) fail("a decoded plan that cannot be persisted");
  if (plan.optimization) consume(plan.optimization->describe());
  run_plan(plan);
}

void use_prepared_op(const backends::PreparedOp& p) {
  consume(core::to_string(p.op));
  if (p.op.kind == core::OpKind::kConv2d) {
    std::string why;
    const std::optional<Shape> out = core::window_result_shape(
        p.op.kind, p.op.inputs.at(0).shape, p.op.inputs.at(1).shape, p.op.attrs.window, why);
    if (!out || *out != p.op.outputs.at(0).shape)
      fail("a decoded prepared conv2d the backend refuses: " + why);
    return;
  }
  const backends::MatmulOperand a{nullptr, p.op.inputs.at(0).shape, p.input_strides.at(0)};
  const backends::MatmulOperand b{nullptr, p.op.inputs.at(1).shape, p.input_strides.at(1)};
  const Shape& out = p.op.outputs.at(0).shape;
  if (std::string why = backends::matmul_operands_problem(a, b, out); !why.empty())
    fail("a decoded prepared op the backend refuses: " + why);
  // What MatmulEngine::prepare and run compute (UndefinedBehaviorSanitizer sees overflows).
  consume(static_cast<std::uint64_t>(a.shape.numel() + b.shape.numel() + out.numel()));
  if (out.numel() == 0 || a.shape[a.shape.rank() - 1] == 0) return;
  const backends::MatmulLayout l = backends::make_matmul_layout(a, b, out);
  consume(static_cast<std::uint64_t>(l.batch_count() * l.m * l.n));
  consume(static_cast<std::uint64_t>(l.a.matrices(l.batch_rank) * l.m * l.k));
  consume(static_cast<std::uint64_t>(l.b.matrices(l.batch_rank) * l.k * l.n));
}

void use_sections(const std::vector<runtime::BundleSection>& sections) {
  for (const runtime::BundleSection& s : sections) {
    consume(s.device);
    for (const fusion::PlanRef& plan : s.plans) use_plan(*plan);
    for (const jit::KernelRecord& k : s.kernels) {
      if (!k.library || !jit::valid_library_name(k.library->name))
        fail("a decoded kernel without a valid library");
      if (k.program_hash != k.program.hash()) fail("a decoded kernel of another program's hash");
      use_key(k.key);
      use_kernel(k.program, k.key);
    }
    for (const backends::PreparedOp& op : s.prepared) use_prepared_op(op);
    for (const backends::HeldBlocks& b : s.held) consume(b.capacity * b.blocks);
  }
}

}  // namespace streamfuse::fuzz

// single_op_program computes what the eager CPU kernel computes, bit for bit, for every
// element-wise op and dtype the eager kernels accept, with tensor and scalar operands on either
// side and broadcast inputs: run through the fused interpreter (the eager kernels' own loops over
// the program's instructions) and compared with CpuBackend::execute. A CUDA device runs these
// programs as its eager path, so this is what makes its unfused results the CPU's.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/views.h"
#include "core/float16.h"
#include "jit/interpreter.h"
#include "jit/single_op_program.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace {

using backends::TensorHandle;
using core::OpCategory;
using core::OpDesc;
using core::OpKind;
using core::TensorDesc;

constexpr DType kAll[] = {kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64};

std::vector<unsigned char> random_bytes(DType d, std::int64_t n, std::mt19937& rng) {
  std::vector<unsigned char> out(static_cast<std::size_t>(n) * element_size(d));
  std::uniform_real_distribution<float> real(-3.0f, 3.0f);
  std::uniform_int_distribution<int> small(-5, 5);
  for (std::int64_t i = 0; i < n; ++i) {
    unsigned char* p = out.data() + static_cast<std::size_t>(i) * element_size(d);
    const float f = real(rng);
    const int k = small(rng);
    const long long ll = k;
    const std::uint16_t h = d == kF16 ? core::float_to_half_bits(f) : 0;
    const std::uint16_t b = d == kBF16 ? static_cast<std::uint16_t>(sf_float_to_bf16(f)) : 0;
    switch (d) {
      case kF32:
        std::memcpy(p, &f, 4);
        break;
      case kF16:
        std::memcpy(p, &h, 2);
        break;
      case kBF16:
        std::memcpy(p, &b, 2);
        break;
      case kI32:
        std::memcpy(p, &k, 4);
        break;
      case kI64:
        std::memcpy(p, &ll, 8);
        break;
      case kBool:
        *p = static_cast<unsigned char>(k > 0);
        break;
      case kI8:  // -125 .. 125: sums and products wrap
        *p = static_cast<unsigned char>(static_cast<std::int8_t>(k * 25));
        break;
      case kU8:  // 0 .. 250
        *p = static_cast<unsigned char>((k + 5) * 25);
        break;
      case kF64: {  // a double that is not a float
        const double d = static_cast<double>(f) * (1.0 + 0x1p-40);
        std::memcpy(p, &d, 8);
        break;
      }
    }
  }
  return out;
}

class SingleOpProgram : public ::testing::Test {
 protected:
  // Runs `op` eagerly and as its program; returns false when the eager kernels reject it.
  bool check(const core::OpDesc& op) {
    std::vector<TensorHandle> inputs;
    for (const core::TensorDesc& d : op.inputs) {
      const auto bytes = random_bytes(d.dtype, d.shape.numel(), rng_);
      inputs.push_back(cpu_.from_host(bytes.data(), d.dtype, d.shape));
    }
    std::vector<TensorHandle> eager_inputs = inputs;
    TensorHandle eager;
    try {
      cpu_.execute(op, eager_inputs, {&eager, 1});
    } catch (const Error&) {
      return false;
    }
    const core::TensorDesc& od = op.outputs[0];
    const FusedProgram program = single_op_program(op);
    TensorHandle fused = cpu_.allocate(od.shape, od.dtype);
    std::vector<backends::cpu::Operand> operands;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      operands.push_back(backends::cpu::broadcast_operand(inputs[i], op.inputs[i].shape,
                                                          op.inputs[i].dtype, od.shape));
    operands.push_back(backends::cpu::broadcast_operand(fused, od.shape, od.dtype, od.shape));
    const backends::cpu::Strides* strides[4];
    for (std::size_t k = 0; k < operands.size(); ++k) strides[k] = &operands[k].strides;
    const backends::cpu::Iteration it =
        backends::cpu::make_iteration(od.shape, strides, static_cast<int>(operands.size()));
    std::vector<std::int64_t> scalars;
    for (const ScalarArg& a : program.scalars) scalars.push_back(scalar_bits(a, op.scalars[0]));
    interpret(program, it, operands, scalars, backends::cpu::kernels(), 1);

    const std::size_t bytes = static_cast<std::size_t>(od.shape.numel()) * element_size(od.dtype);
    std::vector<unsigned char> want(bytes), got(bytes);
    cpu_.to_host(eager, od.dtype, od.shape, want.data());
    cpu_.to_host(fused, od.dtype, od.shape, got.data());
    EXPECT_EQ(want, got) << core::to_string(op) << "\n" << program.to_string();
    return true;
  }

  backends::cpu::CpuBackend cpu_;
  std::mt19937 rng_{7};
};

core::TensorDesc desc(core::TensorId id, Shape s, DType d) {
  return {id, std::move(s), d, core::TensorStatus::kReadOnly};
}

TEST_F(SingleOpProgram, EveryElementwiseOpAndDtypeMatchesTheEagerKernel) {
  const Shape out_shape{3, 37};
  int checked = 0;
  for (int k = 0; k <= static_cast<int>(core::OpKind::kCast); ++k) {
    const auto kind = static_cast<core::OpKind>(k);
    if (!core::is_elementwise(kind)) continue;
    const core::OpCategory cat = core::op_category(kind);
    for (DType d : kAll) {
      for (DType out : kAll) {
        if (cat != core::OpCategory::kCast && out != kAll[0]) continue;  // one pass unless casting
        core::OpDesc op;
        op.kind = kind;
        op.attrs.dtype = d;
        DType result =
            cat == core::OpCategory::kCompare || cat == core::OpCategory::kLogical ? kBool : d;
        if (cat == core::OpCategory::kCast) result = out;
        const int arity = core::op_info(kind).arity;
        const bool binary = cat == core::OpCategory::kBinary || cat == core::OpCategory::kCompare;
        for (int side = 0; side < (binary ? 3 : 1); ++side) {
          op.inputs.clear();
          op.scalars.clear();
          op.attrs.scalar_side = static_cast<core::ScalarSide>(side);
          const int tensors = side == 0 ? arity : 1;
          for (int i = 0; i < tensors; ++i) {
            const DType in = cat == core::OpCategory::kSelect && i == 0 ? kBool
                             : cat == core::OpCategory::kLogical        ? d
                                                                        : d;
            // The second operand broadcasts along the first dimension.
            op.inputs.push_back(
                desc(static_cast<core::TensorId>(i + 1), i == 1 ? Shape{37} : out_shape, in));
          }
          if (side != 0) op.scalars.push_back(is_floating(d) ? Scalar(1.75) : Scalar(3));
          op.outputs = {desc(9, out_shape, result)};
          op.outputs[0].status = core::TensorStatus::kNotInit;
          if (check(op)) ++checked;
        }
      }
    }
  }
  // Full of every dtype, from a float and an integer value.
  for (DType d : kAll)
    for (Scalar v : {Scalar(2.5), Scalar(-7)}) {
      core::OpDesc op;
      op.kind = core::OpKind::kFull;
      op.scalars.push_back(v);
      op.outputs = {desc(1, out_shape, d)};
      if (check(op)) ++checked;
    }
  EXPECT_GT(checked, 250) << "most op and dtype pairs run eagerly";
}

TEST_F(SingleOpProgram, CopyProgramsConvertLikeTheEagerCast) {
  for (DType from : kAll)
    for (DType to : kAll) {
      core::OpDesc op;
      op.kind = core::OpKind::kCast;
      op.attrs.dtype = from;
      op.inputs = {desc(1, Shape{5, 8}, from)};
      op.outputs = {desc(2, Shape{5, 8}, to)};
      EXPECT_EQ(copy_program(from, to), single_op_program(op));
    }
}

TEST_F(SingleOpProgram, RejectsOpsThatAreNotElementwise) {
  core::OpDesc op;
  op.kind = core::OpKind::kSum;
  op.inputs = {desc(1, Shape{4}, kF32)};
  op.outputs = {desc(2, Shape{}, kF32)};
  EXPECT_THROW(single_op_program(op), Error);
}

}  // namespace
}  // namespace streamfuse::jit

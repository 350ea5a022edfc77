// Encodings of ops, fused programs and specialization keys: exact round trips on what the library
// really records, and bad payloads that are errors, never crashes or invalid programs.
#include <gtest/gtest.h>

#include <functional>

#include <streamfuse/streamfuse.h>

#include "bench/gelu_variants.h"
#include "cache/op_codec.h"
#include "jit/program_codec.h"
#include "tests/fusion/recorded_segment.h"

namespace sf = streamfuse;

namespace streamfuse::cache {
namespace {

using streamfuse::testing::record_without_running;

void every_kind_of_op() {
  const sf::Tensor x = sf::randn({4, 6});
  const sf::Tensor i = sf::arange(0, 6, 1, sf::kI64);
  sf::Tensor a = sf::where(x > 0.5f, x * 2.0f, sf::full({4, 6}, -1.0f));
  sf::Tensor b = sf::sum(a.to(sf::kF16), 1, true);
  sf::Tensor m = sf::matmul(x, sf::permute(x, {1, 0}));
  sf::Tensor s = sf::slice(x, 1, 1, 5, 2);
  sf::Tensor c = sf::cat({x, x}, 0);
  sf::Tensor r =
      sf::reshape(c, {2, 24}) + i.to(sf::kF32).reshape({1, 6}).expand({4, 6}).reshape({1, 24});
}

TEST(Serialize, OpsRoundTripExactlyInBothForms) {
  const auto ops = record_without_running(every_kind_of_op);
  ASSERT_GT(ops.global.size(), 15u);
  EXPECT_EQ(decode_ops(encode_ops(ops.global)), ops.global);
  EXPECT_EQ(decode_ops(encode_ops(ops.relative)), ops.relative);
}

std::vector<jit::FusedProgram> gelu_programs() {
  const sf::Tensor x = sf::randn({4, 64});
  sf::Tensor y;
  const auto built = streamfuse::testing::build_elementwise(
      [&] { y = sf::bench::gelu(x, sf::bench::GeluVariant::kWithCustomErf); });
  std::vector<jit::FusedProgram> programs;
  for (const auto& k : built.optimization->kernels()) programs.push_back(k.program);
  return programs;
}

TEST(Serialize, FusedProgramsRoundTripExactly) {
  const std::vector<jit::FusedProgram> programs = gelu_programs();
  ASSERT_FALSE(programs.empty());
  for (const jit::FusedProgram& p : programs) {
    const jit::FusedProgram back = jit::decode_program(jit::encode_program(p));
    EXPECT_EQ(back, p);
    EXPECT_EQ(back.hash(), p.hash());
  }
}

TEST(Serialize, KeysRoundTripExactly) {
  jit::SpecializationKey k;
  k.rank = 2;
  jit::OperandKey in;
  in.dtype = sf::kBF16;
  in.strides[0] = jit::StrideClass::kZero;
  in.strides[1] = jit::StrideClass::kArgument;
  k.inputs = {in, jit::OperandKey{}};
  jit::OperandKey out;
  out.alias = 1;
  k.outputs = {out};
  k.scalar_classes = {0, 0, 2};
  k.exact_reciprocals = 0b101;
  const jit::SpecializationKey back = jit::decode_key(jit::encode_key(k));
  EXPECT_EQ(back, k);
  EXPECT_EQ(back.hash(), k.hash());
}

// Every truncation fails to decode; every single-byte change either fails or decodes to a
// program that passes the same checks (the file checksum rejects those before decoding).
TEST(Serialize, BadPayloadsAreFormatErrors) {
  const std::string bytes = jit::encode_program(gelu_programs().front());
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(jit::decode_program(std::string_view(bytes).substr(0, n)), FormatError) << n;
  EXPECT_THROW(jit::decode_program(bytes + "x"), FormatError);
  int rejected = 0;
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    try {
      jit::decode_program(bad);
    } catch (const FormatError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, static_cast<int>(bytes.size() / 2));
  EXPECT_THROW(decode_ops(std::string(8, '\xff')), FormatError);
  EXPECT_THROW(jit::decode_key(std::string(3, '\0')), FormatError);
}

// An op whose operand counts do not fit its kind is no op the frontend records.
TEST(Serialize, OpsWhoseOperandsDoNotFitTheirKindAreFormatErrors) {
  const auto ops = record_without_running(every_kind_of_op).relative;
  const auto changed = [&](core::OpKind kind, const std::function<void(core::OpDesc&)>& change) {
    for (const core::OpDesc& op : ops) {
      if (op.kind != kind) continue;
      core::OpDesc bad = op;
      change(bad);
      return encode_ops(std::vector<core::OpDesc>{bad});
    }
    ADD_FAILURE() << "no " << core::op_name(kind);
    return std::string();
  };
  EXPECT_THROW(decode_ops(changed(core::OpKind::kWhere, [](auto& op) { op.inputs.pop_back(); })),
               FormatError);
  EXPECT_THROW(decode_ops(changed(core::OpKind::kMul,
                                  [](auto& op) { op.outputs.push_back(op.outputs[0]); })),
               FormatError);
  EXPECT_THROW(decode_ops(changed(core::OpKind::kMatmul,
                                  [](auto& op) {
                                    op.attrs.scalar_side = core::ScalarSide::kRhs;
                                    op.scalars.push_back(Scalar(1));
                                  })),
               FormatError)
      << "a scalar operand of an op that takes none";
  EXPECT_THROW(decode_ops(changed(core::OpKind::kMul, [](auto& op) { op.scalars.clear(); })),
               FormatError)
      << "x * 2 without its 2";
}

// The first byte says the writer's byte order: 1 (little-endian) or 0; cereal would take any
// other value for big-endian.
TEST(Serialize, AByteOrderNoWriterWritesIsAFormatError) {
  std::string bytes = jit::encode_program(gelu_programs().front());
  ASSERT_EQ(bytes[0], 1);
  bytes[0] = 2;
  EXPECT_THROW(jit::decode_program(bytes), FormatError);
}

TEST(Serialize, ProgramsAndKeysThatBreakTheirRulesAreFormatErrors) {
  jit::FusedProgram p = gelu_programs().front();
  ASSERT_NO_THROW(jit::decode_program(jit::encode_program(p)));
  for (jit::Instruction& in : p.prologue)
    if (in.args[0] >= 0) in.args[0] = in.out;  // each reads its own result, not yet written
  EXPECT_THROW(jit::decode_program(jit::encode_program(p)), FormatError);
  jit::SpecializationKey k;
  k.rank = 1;
  k.scalar_classes = {0, 1};  // no two equal: launch_key leaves them empty
  EXPECT_THROW(jit::decode_key(jit::encode_key(k)), FormatError);
}

// A program is blocks around an anchor: both blocks and the anchor round-trip, an anchor kind
// this build does not know is a FormatError, and so is an epilogue with no anchor.
TEST(Serialize, ProgramsKeepTheirAnchorAndBlocks) {
  const jit::FusedProgram p = gelu_programs().front();
  const jit::FusedProgram back = jit::decode_program(jit::encode_program(p));
  EXPECT_EQ(back, p);
  EXPECT_EQ(back.anchor.kind, jit::AnchorKind::kNone);
  EXPECT_EQ(back.prologue.size(), p.prologue.size());

  jit::FusedProgram unknown = p;
  unknown.anchor.kind = static_cast<jit::AnchorKind>(jit::kNumAnchorKinds);
  try {
    jit::decode_program(jit::encode_program(unknown));
    ADD_FAILURE() << "an unknown anchor kind decoded";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("anchor kind"), std::string::npos) << e.what();
  }

  jit::FusedProgram split = p;
  split.epilogue.push_back(split.prologue.back());
  split.prologue.pop_back();
  EXPECT_THROW(jit::decode_program(jit::encode_program(split)), FormatError);
}

}  // namespace
}  // namespace streamfuse::cache

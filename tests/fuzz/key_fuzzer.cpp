// Fuzz target: a specialization key (the payload piece of kernel records).
#include <optional>

#include "jit/program_check.h"
#include "jit/program_codec.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  for (const jit::KernelRecord& k : sample_kernels()) out.push_back(jit::encode_key(k.key));
  return out;
}

namespace {

using jit::InstrKind;
using jit::Instruction;
using jit::ValueType;

// A program `key` fits, if one of this simple kind does: input 0 loaded as float, divided by
// each scalar argument the key names an exact reciprocal (float operands, as many as the key
// has scalar classes), converted to each output's type. Lets a decoded key reach the code
// generators without a program of its own.
std::optional<jit::FusedProgram> program_for(const jit::SpecializationKey& key) {
  jit::FusedProgram p;
  const auto emit = [&](Instruction in) {
    in.out = p.num_registers++;
    p.prologue.push_back(in);
    return in.out;
  };
  for (const jit::OperandKey& k : key.inputs) p.inputs.push_back(k.dtype);
  int scalars = static_cast<int>(key.scalar_classes.size());
  for (int b = 0; b < 64; ++b)
    if (key.exact_reciprocals >> b & 1) scalars = std::max(scalars, b + 1);
  std::int32_t value = -1;
  if (!p.inputs.empty())
    value = emit({.kind = InstrKind::kLoad, .type = ValueType::kFloat, .index = 0});
  for (int s = 0; s < scalars; ++s) {
    p.scalars.push_back({jit::ScalarArg::Mode::kOperand, ValueType::kFloat, kF32});
    const std::int32_t r =
        emit({.kind = InstrKind::kScalar, .type = ValueType::kFloat, .index = s});
    if (value < 0) value = r;
    if (key.exact_reciprocals >> s & 1)
      value = emit({.kind = InstrKind::kOp, .op = core::OpKind::kDiv, .args = {value, r, -1}});
  }
  for (const jit::OperandKey& k : key.outputs) {
    if (value < 0) return std::nullopt;
    const ValueType t = jit::value_type_of(k.dtype);
    const std::int32_t r =
        t == ValueType::kFloat
            ? value
            : emit({.kind = InstrKind::kConvert, .type = t, .args = {value, -1, -1}});
    p.outputs.push_back({r, k.dtype});
  }
  if (!jit::program_problem(p).empty() || !jit::key_fit_problem(p, key).empty())
    return std::nullopt;
  return p;
}

}  // namespace
}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  jit::SpecializationKey key;
  try {
    key = jit::decode_key(bytes);
  } catch (const cache::FormatError&) {
    return 0;
  }
  const std::string again = jit::encode_key(key);
  if (fuzz::native_byte_order(bytes) && again != bytes) fuzz::fail("a key does not encode back");
  if (jit::decode_key(again) != key) fuzz::fail("a re-encoded key decodes to another");
  fuzz::use_key(key);
  if (const auto program = fuzz::program_for(key)) fuzz::use_kernel(*program, key);
  return 0;
}

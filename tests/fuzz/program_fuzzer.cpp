// Fuzz target: a fused program (the payload piece of element-wise plans and kernel records).
#include "jit/program_codec.h"
#include "jit/single_op_program.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  for (const jit::KernelRecord& k : sample_kernels()) out.push_back(jit::encode_program(k.program));
  for (DType from : {kF32, kF16, kBF16, kI32, kI64, kBool})
    for (DType to : {kF32, kF16, kI64, kBool})
      out.push_back(jit::encode_program(jit::copy_program(from, to)));
  return out;
}

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  jit::FusedProgram program;
  try {
    program = jit::decode_program(bytes);
  } catch (const cache::FormatError&) {
    return 0;
  }
  const std::string again = jit::encode_program(program);
  if (fuzz::native_byte_order(bytes) && again != bytes)
    fuzz::fail("a program does not encode back");
  if (jit::decode_program(again) != program) fuzz::fail("a re-encoded program decodes to another");
  fuzz::use_program(program);
  return 0;
}

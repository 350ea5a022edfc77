// Kernel records and handed-on requests read from files: the key must be one a launch of the
// record's program could have taken, or the code generators (which the kernel cache runs on a
// record built elsewhere) would be handed a kernel they cannot make.
#include <gtest/gtest.h>

#include "jit/kernel_codec.h"
#include "tests/jit/chain_program.h"

namespace streamfuse::cache {
namespace {

jit::KernelEntry entry(const jit::SpecializationKey& key) {
  const jit::FusedProgram p = jit::chain(2);
  return {p.hash(), p, key, "sf_kernel_0", "0123456789abcdef"};
}

TEST(KernelCodec, AKeyMustFitItsProgram) {
  ASSERT_NO_THROW(jit::decode_kernel_entry(jit::encode_kernel_entry(entry(jit::flat_key()))));
  jit::SpecializationKey other_dtype = jit::flat_key();
  other_dtype.inputs[0].dtype = kF16;  // the program loads an f32
  EXPECT_THROW(jit::decode_kernel_entry(jit::encode_kernel_entry(entry(other_dtype))), FormatError);
  jit::SpecializationKey aliased = jit::flat_key();
  aliased.outputs[0].alias = 0;  // in place: fine, same dtype and layout
  EXPECT_NO_THROW(jit::decode_kernel_entry(jit::encode_kernel_entry(entry(aliased))));
  aliased.outputs[0].strides[0] = jit::StrideClass::kArgument;
  EXPECT_THROW(jit::decode_kernel_entry(jit::encode_kernel_entry(entry(aliased))), FormatError);
  jit::SpecializationKey reciprocal = jit::flat_key();
  reciprocal.exact_reciprocals = 1;  // chain() adds its scalar, it divides nothing
  EXPECT_THROW(jit::decode_kernel_entry(jit::encode_kernel_entry(entry(reciprocal))), FormatError);
}

// Handed-on requests (what one process leaves the next to compile) pass the same checks: a key
// that does not fit, or a hash that is not the program's, makes the file a FormatError.
TEST(KernelCodec, HandedOnRequestsRoundTripAndAreChecked) {
  std::vector<jit::KernelRequest> requests;
  for (int n : {1, 2, 3}) {
    const jit::FusedProgram p = jit::chain(n);
    requests.push_back({p.hash(), p, jit::flat_key()});
  }
  const std::vector<jit::KernelRequest> back =
      jit::decode_kernel_requests(jit::encode_kernel_requests(requests));
  ASSERT_EQ(back.size(), requests.size());
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].program_hash, requests[i].program_hash);
    EXPECT_EQ(back[i].program, requests[i].program);
    EXPECT_EQ(back[i].key, requests[i].key);
  }
  EXPECT_TRUE(jit::decode_kernel_requests(jit::encode_kernel_requests({})).empty());

  std::vector<jit::KernelRequest> other_hash = requests;
  other_hash[1].program_hash ^= 1;
  EXPECT_THROW(jit::decode_kernel_requests(jit::encode_kernel_requests(other_hash)), FormatError);
  std::vector<jit::KernelRequest> unfit = requests;
  unfit[2].key.outputs[0].dtype = kI32;  // the program stores an f32
  EXPECT_THROW(jit::decode_kernel_requests(jit::encode_kernel_requests(unfit)), FormatError);
  const std::string bytes = jit::encode_kernel_requests(requests);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(jit::decode_kernel_requests(bytes.substr(0, n)), FormatError) << n << " bytes";
}

}  // namespace
}  // namespace streamfuse::cache

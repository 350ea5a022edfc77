// Fuzz target: a plan file's payload (its ops, triggers, successors and element-wise state).
#include "fusion/plan_codec.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  for (const auto& plan : sample_plans()) out.push_back(fusion::encode_plan(*plan));
  return out;
}

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fusion::PlanDraft draft;
  try {
    draft = fusion::decode_plan(bytes);
  } catch (const cache::FormatError&) {
    return 0;
  }
  fusion::ExecutionPlan exact;  // as decoded, for the byte comparison
  exact.ops = draft.ops;
  exact.optimization = draft.optimization;
  exact.triggers = draft.triggers;
  exact.successors = draft.successors;
  const std::string again = fusion::encode_plan(exact);
  if (fuzz::native_byte_order(bytes) && again != bytes) fuzz::fail("a plan does not encode back");
  {
    const fusion::PlanDraft back = fusion::decode_plan(again);
    if (back.ops != exact.ops || back.triggers != exact.triggers ||
        back.successors != exact.successors)
      fuzz::fail("a re-encoded plan decodes to another");
  }
  // As the plan store keeps it.
  fuzz::use_plan(*fusion::make_plan(std::move(draft)));
  return 0;
}

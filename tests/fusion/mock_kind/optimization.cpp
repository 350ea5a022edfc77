#include "tests/fusion/mock_kind/optimization.h"

#include "tests/fusion/mock_kind/mock_kind.h"

namespace streamfuse::testing::mock_kind {

void MockOptimization::execute(fusion::ExecutionContext& context) {
  for (std::size_t i = 0; i < len_; ++i) context.run_operation(i);
  runs().fetch_add(1, std::memory_order_relaxed);
}

std::atomic<std::int64_t>& runs() {
  static std::atomic<std::int64_t> n{0};
  return n;
}

}  // namespace streamfuse::testing::mock_kind

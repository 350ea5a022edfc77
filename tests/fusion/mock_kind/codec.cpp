// The mock kind's persistence, and the kind itself: its builder, and this codec, which stores
// the number of ops and checks on decode that the plan's ops are that many abs ops.
#include <cstdint>
#include <memory>

#include "tests/fusion/mock_kind/builder.h"
#include "tests/fusion/mock_kind/mock_kind.h"
#include "tests/fusion/mock_kind/optimization.h"

namespace streamfuse::testing::mock_kind {
namespace {

void encode(cache::OutArchive& out, const fusion::Optimization& optimization) {
  out(static_cast<std::uint32_t>(optimization.len()));
}

std::shared_ptr<fusion::Optimization> decode(cache::InArchive& in,
                                             std::span<const core::OpDesc> ops) {
  const std::uint32_t len = cache::get_size(in, cache::kMaxOps, "mock op");
  if (len == 0 || len != ops.size()) cache::bad_payload("mock: covers other ops than its plan's");
  for (const core::OpDesc& op : ops)
    if (op.kind != core::OpKind::kAbs) cache::bad_payload("mock: an op other than abs");
  return std::make_shared<MockOptimization>(len);
}

const fusion::OptimizationCodec kCodec{"mock", &encode, &decode};

std::unique_ptr<fusion::OptimizationBuilder> make_builder() {
  return std::make_unique<MockBuilder>();
}

}  // namespace

fusion::OptimizationKind kind() { return {"mock", &make_builder, &kCodec}; }

}  // namespace streamfuse::testing::mock_kind

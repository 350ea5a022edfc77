// Segments recorded through the API without running them, for tests that look at what fusion
// would make of them: the ops in both forms, and what the element-wise builder builds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "fusion/builders/elementwise/builder.h"
#include "fusion/builders/elementwise/optimization.h"
#include "runtime/device_runtime.h"
#include "stream/stream.h"

namespace streamfuse::testing {

struct RecordedOps {
  std::vector<core::OpDesc> global;    // as recorded
  std::vector<core::OpDesc> relative;  // in the relative form of the segment
};

// Records `program` with fusion off and an unbounded queue and returns its ops; then runs them.
// Inputs made before the program are materialized first, so only the program's ops are returned.
inline RecordedOps record_without_running(const std::function<void()>& program) {
  synchronize();
  const Config saved = config();
  Config c = saved;
  c.fusion = false;
  c.queue_bound = 1 << 20;
  set_config(c);
  stream::Stream* s = runtime::DeviceRuntime::get(Device::cpu()).streams().current();
  program();
  RecordedOps ops;
  const stream::OperationQueue& q = s->queue_for_testing();
  for (std::size_t i = 0; i < q.size(); ++i) {
    ops.global.push_back(q.global(i));
    ops.relative.push_back(q.relative(i));
  }
  synchronize();
  set_config(saved);
  return ops;
}

// What a fresh element-wise builder makes of `program`'s ops, fed until it closes.
struct Built {
  std::unique_ptr<fusion::ElementwiseOptimization> optimization;  // null when it took no op
  std::size_t len = 0;                                            // ops taken
  std::vector<core::OpDesc> ops;  // the ops taken, relative form (a plan's ops)
  std::size_t recorded = 0;       // ops recorded
  std::int64_t score = 0;
};

// Feeds `ops` to `builder` (fresh) until it closes.
inline void feed(fusion::OptimizationBuilder& builder, const RecordedOps& ops) {
  for (std::size_t i = 0; i < ops.global.size() && builder.status() == fusion::BuilderStatus::kOpen;
       ++i)
    builder.register_op(ops.relative[i], ops.global[i]);
}

// The plan `builder` (fresh) makes of `ops`, as the explorer would at a sync: the ops it took,
// its optimization (it must have taken some) and a trigger on sync.
inline std::shared_ptr<fusion::ExecutionPlan> plan_of(fusion::OptimizationBuilder& builder,
                                                      const RecordedOps& ops) {
  feed(builder, ops);
  auto plan = std::make_shared<fusion::ExecutionPlan>();
  plan->ops.assign(ops.relative.begin(),
                   ops.relative.begin() + static_cast<std::ptrdiff_t>(builder.len()));
  plan->optimization = builder.build();
  plan->triggers.push_back({fusion::Trigger::Kind::kOnSync, {}});
  return plan;
}

inline Built build_elementwise(const std::function<void()>& program) {
  const RecordedOps ops = record_without_running(program);
  fusion::ElementwiseBuilder builder;
  feed(builder, ops);
  Built b;
  b.len = builder.len();
  b.recorded = ops.global.size();
  b.score = builder.score();
  b.ops.assign(ops.relative.begin(), ops.relative.begin() + static_cast<std::ptrdiff_t>(b.len));
  if (b.len > 0)
    b.optimization.reset(static_cast<fusion::ElementwiseOptimization*>(builder.build().release()));
  return b;
}

}  // namespace streamfuse::testing

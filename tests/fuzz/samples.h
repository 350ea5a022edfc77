// What the fuzz targets start from: plans, programs, keys, kernel records, libraries, bundles and
// prepared ops as the library makes them now (segments recorded through the API and built by the
// element-wise builder, keys taken by launching their kernels), so the seeds that the real
// encoders make of them follow every change of the formats.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "fusion/plan.h"
#include "jit/kernel_store.h"
#include "runtime/bundle.h"

namespace streamfuse::fuzz {

// The ops of a segment that uses every kind of op, in the form the stream records them (global)
// and in the relative form, one list each.
const std::vector<std::vector<core::OpDesc>>& sample_ops();

// Element-wise plans of a few recorded segments (broadcasts, scalars, several kernels, constants,
// lent inputs, f16 and integer dtypes, compare, logical and select ops), with their triggers and
// successors, and a plan of the Operations strategy.
const std::vector<std::shared_ptr<fusion::ExecutionPlan>>& sample_plans();

// The kernels of those plans as a launcher specializes them: each program with the key of a
// launch on the plan's own segment (library images of their generated source and made-up bytes).
const std::vector<jit::KernelRecord>& sample_kernels();

// Matmuls as the CPU backend records them for preparing ahead.
const std::vector<backends::PreparedOp>& sample_prepared_ops();

// All of the above in one bundle section ("cpu"), plus an empty "cuda:0" section.
std::vector<runtime::BundleSection> sample_bundle();

}  // namespace streamfuse::fuzz

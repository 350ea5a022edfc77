// Plan files: an ExecutionPlan as bytes (its relative ops, triggers and optimization state) and
// back. Optimizations are encoded by the codec their codec() names; a plan whose optimization has
// none is not persisted.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "cache/archive.h"
#include "fusion/optimization_codec.h"
#include "fusion/plan.h"

namespace streamfuse::fusion {

// Whether `plan` can be persisted (its optimization, if any, has a codec).
bool persistable(const fusion::ExecutionPlan& plan);
// Throws FormatError when the plan is not persistable.
std::string encode_plan(const fusion::ExecutionPlan& plan);
// Throws FormatError.
fusion::PlanDraft decode_plan(std::string_view bytes);

// Inside larger payloads (bundles).
void put_plan(cache::OutArchive& out, const fusion::ExecutionPlan& plan);
fusion::PlanDraft get_plan(cache::InArchive& in);

// A stable name for plans: of the first op (files of plans that start alike share a folder) and
// of all ops (one file per plan).
std::uint64_t first_op_hash(const core::OpDesc& first);
std::uint64_t plan_hash(std::span<const core::OpDesc> ops);

}  // namespace streamfuse::fusion

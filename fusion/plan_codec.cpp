#include "fusion/plan_codec.h"

#include "cache/op_codec.h"
#include "core/hash_mix.h"
#include "core/relative.h"
#include "fusion/builders/registry.h"

namespace streamfuse::fusion {
namespace {

void put_ops(cache::OutArchive& out, std::span<const core::OpDesc> ops) {
  out(static_cast<std::uint32_t>(ops.size()));
  for (const core::OpDesc& op : ops) cache::put_op(out, op);
}
std::vector<core::OpDesc> get_ops(cache::InArchive& in, std::uint32_t min) {
  const std::uint32_t n = cache::get_size(in, cache::kMaxOps, "op");
  if (n < min) cache::bad_payload("an empty op list where ops are due");
  std::vector<core::OpDesc> ops;  // not reserved: a count that lies must not allocate
  for (std::uint32_t i = 0; i < n; ++i) ops.push_back(cache::get_op(in));
  return ops;
}

}  // namespace

bool persistable(const fusion::ExecutionPlan& plan) {
  return !plan.optimization || codec_named(plan.optimization->codec()) != nullptr;
}

void put_plan(cache::OutArchive& out, const fusion::ExecutionPlan& plan) {
  put_ops(out, plan.ops);
  out(static_cast<std::uint32_t>(plan.triggers.size()));
  for (const fusion::Trigger& t : plan.triggers) {
    cache::put_enum(out, t.kind);
    put_ops(out, t.ops);
  }
  out(static_cast<std::uint32_t>(plan.successors.size()));
  for (const core::OpDesc& op : plan.successors) cache::put_op(out, op);
  const OptimizationCodec* codec = nullptr;
  if (plan.optimization) {
    codec = codec_named(plan.optimization->codec());
    if (!codec)
      throw cache::FormatError("plan: its optimization (" + plan.optimization->describe() +
                               ") cannot be persisted");
  }
  cache::put_bytes(out, codec ? codec->name : std::string_view());
  if (codec) codec->encode(out, *plan.optimization);
}

fusion::PlanDraft get_plan(cache::InArchive& in) {
  fusion::PlanDraft plan;
  plan.ops = get_ops(in, 1);
  // Ops a stream could record, in the relative form its queue gives them (a plan of other ops
  // would never match, and what runs a plan relies on its ops being real).
  core::RelativeFormCheck form;
  for (const core::OpDesc& op : plan.ops)
    if (!form.accept(op)) cache::bad_payload("plan ops are not a segment's relative form");
  // A trigger waits for the ops that followed the plan when it was explored (OnOperations), or
  // for nothing (OnSync, Always): one that names no ops, or ops it does not wait for, is not one
  // the explorer makes.
  for (std::uint32_t n = cache::get_size(in, fusion::kMaxTriggers, "trigger"); n > 0; --n) {
    fusion::Trigger t;
    t.kind = cache::get_enum<fusion::Trigger::Kind>(in, 3, "trigger kind");
    const bool on_operations = t.kind == fusion::Trigger::Kind::kOnOperations;
    t.ops = get_ops(in, on_operations ? 1 : 0);
    if (!on_operations && !t.ops.empty())
      cache::bad_payload("a trigger with ops it does not wait for");
    plan.triggers.push_back(std::move(t));
  }
  for (std::uint32_t n = cache::get_size(in, fusion::kMaxSuccessors, "successor"); n > 0; --n)
    plan.successors.push_back(cache::get_op(in));
  const std::string name = cache::get_bytes(in, 256);
  if (!name.empty()) {
    const OptimizationCodec* codec = codec_named(name);
    if (!codec) cache::bad_payload("unknown optimization '" + name + "'");
    plan.optimization = codec->decode(in, plan.ops);
  }
  return plan;
}

std::string encode_plan(const fusion::ExecutionPlan& plan) {
  return cache::encode_with([&](cache::OutArchive& out) { put_plan(out, plan); });
}

fusion::PlanDraft decode_plan(std::string_view bytes) {
  return cache::decode_with(bytes, [](cache::InArchive& in) { return get_plan(in); });
}

std::uint64_t first_op_hash(const core::OpDesc& first) { return core::stable_hash_op(first); }

std::uint64_t plan_hash(std::span<const core::OpDesc> ops) {
  std::uint64_t h = ops.size();
  for (const core::OpDesc& op : ops) h = core::hash_mix(h, core::stable_hash_op(op));
  return h;
}

}  // namespace streamfuse::fusion

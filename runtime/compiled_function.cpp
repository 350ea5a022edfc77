#include "runtime/compiled_function.h"

#include <algorithm>
#include <utility>

#include "core/log.h"
#include "runtime/device_runtime.h"
#include "stream/cross_stream.h"
#include "stream/stream.h"
#include "stream/trace_capture.h"

namespace streamfuse::runtime {
namespace {

// Calls in a row that could not be traced before a function records as plain code for good
// (a function that cannot be traced once usually never can; the first reason is warned).
constexpr std::size_t kMaxUntraceable = 3;

bool logging() { return core::log_enabled(core::LogChannel::kFusion); }

}  // namespace

CompiledFunction::CompiledFunction(CompileOptions options) : options_(std::move(options)) {}
CompiledFunction::~CompiledFunction() = default;

bool CompiledFunction::device_of(std::span<stream::TensorNode* const> inputs, Device& device) {
  device = inputs.empty() ? Device::cpu() : inputs[0]->device;
  return std::all_of(inputs.begin(), inputs.end(),
                     [&](const stream::TensorNode* n) { return n->device == device; });
}

stream::Stream* CompiledFunction::fused_stream(std::span<stream::TensorNode* const> inputs,
                                               Device& device, stream::DeviceStreams*& streams) {
  if (!device_of(inputs, device)) return nullptr;
  streams = inputs.empty() ? &DeviceRuntime::get(device).streams() : inputs[0]->streams;
  if (!streams->fusion_enabled()) return nullptr;
  return streams->current();  // null while the thread exits: plain code says what that means
}

bool CompiledFunction::replay(std::span<stream::TensorNode* const> inputs,
                              std::span<const Scalar> numbers,
                              std::vector<stream::TensorNode*>& results) {
  if (stream::active_capture()) return false;  // part of an outer call's recording
  Device device;
  stream::DeviceStreams* streams = nullptr;
  stream::Stream* stream = fused_stream(inputs, device, streams);
  if (!stream) return false;

  std::shared_ptr<stream::ReplayTrace> trace;
  stream::SizeBinding sizes;
  {
    std::lock_guard lock(mutex_);
    for (Kept& k : traces_) {
      if (!k.trace->admits(device, inputs, numbers, sizes)) continue;
      k.last_use = ++clock_;
      trace = k.trace;
      ++replayed_;
      break;
    }
  }
  if (!trace) return false;
  for (const stream::TensorNode* n : inputs)
    if (n->home != stream) stream::read_from_other_stream(*streams, *stream, *n);
  trace->run(*streams, *stream, inputs, sizes, results);
  return true;
}

bool CompiledFunction::begin(std::span<stream::TensorNode* const> inputs) {
  if (stream::active_capture()) return false;
  {
    std::lock_guard lock(mutex_);
    ++recorded_;
    if (!replays_) return false;
  }
  Device device;
  stream::DeviceStreams* streams = nullptr;
  stream::Stream* stream = fused_stream(inputs, device, streams);
  if (!stream) return false;
  auto capture = std::make_unique<stream::TraceCapture>(*stream, device);
  stream->begin_capture(*capture);
  stream::set_active_capture(capture.release());
  return true;
}

void CompiledFunction::finish(std::span<stream::TensorNode* const> inputs,
                              std::span<const Scalar> numbers,
                              std::span<stream::TensorNode* const> results) {
  std::unique_ptr<stream::TraceCapture> capture(stream::active_capture());
  stream::set_active_capture(nullptr);
  capture->stream.end_capture(*capture);
  if (capture->explored) {  // the next call may match what this one made: record it too
    if (logging())
      core::log_line(core::LogChannel::kFusion, options_.name + ": recorded a call that explored " +
                                                    std::to_string(capture->steps.size()) +
                                                    " segments; not kept");
    return;
  }
  std::string why;
  std::unique_ptr<stream::ReplayTrace> trace =
      stream::ReplayTrace::make(inputs, numbers, *capture, results, why);
  std::lock_guard lock(mutex_);
  if (!trace) {
    // Once per function and reason.
    core::warn_once(
        "compile:" + std::to_string(reinterpret_cast<std::uintptr_t>(this)) + why,
        "sf::compile: " + options_.name + " is recorded as plain code, not replayed: " + why);
    if (++untraceable_ >= kMaxUntraceable) replays_ = false;
    return;
  }
  untraceable_ = 0;
  if (logging())
    core::log_line(core::LogChannel::kFusion,
                   options_.name + ": kept a trace of " + std::to_string(trace->op_count()) +
                       " ops in " + std::to_string(trace->step_count()) + " segments");
  keep_locked(std::move(trace));
}

void CompiledFunction::abort() {
  std::unique_ptr<stream::TraceCapture> capture(stream::active_capture());
  stream::set_active_capture(nullptr);
  if (capture) capture->stream.abort_capture();
}

void CompiledFunction::keep_locked(std::unique_ptr<stream::ReplayTrace> trace) {
  if (options_.dynamic_sizes) {
    for (Kept& k : traces_) {
      std::unique_ptr<stream::ReplayTrace> merged = k.trace->clone();
      if (!merged->generalize(*trace)) continue;
      if (logging())
        core::log_line(core::LogChannel::kFusion, options_.name + ": a trace now follows " +
                                                      std::to_string(merged->dynamic_size_count()) +
                                                      " argument size(s)");
      k.trace = std::move(merged);  // runs of the old one keep it alive until they end
      k.last_use = ++clock_;
      return;
    }
  }
  if (traces_.size() >= std::max<std::size_t>(options_.max_traces, 1)) {
    const auto oldest =
        std::min_element(traces_.begin(), traces_.end(),
                         [](const Kept& a, const Kept& b) { return a.last_use < b.last_use; });
    traces_.erase(oldest);
  }
  traces_.push_back(Kept{std::move(trace), ++clock_});
}

CompileStats CompiledFunction::stats() const {
  std::lock_guard lock(mutex_);
  return CompileStats{recorded_, replayed_, traces_.size(), replays_};
}

}  // namespace streamfuse::runtime

// sf::compile's type-erased half: the public Tensors and numbers of a call handed to the
// runtime's CompiledFunction as nodes.
#include "streamfuse/compile.h"

#include <boost/container/small_vector.hpp>

#include "runtime/compiled_function.h"

namespace streamfuse {
namespace detail {

class CompiledState {
 public:
  explicit CompiledState(CompileOptions options) : fn(std::move(options)) {}
  runtime::CompiledFunction fn;
};

namespace {

using Nodes = boost::container::small_vector<stream::TensorNode*, 8>;

// The nodes of `tensors` into `out`; false when one is undefined: that call runs as plain code,
// whose ops say what is wrong with it.
bool nodes_of(std::span<const Tensor> tensors, Nodes& out) {
  for (const Tensor& t : tensors) {
    if (!t.defined()) return false;
    out.push_back(t.node());
  }
  return true;
}

}  // namespace

CompiledCore::CompiledCore(CompileOptions options)
    : state_(std::make_shared<CompiledState>(std::move(options))) {}

bool CompiledCore::replay(std::span<const Tensor> tensors, std::span<const Scalar> numbers,
                          std::vector<Tensor>& results) const {
  Nodes inputs;
  std::vector<stream::TensorNode*> nodes;
  if (!nodes_of(tensors, inputs) || !state_->fn.replay(inputs, numbers, nodes)) return false;
  results.reserve(nodes.size());
  for (stream::TensorNode* n : nodes) results.emplace_back(n);  // adopts the reference
  return true;
}

bool CompiledCore::begin(std::span<const Tensor> tensors) const {
  Nodes inputs;
  return nodes_of(tensors, inputs) && state_->fn.begin(inputs);
}

void CompiledCore::finish(std::span<const Tensor> tensors, std::span<const Scalar> numbers,
                          std::span<const Tensor> results) const {
  Nodes inputs, outs;
  nodes_of(tensors, inputs);       // all defined: begin() recorded the call
  if (!nodes_of(results, outs)) {  // an undefined result: nothing to replay it from
    state_->fn.abort();
    return;
  }
  state_->fn.finish(inputs, numbers, outs);
}

void CompiledCore::abort() const { state_->fn.abort(); }

CompileStats CompiledCore::stats() const { return state_->fn.stats(); }

}  // namespace detail
}  // namespace streamfuse

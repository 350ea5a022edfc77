// sf::compile's type-erased half: the public Tensors and numbers of a call handed to the
// runtime's CompiledFunction as nodes.
#include "streamfuse/compile.h"

#include <boost/container/small_vector.hpp>

#include "runtime/compiled_function.h"
#include "streamfuse/error.h"

namespace streamfuse {
namespace detail {

class CompiledState {
 public:
  explicit CompiledState(CompileOptions options) : fn(std::move(options)) {}
  runtime::CompiledFunction fn;
};

namespace {

using Nodes = boost::container::small_vector<stream::TensorNode*, 8>;

// The nodes of a call's tensors; throws Error naming the function for an undefined one.
Nodes nodes_of(std::span<const Tensor> tensors, const char* what) {
  Nodes nodes;
  for (const Tensor& t : tensors) {
    if (!t.defined())
      throw Error(std::string("sf::compile: ") + what +
                  " an undefined Tensor (default-constructed or moved from)");
    nodes.push_back(t.node());
  }
  return nodes;
}

}  // namespace

CompiledCore::CompiledCore(CompileOptions options)
    : state_(std::make_shared<CompiledState>(std::move(options))) {}

bool CompiledCore::replay(std::span<const Tensor> tensors, std::span<const Scalar> numbers,
                          std::vector<Tensor>& results) const {
  // An undefined argument records: the function's own code then says what is wrong with it.
  for (const Tensor& t : tensors)
    if (!t.defined()) return false;
  const Nodes inputs = nodes_of(tensors, "an argument is");
  std::vector<stream::TensorNode*> nodes;
  if (!state_->fn.replay(inputs, numbers, nodes)) return false;
  results.reserve(nodes.size());
  for (stream::TensorNode* n : nodes) results.emplace_back(n);  // adopts the reference
  return true;
}

bool CompiledCore::begin(std::span<const Tensor> tensors) const {
  for (const Tensor& t : tensors)
    if (!t.defined()) return false;
  return state_->fn.begin(nodes_of(tensors, "an argument is"));
}

void CompiledCore::finish(std::span<const Tensor> tensors, std::span<const Scalar> numbers,
                          std::span<const Tensor> results) const {
  Nodes outs;
  for (const Tensor& t : results) {
    if (!t.defined()) {  // nothing to replay it from: record as plain code
      state_->fn.abort();
      return;
    }
    outs.push_back(t.node());
  }
  state_->fn.finish(nodes_of(tensors, "an argument is"), numbers, outs);
}

void CompiledCore::abort() const { state_->fn.abort(); }

CompileStats CompiledCore::stats() const { return state_->fn.stats(); }

}  // namespace detail
}  // namespace streamfuse

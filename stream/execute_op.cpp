#include "stream/execute_op.h"

#include <boost/container/small_vector.hpp>

#include "core/log.h"

namespace streamfuse::stream {

void execute_op(const core::OpDesc& op, HandleContainer& handles, backends::Backend& backend) {
  if (op.kind == core::OpKind::kDrop) {
    handles.erase(op.inputs[0].id);
    return;
  }
  core::Failure failure;
  boost::container::small_vector<backends::TensorHandle, 1> outputs(op.outputs.size());
  {
    boost::container::small_vector<backends::TensorHandle, 3> inputs(op.inputs.size());
    failure = handles.gather(op, inputs);
    if (!failure) {
      try {
        backend.execute(op, inputs, outputs);
      } catch (const std::exception& e) {
        failure = std::make_shared<const std::string>(std::string(e.what()) + " [while running " +
                                                      to_string(op) + "]");
        core::warn_once(*failure, "an op failed; reading its result will raise: " + *failure);
      }
    }
  }  // inputs released before outputs are published
  for (std::size_t i = 0; i < op.outputs.size(); ++i) {
    if (failure)
      handles.mark_failed(op.outputs[i].id, failure);
    else
      handles.insert(op.outputs[i].id, std::move(outputs[i]));
  }
  if (log_enabled(core::LogChannel::kStream))
    log_line(core::LogChannel::kStream, "ran " + to_string(op));
}

}  // namespace streamfuse::stream

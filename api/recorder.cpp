#include "api/recorder.h"

#include <boost/container/small_vector.hpp>

#include "runtime/runtime.h"
#include "streamfuse/error.h"

namespace streamfuse::api {

stream::TensorNode& node_of(const Tensor& t, std::string_view op) {
  if (!t.defined())
    throw Error(std::string(op) +
                ": an operand is an undefined Tensor (default-constructed or "
                "moved from); assign it a value first");
  return *t.node();
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  return t.node()->shape.to_string() + " " + std::string(dtype_name(t.node()->dtype));
}

std::string describe_all(std::span<const Tensor> ts) {
  std::string s;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (i) s += i + 1 == ts.size() ? " and " : ", ";
    s += describe(ts[i]);
  }
  return s;
}

Device common_device(std::span<const Tensor> operands, std::string_view op) {
  Device d = node_of(operands[0], op).device;
  for (const Tensor& t : operands.subspan(1)) {
    if (node_of(t, op).device != d)
      throw DeviceError(std::string(op) + ": operands are on different devices (" + d.to_string() +
                        " and " + t.node()->device.to_string() + "); move one with .to(device)");
  }
  return d;
}

Tensor record(core::OpKind kind, std::span<Tensor> operands, const Shape& shape, DType dtype,
              Device device, const core::OpAttrs& attrs, std::span<const Scalar> scalars) {
  boost::container::small_vector<stream::TensorNode*, 3> nodes;
  for (Tensor& t : operands) nodes.push_back(t.node());
  return Tensor(runtime::record(device, kind, nodes, shape, dtype, attrs, scalars));
}

}  // namespace streamfuse::api

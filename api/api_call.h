// Errors that name the call the user wrote. A composite API function (nn::softmax, zeros, clamp,
// unsqueeze, ...) is made of other API ops, and an error one of them raises names that op
// ("maximum: shapes [2, 3] f32 and [4] f32 do not broadcast: ..."). A composite runs its steps
// through api_call, which renames such an error to the composite and keeps its type:
//   "clamp: shapes [2, 3] f32 and [4] f32 do not broadcast: ... (in its maximum step)".
// Nested composites (zeros_like -> zeros -> full): the outermost call is named, the step is the
// op that raised the error. Only failures pay: on success api_call costs what a try block costs
// (nothing, with table-based unwinding), so the per-op path of every op is unchanged.
#pragma once

#include <string_view>
#include <utility>

#include "streamfuse/error.h"

namespace streamfuse::api {

// Called in a catch block of an Error: rethrows it as raised by `call`. An error whose message
// does not start with an op's name ("max: ...") or already starts with `call` is rethrown as it
// is (a device that does not exist, a bad environment variable).
[[noreturn]] void rethrow_as_call(std::string_view call);

// Runs `steps` (the body of the API function `call`) and returns what it returns; an Error it
// throws is rethrown as rethrow_as_call says.
template <class F>
decltype(auto) api_call(std::string_view call, F&& steps) {
  try {
    return std::forward<F>(steps)();
  } catch (const Error&) {
    rethrow_as_call(call);
  }
}

}  // namespace streamfuse::api

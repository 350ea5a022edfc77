#include "api/api_call.h"

#include <exception>
#include <string>
#include <utility>

namespace streamfuse::api {
namespace {

// An error api_call renamed: it keeps the step that raised it and the rest of its message, so
// that an enclosing composite names itself instead, with the same step.
class RenamedError {
 public:
  virtual ~RenamedError() = default;
  // The same error, raised by `call`.
  virtual std::exception_ptr as_raised_by(std::string_view call) const = 0;
};

// Thrown as (and caught by) E, the type the step threw.
template <class E>
class Renamed final : public E, public RenamedError {
 public:
  Renamed(std::string_view call, std::string step, std::string detail)
      : E(std::string(call) + ": " + detail + " (in its " + step + " step)"),
        step_(std::move(step)),
        detail_(std::move(detail)) {}
  std::exception_ptr as_raised_by(std::string_view call) const override {
    return std::make_exception_ptr(Renamed(call, step_, detail_));
  }

 private:
  std::string step_;
  std::string detail_;
};

// Op names are lower-case words ("max", "from_blob", "to_vector<bool>"); messages of other
// origins start otherwise ("cuda:0: no such device", "STREAMFUSE_FUSION='x' is not valid").
bool is_op_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '<' || c == '>'))
      return false;
  return true;
}

template <class E>
[[noreturn]] void rename(const E& e, std::string_view call) {
  const std::string_view what = e.what();
  const std::size_t colon = what.find(": ");
  const std::string_view step = what.substr(0, colon);
  if (colon == std::string_view::npos || step == call || !is_op_name(step)) throw;
  throw Renamed<E>(call, std::string(step), std::string(what.substr(colon + 2)));
}

}  // namespace

void rethrow_as_call(std::string_view call) {
  // Every subclass error.h declares, most derived first, so that the type is kept.
  try {
    throw;
  } catch (const RenamedError& r) {
    std::rethrow_exception(r.as_raised_by(call));
  } catch (const ShapeError& e) {
    rename(e, call);
  } catch (const DTypeError& e) {
    rename(e, call);
  } catch (const DeviceError& e) {
    rename(e, call);
  } catch (const CompileError& e) {
    rename(e, call);
  } catch (const CacheError& e) {
    rename(e, call);
  } catch (const Error& e) {
    rename(e, call);
  }
}

}  // namespace streamfuse::api

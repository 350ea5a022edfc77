// sf::compile: a function of tensors recorded once and replayed. Its first calls record their ops
// as any code does; once a call ran only plans that were known already, what it ran is kept as
// a trace, and a later call whose guards hold runs the trace's segments directly: no per-op
// validation, recording or matching. A call whose guards do not hold records, correctly, and
// its trace joins the function's.
//
//   auto mlp = sf::compile([](const sf::Tensor& x, const sf::Tensor& w1, const sf::Tensor& w2) {
//     return sf::matmul(sf::nn::gelu(sf::matmul(x, w1)), w2);
//   });
//   sf::Tensor y = mlp(x, w1, w2);
//
// Arguments: tensors (by value or reference), std::vector<Tensor>, and numbers. Results: a
// Tensor, std::vector<Tensor>, std::pair or std::tuple of Tensors, or nothing.
//
// Guards (what a call must share with a traced one to replay it): the device; each tensor
// argument's dtype, rank and which arguments are the same tensor; where the arguments have size 1
// and which of their sizes are equal; every number argument, bit for bit (a number that changes
// from call to call is best passed as a 0-d tensor, which the ops read like a number). Sizes
// are exact at first; a function recorded again at another size of some dimension, running the
// same plans on the same ops with every size that changed following that dimension (or the
// product of two: a reshape to rows * columns), replays any size of it from then on
// (CompileOptions::dynamic_sizes).
//
// What a replay cannot do, and so never does: the function's C++ code does not run, so it must
// compute the same ops for the same guards. Numbers (and shapes, flags, anything not a tensor)
// that it reads from a lambda's captures or from globals are taken as they were when the traced
// call ran: pass the ones that change as arguments. Calls that read a value on the host (item,
// to_vector, printing), read tensors they were not given as arguments (captured by a lambda, or
// global), keep a tensor they made beyond the call, or draw random numbers, are never replayed: the
// function then records every call as plain code does, and says why once (a warning). A call
// inside another compiled function's recording runs as plain code, part of the outer trace.
// The function's code must not make its ops depend on a size other than through the sizes
// themselves (a branch on `x.size(0) > 100`, a constant computed from a size): set dynamic_sizes
// to false for such a function.
//
// A call runs everything recorded before it first (a compiled call is a segment boundary, as a
// graph break is); its ops run before it returns. Errors: a call that records validates as
// plain code does; a replayed call's ops are the recorded ones, and a failure while they run is
// kept with the results and raised when they are read, naming the op, as without compile.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamfuse/dtype.h"
#include "streamfuse/tensor.h"

namespace streamfuse {

struct CompileOptions {
  // Names the function in logs and warnings.
  std::string name = "compiled function";
  // Whether a size that changed between two recorded calls may take any value after (see above).
  bool dynamic_sizes = true;
  // The most traces kept (different guards); past it the least recently used goes.
  std::size_t max_traces = 8;
};

// What a compiled function has done, for tests and tuning.
struct CompileStats {
  std::size_t recorded_calls = 0;  // calls that ran the function's code
  std::size_t replayed_calls = 0;  // calls that ran a trace
  std::size_t traces = 0;          // traces kept now
  bool replays = true;             // false once the function was found not replayable
};

namespace detail {

class CompiledState;  // the library's

// The type-erased half of a compiled function (compile.cpp).
class CompiledCore {
 public:
  explicit CompiledCore(CompileOptions options);
  // True, with the results in `results`, when a trace admitted the call and ran.
  bool replay(std::span<const Tensor> tensors, std::span<const Scalar> numbers,
              std::vector<Tensor>& results) const;
  // Starts recording a call that did not replay; false when this call is not recorded (fusion
  // off, inside another compiled call's recording, or the function is not replayable).
  bool begin(std::span<const Tensor> tensors) const;
  // Ends the recording of a call that returned `results`.
  void finish(std::span<const Tensor> tensors, std::span<const Scalar> numbers,
              std::span<const Tensor> results) const;
  // Ends the recording of a call that threw.
  void abort() const;
  CompileStats stats() const;

 private:
  std::shared_ptr<CompiledState> state_;
};

// A call's arguments as the guards see them: the tensors (one reference each, held for the
// call) and the numbers.
struct CallArguments {
  std::vector<Tensor> tensors;
  std::vector<Scalar> numbers;

  void add(const Tensor& t) { tensors.push_back(t); }
  void add(const std::vector<Tensor>& ts) { tensors.insert(tensors.end(), ts.begin(), ts.end()); }
  template <class T>
  requires std::is_arithmetic_v<T>
  void add(T v) { numbers.emplace_back(v); }
};

template <class T>
inline constexpr bool kIsArgument =
    std::is_same_v<T, Tensor> || std::is_same_v<T, std::vector<Tensor>> || std::is_arithmetic_v<T>;

// Results, flattened to tensors and back.
template <class R>
struct Results;
template <>
struct Results<Tensor> {
  static void flatten(const Tensor& r, std::vector<Tensor>& out) { out.push_back(r); }
  static Tensor rebuild(std::vector<Tensor>& in, std::size_t& at) { return std::move(in[at++]); }
};
template <>
struct Results<std::vector<Tensor>> {
  static void flatten(const std::vector<Tensor>& r, std::vector<Tensor>& out) {
    out.insert(out.end(), r.begin(), r.end());
  }
  static std::vector<Tensor> rebuild(std::vector<Tensor>& in, std::size_t& at) {
    std::vector<Tensor> r(std::make_move_iterator(in.begin() + static_cast<std::ptrdiff_t>(at)),
                          std::make_move_iterator(in.end()));
    at = in.size();
    return r;
  }
};
template <class... T>
struct Results<std::tuple<T...>> {
  static_assert((std::is_same_v<T, Tensor> && ...),
                "sf::compile: a tuple result may hold Tensors only");
  static void flatten(const std::tuple<T...>& r, std::vector<Tensor>& out) {
    std::apply([&](const auto&... t) { (out.push_back(t), ...); }, r);
  }
  static std::tuple<T...> rebuild(std::vector<Tensor>& in, std::size_t& at) {
    return std::tuple<T...>{Results<T>::rebuild(in, at)...};
  }
};
template <class A, class B>
struct Results<std::pair<A, B>> {
  static_assert(std::is_same_v<A, Tensor> && std::is_same_v<B, Tensor>,
                "sf::compile: a pair result may hold Tensors only");
  static void flatten(const std::pair<A, B>& r, std::vector<Tensor>& out) {
    out.push_back(r.first);
    out.push_back(r.second);
  }
  static std::pair<A, B> rebuild(std::vector<Tensor>& in, std::size_t& at) {
    Tensor a = Results<Tensor>::rebuild(in, at);
    return {std::move(a), Results<Tensor>::rebuild(in, at)};
  }
};

}  // namespace detail

// A function compiled by sf::compile. Copies share its traces. Thread-safe: calls from several
// threads each record or replay on their own thread's stream.
template <class F>
class Compiled {
 public:
  Compiled(F fn, CompileOptions options)
      : fn_(std::make_shared<F>(std::move(fn))), core_(std::move(options)) {}

  template <class... A>
  auto operator()(A&&... args) const -> std::invoke_result_t<F&, A...> {
    static_assert((detail::kIsArgument<std::remove_cvref_t<A>> && ...),
                  "sf::compile: arguments must be Tensors, std::vector<Tensor>s or numbers");
    using R = std::invoke_result_t<F&, A...>;
    detail::CallArguments call;
    (call.add(args), ...);
    if constexpr (!std::is_void_v<R>) {
      static_assert(!std::is_reference_v<R>, "sf::compile: return results by value");
      std::vector<Tensor> replayed;
      if (core_.replay(call.tensors, call.numbers, replayed)) {
        std::size_t at = 0;
        return detail::Results<R>::rebuild(replayed, at);
      }
    } else {
      std::vector<Tensor> replayed;
      if (core_.replay(call.tensors, call.numbers, replayed)) return;
    }
    if (!core_.begin(call.tensors)) return std::invoke(*fn_, std::forward<A>(args)...);
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(*fn_, std::forward<A>(args)...);
        core_.finish(call.tensors, call.numbers, {});
      } else {
        R result = std::invoke(*fn_, std::forward<A>(args)...);
        std::vector<Tensor> flat;
        detail::Results<R>::flatten(result, flat);
        core_.finish(call.tensors, call.numbers, flat);
        return result;
      }
    } catch (...) {
      core_.abort();
      throw;
    }
  }

  CompileStats stats() const { return core_.stats(); }

 private:
  std::shared_ptr<F> fn_;
  detail::CompiledCore core_;
};

// Compiles `fn` (see the top of this file).
template <class F>
Compiled<std::decay_t<F>> compile(F&& fn, CompileOptions options = {}) {
  return Compiled<std::decay_t<F>>(std::forward<F>(fn), std::move(options));
}

}  // namespace streamfuse

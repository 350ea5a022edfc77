// The operation IR: one description of every op, used for matching, fusion, fallback execution,
// hashing and serialization. Shared vocabulary of every folder.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/container/small_vector.hpp>

#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::core {

using TensorId = std::uint64_t;

// Why a tensor has no value: the op that should have made it (or one before it) failed. Kept
// with the tensor and raised when something reads it.
using Failure = std::shared_ptr<const std::string>;

// How an op uses a tensor. NotInit: the op creates it. ReadWrite: this is the last use of the
// handle (a moved temporary), so the op may reuse its memory. ReadOnly: anything else.
enum class TensorStatus : std::uint8_t { kNotInit, kReadOnly, kReadWrite };

enum class OpCategory : std::uint8_t {
  kLifetime,  // Drop: the last handle to a tensor went away
  kCreation,  // no tensor inputs
  kUnary,     // one operand, result of the operand dtype
  kBinary,    // two operands (or one and a scalar), arithmetic
  kCompare,   // two operands (or one and a scalar), bool result
  kLogical,   // operands read as bool, bool result
  kSelect,    // where(cond, a, b)
  kCast,      // dtype conversion
  kReduce,    // over one axis or all
  kMatmul,
  kMovement,  // views and copies
  kIndex,     // reads at positions another tensor holds (index_select, gather)
  kUpdate,    // a tensor with part of it replaced (in place when it is the last use)
  kScan,      // along one axis, each result from the axis' elements in order (cumsum, argsort)
  kWindow,    // a window slid over the last two dimensions (conv2d, max_pool2d, avg_pool2d)
};

// Every op kind, listed once: X(Name, "api name", category, tensor arity; -1 = variadic).
// Binary and compare ops take either two tensors, or one tensor and one scalar (attrs.scalar_side).
#define STREAMFUSE_OP_KINDS(X)               \
  X(Drop, "drop", kLifetime, 1)              \
  X(Full, "full", kCreation, 0)              \
  X(Arange, "arange", kCreation, 0)          \
  X(RandUniform, "rand", kCreation, 0)       \
  X(RandNormal, "randn", kCreation, 0)       \
  X(Neg, "neg", kUnary, 1)                   \
  X(Abs, "abs", kUnary, 1)                   \
  X(Exp, "exp", kUnary, 1)                   \
  X(Log, "log", kUnary, 1)                   \
  X(Sqrt, "sqrt", kUnary, 1)                 \
  X(Rsqrt, "rsqrt", kUnary, 1)               \
  X(Recip, "recip", kUnary, 1)               \
  X(Sin, "sin", kUnary, 1)                   \
  X(Cos, "cos", kUnary, 1)                   \
  X(Tanh, "tanh", kUnary, 1)                 \
  X(Erf, "erf", kUnary, 1)                   \
  X(Sigmoid, "sigmoid", kUnary, 1)           \
  X(Relu, "relu", kUnary, 1)                 \
  X(Add, "add", kBinary, 2)                  \
  X(Sub, "sub", kBinary, 2)                  \
  X(Mul, "mul", kBinary, 2)                  \
  X(Div, "div", kBinary, 2)                  \
  X(Pow, "pow", kBinary, 2)                  \
  X(Maximum, "maximum", kBinary, 2)          \
  X(Minimum, "minimum", kBinary, 2)          \
  X(Eq, "eq", kCompare, 2)                   \
  X(Ne, "ne", kCompare, 2)                   \
  X(Lt, "lt", kCompare, 2)                   \
  X(Le, "le", kCompare, 2)                   \
  X(Gt, "gt", kCompare, 2)                   \
  X(Ge, "ge", kCompare, 2)                   \
  X(LogicalAnd, "logical_and", kLogical, 2)  \
  X(LogicalOr, "logical_or", kLogical, 2)    \
  X(LogicalNot, "logical_not", kLogical, 1)  \
  X(Where, "where", kSelect, 3)              \
  X(Cast, "to", kCast, 1)                    \
  X(Sum, "sum", kReduce, 1)                  \
  X(Mean, "mean", kReduce, 1)                \
  X(Max, "max", kReduce, 1)                  \
  X(Min, "min", kReduce, 1)                  \
  X(Argmax, "argmax", kReduce, 1)            \
  X(Matmul, "matmul", kMatmul, 2)            \
  X(Reshape, "reshape", kMovement, 1)        \
  X(Permute, "permute", kMovement, 1)        \
  X(Expand, "expand", kMovement, 1)          \
  X(Slice, "slice", kMovement, 1)            \
  X(Cat, "cat", kMovement, -1)               \
  X(Copy, "contiguous", kMovement, 1)        \
  X(IndexSelect, "index_select", kIndex, 2)  \
  X(Gather, "gather", kIndex, 2)             \
  X(SliceUpdate, "slice_update", kUpdate, 2) \
  X(Cumsum, "cumsum", kScan, 1)              \
  X(Argsort, "argsort", kScan, 1)            \
  X(IndexPut, "index_put", kUpdate, 3)       \
  X(Conv2d, "conv2d", kWindow, 2)            \
  X(MaxPool2d, "max_pool2d", kWindow, 1)     \
  X(AvgPool2d, "avg_pool2d", kWindow, 1)     \
  X(Scatter, "scatter", kUpdate, 3)          \
  X(ScatterAdd, "scatter_add", kUpdate, 3)

enum class OpKind : std::uint8_t {
#define STREAMFUSE_X(name, api, category, arity) k##name,
  STREAMFUSE_OP_KINDS(STREAMFUSE_X)
#undef STREAMFUSE_X
};
// How many kinds there are (decoders reject an OpKind past them).
#define STREAMFUSE_X(name, api, category, arity) +1
inline constexpr unsigned kNumOpKinds = 0 STREAMFUSE_OP_KINDS(STREAMFUSE_X);
#undef STREAMFUSE_X

struct OpInfo {
  std::string_view name;  // the API name, used in messages and logs
  OpCategory category;
  int arity;  // tensor operands; -1 for variadic
};

// The static facts of a kind.
const OpInfo& op_info(OpKind kind);
inline std::string_view op_name(OpKind kind) { return op_info(kind).name; }
inline OpCategory op_category(OpKind kind) { return op_info(kind).category; }
// True for the kinds an element-wise kernel computes (unary .. cast).
bool is_elementwise(OpKind kind);

// Which operand of a binary or compare op is the scalar in scalars[0].
enum class ScalarSide : std::uint8_t { kNone, kLhs, kRhs };

// Reduce over every element.
inline constexpr std::int8_t kAllAxes = -1;
// The dtype reduction `kind` gives for input dtype `in`: sum keeps float dtypes and sums integers
// and bool to i64, mean gives f32 for them, max and min keep the dtype, argmax gives i64.
DType reduced_dtype(OpKind kind, DType in);

// The window of a kWindow op over the last two dimensions (height, width) of its input: each
// output position (oh, ow) reads input rows oh * stride[0] - padding[0] + kh * dilation[0] for kh
// in [0, kernel[0]) (columns alike), positions in the padding reading 0 (conv) or nothing (pools).
struct Window {
  std::array<std::int32_t, 2> kernel{1, 1};  // pools; Conv2d: the weight's last two sizes
  std::array<std::int32_t, 2> stride{1, 1};
  std::array<std::int32_t, 2> padding{0, 0};
  std::array<std::int32_t, 2> dilation{1, 1};
  std::int32_t groups = 1;        // Conv2d: channels split into this many independent groups
  bool ceil_mode = false;         // pools: a last, partial window where floor would drop it
  bool count_include_pad = true;  // AvgPool2d: padding positions count in the divisor

  // Every field, as eight-byte words where they pack: matching compares a recorded op's
  // attributes with a plan's at every op, and the defaulted compare called memcmp per array.
  friend bool operator==(const Window& a, const Window& b) {
    return pair_bits(a.kernel) == pair_bits(b.kernel) &&
           pair_bits(a.stride) == pair_bits(b.stride) &&
           pair_bits(a.padding) == pair_bits(b.padding) &&
           pair_bits(a.dilation) == pair_bits(b.dilation) && a.groups == b.groups &&
           a.ceil_mode == b.ceil_mode && a.count_include_pad == b.count_include_pad;
  }

 private:
  static std::uint64_t pair_bits(const std::array<std::int32_t, 2>& p) {
    return std::bit_cast<std::uint64_t>(p);
  }
};
// A field added to Window must be added to its operator== (and to hash_op).
static_assert(sizeof(Window) == 40);

// The [N, C, H, W] output shape of window op `kind` over `input` ([N, C, H, W]) with `window`
// (Conv2d: `weight` [O, C / groups, kH, kW] gives kernel and O), or nullopt with `why` saying
// what is wrong. The API's rule, and the check of window ops read from files.
std::optional<Shape> window_result_shape(OpKind kind, const Shape& input, const Shape& weight,
                                         const Window& window, std::string& why);

// The non-tensor, non-scalar parameters of an op. Structural: they are part of the relative form.
struct OpAttrs {
  // Element-wise ops: the dtype tensor and scalar operands are read as (for compare ops the
  // promoted operand dtype, for where the value dtype, for cast the source dtype).
  DType dtype = kF32;
  ScalarSide scalar_side = ScalarSide::kNone;
  // Reduce (kAllAxes or a normalized axis), Slice, Cat, IndexSelect, Gather, SliceUpdate,
  // IndexPut, Cumsum, Argsort, Scatter, ScatterAdd.
  std::int8_t axis = 0;
  bool keepdim = false;
  // Permute: output dimension i is input dimension perm[i].
  std::array<std::int8_t, kMaxRank> perm{};
  // kWindow ops.
  Window window;

  // As Window's: the permutation as one word, not a memcmp call.
  friend bool operator==(const OpAttrs& a, const OpAttrs& b) {
    static_assert(sizeof(a.perm) == sizeof(std::uint64_t));
    return a.dtype == b.dtype && a.scalar_side == b.scalar_side && a.axis == b.axis &&
           a.keepdim == b.keepdim &&
           std::bit_cast<std::uint64_t>(a.perm) == std::bit_cast<std::uint64_t>(b.perm) &&
           a.window == b.window;
  }
};
// A field added to OpAttrs must be added to its operator== (and to hash_op).
static_assert(sizeof(OpAttrs) == 52);

struct TensorDesc {
  TensorId id = 0;
  Shape shape;
  DType dtype = kF32;
  TensorStatus status = TensorStatus::kNotInit;

  friend bool operator==(const TensorDesc&, const TensorDesc&) = default;
};

// One op. Scalars by kind:
//   Full {value}; Arange {start, step}; RandUniform {seed, offset, low, high};
//   RandNormal {seed, offset, mean, std}; binary/compare with a scalar operand {value};
//   Slice {start, step}; SliceUpdate {start}; Argsort {descending: 0 or 1}.
// Reshape, Expand and Cat take their sizes from the output's shape.
// IndexSelect(x, indices) [axis]: x with its axis replaced by the indices' dimensions, each
// position taking x's slice at that index. Gather(x, index) [axis]: index's shape, each element
// x's at the same position but along axis the index there. Indices are i32 or i64.
// SliceUpdate(x, src) [axis] {start}: x with src (x's dtype; x's shape but along axis) in place of
// its elements start .. start + src's size along axis; x's memory when x is its last use.
// IndexPut(x, indices, src) [axis]: x with its slices along axis at the (1-D, i32 or i64)
// indices replaced by src's slices in order (a repeated index: the last one's), in x's memory
// when x is its last use.
// Cumsum(x) [axis]: running sums along axis, accumulated in double for float dtypes (each prefix
// rounded to the dtype) and in wrapping i64 for integers and bool (an i64 result). Argsort(x)
// [axis] {descending}: the i64 positions along axis that sort it, stably; NaN is the largest.
// Scatter(x, index, src) [axis]: x with src's element at each position p of index (index: x's
// rank; no dimension larger than src's, nor than x's but along axis) written at p with its axis
// coordinate replaced by index[p]; a repeated target takes the last such element along the axis.
// ScatterAdd: the same, src's elements added (in that order; 16-bit floats rounded at each
// step, integers wrapping). src is of x's dtype; in x's memory when x is its last use.
// Conv2d(x, weight) [window]: x [N, C, H, W], weight [O, C / groups, kH, kW] (a float dtype, both
// of the op's dtype), cross-correlation, no bias (the API adds it as an element-wise op, so it
// fuses with what follows). MaxPool2d(x) / AvgPool2d(x) [window]: the largest (NaN if any) / the
// mean of each window of each channel; the divisor of AvgPool2d counts the window's positions
// inside the input, plus those in the padding when window.count_include_pad (never those a
// ceil_mode window reaches past the padding), as PyTorch's.
struct OpDesc {
  OpKind kind = OpKind::kDrop;
  boost::container::small_vector<TensorDesc, 3> inputs;
  boost::container::small_vector<TensorDesc, 1> outputs;
  boost::container::small_vector<Scalar, 4> scalars;
  OpAttrs attrs;

  friend bool operator==(const OpDesc&, const OpDesc&) = default;
};

// A hash of everything operator== compares, for tables in memory (the plan tree, the plan
// store's index, plans' successors): quick, as the policy hashes every segment's first op. It
// may change between versions; nothing stored on disk derives from it.
std::uint64_t hash_op(const OpDesc& op);
// The same fields hashed for what names files (fusion/plan_codec.h: the folders and names of
// cached plans, which bundles keep): it must not change, or every cached plan goes unused.
std::uint64_t stable_hash_op(const OpDesc& op);

// Which form an op is in (core/relative.h): the form decides what its numbers mean, and
// nothing in the op itself tells (a relative scalar placeholder is a valid value).
enum class OpForm : std::uint8_t {
  kGlobal,    // as recorded: real sizes and scalar values
  kRelative,  // as in plans: sizes are size ids (0 is size 1), scalars positional placeholders
};
// For logs, tools and test failures. Global: "mul(t3:[2, 3]:f32:ro, 0.5) -> t5:[2, 3]:f32".
// Relative: each size id k > 0 as sK and id 0 as 1, each scalar placeholder i as $i:
// "mul(t0:[s1, s2]:f32:ro, $0) -> t1:[s1, s2]:f32". Every printer of ops goes through here, so
// that logs and streamfuse-cache show one op the same way.
std::string to_string(const OpDesc& op, OpForm form = OpForm::kGlobal);
std::string_view status_name(TensorStatus s);

// The shape of the NumPy matrix product of operands shaped `a` and `b` (a 1-D `a` is a row, a
// 1-D `b` a column; batch dimensions broadcast), or nullopt with `why` saying what is wrong
// ("inner dimensions differ (3 vs 4)"). The API's rule, and the check of matmuls read from files.
std::optional<Shape> matmul_result_shape(const Shape& a, const Shape& b, std::string& why);

}  // namespace streamfuse::core

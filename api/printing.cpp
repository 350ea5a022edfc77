// operator<< for tensors, PyTorch style: one format for all elements, aligned columns, and
// large tensors summarized with "..." (the first and last three entries of each dimension).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "api/api_call.h"
#include "streamfuse/ops.h"

namespace streamfuse {
namespace {

constexpr std::int64_t kSummarizeAbove = 1000;
constexpr std::int64_t kEdgeItems = 3;

// Every element as double (exact for all dtypes but i64 beyond 2^53, printed from `ints`).
struct Values {
  std::vector<double> real;
  std::vector<std::int64_t> ints;  // for integer and bool dtypes
};

Values read_values(const Tensor& t) {
  Values v;
  switch (t.dtype()) {
    case kF32: {
      auto x = t.to_vector<float>();
      v.real.assign(x.begin(), x.end());
      break;
    }
    case kF16:
      for (Half h : t.to_vector<Half>()) v.real.push_back(static_cast<float>(h));
      break;
    case kBF16:
      for (BFloat16 h : t.to_vector<BFloat16>()) v.real.push_back(static_cast<float>(h));
      break;
    case kI32: {
      auto x = t.to_vector<std::int32_t>();
      v.ints.assign(x.begin(), x.end());
      break;
    }
    case kI64:
      v.ints = t.to_vector<std::int64_t>();
      break;
    case kBool:
      for (bool b : t.to_vector<bool>()) v.ints.push_back(b);
      break;
    case kI8:
      for (std::int8_t x : t.to_vector<std::int8_t>()) v.ints.push_back(x);
      break;
    case kU8:
      for (std::uint8_t x : t.to_vector<std::uint8_t>()) v.ints.push_back(x);
      break;
    case kF64:
      v.real = t.to_vector<double>();
      break;
  }
  return v;
}

enum class FloatStyle { kIntegral, kFixed, kScientific };

FloatStyle choose_style(const std::vector<double>& xs) {
  double max_abs = 0, min_abs = INFINITY;
  bool integral = true;
  for (double x : xs) {
    if (!std::isfinite(x)) continue;
    const double a = std::fabs(x);
    max_abs = std::max(max_abs, a);
    if (a > 0) min_abs = std::min(min_abs, a);
    integral = integral && x == std::nearbyint(x);
  }
  if (max_abs >= 1e8 || (min_abs < 1e-4 && min_abs > 0) ||
      (min_abs != INFINITY && max_abs / min_abs > 1e6 && !integral))
    return FloatStyle::kScientific;
  return integral ? FloatStyle::kIntegral : FloatStyle::kFixed;
}

std::string format_float(double x, FloatStyle style) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[48];
  switch (style) {
    case FloatStyle::kIntegral:
      std::snprintf(buf, sizeof buf, "%.0f.", x);
      break;
    case FloatStyle::kFixed:
      std::snprintf(buf, sizeof buf, "%.4f", x);
      break;
    case FloatStyle::kScientific:
      std::snprintf(buf, sizeof buf, "%.4e", x);
      break;
  }
  return buf;
}

// Walks the shape in print order; the cells (formatted elements) are only those printed.
class Printer {
 public:
  Printer(const Shape& shape, bool summarize) : shape_(shape), summarize_(summarize) {}

  // The flat indices of the printed elements, in print order.
  std::vector<std::int64_t> printed_indices() const {
    std::vector<std::int64_t> out;
    walk(0, 0, [&](std::int64_t i) { out.push_back(i); });
    return out;
  }

  // Prints `cells` (one per printed index, in order) with brackets, separators and "...".
  void print(std::ostream& os, const std::vector<std::string>& cells, int indent) const {
    std::size_t width = 0;
    for (const std::string& c : cells) width = std::max(width, c.size());
    std::size_t next = 0;
    print_dim(os, 0, indent, [&] {
      const std::string& c = cells[next++];
      os << std::string(width - c.size(), ' ') << c;
    });
  }

 private:
  std::int64_t stride(int dim) const {
    std::int64_t s = 1;
    for (int d = dim + 1; d < shape_.rank(); ++d) s *= shape_[d];
    return s;
  }
  bool cut(int dim) const { return summarize_ && shape_[dim] > 2 * kEdgeItems; }

  template <class F>
  void walk(int dim, std::int64_t offset, F&& visit) const {
    if (dim == shape_.rank()) return visit(offset);
    for (std::int64_t i = 0; i < shape_[dim]; ++i) {
      if (cut(dim) && i == kEdgeItems) i = shape_[dim] - kEdgeItems;
      walk(dim + 1, offset + i * stride(dim), visit);
    }
  }

  template <class F>
  void print_dim(std::ostream& os, int dim, int indent, F&& cell) const {
    if (dim == shape_.rank()) return cell();
    const std::int64_t n = shape_[dim];
    // Rows end with ",\n", blocks of rows with one more blank line per enclosing dimension.
    const std::string sep =
        dim + 1 == shape_.rank()
            ? ", "
            : "," + std::string(static_cast<std::size_t>(shape_.rank() - dim - 1), '\n') +
                  std::string(static_cast<std::size_t>(indent + 1), ' ');
    os << '[';
    for (std::int64_t i = 0; i < n; ++i) {
      if (cut(dim) && i == kEdgeItems) {
        os << "..." << sep;
        i = n - kEdgeItems;
      }
      print_dim(os, dim + 1, indent + 1, cell);
      if (i + 1 < n) os << sep;
    }
    os << ']';
  }

  const Shape& shape_;
  bool summarize_;
};

}  // namespace

std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.to_string(); }
std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.to_string(); }

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  // Reading is the step that can fail (the value could not be computed): name the user's call.
  const Values v = api::api_call("operator<<", [&] { return read_values(t); });
  const Printer printer(t.shape(), t.numel() > kSummarizeAbove);
  std::vector<std::string> cells;
  const bool floating = is_floating(t.dtype());
  const FloatStyle style = floating ? choose_style(v.real) : FloatStyle::kFixed;
  for (std::int64_t i : printer.printed_indices()) {
    const auto k = static_cast<std::size_t>(i);
    if (floating)
      cells.push_back(format_float(v.real[k], style));
    else if (t.dtype() == kBool)
      cells.push_back(v.ints[k] ? "true" : "false");
    else
      cells.push_back(std::to_string(v.ints[k]));
  }
  os << "tensor(";
  if (t.numel() == 0)
    os << "[], shape=" << t.shape().to_string();
  else
    printer.print(os, cells, 7);
  if (t.dtype() != kF32 && t.dtype() != kI64) os << ", dtype=" << dtype_name(t.dtype());
  if (!t.device().is_cpu()) os << ", device=" << t.device().to_string();
  return os << ')';
}

}  // namespace streamfuse

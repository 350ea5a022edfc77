// A batched product whose right operand is one matrix for the whole batch (a linear layer over
// [batch..., rows, features]) and whose left matrices lie row after row at one stride is a single
// product of batch x rows rows. oneDNN makes a primitive per shape, and a model whose batch or
// sequence length changes from call to call made one per (batch, rows) pair: a decoder block at
// random (batch, length) needed 856 of them in 300 calls, more than the backend's bounded cache
// holds (oneDNN's own cache made most of them again cheaply). Folded, a shape is one count of
// rows (668 there), and one product of them runs instead of one per matrix
// (bench/README.md, "A linear layer over a batch is one product"). MatmulEngine folds every
// product this way before it chooses a kernel; the library's one-b GEMM, which linear layers
// now run in on CPUs with FMA, then gets a tile of whole rows even where each matrix has one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "backends/cpu/matmul.h"
#include "backends/matmul_layout.h"

namespace streamfuse::backends::cpu {

// `l` as one product of batch x m rows (batch rank 0), or nullopt where it is not one: b varies
// along a batch dimension of more than one matrix, a's rows are not one stride apart across its
// matrices, or l has no batch dimension.
std::optional<MatmulLayout> batch_as_rows(const MatmulLayout& l);

// Post-op `p` (strides over l's [batch..., m, n]) over the folded [batch x m, n], or nullopt
// where its rows are not one stride apart (a per-row operand repeated along the batch).
std::optional<ProductPostOp> post_op_as_rows(const MatmulLayout& l, const ProductPostOp& p);

// A product folded to one product of batch x m rows, its post-ops with it, or nullopt where it
// is not one (batch_as_rows; the product then runs as it is, its post-ops with it). Where a
// post-op does not fold, the folded product runs without post-ops (its caller applies them), so
// that whether a product folds, and so which kernel runs it and its bits, never depends on the
// steps fused after it.
struct ProductAsRows {
  MatmulLayout layout;
  std::array<ProductPostOp, kMaxProductPostOps> post{};
  std::size_t num_post = 0;

  std::span<const ProductPostOp> post_ops() const { return {post.data(), num_post}; }
};
std::optional<ProductAsRows> product_as_rows(const MatmulLayout& l,
                                             std::span<const ProductPostOp> post_ops);

}  // namespace streamfuse::backends::cpu

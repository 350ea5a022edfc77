// A GPT-2-style transformer block (pre-LN, causal self-attention, GELU MLP; C = 768, 12 heads,
// MLP 3072, f32) written with the public API as a user writes it, and the same block's matrix
// products alone, with the same shapes and operand layouts: the floor the block can reach.
// bench/block_peers.py writes the same block in PyTorch and JAX.
#pragma once

#include <cmath>
#include <cstdint>

#include <streamfuse/streamfuse.h>

namespace streamfuse::bench {

constexpr std::int64_t kChannels = 768;
constexpr std::int64_t kHeads = 12;
constexpr std::int64_t kHeadDim = kChannels / kHeads;
constexpr std::int64_t kHidden = 4 * kChannels;

struct BlockWeights {
  Tensor ln1_w, ln1_b, w_qkv, b_qkv, w_proj, b_proj;  // attention: qkv [C, 3C], proj [C, C]
  Tensor ln2_w, ln2_b, w_fc, b_fc, w_out, b_out;      // MLP: fc [C, 4C], out [4C, C]
};

// Seeded random weights at GPT-2's initial scale (standard deviation 0.02; layer-norm scales
// near 1), stored [in, out] so that every linear layer is `x @ W + b`.
inline BlockWeights make_block_weights() {
  manual_seed(1);
  const auto w = [](Shape s) { return randn(s) * 0.02f; };
  const auto ln = [](std::int64_t n) { return 1.0f + randn({n}) * 0.02f; };
  constexpr std::int64_t C = kChannels;
  BlockWeights b{ln(C), w({C}), w({C, 3 * C}),   w({3 * C}),   w({C, C}),       w({C}),
                 ln(C), w({C}), w({C, kHidden}), w({kHidden}), w({kHidden, C}), w({C})};
  synchronize();
  return b;
}

// [T, T] bool, true where key position <= query position (the positions a token may attend to).
inline Tensor causal_mask(std::int64_t tokens) {
  return unsqueeze(arange(tokens), 1) >= unsqueeze(arange(tokens), 0);
}

// Head `i` of the three (q, k, v) of a [B, T, 3C] projection, as [B, heads, T, head_dim] views.
inline Tensor head_view(const Tensor& qkv, int i) {
  const std::int64_t batch = qkv.size(0), tokens = qkv.size(1);
  return qkv.slice(2, i * kChannels, (i + 1) * kChannels)
      .reshape({batch, tokens, kHeads, kHeadDim})
      .permute({0, 2, 1, 3});
}

// Causal multi-head self-attention of x [B, T, C].
inline Tensor attention(const BlockWeights& w, const Tensor& mask, Tensor x) {
  const std::int64_t batch = x.size(0), tokens = x.size(1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const Tensor qkv = matmul(std::move(x), w.w_qkv) + w.b_qkv;
  Tensor scores = matmul(head_view(qkv, 0), head_view(qkv, 1).transpose(-2, -1)) * scale;
  Tensor att = nn::softmax(where(mask, std::move(scores), -INFINITY), -1);
  // Merging the heads back to [B, T, C] copies: the permuted view is not contiguous.
  Tensor y = matmul(std::move(att), head_view(qkv, 2))
                 .permute({0, 2, 1, 3})
                 .reshape({batch, tokens, kChannels});
  return matmul(std::move(y), w.w_proj) + w.b_proj;
}

// GPT-2's MLP: the tanh approximation of GELU, as GPT-2 was trained with.
inline Tensor mlp(const BlockWeights& w, Tensor x) {
  Tensor h = nn::gelu(matmul(std::move(x), w.w_fc) + w.b_fc, nn::GeluApproximation::kTanh);
  return matmul(std::move(h), w.w_out) + w.b_out;
}

// The block: x + attention(ln1(x)), then + mlp(ln2(.)).
inline Tensor block(const BlockWeights& w, const Tensor& mask, Tensor x) {
  x = x + attention(w, mask, nn::layer_norm(x, {kChannels}, w.ln1_w, w.ln1_b));
  return x + mlp(w, nn::layer_norm(x, {kChannels}, w.ln2_w, w.ln2_b));
}

// The operands of the block's six products, made once, in the layouts the block gives them:
// contiguous activations, and q, kᵀ, v as views of one [B, T, 3C] tensor.
struct ProductOperands {
  Tensor x;       // [B, T, C]: a layer norm's output, input of qkv, fc, and (merged heads) proj
  Tensor q, k_t;  // [B, H, T, D] and [B, H, D, T] views
  Tensor att, v;  // [B, H, T, T] contiguous (softmax's output), and a [B, H, T, D] view
  Tensor h;       // [B, T, 4C]: GELU's output
};

inline ProductOperands make_product_operands(std::int64_t batch, std::int64_t tokens) {
  manual_seed(2);
  const Tensor qkv = randn({batch, tokens, 3 * kChannels});
  ProductOperands p{randn({batch, tokens, kChannels}),
                    head_view(qkv, 0),
                    head_view(qkv, 1).transpose(-2, -1),
                    nn::softmax(randn({batch, kHeads, tokens, tokens}), -1),
                    head_view(qkv, 2),
                    randn({batch, tokens, kHidden})};
  synchronize();
  return p;
}

// The block's matrix products and nothing else, into `out` (held, so all of them run at the next
// sync).
inline void products(const BlockWeights& w, const ProductOperands& p, Tensor (&out)[6]) {
  out[0] = matmul(p.x, w.w_qkv);
  out[1] = matmul(p.q, p.k_t);
  out[2] = matmul(p.att, p.v);
  out[3] = matmul(p.x, w.w_proj);
  out[4] = matmul(p.x, w.w_fc);
  out[5] = matmul(p.h, w.w_out);
}

// Floating-point operations of the block's products (the q kᵀ and att v products count every
// position, masked or not, as they are computed).
inline double block_flops(std::int64_t batch, std::int64_t tokens) {
  const double bt = static_cast<double>(batch * tokens), c = kChannels;
  const double linear = 2 * bt * (c * 3 * c + c * c + 2 * c * kHidden);
  const double attn = 2 * 2 * bt * static_cast<double>(tokens) * c;  // q kᵀ and att v, all heads
  return linear + attn;
}

}  // namespace streamfuse::bench

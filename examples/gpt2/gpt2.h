// GPT-2 in plain eager streamfuse: token and position embeddings, pre-LN blocks of causal
// self-attention and a GELU MLP, a final layer norm and the head tied to the token embedding,
// with a per-layer KV cache for generation. Weights come from a safetensors file with the names
// Hugging Face's GPT-2 checkpoints use (wte.weight, h.0.attn.c_attn.weight, ...; a
// "transformer." prefix is accepted), so the real model's file works unchanged.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

namespace gpt2 {

namespace sf = streamfuse;

struct Config {
  std::int64_t layers = 12, embd = 768, heads = 12, vocab = 50257, positions = 1024;
  std::int64_t head_dim() const { return embd / heads; }
};

// The tensors of one block, named as in the checkpoint (linear weights [in, out]: GPT-2's
// Conv1D layers compute x @ W + b).
struct Block {
  sf::Tensor ln_1_w, ln_1_b, c_attn_w, c_attn_b, c_proj_w, c_proj_b;
  sf::Tensor ln_2_w, ln_2_b, c_fc_w, c_fc_b, mlp_proj_w, mlp_proj_b;
};

class Model {
 public:
  // The model in `weights` (as load_safetensors gives them). The shapes give the sizes; the
  // number of heads is the metadata's "n_head" when the file has one, else embd / 64 (every GPT-2
  // size has heads of 64). Throws streamfuse::Error naming a missing or misshapen tensor.
  Model(const std::map<std::string, sf::Tensor>& weights,
        const std::map<std::string, std::string>& metadata = {});
  static Model load(const std::string& path);

  const Config& config() const { return config_; }

  // Runs `ids` (the next tokens of the sequence, positions position() ..) through the model,
  // appending their keys and values to the cache; returns the logits [ids, vocab] of every
  // token, or of the last one only ([1, vocab]) when `all_logits` is false.
  sf::Tensor forward(const std::vector<std::int64_t>& ids, bool all_logits = false);
  // Tokens in the cache so far.
  std::int64_t position() const { return position_; }
  // Empties the cache (a new sequence).
  void reset();
  // Forgets the tokens from `position` on (0 <= position <= position()): the next forward
  // continues the sequence there, as after a prompt of that length.
  void rewind(std::int64_t position);

  // Greedy generation: the prompt, then `count` tokens each the argmax of the last logits.
  std::vector<std::int64_t> generate(const std::vector<std::int64_t>& prompt, int count);

 private:
  sf::Tensor block(std::size_t layer, sf::Tensor x, const sf::Tensor& mask);

  Config config_;
  sf::Tensor wte_, wpe_, ln_f_w_, ln_f_b_;
  std::vector<Block> blocks_;
  std::vector<sf::Tensor> k_cache_, v_cache_;  // per layer [heads, positions, head_dim]
  std::int64_t position_ = 0;
};

// The token greedy generation picks from logits [1, vocab]: the first of the largest.
std::int64_t greedy_token(const sf::Tensor& logits);

// Weights of a model of `config` drawn from a seeded normal distribution at GPT-2's
// initialization scale (0.02; layer-norm scales 1), with the checkpoint's names and shapes.
std::map<std::string, sf::Tensor> random_weights(const Config& config, std::uint64_t seed);

}  // namespace gpt2

#include "gpt2.h"

#include <cmath>
#include <string>
#include <utility>

namespace gpt2 {
namespace {

// The tensor `name` of the checkpoint (or "transformer." + name), or none.
const sf::Tensor* find(const std::map<std::string, sf::Tensor>& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) it = w.find("transformer." + name);
  return it == w.end() ? nullptr : &it->second;
}

// The tensor `name` of the checkpoint, of `shape`.
sf::Tensor take(const std::map<std::string, sf::Tensor>& w, const std::string& name,
                const sf::Shape& shape) {
  const sf::Tensor* found = find(w, name);
  if (!found) throw sf::Error("gpt2: the weights have no tensor '" + name + "'");
  const sf::Tensor& t = *found;
  if (t.shape() != shape)
    throw sf::Error("gpt2: tensor '" + name + "' is " + t.shape().to_string() + ", expected " +
                    shape.to_string());
  // Computed in f32 whatever the file holds (checkpoints also ship in f16 and bf16).
  return t.dtype() == sf::kF32 ? t : t.to(sf::kF32);
}

std::int64_t count_layers(const std::map<std::string, sf::Tensor>& w) {
  std::int64_t n = 0;
  while (find(w, "h." + std::to_string(n) + ".ln_1.weight")) ++n;
  return n;
}

// [heads, T, head_dim] view of the columns [part * C, (part + 1) * C) of a [T, 3C] projection.
sf::Tensor heads_of(const sf::Tensor& qkv, int part, const Config& c) {
  const std::int64_t tokens = qkv.size(0);
  return qkv.slice(1, part * c.embd, (part + 1) * c.embd)
      .reshape({tokens, c.heads, c.head_dim()})
      .permute({1, 0, 2});
}

}  // namespace

Model::Model(const std::map<std::string, sf::Tensor>& w,
             const std::map<std::string, std::string>& metadata) {
  const sf::Tensor* wte = find(w, "wte.weight");
  if (!wte || wte->shape().rank() != 2)
    throw sf::Error("gpt2: the weights have no token embedding 'wte.weight' [vocab, embd]");
  config_.vocab = wte->size(0);
  config_.embd = wte->size(1);
  config_.layers = count_layers(w);
  config_.heads = config_.embd / 64;
  if (auto h = metadata.find("n_head"); h != metadata.end()) config_.heads = std::stoll(h->second);
  if (config_.heads <= 0 || config_.embd % config_.heads != 0)
    throw sf::Error("gpt2: " + std::to_string(config_.heads) + " heads do not divide embd " +
                    std::to_string(config_.embd));
  const sf::Tensor* wpe = find(w, "wpe.weight");
  if (!wpe || wpe->shape().rank() != 2)
    throw sf::Error("gpt2: the weights have no position embedding 'wpe.weight' [positions, embd]");
  config_.positions = wpe->size(0);

  const std::int64_t C = config_.embd;
  wte_ = take(w, "wte.weight", {config_.vocab, C});
  wpe_ = take(w, "wpe.weight", {config_.positions, C});
  ln_f_w_ = take(w, "ln_f.weight", {C});
  ln_f_b_ = take(w, "ln_f.bias", {C});
  for (std::int64_t l = 0; l < config_.layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    blocks_.push_back(
        {take(w, p + "ln_1.weight", {C}), take(w, p + "ln_1.bias", {C}),
         take(w, p + "attn.c_attn.weight", {C, 3 * C}), take(w, p + "attn.c_attn.bias", {3 * C}),
         take(w, p + "attn.c_proj.weight", {C, C}), take(w, p + "attn.c_proj.bias", {C}),
         take(w, p + "ln_2.weight", {C}), take(w, p + "ln_2.bias", {C}),
         take(w, p + "mlp.c_fc.weight", {C, 4 * C}), take(w, p + "mlp.c_fc.bias", {4 * C}),
         take(w, p + "mlp.c_proj.weight", {4 * C, C}), take(w, p + "mlp.c_proj.bias", {C})});
  }
  reset();
}

Model Model::load(const std::string& path) {
  return Model(sf::load_safetensors(path), sf::load_safetensors_metadata(path));
}

void Model::reset() {
  const sf::Shape cache{config_.heads, config_.positions, config_.head_dim()};
  k_cache_.clear();
  v_cache_.clear();
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    k_cache_.push_back(sf::zeros(cache));
    v_cache_.push_back(sf::zeros(cache));
  }
  position_ = 0;
}

void Model::rewind(std::int64_t position) {
  if (position < 0 || position > position_)
    throw sf::Error("gpt2: cannot rewind to position " + std::to_string(position) + " of " +
                    std::to_string(position_));
  position_ = position;  // later positions of the cache are written again before they are read
}

sf::Tensor Model::block(std::size_t layer, sf::Tensor x, const sf::Tensor& mask) {
  const Block& b = blocks_[layer];
  const Config& c = config_;
  const std::int64_t tokens = x.size(0), seen = position_ + tokens;

  // Attention: this step's keys and values join the cache (in place: the cache is moved in),
  // then the queries attend to every position so far.
  const sf::Tensor qkv =
      sf::matmul(sf::nn::layer_norm(x, {c.embd}, b.ln_1_w, b.ln_1_b), b.c_attn_w) + b.c_attn_b;
  k_cache_[layer] = sf::slice_update(std::move(k_cache_[layer]), 1, position_, heads_of(qkv, 1, c));
  v_cache_[layer] = sf::slice_update(std::move(v_cache_[layer]), 1, position_, heads_of(qkv, 2, c));
  const sf::Tensor keys = k_cache_[layer].slice(1, 0, seen);
  const sf::Tensor values = v_cache_[layer].slice(1, 0, seen);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim()));
  sf::Tensor scores = sf::matmul(heads_of(qkv, 0, c), keys.transpose(-2, -1)) * scale;
  if (mask.defined()) scores = sf::where(mask, std::move(scores), -INFINITY);
  sf::Tensor y = sf::matmul(sf::nn::softmax(std::move(scores), -1), values)
                     .permute({1, 0, 2})
                     .reshape({tokens, c.embd});
  x += sf::matmul(std::move(y), b.c_proj_w) + b.c_proj_b;

  // MLP, with the tanh approximation of GELU GPT-2 was trained with.
  sf::Tensor h = sf::nn::gelu(
      sf::matmul(sf::nn::layer_norm(x, {c.embd}, b.ln_2_w, b.ln_2_b), b.c_fc_w) + b.c_fc_b,
      sf::nn::GeluApproximation::kTanh);
  x += sf::matmul(std::move(h), b.mlp_proj_w) + b.mlp_proj_b;
  return x;
}

sf::Tensor Model::forward(const std::vector<std::int64_t>& ids, bool all_logits) {
  const auto tokens = static_cast<std::int64_t>(ids.size());
  if (tokens == 0) throw sf::Error("gpt2: forward of no tokens");
  if (position_ + tokens > config_.positions)
    throw sf::Error("gpt2: " + std::to_string(position_ + tokens) +
                    " positions are more than the model's " + std::to_string(config_.positions));
  // Checked here, where the ids are still on the host: an id past the vocabulary would make
  // the embedding's result an error, and with it every layer's cache.
  for (std::int64_t id : ids)
    if (id < 0 || id >= config_.vocab)
      throw sf::Error("gpt2: token id " + std::to_string(id) + " is outside the vocabulary of " +
                      std::to_string(config_.vocab));
  const sf::Tensor id = sf::from_vector(ids);
  sf::Tensor x = sf::embedding(wte_, id) + wpe_.slice(0, position_, position_ + tokens);
  // Several new tokens attend causally among themselves: token i (position position_ + i)
  // sees positions up to its own. One new token sees every position: no mask.
  sf::Tensor mask;
  if (tokens > 1)
    mask = sf::unsqueeze(sf::arange(position_ + tokens), 0) <=
           sf::unsqueeze(sf::arange(position_, position_ + tokens), 1);
  for (std::size_t l = 0; l < blocks_.size(); ++l) x = block(l, std::move(x), mask);
  position_ += tokens;
  if (!all_logits) x = std::move(x).slice(0, tokens - 1, tokens);
  x = sf::nn::layer_norm(std::move(x), {config_.embd}, ln_f_w_, ln_f_b_);
  return sf::matmul(std::move(x), wte_.transpose(0, 1));  // the head is the embedding, tied
}

std::vector<std::int64_t> Model::generate(const std::vector<std::int64_t>& prompt, int count) {
  std::vector<std::int64_t> out = prompt;
  sf::Tensor logits = forward(prompt);
  for (int i = 0; i < count; ++i) {
    out.push_back(greedy_token(logits));
    if (i + 1 < count) logits = forward({out.back()});
  }
  return out;
}

std::int64_t greedy_token(const sf::Tensor& logits) {
  return sf::argmax(logits).item<std::int64_t>();
}

std::map<std::string, sf::Tensor> random_weights(const Config& c, std::uint64_t seed) {
  sf::manual_seed(seed);
  const auto normal = [](sf::Shape s) { return sf::randn(s) * 0.02f; };
  const std::int64_t C = c.embd;
  std::map<std::string, sf::Tensor> w;
  w["wte.weight"] = normal({c.vocab, C});
  w["wpe.weight"] = normal({c.positions, C}) * 0.5f;
  w["ln_f.weight"] = sf::ones({C});
  w["ln_f.bias"] = sf::zeros({C});
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    w[p + "ln_1.weight"] = 1.0f + normal({C});
    w[p + "ln_1.bias"] = normal({C});
    w[p + "attn.c_attn.weight"] = normal({C, 3 * C});
    w[p + "attn.c_attn.bias"] = normal({3 * C});
    w[p + "attn.c_proj.weight"] = normal({C, C});
    w[p + "attn.c_proj.bias"] = normal({C});
    w[p + "ln_2.weight"] = 1.0f + normal({C});
    w[p + "ln_2.bias"] = normal({C});
    w[p + "mlp.c_fc.weight"] = normal({C, 4 * C});
    w[p + "mlp.c_fc.bias"] = normal({4 * C});
    w[p + "mlp.c_proj.weight"] = normal({4 * C, C});
    w[p + "mlp.c_proj.bias"] = normal({C});
  }
  return w;
}

}  // namespace gpt2

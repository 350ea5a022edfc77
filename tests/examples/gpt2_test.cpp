// The GPT-2 example (examples/gpt2) on a reduced configuration (2 layers, C = 128): its logits
// against an independent reference (plain loops in double, the whole sequence recomputed at
// every step, no cache), prefill and each cached decode step; fusion on against fusion off bit
// for bit; weights through a safetensors file; and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gpt2.h"
#include "tests/temp_dir.h"

namespace sf = streamfuse;

namespace {

const gpt2::Config kConfig{/*layers=*/2, /*embd=*/128, /*heads=*/2, /*vocab=*/300,
                           /*positions=*/48};

// Weights at a scale where tokens interact (GPT-2's 0.02 makes a random model repeat its
// input), with the checkpoint's names.
std::map<std::string, sf::Tensor> test_weights() {
  std::map<std::string, sf::Tensor> w = gpt2::random_weights(kConfig, 11);
  for (auto& [name, t] : w)
    if (name.find("ln_") == std::string::npos) t = t * 8.0f;
  return w;
}

// The reference: GPT-2 written out with loops in double.
class Reference {
 public:
  explicit Reference(const std::map<std::string, sf::Tensor>& w) {
    for (const auto& [name, t] : w) {
      const std::vector<float> v = t.to_vector<float>();
      w_[name].assign(v.begin(), v.end());
    }
  }
  // Logits [tokens][vocab] of every position of `ids`.
  std::vector<std::vector<double>> logits(const std::vector<std::int64_t>& ids) const {
    const std::int64_t T = static_cast<std::int64_t>(ids.size()), C = kConfig.embd;
    std::vector<std::vector<double>> x(T, std::vector<double>(C));
    const std::vector<double>& wte = at("wte.weight");
    const std::vector<double>& wpe = at("wpe.weight");
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t c = 0; c < C; ++c) x[t][c] = wte[ids[t] * C + c] + wpe[t * C + c];
    for (std::int64_t l = 0; l < kConfig.layers; ++l) {
      const std::string p = "h." + std::to_string(l) + ".";
      const auto qkv = linear(norm(x, p + "ln_1"), p + "attn.c_attn", C, 3 * C);
      x = add(x, linear(attend(qkv), p + "attn.c_proj", C, C));
      auto h = linear(norm(x, p + "ln_2"), p + "mlp.c_fc", C, 4 * C);
      for (auto& row : h)
        for (double& v : row)
          v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      x = add(x, linear(h, p + "mlp.c_proj", 4 * C, C));
    }
    x = norm(x, "ln_f");
    std::vector<std::vector<double>> out(T, std::vector<double>(kConfig.vocab));
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t v = 0; v < kConfig.vocab; ++v)
        for (std::int64_t c = 0; c < C; ++c) out[t][v] += x[t][c] * wte[v * C + c];
    return out;
  }

 private:
  using Rows = std::vector<std::vector<double>>;
  const std::vector<double>& at(const std::string& name) const { return w_.at(name); }

  Rows norm(const Rows& x, const std::string& p) const {
    Rows out = x;
    const std::vector<double>&weight = at(p + ".weight"), &bias = at(p + ".bias");
    for (auto& row : out) {
      double mean = 0, var = 0;
      for (double v : row) mean += v;
      mean /= static_cast<double>(row.size());
      for (double v : row) var += (v - mean) * (v - mean);
      var /= static_cast<double>(row.size());
      for (std::size_t c = 0; c < row.size(); ++c)
        row[c] = (row[c] - mean) / std::sqrt(var + 1e-5) * weight[c] + bias[c];
    }
    return out;
  }
  Rows linear(const Rows& x, const std::string& p, std::int64_t in, std::int64_t out) const {
    Rows y(x.size(), std::vector<double>(out));
    const std::vector<double>&weight = at(p + ".weight"), &bias = at(p + ".bias");
    for (std::size_t t = 0; t < x.size(); ++t)
      for (std::int64_t o = 0; o < out; ++o) {
        double s = bias[o];
        for (std::int64_t i = 0; i < in; ++i) s += x[t][i] * weight[i * out + o];
        y[t][o] = s;
      }
    return y;
  }
  static Rows add(Rows a, const Rows& b) {
    for (std::size_t t = 0; t < a.size(); ++t)
      for (std::size_t c = 0; c < a[t].size(); ++c) a[t][c] += b[t][c];
    return a;
  }
  // Causal attention of a [T, 3C] projection, heads concatenated: [T, C].
  static Rows attend(const Rows& qkv) {
    const std::int64_t T = static_cast<std::int64_t>(qkv.size()), C = kConfig.embd;
    const std::int64_t D = kConfig.head_dim();
    Rows y(T, std::vector<double>(C));
    for (std::int64_t h = 0; h < kConfig.heads; ++h)
      for (std::int64_t t = 0; t < T; ++t) {
        std::vector<double> s(t + 1);
        double top = -INFINITY, total = 0;
        for (std::int64_t u = 0; u <= t; ++u) {
          for (std::int64_t d = 0; d < D; ++d) s[u] += qkv[t][h * D + d] * qkv[u][C + h * D + d];
          s[u] /= std::sqrt(static_cast<double>(D));
          top = std::max(top, s[u]);
        }
        for (double& v : s) total += (v = std::exp(v - top));
        for (std::int64_t u = 0; u <= t; ++u)
          for (std::int64_t d = 0; d < D; ++d)
            y[t][h * D + d] += s[u] / total * qkv[u][2 * C + h * D + d];
      }
    return y;
  }

  std::map<std::string, std::vector<double>> w_;
};

// |got - want| within `tolerance` of the row's largest logit.
void expect_near_rows(const std::vector<float>& got, const std::vector<double>& want,
                      double tolerance, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * scale) << what << ", logit " << i;
}

std::int64_t argmax_of(const std::vector<double>& v) {
  return std::max_element(v.begin(), v.end()) - v.begin();
}

TEST(Gpt2Example, MatchesAReferenceInPrefillAndEveryCachedStep) {
  const auto weights = test_weights();
  const Reference ref(weights);
  gpt2::Model model(weights, {{"n_head", "2"}});
  ASSERT_EQ(model.config().layers, 2);
  ASSERT_EQ(model.config().heads, 2);

  std::vector<std::int64_t> ids = {5, 77, 3, 250, 19, 19, 140};
  const std::vector<float> prefill = model.forward(ids, /*all_logits=*/true).to_vector<float>();
  const auto want = ref.logits(ids);
  for (std::size_t t = 0; t < ids.size(); ++t)
    expect_near_rows(std::vector<float>(prefill.begin() + t * kConfig.vocab,
                                        prefill.begin() + (t + 1) * kConfig.vocab),
                     want[t], 2e-4, "prefill position " + std::to_string(t));

  // Decode: each step feeds the reference's own greedy token, so a wrong cache cannot hide
  // behind a repeated token.
  std::int64_t distinct = 0, last = -1;
  for (int step = 0; step < 12; ++step) {
    const std::int64_t next = argmax_of(ref.logits(ids).back());
    distinct += next != last;
    last = next;
    ids.push_back(next);
    const std::vector<float> got = model.forward({next}).to_vector<float>();
    expect_near_rows(got, ref.logits(ids).back(), 2e-4, "decode step " + std::to_string(step));
  }
  EXPECT_GT(distinct, 3) << "the test's model repeats itself: it would not test the cache";
  EXPECT_EQ(model.position(), static_cast<std::int64_t>(ids.size()));
}

TEST(Gpt2Example, FusedEqualsUnfusedBitForBit) {
  const auto weights = test_weights();
  const std::vector<std::int64_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> results[2];
  std::vector<std::int64_t> tokens[2];
  for (const bool fusion : {false, true}) {
    sf::Config c = sf::config();
    c.fusion = fusion;
    sf::set_config(c);
    gpt2::Model model(weights, {{"n_head", "2"}});
    for (int round = 0; round < 3; ++round) {  // later rounds run the plans (and kernels) made
      model.reset();
      results[fusion] = model.forward(prompt, true).to_vector<float>();
      const std::vector<float> step = model.forward({9}).to_vector<float>();
      results[fusion].insert(results[fusion].end(), step.begin(), step.end());
    }
    model.reset();
    tokens[fusion] = model.generate(prompt, 6);
  }
  sf::set_config(sf::Config());
  ASSERT_EQ(results[0].size(), results[1].size());
  EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].size() * 4), 0);
  EXPECT_EQ(tokens[0], tokens[1]);
}

TEST(Gpt2Example, LoadsItsCheckpointAndSaysWhatIsWrong) {
  const streamfuse::testing::TempDir dir;
  const std::string path = dir.path() + "/gpt2.safetensors";
  auto weights = test_weights();
  sf::save_safetensors(path, weights, {{"n_head", "2"}});
  gpt2::Model loaded = gpt2::Model::load(path);
  gpt2::Model direct(weights, {{"n_head", "2"}});
  EXPECT_EQ(loaded.generate({3, 1, 4}, 5), direct.generate({3, 1, 4}, 5));

  weights.erase("h.1.mlp.c_fc.bias");
  EXPECT_THROW(gpt2::Model(weights, {{"n_head", "2"}}), sf::Error);
  weights = test_weights();
  weights["ln_f.bias"] = sf::zeros({7});
  try {
    gpt2::Model m(weights, {{"n_head", "2"}});
    ADD_FAILURE() << "no error";
  } catch (const sf::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'ln_f.bias' is [7], expected [128]"), std::string::npos)
        << e.what();
  }
  gpt2::Model model(test_weights(), {{"n_head", "2"}});
  EXPECT_THROW(model.forward(std::vector<std::int64_t>(49, 1)), sf::Error);  // > 48 positions
  EXPECT_THROW(model.forward({300}), sf::Error);  // past the vocabulary: caught on the host
  EXPECT_EQ(model.position(), 0);                 // and the cache is still usable
  EXPECT_EQ(model.forward({299}).shape(), sf::Shape({1, 300}));
}

}  // namespace

// Writes a GPT-2 checkpoint of seeded random weights, with the real model's tensor names and
// shapes, for trying the example and benchmarking without downloading the model:
//   gpt2_make_weights OUT.safetensors [--layers 12] [--embd 768] [--heads 12] [--vocab 50257]
//                     [--positions 1024] [--seed 1]
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "gpt2.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]).rfind("--", 0) == 0) {
    std::cerr << "usage: gpt2_make_weights OUT.safetensors [--layers N] [--embd C] [--heads H]"
                 " [--vocab V] [--positions P] [--seed S]\n";
    return 2;
  }
  gpt2::Config c;
  std::uint64_t seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (flag == "--layers")
      c.layers = v;
    else if (flag == "--embd")
      c.embd = v;
    else if (flag == "--heads")
      c.heads = v;
    else if (flag == "--vocab")
      c.vocab = v;
    else if (flag == "--positions")
      c.positions = v;
    else if (flag == "--seed")
      seed = static_cast<std::uint64_t>(v);
    else {
      std::cerr << "gpt2_make_weights: unknown option " << flag << "\n";
      return 2;
    }
  }
  try {
    streamfuse::save_safetensors(argv[1], gpt2::random_weights(c, seed),
                                 {{"n_head", std::to_string(c.heads)}, {"format", "pt"}});
  } catch (const streamfuse::Error& e) {
    std::cerr << "gpt2_make_weights: " << e.what() << "\n";
    return 1;
  }
  std::cout << "wrote " << argv[1] << ": " << c.layers << " layers, embd " << c.embd << ", "
            << c.heads << " heads, vocab " << c.vocab << ", " << c.positions << " positions\n";
}

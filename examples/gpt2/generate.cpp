// Greedy generation from token ids with a GPT-2 checkpoint (safetensors):
//   gpt2_generate WEIGHTS.safetensors [-n TOKENS] ID...
// Prints the generated ids and the time of the prompt and of each generated token.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "gpt2.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: gpt2_generate WEIGHTS.safetensors [-n TOKENS] ID...\n";
    return 2;
  }
  int count = 20;
  std::vector<std::int64_t> prompt;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "-n" && i + 1 < argc) {
      count = std::atoi(argv[++i]);
      continue;
    }
    prompt.push_back(std::atoll(argv[i]));
  }
  try {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    gpt2::Model model = gpt2::Model::load(argv[1]);
    const auto t1 = clock::now();
    streamfuse::Tensor logits = model.forward(prompt);
    std::vector<std::int64_t> out;
    out.push_back(gpt2::greedy_token(logits));
    const auto t2 = clock::now();
    for (int i = 1; i < count; ++i) {
      logits = model.forward({out.back()});
      out.push_back(gpt2::greedy_token(logits));
    }
    const auto t3 = clock::now();
    const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    for (std::int64_t id : out) std::cout << id << " ";
    std::cout << "\nload " << ms(t1 - t0) << " ms, prompt of " << prompt.size() << " tokens "
              << ms(t2 - t1) << " ms, then " << ms(t3 - t2) / std::max(1, count - 1)
              << " ms per token\n";
  } catch (const streamfuse::Error& e) {
    std::cerr << "gpt2_generate: " << e.what() << "\n";
    return 1;
  }
}

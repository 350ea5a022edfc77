// Whole files as strings, and counting in them: for tests that corrupt cache files or read logs.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace streamfuse::testing {

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_all(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// Rewrites `p` with `change` applied to its bytes.
template <class F>
void patch_file(const std::filesystem::path& p, F&& change) {
  std::string bytes = read_all(p);
  change(bytes);
  write_all(p, bytes);
}

// How many times `what` occurs in `text`.
inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace streamfuse::testing

#include "tests/backends/cuda/emulator/emulated_source.h"

#include <algorithm>
#include <cctype>

namespace streamfuse::backends::cuda::emulator {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The tokens of a C++ source, coarsely: identifiers, numbers, string and character literals
// (kept whole, quotes included) and single punctuation characters. Comments and preprocessor
// directives are dropped; that is all a search for kernel declarations needs.
std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  bool line_start = true;
  const auto skip_line = [&] {  // to the end of a line, across backslash continuations
    while (i < s.size() && s[i] != '\n') i += s[i] == '\\' && i + 1 < s.size() ? 2 : 1;
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '#' && line_start) {
      skip_line();
      continue;
    }
    line_start = false;
    if (s.compare(i, 2, "//") == 0) {
      skip_line();
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      const std::size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
      continue;
    }
    const std::size_t start = i;
    if (c == 'R' && i + 1 < s.size() && s[i + 1] == '"') {  // R"delim( ... )delim"
      const std::size_t open = s.find('(', i + 2);
      const std::string close =
          ")" + std::string(s.substr(i + 2, open == std::string_view::npos ? 0 : open - i - 2)) +
          "\"";
      const std::size_t end = open == std::string_view::npos ? open : s.find(close, open);
      i = end == std::string_view::npos ? s.size() : end + close.size();
    } else if (is_ident_start(c)) {
      while (i < s.size() && is_ident(s[i])) ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < s.size() && (is_ident(s[i]) || s[i] == '.' || s[i] == '\'')) ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < s.size() && s[i] != c && s[i] != '\n'; ++i)
        if (s[i] == '\\') ++i;
      i = std::min(i + 1, s.size());
    } else {
      ++i;
    }
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

// Whether the declaration holding token `at` starts with extern "C" (scanning back to the end
// of the previous declaration or block).
bool declared_extern_c(const std::vector<std::string_view>& t, std::size_t at) {
  for (std::size_t k = at; k-- > 0;) {
    if (t[k] == ";" || t[k] == "{" || t[k] == "}") return false;
    if (t[k] == "extern" && k + 1 < at && t[k + 1] == "\"C\"") return true;
  }
  return false;
}

}  // namespace

SourceFacts scan_source(std::string_view source) {
  const std::vector<std::string_view> t = tokens(source);
  SourceFacts facts;
  std::vector<bool> blocks;  // per open brace: whether it opened an extern "C" { } block
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == "{") {
      blocks.push_back(i >= 2 && t[i - 2] == "extern" && t[i - 1] == "\"C\"");
    } else if (t[i] == "}") {
      if (!blocks.empty()) blocks.pop_back();
    } else if (t[i] == "__syncthreads") {
      facts.calls_syncthreads = true;
    } else if (t[i] == "__global__" &&
               (declared_extern_c(t, i) ||
                std::find(blocks.begin(), blocks.end(), true) != blocks.end())) {
      KernelDeclaration k;
      for (std::size_t j = i + 1; j < t.size() && t[j] != ";" && t[j] != "{"; ++j) {
        if (t[j] == "__launch_bounds__" && j + 1 < t.size() && t[j + 1] == "(") {
          int depth = 0;
          bool first = true;  // in its first argument
          for (++j; j < t.size(); ++j) {
            if (t[j] == "(" && depth++ == 0) continue;
            if (t[j] == ")" && --depth == 0) break;
            if (t[j] == "," && depth == 1) first = false;
            if (first) k.max_threads += std::string(t[j]) + " ";
          }
        } else if (is_ident_start(t[j][0]) && j + 1 < t.size() && t[j + 1] == "(") {
          k.name = t[j];
          break;
        }
      }
      const bool seen = std::any_of(facts.kernels.begin(), facts.kernels.end(),
                                    [&](const KernelDeclaration& d) { return d.name == k.name; });
      if (!k.name.empty() && !seen) facts.kernels.push_back(std::move(k));
    }
  }
  return facts;
}

std::string translation_unit(std::string_view device_header, std::string_view source,
                             std::string_view file_name) {
  const SourceFacts facts = scan_source(source);
  const std::string name(file_name);
  std::string s = "#define SF_EMU_DEVICE_CODE 1\n#line 1 \"sf_emu_device.h\"\n";
  s += device_header;
  s += "\n#line 1 \"" + name + "\"\n";
  s += source;
  s += "\n#line 1 \"" + name + " (emulator: kernel descriptors)\"\n";
  for (const KernelDeclaration& k : facts.kernels)
    s += "SF_EMU_KERNEL(" + k.name + ", " + (k.max_threads.empty() ? "1024" : k.max_threads) +
         ", " + (facts.calls_syncthreads ? "1" : "0") + ")\n";
  return s;
}

}  // namespace streamfuse::backends::cuda::emulator

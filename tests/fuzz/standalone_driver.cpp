// The short, deterministic run of a fuzz target that CTest starts in every build (no libFuzzer):
// the target's seeds and the inputs in the files and folders named on the command line (the
// regression corpus), then a fixed number of mutations of them from a fixed random seed: bit
// flips, byte and integer changes, truncations, insertions, erasures, copies within an input and
// splices of two. The same inputs every run, so a failure is reproducible by running again.
//
//   <target>_check [--runs N] [--seed S] [PATH...]
//
// Fails (non-zero exit) when the target aborts or crashes, which also writes the input to
// ./<program>-failing-input for libFuzzer or this driver to replay, or when an exception other
// than the target's FormatError escapes it.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.h"

extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

namespace fs = std::filesystem;

// The input being run and where to save it, for the crash handlers (which may only make
// async-signal-safe calls: no allocation).
const std::string* g_current = nullptr;
char g_failing_path[4096];

void save_current() {
  if (!g_current) return;
  const int fd = ::open(g_failing_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  std::size_t done = 0;
  while (done < g_current->size()) {
    const ssize_t n = ::write(fd, g_current->data() + done, g_current->size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  const char note[] = "fuzz driver: the failing input is in ";
  (void)!::write(2, note, sizeof note - 1);
  (void)!::write(2, g_failing_path, std::strlen(g_failing_path));
  (void)!::write(2, "\n", 1);
}

void on_signal(int sig) {
  save_current();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// splitmix64: a tiny generator whose sequence is the same on every platform.
struct Random {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
};

// Values that sit on the edges decoders check: sizes, counts, indices, -1.
constexpr std::uint64_t kInteresting[] = {0,
                                          1,
                                          2,
                                          3,
                                          7,
                                          8,
                                          16,
                                          63,
                                          64,
                                          65,
                                          127,
                                          128,
                                          255,
                                          256,
                                          0x7fff,
                                          0xffff,
                                          0x10000,
                                          0x7fffffff,
                                          0x80000000,
                                          0xffffffff,
                                          0x100000000ULL,
                                          0x7fffffffffffffffULL,
                                          0xffffffffffffffffULL};

void mutate_once(std::string& s, const std::vector<std::string>& corpus, Random& r) {
  const std::size_t n = s.size();
  switch (r.below(9)) {
    case 0:  // flip a bit
      if (n) s[r.below(n)] ^= static_cast<char>(1 << r.below(8));
      break;
    case 1:  // set a byte
      if (n) s[r.below(n)] = static_cast<char>(r.next());
      break;
    case 2:  // add a small amount to a byte
      if (n) s[r.below(n)] += static_cast<char>(static_cast<int>(r.below(33)) - 16);
      break;
    case 3: {  // write an interesting integer, little-endian, of 1, 2, 4 or 8 bytes
      const std::size_t width = std::size_t{1} << r.below(4);
      if (n < width) break;
      const std::uint64_t v = kInteresting[r.below(std::size(kInteresting))];
      const std::size_t at = r.below(n - width + 1);
      for (std::size_t i = 0; i < width; ++i) s[at + i] = static_cast<char>(v >> (8 * i));
      break;
    }
    case 4:  // truncate
      s.resize(r.below(n + 1));
      break;
    case 5: {  // insert random bytes
      std::string bytes(1 + r.below(8), '\0');
      for (char& c : bytes) c = static_cast<char>(r.next());
      s.insert(r.below(n + 1), bytes);
      break;
    }
    case 6:  // erase a range
      if (n) {
        const std::size_t at = r.below(n);
        s.erase(at, 1 + r.below(std::min<std::size_t>(16, n - at)));
      }
      break;
    case 7:  // copy a range of the input over another place of it
      if (n > 1) {
        const std::size_t from = r.below(n), to = r.below(n);
        const std::size_t len = 1 + r.below(std::min(n - from, n - to));
        const std::string piece = s.substr(from, len);
        s.replace(to, len, piece);
      }
      break;
    case 8: {  // splice: a prefix of this input, the rest of another
      const std::string& other = corpus[r.below(corpus.size())];
      s = s.substr(0, r.below(n + 1)) + other.substr(r.below(other.size() + 1));
      break;
    }
  }
}

bool read_file(const fs::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

int usage(const char* program) {
  std::fprintf(stderr, "usage: %s [--runs N] [--seed S] [FILE|DIR]...\n", program);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t runs = 1000, seed = 1;
  std::vector<fs::path> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--runs" || arg == "--seed") && i + 1 < argc) {
      (arg == "--runs" ? runs : seed) = std::stoull(argv[++i]);
    } else if (arg.rfind("--", 0) == 0) {
      return usage(argv[0]);
    } else {
      paths.emplace_back(arg);
    }
  }
  std::snprintf(g_failing_path, sizeof g_failing_path, "%s-failing-input",
                fs::path(argv[0]).filename().c_str());
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::signal(sig, on_signal);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(save_current);

  const auto start = std::chrono::steady_clock::now();
  streamfuse::fuzz::set_up_process();
  std::vector<std::string> corpus = streamfuse::fuzz::seeds();
  const std::size_t num_seeds = corpus.size();
  for (const fs::path& path : paths) {
    std::vector<fs::path> files;
    if (fs::is_directory(path)) {
      for (const auto& entry : fs::directory_iterator(path))
        if (entry.is_regular_file()) files.push_back(entry.path());
      std::sort(files.begin(), files.end());  // directory order is not stable
    } else {
      files.push_back(path);
    }
    for (const fs::path& file : files) {
      std::string bytes;
      if (!read_file(file, bytes)) {
        std::fprintf(stderr, "fuzz driver: cannot read %s\n", file.c_str());
        return 2;
      }
      corpus.push_back(std::move(bytes));
    }
  }
  if (corpus.empty()) corpus.emplace_back();

  std::uint64_t ran = 0;
  const auto run = [&](const std::string& input) {
    g_current = &input;
    try {
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz driver: an exception escaped the target: %s\n", e.what());
      save_current();
      std::exit(1);
    } catch (...) {
      std::fprintf(stderr, "fuzz driver: an unknown exception escaped the target\n");
      save_current();
      std::exit(1);
    }
    g_current = nullptr;
    ++ran;
  };
  for (const std::string& input : corpus) run(input);
  Random random{seed};
  for (std::uint64_t i = 0; i < runs; ++i) {
    std::string input = corpus[random.below(corpus.size())];
    for (std::size_t m = 1 + random.below(4); m > 0; --m) mutate_once(input, corpus, random);
    run(input);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%llu inputs (%zu seeds, %zu from files, %llu mutations) in %.2f s\n",
              static_cast<unsigned long long>(ran), num_seeds, corpus.size() - num_seeds,
              static_cast<unsigned long long>(runs), seconds);
  return 0;
}

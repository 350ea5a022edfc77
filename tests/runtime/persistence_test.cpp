// Persistence end to end, in fresh processes (this test binary run again as a child): a warm
// cache directory or a bundle makes the first iteration need no exploration and no compile; a
// bundle from another machine keeps its plans and recompiles its kernels with one log line;
// corrupt files and an unusable directory change nothing but speed, each said once; a bundle
// loaded without its native code runs none of its shared objects; a bundle's held blocks are made
// by a program without a record of its own.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <streamfuse/streamfuse.h>

#include "cache/cache_file.h"
#include "fusion/plan_codec.h"
#include "runtime/bundle.h"
#include "runtime/device_runtime.h"
#include "tests/cache/planted_library.h"
#include "tests/file_text.h"
#include "tests/jit/chain_program.h"
#include "tests/scoped_env.h"
#include "tests/temp_dir.h"

namespace sf = streamfuse;
namespace fs = std::filesystem;

namespace streamfuse::cache {
namespace {

using streamfuse::testing::count_of;
using streamfuse::testing::TempDir;

// ---- the child: SF_PERSISTENCE_CHILD=run[,save:FILE][,load:FILE][,plans_only:FILE][,worker:1] ---

sf::Tensor model(const sf::Tensor& x, const sf::Tensor& w, const sf::Tensor& b) {
  sf::Tensor h = sf::nn::gelu(sf::matmul(x, w) * 0.125f + b);
  return sf::nn::layer_norm(h * h + 1.0f, {h.shape()[1]}, std::nullopt, std::nullopt);
}

// Prints "result k=v ..." on stdout: fusion statistics after the first iteration and at the end,
// and a checksum of the output's bits.
TEST(PersistenceChild, Run) {
  const char* mode = std::getenv("SF_PERSISTENCE_CHILD");
  if (!mode) GTEST_SKIP() << "run by the Persistence tests in a child process";
  const std::string spec = mode;
  auto arg = [&](const std::string& key) {
    const std::size_t at = spec.find(key + ":");
    if (at == std::string::npos) return std::string();
    const std::size_t end = spec.find(',', at);
    return spec.substr(at + key.size() + 1,
                       end == std::string::npos ? end : end - at - key.size() - 1);
  };
  if (const std::string worker = arg("worker"); !worker.empty()) {
    // On a thread of its own: products of many shapes, some batched over strided views (oneDNN's
    // GEMM driver), for the cache directory to list (worker:1); or one small op (worker:2), so
    // that the main thread returns while the ops the directory lists are still being prepared.
    std::thread thread([&] {
      // A plain product first: the first op listed is prepared on the thread that starts the
      // device, the others (the GEMM driver's first, 20 ms) on the preparer's.
      if (worker == "1")
        static_cast<void>(sf::sum(sf::matmul(sf::ones({8, 96}), sf::ones({96, 8}))).item<float>());
      for (std::int64_t n = 16; worker == "1" && n <= 256; n *= 2) {
        const sf::Tensor qkv = sf::randn({2, n, 3 * 128});
        const auto head = [&](int i) {
          return qkv.slice(2, i * 128, (i + 1) * 128).reshape({2, n, 4, 32}).permute({0, 2, 1, 3});
        };
        const sf::Tensor scores = sf::matmul(head(0), head(1).transpose(2, 3));
        static_cast<void>(sf::sum(scores * 0.125f).item<float>());
        const sf::Tensor product = sf::matmul(sf::randn({n, 96}), sf::randn({96, n + 8}));
        static_cast<void>(sf::sum(product).item<float>());
      }
      static_cast<void>(sf::sum(sf::ones({4}) * 2.0f).item<float>());
    });
    thread.join();
    std::printf("result worker=%s\n", worker.c_str());
    return;
  }
  if (const std::string load = arg("load"); !load.empty()) sf::plans::load_bundle(load);
  if (const std::string load = arg("plans_only"); !load.empty())
    sf::plans::load_bundle(load, {.load_native_code = false});
  sf::manual_seed(7);
  // 12 columns: a product oneDNN runs, whose primitive the cache directory remembers and
  // prepares (a wider linear layer runs in the library's one-b GEMM and has none).
  const sf::Tensor x = sf::randn({64, 96}), w = sf::randn({96, 12}), b = sf::randn({12});
  sf::synchronize();
  // What was prepared and read ahead while the process started (made deterministic here by
  // waiting for it; a real program just goes on).
  sf::runtime::DeviceRuntime::get(sf::Device::cpu()).preparer().wait_idle();
  const sf::FusionStats before = sf::fusion_stats();
  const sf::MemoryStats memory_before = sf::memory_stats();
  std::vector<float> out = model(x, w, b).to_vector<float>();
  const sf::FusionStats first = sf::fusion_stats();
  const sf::MemoryStats memory_first = sf::memory_stats();
  sf::wait_for_compiles();
  for (int i = 0; i < 3; ++i) out = model(x, w, b).to_vector<float>();
  if (const std::string save = arg("save"); !save.empty()) {
    sf::wait_for_compiles();
    sf::plans::save_bundle(save);
  }
  std::uint64_t checksum = 0;
  for (float v : out) checksum = checksum * 1000003 + std::bit_cast<std::uint32_t>(v);
  const sf::FusionStats end = sf::fusion_stats();
  std::printf(
      "result explored=%lld plans_loaded=%lld compiled=%lld kernels_loaded=%lld "
      "prepared=%lld plans_ahead=%lld kernels_ahead=%lld first_interpreted=%lld "
      "first_compiled=%lld cached_ahead=%lld first_fresh=%lld checksum=%llu\n",
      static_cast<long long>(end.plans_explored), static_cast<long long>(end.plans_loaded),
      static_cast<long long>(end.kernels_compiled), static_cast<long long>(end.kernels_loaded),
      static_cast<long long>(before.ops_prepared), static_cast<long long>(before.plans_loaded),
      static_cast<long long>(before.kernels_loaded),
      static_cast<long long>(first.interpreted_launches - before.interpreted_launches),
      static_cast<long long>(first.compiled_launches - before.compiled_launches),
      static_cast<long long>(memory_before.bytes_cached),
      static_cast<long long>((memory_first.allocations - memory_first.cache_hits) -
                             (memory_before.allocations - memory_before.cache_hits)),
      static_cast<unsigned long long>(checksum));
}

// ---- the parent -------------------------------------------------------------------------------

struct Child {
  std::map<std::string, std::string> result;
  std::string err;
  unsigned long long operator[](const std::string& k) const { return std::stoull(result.at(k)); }
};

Child run_child(const std::string& cache_dir, const std::string& mode, const std::string& log = "",
                const std::string& env = "", const std::string& args = "") {
  static int n = 0;
  const fs::path err_file = fs::temp_directory_path() / ("sf-persist-" + std::to_string(getpid()) +
                                                         "-" + std::to_string(++n) + ".err");
  const std::string cmd =
      env + " STREAMFUSE_CACHE_DIR='" + cache_dir + "' SF_PERSISTENCE_CHILD='" + mode +
      "' STREAMFUSE_LOG='" + log + "' '" + fs::read_symlink("/proc/self/exe").string() +
      "' --gtest_filter=PersistenceChild.Run " + args + " 2>'" + err_file.string() + "'";
  Child c;
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (std::size_t got; (got = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, got);
    const int status = pclose(p);
    EXPECT_EQ(status, 0) << out;
  }
  std::ifstream e(err_file);
  c.err.assign(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>());
  fs::remove(err_file);
  const std::size_t at = out.find("result ");
  EXPECT_NE(at, std::string::npos) << out << c.err;
  if (at == std::string::npos) return c;
  std::istringstream fields(out.substr(at + 7, out.find('\n', at) - at - 7));
  for (std::string f; fields >> f;) c.result[f.substr(0, f.find('='))] = f.substr(f.find('=') + 1);
  return c;
}

TEST(Persistence, AWarmCacheNeedsNoExplorationNorCompile) {
  TempDir dir;
  const Child cold = run_child(dir.path(), "run");
  EXPECT_GT(cold["explored"], 0);
  const Child warm = run_child(dir.path(), "run", "cache");
  EXPECT_EQ(warm["explored"], 0) << warm.err;
  EXPECT_GT(warm["plans_loaded"], 0);
  EXPECT_EQ(warm["checksum"], cold["checksum"]);
  EXPECT_NE(warm.err.find("[streamfuse:cache] hit: "), std::string::npos) << warm.err;
  // The matmul's primitive was prepared while the process started, and every plan of the
  // iteration was read ahead, from the entry the cold run wrote (the segment it started with;
  // the set-up's ops ran on their own) along its successors.
  EXPECT_EQ(cold["prepared"], 0);
  EXPECT_EQ(warm["prepared"], 1) << warm.err;
  EXPECT_NE(warm.err.find("hit: 1 plan entry for cpu"), std::string::npos) << warm.err;
  EXPECT_GE(warm["plans_ahead"], 2) << warm.err;
  EXPECT_EQ(warm["plans_ahead"], warm["plans_loaded"]) << warm.err;
  if (!jit::have_compiler()) GTEST_SKIP() << "no C++ compiler: no kernels to persist";
  EXPECT_GT(warm["kernels_ahead"], 0) << warm.err;  // loaded before the iteration needed them
  EXPECT_GT(cold["compiled"], 0);
  EXPECT_EQ(warm["compiled"], 0);
  EXPECT_GT(warm["kernels_loaded"], 0);
  EXPECT_EQ(warm["first_interpreted"], 0);  // every fused launch of iteration 1 ran compiled
  EXPECT_GT(warm["first_compiled"], 0);
}

TEST(Persistence, TheNextRunOfAProgramStartsWithTheBlocksItsLastRunHeld) {
  // Made by the preparer while the process starts: the first iteration takes no block from the
  // system (its pages were faulted in and cleared ahead).
  TempDir dir;
  const Child cold = run_child(dir.path(), "run");
  EXPECT_EQ(cold["cached_ahead"], 0);
  EXPECT_GT(cold["first_fresh"], 0);
  const Child warm = run_child(dir.path(), "run");
  EXPECT_GT(warm["cached_ahead"], 0) << warm.err;
  EXPECT_EQ(warm["first_fresh"], 0) << warm.err;
  EXPECT_EQ(warm["checksum"], cold["checksum"]);
  // The warm run took its blocks from the cache, and recorded them all the same.
  const Child third = run_child(dir.path(), "run");
  EXPECT_EQ(third["first_fresh"], 0) << third.err;
  // Another program (here: other arguments) has a record of its own.
  const Child other = run_child(dir.path(), "run", "", "", "--gtest_repeat=1");
  EXPECT_EQ(other["cached_ahead"], 0) << other.err;
}

TEST(Persistence, WithFusionOffNoPlanIsRead) {
  // No stream asks for a plan with fusion off: reading them ahead would only take a core (a
  // cache directory shared with other programs held thousands).
  TempDir dir;
  const Child cold = run_child(dir.path(), "run");
  EXPECT_GT(cold["explored"], 0);
  const Child off = run_child(dir.path(), "run", "", "STREAMFUSE_FUSION=0");
  EXPECT_EQ(off["plans_ahead"], 0) << off.err;
  EXPECT_EQ(off["plans_loaded"], 0) << off.err;
  EXPECT_EQ(off["kernels_loaded"], 0) << off.err;
  EXPECT_EQ(off["explored"], 0);
  EXPECT_EQ(off["prepared"], 1) << "the product's primitive is prepared all the same";
  EXPECT_EQ(off["checksum"], cold["checksum"]);
}

TEST(Persistence, AProcessWhoseMainThreadNeverRanAnOpExitsCleanlyWhilePreparing) {
  // The preparer is stopped when the main thread exits, before the exit frees what a library
  // (oneDNN) made while preparing; that once depended on the main thread having submitted work.
  TempDir dir;
  EXPECT_EQ(run_child(dir.path(), "worker:1")["worker"], 1);  // what the next ones prepare
  for (int i = 0; i < 6; ++i) {
    const Child warm = run_child(dir.path(), "worker:2");
    EXPECT_EQ(warm["worker"], 2) << warm.err;
  }
}

TEST(Persistence, ABundleStartsHotInAnEmptyCacheDirectory) {
  TempDir a, b;
  const std::string bundle = a.path() + "/model.sfplans";
  const Child made = run_child(a.path() + "/cache", "run,save:" + bundle);
  const Child loaded = run_child(b.path(), "run,load:" + bundle);
  EXPECT_EQ(loaded["explored"], 0) << loaded.err;
  EXPECT_GT(loaded["plans_loaded"], 0);
  EXPECT_EQ(loaded["checksum"], made["checksum"]);
  EXPECT_EQ(loaded["prepared"], 1) << loaded.err;  // the bundle lists the model's matmul
  // ... and the blocks its program held: none is taken from the system in the first iteration.
  EXPECT_GT(loaded["cached_ahead"], 0) << loaded.err;
  EXPECT_EQ(loaded["first_fresh"], 0) << loaded.err;
  if (!jit::have_compiler()) GTEST_SKIP() << "no C++ compiler: no kernels to bundle";
  EXPECT_EQ(loaded["compiled"], 0);
  EXPECT_EQ(loaded["first_interpreted"], 0);
  // The bundle's kernels and plans were also written into the empty directory.
  const Child again = run_child(b.path(), "run");
  EXPECT_EQ(again["explored"], 0);
  EXPECT_EQ(again["compiled"], 0);
  EXPECT_EQ(again["prepared"], 1) << again.err;
}

TEST(Persistence, ABundleMakesTheBlocksItsProgramHeldUnlessTheProgramHasARecordOfItsOwn) {
  TempDir a, b, c;
  const std::string bundle = a.path() + "/model.sfplans";
  const Child made = run_child(a.path() + "/cache", "run,save:" + bundle);
  std::vector<runtime::BundleSection> sections = runtime::read_bundle(bundle);
  ASSERT_FALSE(sections.empty());
  ASSERT_FALSE(sections[0].held.empty()) << "the saving process held blocks";
  // One class more, far above this model's working set, to tell whose record was made.
  constexpr std::uint64_t kMarker = std::uint64_t{8} << 20;
  sections[0].held.push_back({kMarker, 1});
  write_cache_file(bundle, FileKind::kBundle, portable_fingerprint(),
                   runtime::encode_bundle(sections));
  // An empty directory: the bundle's record is made while the process starts.
  const Child loaded = run_child(b.path(), "run,load:" + bundle);
  EXPECT_GE(loaded["cached_ahead"], kMarker) << loaded.err;
  EXPECT_EQ(loaded["first_fresh"], 0) << loaded.err;
  EXPECT_EQ(loaded["checksum"], made["checksum"]);
  // The same program (the same command line) ran in this directory before: its own record is
  // made, not the bundle's.
  run_child(c.path(), "run");
  const Child own = run_child(c.path(), "run,load:" + bundle);
  EXPECT_GT(own["cached_ahead"], 0) << own.err;
  EXPECT_LT(own["cached_ahead"], kMarker) << own.err;
  EXPECT_EQ(own["first_fresh"], 0) << own.err;
}

TEST(Persistence, ABundleFromAnotherMachineKeepsItsPlansAndRecompilesItsKernels) {
  if (!jit::have_compiler()) GTEST_SKIP() << "no C++ compiler: no kernels to bundle";
  TempDir a, b;
  const std::string bundle = a.path() + "/model.sfplans";
  const Child made = run_child(a.path() + "/cache", "run,save:" + bundle);
  // Rewrite the libraries' fingerprints as another machine would have them.
  std::vector<runtime::BundleSection> sections = runtime::read_bundle(bundle);
  std::vector<std::shared_ptr<jit::LibraryImage>> foreign;
  for (runtime::BundleSection& s : sections) {
    for (jit::KernelRecord& k : s.kernels) {
      auto image = std::make_shared<jit::LibraryImage>(*k.library);
      image->fingerprint = "streamfuse 0.1.0; cxx another compiler; -march=elsewhere";
      k.library = image;
    }
  }
  write_cache_file(bundle, FileKind::kBundle, portable_fingerprint(),
                   runtime::encode_bundle(sections));
  const Child loaded = run_child(b.path(), "run,load:" + bundle);
  EXPECT_EQ(loaded["explored"], 0) << loaded.err;  // plans are portable
  EXPECT_GT(loaded["compiled"], 0);                // kernels are not
  EXPECT_EQ(loaded["checksum"], made["checksum"]);
  EXPECT_EQ(count_of(loaded.err, "compiled again here"), 1) << loaded.err;
}

// A bundle's shared objects replaced by one of the test's (checksum computed again, so the file
// reads as sound): loaded as usual, the process runs the planted code; loaded with
// load_native_code off, it never loads it, and compiles the kernels itself to the same results.
TEST(Persistence, ABundleLoadedWithoutNativeCodeRunsNoneOfItsSharedObjects) {
  if (!jit::have_compiler()) GTEST_SKIP() << "no C++ compiler: no kernels to bundle";
  TempDir a, b, c;
  const std::string bundle = a.path() + "/model.sfplans";
  const Child made = run_child(a.path() + "/cache", "run,save:" + bundle);
  const std::optional<std::string> planted = testing::planted_library();
  ASSERT_TRUE(planted);
  ASSERT_GT(testing::plant_in_bundle(bundle, *planted), 0u);
  const std::string marker = a.path() + "/planted-code-ran";
  testing::ScopedEnv env(testing::kPlantedMarkerVariable, marker);

  const Child safe = run_child(b.path(), "run,plans_only:" + bundle);
  EXPECT_FALSE(fs::exists(marker)) << "a shared object of the bundle was loaded\n" << safe.err;
  EXPECT_EQ(safe["checksum"], made["checksum"]);
  EXPECT_EQ(safe["explored"], 0) << safe.err;  // the plans were taken
  EXPECT_GT(safe["compiled"], 0);
  EXPECT_EQ(safe["kernels_loaded"], 0);
  // Nothing of the bundle's code reached the cache directory either: a later run compiles or
  // loads only what the first one built here.
  for (const auto& e : fs::recursive_directory_iterator(b.path()))
    if (e.is_regular_file()) {
      std::ifstream in(e.path(), std::ios::binary);
      const std::string bytes(std::istreambuf_iterator<char>(in), {});
      EXPECT_EQ(bytes.find(*planted), std::string::npos) << e.path();
    }
  const Child again = run_child(b.path(), "run");
  EXPECT_FALSE(fs::exists(marker)) << again.err;
  EXPECT_EQ(again["checksum"], made["checksum"]);

  // The control: loaded as usual, the planted constructor runs (which is why the option exists).
  run_child(c.path(), "run,load:" + bundle);
  EXPECT_TRUE(fs::exists(marker)) << "the planted library was not loaded: this test shows nothing";
}

TEST(Persistence, CorruptFilesAreMissesWithOneWarningEachAndResultsStayTheSame) {
  TempDir dir;
  const Child cold = run_child(dir.path(), "run");
  int corrupted = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    if (!e.is_regular_file() || e.path().filename() == "claims") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(e.path()) - 1));
    f.put('\x7f');
    ++corrupted;
  }
  ASSERT_GT(corrupted, 0);
  const Child hurt = run_child(dir.path(), "run");
  EXPECT_EQ(hurt["checksum"], cold["checksum"]);
  EXPECT_GT(hurt["explored"], 0);
  const int warnings = count_of(hurt.err, "warning: cache: ignored ");
  EXPECT_GT(warnings, 0) << hurt.err;
  EXPECT_LE(warnings, corrupted) << hurt.err;         // at most once per file
  const Child healed = run_child(dir.path(), "run");  // rebuilt by the run before
  EXPECT_EQ(healed["explored"], 0) << healed.err;
  EXPECT_EQ(count_of(healed.err, "warning:"), 0) << healed.err;
}

TEST(Persistence, AnUnusableCacheDirectoryWorksWithoutPersistenceAndSaysSoOnce) {
  TempDir dir;
  const std::string file = dir.write("not-a-directory", "x");
  const Child c = run_child(file + "/cache", "run");
  EXPECT_GT(c["explored"], 0);
  EXPECT_EQ(count_of(c.err, "warning:"), 1) << c.err;
  EXPECT_NE(c.err.find("not persisted"), std::string::npos) << c.err;
  const Child fine = run_child(dir.path() + "/cache", "run");
  EXPECT_EQ(fine["checksum"], c["checksum"]);
}

}  // namespace
}  // namespace streamfuse::cache

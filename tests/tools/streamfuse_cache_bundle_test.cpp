// streamfuse-cache export / clear / import: a directory exported, cleared and imported again holds
// the same files; prepared ops travel to another directory and are merged in front of its own;
// kernels built for another machine are skipped, and with --no-native-code every kernel; a
// bundle's device name never becomes a path outside the directory; a bundle's held blocks are shown
// and not imported.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/bundle.h"
#include "tests/cache/planted_library.h"
#include "tests/tools/cache_tool.h"

namespace streamfuse::testing {
namespace {

TEST_F(StreamfuseCacheTool, ExportClearImportRestoresPlansAndKernels) {
  // Every file comes back but the plan entries and the held blocks: the entries say where this
  // directory's processes started reading ahead, which a bundle does not carry (a loaded bundle
  // has every plan in memory; the first process on the imported directory writes them again);
  // held blocks are a program's, and the directory's programs write their own again.
  std::set<std::string> before;
  for (const Listed& f : listed(run("list")))
    if (f.kind != "plan entries" && f.kind != "held blocks")
      before.insert(f.kind + " " + f.status + " " + f.path);
  EXPECT_EQ(files("held blocks").size(), 1u);
  EXPECT_TRUE(fs::exists(dir_.path() + "/plans/cpu.entries"));
  const std::size_t kernels = files("cpu kernel").size();
  const std::size_t plans = files("plan").size();
  const std::vector<sf::backends::PreparedOp> prepared =
      prepared_ops_in(dir_.path() + "/prepared/cpu.ops");
  ASSERT_EQ(prepared.size(), 1u);
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";

  const Result exported = run("export " + quoted(bundle));
  ASSERT_EQ(exported.code, 0) << describe(exported);
  EXPECT_NE(exported.out.find("exported " + std::to_string(plans) + " plan"), std::string::npos)
      << exported.out;
  EXPECT_NE(exported.out.find(" and 1 prepared op to "), std::string::npos) << exported.out;
  const Result info = run("info " + quoted(bundle));
  ASSERT_EQ(info.code, 0) << describe(info);
  EXPECT_NE(info.out.find("kind:         bundle\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("  cpu: " + std::to_string(plans) + " plans, " + std::to_string(kernels) +
                          " kernels"),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find(" 1 prepared op\n    "), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("      0  " + sf::core::to_string(prepared[0].op) + "  strides "),
            std::string::npos)
      << info.out;

  // The library reads it as a bundle too.
  const sf::plans::BundleSummary loaded = sf::plans::load_bundle(bundle);
  EXPECT_EQ(loaded.plans, plans);
  EXPECT_EQ(loaded.kernels + loaded.kernels_recompiled, kernels);

  const Result cleared = run("clear");
  ASSERT_EQ(cleared.code, 0) << describe(cleared);
  EXPECT_NE(cleared.out.find("plans/ ("), std::string::npos) << cleared.out;
  EXPECT_NE(cleared.out.find("prepared/ (2 files)"), std::string::npos) << cleared.out;
  if (kernels > 0) {
    EXPECT_NE(cleared.out.find("kernels/ ("), std::string::npos) << cleared.out;
  }
  EXPECT_FALSE(fs::exists(dir_.path() + "/plans"));
  EXPECT_FALSE(fs::exists(dir_.path() + "/kernels"));
  EXPECT_FALSE(fs::exists(dir_.path() + "/claims"));
  EXPECT_FALSE(fs::exists(dir_.path() + "/prepared"));
  EXPECT_EQ(run("list").out, "total: 0 files, 0 bytes\n");
  EXPECT_NE(run("clear").out.find("nothing to clear: " + dir_.path() +
                                  " holds no plans, kernels, prepared ops or claims\n"),
            std::string::npos);

  const Result imported = run("import " + quoted(bundle));
  ASSERT_EQ(imported.code, 0) << describe(imported);
  EXPECT_NE(imported.out.find("imported " + std::to_string(plans) + " plan"), std::string::npos)
      << imported.out;
  EXPECT_NE(imported.out.find(" and 1 prepared op into "), std::string::npos) << imported.out;
  EXPECT_EQ(imported.out.find("skipped"), std::string::npos) << imported.out;
  std::set<std::string> after;
  for (const Listed& f : listed(run("list"))) after.insert(f.kind + " " + f.status + " " + f.path);
  EXPECT_EQ(after, before);
  EXPECT_EQ(prepared_ops_in(dir_.path() + "/prepared/cpu.ops"), prepared);
  EXPECT_EQ(run("verify").code, 0);
}

TEST_F(StreamfuseCacheTool, PreparedOpsTravelToAnotherDirectoryWithTheirDevice) {
  const fs::path root(dir_.path());
  const std::vector<sf::backends::PreparedOp> prepared = prepared_ops_in(root / "prepared/cpu.ops");
  ASSERT_FALSE(prepared.empty());
  // A device with prepared ops and no plans still gets a section.
  std::vector<sf::backends::PreparedOp> other = prepared;
  other[0].input_strides[1][0] = 7;
  write_prepared_ops(root / "prepared/cuda:0.ops", other);
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";
  const Result exported = run("export " + quoted(bundle));
  ASSERT_EQ(exported.code, 0) << describe(exported);
  EXPECT_NE(exported.out.find(" and 2 prepared ops to "), std::string::npos) << exported.out;
  const Result info = run("info " + quoted(bundle));
  EXPECT_NE(info.out.find("  cuda:0: 0 plans, 0 kernels, 0 libraries, 1 prepared op\n"),
            std::string::npos)
      << info.out;

  TempDir target;
  const std::string d = "--dir " + quoted(target.path()) + " ";
  const Result imported = tool(d + "import " + quoted(bundle));
  ASSERT_EQ(imported.code, 0) << describe(imported);
  EXPECT_NE(imported.out.find(" and 2 prepared ops into "), std::string::npos) << imported.out;
  EXPECT_EQ(prepared_ops_in(target.path() + "/prepared/cpu.ops"), prepared);
  EXPECT_EQ(prepared_ops_in(target.path() + "/prepared/cuda:0.ops"), other);
  EXPECT_EQ(tool(d + "verify").code, 0);
}

TEST_F(StreamfuseCacheTool, ABundlesHeldBlocksAreShownButNotImported) {
  // save_bundle writes the saving process's held blocks; a directory keeps them per program,
  // and import has no program to give them to.
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";
  ASSERT_EQ(run("export " + quoted(bundle)).code, 0);
  std::vector<sf::runtime::BundleSection> sections = sf::runtime::read_bundle(bundle);
  ASSERT_FALSE(sections.empty());
  EXPECT_TRUE(sections[0].held.empty()) << "export carries no program's blocks";
  sections[0].held = {{1 << 20, 2}, {4096, 3}};
  sf::runtime::write_bundle(bundle, sections);
  const Result info = run("info " + quoted(bundle));
  EXPECT_NE(info.out.find("    held blocks (2 size classes, 2109440 bytes; "), std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("      2 x 1048576 bytes\n      3 x 4096 bytes\n"), std::string::npos)
      << info.out;

  TempDir target;
  const std::string d = "--dir " + quoted(target.path()) + " ";
  const Result imported = tool(d + "import " + quoted(bundle));
  ASSERT_EQ(imported.code, 0) << describe(imported);
  EXPECT_NE(imported.out.find("left out the held blocks of 1 device ("), std::string::npos)
      << imported.out;
  for (const auto& e : fs::recursive_directory_iterator(target.path()))
    EXPECT_NE(e.path().extension(), ".blocks") << e.path();
}

TEST_F(StreamfuseCacheTool, ImportPutsTheBundlesPreparedOpsFirstAndKeepsAtMostTheLimit) {
  const std::vector<sf::backends::PreparedOp> bundled =
      prepared_ops_in(dir_.path() + "/prepared/cpu.ops");
  ASSERT_EQ(bundled.size(), 1u);
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";
  ASSERT_EQ(run("export " + quoted(bundle)).code, 0);
  // Ops of the target directory that the bundle lacks: the same product over other layouts.
  std::vector<sf::backends::PreparedOp> own;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(sf::backends::kMaxPreparedOps); ++i) {
    own.push_back(bundled[0]);
    own.back().input_strides[0][0] = 1000 + i;
  }
  TempDir target;
  const fs::path file = fs::path(target.path()) / "prepared/cpu.ops";
  fs::create_directories(file.parent_path());
  const std::string d = "--dir " + quoted(target.path()) + " ";

  // The bundle's op moves to the front, held once.
  write_prepared_ops(file, {own[0], bundled[0], own[1]});
  ASSERT_EQ(tool(d + "import " + quoted(bundle)).code, 0);
  EXPECT_EQ(prepared_ops_in(file),
            (std::vector<sf::backends::PreparedOp>{bundled[0], own[0], own[1]}));

  // A full file loses its last op.
  write_prepared_ops(file, own);
  ASSERT_EQ(tool(d + "import " + quoted(bundle)).code, 0);
  std::vector<sf::backends::PreparedOp> expected{bundled[0]};
  expected.insert(expected.end(), own.begin(), own.end() - 1);
  EXPECT_EQ(prepared_ops_in(file), expected);
}

TEST_F(StreamfuseCacheTool, ImportSkipsKernelsBuiltForAnotherMachine) {
  if (!kernels_compiled()) GTEST_SKIP() << kNoKernels;
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";
  ASSERT_EQ(run("export " + quoted(bundle)).code, 0);
  // The same bundle as another machine would have written it.
  std::vector<sf::runtime::BundleSection> sections = sf::runtime::read_bundle(bundle);
  std::size_t kernels = 0;
  for (sf::runtime::BundleSection& s : sections) {
    for (sf::jit::KernelRecord& k : s.kernels) {
      auto image = std::make_shared<sf::jit::LibraryImage>(*k.library);
      image->fingerprint += " elsewhere";
      k.library = std::move(image);
      ++kernels;
    }
  }
  ASSERT_GT(kernels, 0u);
  const std::string foreign = out.path() + "/foreign.sfplans";
  sf::runtime::write_bundle(foreign, sections);

  TempDir empty;
  const Result r = tool("--dir " + quoted(empty.path()) + " import " + quoted(foreign));
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find(", 0 kernels (0 libraries) and "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped " + std::to_string(kernels) + " kernel"), std::string::npos)
      << r.out;
  const std::vector<Listed> all = listed(tool("--dir " + quoted(empty.path()) + " list"));
  ASSERT_FALSE(all.empty());
  for (const Listed& f : all) EXPECT_TRUE(f.kind == "plan" || f.kind == "prepared ops") << f.path;
}

// import fills the cache of a machine that has not run streamfuse yet: it creates the directory
// (the other commands refuse a missing one, as a mistyped --dir).
TEST_F(StreamfuseCacheTool, ImportCreatesAMissingDirectory) {
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";
  ASSERT_EQ(run("export " + quoted(bundle)).code, 0);
  const std::string fresh = out.path() + "/new/cache";
  const Result imported = tool("--dir " + quoted(fresh) + " import " + quoted(bundle));
  ASSERT_EQ(imported.code, 0) << describe(imported);
  EXPECT_NE(imported.out.find(" into " + fresh), std::string::npos) << imported.out;
  const Result listed = tool("--dir " + quoted(fresh) + " list");
  EXPECT_EQ(listed.code, 0) << describe(listed);
  EXPECT_FALSE(files("plan").empty());
  EXPECT_NE(listed.out.find("plans/cpu/"), std::string::npos) << listed.out;
}

// import --no-native-code takes a bundle's plans and prepared ops and none of its shared objects:
// one whose libraries were replaced (checksum computed again) leaves no byte of them in DIR,
// where streamfuse would load them; imported as usual, the replaced library is written there.
TEST_F(StreamfuseCacheTool, ImportWithoutNativeCodeWritesNoneOfTheBundlesSharedObjects) {
  if (!kernels_compiled()) GTEST_SKIP() << kNoKernels;
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";
  ASSERT_EQ(run("export " + quoted(bundle)).code, 0);
  const std::optional<std::string> planted = planted_library();
  ASSERT_TRUE(planted);
  ASSERT_GT(plant_in_bundle(bundle, *planted), 0u);
  const auto holds_planted = [&](const std::string& dir) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      if (std::string(std::istreambuf_iterator<char>(in), {}).find(*planted) != std::string::npos)
        return true;
    }
    return false;
  };

  TempDir safe;
  const Result r =
      tool("--dir " + quoted(safe.path()) + " import " + quoted(bundle) + " --no-native-code");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find(", 0 kernels (0 libraries) and "), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("left out " + std::to_string(files("cpu kernel").size()) + " compiled kernel"),
      std::string::npos)
      << r.out;
  const std::vector<Listed> all = listed(tool("--dir " + quoted(safe.path()) + " list"));
  ASSERT_FALSE(all.empty());
  for (const Listed& f : all) EXPECT_TRUE(f.kind == "plan" || f.kind == "prepared ops") << f.path;
  EXPECT_FALSE(holds_planted(safe.path()));

  TempDir trusting;  // the control: without the option the planted bytes land in DIR
  ASSERT_EQ(tool("--dir " + quoted(trusting.path()) + " import " + quoted(bundle)).code, 0);
  EXPECT_TRUE(holds_planted(trusting.path()));
  // The option belongs to import.
  expect_failure(run("list --no-native-code"), 2);
}

TEST_F(StreamfuseCacheTool, ImportRefusesADeviceNameThatIsAPath) {
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";
  ASSERT_EQ(run("export " + quoted(bundle)).code, 0);
  std::vector<sf::runtime::BundleSection> sections = sf::runtime::read_bundle(bundle);
  ASSERT_FALSE(sections.empty());
  sections[0].device = "../../escaped";
  const std::string evil = out.path() + "/evil.sfplans";
  sf::runtime::write_bundle(evil, sections);
  TempDir empty;
  const fs::path inner = fs::path(empty.path()) / "cache";
  const Result r = tool("--dir " + quoted(inner.string()) + " import " + quoted(evil));
  expect_failure(r, 3);
  EXPECT_NE(r.err.find("'../../escaped'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(fs::path(empty.path()) / "escaped"));
  EXPECT_FALSE(fs::exists(inner / "plans"));
}

}  // namespace
}  // namespace streamfuse::testing

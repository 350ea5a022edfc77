// streamfuse-cache export / clear / import: a directory exported, cleared and imported again holds
// the same files; kernels built for another machine are skipped; a bundle's device name never
// becomes a path outside the directory.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cache/bundle.h"
#include "tests/tools/cache_tool.h"

namespace streamfuse::testing {
namespace {

TEST_F(StreamfuseCacheTool, ExportClearImportRestoresPlansAndKernels) {
  std::set<std::string> before;
  for (const Listed& f : listed(run("list"))) before.insert(f.kind + " " + f.status + " " + f.path);
  const std::size_t kernels = files("cpu kernel").size();
  const std::size_t plans = files("plan").size();
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";

  const Result exported = run("export " + quoted(bundle));
  ASSERT_EQ(exported.code, 0) << describe(exported);
  EXPECT_NE(exported.out.find("exported " + std::to_string(plans) + " plan"), std::string::npos)
      << exported.out;
  const Result info = run("info " + quoted(bundle));
  ASSERT_EQ(info.code, 0) << describe(info);
  EXPECT_NE(info.out.find("kind:         bundle\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("  cpu: " + std::to_string(plans) + " plans, " + std::to_string(kernels) +
                          " kernels"),
            std::string::npos)
      << info.out;

  // The library reads it as a bundle too.
  const sf::plans::BundleSummary loaded = sf::plans::load_bundle(bundle);
  EXPECT_EQ(loaded.plans, plans);
  EXPECT_EQ(loaded.kernels + loaded.kernels_recompiled, kernels);

  const Result cleared = run("clear");
  ASSERT_EQ(cleared.code, 0) << describe(cleared);
  EXPECT_NE(cleared.out.find("plans/ ("), std::string::npos) << cleared.out;
  if (kernels > 0) {
    EXPECT_NE(cleared.out.find("kernels/ ("), std::string::npos) << cleared.out;
  }
  EXPECT_FALSE(fs::exists(dir_.path() + "/plans"));
  EXPECT_FALSE(fs::exists(dir_.path() + "/kernels"));
  EXPECT_FALSE(fs::exists(dir_.path() + "/claims"));
  EXPECT_EQ(run("list").out, "total: 0 files, 0 bytes\n");
  EXPECT_NE(run("clear").out.find("nothing to clear"), std::string::npos);

  const Result imported = run("import " + quoted(bundle));
  ASSERT_EQ(imported.code, 0) << describe(imported);
  EXPECT_NE(imported.out.find("imported " + std::to_string(plans) + " plan"), std::string::npos)
      << imported.out;
  EXPECT_EQ(imported.out.find("skipped"), std::string::npos) << imported.out;
  std::set<std::string> after;
  for (const Listed& f : listed(run("list"))) after.insert(f.kind + " " + f.status + " " + f.path);
  EXPECT_EQ(after, before);
  EXPECT_EQ(run("verify").code, 0);
}

TEST_F(StreamfuseCacheTool, ImportSkipsKernelsBuiltForAnotherMachine) {
  if (!kernels_compiled()) GTEST_SKIP() << kNoKernels;
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";
  ASSERT_EQ(run("export " + quoted(bundle)).code, 0);
  // The same bundle as another machine would have written it.
  std::vector<sf::cache::BundleSection> sections = sf::cache::read_bundle(bundle);
  std::size_t kernels = 0;
  for (sf::cache::BundleSection& s : sections) {
    for (sf::jit::KernelRecord& k : s.kernels) {
      auto image = std::make_shared<sf::jit::LibraryImage>(*k.library);
      image->fingerprint += " elsewhere";
      k.library = std::move(image);
      ++kernels;
    }
  }
  ASSERT_GT(kernels, 0u);
  const std::string foreign = out.path() + "/foreign.sfplans";
  sf::cache::write_bundle(foreign, sections);

  TempDir empty;
  const Result r = tool("--dir " + quoted(empty.path()) + " import " + quoted(foreign));
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("and 0 kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped " + std::to_string(kernels) + " kernel"), std::string::npos)
      << r.out;
  const std::vector<Listed> all = listed(tool("--dir " + quoted(empty.path()) + " list"));
  ASSERT_FALSE(all.empty());
  for (const Listed& f : all) EXPECT_EQ(f.kind, "plan") << f.path;
}

TEST_F(StreamfuseCacheTool, ImportRefusesADeviceNameThatIsAPath) {
  TempDir out;
  const std::string bundle = out.path() + "/cache.sfplans";
  ASSERT_EQ(run("export " + quoted(bundle)).code, 0);
  std::vector<sf::cache::BundleSection> sections = sf::cache::read_bundle(bundle);
  ASSERT_FALSE(sections.empty());
  sections[0].device = "../../escaped";
  const std::string evil = out.path() + "/evil.sfplans";
  sf::cache::write_bundle(evil, sections);
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

// tools/streamfuse-cache run as a process over a copy of a cache directory the test fills through
// the public API: list, info of each kind, verify (and --remove) of plans and prepared ops, prune,
// and the exit statuses of bad usage and of files that cannot be used. Bundles:
// streamfuse_cache_bundle_test.cpp.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cache/cache_file.h"
#include "tests/tools/cache_tool.h"
#include "tests/valid_utf8.h"

namespace streamfuse::testing {
namespace {

TEST_F(StreamfuseCacheTool, ListsEveryFileWithItsStatusAndATotal) {
  const Result r = run("list");
  ASSERT_EQ(r.code, 0) << describe(r);
  std::string total;
  const std::vector<Listed> all = listed(r, &total);
  std::map<std::string, int> kinds;
  for (const Listed& f : all) {
    EXPECT_EQ(f.status, "ok") << f.path;
    ++kinds[f.kind];
  }
  EXPECT_GE(kinds["plan"], 1) << r.out;
  // The matmul's oneDNN primitive, prepared ahead by the next process.
  EXPECT_EQ(kinds["prepared ops"], 1) << r.out;
  EXPECT_EQ(files("prepared ops"), std::vector<std::string>{"prepared/cpu.ops"}) << r.out;
  EXPECT_EQ(total.rfind("total: " + std::to_string(all.size()) + " files, ", 0), 0u) << total;
  for (const Listed& f : all) {
    if (f.kind == "plan") {
      EXPECT_EQ(f.path.rfind("plans/cpu/", 0), 0u) << f.path;
    }
  }
  if (kernels_compiled()) {
    EXPECT_GE(kinds["cpu kernel"], 1) << r.out;
    EXPECT_GE(kinds["cpu library"], 1) << r.out;
  }
  // An empty directory lists nothing (a missing one is an error: AMissingDirectoryIsAnError).
  TempDir empty;
  const Result none = tool("--dir " + quoted(empty.path()) + " list");
  EXPECT_EQ(none.code, 0) << describe(none);
  EXPECT_EQ(none.out, "total: 0 files, 0 bytes\n");
}

TEST_F(StreamfuseCacheTool, InfoDecodesAPlan) {
  // The plan of the fused program (the filled cache holds the matmul's plans too).
  const std::vector<std::string> plans = files("plan");
  const auto it = std::find_if(plans.begin(), plans.end(), [&](const std::string& p) {
    return run("info " + quoted(p)).out.find("optimization: elementwise") != std::string::npos;
  });
  ASSERT_NE(it, plans.end()) << "no plan of an element-wise optimization";
  const std::string& plan = *it;
  const Result r = run("info " + quoted(plan));
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("kind:         plan\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(this streamfuse's)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checksum ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ops ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exp("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("triggers ("), std::string::npos) << r.out;
  // exp(x * 2 + 1): the scalars print as placeholders $0 and $1 (not as their bits read as
  // doubles, 0 and 4.94066e-324), the size 4096 as its id s1.
  EXPECT_NE(r.out.find(":[s1]:f32:ro, $0)[scalar rhs] -> t"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(":[s1]:f32:rw, $1)[scalar rhs] -> t"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("e-32"), std::string::npos) << r.out;
  // An absolute path works too; --source is for libraries.
  EXPECT_EQ(tool("info " + quoted(dir_.path() + "/" + plan)).out, r.out);
  expect_failure(run("info --source " + quoted(plan)), 2);
}

TEST_F(StreamfuseCacheTool, InfoDecodesAKernelAndItsLibrary) {
  if (!kernels_compiled()) GTEST_SKIP() << kNoKernels;
  const std::vector<std::string> kernels = files("cpu kernel");
  const std::vector<std::string> libraries = files("cpu library");
  ASSERT_FALSE(kernels.empty());
  ASSERT_FALSE(libraries.empty());
  const Result k = run("info " + quoted(kernels[0]));
  ASSERT_EQ(k.code, 0) << describe(k);
  EXPECT_NE(k.out.find("kind:         cpu kernel\n"), std::string::npos) << k.out;
  EXPECT_NE(k.out.find("(this machine's)"), std::string::npos) << k.out;
  EXPECT_NE(k.out.find("key:          rank "), std::string::npos) << k.out;
  EXPECT_NE(k.out.find("symbol:       "), std::string::npos) << k.out;
  EXPECT_NE(k.out.find(".lib: ok)"), std::string::npos) << k.out;
  EXPECT_NE(k.out.find("program:\n"), std::string::npos) << k.out;

  const Result l = run("info " + quoted(libraries[0]));
  ASSERT_EQ(l.code, 0) << describe(l);
  EXPECT_NE(l.out.find("kind:         cpu library\n"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("shared object: "), std::string::npos) << l.out;
  EXPECT_EQ(l.out.find("--- source ---"), std::string::npos) << l.out;
  const Result source = run("info --source " + quoted(libraries[0]));
  ASSERT_EQ(source.code, 0) << describe(source);
  const std::size_t at = source.out.find("--- source ---\n");
  ASSERT_NE(at, std::string::npos) << source.out;
  EXPECT_NE(source.out.find("extern \"C\"", at), std::string::npos) << source.out.substr(at);
}

TEST_F(StreamfuseCacheTool, InfoPrintsEachPreparedOpWithItsInputsStrides) {
  const std::vector<sf::backends::PreparedOp> ops =
      prepared_ops_in(dir_.path() + "/prepared/cpu.ops");
  ASSERT_EQ(ops.size(), 1u);
  const Result r = run("info prepared/cpu.ops");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("kind:         prepared ops\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(this streamfuse's)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("prepared ops (1;"), std::string::npos) << r.out;
  // a [64, 32] row-major; b^T a [32, 8] view of a row-major [8, 32]: column-major.
  EXPECT_NE(r.out.find("\n  0  " + sf::core::to_string(ops[0].op) + "  strides [32, 1] [1, 32]\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("matmul("), std::string::npos) << r.out;
}

TEST_F(StreamfuseCacheTool, VerifyNamesACorruptFileAndRemovesIt) {
  const Result good = run("verify");
  ASSERT_EQ(good.code, 0) << describe(good);
  EXPECT_NE(good.out.find(": 0 bad"), std::string::npos) << good.out;
  EXPECT_EQ(good.err, "");

  const std::string plan = files("plan").at(0);
  const fs::path path = dir_.path() + "/" + plan;
  std::string bytes = read_all(path);
  bytes[bytes.size() - 3] ^= 0x20;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const Result bad = run("verify");
  expect_failure(bad, 1);
  EXPECT_NE(bad.out.find(plan + ": checksum mismatch\n"), std::string::npos) << bad.out;
  EXPECT_NE(bad.err.find("1 of "), std::string::npos) << bad.err;
  EXPECT_TRUE(fs::exists(path));  // only reported

  const Result removed = run("verify --remove");
  expect_failure(removed, 1);
  EXPECT_NE(removed.out.find(plan + ": checksum mismatch (removed)"), std::string::npos)
      << removed.out;
  EXPECT_FALSE(fs::exists(path));
  const Result clean = run("verify");
  EXPECT_EQ(clean.code, 0) << describe(clean);
}

TEST_F(StreamfuseCacheTool, VerifyNamesPreparedOpsThatDoNotDecodeAndRemovesThem) {
  // A good header and checksum over ops that are not a matmul: the payload is what is bad.
  const fs::path path = dir_.path() + "/prepared/cpu.ops";
  std::vector<sf::backends::PreparedOp> ops = prepared_ops_in(path);
  ASSERT_FALSE(ops.empty());
  ops[0].op.kind = sf::core::OpKind::kAdd;  // two inputs and an output, as a matmul has
  write_prepared_ops(path, ops);
  const Result bad = run("verify");
  expect_failure(bad, 1);
  EXPECT_NE(bad.out.find("prepared/cpu.ops: cache payload does not decode: prepared op add\n"),
            std::string::npos)
      << bad.out;
  EXPECT_NE(bad.err.find("1 of "), std::string::npos) << bad.err;
  EXPECT_TRUE(fs::exists(path));

  const Result removed = run("verify --remove");
  expect_failure(removed, 1);
  EXPECT_NE(removed.out.find("prepared/cpu.ops: cache payload does not decode: prepared op add "
                             "(removed)\n"),
            std::string::npos)
      << removed.out;
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(run("verify").code, 0);
}

TEST_F(StreamfuseCacheTool, VerifyNamesPreparedOpsOfAnotherStreamfuseVersion) {
  const fs::path path = dir_.path() + "/prepared/cpu.ops";
  const sf::cache::ReadResult good = sf::cache::inspect_cache_file(path);
  ASSERT_TRUE(good);
  sf::cache::write_cache_file(path, sf::cache::FileKind::kPreparedOps, "streamfuse 0.0.1 plans",
                              good.payload);
  const Result r = run("verify");
  expect_failure(r, 1);
  EXPECT_NE(r.out.find("prepared/cpu.ops: written by another streamfuse (fingerprint "
                       "'streamfuse 0.0.1 plans'"),
            std::string::npos)
      << r.out;
}

TEST_F(StreamfuseCacheTool, PlanEntriesAreShownAndVerifiedInTheirPlace) {
  // The runtime of a device reads plans/<device>.entries and nothing else.
  const fs::path root(dir_.path());
  ASSERT_TRUE(fs::exists(root / "plans/cpu.entries"));
  const Result info = run("info " + quoted((root / "plans/cpu.entries").string()));
  ASSERT_EQ(info.code, 0) << describe(info);
  EXPECT_NE(info.out.find("kind:         plan entries\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("plan entries (1; most recent first"), std::string::npos) << info.out;
  fs::copy_file(root / "plans/cpu.entries", root / "prepared/cpu.entries");
  const Result r = run("verify");
  expect_failure(r, 1);
  EXPECT_NE(r.out.find("prepared/cpu.entries: in the wrong place: plan entries belong at "
                       "plans/cpu.entries\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find(": verify: 1 of "), std::string::npos) << r.err;
}

TEST_F(StreamfuseCacheTool, VerifyNamesPreparedOpsInTheWrongPlace) {
  // The runtime of a device reads prepared/<device>.ops and nothing else.
  const fs::path root(dir_.path());
  fs::create_directories(root / "prepared/nested");
  for (const char* copy :
       {"prepared/nested/cpu.ops", "plans/cpu.ops", "prepared/a b.ops", "prepared/cuda:0.ops"})
    fs::copy_file(root / "prepared/cpu.ops", root / copy);
  const Result r = run("verify");
  expect_failure(r, 1);
  EXPECT_NE(r.out.find("prepared/nested/cpu.ops: in the wrong place: prepared ops belong at "
                       "prepared/cpu.ops\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("plans/cpu.ops: in the wrong place: prepared ops belong at "
                       "prepared/cpu.ops\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("prepared/a b.ops: in the wrong place: prepared ops belong at "
                       "prepared/<device>.ops, and 'a b' is not a device name\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find(": verify: 3 of "), std::string::npos) << r.err;  // cuda:0's is good
  EXPECT_EQ(r.out.find("prepared/cuda:0.ops:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("prepared/cpu.ops:"), std::string::npos) << r.out;
}

TEST_F(StreamfuseCacheTool, VerifyNamesAPlanOfAnotherStreamfuseVersion) {
  const std::string plan = files("plan").at(0);
  const fs::path path = dir_.path() + "/" + plan;
  const sf::cache::ReadResult good = sf::cache::inspect_cache_file(path);
  ASSERT_TRUE(good);
  sf::cache::write_cache_file(path, sf::cache::FileKind::kPlan, "streamfuse 0.0.1 plans",
                              good.payload);
  const Result r = run("verify");
  expect_failure(r, 1);
  EXPECT_NE(r.out.find(plan + ": written by another streamfuse (fingerprint 'streamfuse 0.0.1"),
            std::string::npos)
      << r.out;
}

// Text from files (a header's fingerprint, a file's name) with bytes that are not printable is
// shown escaped, \xNN, on stdout and stderr: the tool's output is always valid UTF-8, and a
// corrupt file cannot send the terminal control sequences.
TEST_F(StreamfuseCacheTool, BytesFromCorruptFilesAreShownEscaped) {
  const std::string plan = files("plan").at(0);
  const fs::path path = dir_.path() + "/" + plan;
  const sf::cache::ReadResult good = sf::cache::inspect_cache_file(path);
  ASSERT_TRUE(good);
  sf::cache::write_cache_file(path, sf::cache::FileKind::kPlan, "streamfuse \xff\xfe\x1b[2J",
                              good.payload);
  const std::string odd = path.parent_path().string() + "/odd\xff\x01.plan";
  fs::copy_file(path, odd);
  const std::string escaped = "streamfuse \\xff\\xfe\\x1b[2J";
  for (const char* command : {"verify", "list"}) {
    SCOPED_TRACE(command);
    const Result r = run(command);
    EXPECT_TRUE(valid_utf8(r.out) && valid_utf8(r.err)) << describe(r);
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << describe(r);
    EXPECT_NE(r.out.find("odd\\xff\\x01.plan"), std::string::npos) << describe(r);
  }
  EXPECT_NE(
      run("verify").out.find(plan + ": written by another streamfuse (fingerprint '" + escaped),
      std::string::npos);
  const Result info = run("info " + quoted(plan));
  EXPECT_TRUE(valid_utf8(info.out)) << describe(info);
  EXPECT_NE(info.out.find(escaped), std::string::npos) << describe(info);
  // And in the one line of an error.
  const Result missing = run("info " + quoted("plans/none\xfe\x1b.plan"));
  expect_failure(missing, 3);
  EXPECT_TRUE(valid_utf8(missing.err)) << describe(missing);
  EXPECT_NE(missing.err.find("no file plans/none\\xfe\\x1b.plan"), std::string::npos)
      << describe(missing);
}

TEST_F(StreamfuseCacheTool, ATemporaryOfAWriteInFlightIsListedButNotJudged) {
  const std::string plan = files("plan").at(0);
  const std::string temporary = plan + ".tmp.12345.0";
  fs::copy_file(dir_.path() + "/" + plan, dir_.path() + "/" + temporary);
  const std::vector<Listed> all = listed(run("list"));
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const Listed& f) { return f.path == temporary; });
  ASSERT_NE(it, all.end());
  EXPECT_EQ(it->kind, "temporary");
  const Result r = run("verify");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("(1 temporary file of a write in flight not checked)"), std::string::npos)
      << r.out;
  // One left over from a write an hour ago is an unfinished write: bad.
  fs::last_write_time(dir_.path() + "/" + temporary,
                      fs::file_time_type::clock::now() - std::chrono::hours(2));
  const Result stale = run("verify");
  expect_failure(stale, 1);
  EXPECT_NE(stale.out.find(temporary + ": an abandoned write (a temporary file over an hour old)"),
            std::string::npos)
      << stale.out;
}

// The pid of a process that has ended.
long ended_process() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST_F(StreamfuseCacheTool, TemporariesAndBuildFoldersOfEndedProcessesAreBadAndRemoved) {
  const std::string plan = files("plan").at(0);
  const long dead = ended_process();
  const std::string temporary = plan + ".tmp." + std::to_string(dead) + ".3";
  fs::copy_file(dir_.path() + "/" + plan, dir_.path() + "/" + temporary);
  // A writer that ended a minute ago renames nothing any more (younger, it might live in another
  // pid namespace with the same number).
  fs::last_write_time(dir_.path() + "/" + temporary,
                      fs::file_time_type::clock::now() - std::chrono::minutes(2));
  // The build folder a process killed mid-compile left: its lock is held by nobody.
  const fs::path build = fs::path(dir_.path()) / "scratch" / (std::to_string(dead) + "-AbCdEf");
  fs::create_directories(build);
  std::ofstream(build / "lock").put('\0');
  std::ofstream(build / "0123456789abcdef.cpp") << "// a kernel being compiled";

  const std::vector<Listed> all = listed(run("list"));
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const Listed& f) { return f.path == temporary; });
  ASSERT_NE(it, all.end());
  EXPECT_EQ(it->status, "an abandoned write (the temporary file of process " +
                            std::to_string(dead) + ", which has ended)");
  const Result r = run("verify");
  expect_failure(r, 1);
  EXPECT_NE(r.out.find(temporary + ": an abandoned write"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scratch/" + build.filename().string() +
                       "/: the build folder of a process that ended"),
            std::string::npos)
      << r.out;
  const Result removed = run("verify --remove");
  expect_failure(removed, 1);
  EXPECT_FALSE(fs::exists(dir_.path() + "/" + temporary));
  EXPECT_FALSE(fs::exists(build));
  EXPECT_EQ(run("verify").code, 0);

  // prune and clear remove them too.
  fs::copy_file(dir_.path() + "/" + plan, dir_.path() + "/" + temporary);
  fs::last_write_time(dir_.path() + "/" + temporary,
                      fs::file_time_type::clock::now() - std::chrono::minutes(2));
  fs::create_directories(build);
  std::ofstream(build / "lock").put('\0');
  const Result pruned = run("prune --max-size 1G");
  EXPECT_EQ(pruned.code, 0) << describe(pruned);
  EXPECT_NE(pruned.out.find("removed 1 files"), std::string::npos) << pruned.out;
  EXPECT_NE(pruned.out.find("1 scratch folders of ended processes"), std::string::npos)
      << pruned.out;
  EXPECT_FALSE(fs::exists(dir_.path() + "/" + temporary));
  EXPECT_FALSE(fs::exists(build));
  fs::create_directories(build);
  std::ofstream(build / "lock").put('\0');
  const Result cleared = run("clear");
  EXPECT_EQ(cleared.code, 0) << describe(cleared);
  EXPECT_FALSE(fs::exists(build));
}

TEST_F(StreamfuseCacheTool, PruneKeepsEveryLibraryWithItsKernels) {
  if (!kernels_compiled()) GTEST_SKIP() << kNoKernels;
  std::uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path()))
    if (e.is_regular_file()) total += e.file_size();
  // At every size, what is left is consistent: no kernel without its library (verify exits 0).
  for (int eighths = 7; eighths >= 0; --eighths) {
    const Result r = run("prune --max-size " + std::to_string(total * eighths / 8));
    ASSERT_EQ(r.code, 0) << describe(r);
    const Result check = run("verify");
    EXPECT_EQ(check.code, 0) << eighths << "/8:\n" << describe(check);
    for (const Listed& f : listed(run("list"))) EXPECT_EQ(f.status, "ok") << f.path;
  }
}

TEST_F(StreamfuseCacheTool, AKernelWhoseLibraryIsMissingIsNotListedOk) {
  if (!kernels_compiled()) GTEST_SKIP() << kNoKernels;
  const std::string library = files("cpu library").at(0);
  fs::remove(dir_.path() + "/" + library);
  int not_ok = 0;
  for (const Listed& f : listed(run("list")))
    if (f.kind == "cpu kernel" && f.status != "ok") {
      ++not_ok;
      EXPECT_NE(f.status.find("its library " + fs::path(library).stem().string()),
                std::string::npos)
          << f.status;
    }
  EXPECT_GT(not_ok, 0);
  expect_failure(run("verify"), 1);
}

TEST_F(StreamfuseCacheTool, VerifyNamesAPlanItsOpsDoNotName) {
  // A good plan file under another name is never found by the runtime.
  const std::string plan = files("plan").at(0);
  const std::string misplaced = fs::path(plan).parent_path().string() + "/0000000000000000.plan";
  fs::copy_file(dir_.path() + "/" + plan, dir_.path() + "/" + misplaced);
  const Result r = run("verify");
  expect_failure(r, 1);
  EXPECT_NE(r.out.find(misplaced + ": in the wrong place: its ops belong at " + plan + "\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find(plan + ":"), std::string::npos) << r.out;
}

TEST_F(StreamfuseCacheTool, VerifyReportsTheKernelsOfABadLibrary) {
  if (!kernels_compiled()) GTEST_SKIP() << kNoKernels;
  const std::string library = files("cpu library").at(0);
  const std::vector<std::string> kernels = files("cpu kernel");
  ASSERT_FALSE(kernels.empty());
  const std::string name = fs::path(library).stem().string();
  fs::resize_file(dir_.path() + "/" + library, fs::file_size(dir_.path() + "/" + library) - 5);
  const Result r = run("verify --remove");
  expect_failure(r, 1);
  EXPECT_NE(r.out.find(library + ": truncated (removed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": its library " + name + ".lib is bad: truncated (removed)"),
            std::string::npos)
      << r.out;
  // A program's folder goes with its last kernel; kernels/cpu/ stays.
  for (const std::string& kernel : kernels) {
    if (r.out.find(kernel + ": its library") == std::string::npos) continue;
    const fs::path folder = (fs::path(dir_.path()) / kernel).parent_path();
    EXPECT_TRUE(!fs::exists(folder) || !fs::is_empty(folder)) << folder;
  }
  EXPECT_TRUE(fs::is_directory(dir_.path() + "/kernels/cpu"));
  const Result after = run("verify");
  EXPECT_EQ(after.code, 0) << describe(after);
}

TEST_F(StreamfuseCacheTool, PruneToZeroEmptiesTheDirectory) {
  const std::size_t before = listed(run("list")).size();
  ASSERT_GT(before, 0u);
  const Result r = run("prune --max-size 0");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("removed " + std::to_string(before) + " files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" -> 0 bytes"), std::string::npos) << r.out;
  EXPECT_EQ(run("list").out, "total: 0 files, 0 bytes\n");
  // Sizes with suffixes parse; nothing is left to remove.
  const Result suffixed = run("prune --max-size=1K");
  EXPECT_EQ(suffixed.code, 0) << describe(suffixed);
  EXPECT_NE(suffixed.out.find("at most 1024 bytes: removed 0 files"), std::string::npos)
      << suffixed.out;
}

TEST(StreamfuseCacheToolUsage, BadUsageExitsWith2) {
  for (const char* args :
       {"", "lst", "list --bogus", "list extra", "info", "export", "import", "prune",
        "prune --max-size", "prune --max-size 12Q", "prune --max-size -5", "verify --source",
        "list --remove", "clear --max-size 1K", "--dir"}) {
    SCOPED_TRACE(args);
    expect_failure(tool(args), 2);
  }
}

TEST(StreamfuseCacheToolUsage, FilesThatCannotBeUsedExitWith3) {
  TempDir dir;
  const std::string d = "--dir " + quoted(dir.path()) + " ";
  const Result missing = tool(d + "import " + quoted(dir.path() + "/missing.sfplans"));
  expect_failure(missing, 3);
  EXPECT_NE(missing.err.find("missing.sfplans"), std::string::npos) << missing.err;
  const std::string text = dir.write("notes.txt", "not a bundle");
  expect_failure(tool(d + "import " + quoted(text)), 3);
  expect_failure(tool(d + "info " + quoted(text)), 3);
  expect_failure(tool(d + "info nothing-here.plan"), 3);
  expect_failure(tool(d + "export " + quoted(dir.path() + "/no/such/folder/b.sfplans")), 3);
  expect_failure(tool("--dir " + quoted(text) + " list"), 3);
}

// A mistyped --dir is an error, not an empty cache: every command that reads the directory exits
// 3 with one line naming it. (import creates it: streamfuse_cache_bundle_test.cpp.)
TEST(StreamfuseCacheToolUsage, AMissingDirectoryIsAnError) {
  TempDir dir;
  const std::string missing = dir.path() + "/typo";
  for (const char* command :
       {"list", "verify", "verify --remove", "prune --max-size 1K", "clear"}) {
    SCOPED_TRACE(command);
    const Result r = tool("--dir " + quoted(missing) + " " + command);
    expect_failure(r, 3);
    EXPECT_NE(r.err.find(missing + ": no such directory"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  const Result exported =
      tool("--dir " + quoted(missing) + " export " + quoted(dir.path() + "/b.sfplans"));
  expect_failure(exported, 3);
  EXPECT_NE(exported.err.find(missing + ": no such directory"), std::string::npos) << exported.err;
  EXPECT_FALSE(fs::exists(dir.path() + "/b.sfplans"));
  // info needs the directory only to find a relative FILE, and says that it is missing.
  const Result info = tool("--dir " + quoted(missing) + " info plans/x.plan");
  expect_failure(info, 3);
  EXPECT_NE(info.err.find("which does not exist"), std::string::npos) << info.err;
  EXPECT_FALSE(fs::exists(missing)) << "nothing made it";
}

TEST(StreamfuseCacheToolUsage, HelpDocumentsTheExitStatuses) {
  const Result r = tool("--help");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.err, "");
  for (const char* what :
       {"usage: streamfuse-cache", "list", "info FILE", "verify [--remove]",
        "prune --max-size SIZE", "export FILE", "import FILE", "clear", "prepared/", "prepared ops",
        "Exit status:", "  1  verify", "  2  usage", "  3  operational", "DIR must exist"})
    EXPECT_NE(r.out.find(what), std::string::npos) << what;
}

}  // namespace
}  // namespace streamfuse::testing

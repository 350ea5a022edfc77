// The info command: a cache file's header and decoded contents.
#include <iostream>
#include <set>
#include <sstream>
#include <system_error>

#include "backends/block_files.h"
#include "backends/prepared_op_codec.h"
#include "cache/cache_dir.h"
#include "cache/cache_file.h"
#include "cache/op_codec.h"
#include "fusion/plan_codec.h"
#include "jit/kernel_codec.h"
#include "runtime/bundle.h"
#include "tools/streamfuse_cache.h"
#include "tools/streamfuse_cache_check.h"

namespace streamfuse::tools {
namespace fs = std::filesystem;

namespace {

// `file` as given when it exists, else relative to the cache directory (as list prints it).
fs::path resolve(const fs::path& root, const std::string& file) {
  std::error_code ec;
  const fs::path given(file);
  if (fs::exists(fs::symlink_status(given, ec))) return given;
  if (given.is_relative() && fs::exists(fs::symlink_status(root / given, ec))) return root / given;
  std::string where;
  if (given.is_relative()) {
    where = " here or in " + root.string();
    if (!fs::exists(fs::symlink_status(root, ec)))
      where += ", which does not exist (give the cache directory with --dir)";
  }
  throw ToolError(kExitFailure, "info: no file " + file + where);
}

std::string whose_plans(const std::string& fingerprint) {
  return fingerprint == cache::portable_fingerprint()
             ? "this streamfuse's"
             : "another streamfuse's; this one reads '" + cache::portable_fingerprint() + "'";
}

std::string whose_kernels(const std::string& fingerprint) {
  return fingerprint == this_machine_fingerprint()
             ? "this machine's"
             : "not this machine's: another compiler, CPU level or streamfuse";
}

void print_indented(const std::string& text, const char* indent) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) std::cout << indent << line << '\n';
}

// A plan's ops or a trigger's: relative form.
void print_relative_ops(const std::vector<core::OpDesc>& ops, const char* indent) {
  for (std::size_t i = 0; i < ops.size(); ++i)
    std::cout << indent << i << "  " << core::to_string(ops[i], core::OpForm::kRelative) << '\n';
}

// "matmul(...) -> ...  strides [32, 1] [16, 1]": the op, then each input's element strides.
std::string prepared_op_line(const backends::PreparedOp& p) {
  std::string line = core::to_string(p.op) + "  strides";
  for (std::size_t i = 0; i < p.input_strides.size(); ++i) {
    const std::size_t rank =
        i < p.op.inputs.size() ? static_cast<std::size_t>(p.op.inputs[i].shape.rank()) : 0;
    line += " [";
    for (std::size_t d = 0; d < rank && d < p.input_strides[i].size(); ++d)
      line += (d ? ", " : "") + std::to_string(p.input_strides[i][d]);
    line += "]";
  }
  return line;
}

void print_prepared_ops(const std::vector<backends::PreparedOp>& ops, const char* indent) {
  for (std::size_t i = 0; i < ops.size(); ++i)
    std::cout << indent << i << "  " << prepared_op_line(ops[i]) << '\n';
}

void print_plan(const std::string& payload) {
  const fusion::PlanDraft plan = fusion::decode_plan(payload);
  std::cout << "ops (" << plan.ops.size()
            << "; relative form: tensors numbered from the plan's start, sizes s1, s2, ... "
               "stand for the sizes other than 1, scalars $0, $1, ... are positional "
               "placeholders):\n";
  print_relative_ops(plan.ops, "  ");
  std::cout << "triggers (" << plan.triggers.size() << "):\n";
  for (const fusion::Trigger& t : plan.triggers) {
    switch (t.kind) {
      case fusion::Trigger::Kind::kOnOperations:
        std::cout << "  when the next ops are (" << t.ops.size() << "):\n";
        print_relative_ops(t.ops, "    ");
        break;
      case fusion::Trigger::Kind::kOnSync:
        std::cout << "  on sync\n";
        break;
      case fusion::Trigger::Kind::kAlways:
        std::cout << "  always\n";
        break;
    }
  }
  std::cout << "optimization: "
            << (plan.optimization ? plan.optimization->describe() : "none (ops run one by one)")
            << '\n';
}

// Whether the library a kernel names, next to the kernel's file, is one it can run with.
std::string library_status(const fs::path& path, const std::string& fingerprint) {
  const cache::ReadResult r = cache::inspect_cache_file(path);
  if (!r) return rejection_text(r);
  if (r.kind != cache::FileKind::kCpuLibrary)
    return std::string("a ") + cache::file_kind_name(r.kind) + " file";
  if (r.fingerprint != fingerprint) return "built under another fingerprint";
  try {
    const jit::LibraryImage image = jit::decode_library(r.payload);
    if (path.stem() != image.name) return "holds library " + image.name;
  } catch (const std::exception& e) {
    return e.what();
  }
  return "ok";
}

void print_kernel(const fs::path& path, const std::string& fingerprint,
                  const std::string& payload) {
  const jit::KernelEntry kernel = jit::decode_kernel_entry(payload);
  // kernels/cpu/<program hash>/<kernel>.kernel names kernels/cpu/<library>.lib
  const fs::path library = path.parent_path().parent_path() / (kernel.library + ".lib");
  std::cout << "program hash: " << cache::hex16(kernel.program_hash) << '\n'
            << "key:          " << kernel.key.to_string() << '\n'
            << "symbol:       " << kernel.symbol << '\n'
            << "library:      " << kernel.library << " (" << library.string() << ": "
            << library_status(library, fingerprint) << ")\n"
            << "program:\n";
  print_indented(kernel.program.to_string(), "  ");
}

void print_library(const std::string& payload, bool print_source) {
  const jit::LibraryImage library = jit::decode_library(payload);
  std::cout << "name:          " << library.name << '\n'
            << "source:        " << library.source.size() << " bytes\n"
            << "shared object: " << library.bytes.size() << " bytes\n";
  if (print_source) std::cout << "--- source ---\n" << library.source;
}

void print_prepared_file(const std::string& payload) {
  const std::vector<backends::PreparedOp> ops = backends::decode_prepared_ops(payload);
  std::cout << "prepared ops (" << ops.size()
            << "; most recently first used first, prepared at start-up):\n";
  print_prepared_ops(ops, "  ");
}

void print_entries(const std::string& payload) {
  const std::vector<core::OpDesc> ops = cache::decode_ops(payload);
  std::cout << "plan entries (" << ops.size()
            << "; most recent first, plans read ahead from them at start-up):\n";
  for (const core::OpDesc& op : ops)
    std::cout << "  " << core::to_string(op, core::OpForm::kRelative) << '\n';
}

// One size class a line, after `indent`.
void print_size_classes(const std::vector<backends::HeldBlocks>& blocks, const char* indent) {
  for (const backends::HeldBlocks& b : blocks)
    std::cout << indent << b.blocks << " x " << b.capacity << " bytes\n";
}

std::uint64_t total_bytes(const std::vector<backends::HeldBlocks>& blocks) {
  std::uint64_t total = 0;
  for (const backends::HeldBlocks& b : blocks) total += b.capacity * b.blocks;
  return total;
}

void print_held_blocks(const std::string& payload) {
  const std::vector<backends::HeldBlocks> blocks = backends::decode_held_blocks(payload);
  std::cout << "held blocks (" << blocks.size() << " size classes, " << total_bytes(blocks)
            << " bytes; made ahead at start-up by the next run of the same program):\n";
  print_size_classes(blocks, "  ");
}

void print_bundle(const std::string& payload) {
  const std::vector<runtime::BundleSection> sections = runtime::decode_bundle(payload);
  std::cout << "sections (" << sections.size() << "):\n";
  for (const runtime::BundleSection& s : sections) {
    std::vector<const jit::LibraryImage*> libraries;
    std::set<const jit::LibraryImage*> seen;
    for (const jit::KernelRecord& k : s.kernels)
      if (seen.insert(k.library.get()).second) libraries.push_back(k.library.get());
    std::cout << "  " << s.device << ": " << s.plans.size() << " plans, " << s.kernels.size()
              << " kernels, " << libraries.size()
              << (libraries.size() == 1 ? " library, " : " libraries, ") << s.prepared.size()
              << (s.prepared.size() == 1 ? " prepared op\n" : " prepared ops\n");
    for (const jit::LibraryImage* l : libraries)
      std::cout << "    library " << l->name << ": " << l->fingerprint << " ("
                << whose_kernels(l->fingerprint) << ")\n";
    if (!s.prepared.empty()) std::cout << "    prepared ops:\n";
    print_prepared_ops(s.prepared, "      ");
    if (!s.held.empty()) {
      std::cout << "    held blocks (" << s.held.size() << " size classes, " << total_bytes(s.held)
                << " bytes; made ahead by a program that loads the bundle without a record of "
                   "its own):\n";
      print_size_classes(s.held, "      ");
    }
  }
}

}  // namespace

int info_command(const fs::path& root, const std::string& file, bool print_source) {
  const fs::path path = resolve(root, file);
  const cache::ReadResult r = cache::inspect_cache_file(path);
  if (!r)
    throw ToolError(kExitFailure,
                    "info: " + path.string() + " is not a usable cache file: " + rejection_text(r));
  if (print_source && r.kind != cache::FileKind::kCpuLibrary)
    throw ToolError(kExitUsage, "info: --source shows a library's source; " + path.string() +
                                    " is a " + cache::file_kind_name(r.kind) + " file");
  // Plans, bundles, prepared ops and entries are portable: under the plan fingerprint, not a
  // machine's.
  const bool plans = r.kind == cache::FileKind::kPlan || r.kind == cache::FileKind::kBundle ||
                     r.kind == cache::FileKind::kPreparedOps ||
                     r.kind == cache::FileKind::kPlanEntries ||
                     r.kind == cache::FileKind::kHeldBlocks;
  std::cout << "file:         " << path.string() << '\n'
            << "kind:         " << cache::file_kind_name(r.kind) << '\n'
            << "fingerprint:  " << r.fingerprint << " ("
            << (plans ? whose_plans(r.fingerprint) : whose_kernels(r.fingerprint)) << ")\n"
            << "payload:      " << r.payload.size() << " bytes, checksum ok\n";
  try {
    switch (r.kind) {
      case cache::FileKind::kPlan:
        print_plan(r.payload);
        break;
      case cache::FileKind::kCpuKernel:
        print_kernel(path, r.fingerprint, r.payload);
        break;
      case cache::FileKind::kCpuLibrary:
        print_library(r.payload, print_source);
        break;
      case cache::FileKind::kBundle:
        print_bundle(r.payload);
        break;
      case cache::FileKind::kPreparedOps:
        print_prepared_file(r.payload);
        break;
      case cache::FileKind::kPlanEntries:
        print_entries(r.payload);
        break;
      case cache::FileKind::kHeldBlocks:
        print_held_blocks(r.payload);
        break;
      default:
        std::cout << "contents:     of a kind this streamfuse does not know\n";
    }
  } catch (const std::exception& e) {
    std::cout.flush();
    throw ToolError(kExitFailure, "info: " + path.string() + ": " + e.what());
  }
  return kExitOk;
}

}  // namespace streamfuse::tools

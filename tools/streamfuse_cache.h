// streamfuse-cache: the command-line tool over the cache directory (cache/cache_dir.h). One
// function per command: each prints its report to stdout and returns the exit status, or throws
// ToolError with the status and the one line for stderr.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace streamfuse::tools {

// Exit statuses, as --help documents them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadFiles = 1;  // verify found bad files
inline constexpr int kExitUsage = 2;     // unknown command or option, missing argument, bad size
inline constexpr int kExitFailure = 3;   // a file cannot be read or written, a bad bundle

// A failure of the tool: main prints "streamfuse-cache: <what()>" to stderr and exits with code().
class ToolError : public std::runtime_error {
 public:
  ToolError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// `path` relative to `root` when it lies under it (as list prints it), else `path` itself.
std::string relative_name(const std::filesystem::path& root, const std::filesystem::path& path);

// The fingerprint kernels built here carry: jit::kernel_fingerprint at this CPU's ISA level.
std::string this_machine_fingerprint();

// The commands. `root` is the cache directory; none of them creates it except import.
int list_command(const std::filesystem::path& root);
int info_command(const std::filesystem::path& root, const std::string& file, bool print_source);
int verify_command(const std::filesystem::path& root, bool remove);
int prune_command(const std::filesystem::path& root, std::uint64_t max_bytes);
int export_command(const std::filesystem::path& root, const std::filesystem::path& bundle);
// native_code false: the bundle's kernels (shared objects, sources) are not written, only its
// plans and prepared ops.
int import_command(const std::filesystem::path& root, const std::filesystem::path& bundle,
                   bool native_code = true);
int clear_command(const std::filesystem::path& root);

}  // namespace streamfuse::tools

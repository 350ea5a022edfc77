// streamfuse-cache [--dir DIR] COMMAND [ARGS]: the command line, --help and the exit statuses.
#include <cctype>
#include <cstdint>
#include <iostream>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cache/cache_dir.h"
#include "core/environment.h"
#include "core/log.h"
#include "streamfuse/config.h"
#include "streamfuse/error.h"
#include "tools/streamfuse_cache.h"

namespace streamfuse::tools {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHelp = R"(usage: streamfuse-cache [--dir DIR] COMMAND [ARGS]

Inspects and maintains streamfuse's cache directory: plans and prepared ops (the library ops,
such as matmul primitives, a process prepares while it starts; both portable between machines)
and compiled CPU kernels (each usable only with the compiler, CPU level and streamfuse version it
was built with).

Commands:
  list                   one line per file, tab-separated: KIND, STATUS (ok, or why streamfuse
                         cannot use it), BYTES, LAST USED, PATH (relative to DIR); then a line
                         "total: N files, B bytes"
  info FILE [--source]   a file's header and decoded contents: a plan's ops, triggers and
                         optimization; a kernel's program, key, symbol and library; a library's
                         sizes (--source prints its C++ source); prepared ops, one a line with
                         their inputs' strides; held blocks (a program's working set, made
                         while its next run starts), one size class a line; a bundle's
                         sections. FILE is a path, or a path relative to DIR as list prints it
  verify [--remove]      checks every file as streamfuse reads it (header, checksum, payload,
                         location, a kernel's library) and prints each bad one with the reason;
                         --remove deletes them (streamfuse builds them again when needed)
  prune --max-size SIZE  removes the least recently used files until at most SIZE bytes remain;
                         SIZE is bytes, or a number with a K, M or G suffix (512M)
  export FILE            writes every good plan, kernel and prepared-ops file of DIR to the
                         bundle FILE (which streamfuse::plans::load_bundle also reads). Held
                         blocks stay: DIR keeps them per program, and a bundle carries one
                         program's (streamfuse::plans::save_bundle writes the saving process's)
  import FILE [--no-native-code]
                         writes the plans of the bundle FILE into DIR, and its kernels that were
                         built for this machine (the others are counted as skipped); its prepared
                         ops go first in prepared/<device>.ops, before those the file held.
                         Its held blocks are not written (they are for load_bundle, in the
                         program that loads it; DIR keeps them per program).
                         A bundle's kernels are shared objects, code that streamfuse runs: with
                         --no-native-code none of them (nor their sources) is written, and
                         streamfuse compiles them here from their programs when a program needs
                         them. Use it for a bundle you would not trust as a program
  clear                  removes the plans/, kernels/ and prepared/ folders and the claims file
                         of DIR

Options:
  --dir DIR    the cache directory; default: $STREAMFUSE_CACHE_DIR, else
               $XDG_CACHE_HOME/streamfuse, else ~/.cache/streamfuse (here: %DIR%)
  -h, --help   this text

DIR must exist, except for import, which creates it (as streamfuse does when it first persists
something) so that a bundle can fill the cache of a machine that has not run streamfuse yet; info
needs DIR only for a FILE that is not found as given.

list, info, verify, prune, export and import are safe while streamfuse processes use DIR (their
writes are atomic; a file removed is rebuilt when needed). Run clear when none does: a process
writing at that moment stops persisting (with one warning) until it restarts.

Exit status:
  0  success
  1  verify found bad files (also after removing them with --remove)
  2  usage error: unknown command or option, missing or extra argument, bad SIZE
  3  operational error: DIR does not exist (see above), a file or folder cannot be read or
     written, FILE is not a usable cache file or bundle
Every failure prints one line to stderr that starts with "streamfuse-cache: ".
)";

constexpr std::string_view kCommands = "list, info, verify, prune, export, import, clear";

[[noreturn]] void usage_error(const std::string& what) {
  throw ToolError(kExitUsage, what + " (streamfuse-cache --help lists commands and options)");
}

struct Args {
  bool help = false;
  std::optional<std::string> dir;
  std::string command;
  std::vector<std::string> operands;
  bool remove = false;
  bool source = false;
  bool no_native_code = false;
  std::optional<std::string> max_size;
};

Args parse(int argc, char** argv) {
  Args args;
  const std::vector<std::string_view> in(argv + 1, argv + argc);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::string_view arg = in[i];
    // "--name VALUE" or "--name=VALUE".
    auto value = [&](std::string_view name) -> std::optional<std::string> {
      if (arg.starts_with(name) && arg.size() > name.size() && arg[name.size()] == '=')
        return std::string(arg.substr(name.size() + 1));
      if (arg != name) return std::nullopt;
      if (i + 1 == in.size()) usage_error(std::string(name) + " needs a value");
      return std::string(in[++i]);
    };
    if (arg == "-h" || arg == "--help") {
      args.help = true;
    } else if (auto dir = value("--dir")) {
      if (dir->empty()) usage_error("--dir needs a directory");
      args.dir = std::move(dir);
    } else if (auto size = value("--max-size")) {
      args.max_size = std::move(size);
    } else if (arg == "--remove") {
      args.remove = true;
    } else if (arg == "--source") {
      args.source = true;
    } else if (arg == "--no-native-code") {
      args.no_native_code = true;
    } else if (arg.size() > 1 && arg.front() == '-') {
      usage_error("unknown option '" + std::string(arg) + "'");
    } else if (args.command.empty()) {
      args.command = arg;
    } else {
      args.operands.emplace_back(arg);
    }
  }
  return args;
}

// "4096", "64K", "512M", "2G" (also "512MB", "512MiB"; powers of 1024).
std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (value > (UINT64_MAX - 9) / 10) return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  if (i == 0) return std::nullopt;
  std::string suffix(text.substr(i));
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (!suffix.empty() && (suffix[0] == 'K' || suffix[0] == 'M' || suffix[0] == 'G')) {
    shift = suffix[0] == 'K' ? 10 : suffix[0] == 'M' ? 20 : 30;
    suffix.erase(0, 1);
    if (suffix == "IB" || suffix == "B") suffix.clear();
  } else if (suffix == "B") {
    suffix.clear();
  }
  if (!suffix.empty() || (shift && value > (UINT64_MAX >> shift))) return std::nullopt;
  return value << shift;
}

// The directory the library would use (cache_directory of the environment's Config). Only
// STREAMFUSE_CACHE_DIR matters here, so another STREAMFUSE_* variable that does not parse is no
// reason to fail.
fs::path default_directory() {
  Config config;
  try {
    config = Config::from_env();
  } catch (const Error&) {
    if (auto dir = core::env_text("STREAMFUSE_CACHE_DIR")) config.cache_dir = std::move(*dir);
  }
  return cache::cache_directory(config);
}

void print_help() {
  std::string help(kHelp);
  const std::size_t at = help.find("%DIR%");
  help.replace(at, 5, default_directory().string());
  std::cout << help;
}

// Checks the arguments of `args.command` and runs it.
int run(const Args& args) {
  const std::string& c = args.command;
  if (c.empty()) usage_error("no command given; one of " + std::string(kCommands));
  if (c != "list" && c != "info" && c != "verify" && c != "prune" && c != "export" &&
      c != "import" && c != "clear")
    usage_error("unknown command '" + c + "'; commands: " + std::string(kCommands));
  const bool takes_file = c == "info" || c == "export" || c == "import";
  if (takes_file && args.operands.empty()) usage_error(c + " needs a FILE");
  if (args.operands.size() > (takes_file ? 1u : 0u))
    usage_error(c + ": unexpected argument '" + args.operands.back() + "'");
  if (args.remove && c != "verify") usage_error("--remove is an option of verify, not of " + c);
  if (args.source && c != "info") usage_error("--source is an option of info, not of " + c);
  if (args.no_native_code && c != "import")
    usage_error("--no-native-code is an option of import, not of " + c);
  if (args.max_size && c != "prune") usage_error("--max-size is an option of prune, not of " + c);
  if (c == "prune" && !args.max_size) usage_error("prune needs --max-size SIZE");
  std::optional<std::uint64_t> max_bytes;
  if (args.max_size && !(max_bytes = parse_size(*args.max_size)))
    usage_error("--max-size: '" + *args.max_size + "' is not a size (bytes, or 64K, 512M, 2G)");

  const fs::path root = args.dir ? fs::path(*args.dir) : default_directory();
  std::error_code ec;
  const fs::file_status status = fs::status(root, ec);
  if (fs::exists(status) && !fs::is_directory(status))
    throw ToolError(kExitFailure, root.string() +
                                      " is not a directory (give the cache directory "
                                      "with --dir)");
  // A missing DIR is most likely a mistyped --dir: reporting it as an empty cache ("total: 0
  // files") would hide that. import makes DIR; info reads it only for a FILE not found as given.
  if (!fs::exists(status) && c != "import" && c != "info")
    throw ToolError(
        kExitFailure,
        root.string() + ": " +
            (status.type() == fs::file_type::not_found ? "no such directory"
                                                       : "cannot be read: " + ec.message()) +
            " (give the cache directory with --dir; streamfuse creates it when it "
            "first persists a plan or kernel)");
  const std::string file = takes_file ? args.operands.front() : std::string();
  if (c == "list") return list_command(root);
  if (c == "info") return info_command(root, file, args.source);
  if (c == "verify") return verify_command(root, args.remove);
  if (c == "prune") return prune_command(root, *max_bytes);
  if (c == "export") return export_command(root, file);
  if (c == "import") return import_command(root, file, !args.no_native_code);
  return clear_command(root);
}

// Everything the tool prints goes through stream::printable, a line at a time: names, paths,
// fingerprints and decoders' complaints come from files, and a corrupt one must not put raw
// bytes (invalid UTF-8, terminal controls) on the terminal. Installed on std::cout and std::cerr
// for the life of main, so that no command can print around it.
class PrintableLines final : public std::streambuf {
 public:
  explicit PrintableLines(std::ostream& stream) : stream_(stream), out_(stream.rdbuf()) {
    stream_.rdbuf(this);
  }
  ~PrintableLines() override {
    sync();
    stream_.rdbuf(out_);
  }
  PrintableLines(const PrintableLines&) = delete;
  PrintableLines& operator=(const PrintableLines&) = delete;

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  // Whole lines pass at once, so that a character's UTF-8 bytes are never split between calls.
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    pending_.append(s, static_cast<std::size_t>(n));
    const std::size_t end = pending_.rfind('\n');
    if (end != std::string::npos) {
      if (!put(std::string_view(pending_).substr(0, end + 1))) return 0;
      pending_.erase(0, end + 1);
    }
    return n;
  }
  int sync() override {
    const bool ok = put(pending_);
    pending_.clear();
    return ok && out_->pubsync() == 0 ? 0 : -1;
  }

 private:
  bool put(std::string_view text) {
    const std::string shown = streamfuse::core::printable(text);
    const auto size = static_cast<std::streamsize>(shown.size());
    return out_->sputn(shown.data(), size) == size;
  }

  std::ostream& stream_;
  std::streambuf* out_;
  std::string pending_;  // the line being written
};

}  // namespace
}  // namespace streamfuse::tools

int main(int argc, char** argv) {
  using namespace streamfuse::tools;
  const PrintableLines out(std::cout), err(std::cerr);
  try {
    const Args args = parse(argc, argv);
    if (args.help) {
      print_help();
      return kExitOk;
    }
    return run(args);
  } catch (const ToolError& e) {
    std::cout.flush();
    std::cerr << "streamfuse-cache: " << e.what() << '\n';
    return e.code();
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "streamfuse-cache: " << e.what() << '\n';
    return kExitFailure;
  }
}

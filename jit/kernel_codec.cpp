#include "jit/kernel_codec.h"

#include "core/hash_mix.h"
#include "jit/program_check.h"
#include "jit/program_codec.h"

namespace streamfuse::jit {
std::uint64_t kernel_hash(std::uint64_t program_hash, const jit::SpecializationKey& key,
                          std::string_view fingerprint) {
  return core::hash_mix(core::hash_mix(program_hash, key.hash()), core::fnv1a(fingerprint));
}

bool valid_library_name(std::string_view name) {
  if (name.size() != 16) return false;
  for (char c : name)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void put_kernel_entry(cache::OutArchive& out, const KernelEntry& entry) {
  out(entry.program_hash);
  put_program(out, entry.program);
  put_key(out, entry.key);
  cache::put_bytes(out, entry.symbol);
  cache::put_bytes(out, entry.library);
}

namespace {

// A program and its key, as a kernel record and a handed-on request hold them.
void get_program_and_key(cache::InArchive& in, jit::FusedProgram& program,
                         jit::SpecializationKey& key) {
  program = get_program(in);
  key = get_key(in);
  // A key launch_key() could have made for the program: the code generators rely on it.
  if (std::string why = jit::key_fit_problem(program, key); !why.empty())
    cache::bad_payload("kernel key does not fit its program: " + why);
}

}  // namespace

KernelEntry get_kernel_entry(cache::InArchive& in) {
  KernelEntry e;
  in(e.program_hash);
  get_program_and_key(in, e.program, e.key);
  e.symbol = cache::get_bytes(in, 256);
  e.library = cache::get_bytes(in, 256);
  if (!valid_library_name(e.library)) cache::bad_payload("library name");
  if (e.program_hash != e.program.hash()) cache::bad_payload("program hash");
  return e;
}

std::string encode_kernel_entry(const KernelEntry& entry) {
  return cache::encode_with([&](cache::OutArchive& out) { put_kernel_entry(out, entry); });
}

KernelEntry decode_kernel_entry(std::string_view bytes) {
  return cache::decode_with(bytes, [](cache::InArchive& in) { return get_kernel_entry(in); });
}

std::string encode_kernel_requests(std::span<const jit::KernelRequest> requests) {
  return cache::encode_with([&](cache::OutArchive& out) {
    out(static_cast<std::uint32_t>(requests.size()));
    for (const jit::KernelRequest& r : requests) {
      out(r.program_hash);
      put_program(out, r.program);
      put_key(out, r.key);
    }
  });
}

std::vector<jit::KernelRequest> decode_kernel_requests(std::string_view bytes) {
  return cache::decode_with(bytes, [](cache::InArchive& in) {
    // One by one: a count that lies about a short payload fails before it allocates.
    std::vector<jit::KernelRequest> requests;
    for (std::uint32_t n = cache::get_size(in, cache::kMaxOps, "handed-on kernel"); n > 0; --n) {
      jit::KernelRequest& r = requests.emplace_back();
      in(r.program_hash);
      get_program_and_key(in, r.program, r.key);
      if (r.program_hash != r.program.hash()) cache::bad_payload("program hash");
    }
    return requests;
  });
}

void put_library(cache::OutArchive& out, const jit::LibraryImage& library) {
  cache::put_bytes(out, library.name);
  cache::put_bytes(out, library.source);
  cache::put_bytes(out, library.bytes);
}

jit::LibraryImage get_library(cache::InArchive& in) {
  jit::LibraryImage l;
  l.name = cache::get_bytes(in, 256);
  if (!valid_library_name(l.name)) cache::bad_payload("library name");
  l.source = cache::get_bytes(in);
  l.bytes = cache::get_bytes(in);
  return l;
}

std::string encode_library(const jit::LibraryImage& library) {
  return cache::encode_with([&](cache::OutArchive& out) { put_library(out, library); });
}

jit::LibraryImage decode_library(std::string_view bytes) {
  return cache::decode_with(bytes, [](cache::InArchive& in) { return get_library(in); });
}

}  // namespace streamfuse::jit

#include "cache/kernel_codec.h"

#include "cache/serialize.h"
#include "jit/hash_mix.h"

namespace streamfuse::cache {
std::uint64_t kernel_hash(std::uint64_t program_hash, const jit::SpecializationKey& key,
                          std::string_view fingerprint) {
  return jit::hash_mix(jit::hash_mix(program_hash, key.hash()), jit::fnv1a(fingerprint));
}

bool valid_library_name(std::string_view name) {
  if (name.size() != 16) return false;
  for (char c : name)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void put_kernel_entry(OutArchive& out, const KernelEntry& entry) {
  out(entry.program_hash);
  put_program(out, entry.program);
  put_key(out, entry.key);
  put_bytes(out, entry.symbol);
  put_bytes(out, entry.library);
}

KernelEntry get_kernel_entry(InArchive& in) {
  KernelEntry e;
  in(e.program_hash);
  e.program = get_program(in);
  e.key = get_key(in);
  if (e.key.inputs.size() != e.program.inputs.size() ||
      e.key.outputs.size() != e.program.outputs.size())
    bad_payload("kernel key does not fit its program");
  e.symbol = get_bytes(in, 256);
  e.library = get_bytes(in, 256);
  if (!valid_library_name(e.library)) bad_payload("library name");
  if (e.program_hash != e.program.hash()) bad_payload("program hash");
  return e;
}

std::string encode_kernel_entry(const KernelEntry& entry) {
  return encode_with([&](OutArchive& out) { put_kernel_entry(out, entry); });
}

KernelEntry decode_kernel_entry(std::string_view bytes) {
  return decode_with(bytes, [](InArchive& in) { return get_kernel_entry(in); });
}

void put_library(OutArchive& out, const jit::LibraryImage& library) {
  put_bytes(out, library.name);
  put_bytes(out, library.source);
  put_bytes(out, library.bytes);
}

jit::LibraryImage get_library(InArchive& in) {
  jit::LibraryImage l;
  l.name = get_bytes(in, 256);
  if (!valid_library_name(l.name)) bad_payload("library name");
  l.source = get_bytes(in);
  l.bytes = get_bytes(in);
  return l;
}

std::string encode_library(const jit::LibraryImage& library) {
  return encode_with([&](OutArchive& out) { put_library(out, library); });
}

jit::LibraryImage decode_library(std::string_view bytes) {
  return decode_with(bytes, [](InArchive& in) { return get_library(in); });
}

}  // namespace streamfuse::cache

// Kernel files: a compiled kernel's record (what it computes, under which key, its symbol and
// library) and library images (source and shared object), as bytes and back.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/archive.h"
#include "jit/kernel_store.h"

namespace streamfuse::jit {

// A kernel record as stored: its library by name (libraries are stored once for all their
// kernels).
struct KernelEntry {
  std::uint64_t program_hash = 0;
  jit::FusedProgram program;
  jit::SpecializationKey key;
  std::string symbol;
  std::string library;  // LibraryImage::name
};

// The stable name of a kernel's file: its program, key and the fingerprint it was built under.
std::uint64_t kernel_hash(std::uint64_t program_hash, const jit::SpecializationKey& key,
                          std::string_view fingerprint);

void put_kernel_entry(cache::OutArchive& out, const KernelEntry& entry);
KernelEntry get_kernel_entry(cache::InArchive& in);
std::string encode_kernel_entry(const KernelEntry& entry);
KernelEntry decode_kernel_entry(std::string_view bytes);  // throws FormatError

// A library's name, source and bytes (its fingerprint is the file's, or a bundle's entry's).
void put_library(cache::OutArchive& out, const jit::LibraryImage& library);
jit::LibraryImage get_library(cache::InArchive& in);
std::string encode_library(const jit::LibraryImage& library);
jit::LibraryImage decode_library(std::string_view bytes);  // throws FormatError

// Kernels a process handed on at exit (KernelStore::hand_on): their programs and keys, checked as
// kernel records are (the key fits its program, the hash is the program's).
std::string encode_kernel_requests(std::span<const jit::KernelRequest> requests);
std::vector<jit::KernelRequest> decode_kernel_requests(std::string_view bytes);  // FormatError

// A library name is 16 hex digits (it becomes a file name).
bool valid_library_name(std::string_view name);

}  // namespace streamfuse::jit

// What every fuzz target of the cache decoders defines, and what both of its drivers call: the
// libFuzzer binaries of the fuzz preset, and the short deterministic run CTest starts in every
// build (standalone_driver.cpp).
//
// A target decodes its input; bytes that do not decode must throw FormatError, and what decodes
// must then be as safe to use as what the library builds: the target uses it as the library
// would next (re-encodes it, runs it, generates its kernel source, prints it) and aborts through
// fail() on anything a built object would not do. Any other exception escapes and fails the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace streamfuse::fuzz {

// The target's seed inputs: encodings, by the library's own encoders, of what it makes now.
std::vector<std::string> seeds();

// Before seeds() and the first input: keeps the process's runtime off the user's cache directory
// (STREAMFUSE_CACHE_DIR, unless set) and off the compiler (STREAMFUSE_JIT=interpret).
void set_up_process();

// Prints `what` and aborts.
[[noreturn]] void fail(const std::string& what);

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

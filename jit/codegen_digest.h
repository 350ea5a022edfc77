// The digest of the sources that write kernel code (jit/CMakeLists.txt lists them): 16 hex
// digits, part of every kernel fingerprint, so that kernels written by other generators are not
// found by their program and key.
#pragma once

namespace streamfuse::jit {

const char* codegen_digest();

}  // namespace streamfuse::jit

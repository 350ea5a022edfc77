// Tensors on disk in the safetensors format, the one models are shipped in: an 8-byte header
// length, a JSON header naming each tensor's dtype, shape and byte range, then the bytes.
#pragma once

#include <map>
#include <string>

#include "streamfuse/device.h"
#include "streamfuse/tensor.h"

namespace streamfuse {

// Every tensor of the safetensors file at `path`, by name. On the CPU the tensors read the
// file's memory map in place, without a copy (from_blob's zero-copy form: the mapping stays
// until the last tensor reading it is gone, and nothing writes it); a tensor whose bytes are not
// aligned to its element size in the file is copied. The whole file is mapped before this
// returns (one call, which reads it from disk if it is not cached), so that a model's first
// forward pass does not take the page faults; a file larger than half of memory is mapped as it
// is read instead. On another device each tensor is copied there. Throws Error naming the file
// and what is wrong when it cannot be read, is not a safetensors file, is truncated, or lies
// (byte ranges past the end, overlapping or leaving bytes unaccounted for, sizes that are not the
// shapes', a name twice), or holds a dtype streamfuse does not have (F32, F16, BF16, F64, I32,
// I64, I8, U8 and BOOL are supported).
std::map<std::string, Tensor> load_safetensors(const std::string& path,
                                               Device device = Device::cpu());

// The "__metadata__" of the safetensors file at `path` (free-form strings), empty when it has
// none; the same errors as load_safetensors.
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);

// Writes `tensors` (any device, layout or dtype streamfuse has) and `metadata` to `path` as a
// safetensors file, wider elements first, then in name order, so that every tensor's bytes are
// aligned to its element size (load_safetensors then copies none). The file is replaced whole or
// not at all (written beside it, then renamed). A sync point of every tensor. Throws Error naming
// the path when it cannot be written, and for names that are empty or not UTF-8.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace streamfuse

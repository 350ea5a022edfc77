// load_safetensors / save_safetensors: files mapped and checked (api/safetensors_format.h), their
// tensors borrowed from the mapping; tensors written through an atomic file.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/api_call.h"
#include "api/safetensors_format.h"
#include "cache/cache_file.h"
#include "runtime/runtime.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"
#include "streamfuse/safetensors.h"

namespace streamfuse {
namespace {

using api::api_call;

// A whole file mapped read-only; unmapped when the last tensor borrowing it goes.
class MappedFile {
 public:
  MappedFile(void* data, std::size_t size) : data_(data), size_(size) {}
  ~MappedFile() {
    if (size_ > 0) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_;
  std::size_t size_;
};

// `populate`: map every page now (the tensors will be read), else only as they are touched.
std::shared_ptr<const MappedFile> map_file(const std::string& path, bool populate) {
  // O_NONBLOCK: a FIFO where a file is expected must not block the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error("cannot read " + path + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + " is not a file");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw Error("cannot map " + path + ": " + std::strerror(err));
    }
  }
  ::close(fd);  // the mapping keeps the file
#ifdef MADV_POPULATE_READ
  // Maps every page now, in one call (Linux 5.14; older kernels refuse it and pages fault in as
  // before). The tensors borrow the mapping, so otherwise the first forward pass takes a fault
  // per 64 KiB of weights: GPT-2's 498 MB took 56-79 ms that way and 38-40 ms in this call,
  // which moves that time from the model's first token into the load.
  // Not a file that would push much of memory out to fit: there the pages come as they are read.
  const std::size_t memory = static_cast<std::size_t>(::sysconf(_SC_PHYS_PAGES)) *
                             static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  // In pieces: each call holds the process's memory-map lock, and a preparer thread making
  // oneDNN's kernels (which maps their code) would otherwise wait for the whole file.
  if (populate && size > 0 && size <= memory / 2) {
    constexpr std::size_t kPiece = std::size_t{2} << 20;
    for (std::size_t at = 0; at < size; at += kPiece)
      ::madvise(static_cast<char*>(data) + at, std::min(kPiece, size - at), MADV_POPULATE_READ);
  }
#else
  (void)populate;
#endif
  return std::make_shared<const MappedFile>(data, size);
}

api::SafetensorsHeader read_header(const std::string& path, const MappedFile& file) {
  try {
    return api::read_safetensors_header(file.bytes());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace

std::map<std::string, Tensor> load_safetensors(const std::string& path, Device device) {
  return api_call("load_safetensors", [&] {
    // The devices' preparers (oneDNN primitives the cache directory remembers, the GEMM driver's
    // kernels) work while the file is read, not during the model's first forward pass.
    runtime::start(Device::cpu());
    if (device != Device::cpu()) runtime::start(device);
    const std::shared_ptr<const MappedFile> file = map_file(path, true);
    const api::SafetensorsHeader header = read_header(path, *file);
    std::map<std::string, Tensor> out;
    for (const api::SafetensorsEntry& e : header.tensors) {
      const char* data = file->bytes().data() + header.data_start + e.begin;
      const bool aligned = reinterpret_cast<std::uintptr_t>(data) % element_size(e.dtype) == 0;
      Tensor t = aligned ? from_blob(data, e.dtype, e.shape, file)
                         : from_blob(static_cast<const void*>(data), e.dtype, e.shape);
      out.emplace(e.name, device == Device::cpu() ? std::move(t) : t.to(device));
    }
    return out;
  });
}

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  return api_call("load_safetensors_metadata", [&] {
    const std::shared_ptr<const MappedFile> file = map_file(path, false);  // the header only
    return read_header(path, *file).metadata;
  });
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  api_call("save_safetensors", [&] {
    // Wider elements first, then by name: each tensor starts aligned to its element size (the
    // data starts 8-byte aligned and every size before it is a multiple of that element size),
    // so loading borrows every one of them from the mapping.
    std::vector<std::pair<const std::string*, const Tensor*>> order;
    for (const auto& [name, t] : tensors) {
      if (name.empty()) throw Error("save_safetensors: a tensor has an empty name");
      if (name == "__metadata__")
        throw Error("save_safetensors: '__metadata__' is the format's own key, not a name");
      if (!t.defined()) throw Error("save_safetensors: tensor '" + name + "' is undefined");
      order.emplace_back(&name, &t);
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return element_size(a.second->dtype()) > element_size(b.second->dtype());
    });
    std::vector<api::SafetensorsEntry> entries;
    std::uint64_t offset = 0;
    for (const auto& [name, t] : order) {
      const std::uint64_t bytes = static_cast<std::uint64_t>(t->numel()) * element_size(t->dtype());
      entries.push_back({*name, t->dtype(), t->shape(), offset, offset + bytes});
      offset += bytes;
    }
    std::string header;
    try {
      header = api::write_safetensors_header(entries, metadata);
    } catch (const std::exception& e) {  // the JSON library: a name or value that is not UTF-8
      throw Error(std::string("save_safetensors: ") + e.what());
    }
    try {
      cache::AtomicFileWriter file(path);
      file.append(header);
      std::vector<char> buffer;
      for (const auto& [name, t] : order) {
        buffer.resize(static_cast<std::size_t>(t->numel()) * element_size(t->dtype()));
        if (!buffer.empty()) runtime::to_host(*t->node(), buffer.data(), "save_safetensors");
        file.append({buffer.data(), buffer.size()});
      }
      file.commit();
    } catch (const cache::WriteError& e) {
      throw Error(std::string("save_safetensors: ") + e.what());
    }
  });
}

}  // namespace streamfuse

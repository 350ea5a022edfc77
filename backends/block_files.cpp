#include "backends/block_files.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "backends/caching_allocator.h"
#include "cache/archive.h"
#include "cache/cache_log.h"
#include "core/hash_mix.h"
#include "core/log.h"

namespace streamfuse::backends {

void put_held_blocks(cache::OutArchive& out, const std::vector<HeldBlocks>& blocks) {
  out(static_cast<std::uint32_t>(blocks.size()));
  for (const HeldBlocks& b : blocks) out(b.capacity, b.blocks);
}

std::vector<HeldBlocks> get_held_blocks(cache::InArchive& in) {
  const std::uint32_t n =
      cache::get_size(in, static_cast<std::uint32_t>(kMaxHeldClasses), "size class");
  std::vector<HeldBlocks> blocks(n);
  for (HeldBlocks& b : blocks) {
    in(b.capacity, b.blocks);
    // A capacity the allocator would hand out (and make: at most a TiB), a count it keeps.
    if (b.capacity == 0 || b.capacity > (std::uint64_t{1} << 40) ||
        CachingAllocator::size_class(static_cast<std::size_t>(b.capacity)) != b.capacity)
      cache::bad_payload("held block size " + std::to_string(b.capacity));
    if (b.blocks == 0 || b.blocks > kMaxHeldBlocks)
      cache::bad_payload("held block count " + std::to_string(b.blocks));
  }
  return blocks;
}

std::string encode_held_blocks(const std::vector<HeldBlocks>& blocks) {
  return cache::encode_with([&](cache::OutArchive& out) { put_held_blocks(out, blocks); });
}

std::vector<HeldBlocks> decode_held_blocks(std::string_view bytes) {
  return cache::decode_with(bytes, [](cache::InArchive& in) { return get_held_blocks(in); });
}

std::string program_key() {
  std::string id;
  std::error_code ec;
  id = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  id.push_back('\0');
  id.append(std::istreambuf_iterator<char>(cmdline), std::istreambuf_iterator<char>());
  return core::hex16(core::fnv1a(id));
}

BlockFiles::BlockFiles(std::shared_ptr<cache::CacheDir> dir, std::string device,
                       std::string program)
    : dir_(std::move(dir)), device_(std::move(device)), program_(std::move(program)) {}

std::filesystem::path BlockFiles::path() const {
  return cache::held_blocks_path(dir_->root(), device_, program_);
}

std::vector<HeldBlocks> BlockFiles::load() {
  std::vector<HeldBlocks> blocks =
      dir_->read_portable(path(), cache::FileKind::kHeldBlocks, decode_held_blocks);
  {
    std::lock_guard lock(mutex_);
    loaded_ = blocks;
  }
  if (cache::cache_logging())
    cache::cache_log(blocks.empty() ? "miss: no held blocks for " + device_ + " of this program"
                                    : "hit: " + std::to_string(blocks.size()) +
                                          " size class(es) of held blocks for " + device_);
  return blocks;
}

std::vector<HeldBlocks> BlockFiles::highs() const {
  std::lock_guard lock(mutex_);
  return mine_;
}

void BlockFiles::note(std::uint64_t capacity, std::uint32_t blocks) {
  blocks = std::min(blocks, kMaxHeldBlocks);
  {
    std::lock_guard lock(mutex_);
    const auto it = std::find_if(mine_.begin(), mine_.end(),
                                 [&](const HeldBlocks& b) { return b.capacity == capacity; });
    if (it != mine_.end()) {
      if (it->blocks >= blocks) return;
      it->blocks = blocks;
    } else {
      if (mine_.size() >= kMaxHeldClasses) return;
      mine_.push_back({capacity, blocks});
    }
    dirty_ = true;
  }
  if (!dir_->writable()) return;
  writer_.submit(0, [this] { write(); });  // one job writes every high noted until it runs
}

void BlockFiles::write() {
  std::vector<HeldBlocks> blocks;
  {
    std::lock_guard lock(mutex_);
    if (!dirty_) return;
    blocks = mine_;
    dirty_ = false;
    if (blocks == loaded_) return;  // the same program, the same working set
  }
  try {
    if (dir_->write(path(), cache::FileKind::kHeldBlocks, cache::portable_fingerprint(),
                    encode_held_blocks(blocks)) &&
        cache::cache_logging())
      cache::cache_log("wrote " + std::to_string(blocks.size()) +
                       " size class(es) of held blocks for " + device_);
  } catch (const cache::FormatError& e) {
    core::warn_once("cache-encode", std::string("cache: held blocks not persisted: ") + e.what());
  }
}

}  // namespace streamfuse::backends

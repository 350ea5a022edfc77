#include "stream/tensor_node.h"

#include <vector>

#include "core/log.h"
#include "core/thread_local.h"
#include "stream/cross_stream.h"
#include "stream/device_streams.h"
#include "stream/stream.h"

namespace streamfuse::stream {
namespace {

// Per-thread pool of free nodes, bounded. A node freed on another thread than the one that
// made it simply joins that thread's pool. After the pool's destructor ran (thread exit),
// nodes go straight to delete.
constexpr std::size_t kPoolLimit = 4096;
SF_THREAD_LOCAL bool t_pool_gone = false;
struct NodePool {
  std::vector<TensorNode*> free;
  ~NodePool() {
    t_pool_gone = true;
    for (TensorNode* n : free) delete n;
  }
};
SF_THREAD_LOCAL NodePool t_pool;

void free_node(TensorNode* n) {
  if (!t_pool_gone && t_pool.free.size() < kPoolLimit) {
    t_pool.free.push_back(n);
    return;
  }
  delete n;
}

}  // namespace

TensorNode* new_node(DeviceStreams& streams, Stream* home, std::uint64_t uses_through,
                     core::TensorId id, const Shape& shape, DType dtype) {
  TensorNode* n;
  if (!t_pool_gone && !t_pool.free.empty()) {
    n = t_pool.free.back();
    t_pool.free.pop_back();
    n->refs.store(1, std::memory_order_relaxed);
    n->consumed = false;
  } else {
    n = new TensorNode;
  }
  n->dtype = dtype;
  n->device = streams.device().device;
  n->id = id;
  n->shape = shape;
  n->streams = &streams;
  n->home = home;
  n->home_uses_through.store(uses_through, std::memory_order_relaxed);
  return n;
}

void release(TensorNode* n) noexcept {
  if (n->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (!n->consumed) {
    try {
      record_drop(n);
    } catch (const std::exception& e) {
      // Out of memory while queueing a Drop: the value leaks rather than the process dying.
      core::warn_once("drop-failed", std::string("could not record a tensor's drop: ") + e.what());
    }
  }
  free_node(n);
}

}  // namespace streamfuse::stream

#include "fusion/builders/registry.h"

#include <mutex>
#include <string>

#include "fusion/builders/elementwise/builder.h"
#include "fusion/builders/elementwise/codec.h"
#include "fusion/builders/matmul/builder.h"
#include "fusion/builders/matmul/codec.h"
#include "fusion/builders/product_chain/builder.h"
#include "fusion/builders/product_chain/codec.h"
#include "fusion/builders/reduce/builder.h"
#include "fusion/builders/reduce/codec.h"
#include "streamfuse/error.h"

namespace streamfuse::fusion {
namespace {

template <class Builder>
std::unique_ptr<OptimizationBuilder> make() {
  return std::make_unique<Builder>();
}

// The kinds built in. A new kind adds its line here.
std::vector<OptimizationKind> built_in() {
  return {
      {"elementwise", &make<ElementwiseBuilder>, &kElementwiseCodec},
      {"reduce", &make<ReduceBuilder>, &kReduceCodec},
      {"matmul", &make<MatmulBuilder>, &kMatmulCodec,
       [](const backends::Backend& b) { return b.fuses_product_epilogues(); }},
      {"product_chain", &make<ProductChainBuilder>, &kProductChainCodec,
       [](const backends::Backend& b) { return b.chains_products(); }},
  };
}

struct Registry {
  std::mutex mutex;
  std::vector<OptimizationKind> kinds = built_in();
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: streams may outlive static destructors
  return *r;
}

}  // namespace

void add_optimization_kind(const OptimizationKind& kind) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const OptimizationKind& k : r.kinds)
    if (k.name == kind.name)
      throw Error("optimization kind \"" + std::string(kind.name) + "\" is registered already");
  r.kinds.push_back(kind);
}

std::vector<std::unique_ptr<OptimizationBuilder>> make_builders(const backends::Backend& backend) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::unique_ptr<OptimizationBuilder>> builders;
  for (const OptimizationKind& k : r.kinds)
    if (!k.applies || k.applies(backend)) builders.push_back(k.make_builder());
  return builders;
}

const OptimizationCodec* codec_named(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const OptimizationKind& k : r.kinds)
    if (k.name == name) return k.codec;
  return nullptr;
}

}  // namespace streamfuse::fusion

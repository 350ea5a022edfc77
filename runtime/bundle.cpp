#include "runtime/bundle.h"

#include <memory>
#include <string>

#include <boost/unordered/unordered_flat_map.hpp>

#include "backends/prepared_op_codec.h"
#include "cache/archive.h"
#include "cache/cache_file.h"
#include "fusion/plan_codec.h"
#include "jit/kernel_codec.h"

namespace streamfuse::runtime {

std::string encode_bundle(const std::vector<BundleSection>& sections,
                          std::vector<std::size_t>* plans_written) {
  return cache::encode_with([&](cache::OutArchive& out) {
    out(static_cast<std::uint32_t>(sections.size()));
    for (const BundleSection& s : sections) {
      cache::put_bytes(out, s.device);
      std::vector<const fusion::ExecutionPlan*> plans;
      for (const fusion::PlanRef& p : s.plans)
        if (fusion::persistable(*p)) plans.push_back(p.get());
      if (plans_written) plans_written->push_back(plans.size());
      out(static_cast<std::uint32_t>(plans.size()));
      for (const fusion::ExecutionPlan* p : plans) fusion::put_plan(out, *p);
      // Each library once (by name: two loads of one library are one library), then the
      // kernels by library index.
      std::vector<const jit::LibraryImage*> libraries;
      boost::unordered_flat_map<std::string_view, std::uint32_t> index;
      for (const jit::KernelRecord& k : s.kernels)
        if (index.emplace(k.library->name, libraries.size()).second)
          libraries.push_back(k.library.get());
      out(static_cast<std::uint32_t>(libraries.size()));
      for (const jit::LibraryImage* l : libraries) {
        cache::put_bytes(out, l->fingerprint);
        jit::put_library(out, *l);
      }
      out(static_cast<std::uint32_t>(s.kernels.size()));
      for (const jit::KernelRecord& k : s.kernels) {
        out(index.at(k.library->name));
        jit::put_kernel_entry(
            out, jit::KernelEntry{k.program_hash, k.program, k.key, k.symbol, k.library->name});
      }
      backends::put_prepared_ops(out, s.prepared);
    }
    for (const BundleSection& s : sections) backends::put_held_blocks(out, s.held);
  });
}

std::vector<BundleSection> decode_bundle(std::string_view payload) {
  return cache::decode_with_more(payload, [](cache::InArchive& in, const auto& more) {
    std::vector<BundleSection> sections;
    for (std::uint32_t n = cache::get_size(in, 64, "device section"); n > 0; --n) {
      BundleSection& s = sections.emplace_back();
      s.device = cache::get_bytes(in, 64);
      for (std::uint32_t n = cache::get_size(in, cache::kMaxItems, "plan"); n > 0; --n)
        s.plans.push_back(fusion::make_plan(fusion::get_plan(in)));
      std::vector<std::shared_ptr<const jit::LibraryImage>> libraries;
      boost::unordered_flat_map<std::string, const jit::LibraryImage*> named;
      for (std::uint32_t n = cache::get_size(in, cache::kMaxItems, "library"); n > 0; --n) {
        std::string fingerprint = cache::get_bytes(in, 1 << 16);
        auto image = std::make_shared<jit::LibraryImage>(jit::get_library(in));
        image->fingerprint = std::move(fingerprint);
        // A name is a hash of the library's source and build, and the kernel cache loads a name
        // once: two different images of one name would run one's kernels from the other's code.
        // (Older writers listed one library once per load of it: equal copies are fine.)
        const auto [it, added] = named.try_emplace(image->name, image.get());
        if (!added && (it->second->fingerprint != image->fingerprint ||
                       it->second->source != image->source || it->second->bytes != image->bytes))
          cache::bad_payload("two libraries named " + image->name);
        libraries.push_back(std::move(image));
      }
      for (std::uint32_t n = cache::get_size(in, cache::kMaxItems, "kernel"); n > 0; --n) {
        std::uint32_t library = 0;
        in(library);
        if (library >= libraries.size()) cache::bad_payload("kernel library index");
        jit::KernelEntry e = jit::get_kernel_entry(in);
        if (e.library != libraries[library]->name) cache::bad_payload("kernel library name");
        s.kernels.push_back(jit::KernelRecord{e.program_hash, std::move(e.program),
                                              std::move(e.key), std::move(e.symbol),
                                              libraries[library]});
      }
      s.prepared = backends::get_prepared_ops(in);
    }
    if (more())  // not in bundles written before the held blocks were
      for (BundleSection& s : sections) s.held = backends::get_held_blocks(in);
    return sections;
  });
}

std::vector<std::size_t> write_bundle(const std::filesystem::path& path,
                                      const std::vector<BundleSection>& sections) {
  std::vector<std::size_t> written;
  const std::string payload = encode_bundle(sections, &written);
  try {
    cache::write_cache_file(path, cache::FileKind::kBundle, cache::portable_fingerprint(), payload);
  } catch (const CacheError&) {
    throw;
  } catch (const Error& e) {
    throw CacheError(std::string("save_bundle: ") + e.what());
  }
  return written;
}

namespace {

// Replaces every kernel's library by an image that holds its name only (one per name).
void drop_native_code(std::vector<BundleSection>& sections) {
  for (BundleSection& s : sections) {
    boost::unordered_flat_map<std::string, std::shared_ptr<const jit::LibraryImage>> stubs;
    for (jit::KernelRecord& k : s.kernels) {
      std::shared_ptr<const jit::LibraryImage>& stub = stubs[k.library->name];
      if (!stub) {
        auto image = std::make_shared<jit::LibraryImage>();
        image->name = k.library->name;  // a stub: the name only
        stub = std::move(image);
      }
      k.library = stub;
    }
  }
}

}  // namespace

std::vector<BundleSection> read_bundle(const std::filesystem::path& path, NativeCode native_code) {
  const cache::ReadResult r =
      cache::read_cache_file(path, cache::FileKind::kBundle, cache::portable_fingerprint());
  if (!r)
    throw CacheError(
        "load_bundle: " + path.string() +
        " is not a usable plan bundle: " + cache::rejection_name(r.rejection) +
        (r.detail.empty() ? std::string() : " (" + r.detail + ")") +
        (r.rejection == cache::Rejection::kOtherFingerprint
             ? "; this is " + cache::portable_fingerprint() + ", save the bundle again with it"
             : std::string()));
  try {
    std::vector<BundleSection> sections = decode_bundle(r.payload);
    if (native_code == NativeCode::kDrop) drop_native_code(sections);
    return sections;
  } catch (const cache::FormatError& e) {
    throw CacheError("load_bundle: " + path.string() + " is corrupt: " + e.what());
  }
}

}  // namespace streamfuse::runtime

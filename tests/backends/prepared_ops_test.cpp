// Prepared ops in the cache directory: their encoding (exact round trip; truncated or flipped
// bytes are format errors or ops the backend checks again), and prepared/<device>.ops: written
// off-thread with what another process wrote kept, read back in the order they were first used
// (the order the next process needs them in), capped, and a bad file is a miss with one warning.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/prepared_op_codec.h"
#include "backends/prepared_op_files.h"
#include "cache/cache_dir.h"
#include "cache/cache_file.h"
#include "fusion/plan_codec.h"
#include "tests/file_text.h"
#include "tests/temp_dir.h"

namespace streamfuse::cache {
namespace {

using streamfuse::testing::count_of;
using streamfuse::testing::TempDir;

// A matmul [m, k] @ [k, n] as a backend reports it, `b` read transposed when `transposed`.
backends::PreparedOp matmul_op(std::int64_t m, std::int64_t k, std::int64_t n,
                               bool transposed = false) {
  backends::PreparedOp p;
  p.op.kind = core::OpKind::kMatmul;
  p.op.attrs.dtype = kF32;
  p.op.inputs = {{0, Shape{m, k}, kF32, core::TensorStatus::kReadOnly},
                 {0, Shape{k, n}, kF32, core::TensorStatus::kReadOnly}};
  p.op.outputs = {{0, Shape{m, n}, kF32, core::TensorStatus::kNotInit}};
  p.input_strides.resize(2);
  p.input_strides[0][0] = k;
  p.input_strides[0][1] = 1;
  p.input_strides[1][0] = transposed ? 1 : n;
  p.input_strides[1][1] = transposed ? k : 1;
  return p;
}

// `p` with the steps of a linear layer and a residual: + bias [n] (a row), * a scalar, + [m, n].
backends::PreparedOp with_post_ops(backends::PreparedOp p) {
  const std::int64_t n = p.op.outputs[0].shape[1];
  p.post_ops = {
      {core::OpKind::kAdd, {0, 1}}, {core::OpKind::kMul, {}}, {core::OpKind::kAdd, {n, 1}}};
  return p;
}

TEST(PreparedOpCodec, RoundTripsExactly) {
  const std::vector<backends::PreparedOp> ops = {matmul_op(64, 512, 2048), matmul_op(3, 5, 7, true),
                                                 with_post_ops(matmul_op(16, 8, 32))};
  EXPECT_EQ(backends::decode_prepared_ops(backends::encode_prepared_ops(ops)), ops);
  EXPECT_TRUE(backends::decode_prepared_ops(backends::encode_prepared_ops({})).empty());
}

TEST(PreparedOpCodec, TruncationsAreFormatErrorsAndFlipsNeverCrash) {
  const std::string bytes = backends::encode_prepared_ops(
      {matmul_op(8, 16, 4), matmul_op(2, 3, 4, true), with_post_ops(matmul_op(2, 3, 4))});
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(backends::decode_prepared_ops(std::string_view(bytes).substr(0, n)), FormatError)
        << n;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    try {
      for (const backends::PreparedOp& p : backends::decode_prepared_ops(flipped)) {
        EXPECT_EQ(p.op.kind, core::OpKind::kMatmul);  // only matmuls decode
        EXPECT_EQ(p.input_strides.size(), 2u);
      }
    } catch (const FormatError&) {
    }
  }
}

TEST(PreparedOpCodec, OnlyMatmulsWithTheirOperandsDecode) {
  backends::PreparedOp not_a_matmul = matmul_op(2, 2, 2);
  not_a_matmul.op.kind = core::OpKind::kAdd;
  EXPECT_THROW(backends::decode_prepared_ops(backends::encode_prepared_ops({not_a_matmul})),
               FormatError);
  backends::PreparedOp one_stride = matmul_op(2, 2, 2);
  one_stride.input_strides.pop_back();
  EXPECT_THROW(backends::decode_prepared_ops(backends::encode_prepared_ops({one_stride})),
               FormatError);
}

// Preparing makes oneDNN objects of the op's sizes: a product the API could not have recorded
// (sizes the backend refuses, element counts that overflow, a shape that is not the product's,
// operands of another dtype) does not decode.
TEST(PreparedOpCodec, OnlyProductsTheBackendWouldPrepareDecode) {
  const auto rejected = [](const std::function<void(backends::PreparedOp&)>& change) {
    backends::PreparedOp p = matmul_op(4, 8, 2);
    change(p);
    try {
      backends::decode_prepared_ops(backends::encode_prepared_ops({p}));
    } catch (const FormatError&) {
      return true;
    }
    return false;
  };
  EXPECT_FALSE(rejected([](auto&) {}));
  EXPECT_TRUE(rejected([](auto& p) {
    p.op.inputs[0].shape = Shape{std::int64_t{1} << 32, 8};
    p.op.outputs[0].shape = Shape{std::int64_t{1} << 32, 2};
  })) << "a size past 2^31";
  EXPECT_TRUE(rejected([](auto& p) {
    const std::int64_t big = std::int64_t{1} << 31;
    p.op.inputs[0].shape = Shape{big, big, big, big, 8};
    p.op.inputs[1].shape = Shape{8, 2};
    p.op.outputs[0].shape = Shape{big, big, big, big, 2};
    p.input_strides[0] = {0, 0, 0, 8, 1};
  })) << "2^124 elements: its element count overflows";
  EXPECT_TRUE(rejected([](auto& p) { p.input_strides[1][0] = -(std::int64_t{1} << 50); }))
      << "a stride past 2^40";
  EXPECT_TRUE(rejected([](auto& p) { p.op.outputs[0].shape = Shape{4, 3}; })) << "not the product";
  EXPECT_TRUE(rejected([](auto& p) { p.op.inputs[1].dtype = kF16; })) << "mixed dtypes";
  EXPECT_TRUE(rejected([](auto& p) {
    for (auto* t : {&p.op.inputs[0], &p.op.inputs[1], &p.op.outputs[0]}) t->dtype = kBool;
    p.op.attrs.dtype = kBool;
  })) << "bool has no product";
  // Post-ops: the four arithmetic kinds, at most four, on f32 products, strides over the
  // product's dimensions that address no more than an operand of its shape could.
  EXPECT_FALSE(rejected([](auto& p) { p = with_post_ops(p); }));
  EXPECT_TRUE(rejected([](auto& p) {
    p = with_post_ops(p);
    p.post_ops[1].kind = core::OpKind::kExp;
  })) << "a post-op that is not arithmetic";
  EXPECT_TRUE(rejected([](auto& p) {
    p = with_post_ops(p);
    p.post_ops.resize(5);
  })) << "five post-ops";
  EXPECT_TRUE(rejected([](auto& p) {
    p = with_post_ops(p);
    p.post_ops[0].strides[2] = 1;
  })) << "a stride past the product's rank";
  EXPECT_TRUE(rejected([](auto& p) {
    p = with_post_ops(p);
    p.post_ops[2].strides[0] = -2;
  })) << "a negative stride";
  EXPECT_TRUE(rejected([](auto& p) {
    p = with_post_ops(p);
    for (auto* t : {&p.op.inputs[0], &p.op.inputs[1], &p.op.outputs[0]}) t->dtype = kF16;
    p.op.attrs.dtype = kF16;
  })) << "post-ops of an f16 product";
}

TEST(PreparedOpCodec, OnlyConvolutionsTheBackendWouldPrepareDecode) {
  const auto rejected = [](const std::function<void(backends::PreparedOp&)>& change) {
    backends::PreparedOp p;
    p.op.kind = core::OpKind::kConv2d;
    p.op.attrs.dtype = kF32;
    p.op.attrs.window.kernel = {3, 3};
    p.op.attrs.window.stride = {2, 2};
    p.op.inputs = {{0, Shape{1, 4, 9, 9}, kF32, core::TensorStatus::kReadOnly},
                   {0, Shape{6, 2, 3, 3}, kF32, core::TensorStatus::kReadOnly}};
    p.op.attrs.window.groups = 2;
    p.op.outputs = {{0, Shape{1, 6, 4, 4}, kF32, core::TensorStatus::kNotInit}};
    p.input_strides = {backends::contiguous_strides(p.op.inputs[0].shape),
                       backends::contiguous_strides(p.op.inputs[1].shape)};
    change(p);
    try {
      const auto back = backends::decode_prepared_ops(backends::encode_prepared_ops({p}));
      EXPECT_EQ(back.at(0), p);  // what decodes is what was written, window and all
    } catch (const FormatError&) {
      return true;
    }
    return false;
  };
  EXPECT_FALSE(rejected([](auto&) {}));
  EXPECT_TRUE(rejected([](auto& p) {
    p.op.outputs[0].shape = Shape{1, 6, 5, 4};
  })) << "not the convolution's result";
  EXPECT_TRUE(rejected([](auto& p) { p.op.attrs.window.groups = 3; })) << "groups";
  EXPECT_TRUE(rejected([](auto& p) { p.op.attrs.window.stride = {0, 2}; })) << "stride 0";
  EXPECT_TRUE(rejected([](auto& p) { p.input_strides[0][3] = 2; })) << "strided operand";
  EXPECT_TRUE(rejected([](auto& p) {
    for (auto* t : {&p.op.inputs[0], &p.op.inputs[1], &p.op.outputs[0]}) t->dtype = kI32;
    p.op.attrs.dtype = kI32;
  })) << "integers have no convolution";
  EXPECT_TRUE(rejected([](auto& p) {
    const std::int64_t big = std::int64_t{1} << 40;
    p.op.inputs[0].shape = Shape{big, 4, 9, 9};
    p.op.outputs[0].shape = Shape{big, 6, 4, 4};
    p.input_strides[0] = backends::contiguous_strides(p.op.inputs[0].shape);
  })) << "a size no process holds";
}

struct Dir {
  TempDir dir;
  std::shared_ptr<CacheDir> cache = std::make_shared<CacheDir>(dir.path(), 1 << 30);
  std::filesystem::path path = prepared_ops_path(dir.path(), "cpu");
};

TEST(PreparedOpFiles, AddedOpsAreReadBackInTheOrderTheyWereFirstUsed) {
  Dir d;
  {
    backends::PreparedOpFiles files(d.cache, "cpu");
    EXPECT_TRUE(files.load().empty());  // no file yet: a quiet miss
    files.add(matmul_op(1, 2, 3));
    files.add(matmul_op(4, 5, 6));
    files.add(matmul_op(1, 2, 3));  // known already: nothing new
    files.flush();
    files.add(matmul_op(7, 8, 9));  // a later write of the same process: after its first ones
    files.flush();
  }
  ASSERT_TRUE(std::filesystem::exists(d.path));
  backends::PreparedOpFiles next(d.cache, "cpu");
  EXPECT_EQ(next.load(), (std::vector<backends::PreparedOp>{matmul_op(1, 2, 3), matmul_op(4, 5, 6),
                                                            matmul_op(7, 8, 9)}));
  next.add(matmul_op(5, 5, 5));  // the next process's new op goes ahead of the older ones
  next.flush();
  EXPECT_EQ(backends::PreparedOpFiles(d.cache, "cpu").load(),
            (std::vector<backends::PreparedOp>{matmul_op(5, 5, 5), matmul_op(1, 2, 3),
                                               matmul_op(4, 5, 6), matmul_op(7, 8, 9)}));
  EXPECT_TRUE(backends::PreparedOpFiles(d.cache, "cuda:0").load().empty());  // per device
}

TEST(PreparedOpFiles, OpsTheFileHasAreNotWrittenAgain) {
  Dir d;
  {
    backends::PreparedOpFiles files(d.cache, "cpu");
    files.add(matmul_op(1, 2, 3));
    files.flush();
  }
  // Writes replace the file (a temporary renamed into place): the same inode means no write.
  struct stat before {};
  ASSERT_EQ(stat(d.path.c_str(), &before), 0);
  backends::PreparedOpFiles files(d.cache, "cpu");
  ASSERT_EQ(files.load().size(), 1u);
  files.add(matmul_op(1, 2, 3));  // what this process read: no write
  files.flush();
  struct stat after {};
  ASSERT_EQ(stat(d.path.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  files.add(matmul_op(7, 2, 3));  // something new: written
  files.flush();
  ASSERT_EQ(stat(d.path.c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino);
}

TEST(PreparedOpFiles, AnotherProcesssOpsAreKeptBehindOursAndTheFileIsCapped) {
  Dir d;
  backends::PreparedOpFiles ours(d.cache, "cpu"), theirs(d.cache, "cpu");
  ours.load();
  theirs.load();
  theirs.add(matmul_op(9, 9, 9));
  theirs.flush();
  ours.add(matmul_op(1, 1, 1));  // ours never read theirs: merged on write
  ours.flush();
  EXPECT_EQ(backends::PreparedOpFiles(d.cache, "cpu").load(),
            (std::vector<backends::PreparedOp>{matmul_op(1, 1, 1), matmul_op(9, 9, 9)}));

  for (std::int64_t i = 0; i < static_cast<std::int64_t>(backends::kMaxPreparedOps) + 10; ++i)
    ours.add(matmul_op(2, 3, 10 + i));
  ours.flush();
  // The first ones this process used are kept: the ones the next process needs first.
  const std::vector<backends::PreparedOp> kept = backends::PreparedOpFiles(d.cache, "cpu").load();
  ASSERT_EQ(kept.size(), backends::kMaxPreparedOps);
  EXPECT_EQ(kept.front(), matmul_op(1, 1, 1));
  EXPECT_EQ(kept[1], matmul_op(2, 3, 10));
  EXPECT_EQ(kept.back(),
            matmul_op(2, 3, 10 + static_cast<std::int64_t>(backends::kMaxPreparedOps) - 2));
}

TEST(PreparedOpFiles, ABadFileIsAMissWithOneWarningAndIsRewritten) {
  Dir d;
  std::filesystem::create_directories(d.path.parent_path());
  write_cache_file(d.path, FileKind::kPreparedOps, portable_fingerprint(), "not a list");
  ::testing::internal::CaptureStderr();
  backends::PreparedOpFiles files(d.cache, "cpu");
  EXPECT_TRUE(files.load().empty());
  EXPECT_TRUE(backends::PreparedOpFiles(d.cache, "cpu").load().empty());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "warning: cache: ignored "), 1) << err;
  EXPECT_FALSE(std::filesystem::exists(d.path));  // removed, so it is written again
  files.add(matmul_op(1, 2, 3));
  files.flush();
  EXPECT_EQ(backends::PreparedOpFiles(d.cache, "cpu").load().size(), 1u);
}

TEST(PreparedOpFiles, AnUnwritableDirectoryWritesNothing) {
  TempDir dir;
  const std::string file = dir.write("plain-file", "x");
  ::testing::internal::CaptureStderr();
  auto cache = std::make_shared<CacheDir>(file + "/cache", 1 << 30);
  backends::PreparedOpFiles files(cache, "cpu");
  EXPECT_TRUE(files.load().empty());
  files.add(matmul_op(1, 2, 3));
  files.flush();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "warning:"), 1) << err;  // the directory's own warning
}

}  // namespace
}  // namespace streamfuse::cache

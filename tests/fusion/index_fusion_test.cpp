// Reads at indices inside fused kernels (fusion/trace.h IndexedRead, jit kLoadAt): index_select,
// embedding and gather feeding element-wise ops run in the kernel of their result's shape, with
// the unfused bits in every mode (fused-interpreted, fused-compiled), for every dtype, i32 and
// i64 indices, inner and outer axes, strided sources; an out-of-range index fails exactly the
// results that read it, with the op's own error.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "streamfuse/streamfuse.h"
#include "tests/fusion/chain_fusion.h"
#include "tests/own_cache_dir.h"
#include "tests/reference.h"

namespace sf = streamfuse;
using sf::Tensor;
using IndexFusionTest = sf::testing::ChainFusionTest;

namespace {

Tensor random_tensor(sf::Shape shape, sf::DType dtype, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return sf::testing::tensor_of(
      sf::testing::random_values(static_cast<std::size_t>(shape.numel()), dtype, -4, 4, rng), shape,
      dtype);
}

Tensor ids_of(const std::vector<std::int64_t>& ids, sf::Shape shape, sf::DType dtype) {
  return sf::from_vector(ids).reshape(shape).to(dtype);
}

TEST_F(IndexFusionTest, EmbeddingPlusPositionsIsOneKernelInEveryDtype) {
  for (sf::DType dtype : {sf::kF32, sf::kF16, sf::kBF16, sf::kF64, sf::kI32, sf::kI8}) {
    for (sf::DType id_dtype : {sf::kI64, sf::kI32}) {
      const Tensor table = random_tensor({50, 16}, dtype, 1);
      const Tensor positions = random_tensor({5, 16}, dtype, 2);
      const Tensor ids = ids_of({3, 49, 0, 7, 7, 12, 1, 30, 2, 0}, {2, 5}, id_dtype);
      check("embedding of " + std::string(sf::dtype_name(dtype)) + " by " +
                std::string(sf::dtype_name(id_dtype)),
            [](const std::vector<Tensor>& in) {
              return std::vector<Tensor>{sf::embedding(in[0], in[1]) + in[2]};
            },
            {table, ids, positions});
    }
  }
}

TEST_F(IndexFusionTest, IndexSelectOnEveryAxisWithStridedSources) {
  const Tensor x = random_tensor({4, 9, 6}, sf::kF32, 3);
  const Tensor ids = ids_of({8, 0, 3, 3}, {4}, sf::kI64);
  for (int axis : {0, 1, 2}) {
    const Tensor axis_ids = ids_of({1, 0, 3, 3}, {2, 2}, sf::kI32);  // 2-D indices
    check("index_select axis " + std::to_string(axis),
          [axis](const std::vector<Tensor>& in) {
            const Tensor y = sf::index_select(in[0], axis, in[1]);
            return std::vector<Tensor>{y * 2.0f + 1.0f, sf::exp(y)};
          },
          {x, axis_ids});
  }
  check("index_select of a transposed view",
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::index_select(in[0].transpose(0, 1), 0, in[1]) - 0.5f};
        },
        {x, ids});
  check("index_select of a sliced, stepped view",
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::tanh(sf::index_select(in[0].slice(2, 1, 6, 2), 1, in[1]))};
        },
        {x, ids});
}

TEST_F(IndexFusionTest, GatherFeedsElementwiseOps) {
  const Tensor x = random_tensor({5, 7}, sf::kF32, 4);
  const Tensor index = ids_of({6, 0, 1, 2, 2, 5, 3, 3, 3, 0, 4, 6, 1, 1, 0}, {5, 3}, sf::kI64);
  check("gather along 1",
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::relu(sf::gather(in[0], 1, in[1]) * -3.0f)};
        },
        {x, index});
  const Tensor rows = ids_of({4, 0, 1, 2, 3, 4}, {2, 3}, sf::kI32);
  check("gather along 0 with a smaller index",
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::gather(in[0], 0, in[1]) + 1.0f};
        },
        {x, rows});
}

// A source or indices the same segment computes are stored by an earlier kernel and read there.
TEST_F(IndexFusionTest, SourcesAndIndicesMadeInTheSegment) {
  const Tensor table = random_tensor({20, 8}, sf::kF32, 5);
  const Tensor base = ids_of({0, 5, 9, 18}, {4}, sf::kI64);
  check(
      "a scaled table, shifted ids",
      [](const std::vector<Tensor>& in) {
        const Tensor scaled = in[0] * 0.5f;
        const Tensor ids = in[1] + std::int64_t{1};
        return std::vector<Tensor>{sf::embedding(scaled, ids) + 2.0f};
      },
      {table, base}, -1);
}

// Out-of-range indices: the unfused op's error where the result (or anything computed from it)
// is read, in every mode; a result of the same kernel that does not read at the indices is
// computed as usual.
TEST_F(IndexFusionTest, AnOutOfRangeIndexFailsOnlyWhatReadsIt) {
  const Tensor table = random_tensor({6, 4}, sf::kF32, 6);
  const Tensor other = random_tensor({3, 4}, sf::kF32, 7);
  for (std::int64_t bad : {6, -1, 1000}) {
    const Tensor ids = ids_of({0, bad, 2}, {3}, sf::kI64);
    std::string unfused_error;
    std::vector<unsigned char> unfused_other;
    for (int mode : {0, 1, 2}) {
      sf::Config c = sf::config();
      c.fusion = mode != 0;
      c.jit = mode == 2 ? sf::JitMode::kCompile : sf::JitMode::kInterpret;
      sf::set_config(c);
      SCOPED_TRACE("mode " + std::to_string(mode) + ", id " + std::to_string(bad));
      for (int i = 0; i < 3; ++i) {  // later iterations run the plan
        const Tensor y = sf::embedding(table, ids) * 2.0f;
        const Tensor z = other + 1.0f;  // same shape: the same fused kernel
        const std::vector<unsigned char> z_bytes = sf::testing::bytes_of(z);
        std::string error;
        try {
          (void)sf::testing::bytes_of(y + 1.0f);
        } catch (const sf::Error& e) {
          error = e.what();
        }
        EXPECT_NE(error.find("index " + std::to_string(bad)), std::string::npos) << error;
        EXPECT_NE(error.find("out of range for axis 0 of size 6"), std::string::npos) << error;
        if (mode == 0 && i == 0) {
          unfused_error = error.substr(0, error.find(" ["));
          unfused_other = z_bytes;
        }
        EXPECT_EQ(error.substr(0, error.find(" [")), unfused_error);
        EXPECT_EQ(z_bytes, unfused_other);
      }
    }
  }
}

// A source with an empty axis and indices to read: every index is out of range, and the kernel
// reads none of the source's (absent) elements.
TEST_F(IndexFusionTest, EmptySourcesAndEmptyIndices) {
  const Tensor empty_axis = sf::zeros({0, 3});
  const Tensor ids = ids_of({0}, {1}, sf::kI64);
  for (bool fusion : {false, true}) {
    sf::Config c = sf::config();
    c.fusion = fusion;
    sf::set_config(c);
    for (int i = 0; i < 3; ++i)
      EXPECT_THROW((void)sf::testing::bytes_of(sf::embedding(empty_axis, ids) + 1.0f), sf::Error);
  }
  const Tensor table = random_tensor({4, 3}, sf::kF32, 8);
  const Tensor none = ids_of({}, {0}, sf::kI64);
  check(
      "no indices",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::embedding(in[0], in[1]) * 3.0f};
      },
      {table, none}, -1);
}

// On cuda:0 (a GPU, or the emulated one in CI): fused reads at indices give the CPU's bits, and
// an out-of-range index the CPU's error. Skips without a device.
TEST_F(IndexFusionTest, CudaGivesTheCpusBitsAndErrors) {
  try {
    sf::synchronize(sf::Device::cuda(0));
  } catch (const sf::DeviceError& e) {
    GTEST_SKIP() << e.what();
  }
  sf::Config c = sf::config();
  c.fusion = true;
  sf::set_config(c);
  const Tensor table = random_tensor({30, 12}, sf::kF32, 9);
  const Tensor positions = random_tensor({4, 12}, sf::kF32, 10);
  const Tensor x = random_tensor({3, 8, 5}, sf::kF16, 11);
  const Tensor ids = ids_of({29, 0, 4, 4}, {4}, sf::kI64);
  const Tensor index = ids_of({7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5}, {3, 1, 5}, sf::kI32);
  const auto chain = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sf::embedding(in[0], in[3]) + in[1],
                               sf::exp(sf::index_select(in[2].transpose(1, 2), 2, in[5]) * 0.5f),
                               sf::gather(in[2], 1, in[4]) - 1.0f};
  };
  std::vector<Tensor> on_gpu;
  const Tensor small = ids_of({7, 0, 3}, {3}, sf::kI32);
  for (const Tensor& t : {table, positions, x, ids, index, small})
    on_gpu.push_back(t.to(sf::Device::cuda(0)));
  for (int i = 0; i < 3; ++i) {  // plans made, then matched
    std::vector<std::vector<unsigned char>> cpu, gpu;
    for (const Tensor& t : chain({table, positions, x, ids, index, small}))
      cpu.push_back(sf::testing::bytes_of(t));
    for (const Tensor& t : chain(on_gpu))
      gpu.push_back(sf::testing::bytes_of(t.to(sf::Device::cpu())));
    EXPECT_EQ(gpu, cpu);
  }
  const Tensor bad = ids_of({0, 30}, {2}, sf::kI64).to(sf::Device::cuda(0));
  for (int i = 0; i < 3; ++i) {
    std::string error;
    try {
      (void)sf::testing::bytes_of((sf::embedding(on_gpu[0], bad) * 2.0f).to(sf::Device::cpu()));
    } catch (const sf::Error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("index 30 at [1] of the indices is out of range for axis 0 of size 30"),
              std::string::npos)
        << error;
  }
}

}  // namespace

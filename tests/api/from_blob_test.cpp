// from_blob's zero-copy form: tensors that read the caller's memory, keep its owner alive for as
// long as anything reads it, and never write it, with fusion on or off.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"
#include "tests/temp_dir.h"

namespace sf = streamfuse;
using namespace streamfuse::testing;

namespace {

std::shared_ptr<std::vector<float>> iota_floats(std::size_t n) {
  auto v = std::make_shared<std::vector<float>>(n);
  std::iota(v->begin(), v->end(), 1.0f);
  return v;
}

TEST(FromBlobTest, ReadsTheCallersMemoryWithoutACopy) {
  auto owner = iota_floats(6);
  const sf::Tensor t = sf::from_blob(owner->data(), sf::kF32, {2, 3}, owner);
  EXPECT_EQ(t.shape(), sf::Shape({2, 3}));
  EXPECT_EQ(t.to_vector<float>(), *owner);
  // No copy: what the tensor reads is the memory as it is when an op reads it (the caller
  // promises not to change it while in use; here nothing reads it in between).
  (*owner)[0] = 42.0f;
  EXPECT_EQ(t.to_vector<float>()[0], 42.0f);
  EXPECT_EQ((t * 2.0f).to_vector<float>()[0], 84.0f);
}

// The owner lives while a lazily recorded op still has to read the memory, after every handle
// the caller held went away, and goes once nothing reads it.
TEST(FromBlobTest, KeepsTheOwnerAliveUntilNothingReadsTheMemory) {
  auto owner = iota_floats(1000);
  const std::weak_ptr<std::vector<float>> watch = owner;
  sf::Tensor y;
  {
    const sf::Tensor t = sf::from_blob(owner->data(), sf::kF32, {10, 100}, owner);
    owner.reset();
    y = sf::sum(sf::exp(t * 0.001f), 1);
  }
  EXPECT_FALSE(watch.expired());
  const std::vector<float> sums = y.to_vector<float>();
  ASSERT_EQ(sums.size(), 10u);
  EXPECT_NEAR(sums[0], 100.0, 10.0);
  y = sf::Tensor();
  sf::synchronize();
  EXPECT_TRUE(watch.expired());
}

// Last-use inputs lend their buffer to an element-wise op's output (unfused: the backend's
// elementwise_output; fused: the kernel's lent outputs). A borrowed buffer never is: the memory is
// a read-only mapping here, so a write would crash the test.
TEST(FromBlobTest, NeverWritesTheMemoryEvenWhenItsTensorIsALastUse) {
  const TempDir dir;
  std::vector<float> values(4096);
  std::iota(values.begin(), values.end(), 0.0f);
  const std::string path = dir.path() + "/weights.bin";
  {
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, values.data(), values.size() * 4),
              static_cast<ssize_t>(values.size() * 4));
    ::close(fd);
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* map = ::mmap(nullptr, values.size() * 4, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(map, MAP_FAILED);
  const std::shared_ptr<const void> mapping(
      map, [n = values.size() * 4](const void* p) { ::munmap(const_cast<void*>(p), n); });

  for (const bool fusion : {false, true}) {
    sf::Config c = sf::config();
    c.fusion = fusion;
    sf::set_config(c);
    for (int iteration = 0; iteration < 4; ++iteration) {  // later ones run fused kernels
      sf::Tensor w = sf::from_blob(mapping.get(), sf::kF32, {64, 64}, mapping);
      sf::Tensor y = sf::exp(std::move(w) * 0.0f) + 1.0f;  // w's last use
      sf::Tensor v = sf::from_blob(mapping.get(), sf::kF32, {64, 64}, mapping).reshape({4096});
      v = std::move(v) - 1.0f;
      EXPECT_EQ(y.to_vector<float>(), std::vector<float>(4096, 2.0f));
      EXPECT_EQ(v.to_vector<float>()[10], 9.0f);
    }
  }
  sf::set_config(sf::Config());
  EXPECT_EQ(std::memcmp(map, values.data(), values.size() * 4), 0);
}

TEST(FromBlobTest, BadArgumentsAreErrorsAtTheCall) {
  auto owner = iota_floats(8);
  expect_error<sf::Error>([&] { return sf::from_blob(owner->data(), sf::kF32, {8}, nullptr); },
                          {"owner"});
  expect_error<sf::Error>(
      [&] {
        return sf::from_blob(reinterpret_cast<const char*>(owner->data()) + 2, sf::kF32, {2},
                             owner);
      },
      {"aligned", "4-byte"});
  expect_error<sf::Error>([&] { return sf::from_blob(nullptr, sf::kF32, {2}, owner); }, {"null"});
  expect_error<sf::ShapeError>([&] { return sf::from_blob(owner->data(), sf::kF32, {-1}, owner); },
                               {"from_blob"});
  // Empty tensors need no memory.
  EXPECT_EQ(sf::from_blob(nullptr, sf::kF32, {0, 3}, owner).numel(), 0);
}

}  // namespace

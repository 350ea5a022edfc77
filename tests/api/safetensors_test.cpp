// safetensors files: what save_safetensors writes loads back bit for bit (every dtype, empty and
// 0-d tensors, views); files written the way other tools write them load; loading borrows the
// file's mapping; and every broken or lying file is an Error naming the file, never a crash.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"
#include "tests/temp_dir.h"
#include "tests/tensor_bytes.h"

namespace sf = streamfuse;
using namespace streamfuse::testing;

namespace {

// A file as another tool writes one: header length, `json` padded with spaces, `data`.
std::string file_with(const std::string& json, const std::string& data) {
  std::string text = json;
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t n = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + text + data;
}

std::string floats(std::initializer_list<float> values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

TEST(SafetensorsTest, WhatIsSavedLoadsBackBitForBit) {
  const TempDir dir;
  const std::string path = dir.path() + "/model.safetensors";
  std::map<std::string, sf::Tensor> saved;
  saved["f32"] = sf::randn({3, 5});
  saved["f16"] = sf::randn({7}).to(sf::kF16);
  saved["bf16"] = sf::randn({2, 3, 1}).to(sf::kBF16);
  saved["i32"] = sf::arange(0, 11, 1, sf::kI32);
  saved["i64"] = sf::arange(-5, 4);
  saved["bool"] = sf::randn({9}) > 0.0f;
  saved["i8"] = sf::arange(-128, 128, 1, sf::kI8).reshape({16, 16});
  saved["u8"] = sf::arange(0, 256, 1, sf::kU8);
  saved["f64"] = sf::randn({4, 3}, sf::kF64) / 3.0;
  saved["scalar"] = sf::full({}, 2.5f);
  saved["empty"] = sf::zeros({0, 4});
  saved["transposed view"] = sf::randn({4, 3}).transpose(0, 1);
  saved["h.0.attn.c_attn.weight"] = sf::randn({16, 48});
  sf::save_safetensors(path, saved, {{"format", "pt"}, {"note", "ünïcode"}});

  const std::map<std::string, sf::Tensor> loaded = sf::load_safetensors(path);
  ASSERT_EQ(loaded.size(), saved.size());
  for (const auto& [name, t] : saved) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(loaded.count(name));
    const sf::Tensor& l = loaded.at(name);
    EXPECT_EQ(l.dtype(), t.dtype());
    EXPECT_EQ(l.shape(), t.shape());
    EXPECT_EQ(bytes_of(l), bytes_of(t));
  }
  EXPECT_EQ(sf::load_safetensors_metadata(path),
            (std::map<std::string, std::string>{{"format", "pt"}, {"note", "ünïcode"}}));
  // Loaded tensors compute like any other.
  EXPECT_EQ(bytes_of(loaded.at("f32") * 2.0f), bytes_of(saved.at("f32") * 2.0f));
}

// Loading maps the file: the tensors take no memory of the library's allocator, outlive the file's
// name and keep their values when the file is replaced.
TEST(SafetensorsTest, LoadingBorrowsTheMappedFile) {
  const TempDir dir;
  const std::string path = dir.path() + "/weights.safetensors";
  const sf::Tensor w = sf::randn({256, 1024});  // 1 MiB
  const std::vector<std::uint8_t> expected = bytes_of(w);
  sf::save_safetensors(path, {{"w", w}, {"b", sf::ones({3}, sf::kI64)}});
  sf::synchronize();
  const std::int64_t before = sf::memory_stats(sf::Device::cpu()).bytes_in_use;
  std::map<std::string, sf::Tensor> loaded = sf::load_safetensors(path);
  EXPECT_LT(sf::memory_stats(sf::Device::cpu()).bytes_in_use - before, 4096);
  std::filesystem::remove(path);
  sf::save_safetensors(path, {{"w", sf::zeros({2})}});
  EXPECT_EQ(bytes_of(loaded.at("w")), expected);
  EXPECT_EQ(loaded.at("b").to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 1, 1}));
  // The borrowed memory is read-only: an op whose input is its last use writes new memory.
  const sf::Tensor doubled = std::move(loaded.at("w")) * 2.0f;
  EXPECT_EQ(doubled.shape(), sf::Shape({256, 1024}));
  EXPECT_EQ(bytes_of(doubled), bytes_of(w * 2.0f));
}

// Files as other writers make them: data in another order than the names, metadata first or
// absent, a tensor whose bytes are not aligned to its elements (copied, not borrowed).
TEST(SafetensorsTest, FilesOfOtherWritersLoad) {
  const TempDir dir;
  const std::string a = dir.path() + "/a.safetensors";
  std::ofstream(a, std::ios::binary) << file_with(
      R"({"__metadata__":{"format":"pt"},"z":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[1,1],"data_offsets":[8,12]}})",
      floats({1.5f, -2.0f, 7.0f}));
  const auto loaded = sf::load_safetensors(a);
  EXPECT_EQ(loaded.at("z").to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(loaded.at("a").to_vector<float>(), (std::vector<float>{7.0f}));

  const std::string b = dir.path() + "/b.safetensors";
  std::ofstream(b, std::ios::binary)
      << file_with(R"({"flag":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]},)"
                   R"("x":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})",
                   std::string(1, '\1') + floats({3.0f, 4.0f}));
  const auto unaligned = sf::load_safetensors(b);
  EXPECT_EQ(unaligned.at("x").to_vector<float>(), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(unaligned.at("flag").to_vector<bool>(), (std::vector<bool>{true}));
  EXPECT_TRUE(sf::load_safetensors_metadata(b).empty());

  // Quantized weights as PyTorch writes them: I8 and U8 bytes.
  const std::string q = dir.path() + "/q.safetensors";
  std::ofstream(q, std::ios::binary)
      << file_with(R"({"w":{"dtype":"I8","shape":[2,2],"data_offsets":[0,4]},)"
                   R"("z":{"dtype":"U8","shape":[3],"data_offsets":[4,7]}})",
                   std::string("\x80\x7f\xff\x01\xff\x00\x07", 7));
  const auto quantized = sf::load_safetensors(q);
  EXPECT_EQ(quantized.at("w").dtype(), sf::kI8);
  EXPECT_EQ(quantized.at("w").to_vector<std::int8_t>(),
            (std::vector<std::int8_t>{-128, 127, -1, 1}));
  EXPECT_EQ(quantized.at("z").to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{255, 0, 7}));

  const std::string empty = dir.path() + "/empty.safetensors";
  std::ofstream(empty, std::ios::binary) << file_with("{}", "");
  EXPECT_TRUE(sf::load_safetensors(empty).empty());
}

TEST(SafetensorsTest, BrokenAndLyingFilesAreErrorsNamingTheFile) {
  const TempDir dir;
  const std::string path = dir.path() + "/bad.safetensors";
  const auto expect_bad = [&](const std::string& content, const char* fragment) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    expect_error<sf::Error>([&] { return sf::load_safetensors(path); },
                            {"bad.safetensors", fragment});
  };
  const std::string x = R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  expect_bad("", "not a safetensors file");
  expect_bad(std::string(7, '\0'), "not a safetensors file");
  expect_bad(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "header of");
  expect_bad(file_with("{" + x + "}", floats({1.0f})), "truncated");
  expect_bad(file_with("{" + x + "}", floats({1.0f, 2.0f, 3.0f})), "account for");
  expect_bad(file_with("{not json", ""), "not JSON");
  expect_bad(file_with("[1,2]", ""), "not a JSON object");
  expect_bad(
      file_with(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", floats({1.0f, 2.0f})),
      "do not hold shape [3]");
  expect_bad(file_with(R"({"x":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}})", floats({1.0f})),
             "I16 is not one streamfuse has");
  expect_bad(file_with(R"({"x":{"dtype":"Q9","shape":[1],"data_offsets":[0,4]}})", floats({1.0f})),
             "unknown dtype");
  expect_bad(file_with("{" + x + "," + x + "}", floats({1.0f, 2.0f})), "twice");
  expect_bad(file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       floats({1.0f, 2.0f})),
             "overlaps");
  expect_bad(
      file_with(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", floats({1.0f, 2.0f})),
      "belong to none");
  expect_bad(
      file_with(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", floats({1.0f})),
      "not a size");
  expect_bad(file_with(R"({"x":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})",
                       floats({1.0f})),
             "rank 9");
  expect_bad(file_with(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],)"
                       R"("data_offsets":[0,4]}})",
                       floats({1.0f})),
             "do not hold");
  expect_bad(file_with(R"({"x":{"dtype":"F32","shape":[1]}})", floats({1.0f})),
             "no \"data_offsets\"");
  expect_bad(file_with(R"({"__metadata__":{"n":1}})", ""), "not a string");
  // Every prefix of a good file: an Error each, never a crash.
  std::string good;
  {
    sf::save_safetensors(path, {{"a", sf::randn({5})}, {"b", sf::ones({2, 2}, sf::kI64)}},
                         {{"k", "v"}});
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (std::size_t n = 0; n < good.size(); ++n) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << good.substr(0, n);
    EXPECT_THROW(sf::load_safetensors(path), sf::Error) << n << " bytes";
  }
  expect_error<sf::Error>([&] { return sf::load_safetensors(dir.path() + "/missing"); },
                          {"cannot open", "missing"});
  expect_error<sf::Error>([&] { return sf::load_safetensors(dir.path()); }, {"not a file"});
}

TEST(SafetensorsTest, SaveReportsWhatItCannotWrite) {
  const TempDir dir;
  expect_error<sf::Error>(
      [&] {
        sf::save_safetensors(dir.path() + "/no/such/dir/x.safetensors", {{"a", sf::ones({1})}});
      },
      {"save_safetensors", "cannot write", "x.safetensors"});
  expect_error<sf::Error>(
      [&] {
        sf::save_safetensors(dir.path() + "/x", {{"", sf::ones({1})}});
      },
      {"empty name"});
  expect_error<sf::Error>(
      [&] {
        sf::save_safetensors(dir.path() + "/x", {{"__metadata__", sf::ones({1})}});
      },
      {"format's own key"});
  expect_error<sf::Error>(
      [&] {
        sf::save_safetensors(dir.path() + "/x", {{std::string("\xff\xfe"), sf::ones({1})}});
      },
      {"save_safetensors", "UTF-8"});
  expect_error<sf::Error>(
      [&] {
        sf::save_safetensors(dir.path() + "/x", {{"a", sf::Tensor()}});
      },
      {"undefined"});
  // Nothing half-written is left behind.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace

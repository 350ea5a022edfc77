// MockOptimization: runs its ops one by one (the eager path) and counts the segments it ran.
#pragma once

#include <cstddef>
#include <string>

#include "fusion/optimization.h"

namespace streamfuse::testing::mock_kind {

class MockOptimization final : public fusion::Optimization {
 public:
  explicit MockOptimization(std::size_t len) : len_(len) {}
  std::size_t len() const override { return len_; }
  void execute(fusion::ExecutionContext& context) override;
  std::string describe() const override { return "mock: " + std::to_string(len_) + " abs ops"; }
  std::string_view codec() const override { return "mock"; }

 private:
  std::size_t len_;
};

}  // namespace streamfuse::testing::mock_kind

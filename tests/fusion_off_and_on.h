// A fixture for tests that must hold with fusion off and on: TEST_P(Suite, ...) with Suite
// derived from FusionOffAndOn runs once per setting (GetParam(): fusion on), the configuration
// restored afterwards; instantiate with STREAMFUSE_FUSION_OFF_AND_ON(Suite).
#pragma once

#include <gtest/gtest.h>

#include <streamfuse/streamfuse.h>

namespace streamfuse::testing {

class FusionOffAndOn : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    saved_ = config();
    Config c = saved_;
    c.fusion = GetParam();
    set_config(c);
  }
  void TearDown() override { set_config(saved_); }

 private:
  Config saved_;
};

}  // namespace streamfuse::testing

#define STREAMFUSE_FUSION_OFF_AND_ON(suite)                  \
  INSTANTIATE_TEST_SUITE_P(Fusion, suite, ::testing::Bool(), \
                           [](const auto& info) { return info.param ? "On" : "Off"; })

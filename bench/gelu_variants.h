// The three GELU formulations of Burn's fusion benchmark, written with streamfuse ops.
#pragma once

#include <cmath>

#include <streamfuse/streamfuse.h>

namespace streamfuse::bench {

enum class GeluVariant { kReference, kWithReferenceErf, kWithCustomErf };

inline const char* variant_name(GeluVariant v) {
  switch (v) {
    case GeluVariant::kReference:
      return "Reference";
    case GeluVariant::kWithReferenceErf:
      return "WithReferenceErf";
    case GeluVariant::kWithCustomErf:
      return "WithCustomErf";
  }
  return "?";
}

// Abramowitz & Stegun 7.1.26 for x >= 0, from tensor ops (about 20 of them with the sign split).
inline Tensor erf_positive(const Tensor& x) {
  const float p = 0.3275911f, a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f,
              a4 = -1.453152027f, a5 = 1.061405429f;
  Tensor t = recip(abs(x) * p + 1.0f);
  Tensor tmp = (((t * a5 + a4) * t + a3) * t + a2) * t + a1;
  return 1.0f - tmp * t * exp(-x * x);
}
inline Tensor erf_custom(const Tensor& x) {
  return where(x > 0.0f, erf_positive(x), -erf_positive(-x));
}

inline Tensor gelu(const Tensor& x, GeluVariant v) {
  switch (v) {
    case GeluVariant::kReference:
      return nn::gelu(x);
    case GeluVariant::kWithReferenceErf:
      return x * (erf(x / std::sqrt(2.0f)) + 1.0f) / 2.0f;
    case GeluVariant::kWithCustomErf:
      return x * (erf_custom(x / std::sqrt(2.0f)) + 1.0f) / 2.0f;
  }
  return {};
}

}  // namespace streamfuse::bench

#pragma once
// Float32 test tensors: random ones, and the relative error tools/h200/models.py reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "vkgraph/types.h"

namespace vkgraph::testing {

// Uniform in [lo, hi), drawn in order from `rng` (a fixture's: the same values each run).
inline HostTensor random_float_tensor(std::mt19937& rng, Shape shape, float lo, float hi) {
  HostTensor t = HostTensor::uninitialized(DType::Float32, std::move(shape));
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// max |got - want| / max |want| over Float32 tensors of one shape; NaN in `got` counts as an
// infinite error.
inline double relative_error(const HostTensor& got, const HostTensor& want) {
  EXPECT_EQ(got.shape, want.shape);
  EXPECT_EQ(got.dtype, DType::Float32);
  EXPECT_EQ(want.dtype, DType::Float32);
  if (got.shape != want.shape) return INFINITY;
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double a = got.data<float>()[i], b = want.data<float>()[i];
    err = std::max(err, std::isnan(a) ? INFINITY : std::fabs(a - b));
    scale = std::max(scale, std::fabs(b));
  }
  return err / scale;
}

}  // namespace vkgraph::testing

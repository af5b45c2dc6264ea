#pragma once
// Float32 test tensors: random ones, float16-stored ones, and the relative error
// tools/h200/models.py reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/types.h"

namespace vkgraph::testing {

// Uniform in [lo, hi), drawn in order from `rng` (a fixture's: the same values each run).
inline HostTensor random_float_tensor(std::mt19937& rng, Shape shape, float lo, float hi) {
  HostTensor t = HostTensor::uninitialized(DType::Float32, std::move(shape));
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// `x` rounded through float16 where a test stores in it (`fp16`), so that a reference sees what
// the kernel reads.
inline std::vector<float> stored(std::vector<float> x, bool fp16) {
  if (fp16)
    for (float& v : x) v = half_to_float(float_to_half(v));
  return x;
}

// `x` as a tensor of `shape`, in float16 storage where `fp16`, else float32.
inline HostTensor tensor_of(const std::vector<float>& x, Shape shape, bool fp16) {
  HostTensor t(fp16 ? DType::Float16 : DType::Float32, std::move(shape));
  for (size_t i = 0; i < x.size(); ++i) {
    if (fp16)
      t.data<uint16_t>()[i] = float_to_half(x[i]);
    else
      t.data<float>()[i] = x[i];
  }
  return t;
}

// Runs `g` (its inputs `inputs`, in order) first on NaN inputs, then on `inputs`, and returns
// output 0: NaN in it means an element the kernel did not write on the second run.
inline HostTensor run_poisoned(ComputeGraph& g, const std::vector<HostTensor>& inputs, bool fp16) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    HostTensor nan = tensor_of(std::vector<float>(inputs[i].numel(), NAN), inputs[i].shape, fp16);
    g.copy_to_input(i, nan.bytes.data(), nan.nbytes());
  }
  g.execute();
  for (size_t i = 0; i < inputs.size(); ++i)
    g.copy_to_input(i, inputs[i].bytes.data(), inputs[i].nbytes());
  g.execute();
  return g.read_output(0);
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

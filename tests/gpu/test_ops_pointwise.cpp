// IsInf, IsNaN and Shrink on values that include NaN, both infinities, zeros and the Shrink
// thresholds, in float32 and float16, and on an empty tensor.
#include <cmath>
#include <limits>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsPointwise : public GpuTest {
 protected:
  // Random values with NaN, +-inf, 0, -0 and +-0.5 mixed in.
  HostTensor special_values(int64_t n) {
    std::vector<float> v = random_floats(static_cast<size_t>(n), -2.f, 2.f);
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              0.f,
                              -0.f,
                              0.5f,
                              -0.5f};
    for (size_t i = 0; i < v.size(); i += 3) v[i] = specials[(i / 3) % 7];
    return HostTensor::from(DType::Float32, {n}, v);
  }
};

HostTensor bools(const HostTensor& x, bool (*pred)(float)) {
  HostTensor r(DType::Bool, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) r.data<uint8_t>()[i] = pred(x.data<float>()[i]);
  return r;
}

TEST_F(OpsPointwise, IsInfIsNaN) {
  auto x = special_values(301);
  expect_same(run_one({x}, [](ComputeGraph& g, auto in) { return ops::is_nan(g, in[0]); }),
              bools(x, [](float v) { return std::isnan(v); }));
  expect_same(run_one({x}, [](ComputeGraph& g, auto in) { return ops::is_inf(g, in[0]); }),
              bools(x, [](float v) { return std::isinf(v); }));
  expect_same(
      run_one({x}, [](ComputeGraph& g, auto in) { return ops::is_inf(g, in[0], false, true); }),
      bools(x, [](float v) { return std::isinf(v) && v > 0; }));
  expect_same(
      run_one({x}, [](ComputeGraph& g, auto in) { return ops::is_inf(g, in[0], true, false); }),
      bools(x, [](float v) { return std::isinf(v) && v < 0; }));
}

TEST_F(OpsPointwise, IsNaNInFloat16) {
  auto x = special_values(64);
  auto y = run_one({x}, [](ComputeGraph& g, auto in) {
    return ops::is_nan(g, ops::cast(g, in[0], DType::Float16));
  });
  expect_same(y, bools(x, [](float v) { return std::isnan(v); }));
}

TEST_F(OpsPointwise, Shrink) {
  auto x = special_values(257);
  for (auto [lambd, bias] : {std::pair{0.5f, 0.f}, std::pair{1.5f, 0.25f}}) {
    auto y =
        run_one({x}, [&](ComputeGraph& g, auto in) { return ops::shrink(g, in[0], lambd, bias); });
    HostTensor want(DType::Float32, x.shape);
    for (int64_t i = 0; i < x.numel(); ++i) {
      float v = x.data<float>()[i];
      want.data<float>()[i] = v < -lambd ? v + bias : (v > lambd ? v - bias : 0.f);
    }
    expect_same(y, want);  // the same float32 operations: exact, infinities included
  }
}

TEST_F(OpsPointwise, EmptyTensor) {
  HostTensor x(DType::Float32, {0, 4});
  auto y = run_one({x}, [](ComputeGraph& g, auto in) { return ops::is_inf(g, in[0]); });
  EXPECT_EQ(shape_str(y.shape), "[0, 4]");
}

}  // namespace
}  // namespace vkgraph::testing

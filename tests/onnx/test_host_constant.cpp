// Initializers read lazily (onnx/host_constant.h): the float16 copy converted straight from the
// proto's raw data is bit for bit the one converted from a float32 HostTensor, over several
// threads' pieces and every special value; load errors still surface when the initializer is
// registered, not when (or whether) it is read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "../expect_error.h"
#include "onnx/host_constant.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::onnx_import {
namespace {

onnx::TensorProto float_proto(const std::vector<float>& values, Shape dims) {
  onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) p.add_dims(d);
  p.set_raw_data(values.data(), values.size() * sizeof(float));
  return p;
}

// half_of's rule, one element at a time: finite values clamp to +-65504 first.
uint16_t reference_half(float v) {
  if (std::isfinite(v)) v = std::clamp(v, -65504.f, 65504.f);
  return float_to_half(v);
}

TEST(HostConstant, HalfFromRawDataMatchesTheElementRule) {
  // 3 Mi + 5 values: several pieces of the pool and a tail shorter than a conversion block.
  const size_t n = (size_t{3} << 20) + 5;
  std::vector<float> v(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-70000.f, 70000.f);
  for (float& x : v) x = d(rng);
  const float specials[] = {0.f,
                            -0.f,
                            1e-8f,
                            -6e-8f,
                            65504.f,
                            65519.f,
                            65520.f,
                            -1e9f,
                            std::numeric_limits<float>::lowest(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min()};
  // At the start, around piece and block boundaries, and at the very end.
  for (size_t at : {size_t{0}, size_t{2047}, size_t{2048}, size_t{1} << 18, (size_t{1} << 20) - 3,
                    n - std::size(specials)})
    for (size_t k = 0; k < std::size(specials) && at + k < n; ++k) v[at + k] = specials[k];
  const onnx::TensorProto p = float_proto(v, {static_cast<int64_t>(n)});
  const HostConstant lazy = HostConstant::of_initializer(p);
  EXPECT_EQ(lazy.shape(), Shape{static_cast<int64_t>(n)});
  EXPECT_EQ(lazy.dtype(), DType::Float32);
  const HostTensor half = lazy.half();
  ASSERT_EQ(half.dtype, DType::Float16);
  ASSERT_EQ(half.shape, Shape{static_cast<int64_t>(n)});
  for (size_t i = 0; i < n; ++i) {
    const uint16_t want = reference_half(v[i]);
    const uint16_t got = half.data<uint16_t>()[i];
    if (std::isnan(v[i]))
      ASSERT_TRUE(std::isnan(half_to_float(got))) << i;
    else
      ASSERT_EQ(got, want) << i << ": " << v[i];
  }
  // The same through the float32 tensor (after something read the constant on the host).
  EXPECT_EQ(half_of(*lazy).bytes, half.bytes);
  EXPECT_EQ(lazy.half().bytes, half.bytes);
}

TEST(HostConstant, CopyIsTheProtosTensor) {
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 3.f;
  const onnx::TensorProto p = float_proto(v, {10, 100});
  const HostConstant lazy = HostConstant::of_initializer(p);
  const HostTensor copied = lazy.copy();
  const HostTensor want = onnx_io::tensor_from_proto(p);
  EXPECT_EQ(copied.shape, want.shape);
  EXPECT_EQ(copied.bytes, want.bytes);
  EXPECT_EQ(lazy->bytes, want.bytes);  // read on the host now
  EXPECT_EQ(lazy.copy().bytes, want.bytes);
  // Values made on the host are constants as before.
  const HostConstant made = HostTensor::from(DType::Int64, {2}, std::vector<int64_t>{4, -1});
  EXPECT_TRUE(made.has_value());
  EXPECT_EQ(made.shape(), Shape{2});
  EXPECT_EQ(made.dtype(), DType::Int64);
  EXPECT_FALSE(HostConstant{}.has_value());
}

TEST(HostConstant, LoadErrorsSurfaceWhenRegistered) {
  onnx::TensorProto short_data = float_proto({1.f, 2.f, 3.f}, {2, 2});
  testing::expect_error([&] { HostConstant::of_initializer(short_data); }, ErrorKind::ModelFormat,
                        {"tensor 'w'", "raw_data holds 12 bytes"});
  onnx::TensorProto external = float_proto({1.f}, {1});
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  testing::expect_error([&] { HostConstant::of_initializer(external); }, ErrorKind::Unsupported,
                        {"external data"});
}

}  // namespace
}  // namespace vkgraph::onnx_import

// one_hot and hardmax against CPU references: every axis, negative and out-of-range indices,
// Int32/Int64 indices, several value dtypes; hardmax ties, NaN and float16.
#include <cmath>
#include <limits>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsOneHot : public GpuTest {};

HostTensor ref_one_hot(const HostTensor& idx, int64_t depth, const HostTensor& values, int axis) {
  Shape out = idx.shape;
  out.insert(out.begin() + axis, depth);
  return map_elements(values, out, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> ic = c;
    ic.erase(ic.begin() + axis);
    int64_t k = idx.as_int(ravel(ic, idx.shape));
    if (k < 0) k += depth;
    return int64_t{k == c[axis] ? 1 : 0};
  });
}

TEST_F(OpsOneHot, AxesDtypesAndOutOfRange) {
  struct Case {
    Shape idx;
    int64_t depth, axis;
    DType idx_dtype, value_dtype;
  };
  const Case cases[] = {
      {{5}, 4, -1, DType::Int64, DType::Float32},   {{2, 3}, 6, 0, DType::Int32, DType::Int64},
      {{3, 2, 4}, 5, 1, DType::Int64, DType::Bool}, {{3, 4}, 130, -2, DType::Int32, DType::Int32},
      {{}, 7, 0, DType::Int64, DType::Float32},  // a scalar index gives a vector
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(k++));
    HostTensor idx(c.idx_dtype, c.idx);
    std::uniform_int_distribution<int64_t> d(-c.depth - 2, c.depth + 1);  // some out of range
    for (int64_t i = 0; i < idx.numel(); ++i) {
      if (c.idx_dtype == DType::Int32)
        idx.data<int32_t>()[i] = static_cast<int32_t>(d(rng));
      else
        idx.data<int64_t>()[i] = d(rng);
    }
    HostTensor values = random_tensor(rng, c.value_dtype, {2});
    if (c.value_dtype == DType::Bool) values = make_tensor<uint8_t>(DType::Bool, {2}, {0, 1});
    auto y = run_one({idx, values}, [&](ComputeGraph& g, auto in) {
      return ops::one_hot(g, in[0], c.depth, in[1], c.axis);
    });
    int axis = static_cast<int>(c.axis < 0 ? c.axis + c.idx.size() + 1 : c.axis);
    expect_same(y, ref_one_hot(idx, c.depth, values, axis));
  }
}

TEST_F(OpsOneHot, Errors) {
  ComputeGraph g(context());
  auto idx = g.add_input({3}, DType::Int64, "i");
  expect_error([&] { ops::one_hot(g, idx, 4, g.add_input({3}, DType::Float32, "v")); },
               ErrorKind::InvalidArgument, {"one_hot:", "(off, on)"});
  expect_error([&] { ops::one_hot(g, idx, 0, g.add_input({2}, DType::Float32, "v2")); },
               ErrorKind::InvalidArgument, {"one_hot:", "depth 0"});
}

HostTensor ref_hardmax(const HostTensor& x, int axis) {
  HostTensor y(DType::Float32, x.shape);
  const int64_t len = x.shape[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t outer = x.numel() / (len * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < inner; ++r) {
      int64_t best = 0;
      for (int64_t j = 0; j < len; ++j) {
        float v = x.data<float>()[(o * len + j) * inner + r];
        float b = x.data<float>()[(o * len + best) * inner + r];
        if (std::isnan(b)) break;
        if (std::isnan(v) || v > b) best = j;
      }
      y.data<float>()[(o * len + best) * inner + r] = 1.f;
    }
  return y;
}

TEST_F(OpsOneHot, Hardmax) {
  auto x = random_tensor(rng, DType::Float32, {3, 5, 4});
  for (int i = 0; i < 60; i += 7) x.data<float>()[i] = 0.25f;  // ties
  x.data<float>()[9] = std::numeric_limits<float>::quiet_NaN();
  for (int axis : {0, 1, 2}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    auto y = run_one({x}, [&](ComputeGraph& g, auto in) { return ops::hardmax(g, in[0], axis); });
    expect_same(y, ref_hardmax(x, axis));
  }
}

TEST_F(OpsOneHot, HardmaxFloat16) {
  auto x = random_tensor(rng, DType::Float32, {4, 33});
  auto y = run_one({x}, [&](ComputeGraph& g, auto in) {
    return ops::cast(g, ops::hardmax(g, ops::cast(g, in[0], DType::Float16), -1), DType::Float32);
  });
  HostTensor rounded = x;  // the reference sees the float16 values, ties included
  for (int64_t i = 0; i < x.numel(); ++i)
    rounded.data<float>()[i] = half_to_float(float_to_half(x.data<float>()[i]));
  expect_same(y, ref_hardmax(rounded, 1));
}

}  // namespace
}  // namespace vkgraph::testing

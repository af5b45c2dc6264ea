// det, lrn and reverse_sequence against double-precision / CPU references, with the edge cases
// conformance data lacks: singular and NaN matrices, even LRN windows, lengths 0 and full,
// clamped computed lengths.
#include <cmath>
#include <limits>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsDetLrn : public GpuTest {};

double ref_det(const float* a, int64_t m) {
  std::vector<double> w(a, a + m * m);
  double det = 1;
  for (int64_t c = 0; c < m; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < m; ++r)
      if (std::fabs(w[r * m + c]) > std::fabs(w[p * m + c])) p = r;
    if (p != c) {
      for (int64_t k = 0; k < m; ++k) std::swap(w[c * m + k], w[p * m + k]);
      det = -det;
    }
    det *= w[c * m + c];
    if (w[c * m + c] == 0) return 0;
    for (int64_t r = c + 1; r < m; ++r) {
      double f = w[r * m + c] / w[c * m + c];
      for (int64_t k = c; k < m; ++k) w[r * m + k] -= f * w[c * m + k];
    }
  }
  return det;
}

TEST_F(OpsDetLrn, Det) {
  for (Shape s : {Shape{1, 1}, Shape{3, 3}, Shape{4, 2, 5, 5}, Shape{7, 8, 8}}) {
    SCOPED_TRACE(shape_str(s));
    auto x = random_tensor(rng, DType::Float32, s);
    const int64_t m = s.back(), count = x.numel() / (m * m);
    if (count > 1 && m > 1)  // make one matrix singular: two equal rows
      for (int64_t k = 0; k < m; ++k) x.data<float>()[m * m + m + k] = x.data<float>()[m * m + k];
    auto y = run_one({x}, [](ComputeGraph& g, auto in) { return ops::det(g, in[0]); });
    std::vector<float> want;
    for (int64_t b = 0; b < count; ++b)
      want.push_back(static_cast<float>(ref_det(x.data<float>() + b * m * m, m)));
    expect_near(y, HostTensor::from(DType::Float32, Shape(s.begin(), s.end() - 2), want), 1e-4f);
  }
}

TEST_F(OpsDetLrn, DetPropagatesNaN) {
  auto x = random_tensor(rng, DType::Float32, {2, 3, 3});
  x.data<float>()[4] = std::numeric_limits<float>::quiet_NaN();
  auto y = run_one({x}, [](ComputeGraph& g, auto in) { return ops::det(g, in[0]); });
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_NEAR(y.data<float>()[1], ref_det(x.data<float>() + 9, 3), 1e-5);
}

TEST_F(OpsDetLrn, DetErrors) {
  ComputeGraph g(context());
  expect_error(
      [&] {
        ops::det(g, g.add_input({2, 3}, DType::Float32, "x"));
      },
      ErrorKind::InvalidArgument, {"det:", "not [..., M, M]"});
}

TEST_F(OpsDetLrn, Lrn) {
  for (int64_t size : {1, 2, 3, 5}) {
    SCOPED_TRACE("size " + std::to_string(size));
    Shape s{2, 7, 3, 4};
    auto x = random_tensor(rng, DType::Float32, s);
    ops::LrnParams p;
    p.size = size;
    p.alpha = 0.3f;
    p.beta = 0.6f;
    p.bias = 1.5f;
    auto y = run_one({x}, [&](ComputeGraph& g, auto in) { return ops::lrn(g, in[0], p); });
    HostTensor want(DType::Float32, s);
    const int64_t inner = 12, before = (size - 1) / 2, after = size - 1 - before;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t c = (i / inner) % 7, base = i - c * inner;
      double sum = 0;
      for (int64_t j = std::max<int64_t>(0, c - before); j <= std::min<int64_t>(6, c + after); ++j)
        sum += std::pow(x.data<float>()[base + j * inner], 2);
      want.data<float>()[i] =
          static_cast<float>(x.data<float>()[i] / std::pow(p.bias + p.alpha / size * sum, p.beta));
    }
    expect_near(y, want, 1e-5f);
  }
}

TEST_F(OpsDetLrn, ReverseSequence) {
  for (int time_axis : {0, 1}) {
    SCOPED_TRACE("time_axis " + std::to_string(time_axis));
    const int64_t steps = 5, batch = 4;
    Shape s = time_axis == 0 ? Shape{steps, batch, 3} : Shape{batch, steps, 3};
    auto x = random_tensor(rng, DType::Int64, s);
    // 0, full, and (computed) lengths beyond the range, which clamp.
    auto lens = make_tensor<int64_t>(DType::Int64, {batch}, {0, 5, 2, 9});
    auto y = run_one({x, lens}, [&](ComputeGraph& g, auto in) {
      return ops::reverse_sequence(g, in[0], in[1], 1 - time_axis, time_axis);
    });
    auto want = map_elements(x, s, [&](const std::vector<int64_t>& c) {
      std::vector<int64_t> src = c;
      const int64_t b = c[1 - time_axis], t = c[time_axis];
      const int64_t len = std::min<int64_t>(lens.as_int(b), steps);
      if (t < len) src[time_axis] = len - 1 - t;
      return ravel(src, s);
    });
    expect_same(y, want);
  }
}

TEST_F(OpsDetLrn, ReverseSequenceConstantLengthOutOfRange) {
  ComputeGraph g(context());
  auto x = g.add_input({3, 2}, DType::Float32, "x");
  auto lens = g.add_constant(HostTensor::from(DType::Int64, {2}, std::vector<int64_t>{1, 4}));
  expect_error([&] { ops::reverse_sequence(g, x, lens, 1, 0); }, ErrorKind::InvalidArgument,
               {"reverse_sequence:", "sequence length 4 outside [0, 3]"});
}

}  // namespace
}  // namespace vkgraph::testing

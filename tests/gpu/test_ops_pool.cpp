// Pooling (2-D, 3-D) against CPU references that follow ONNX MaxPool / AveragePool /
// Global*Pool.
#include <cmath>
#include <limits>

#include "gpu_test.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {
namespace {

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    if (std::abs(got[i] - want[i]) > tol * (1.0 + std::abs(want[i]))) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
      ++reported;
    }
  }
}

// ONNX output size, computed the way the spec states it (floating-point ceil/floor).
int64_t onnx_pool_size(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d,
                       bool ceil_mode) {
  double v = double(in + pb + pe - d * (k - 1) - 1) / double(s) + 1.0;
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(v) : std::floor(v));
  if (ceil_mode && (out - 1) * s >= in + pb) --out;  // window would start in the end padding
  return out;
}

// Over [N, C, D, H, W]; 2-D cases pass D = 1 and a trivial depth window.
std::vector<double> pool_ref(const Shape& xs, const std::vector<float>& x,
                             const ops::Pool3dParams& p, bool is_max, Shape& ys) {
  int64_t planes = xs[0] * xs[1], in[3] = {xs[2], xs[3], xs[4]}, out[3];
  for (int i = 0; i < 3; ++i)
    out[i] = onnx_pool_size(in[i], p.kernel[i], p.strides[i], p.pads[i], p.pads[i + 3],
                            p.dilations[i], p.ceil_mode);
  ys = {xs[0], xs[1], out[0], out[1], out[2]};
  std::vector<double> y;
  for (int64_t c = 0; c < planes; ++c)
    for (int64_t od = 0; od < out[0]; ++od)
      for (int64_t oh = 0; oh < out[1]; ++oh)
        for (int64_t ow = 0; ow < out[2]; ++ow) {
          double mx = -std::numeric_limits<double>::infinity(), sum = 0;
          int inside = 0, padded = 0;
          for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
            for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
              for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
                int64_t at[3] = {od * p.strides[0] - p.pads[0] + kd * p.dilations[0],
                                 oh * p.strides[1] - p.pads[1] + kh * p.dilations[1],
                                 ow * p.strides[2] - p.pads[2] + kw * p.dilations[2]};
                bool in_pads = true, in_input = true;
                for (int i = 0; i < 3; ++i) {
                  // Taps past the end padding (ceil_mode) count for nothing.
                  in_pads &= at[i] < in[i] + p.pads[i + 3];
                  in_input &= at[i] >= 0 && at[i] < in[i];
                }
                padded += in_pads;
                if (!in_input) continue;
                double v = x[((c * in[0] + at[0]) * in[1] + at[1]) * in[2] + at[2]];
                mx = std::max(mx, v);
                sum += v;
                ++inside;
              }
          y.push_back(is_max ? mx : sum / (p.count_include_pad ? padded : inside));
        }
  return y;
}

std::vector<float> run_graph(ComputeGraph& g, const std::vector<float>& x) {
  g.copy_to_input(0, x.data(), x.size() * sizeof(float));
  g.execute();
  HostTensor out = g.read_output(0);
  return {out.data<float>(), out.data<float>() + out.numel()};
}

ops::Pool2dParams pool_params(std::array<int64_t, 2> kernel, std::array<int64_t, 2> strides,
                              std::array<int64_t, 4> pads, bool ceil_mode = false,
                              bool count_include_pad = false,
                              std::array<int64_t, 2> dilations = {1, 1}) {
  return {kernel, strides, pads, dilations, ceil_mode, count_include_pad};
}

class OpsPool : public GpuTest {
 protected:
  // Runs max or avg pooling, checks against the reference and returns the output shape.
  Shape check(const Shape& xs, const ops::Pool2dParams& p, bool is_max) {
    auto xv = random_floats(numel(xs));
    ComputeGraph g(context());
    TensorRef x = g.add_input(xs, DType::Float32, "x");
    TensorRef y = is_max ? ops::max_pool2d(g, x, p) : ops::avg_pool2d(g, x, p);
    g.add_output(y, "y");
    ops::Pool3dParams p3{{1, p.kernel[0], p.kernel[1]},
                         {1, p.strides[0], p.strides[1]},
                         {0, p.pads[0], p.pads[1], 0, p.pads[2], p.pads[3]},
                         {1, p.dilations[0], p.dilations[1]},
                         p.ceil_mode,
                         p.count_include_pad};
    Shape ys;
    auto want = pool_ref({xs[0], xs[1], 1, xs[2], xs[3]}, xv, p3, is_max, ys);
    ys.erase(ys.begin() + 2);
    EXPECT_EQ(g.info(y).shape, ys);
    expect_close(run_graph(g, xv), want, 1e-5);
    return ys;
  }
  Shape check3d(const Shape& xs, const ops::Pool3dParams& p, bool is_max) {
    auto xv = random_floats(numel(xs));
    ComputeGraph g(context());
    TensorRef x = g.add_input(xs, DType::Float32, "x");
    TensorRef y = is_max ? ops::max_pool3d(g, x, p) : ops::avg_pool3d(g, x, p);
    g.add_output(y, "y");
    Shape ys;
    auto want = pool_ref(xs, xv, p, is_max, ys);
    EXPECT_EQ(g.info(y).shape, ys);
    expect_close(run_graph(g, xv), want, 1e-5);
    return ys;
  }
};

TEST_F(OpsPool, MaxResNetStem) {
  EXPECT_EQ(check({2, 3, 9, 10}, pool_params({3, 3}, {2, 2}, {1, 1, 1, 1}), true),
            (Shape{2, 3, 5, 5}));
}

TEST_F(OpsPool, MaxCeilMode) {
  EXPECT_EQ(check({1, 2, 7, 7}, pool_params({2, 2}, {2, 2}, {0, 0, 0, 0}, false), true),
            (Shape{1, 2, 3, 3}));
  EXPECT_EQ(check({1, 2, 7, 7}, pool_params({2, 2}, {2, 2}, {0, 0, 0, 0}, true), true),
            (Shape{1, 2, 4, 4}));
}

TEST_F(OpsPool, CeilModeDropsWindowStartingInPadding) {
  // ceil((5 + 2 - 2) / 2 + 1) = 4, but the 4th window would start at 6 = H + pad_top.
  EXPECT_EQ(check({1, 1, 5, 5}, pool_params({2, 2}, {2, 2}, {1, 1, 1, 1}, true), true),
            (Shape{1, 1, 3, 3}));
  EXPECT_EQ(check({1, 1, 5, 5}, pool_params({2, 2}, {2, 2}, {1, 1, 1, 1}, true, true), false),
            (Shape{1, 1, 3, 3}));
}

TEST_F(OpsPool, MaxDilated) {
  check({1, 2, 9, 8}, pool_params({3, 3}, {1, 2}, {1, 1, 1, 1}, false, false, {2, 2}), true);
}

TEST_F(OpsPool, AvgPadsCountIncludePadBothWays) {
  check({1, 3, 8, 9}, pool_params({3, 3}, {2, 2}, {1, 1, 1, 1}, false, false), false);
  check({1, 3, 8, 9}, pool_params({3, 3}, {2, 2}, {1, 1, 1, 1}, false, true), false);
}

TEST_F(OpsPool, AvgCeilModeAsymmetricPads) {
  // The last windows hang past the end padding: those taps never count.
  for (bool include : {false, true}) {
    SCOPED_TRACE(include);
    EXPECT_EQ(check({2, 2, 7, 9}, pool_params({3, 3}, {2, 2}, {0, 1, 1, 0}, true, include), false),
              (Shape{2, 2, 4, 5}));
  }
}

TEST_F(OpsPool, AvgDilatedNonSquare) {
  check({1, 2, 9, 10}, pool_params({2, 3}, {1, 2}, {1, 0, 0, 2}, false, true, {2, 1}), false);
}

TEST_F(OpsPool, Pool3dMaxAndAvg) {
  ops::Pool3dParams p{{2, 3, 2}, {2, 2, 1}, {0, 1, 1, 1, 1, 0}};
  for (bool is_max : {false, true}) {
    SCOPED_TRACE(is_max);
    EXPECT_EQ(check3d({2, 3, 5, 7, 6}, p, is_max), (Shape{2, 3, 3, 4, 6}));
  }
}

TEST_F(OpsPool, Pool3dCeilModeCountIncludePadDilated) {
  ops::Pool3dParams p{{3, 2, 2}, {2, 2, 2}, {1, 0, 1, 1, 1, 0}, {1, 2, 1}, true};
  for (bool include : {false, true}) {
    SCOPED_TRACE(include);
    p.count_include_pad = include;
    check3d({1, 2, 6, 7, 5}, p, false);
  }
  check3d({1, 2, 6, 7, 5}, p, true);
}

class OpsGlobalPool : public GpuTest {
 protected:
  void check(const Shape& xs, bool is_max) {
    auto xv = random_floats(numel(xs));
    ComputeGraph g(context());
    TensorRef x = g.add_input(xs, DType::Float32, "x");
    TensorRef y = is_max ? ops::global_max_pool(g, x) : ops::global_avg_pool(g, x);
    g.add_output(y, "y");
    Shape ys(xs.size(), 1);
    ys[0] = xs[0];
    ys[1] = xs[1];
    EXPECT_EQ(g.info(y).shape, ys);
    int64_t rows = xs[0] * xs[1], cols = numel(xs) / rows;
    std::vector<double> want;
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t i = 0; i < cols; ++i) {
        mx = std::max<double>(mx, xv[r * cols + i]);
        sum += xv[r * cols + i];
      }
      want.push_back(is_max ? mx : sum / cols);
    }
    expect_close(run_graph(g, xv), want, 1e-5);
  }
};

TEST_F(OpsGlobalPool, SeveralRanks) {
  for (bool is_max : {false, true}) {
    SCOPED_TRACE(is_max);
    check({2, 3, 5, 7}, is_max);
    check({2, 5, 9}, is_max);
    check({1, 2, 3, 4, 5}, is_max);
    check({1, 3, 20, 30}, is_max);  // rows longer than the workgroup
  }
}

class OpsPoolErrors : public OpErrorTest {
 protected:
  using OpErrorTest::expect_error;
  // Every pooling argument error is InvalidArgument.
  template <typename F>
  void expect_error(const std::string& op, const std::string& text, F build) {
    expect_error(ErrorKind::InvalidArgument, op, text, build);
  }
};

TEST_F(OpsPoolErrors, BadShapesAndParams) {
  auto x = input({1, 2, 5, 5});
  expect_error("max_pool2d", "input must be [N, C, H, W]", [&] {
    ops::max_pool2d(g, input({2, 5, 5}), pool_params({2, 2}, {1, 1}, {}));
  });
  expect_error("avg_pool2d", "kernel", [&] {
    ops::avg_pool2d(g, x, pool_params({0, 2}, {1, 1}, {}));
  });
  expect_error("max_pool2d", "strides", [&] {
    ops::max_pool2d(g, x, pool_params({2, 2}, {1, 0}, {}));
  });
  expect_error("max_pool2d", "pads", [&] {
    ops::max_pool2d(g, x, pool_params({2, 2}, {1, 1}, {0, -1, 0, 0}));
  });
  expect_error("avg_pool2d", "exceeds padded height", [&] {
    ops::avg_pool2d(g, x, pool_params({7, 2}, {1, 1}, {}));
  });
  expect_error("max_pool3d", "input must be [N, C, D, H, W]", [&] {
    ops::max_pool3d(g, x, {{2, 2, 2}});
  });
  expect_error("avg_pool3d", "exceeds padded depth", [&] {
    ops::avg_pool3d(g, input({1, 2, 3, 5, 5}), {{4, 2, 2}});
  });
  expect_error("max_pool3d", "dilations [1, 1, 0]", [&] {
    ops::max_pool3d(g, input({1, 2, 3, 5, 5}), {{2, 2, 2}, {1, 1, 1}, {}, {1, 1, 0}});
  });
  expect_error("global_avg_pool", "input must be [N, C, D1, ...]", [&] {
    ops::global_avg_pool(g, input({2, 5}));
  });
}

}  // namespace
}  // namespace vkgraph::testing

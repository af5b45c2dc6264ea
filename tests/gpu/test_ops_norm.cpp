// Normalization ops against double-precision CPU references.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "float_test_util.h"
#include "gpu_test.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"
#include "vkgraph/ops/tuning.h"

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

std::vector<float> run_graph(ComputeGraph& g, const std::vector<float>& x) {
  g.copy_to_input(0, x.data(), x.size() * sizeof(float));
  g.execute();
  HostTensor out = g.read_output(0);
  return {out.data<float>(), out.data<float>() + out.numel()};
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// Normalizes each of `rows` runs of `cols` elements; param(row, col) gives (scale, bias).
// `rms`: RMSNorm, the mean taken as 0.
template <typename Param>
std::vector<double> normalize_rows(const std::vector<float>& x, int64_t rows, int64_t cols,
                                   double eps, Param param, bool rms = false) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < cols && !rms; ++i) mean += x[r * cols + i];
    mean /= cols;
    for (int64_t i = 0; i < cols; ++i) var += std::pow(x[r * cols + i] - mean, 2);
    var /= cols;
    for (int64_t i = 0; i < cols; ++i) {
      auto [scale, bias] = param(r, i);
      y[r * cols + i] = (x[r * cols + i] - mean) / std::sqrt(var + eps) * scale + bias;
    }
  }
  return y;
}

class OpsNorm : public GpuTest {
 protected:
  TensorRef constant(const Shape& s, const std::vector<float>& v) {
    return graph_->add_constant(HostTensor::from(DType::Float32, s, v));
  }
  std::unique_ptr<ComputeGraph> graph_;

  // norm_subgroup.comp against fp64 on its `rows` x `cols` rows: LayerNorm with bias (kind 0),
  // without (1, offset 50: the two-pass variance) or RMSNorm (2), run first on NaN inputs.
  // `knob` is norm.subgroup: 1 a subgroup per row, 2 the path of workgroups whose subgroups are
  // not full (rows one by one, shared-memory sums).
  void check_subgroup_rows(bool fp16, uint32_t knob, uint32_t per_group, int64_t rows, int64_t cols,
                           int kind);
};

TEST_F(OpsNorm, BatchNormInference) {
  for (const Shape& xs : {Shape{2, 5, 3, 4}, Shape{3, 7}, Shape{2, 4, 6}}) {
    SCOPED_TRACE(shape_str(xs));
    int64_t C = xs[1], inner = product(xs, 2, xs.size());
    auto xv = random_floats(numel(xs), -2, 2);
    auto sv = random_floats(C), bv = random_floats(C), mv = random_floats(C);
    auto vv = random_floats(C, 0.1f, 2.f);
    graph_ = std::make_unique<ComputeGraph>(context());
    ComputeGraph& g = *graph_;
    TensorRef x = g.add_input(xs, DType::Float32, "x");
    TensorRef y = ops::batch_norm_inference(g, x, constant({C}, sv), constant({C}, bv),
                                            constant({C}, mv), constant({C}, vv), 1e-3f);
    g.add_output(y, "y");
    std::vector<double> want(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) {
      int64_t c = i / inner % C;
      want[i] = (xv[i] - mv[c]) / std::sqrt(vv[c] + 1e-3) * sv[c] + bv[c];
    }
    expect_close(run_graph(g, xv), want, 1e-5);
  }
}

struct LayerNormCase {
  Shape x;
  int64_t axis;
  Shape scale;
  std::optional<Shape> bias;
  float offset = 0.f;  // added to x: a large mean tests the two-pass variance
};

TEST_F(OpsNorm, LayerNorm) {
  const LayerNormCase cases[] = {
      {{4, 33}, -1, {33}, Shape{33}},
      {{2, 3, 5, 7}, 1, {3, 5, 7}, Shape{3, 5, 7}},
      {{2, 3, 5, 7}, 2, {7}, Shape{5, 1}},  // broadcast parameters
      {{2, 3, 5, 7}, -1, {7}, std::nullopt},
      {{3, 1000}, -1, {1000}, Shape{1000}, 100.f},  // rows longer than the workgroup
      {{2, 4500}, -1, {4500}, Shape{4500}, 3.f},    // past what registers hold: streamed
      {{2, 3, 4}, 0, {2, 3, 4}, Shape{3, 4}},       // one row
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " axis " + std::to_string(c.axis));
    size_t a = c.axis < 0 ? c.axis + c.x.size() : c.axis;
    const Shape dims(c.x.begin() + a, c.x.end());
    int64_t rows = product(c.x, 0, a), cols = numel(dims);
    auto xv = random_floats(numel(c.x));
    for (float& v : xv) v += c.offset;
    auto sv = random_floats(numel(c.scale));
    auto bv = random_floats(c.bias ? numel(*c.bias) : 0);
    graph_ = std::make_unique<ComputeGraph>(context());
    ComputeGraph& g = *graph_;
    TensorRef x = g.add_input(c.x, DType::Float32, "x");
    std::optional<TensorRef> b;
    if (c.bias) b = constant(*c.bias, bv);
    TensorRef y = ops::layer_norm(g, x, constant(c.scale, sv), b, c.axis, 1e-5f);
    g.add_output(y, "y");
    // Broadcast index of normalized element `col` into a right-aligned parameter shape.
    auto index = [&](const Shape& p, int64_t col) {
      int64_t idx = 0, stride = 1;
      for (size_t k = 0; k < p.size(); ++k) {
        size_t d = dims.size() - 1 - k;
        int64_t coord = col % dims[d];
        col /= dims[d];
        size_t pd = p.size() - 1 - k;
        if (p[pd] != 1) idx += coord * stride;
        stride *= p[pd];
      }
      return idx;
    };
    auto want = normalize_rows(xv, rows, cols, 1e-5, [&](int64_t, int64_t col) {
      return std::pair<double, double>{sv[index(c.scale, col)],
                                       c.bias ? bv[index(*c.bias, col)] : 0.0};
    });
    expect_close(run_graph(g, xv), want, 1e-4);
  }
}

// channel_layer_norm: layer_norm over the channels of a channels-first x, read in place, y
// channels-last or channels-first; rows in registers and streamed (4500 channels), batches.
TEST_F(OpsNorm, ChannelLayerNormIsLayerNormOfTheTransposedInput) {
  const Shape cases[] = {{2, 33, 3, 5}, {1, 96, 7}, {2, 300, 2, 2}, {1, 4500, 3}, {3, 8, 1}};
  for (const Shape& xs : cases)
    for (bool channels_last : {true, false})
      for (bool with_bias : {true, false}) {
        SCOPED_TRACE(shape_str(xs) + (channels_last ? " channels-last" : " channels-first") +
                     (with_bias ? " bias" : ""));
        const int64_t n = xs[0], c = xs[1], spatial = product(xs, 2, xs.size());
        std::vector<float> xv = random_floats(numel(xs), -2.f, 3.f);
        std::vector<float> sv = random_floats(c, 0.5f, 2.f), bv = random_floats(c);
        graph_ = std::make_unique<ComputeGraph>(context());
        ComputeGraph& g = *graph_;
        TensorRef x = g.add_input(xs, DType::Float32, "x");
        std::optional<TensorRef> b;
        if (with_bias) b = constant({c}, bv);
        TensorRef y = ops::channel_layer_norm(g, x, constant({c}, sv), b, 1e-5f, channels_last);
        Shape want_shape{n};
        if (channels_last) want_shape.insert(want_shape.end(), xs.begin() + 2, xs.end());
        want_shape.push_back(c);
        if (!channels_last) want_shape.insert(want_shape.end(), xs.begin() + 2, xs.end());
        ASSERT_EQ(g.info(y).shape, want_shape);
        g.add_output(y, "y");
        // x moved to channels-last: row (i, s) holds x[i, :, s].
        std::vector<float> rows(xv.size());
        for (int64_t i = 0; i < n; ++i)
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t s = 0; s < spatial; ++s)
              rows[(i * spatial + s) * c + ch] = xv[(i * c + ch) * spatial + s];
        std::vector<double> want =
            normalize_rows(rows, n * spatial, c, 1e-5, [&](int64_t, int64_t col) {
              return std::pair<double, double>{sv[col], with_bias ? bv[col] : 0.0};
            });
        if (!channels_last) {
          std::vector<double> back(want.size());
          for (int64_t i = 0; i < n; ++i)
            for (int64_t ch = 0; ch < c; ++ch)
              for (int64_t s = 0; s < spatial; ++s)
                back[(i * c + ch) * spatial + s] = want[(i * spatial + s) * c + ch];
          want = std::move(back);
        }
        expect_close(run_graph(g, xv), want, 1e-4);
      }
}

// layer_norm_with_range: y bit for bit layer_norm's, and per row the (min, max) of y as read
// back, 0 included, as DynamicQuantizeLinear's range pass finds it. Rows in registers and
// streamed (4500 elements), a bias shifting whole rows above or below 0 (the range still
// reaches 0). Float32 only: float16 y is Unsupported (norm.cpp says why).
TEST_F(OpsNorm, LayerNormWithRangeIsLayerNormsRange) {
  struct Case {
    Shape x;
    int64_t axis;
    float shift;            // added to the bias
    bool nan_bias = false;  // a NaN bias element: a NaN column, which the range skips
  };
  const Case cases[] = {{{4, 33}, -1, 0.f},       {{2, 3, 5, 7}, 1, 0.f}, {{3, 1000}, -1, 10.f},
                        {{2, 4500}, -1, 0.f},     {{3, 4500}, 1, -10.f},  {{2, 3, 4}, 0, 0.f},
                        {{5, 300}, -1, 0.f, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " axis " + std::to_string(c.axis));
    const size_t a = c.axis < 0 ? c.axis + c.x.size() : c.axis;
    const Shape dims(c.x.begin() + a, c.x.end());
    const int64_t rows = product(c.x, 0, a), cols = numel(dims);
    std::vector<float> xv = random_floats(numel(c.x), -3.f, 3.f);
    std::vector<float> sv = random_floats(cols, 0.5f, 4.f), bv = random_floats(cols);
    for (float& v : bv) v += c.shift;
    if (c.nan_bias) bv[7] = NAN;
    // Both row kernels: norm_subgroup.comp where the rows fit a subgroup, and norm.comp.
    for (uint32_t subgroup : {1u, 0u}) {
      SCOPED_TRACE("norm.subgroup " + std::to_string(subgroup));
      GraphOptions go;
      auto tuning = std::make_shared<ops::Tuning>();
      tuning->knobs["norm.subgroup"] = subgroup;
      go.tuning = tuning;
      go.profile = true;  // node labels: which kernel ran
      graph_ = std::make_unique<ComputeGraph>(context(), go);
      ComputeGraph& g = *graph_;
      TensorRef x = g.add_input(c.x, DType::Float32, "x");
      TensorRef scale = g.add_constant(tensor_of(sv, dims, false));
      TensorRef bias = g.add_constant(tensor_of(bv, dims, false));
      g.add_output(ops::layer_norm(g, x, scale, bias, c.axis, 1e-5f), "plain");
      const ops::NormWithRange r = ops::layer_norm_with_range(g, x, scale, bias, c.axis, 1e-5f);
      g.add_output(r.y, "y");
      g.add_output(r.range, "range");
      ASSERT_EQ(g.info(r.range).shape, (Shape{rows, 2}));
      ASSERT_EQ(g.info(r.range).dtype, DType::Float32);
      g.copy_to_input(0, xv.data(), xv.size() * sizeof(float));
      g.execute();
      const HostTensor plain = g.read_output(0), y = g.read_output(1), range = g.read_output(2);
      ASSERT_EQ(y.bytes, plain.bytes) << "y differs from layer_norm's";
      const bool fits = cols <= 32 * int64_t{context()->features().subgroup_size} &&
                        context()->features().subgroup_arithmetic;
      for (const NodeTime& t : g.node_times())
        EXPECT_EQ(t.label.find("(subgroup rows)") != std::string::npos, subgroup == 1 && fits)
            << t.label;
      for (int64_t row = 0; row < rows; ++row) {
        float lo = 0.f, hi = 0.f;
        for (int64_t i = 0; i < cols; ++i) {
          const float v = y.data<float>()[row * cols + i];
          if (!std::isnan(v)) lo = std::min(lo, v), hi = std::max(hi, v);
        }
        ASSERT_EQ(range.data<float>()[row * 2], lo) << "row " << row << " min";
        ASSERT_EQ(range.data<float>()[row * 2 + 1], hi) << "row " << row << " max";
      }
      if (c.shift != 0.f) {  // whole rows on one side of 0
        EXPECT_EQ(range.data<float>()[c.shift > 0 ? 0 : 1], 0.f);
      }
    }
  }
  if (!context()->features().storage_buffer_16bit) return;
  graph_ = std::make_unique<ComputeGraph>(context());
  ComputeGraph& g = *graph_;
  TensorRef x = g.add_input({2, 8}, DType::Float16, "x");
  TensorRef scale = g.add_constant(tensor_of(random_floats(8, 0.5f, 2.f), {8}, true));
  EXPECT_THROW(ops::layer_norm_with_range(g, x, scale), Error);
}

// x / sqrt(mean(x^2) + eps) * scale over the trailing dims; an offset that LayerNorm would
// subtract stays in (no mean is taken), rows longer than the workgroup.
TEST_F(OpsNorm, RmsNorm) {
  for (const auto& [xs, axis, offset] :
       {std::tuple{Shape{4, 33}, -1, 0.f}, std::tuple{Shape{2, 3, 1000}, 2, 3.f},
        std::tuple{Shape{2, 4500}, 1, 1.f}, std::tuple{Shape{2, 3, 5, 7}, 2, 0.f}}) {
    SCOPED_TRACE(shape_str(xs));
    const size_t a = axis < 0 ? axis + xs.size() : axis;
    const int64_t cols = product(xs, a, xs.size()), rows = product(xs, 0, a);
    auto xv = random_floats(numel(xs));
    for (float& v : xv) v += offset;
    auto sv = random_floats(cols);
    graph_ = std::make_unique<ComputeGraph>(context());
    ComputeGraph& g = *graph_;
    TensorRef x = g.add_input(xs, DType::Float32, "x");
    g.add_output(ops::rms_norm(g, x, constant(Shape(xs.begin() + a, xs.end()), sv), axis, 1e-6f),
                 "y");
    const auto want = normalize_rows(
        xv, rows, cols, 1e-6,
        [&](int64_t, int64_t i) {
          return std::pair<double, double>{sv[i], 0};
        },
        /*rms=*/true);
    expect_close(run_graph(g, xv), want, 1e-5);
  }
}

void OpsNorm::check_subgroup_rows(bool fp16, uint32_t knob, uint32_t per_group, int64_t rows,
                                  int64_t cols, int kind) {
  SCOPED_TRACE((fp16 ? "fp16" : "fp32") + std::string(" norm.subgroup ") + std::to_string(knob) +
               " rows a group " + std::to_string(per_group) + " rows " + std::to_string(rows) +
               " cols " + std::to_string(cols) + " kind " + std::to_string(kind));
  const float offset = kind == 1 ? 50.f : 1.f;
  std::vector<float> xv = random_floats(rows * cols, -2.f, 2.f);
  for (float& v : xv) v += offset;
  xv = stored(xv, fp16);
  const std::vector<float> sv = stored(random_floats(cols, 0.5f, 2.f), fp16);
  const std::vector<float> bv = stored(random_floats(cols), fp16);
  GraphOptions go;
  auto tuning = std::make_shared<ops::Tuning>();
  tuning->knobs["norm.subgroup"] = knob;
  tuning->knobs["norm.subgroup_rows"] = per_group;
  go.tuning = tuning;
  go.profile = true;  // node labels: which kernel ran
  ComputeGraph g(context(), go);
  TensorRef x = g.add_input({rows, cols}, fp16 ? DType::Float16 : DType::Float32, "x");
  TensorRef scale = g.add_constant(tensor_of(sv, {cols}, fp16));
  std::optional<TensorRef> bias;
  if (kind == 0) bias = g.add_constant(tensor_of(bv, {cols}, fp16));
  g.add_output(kind == 2 ? ops::rms_norm(g, x, scale, -1, 1e-5f)
                         : ops::layer_norm(g, x, scale, bias, -1, 1e-5f),
               "y");
  const HostTensor y = run_poisoned(g, {tensor_of(xv, {rows, cols}, fp16)}, fp16);
  std::vector<float> got(y.numel());
  for (int64_t i = 0; i < y.numel(); ++i)
    got[i] = fp16 ? half_to_float(y.data<uint16_t>()[i]) : y.data<float>()[i];
  const auto want = normalize_rows(
      xv, rows, cols, 1e-5,
      [&](int64_t, int64_t i) {
        return std::pair<double, double>{sv[i], kind == 0 ? bv[i] : 0};
      },
      /*rms=*/kind == 2);
  // fp32 1e-4 as LayerNorm's: rows around 50 round their sums.
  expect_close(got, want, fp16 ? 2e-3 : 1e-4);
  ASSERT_EQ(g.node_times().size(), 1u);
  EXPECT_NE(g.node_times()[0].label.find("(subgroup rows)"), std::string::npos)
      << g.node_times()[0].label;
}

// Both paths of norm_subgroup.comp, float32 and float16, 1..3 rows a workgroup over 13 rows
// (a partial last workgroup); rows of 7 and 33 columns (element loads, shorter than a lane's
// group), 8 x subgroup size + 3 (element loads, two groups a lane and part of a third), 64 and
// 100 (four-column loads, groups past the row) and the longest row the kernel takes (8 groups
// a lane); 131073 rows of 4, one a workgroup (a 2-D grid of workgroups).
TEST_F(OpsNorm, SubgroupRowsAgainstFp64) {
  const auto& f = context()->features();
  // norm.cpp's subgroup_rows: subgroup sums, subgroups of 4..128.
  if (!f.subgroup_arithmetic || f.subgroup_size < 4 || f.subgroup_size > 128)
    GTEST_SKIP() << "no subgroup sums of 4..128 lanes";
  const int64_t width = f.subgroup_size;
  for (bool fp16 : {false, true}) {
    if (fp16 && !f.storage_buffer_16bit) continue;
    for (uint32_t knob : {1u, 2u})
      for (uint32_t per_group : {1u, 2u, 3u})
        for (int64_t cols :
             {int64_t{7}, int64_t{33}, 8 * width + 3, int64_t{64}, int64_t{100}, 32 * width})
          for (int kind = 0; kind < 3; ++kind)
            check_subgroup_rows(fp16, knob, per_group, 13, cols, kind);
  }
  for (uint32_t knob : {1u, 2u}) check_subgroup_rows(false, knob, 1, 131073, 4, 0);
}

TEST_F(OpsNorm, InstanceNorm) {
  for (const Shape& xs : {Shape{2, 3, 5, 6}, Shape{1, 4, 17}, Shape{1, 2, 70, 70}}) {
    SCOPED_TRACE(shape_str(xs));
    int64_t C = xs[1], spatial = product(xs, 2, xs.size());
    auto xv = random_floats(numel(xs)), sv = random_floats(C), bv = random_floats(C);
    graph_ = std::make_unique<ComputeGraph>(context());
    ComputeGraph& g = *graph_;
    TensorRef x = g.add_input(xs, DType::Float32, "x");
    TensorRef y = ops::instance_norm(g, x, constant({C}, sv), constant({C}, bv), 1e-5f);
    g.add_output(y, "y");
    auto want = normalize_rows(xv, xs[0] * C, spatial, 1e-5, [&](int64_t row, int64_t) {
      return std::pair<double, double>{sv[row % C], bv[row % C]};
    });
    expect_close(run_graph(g, xv), want, 1e-4);
  }
}

TEST_F(OpsNorm, GroupNorm) {
  const std::pair<Shape, int64_t> cases[] = {
      {{2, 6, 4, 5}, 3}, {{2, 6, 4, 5}, 1}, {{1, 6, 3, 3}, 6}, {{3, 8}, 2}};
  for (const auto& [xs, groups] : cases) {
    SCOPED_TRACE(shape_str(xs) + " groups " + std::to_string(groups));
    int64_t C = xs[1], spatial = product(xs, 2, xs.size()), cpg = C / groups;
    auto xv = random_floats(numel(xs)), sv = random_floats(C), bv = random_floats(C);
    graph_ = std::make_unique<ComputeGraph>(context());
    ComputeGraph& g = *graph_;
    TensorRef x = g.add_input(xs, DType::Float32, "x");
    TensorRef y = ops::group_norm(g, x, constant({C}, sv), constant({C}, bv), groups, 1e-5f);
    g.add_output(y, "y");
    auto want = normalize_rows(xv, xs[0] * groups, cpg * spatial, 1e-5,
                               [&, groups = groups](int64_t row, int64_t col) {
                                 int64_t c = row % groups * cpg + col / spatial;
                                 return std::pair<double, double>{sv[c], bv[c]};
                               });
    expect_close(run_graph(g, xv), want, 1e-4);
  }
}

class OpsNormErrors : public OpErrorTest {};

TEST_F(OpsNormErrors, BadShapesAndParams) {
  auto x = input({2, 4, 3, 3});
  auto c4 = input({4}), c3 = input({3});
  const auto bad = ErrorKind::InvalidArgument;
  expect_error(bad, "batch_norm", "mean must be [4]",
               [&] { ops::batch_norm_inference(g, x, c4, c4, c3, c4); });
  expect_error(bad, "batch_norm", "input must be [N, C, ...]",
               [&] { ops::batch_norm_inference(g, input({4}), c4, c4, c4, c4); });
  expect_error(bad, "layer_norm", "axis 4 out of range", [&] {
    ops::layer_norm(g, x, input({3, 3}), std::nullopt, 4);
  });
  expect_error(bad, "layer_norm", "scale [4, 1, 1] does not broadcast", [&] {
    ops::layer_norm(g, x, input({4, 1, 1}), std::nullopt, 2);
  });
  expect_error(bad, "layer_norm", "bias [2, 3] does not broadcast", [&] {
    ops::layer_norm(g, x, input({4, 3, 3}), input({2, 3}), 1);
  });
  expect_error(ErrorKind::Unsupported, "layer_norm", "broadcasts over dims in the middle", [&] {
    ops::layer_norm(g, x, input({4, 1, 3}), std::nullopt, 1);
  });
  expect_error(bad, "layer_norm", "has no rows to take the range of", [&] {
    ops::layer_norm_with_range(g, input({0, 3}), input({3}));
  });
  expect_error(bad, "instance_norm", "input must be [N, C, D1, ...]", [&] {
    ops::instance_norm(g, input({2, 4}), c4, c4);
  });
  expect_error(bad, "instance_norm", "scale must be [4]",
               [&] { ops::instance_norm(g, x, c3, c4); });
  expect_error(bad, "group_norm", "groups 3 must divide",
               [&] { ops::group_norm(g, x, c4, c4, 3); });
  expect_error(bad, "group_norm", "bias must be [4]", [&] { ops::group_norm(g, x, c4, c3, 2); });
}

}  // namespace
}  // namespace vkgraph::testing

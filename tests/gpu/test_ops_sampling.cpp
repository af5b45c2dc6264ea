// grid_sample and roi_align against double-precision CPU references, on random grids that
// reach past the image (where the padding modes differ), NaN coordinates, and RoiAlign's
// adaptive sampling and batch-index rules.
#include <cmath>
#include <limits>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsSampling : public GpuTest {};

double reflect(double c, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  const double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  c = std::fabs(c - lo);
  const double flips = std::floor(c / span), extra = c - flips * span;
  return std::fmod(flips, 2) == 0 ? extra + lo : span - extra + lo;
}

// Bilinear grid_sample of one plane, PyTorch's rules.
double ref_bilinear(const float* plane, int64_t h, int64_t w, double gx, double gy,
                    ops::GridSamplePadding pad, bool align) {
  if (std::isnan(gx) || std::isnan(gy)) return 0;
  auto unnorm = [&](double g, int64_t size) {
    return align ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
  };
  auto fix = [&](double c, int64_t size) {
    if (pad == ops::GridSamplePadding::Border) return std::clamp(c, 0.0, double(size - 1));
    if (pad == ops::GridSamplePadding::Reflection) {
      c = align ? reflect(c, 0, 2.0 * (size - 1)) : reflect(c, -1, 2.0 * size - 1);
      return std::clamp(c, 0.0, double(size - 1));
    }
    return c;
  };
  const double x = fix(unnorm(gx, w), w), y = fix(unnorm(gy, h), h);
  const double fx = std::floor(x), fy = std::floor(y), tx = x - fx, ty = y - fy;
  auto at = [&](int64_t yy, int64_t xx) {
    return yy < 0 || yy >= h || xx < 0 || xx >= w ? 0.0 : double(plane[yy * w + xx]);
  };
  const int64_t x0 = int64_t(fx), y0 = int64_t(fy);
  return (1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x0 + 1)) +
         ty * ((1 - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1));
}

TEST_F(OpsSampling, GridSampleBilinearPaddings) {
  const int64_t n = 2, c = 3, h = 5, w = 7, ho = 4, wo = 6;
  auto x = random_tensor(rng, DType::Float32, {n, c, h, w});
  auto grid = HostTensor::from(DType::Float32, {n, ho, wo, 2},
                               random_floats(static_cast<size_t>(n * ho * wo * 2), -1.6f, 1.6f));
  grid.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  for (auto pad : {ops::GridSamplePadding::Zeros, ops::GridSamplePadding::Border,
                   ops::GridSamplePadding::Reflection})
    for (bool align : {false, true}) {
      SCOPED_TRACE("padding " + std::to_string(int(pad)) + " align " + std::to_string(align));
      ops::GridSampleOptions o;
      o.padding = pad;
      o.align_corners = align;
      auto y = run_one({x, grid}, [&](ComputeGraph& g, auto in) {
        return ops::grid_sample(g, in[0], in[1], o);
      });
      HostTensor want(DType::Float32, {n, c, ho, wo});
      for (int64_t i = 0; i < want.numel(); ++i) {
        const int64_t p = i % (ho * wo), b = i / (c * ho * wo), ch = (i / (ho * wo)) % c;
        const float* g = grid.data<float>() + (b * ho * wo + p) * 2;
        want.data<float>()[i] = static_cast<float>(
            ref_bilinear(x.data<float>() + (b * c + ch) * h * w, h, w, g[0], g[1], pad, align));
      }
      expect_near(y, want, 1e-5f);
    }
}

TEST_F(OpsSampling, GridSampleErrors) {
  ComputeGraph g(context());
  expect_error(
      [&] {
        ops::grid_sample(g, g.add_input({1, 2, 3, 3}, DType::Float32, "x"),
                         g.add_input({1, 2, 2, 3}, DType::Float32, "grid"));
      },
      ErrorKind::InvalidArgument, {"grid_sample:", "[N, Ho, Wo, 2]"});
}

// RoiAlign average of one output element, onnxruntime's rules, half_pixel coordinates.
double ref_roi(const float* plane, int64_t h, int64_t w, const float* roi, int64_t oh, int64_t ow,
               int64_t ph, int64_t pw, double scale, int64_t ratio) {
  const double x1 = roi[0] * scale - 0.5, y1 = roi[1] * scale - 0.5;
  const double rw = roi[2] * scale - 0.5 - x1, rh = roi[3] * scale - 0.5 - y1;
  const double bh = rh / oh, bw = rw / ow;
  const int64_t gh = ratio > 0 ? ratio : int64_t(std::ceil(rh / oh));
  const int64_t gw = ratio > 0 ? ratio : int64_t(std::ceil(rw / ow));
  double sum = 0;
  for (int64_t iy = 0; iy < gh; ++iy)
    for (int64_t ix = 0; ix < gw; ++ix) {
      double y = y1 + ph * bh + (iy + 0.5) * bh / gh, x = x1 + pw * bw + (ix + 0.5) * bw / gw;
      if (y < -1 || y > h || x < -1 || x > w) continue;
      y = std::max(y, 0.0), x = std::max(x, 0.0);
      int64_t y0 = int64_t(y), x0 = int64_t(x), yb, xb;
      if (y0 >= h - 1)
        y0 = yb = h - 1, y = double(y0);
      else
        yb = y0 + 1;
      if (x0 >= w - 1)
        x0 = xb = w - 1, x = double(x0);
      else
        xb = x0 + 1;
      const double ly = y - y0, lx = x - x0;
      sum += (1 - ly) * (1 - lx) * plane[y0 * w + x0] + (1 - ly) * lx * plane[y0 * w + xb] +
             ly * (1 - lx) * plane[yb * w + x0] + ly * lx * plane[yb * w + xb];
    }
  return sum / std::max<int64_t>(gh * gw, 1);
}

TEST_F(OpsSampling, RoiAlignAdaptiveSampling) {
  const int64_t n = 2, c = 3, h = 9, w = 11, oh = 3, ow = 2, rois = 4;
  auto x = random_tensor(rng, DType::Float32, {n, c, h, w});
  // Boxes in image coordinates (scale 0.5), one hanging past the edge.
  auto boxes = HostTensor::from(
      DType::Float32, {rois, 4},
      std::vector<float>{0, 0, 20, 16, 3, 2, 9, 15, 10, 4, 26, 22, 1.5f, 7, 5.5f, 9.25f});
  auto batch = make_tensor<int64_t>(DType::Int64, {rois}, {1, 0, 1, 0});
  for (int64_t ratio : {0, 2}) {
    SCOPED_TRACE("sampling_ratio " + std::to_string(ratio));
    ops::RoiAlignOptions o;
    o.output_height = oh;
    o.output_width = ow;
    o.spatial_scale = 0.5f;
    o.sampling_ratio = ratio;
    auto y = run_one({x, boxes, batch}, [&](ComputeGraph& g, auto in) {
      return ops::roi_align(g, in[0], in[1], in[2], o);
    });
    HostTensor want(DType::Float32, {rois, c, oh, ow});
    for (int64_t i = 0; i < want.numel(); ++i) {
      const int64_t pw = i % ow, ph = (i / ow) % oh, ch = (i / (ow * oh)) % c,
                    r = i / (ow * oh * c);
      want.data<float>()[i] =
          static_cast<float>(ref_roi(x.data<float>() + (batch.as_int(r) * c + ch) * h * w, h, w,
                                     boxes.data<float>() + 4 * r, oh, ow, ph, pw, 0.5, ratio));
    }
    expect_near(y, want, 1e-5f);
  }
}

TEST_F(OpsSampling, RoiAlignBatchIndices) {
  ComputeGraph g(context());
  auto x = g.add_input({2, 1, 4, 4}, DType::Float32, "x");
  auto boxes = g.add_input({1, 4}, DType::Float32, "rois");
  auto bad = g.add_constant(HostTensor::from(DType::Int64, {1}, std::vector<int64_t>{2}));
  expect_error([&] { ops::roi_align(g, x, boxes, bad); }, ErrorKind::InvalidArgument,
               {"roi_align:", "batch index 2 out of range for 2 images"});
  // Computed out of range: zeros, nothing read outside the input.
  auto img = random_tensor(rng, DType::Float32, {2, 1, 4, 4});
  auto box = HostTensor::from(DType::Float32, {1, 4}, std::vector<float>{0, 0, 3, 3});
  auto idx = make_tensor<int32_t>(DType::Int32, {1}, {-1});
  auto y = run_one({img, box, idx}, [&](ComputeGraph& gr, auto in) {
    return ops::roi_align(gr, in[0], in[1], in[2]);
  });
  EXPECT_EQ(y.data<float>()[0], 0.f);
}

}  // namespace
}  // namespace vkgraph::testing

// Resize (NCHW) against a CPU reference that follows ONNX's formulas: in exact fractions for
// nearest when the scale is out / in (exact .5 ties such as align_corners 4 -> 7, and near-ties
// such as 513 -> 512, check the rounding modes), else in the same float arithmetic.
#include <array>
#include <cmath>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsResize : public GpuTest {};

using Coord = ops::ResizeCoordinates;
using Nearest = ops::ResizeNearest;

// roi_start, roi_end: tf_crop_and_resize's region on this axis.
float ref_coord(int64_t o, int64_t in, int64_t out, float scale, Coord mode, float roi_start = 0,
                float roi_end = 1) {
  float c = static_cast<float>(o);
  const float last = static_cast<float>(in - 1);
  switch (mode) {
    case Coord::TfCropAndResize:
      return out > 1 ? roi_start * last + c * (roi_end - roi_start) * last / float(out - 1)
                     : 0.5f * (roi_start + roi_end) * last;
    case Coord::TfHalfPixelForNn:
      return (c + 0.5f) / scale;
    case Coord::Asymmetric:
      return c / scale;
    case Coord::AlignCorners:
      return out > 1 ? c * static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f;
    case Coord::PytorchHalfPixel:
      if (out <= 1) return 0.f;
      [[fallthrough]];
    case Coord::HalfPixel:
      return (c + 0.5f) / scale - 0.5f;
  }
  return 0.f;
}

int64_t ref_nearest(float c, int64_t in, Nearest mode) {
  float r;
  switch (mode) {
    case Nearest::RoundPreferFloor:
      r = (c - std::floor(c) == 0.5f) ? std::floor(c) : std::round(c);
      break;
    case Nearest::RoundPreferCeil:
      r = (c - std::floor(c) == 0.5f) ? std::ceil(c) : std::round(c);
      break;
    case Nearest::Floor:
      r = std::floor(c);
      break;
    default:
      r = std::ceil(c);
      break;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1);
}

// The coordinate as the fraction num / den (den > 0), for a scale of exactly out / in.
std::pair<int64_t, int64_t> exact_coord(int64_t o, int64_t in, int64_t out, Coord mode) {
  switch (mode) {
    case Coord::Asymmetric:
      return {o * in, out};
    case Coord::AlignCorners:
      return out > 1 ? std::pair{o * (in - 1), out - 1} : std::pair<int64_t, int64_t>{0, 1};
    case Coord::PytorchHalfPixel:
      if (out <= 1) return {0, 1};
      [[fallthrough]];
    case Coord::HalfPixel:
      return {(2 * o + 1) * in - out, 2 * out};
    default:  // the tests take exact coordinates in the four modes above only
      break;
  }
  return {0, 1};
}

int64_t floor_frac(int64_t num, int64_t den) {
  return num >= 0 ? num / den : -((den - 1 - num) / den);
}

int64_t ref_nearest_exact(int64_t o, int64_t in, int64_t out, Coord coord, Nearest mode) {
  auto [num, den] = exact_coord(o, in, out, coord);
  int64_t r;
  switch (mode) {
    case Nearest::RoundPreferFloor:
      r = -floor_frac(den - 2 * num, 2 * den);  // ceil(x - 1/2)
      break;
    case Nearest::RoundPreferCeil:
      r = floor_frac(2 * num + den, 2 * den);  // floor(x + 1/2)
      break;
    case Nearest::Floor:
      r = floor_frac(num, den);
      break;
    default:
      r = -floor_frac(-num, den);
      break;
  }
  return std::clamp<int64_t>(r, 0, in - 1);
}

// tf_crop_and_resize, nearest (float32, int64) or linear (float32): the region mapped onto the
// output, the extrapolation value where a coordinate falls outside the image.
HostTensor ref_crop_and_resize(const HostTensor& x, const Shape& out, const ops::ResizeOptions& o) {
  const int64_t ih = x.shape[2], iw = x.shape[3];
  HostTensor y(x.dtype, out);
  for (int64_t i = 0; i < y.numel(); ++i) {
    auto c = unravel(i, out);
    float cy = ref_coord(c[2], ih, out[2], 0, Coord::TfCropAndResize, o.roi[0], o.roi[2]);
    float cx = ref_coord(c[3], iw, out[3], 0, Coord::TfCropAndResize, o.roi[1], o.roi[3]);
    auto at = [&](int64_t yy, int64_t xx) { return ravel({c[0], c[1], yy, xx}, x.shape); };
    const bool outside = cy < 0 || cy > float(ih - 1) || cx < 0 || cx > float(iw - 1);
    if (o.mode == ops::ResizeMode::Nearest) {
      const int64_t from = at(ref_nearest(cy, ih, o.nearest), ref_nearest(cx, iw, o.nearest));
      if (x.dtype == DType::Int64)
        y.data<int64_t>()[i] =
            outside ? static_cast<int64_t>(o.extrapolation_value) : x.data<int64_t>()[from];
      else
        y.data<float>()[i] =
            outside ? static_cast<float>(o.extrapolation_value) : x.data<float>()[from];
      continue;
    }
    if (outside) {  // linear
      y.data<float>()[i] = static_cast<float>(o.extrapolation_value);
      continue;
    }
    int64_t y0 = static_cast<int64_t>(cy), x0 = static_cast<int64_t>(cx);
    int64_t y1 = std::min(y0 + 1, ih - 1), x1 = std::min(x0 + 1, iw - 1);
    float ty = cy - y0, tx = cx - x0;
    const float* v = x.data<float>();
    float top = v[at(y0, x0)] * (1 - tx) + v[at(y0, x1)] * tx;
    float bottom = v[at(y1, x0)] * (1 - tx) + v[at(y1, x1)] * tx;
    y.data<float>()[i] = top * (1 - ty) + bottom * ty;
  }
  return y;
}

HostTensor ref_resize(const HostTensor& x, const Shape& out, const ops::ResizeOptions& o) {
  if (o.coordinates == Coord::TfCropAndResize) return ref_crop_and_resize(x, out, o);
  int64_t ih = x.shape[2], iw = x.shape[3], oh = out[2], ow = out[3];
  float sh = o.scale_h > 0 ? o.scale_h : static_cast<float>(static_cast<double>(oh) / ih);
  float sw = o.scale_w > 0 ? o.scale_w : static_cast<float>(static_cast<double>(ow) / iw);
  if (o.mode == ops::ResizeMode::Nearest)
    return map_elements(x, out, [&](const std::vector<int64_t>& c) {
      int64_t y = o.scale_h > 0
                      ? ref_nearest(ref_coord(c[2], ih, oh, sh, o.coordinates), ih, o.nearest)
                      : ref_nearest_exact(c[2], ih, oh, o.coordinates, o.nearest);
      int64_t xx = o.scale_w > 0
                       ? ref_nearest(ref_coord(c[3], iw, ow, sw, o.coordinates), iw, o.nearest)
                       : ref_nearest_exact(c[3], iw, ow, o.coordinates, o.nearest);
      return ravel({c[0], c[1], y, xx}, x.shape);
    });
  HostTensor y(DType::Float32, out);
  for (int64_t i = 0; i < y.numel(); ++i) {
    auto c = unravel(i, out);
    float cy = std::clamp(ref_coord(c[2], ih, oh, sh, o.coordinates), 0.f, float(ih - 1));
    float cx = std::clamp(ref_coord(c[3], iw, ow, sw, o.coordinates), 0.f, float(iw - 1));
    int64_t y0 = static_cast<int64_t>(cy), x0 = static_cast<int64_t>(cx);
    int64_t y1 = std::min(y0 + 1, ih - 1), x1 = std::min(x0 + 1, iw - 1);
    float ty = cy - y0, tx = cx - x0;
    auto at = [&](int64_t yy, int64_t xx) {
      return x.data<float>()[ravel({c[0], c[1], yy, xx}, x.shape)];
    };
    float top = at(y0, x0) * (1 - tx) + at(y0, x1) * tx;
    float bottom = at(y1, x0) * (1 - tx) + at(y1, x1) * tx;
    y.data<float>()[i] = top * (1 - ty) + bottom * ty;
  }
  return y;
}

TEST_F(OpsResize, NearestModes) {
  struct Case {
    Shape in, out;
    Coord coord;
    Nearest nearest;
    DType dtype;
  };
  const Case cases[] = {
      {{1, 2, 3, 4}, {1, 2, 6, 8}, Coord::Asymmetric, Nearest::Floor, DType::Float32},
      {{2, 1, 4, 4}, {2, 1, 7, 7}, Coord::AlignCorners, Nearest::RoundPreferFloor, DType::Int32},
      {{2, 1, 4, 4}, {2, 1, 7, 7}, Coord::AlignCorners, Nearest::RoundPreferCeil, DType::Int64},
      {{1, 3, 6, 5}, {1, 3, 3, 2}, Coord::HalfPixel, Nearest::RoundPreferFloor, DType::Bool},
      {{1, 1, 5, 3}, {1, 1, 3, 7}, Coord::PytorchHalfPixel, Nearest::Ceil, DType::Float32},
      {{1, 2, 3, 3}, {1, 2, 1, 5}, Coord::PytorchHalfPixel, Nearest::RoundPreferCeil, DType::Int32},
      // Near-ties float arithmetic gets wrong: 256.50098 must round up, 400.5006 too.
      {{1, 1, 2, 513}, {1, 1, 2, 512}, Coord::HalfPixel, Nearest::RoundPreferFloor, DType::Int32},
      {{1, 1, 801, 2}, {1, 1, 800, 3}, Coord::HalfPixel, Nearest::RoundPreferFloor, DType::Int32},
      {{1, 1, 3, 1001}, {1, 1, 2, 2000}, Coord::HalfPixel, Nearest::RoundPreferCeil, DType::Int32},
      {{1, 1, 401, 2}, {1, 1, 400, 2}, Coord::Asymmetric, Nearest::Floor, DType::Int32},
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(k++));
    ops::ResizeOptions o;
    o.coordinates = c.coord;
    o.nearest = c.nearest;
    auto x = random_tensor(rng, c.dtype, c.in);
    auto y =
        run_one({x}, [&](ComputeGraph& g, auto in) { return ops::resize(g, in[0], c.out, o); });
    expect_same(y, ref_resize(x, c.out, o));
  }
}

TEST_F(OpsResize, BilinearModes) {
  for (Coord coord :
       {Coord::HalfPixel, Coord::Asymmetric, Coord::AlignCorners, Coord::PytorchHalfPixel}) {
    for (auto [in, out] : {std::pair<Shape, Shape>{{1, 2, 4, 5}, {1, 2, 9, 13}},
                           std::pair<Shape, Shape>{{2, 1, 7, 6}, {2, 1, 3, 1}}}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(coord)) + " " + shape_str(out));
      ops::ResizeOptions o;
      o.mode = ops::ResizeMode::Linear;
      o.coordinates = coord;
      auto x = random_tensor(rng, DType::Float32, in);
      auto y = run_one(
          {x}, [&, out = out](ComputeGraph& g, auto i) { return ops::resize(g, i[0], out, o); });
      expect_near(y, ref_resize(x, out, o));
    }
  }
}

TEST_F(OpsResize, ExplicitScalesDriveTheCoordinates) {
  // ONNX: 3 * 1.5 -> 4 pixels, but coordinates use 1.5, not 4 / 3.
  ops::ResizeOptions o;
  o.mode = ops::ResizeMode::Linear;
  o.scale_h = 1.5f;
  o.scale_w = 1.5f;
  auto x = random_tensor(rng, DType::Float32, {1, 1, 3, 3});
  auto y = run_one({x}, [&](ComputeGraph& g, auto in) {
    return ops::resize(g, in[0], {1, 1, 4, 4}, o);
  });
  expect_near(y, ref_resize(x, {1, 1, 4, 4}, o));
}

// A region reaching past the image on three sides (and a single output row, which takes the
// region's centre): outputs outside read the extrapolation value, in float and int64.
TEST_F(OpsResize, TfCropAndResize) {
  struct Case {
    ops::ResizeMode mode;
    DType dtype;
    Shape in, out;
    std::array<float, 4> roi;
    double extrapolation;
  };
  const Case cases[] = {
      {ops::ResizeMode::Linear,
       DType::Float32,
       {2, 3, 5, 6},
       {2, 3, 7, 9},
       {-0.2f, 0.3f, 0.9f, 1.4f},
       10},
      {ops::ResizeMode::Linear,
       DType::Float32,
       {1, 2, 4, 4},
       {1, 2, 1, 5},
       {0.1f, -0.5f, 0.6f, 1.5f},
       -2.5},
      {ops::ResizeMode::Nearest,
       DType::Int64,
       {1, 2, 6, 5},
       {1, 2, 8, 4},
       {0.2f, -0.1f, 1.3f, 0.8f},
       -7},
      {ops::ResizeMode::Nearest,
       DType::Float32,
       {1, 1, 4, 7},
       {1, 1, 5, 5},
       {-0.4f, 0.1f, 0.7f, 1.2f},
       3},
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(k++));
    ops::ResizeOptions o;
    o.mode = c.mode;
    o.coordinates = Coord::TfCropAndResize;
    o.roi = c.roi;
    o.extrapolation_value = c.extrapolation;
    auto x = random_tensor(rng, c.dtype, c.in);
    auto y =
        run_one({x}, [&](ComputeGraph& g, auto in) { return ops::resize(g, in[0], c.out, o); });
    HostTensor want = ref_resize(x, c.out, o);
    if (c.dtype == DType::Int64)
      expect_same(y, want);
    else
      expect_near(y, want);
  }
}

TEST_F(OpsResize, Errors) {
  ComputeGraph g(context());
  auto x = g.add_input({1, 2, 3, 4}, DType::Float32, "x");
  auto i = g.add_input({1, 2, 3, 4}, DType::Int32, "i");
  auto v = g.add_input({2, 3, 4}, DType::Float32, "v");
  ops::ResizeOptions linear;
  linear.mode = ops::ResizeMode::Linear;
  expect_error(
      [&] {
        ops::resize(g, x, {1, 3, 6, 8});
      },
      ErrorKind::InvalidArgument,
      "resize: [1, 2, 3, 4] -> [1, 3, 6, 8] is not an NCHW resize of H and W");
  expect_error(
      [&] {
        ops::resize(g, v, {2, 6, 8});
      },
      ErrorKind::InvalidArgument, "not an NCHW resize");
  expect_error(
      [&] {
        ops::resize(g, i, {1, 2, 6, 8}, linear);
      },
      ErrorKind::Unsupported,
      "resize (linear): dtype int32 not supported (accepts float32, float16)");
  ops::ResizeOptions negative;
  negative.scale_h = -2.f;
  expect_error(
      [&] {
        ops::resize(g, x, {1, 2, 6, 8}, negative);
      },
      ErrorKind::InvalidArgument, "resize: negative scale");
}

}  // namespace
}  // namespace vkgraph::testing

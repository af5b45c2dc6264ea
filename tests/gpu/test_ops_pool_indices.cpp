// max_pool_with_indices against a CPU reference: padding, strides, dilation, 1-D to 3-D,
// ties (first maximum), NaN (propagates, its index reported), and flat indices across N and C.
#include <cmath>
#include <limits>

#include "shape_test_util.h"
#include "vkgraph/ops/max_pool_indices.h"

namespace vkgraph::testing {
namespace {

class OpsPoolIndices : public GpuTest {};

TEST_F(OpsPoolIndices, MatchesReference) {
  struct Case {
    Shape x;
    ops::Pool3dParams p;
  };
  ops::Pool3dParams p2;
  p2.kernel = {1, 3, 2};
  p2.strides = {1, 2, 1};
  p2.pads = {0, 1, 0, 0, 1, 1};
  ops::Pool3dParams p1;
  p1.kernel = {1, 1, 3};
  p1.dilations = {1, 1, 2};
  ops::Pool3dParams p3;
  p3.kernel = {2, 2, 2};
  p3.strides = {2, 1, 2};
  const Case cases[] = {{{2, 3, 6, 5}, p2}, {{2, 2, 9}, p1}, {{1, 2, 4, 3, 4}, p3}};
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(k++));
    HostTensor x = random_tensor(rng, DType::Float32, c.x);
    for (int64_t i = 0; i < x.numel(); i += 5) x.data<float>()[i] = 0.5f;  // ties
    x.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
    auto out = run_ops({x}, [&](ComputeGraph& g, auto in) {
      auto r = ops::max_pool_with_indices(g, in[0], c.p);
      return std::vector<TensorRef>{r.values, r.indices};
    });
    // Reference over the input lifted to [N, C, D, H, W].
    const size_t spatial = c.x.size() - 2;
    std::array<int64_t, 3> in{1, 1, 1};
    std::copy(c.x.begin() + 2, c.x.end(), in.end() - spatial);
    std::array<int64_t, 3> o{};
    for (int d = 0; d < 3; ++d)
      o[d] = (in[d] + c.p.pads[d] + c.p.pads[d + 3] - c.p.dilations[d] * (c.p.kernel[d] - 1) - 1) /
                 c.p.strides[d] +
             1;
    const int64_t planes = c.x[0] * c.x[1], in_size = in[0] * in[1] * in[2];
    HostTensor vals(DType::Float32, out[0].shape), idx(DType::Int64, out[0].shape);
    int64_t at = 0;
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t od = 0; od < o[0]; ++od)
        for (int64_t oh = 0; oh < o[1]; ++oh)
          for (int64_t ow = 0; ow < o[2]; ++ow, ++at) {
            float best = -std::numeric_limits<float>::infinity();
            int64_t where = -1;
            for (int64_t kd = 0; kd < c.p.kernel[0]; ++kd)
              for (int64_t kh = 0; kh < c.p.kernel[1]; ++kh)
                for (int64_t kw = 0; kw < c.p.kernel[2]; ++kw) {
                  int64_t d = od * c.p.strides[0] - c.p.pads[0] + kd * c.p.dilations[0];
                  int64_t h = oh * c.p.strides[1] - c.p.pads[1] + kh * c.p.dilations[1];
                  int64_t w = ow * c.p.strides[2] - c.p.pads[2] + kw * c.p.dilations[2];
                  if (d < 0 || d >= in[0] || h < 0 || h >= in[1] || w < 0 || w >= in[2]) continue;
                  int64_t flat = pl * in_size + (d * in[1] + h) * in[2] + w;
                  float v = x.data<float>()[flat];
                  if (where < 0 || v > best || (std::isnan(v) && !std::isnan(best)))
                    best = v, where = flat;
                }
            vals.data<float>()[at] = best;
            idx.data<int64_t>()[at] = where;
          }
    expect_near(out[0], vals, 0.f);
    expect_same(out[1], idx);
  }
}

}  // namespace
}  // namespace vkgraph::testing

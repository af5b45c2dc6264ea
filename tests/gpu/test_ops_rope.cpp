// ops::rope (src/ops/rope.comp) against a float64 reference on random data: x contiguous, read
// through the heads' transposed view ([B, S, H, D] as [B, H, S, D]) and at an offset inside a
// packed tensor; cos and sin of [S, D] and [B, 1, S, D] broadcast; head dims 2 to 128; float32
// and float16 storage. Outputs are poisoned by a first run on NaN inputs. Bad shapes and views
// are errors naming the problem.
#include <cmath>

#include "float_test_util.h"
#include "shape_test_util.h"
#include "vkgraph/ops/rope.h"

namespace vkgraph::testing {
namespace {

struct Case {
  int64_t b = 1, h = 3, s = 5, d = 8;
  enum Layout { kContiguous, kTransposed, kPacked } layout = kContiguous;
  bool per_batch = false;  // cos, sin [B, 1, S, D] (else [S, D])
  bool fp16 = false;
  std::string name() const {
    return "b" + std::to_string(b) + " h" + std::to_string(h) + " s" + std::to_string(s) + " d" +
           std::to_string(d) + " layout" + std::to_string(layout) +
           (per_batch ? " per-batch" : "") + (fp16 ? " fp16" : "");
  }
};

class RopeTest : public GpuTest {
 protected:
  void check(const Case& c) {
    SCOPED_TRACE(c.name());
    if (c.fp16 && !context()->features().storage_buffer_16bit) GTEST_SKIP();
    const int64_t half = c.d / 2, n = c.b * c.h * c.s * c.d;
    // x as [B, H, S, D], then stored as the layout says.
    const std::vector<float> x = stored(random_floats(n, -2.f, 2.f), c.fp16);
    const Shape table_shape = c.per_batch ? Shape{c.b, 1, c.s, c.d} : Shape{c.s, c.d};
    const int64_t tn = numel(table_shape);
    const std::vector<float> cs = stored(random_floats(tn), c.fp16),
                             sn = stored(random_floats(tn), c.fp16);
    const Shape bhsd{c.b, c.h, c.s, c.d};
    ops::StridedView view{{}, bhsd, {c.h * c.s * c.d, c.s * c.d, c.d, 1}, 0};
    Shape stored_shape = bhsd;
    std::vector<float> data = x;
    if (c.layout == Case::kTransposed) {
      stored_shape = {c.b, c.s, c.h, c.d};
      view.strides = {c.s * c.h * c.d, c.d, c.h * c.d, 1};
    } else if (c.layout == Case::kPacked) {
      // [B, S, 3, H, D] with x the second of three (K of a packed QKV projection).
      stored_shape = {c.b, c.s, 3, c.h, c.d};
      view.strides = {3 * c.s * c.h * c.d, c.d, 3 * c.h * c.d, 1};
      view.offset = c.h * c.d;
      data.assign(numel(stored_shape), 1e4f);  // read past the view and it shows
    }
    if (c.layout != Case::kContiguous)
      for (int64_t i = 0; i < n; ++i) {
        const std::vector<int64_t> at = unravel(i, bhsd);
        int64_t o = view.offset;
        for (size_t k = 0; k < 4; ++k) o += at[k] * view.strides[k];
        data[o] = x[i];
      }
    const std::vector<HostTensor> inputs{tensor_of(data, stored_shape, c.fp16),
                                         tensor_of(cs, table_shape, c.fp16),
                                         tensor_of(sn, table_shape, c.fp16)};
    ComputeGraph g(context());
    std::vector<TensorRef> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(g.add_input(inputs[i].shape, inputs[i].dtype, "in" + std::to_string(i)));
    view.tensor = in[0];
    TensorRef y = ops::rope(g, view, in[1], in[2]);
    if (c.fp16) y = ops::cast(g, y, DType::Float32);
    g.add_output(y, "y");
    HostTensor got = run_poisoned(g, inputs, c.fp16);
    ASSERT_EQ(shape_str(got.shape), shape_str(bhsd));
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<int64_t> at = unravel(i, bhsd);
      const int64_t j = at[3];
      const int64_t t = c.per_batch ? (at[0] * c.s + at[2]) * c.d + j : at[2] * c.d + j;
      const double rot = j < half ? -double(x[i + half]) : double(x[i - half]);
      const double want = double(x[i]) * cs[t] + rot * sn[t];
      const double err = std::abs(got.data<float>()[i] - want) / (1.0 + std::abs(want));
      worst = std::max(worst, std::isnan(got.data<float>()[i]) ? INFINITY : err);
    }
    EXPECT_LE(worst, c.fp16 ? 2e-3 : 1e-6);
  }
};

TEST_F(RopeTest, LayoutsHeadDimsAndTables) {
  for (bool fp16 : {false, true})
    for (auto layout : {Case::kContiguous, Case::kTransposed, Case::kPacked})
      for (int64_t d : {2, 8, 64, 128})
        for (bool per_batch : {false, true}) {
          Case c;
          c.d = d;
          c.b = per_batch ? 2 : 1;
          c.layout = layout;
          c.per_batch = per_batch;
          c.fp16 = fp16;
          check(c);
        }
}

TEST_F(RopeTest, ManyPairs) {
  Case c;
  c.b = 1, c.h = 8, c.s = 130, c.d = 64, c.layout = Case::kTransposed;
  check(c);
}

TEST_F(RopeTest, BadShapesAreErrors) {
  ComputeGraph g(context());
  TensorRef x = g.add_input({1, 2, 3, 5}, DType::Float32, "x");
  TensorRef t = g.add_input({3, 5}, DType::Float32, "t");
  EXPECT_THROW(ops::rope(g, {x, {1, 2, 3, 5}, {30, 15, 5, 1}, 0}, t, t), Error);  // d odd
  TensorRef x4 = g.add_input({1, 2, 3, 4}, DType::Float32, "x4");
  TensorRef wide = g.add_input({2, 3, 4}, DType::Float32, "wide");
  TensorRef t4 = g.add_input({3, 4}, DType::Float32, "t4");
  // cos of [2, 3, 4] against x [1, 2, 3, 4] broadcasts to it; [2, 2, 3, 4] would grow it.
  TensorRef grows = g.add_input({2, 2, 3, 4}, DType::Float32, "grows");
  EXPECT_NO_THROW(ops::rope(g, {x4, {1, 2, 3, 4}, {24, 12, 4, 1}, 0}, wide, t4));
  EXPECT_THROW(ops::rope(g, {x4, {1, 2, 3, 4}, {24, 12, 4, 1}, 0}, grows, t4), Error);
  // A view past the tensor's end, and a dtype mismatch.
  EXPECT_THROW(ops::rope(g, {x4, {1, 2, 3, 4}, {24, 12, 4, 1}, 1}, t4, t4), Error);
  TensorRef h4 = g.add_input({3, 4}, DType::Float16, "h4");
  if (context()->features().storage_buffer_16bit) {
    EXPECT_THROW(ops::rope(g, {x4, {1, 2, 3, 4}, {24, 12, 4, 1}, 0}, t4, h4), Error);
  }
}

}  // namespace
}  // namespace vkgraph::testing

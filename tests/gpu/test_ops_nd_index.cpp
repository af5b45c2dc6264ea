// gather_nd and scatter_nd against CPU references: batch_dims, partial and full tuples,
// negative coordinates, Int32/Int64 indices, duplicate tuples under every reduction, and the
// out-of-range rules (constant: an error; computed: zero / skipped).
#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsNdIndex : public GpuTest {
 protected:
  // [..., k] coordinates for data dims starting at `first`, in [-dim, dim).
  HostTensor random_tuples(DType dtype, Shape shape, const Shape& data, int64_t first) {
    HostTensor t(dtype, std::move(shape));
    const int64_t k = t.shape.back();
    for (int64_t i = 0; i < t.numel(); ++i) {
      int64_t dim = data[first + i % k];
      int64_t v = std::uniform_int_distribution<int64_t>(-dim, dim - 1)(rng);
      if (dtype == DType::Int32)
        t.data<int32_t>()[i] = static_cast<int32_t>(v);
      else
        t.data<int64_t>()[i] = v;
    }
    return t;
  }
};

// Linear offset in data of tuple t's slice (batch coordinates given), or -1 when out of range.
int64_t tuple_offset(const HostTensor& idx, int64_t t, const Shape& data, int64_t batch_dims,
                     const std::vector<int64_t>& batch) {
  const int64_t k = idx.shape.back();
  std::vector<int64_t> c(batch.begin(), batch.end());
  for (int64_t j = 0; j < k; ++j) {
    int64_t v = idx.as_int(t * k + j), dim = data[batch_dims + j];
    if (v < 0) v += dim;
    if (v < 0 || v >= dim) return -1;
    c.push_back(v);
  }
  while (c.size() < data.size()) c.push_back(0);
  return ravel(c, data);
}

HostTensor ref_gather_nd(const HostTensor& data, const HostTensor& idx, int64_t b) {
  const int64_t k = idx.shape.back();
  Shape out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), data.shape.begin() + b + k, data.shape.end());
  const int64_t slice = numel(Shape(data.shape.begin() + b + k, data.shape.end()));
  const int64_t tuples = idx.numel() / k;
  const int64_t per_batch = tuples / numel(Shape(idx.shape.begin(), idx.shape.begin() + b));
  return map_elements(data, out, [&](const std::vector<int64_t>& c) {
    const int64_t i = ravel(c, out), t = i / slice;
    std::vector<int64_t> batch =
        unravel(t / per_batch, Shape(idx.shape.begin(), idx.shape.begin() + b));
    int64_t o = tuple_offset(idx, t, data.shape, b, batch);
    return o < 0 ? int64_t{-1} : o + i % slice;
  });
}

TEST_F(OpsNdIndex, GatherNd) {
  struct Case {
    Shape data, idx;
    int64_t batch_dims;
    DType dtype, idx_dtype;
  };
  const Case cases[] = {
      {{4, 5}, {3, 2}, 0, DType::Float32, DType::Int64},      // full tuples: scalars
      {{4, 5, 6}, {2, 3, 1}, 0, DType::Int32, DType::Int32},  // partial: rows
      {{2, 3, 4, 5}, {2, 6, 2}, 1, DType::Int64, DType::Int64},
      {{3, 2, 7}, {3, 2, 1}, 2, DType::Bool, DType::Int32},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(n++));
    auto data = random_tensor(rng, c.dtype, c.data);
    auto idx = random_tuples(c.idx_dtype, c.idx, c.data, c.batch_dims);
    auto y = run_one({data, idx}, [&](ComputeGraph& g, auto in) {
      return ops::gather_nd(g, in[0], in[1], c.batch_dims);
    });
    expect_same(y, ref_gather_nd(data, idx, c.batch_dims));
  }
}

TEST_F(OpsNdIndex, GatherNdComputedOutOfRangeReadsZero) {
  auto data = random_tensor(rng, DType::Float32, {3, 4});
  auto idx = make_tensor<int64_t>(DType::Int64, {3, 1}, {2, 3, -4});
  auto y = run_one({data, idx},
                   [&](ComputeGraph& g, auto in) { return ops::gather_nd(g, in[0], in[1]); });
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(y.data<float>()[j], data.data<float>()[8 + j]);
    EXPECT_EQ(y.data<float>()[4 + j], 0.f);
    EXPECT_EQ(y.data<float>()[8 + j], 0.f);
  }
}

template <typename T>
HostTensor ref_scatter_nd(const HostTensor& data, const HostTensor& idx, const HostTensor& upd,
                          ops::ScatterReduction r) {
  HostTensor out = data;
  const int64_t k = idx.shape.back(), tuples = idx.numel() / k;
  const int64_t slice = numel(Shape(data.shape.begin() + k, data.shape.end()));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t o = tuple_offset(idx, t, data.shape, 0, {});
    if (o < 0) continue;
    for (int64_t s = 0; s < slice; ++s) {
      T& d = out.data<T>()[o + s];
      T u = upd.data<T>()[t * slice + s];
      switch (r) {
        case ops::ScatterReduction::None:
          d = u;
          break;
        case ops::ScatterReduction::Add:
          d = d + u;
          break;
        case ops::ScatterReduction::Mul:
          d = d * u;
          break;
        case ops::ScatterReduction::Max:
          d = std::max(d, u);
          break;
        case ops::ScatterReduction::Min:
          d = std::min(d, u);
          break;
      }
    }
  }
  return out;
}

TEST_F(OpsNdIndex, ScatterNdWithoutReduction) {
  // Distinct tuples (duplicates are undefined without a reduction), negative ones included.
  auto data = random_tensor(rng, DType::Int64, {4, 3, 5});
  auto idx = make_tensor<int32_t>(DType::Int32, {3, 2}, {0, 1, -1, -3, 2, 0});
  auto upd = random_tensor(rng, DType::Int64, {3, 5});
  auto y = run_one({data, idx, upd}, [&](ComputeGraph& g, auto in) {
    return ops::scatter_nd(g, in[0], in[1], in[2]);
  });
  expect_same(y, ref_scatter_nd<int64_t>(data, idx, upd, ops::ScatterReduction::None));
}

TEST_F(OpsNdIndex, ScatterNdReductionsApplyDuplicatesInOrder) {
  auto data = random_tensor(rng, DType::Float32, {5, 6});
  auto idx = make_tensor<int64_t>(DType::Int64, {6, 1}, {1, 3, 1, -4, 0, 1});
  auto upd = random_tensor(rng, DType::Float32, {6, 6});
  for (auto r : {ops::ScatterReduction::Add, ops::ScatterReduction::Mul, ops::ScatterReduction::Max,
                 ops::ScatterReduction::Min}) {
    SCOPED_TRACE("reduction " + std::to_string(static_cast<int>(r)));
    auto y = run_one({data, idx, upd}, [&](ComputeGraph& g, auto in) {
      return ops::scatter_nd(g, in[0], in[1], in[2], r);
    });
    expect_near(y, ref_scatter_nd<float>(data, idx, upd, r), 1e-6f);
  }
  auto di = random_tensor(rng, DType::Int32, {5, 6});
  auto ui = random_tensor(rng, DType::Int32, {6, 6});
  auto y = run_one({di, idx, ui}, [&](ComputeGraph& g, auto in) {
    return ops::scatter_nd(g, in[0], in[1], in[2], ops::ScatterReduction::Add);
  });
  expect_same(y, ref_scatter_nd<int32_t>(di, idx, ui, ops::ScatterReduction::Add));
}

TEST_F(OpsNdIndex, ScatterNdComputedOutOfRangeIsSkipped) {
  auto data = random_tensor(rng, DType::Float32, {3, 2});
  auto idx = make_tensor<int64_t>(DType::Int64, {2, 1}, {5, 1});
  auto upd = random_tensor(rng, DType::Float32, {2, 2});
  auto y = run_one({data, idx, upd}, [&](ComputeGraph& g, auto in) {
    return ops::scatter_nd(g, in[0], in[1], in[2]);
  });
  expect_same(y, ref_scatter_nd<float>(data, idx, upd, ops::ScatterReduction::None));
}

TEST_F(OpsNdIndex, Errors) {
  ComputeGraph g(context());
  auto data = g.add_input({3, 4}, DType::Float32, "d");
  auto bad = g.add_constant(HostTensor::from(DType::Int64, {1, 2}, std::vector<int64_t>{1, 4}));
  expect_error([&] { ops::gather_nd(g, data, bad); }, ErrorKind::InvalidArgument,
               {"gather_nd:", "index 4 out of range for dim 1 of size 4"});
  auto too_long = g.add_input({2, 3}, DType::Int64, "i");
  expect_error([&] { ops::gather_nd(g, data, too_long); }, ErrorKind::InvalidArgument,
               {"gather_nd:", "address 3 dims"});
  auto idx = g.add_input({2, 1}, DType::Int64, "j");
  expect_error(
      [&] {
        ops::scatter_nd(g, data, idx, g.add_input({2, 3}, DType::Float32, "u"));
      },
      ErrorKind::InvalidArgument, {"scatter_nd:", "must be [2, 4]"});
}

}  // namespace
}  // namespace vkgraph::testing

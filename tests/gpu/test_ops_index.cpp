// Gather, GatherElements, ScatterElements, TopK and CumSum against CPU references.
#include <algorithm>
#include <limits>
#include <numeric>
#include <type_traits>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsIndex : public GpuTest {
 protected:
  // Indices in [-dim, dim) (negative ones count from the end) of `dtype` (Int32 or Int64).
  HostTensor random_indices(DType dtype, Shape shape, int64_t dim) {
    HostTensor t(dtype, std::move(shape));
    std::uniform_int_distribution<int64_t> d(-dim, dim - 1);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dtype == DType::Int32)
        t.data<int32_t>()[i] = static_cast<int32_t>(d(rng));
      else
        t.data<int64_t>()[i] = d(rng);
    }
    return t;
  }
};

int64_t norm_index(int64_t k, int64_t dim) {
  return k < 0 ? k + dim : k;
}

HostTensor ref_gather(const HostTensor& data, const HostTensor& idx, int axis) {
  Shape out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  size_t ir = idx.shape.size();
  return map_elements(data, out, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> ic(c.begin() + axis, c.begin() + axis + ir);
    std::vector<int64_t> dc(c.begin(), c.begin() + axis);
    dc.push_back(norm_index(idx.as_int(ravel(ic, idx.shape)), data.shape[axis]));
    dc.insert(dc.end(), c.begin() + axis + ir, c.end());
    return ravel(dc, data.shape);
  });
}

HostTensor ref_gather_elements(const HostTensor& data, const HostTensor& idx, int axis) {
  return map_elements(data, idx.shape, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> dc = c;
    dc[axis] = norm_index(idx.as_int(ravel(c, idx.shape)), data.shape[axis]);
    return ravel(dc, data.shape);
  });
}

// Integer results wrap on the GPU; compute them in unsigned arithmetic so the reference
// wraps the same way without signed-overflow UB.
template <typename T, typename F>
T wrapping(T a, T b, F f) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(f(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return f(a, b);
  }
}

template <typename T>
HostTensor ref_scatter(const HostTensor& data, const HostTensor& idx, const HostTensor& upd,
                       int axis, ops::ScatterReduction r) {
  HostTensor out = data;
  for (int64_t i = 0; i < idx.numel(); ++i) {
    auto c = unravel(i, idx.shape);
    c[axis] = norm_index(idx.as_int(i), data.shape[axis]);
    T& o = out.data<T>()[ravel(c, data.shape)];
    T u = upd.data<T>()[i];
    switch (r) {
      case ops::ScatterReduction::None:
        o = u;
        break;
      case ops::ScatterReduction::Add:
        o = wrapping(o, u, [](auto a, auto b) { return a + b; });
        break;
      case ops::ScatterReduction::Mul:
        o = wrapping(o, u, [](auto a, auto b) { return a * b; });
        break;
      case ops::ScatterReduction::Max:
        o = std::max(o, u);
        break;
      case ops::ScatterReduction::Min:
        o = std::min(o, u);
        break;
    }
  }
  return out;
}

TEST_F(OpsIndex, GatherAxesAndIndexTypes) {
  struct Case {
    Shape data, idx;
    int64_t axis;
    DType dtype, idx_dtype;
  };
  const Case cases[] = {
      {{5, 3}, {4}, 0, DType::Float32, DType::Int64},
      {{2, 7, 3}, {2, 3}, 1, DType::Int64, DType::Int32},
      {{3, 4, 9}, {5}, -1, DType::Bool, DType::Int64},
      {{6, 4}, {}, -2, DType::Int32, DType::Int32},  // scalar index drops the axis
      {{4, 130}, {3, 1}, 1, DType::Float32, DType::Int32},
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(k++));
    int axis = c.axis < 0 ? c.axis + static_cast<int>(c.data.size()) : c.axis;
    auto data = random_tensor(rng, c.dtype, c.data);
    auto idx = random_indices(c.idx_dtype, c.idx, c.data[axis]);
    auto y = run_one({data, idx}, [&](ComputeGraph& g, auto in) {
      return ops::gather(g, in[0], in[1], c.axis);
    });
    expect_same(y, ref_gather(data, idx, axis));
  }
}

TEST_F(OpsIndex, GatherConstantIndices) {
  auto data = random_tensor(rng, DType::Float32, {4, 3});
  auto idx = make_tensor<int64_t>(DType::Int64, {3}, {3, -4, 1});
  auto y = run_one({data}, [&](ComputeGraph& g, auto in) {
    return ops::gather(g, in[0], g.add_constant(idx, "idx"), 0);
  });
  expect_same(y, ref_gather(data, idx, 0));
}

TEST_F(OpsIndex, GatherOutOfRangeComputedIndexReadsZero) {
  auto data = random_tensor(rng, DType::Int32, {4});
  auto idx = make_tensor<int64_t>(DType::Int64, {3}, {2, 4, int64_t{1} << 33});
  auto y =
      run_one({data, idx}, [](ComputeGraph& g, auto in) { return ops::gather(g, in[0], in[1]); });
  EXPECT_EQ(y.data<int32_t>()[0], data.data<int32_t>()[2]);
  EXPECT_EQ(y.data<int32_t>()[1], 0);
  EXPECT_EQ(y.data<int32_t>()[2], 0);
}

TEST_F(OpsIndex, GatherErrors) {
  ComputeGraph g(context());
  auto data = g.add_input({4, 3}, DType::Float32, "data");
  auto fidx = g.add_input({2}, DType::Float32, "fidx");
  auto bad = g.add_constant(make_tensor<int32_t>(DType::Int32, {2}, {0, 3}), "bad");
  expect_error([&] { ops::gather(g, data, fidx, 0); }, ErrorKind::InvalidArgument,
               "gather: indices must be Int32 or Int64, not float32");
  expect_error([&] { ops::gather(g, data, bad, 1); }, ErrorKind::InvalidArgument,
               "gather: index 3 out of range for axis of size 3");
  expect_error([&] { ops::gather(g, data, bad, 2); }, ErrorKind::InvalidArgument,
               "gather: axis 2 out of range");
}

TEST_F(OpsIndex, GatherElements) {
  struct Case {
    Shape data, idx;
    int64_t axis;
    DType dtype, idx_dtype;
  };
  const Case cases[] = {
      {{3, 4}, {5, 4}, 0, DType::Float32, DType::Int64},
      {{3, 4}, {2, 6}, -1, DType::Int64, DType::Int32},
      {{2, 5, 3}, {2, 3, 2}, 1, DType::Bool, DType::Int64},
      {{4, 3, 5}, {3, 3, 4}, 2, DType::Int32, DType::Int32},
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(k++));
    int axis = c.axis < 0 ? c.axis + static_cast<int>(c.data.size()) : c.axis;
    auto data = random_tensor(rng, c.dtype, c.data);
    auto idx = random_indices(c.idx_dtype, c.idx, c.data[axis]);
    auto y = run_one({data, idx}, [&](ComputeGraph& g, auto in) {
      return ops::gather_elements(g, in[0], in[1], c.axis);
    });
    expect_same(y, ref_gather_elements(data, idx, axis));
  }
}

TEST_F(OpsIndex, GatherElementsErrors) {
  ComputeGraph g(context());
  auto data = g.add_input({4, 3}, DType::Float32, "data");
  auto idx = g.add_input({2, 4}, DType::Int64, "idx");
  auto idx1 = g.add_input({2}, DType::Int64, "idx1");
  expect_error([&] { ops::gather_elements(g, data, idx, 0); }, ErrorKind::InvalidArgument,
               "gather_elements: indices [2, 4] do not fit data [4, 3] off axis 0");
  expect_error([&] { ops::gather_elements(g, data, idx1, 0); }, ErrorKind::InvalidArgument,
               "do not fit");
}

TEST_F(OpsIndex, ScatterElementsReductions) {
  using R = ops::ScatterReduction;
  struct Case {
    Shape data, idx;
    int64_t axis;
    DType dtype, idx_dtype;
    R reduction;
  };
  const Case cases[] = {
      {{4, 3}, {6, 3}, 0, DType::Float32, DType::Int64, R::None},  // duplicates: last wins
      {{3, 5}, {3, 7}, -1, DType::Float32, DType::Int32, R::Add},
      {{2, 4, 3}, {2, 5, 2}, 1, DType::Int64, DType::Int64, R::Mul},
      {{5, 4}, {8, 4}, 0, DType::Int32, DType::Int32, R::Max},
      {{5, 4}, {3, 9}, 1, DType::Float32, DType::Int64, R::Min},
      {{3, 6}, {3, 4}, 1, DType::Bool, DType::Int32, R::None},
      {{3, 6}, {3, 4}, 1, DType::Int64, DType::Int32, R::None},
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(k++));
    int axis = c.axis < 0 ? c.axis + static_cast<int>(c.data.size()) : c.axis;
    auto data = random_tensor(rng, c.dtype, c.data);
    auto idx = random_indices(c.idx_dtype, c.idx, c.data[axis]);
    auto upd = random_tensor(rng, c.dtype, c.idx);
    auto y = run_one({data, idx, upd}, [&](ComputeGraph& g, auto in) {
      return ops::scatter_elements(g, in[0], in[1], in[2], c.axis, c.reduction);
    });
    HostTensor want;
    switch (c.dtype) {
      case DType::Float32:
        want = ref_scatter<float>(data, idx, upd, axis, c.reduction);
        break;
      case DType::Int32:
        want = ref_scatter<int32_t>(data, idx, upd, axis, c.reduction);
        break;
      case DType::Int64:
        want = ref_scatter<int64_t>(data, idx, upd, axis, c.reduction);
        break;
      default:
        want = ref_scatter<uint8_t>(data, idx, upd, axis, c.reduction);
        break;
    }
    expect_same(y, want);  // fixed update order: bit-exact even for float sums
  }
}

TEST_F(OpsIndex, ScatterElementsSkipsOutOfRangeComputedIndices) {
  auto data = make_tensor<float>(DType::Float32, {4}, {1.f, 2.f, 3.f, 4.f});
  auto idx = make_tensor<int64_t>(DType::Int64, {3}, {-1, 4, int64_t{1} << 32});
  auto upd = make_tensor<float>(DType::Float32, {3}, {10.f, 20.f, 30.f});
  auto y = run_one({data, idx, upd}, [](ComputeGraph& g, auto in) {
    return ops::scatter_elements(g, in[0], in[1], in[2], 0, ops::ScatterReduction::Add);
  });
  expect_same(y, make_tensor<float>(DType::Float32, {4}, {1.f, 2.f, 3.f, 14.f}));
}

TEST_F(OpsIndex, ScatterElementsErrors) {
  ComputeGraph g(context());
  auto data = g.add_input({4, 3}, DType::Bool, "data");
  auto idx = g.add_input({2, 3}, DType::Int64, "idx");
  auto upd = g.add_input({2, 3}, DType::Bool, "upd");
  auto upd_f = g.add_input({2, 3}, DType::Float32, "upd_f");
  auto upd_short = g.add_input({2, 2}, DType::Bool, "upd_short");
  expect_error([&] { ops::scatter_elements(g, data, idx, upd, 0, ops::ScatterReduction::Add); },
               ErrorKind::Unsupported, "scatter_elements: dtype bool");
  expect_error([&] { ops::scatter_elements(g, data, idx, upd_f, 0); }, ErrorKind::InvalidArgument,
               "the data's dtype bool");
  expect_error([&] { ops::scatter_elements(g, data, idx, upd_short, 0); },
               ErrorKind::InvalidArgument, "the indices' shape [2, 3]");
}

template <typename T>
HostTensor ref_cumsum(const HostTensor& x, int axis, bool exclusive, bool reverse) {
  HostTensor y(x.dtype, x.shape);
  int64_t len = x.shape[axis];
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto c = unravel(i, x.shape);
    if (c[axis] != 0) continue;  // start of a line
    T sum = T(0);
    for (int64_t j = 0; j < len; ++j) {
      c[axis] = reverse ? len - 1 - j : j;
      int64_t at = ravel(c, x.shape);
      if (exclusive) {
        y.data<T>()[at] = sum;
        sum += x.data<T>()[at];
      } else {
        sum += x.data<T>()[at];
        y.data<T>()[at] = sum;
      }
    }
  }
  return y;
}

TEST_F(OpsIndex, CumSumFlagsAxesDtypes) {
  struct Case {
    Shape shape;
    int64_t axis;
    DType dtype;
  };
  const Case cases[] = {
      {{37}, 0, DType::Float32},
      {{3, 4, 5}, 1, DType::Int32},
      {{3, 4, 5}, -1, DType::Int64},
      {{6, 2, 3}, -3, DType::Float32},
  };
  for (const Case& c : cases)
    for (int flags = 0; flags < 4; ++flags) {
      bool exclusive = flags & 1, reverse = flags & 2;
      SCOPED_TRACE(shape_str(c.shape) + " flags " + std::to_string(flags));
      int axis = c.axis < 0 ? c.axis + static_cast<int>(c.shape.size()) : c.axis;
      auto x = random_tensor(rng, c.dtype, c.shape);
      auto y = run_one({x}, [&](ComputeGraph& g, auto in) {
        return ops::cumsum(g, in[0], c.axis, exclusive, reverse);
      });
      switch (c.dtype) {
        case DType::Float32:
          expect_near(y, ref_cumsum<float>(x, axis, exclusive, reverse));
          break;
        case DType::Int32:
          expect_same(y, ref_cumsum<int32_t>(x, axis, exclusive, reverse));
          break;
        default:
          expect_same(y, ref_cumsum<int64_t>(x, axis, exclusive, reverse));
          break;
      }
    }
}

TEST_F(OpsIndex, CumSumErrors) {
  ComputeGraph g(context());
  auto b = g.add_input({4}, DType::Bool, "b");
  auto s = g.add_input({}, DType::Float32, "s");
  expect_error([&] { ops::cumsum(g, b, 0); }, ErrorKind::Unsupported, "cumsum: dtype bool");
  expect_error([&] { ops::cumsum(g, s, 0); }, ErrorKind::InvalidArgument,
               "cumsum: input is a scalar");
}

// Stable sort of each line by (value, index), NaN above every number.
template <typename T>
std::pair<HostTensor, HostTensor> ref_topk(const HostTensor& x, int axis, int64_t k, bool largest) {
  Shape out = x.shape;
  out[axis] = k;
  HostTensor values(x.dtype, out), indices(DType::Int64, out);
  auto greater = [](T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a)) return !std::isnan(b);
      if (std::isnan(b)) return false;
    }
    return a > b;
  };
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto c = unravel(i, x.shape);
    if (c[axis] != 0) continue;
    std::vector<int64_t> order(x.shape[axis]);
    std::iota(order.begin(), order.end(), 0);
    auto value = [&](int64_t j) {
      auto cc = c;
      cc[axis] = j;
      return x.data<T>()[ravel(cc, x.shape)];
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return largest ? greater(value(a), value(b)) : greater(value(b), value(a));
    });
    for (int64_t j = 0; j < k; ++j) {
      auto oc = c;
      oc[axis] = j;
      values.data<T>()[ravel(oc, out)] = value(order[j]);
      indices.data<int64_t>()[ravel(oc, out)] = order[j];
    }
  }
  return {values, indices};
}

TEST_F(OpsIndex, TopKLargestSmallestTiesNaN) {
  struct Case {
    Shape shape;
    int64_t k, axis;
    bool largest;
    DType dtype;
  };
  const Case cases[] = {
      {{3, 50}, 5, -1, true, DType::Float32}, {{3, 50}, 50, 1, false, DType::Float32},
      {{20, 4}, 3, 0, true, DType::Int32},  // small ints: many ties
      {{2, 9, 3}, 4, 1, false, DType::Int64}, {{2, 9, 3}, 9, -2, true, DType::Int32},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(n++));
    int axis = c.axis < 0 ? c.axis + static_cast<int>(c.shape.size()) : c.axis;
    auto x = random_tensor(rng, c.dtype, c.shape);
    if (c.dtype == DType::Int32)  // force ties
      for (int64_t i = 0; i < x.numel(); ++i) x.data<int32_t>()[i] %= 4;
    if (c.dtype == DType::Float32) {
      x.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
      x.data<float>()[7] = x.data<float>()[9];  // a tie
      x.data<float>()[60] = std::numeric_limits<float>::quiet_NaN();
    }
    auto outs = run_ops({x}, [&](ComputeGraph& g, auto in) {
      auto r = ops::topk(g, in[0], c.k, c.axis, c.largest);
      return std::vector<TensorRef>{r.values, r.indices};
    });
    std::pair<HostTensor, HostTensor> want;
    switch (c.dtype) {
      case DType::Float32:
        want = ref_topk<float>(x, axis, c.k, c.largest);
        break;
      case DType::Int32:
        want = ref_topk<int32_t>(x, axis, c.k, c.largest);
        break;
      default:
        want = ref_topk<int64_t>(x, axis, c.k, c.largest);
        break;
    }
    expect_same(outs[0], want.first);
    expect_same(outs[1], want.second);
  }
}

TEST_F(OpsIndex, TopKErrors) {
  ComputeGraph g(context());
  auto x = g.add_input({3, 4}, DType::Float32, "x");
  auto b = g.add_input({3, 4}, DType::Bool, "b");
  expect_error([&] { ops::topk(g, x, 5); }, ErrorKind::InvalidArgument,
               "topk: k = 5 outside [0, 4] for axis 1 of [3, 4]");
  expect_error([&] { ops::topk(g, x, -1); }, ErrorKind::InvalidArgument, "topk: k = -1");
  expect_error([&] { ops::topk(g, b, 1); }, ErrorKind::Unsupported, "topk: dtype bool");
  auto r = ops::topk(g, x, 0, 0);
  EXPECT_EQ(shape_str(g.info(r.indices).shape), "[0, 4]");
  EXPECT_EQ(g.info(r.indices).dtype, DType::Int64);
}

}  // namespace
}  // namespace vkgraph::testing

// Reshape, transpose, concat, split, slice, expand, tile and pad against CPU references, for
// every dtype (Bool included), with negative axes, contiguous (buffer copy) and strided paths.
#include <algorithm>
#include <limits>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

const DType kAllDtypes[] = {DType::Float32, DType::Int32, DType::Int64, DType::Bool};

class OpsShape : public GpuTest {};

HostTensor ref_transpose(const HostTensor& x, const std::vector<int64_t>& perm) {
  Shape out(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) out[d] = x.shape[perm[d]];
  return map_elements(x, out, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> in(c.size());
    for (size_t d = 0; d < c.size(); ++d) in[perm[d]] = c[d];
    return ravel(in, x.shape);
  });
}

HostTensor ref_concat(const std::vector<HostTensor>& xs, int axis) {
  Shape out = xs[0].shape;
  out[axis] = 0;
  for (auto& x : xs) out[axis] += x.shape[axis];
  HostTensor y(xs[0].dtype, out);
  size_t es = dtype_size(y.dtype);
  for (int64_t i = 0; i < y.numel(); ++i) {
    auto c = unravel(i, out);
    size_t k = 0;
    while (c[axis] >= xs[k].shape[axis]) c[axis] -= xs[k++].shape[axis];
    std::memcpy(y.bytes.data() + i * es, xs[k].bytes.data() + ravel(c, xs[k].shape) * es, es);
  }
  return y;
}

// ONNX Slice, written independently of the op: walk each axis from the clamped start.
HostTensor ref_slice(const HostTensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends,
                     std::vector<int64_t> axes, std::vector<int64_t> steps) {
  size_t rank = x.shape.size();
  std::vector<std::vector<int64_t>> picks(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t i = 0; i < x.shape[d]; ++i) picks[d].push_back(i);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
    int64_t dim = x.shape[a], s = starts[i], e = ends[i], st = steps[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    picks[a].clear();
    // Step magnitude as unsigned: steps may be INT64_MIN/MAX, which must not overflow here.
    uint64_t m = st > 0 ? static_cast<uint64_t>(st) : 0 - static_cast<uint64_t>(st);
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      for (int64_t k = s; k < e; k += static_cast<int64_t>(m)) {
        picks[a].push_back(k);
        if (static_cast<uint64_t>(e - k) <= m) break;
      }
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      for (int64_t k = s; k > e; k -= static_cast<int64_t>(m)) {
        picks[a].push_back(k);
        if (static_cast<uint64_t>(k - e) <= m) break;
      }
    }
  }
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) out[d] = static_cast<int64_t>(picks[d].size());
  return map_elements(x, out, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> in(rank);
    for (size_t d = 0; d < rank; ++d) in[d] = picks[d][c[d]];
    return ravel(in, x.shape);
  });
}

// numpy.pad semantics per axis: -1 means "use the constant".
int64_t ref_pad_coord(int64_t c, int64_t dim, ops::PadMode mode) {
  if (c >= 0 && c < dim) return c;
  switch (mode) {
    case ops::PadMode::Constant:
      return -1;
    case ops::PadMode::Edge:
      return std::clamp<int64_t>(c, 0, dim - 1);
    case ops::PadMode::Wrap:
      return ((c % dim) + dim) % dim;
    case ops::PadMode::Reflect:
      // Reflect repeatedly off both ends until inside.
      while (c < 0 || c >= dim) {
        if (dim == 1) return 0;
        c = c < 0 ? -c : 2 * (dim - 1) - c;
      }
      return c;
  }
  return -1;
}

HostTensor ref_pad(const HostTensor& x, const std::vector<int64_t>& begin,
                   const std::vector<int64_t>& end, ops::PadMode mode, double value) {
  Shape out = x.shape;
  for (size_t d = 0; d < out.size(); ++d) out[d] += begin[d] + end[d];
  HostTensor fill(x.dtype, {1});
  switch (x.dtype) {
    case DType::Float32:
      fill.data<float>()[0] = static_cast<float>(value);
      break;
    case DType::Int32:
      fill.data<int32_t>()[0] = static_cast<int32_t>(value);
      break;
    case DType::Int64:
      fill.data<int64_t>()[0] = static_cast<int64_t>(value);
      break;
    default:
      fill.data<uint8_t>()[0] = value != 0.0;
      break;
  }
  HostTensor y(x.dtype, out);
  size_t es = dtype_size(x.dtype);
  for (int64_t i = 0; i < y.numel(); ++i) {
    auto c = unravel(i, out);
    bool inside = true;
    for (size_t d = 0; d < c.size() && inside; ++d) {
      c[d] = ref_pad_coord(c[d] - begin[d], x.shape[d], mode);
      inside = c[d] >= 0;
    }
    const uint8_t* src = inside ? x.bytes.data() + ravel(c, x.shape) * es : fill.bytes.data();
    std::memcpy(y.bytes.data() + i * es, src, es);
  }
  return y;
}

TEST_F(OpsShape, ReshapeIsAViewWithInferredDims) {
  auto x = random_tensor(rng, DType::Float32, {2, 3, 4});
  auto y = run_one({x}, [](ComputeGraph& g, auto in) {
    TensorRef r = ops::reshape(g, in[0], {0, -1});
    EXPECT_EQ(shape_str(g.info(r).shape), "[2, 12]");
    TensorRef v = ops::reshape(g, r, {-1, 4, 3});
    EXPECT_EQ(g.info(v).storage, g.info(in[0]).storage);  // no copy
    return v;
  });
  EXPECT_EQ(shape_str(y.shape), "[2, 4, 3]");
  EXPECT_EQ(y.bytes, x.bytes);
}

TEST_F(OpsShape, ReshapeErrors) {
  ComputeGraph g(context());
  auto x = g.add_input({2, 3, 4}, DType::Float32, "x");
  expect_error(
      [&] {
        ops::reshape(g, x, {-1, -1});
      },
      ErrorKind::InvalidArgument, "more than one -1");
  expect_error([&] { ops::reshape(g, x, {5, 5}); }, ErrorKind::InvalidArgument, "reshape: input");
  expect_error(
      [&] {
        ops::reshape(g, x, {0, 0, 0, 0});
      },
      ErrorKind::InvalidArgument, "no matching dim");
  expect_error([&] { ops::reshape(g, x, {-1, 5}); }, ErrorKind::InvalidArgument, "cannot infer");
  expect_error(
      [&] {
        ops::reshape(g, x, {0, 24}, /*allowzero=*/true);
      },
      ErrorKind::InvalidArgument, "elements");
  expect_error([&] { ops::reshape(g, x, {-2, -12}); }, ErrorKind::InvalidArgument, "negative dim");
}

TEST_F(OpsShape, TransposeEveryDtype) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {
      {{2, 3, 4}, {2, 0, 1}},
      {{5, 7}, {}},                              // default: reverse
      {{1, 37, 1, 5}, {3, 1, 0, 2}},             // size-1 dims merge away
      {{2, 3, 2, 5, 2, 3}, {5, 3, 1, 0, 2, 4}},  // rank 6
      {{3, 1, 4}, {1, 0, 2}},                    // only moves a size-1 dim: a view
  };
  for (DType dtype : kAllDtypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(c.shape));
      auto x = random_tensor(rng, dtype, c.shape);
      std::vector<int64_t> perm = c.perm;
      if (perm.empty())
        for (size_t d = c.shape.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
      auto y =
          run_one({x}, [&](ComputeGraph& g, auto in) { return ops::transpose(g, in[0], c.perm); });
      expect_same(y, ref_transpose(x, perm));
    }
}

TEST_F(OpsShape, TransposeErrors) {
  ComputeGraph g(context());
  auto x = g.add_input({2, 3, 4}, DType::Float32, "x");
  expect_error(
      [&] {
        ops::transpose(g, x, {0, 1});
      },
      ErrorKind::InvalidArgument, "transpose: perm [0, 1] is not a permutation");
  expect_error(
      [&] {
        ops::transpose(g, x, {0, 1, 1});
      },
      ErrorKind::InvalidArgument, "not a permutation");
  expect_error(
      [&] {
        ops::transpose(g, x, {0, 1, 3});
      },
      ErrorKind::InvalidArgument, "not a permutation");
}

TEST_F(OpsShape, ConcatAlongAnyAxis) {
  struct Case {
    std::vector<Shape> shapes;
    int64_t axis;
  };
  const Case cases[] = {
      {{{2, 3}, {5, 3}, {1, 3}}, 0},   // contiguous chunks: buffer copies
      {{{2, 3, 4}, {2, 5, 4}}, 1},     // strided
      {{{3, 2}, {3, 7}, {3, 1}}, -1},  // strided, negative axis
      {{{1, 2, 3}, {1, 4, 3}}, -2},    // leading 1: contiguous again
  };
  // Bool first: its contiguous chunks start at odd byte offsets.
  DType dtypes[] = {DType::Bool, DType::Int64, DType::Float32, DType::Int32};
  int k = 0;
  for (const Case& c : cases) {
    DType dtype = dtypes[k++ % 4];
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " axis " + std::to_string(c.axis));
    std::vector<HostTensor> xs;
    for (auto& s : c.shapes) xs.push_back(random_tensor(rng, dtype, s));
    auto y = run_one(xs, [&](ComputeGraph& g, auto in) { return ops::concat(g, in, c.axis); });
    int axis = c.axis < 0 ? c.axis + static_cast<int>(c.shapes[0].size()) : c.axis;
    expect_same(y, ref_concat(xs, axis));
  }
}

TEST_F(OpsShape, ConcatSkipsEmptyInputs) {
  auto a = random_tensor(rng, DType::Int32, {3, 2});
  auto b = random_tensor(rng, DType::Int32, {3, 4});
  auto y = run_one({a, b}, [](ComputeGraph& g, auto in) {
    TensorRef empty = ops::slice(g, in[1], {0}, {0}, {1});  // [3, 0]
    return ops::concat(g, {in[0], empty, in[1]}, 1);
  });
  expect_same(y, ref_concat({a, b}, 1));
}

TEST_F(OpsShape, ConcatErrors) {
  ComputeGraph g(context());
  auto a = g.add_input({2, 3}, DType::Float32, "a");
  auto b = g.add_input({2, 4}, DType::Float32, "b");
  auto c = g.add_input({2, 3}, DType::Int32, "c");
  expect_error([&] { ops::concat(g, {}, 0); }, ErrorKind::InvalidArgument, "concat: no inputs");
  expect_error([&] { ops::concat(g, {a, b}, 0); }, ErrorKind::InvalidArgument, "does not match");
  expect_error([&] { ops::concat(g, {a, c}, 0); }, ErrorKind::InvalidArgument, "int32");
  expect_error(
      [&] {
        ops::concat(g, {a, b}, 2);
      },
      ErrorKind::InvalidArgument, "concat: axis 2 out of range");
}

TEST_F(OpsShape, SplitIntoUnevenPieces) {
  for (DType dtype : {DType::Float32, DType::Int64, DType::Bool}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto x = random_tensor(rng, dtype, {2, 9, 3});
    const std::vector<int64_t> sizes = {4, 0, 5};
    auto outs = run_ops({x}, [&](ComputeGraph& g, auto in) {
      auto pieces = ops::split(g, in[0], -2, sizes);
      EXPECT_EQ(pieces.size(), 3u);
      EXPECT_EQ(shape_str(g.info(pieces[1]).shape), "[2, 0, 3]");
      return std::vector<TensorRef>{pieces[0], pieces[2]};
    });
    expect_same(outs[0], ref_slice(x, {0}, {4}, {1}, {1}));
    expect_same(outs[1], ref_slice(x, {4}, {9}, {1}, {1}));
  }
  // Along axis 0 each piece is one contiguous run.
  auto x = random_tensor(rng, DType::Int32, {5, 3});
  auto outs = run_ops({x}, [](ComputeGraph& g, auto in) {
    return ops::split(g, in[0], 0, {2, 3});
  });
  expect_same(outs[0], ref_slice(x, {0}, {2}, {0}, {1}));
  expect_same(outs[1], ref_slice(x, {2}, {5}, {0}, {1}));
}

TEST_F(OpsShape, SplitErrors) {
  ComputeGraph g(context());
  auto x = g.add_input({4, 6}, DType::Float32, "x");
  expect_error(
      [&] {
        ops::split(g, x, 1, {2, 3});
      },
      ErrorKind::InvalidArgument, "split: sizes [2, 3] do not split axis 1 of [4, 6]");
  expect_error([&] { ops::split(g, x, 0, {5, -1}); }, ErrorKind::InvalidArgument, "split: sizes");
  expect_error([&] { ops::split(g, x, -3, {4}); }, ErrorKind::InvalidArgument,
               "split: axis -3 out of range");
}

TEST_F(OpsShape, SliceStepsAndClamping) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  struct Case {
    Shape shape;
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const Case cases[] = {
      {{10}, {2}, {8}, {0}, {1}},       // contiguous run
      {{10}, {-1}, {kMin}, {0}, {-1}},  // full reverse
      {{10}, {9}, {-100}, {0}, {-3}},   // negative step, clamped end
      {{4, 7, 5}, {1, -6, 0}, {kMax, 6, 5}, {0, 1, 2}, {1, 2, 2}},
      {{4, 7, 5}, {-1, 3}, {0, kMax}, {-1, 0}, {-2, 1}},         // axes out of order, negative
      {{3, 5}, {20}, {30}, {1}, {1}},                            // start past the end: empty
      {{3, 5}, {1}, {3}, {0}, {kMax}},                           // huge step: one element
      {{3, 5}, {4}, {0}, {1}, {kMin}},                           // huge negative step
      {{2, 3, 2, 3, 2, 3}, {1, 2}, {kMax, 0}, {0, 3}, {1, -1}},  // rank 6
  };
  int k = 0;
  for (const Case& c : cases) {
    DType dtype = kAllDtypes[k++ % 4];
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " case " + std::to_string(k));
    auto x = random_tensor(rng, dtype, c.shape);
    HostTensor want = ref_slice(x, c.starts, c.ends, c.axes, c.steps);
    if (want.numel() == 0) {  // graph outputs must be non-empty: check the shape only
      ComputeGraph g(context());
      auto in = g.add_input(c.shape, dtype, "x");
      EXPECT_EQ(shape_str(g.info(ops::slice(g, in, c.starts, c.ends, c.axes, c.steps)).shape),
                shape_str(want.shape));
      continue;
    }
    auto y = run_one({x}, [&](ComputeGraph& g, auto in) {
      return ops::slice(g, in[0], c.starts, c.ends, c.axes, c.steps);
    });
    expect_same(y, want);
  }
}

TEST_F(OpsShape, SliceDefaultsAxesAndSteps) {
  auto x = random_tensor(rng, DType::Float32, {6, 5});
  auto y = run_one({x}, [](ComputeGraph& g, auto in) {
    return ops::slice(g, in[0], {1, 2}, {-1, 4});
  });
  expect_same(y, ref_slice(x, {1, 2}, {-1, 4}, {0, 1}, {1, 1}));
}

TEST_F(OpsShape, SliceErrors) {
  ComputeGraph g(context());
  auto x = g.add_input({4, 6}, DType::Float32, "x");
  expect_error([&] { ops::slice(g, x, {0}, {1}, {0}, {0}); }, ErrorKind::InvalidArgument,
               "slice: step 0");
  expect_error(
      [&] {
        ops::slice(g, x, {0, 0}, {1, 1}, {1, -1});
      },
      ErrorKind::InvalidArgument, "slice: axis 1 repeated");
  expect_error(
      [&] {
        ops::slice(g, x, {0, 0}, {1});
      },
      ErrorKind::InvalidArgument, "differ in length");
  expect_error([&] { ops::slice(g, x, {0}, {1}, {2}); }, ErrorKind::InvalidArgument,
               "slice: axis 2 out of range");
}

TEST_F(OpsShape, ExpandBroadcastsBothWays) {
  struct Case {
    Shape in, shape, out;
  };
  const Case cases[] = {
      {{3, 1}, {2, 3, 4}, {2, 3, 4}},
      {{1, 4}, {3, 1}, {3, 4}},  // bidirectional: the 4 survives
      {{}, {5}, {5}},            // scalar
      {{2, 3}, {2, 3}, {2, 3}},  // no-op: a view
      {{1, 1, 3, 1, 1, 2}, {2, 3, 3, 1, 4, 2}, {2, 3, 3, 1, 4, 2}},
  };
  int k = 0;
  for (const Case& c : cases) {
    DType dtype = kAllDtypes[k++ % 4];
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(c.in));
    auto x = random_tensor(rng, dtype, c.in);
    auto y = run_one({x}, [&](ComputeGraph& g, auto in) { return ops::expand(g, in[0], c.shape); });
    expect_same(y, map_elements(x, c.out, [&](const std::vector<int64_t>& o) {
                  return broadcast_index(o, c.out, c.in);
                }));
  }
}

TEST_F(OpsShape, ExpandErrors) {
  ComputeGraph g(context());
  auto x = g.add_input({3, 2}, DType::Int32, "x");
  expect_error(
      [&] {
        ops::expand(g, x, {3, 3});
      },
      ErrorKind::InvalidArgument, "expand: shapes [3, 2] and [3, 3] do not broadcast");
  expect_error([&] { ops::expand(g, x, {-1, 2}); }, ErrorKind::InvalidArgument, "negative dim");
}

TEST_F(OpsShape, TileRepeats) {
  struct Case {
    Shape in;
    std::vector<int64_t> repeats;
  };
  const Case cases[] = {
      {{2, 3}, {2, 3}}, {{5}, {3}}, {{2, 1, 3}, {1, 4, 1}}, {{3, 2}, {1, 1}},  // a view
  };
  int k = 0;
  for (const Case& c : cases) {
    DType dtype = kAllDtypes[k++ % 4];
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(c.in));
    auto x = random_tensor(rng, dtype, c.in);
    auto y = run_one({x}, [&](ComputeGraph& g, auto in) { return ops::tile(g, in[0], c.repeats); });
    Shape out = c.in;
    for (size_t d = 0; d < out.size(); ++d) out[d] *= c.repeats[d];
    expect_same(y, map_elements(x, out, [&](const std::vector<int64_t>& o) {
                  std::vector<int64_t> i(o.size());
                  for (size_t d = 0; d < i.size(); ++d) i[d] = o[d] % c.in[d];
                  return ravel(i, c.in);
                }));
  }
}

TEST_F(OpsShape, TileErrors) {
  ComputeGraph g(context());
  auto x = g.add_input({3, 2}, DType::Int32, "x");
  expect_error([&] { ops::tile(g, x, {2}); }, ErrorKind::InvalidArgument,
               "tile: repeats [2] do not fit input [3, 2]");
  expect_error([&] { ops::tile(g, x, {1, -1}); }, ErrorKind::InvalidArgument, "tile: repeats");
}

TEST_F(OpsShape, PadAllModes) {
  struct Case {
    Shape in;
    std::vector<int64_t> begin, end;
    ops::PadMode mode;
    DType dtype;
    double value;
  };
  using M = ops::PadMode;
  const Case cases[] = {
      {{3, 4}, {1, 2}, {2, 0}, M::Constant, DType::Float32, 1.5},
      {{3, 4}, {1, 2}, {2, 1}, M::Constant, DType::Int64, -3e12},
      {{2, 5}, {0, 3}, {1, 1}, M::Constant, DType::Bool, 1.0},
      {{3, 5}, {2, 4}, {2, 4}, M::Reflect, DType::Float32, 0},  // wider than the dim
      {{2, 3, 4}, {0, 1, 3}, {1, 2, 0}, M::Edge, DType::Int32, 0},
      {{2, 3, 4}, {1, 4, 0}, {0, 2, 5}, M::Wrap, DType::Int64, 0},
      {{4, 6}, {-1, 2}, {0, -3}, M::Constant, DType::Int32, 7},  // negative pads crop
      {{1, 3}, {2, 1}, {2, 1}, M::Reflect, DType::Bool, 0},      // reflect of a size-1 dim
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(k++));
    auto x = random_tensor(rng, c.dtype, c.in);
    std::vector<int64_t> pads = c.begin;
    pads.insert(pads.end(), c.end.begin(), c.end.end());
    auto y = run_one(
        {x}, [&](ComputeGraph& g, auto in) { return ops::pad(g, in[0], pads, c.mode, c.value); });
    expect_same(y, ref_pad(x, c.begin, c.end, c.mode, c.value));
  }
}

TEST_F(OpsShape, PadSelectedAxes) {
  auto x = random_tensor(rng, DType::Float32, {2, 3, 4});
  auto y = run_one({x}, [](ComputeGraph& g, auto in) {
    return ops::pad(g, in[0], {1, 2, 0, 3}, ops::PadMode::Edge, 0.0, {-1, 0});
  });
  // pads {begin(-1), begin(0), end(-1), end(0)}
  expect_same(y, ref_pad(x, {2, 0, 1}, {3, 0, 0}, ops::PadMode::Edge, 0.0));
}

TEST_F(OpsShape, PadErrors) {
  ComputeGraph g(context());
  auto x = g.add_input({3, 2}, DType::Int32, "x");
  expect_error(
      [&] {
        ops::pad(g, x, {1, 1});
      },
      ErrorKind::InvalidArgument, "pad: 2 pads for 2 axes");
  expect_error([&] { ops::pad(g, x, {-2, 0, -2, 0}); }, ErrorKind::InvalidArgument, "below zero");
  expect_error(
      [&] {
        ops::pad(g, x, {0, 1, 0, 0}, ops::PadMode::Constant, 1e10);
      },
      ErrorKind::InvalidArgument, "does not fit int32");
  expect_error(
      [&] {
        ops::pad(g, x, {1, 1, 1, 1}, ops::PadMode::Constant, 0.0, {1, -1});
      },
      ErrorKind::InvalidArgument, "pad: axis 1 repeated");
  auto e = ops::slice(g, x, {0}, {0}, {1});  // [3, 0]
  expect_error(
      [&] {
        ops::pad(g, e, {0, 1, 0, 1}, ops::PadMode::Reflect);
      },
      ErrorKind::InvalidArgument, "reflect mode cannot fill empty axis 1");
}

}  // namespace
}  // namespace vkgraph::testing

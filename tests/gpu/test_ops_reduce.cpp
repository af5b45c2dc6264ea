// ops::reduce and ops::argmax against double-precision references, over many axis sets, with
// and without keepdims, in both of the shaders' modes: a workgroup per output (long reductions,
// contiguous or strided) and one invocation per output (short reductions, or many strided
// outputs).
#include <cmath>
#include <limits>

#include "gpu_test.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {
namespace {

using ops::ReduceOp;

struct Case {
  Shape shape;
  std::vector<int64_t> axes;
};

const std::vector<Case> kCases = {
    {{1}, {}},
    {{7}, {0}},
    {{7}, {}},
    {{3, 5}, {0}},
    {{3, 5}, {1}},
    {{3, 5}, {}},
    {{3, 5}, {-1, 0}},
    {{2, 3, 4, 5}, {0}},
    {{2, 3, 4, 5}, {1, 2}},
    {{2, 3, 4, 5}, {0, 2}},
    {{2, 3, 4, 5}, {1, 3}},
    {{2, 3, 4, 5}, {-1}},
    {{2, 3, 4, 5}, {3, 0}},
    {{2, 3, 4, 5}, {0, 1, 3}},
    {{2, 3, 4, 5}, {}},
    // Long reductions, a workgroup per output: contiguous, strided, everything.
    {{3, 300}, {1}},
    {{300, 3}, {0}},
    {{2, 150, 7}, {1}},
    {{1000}, {}},
    // Long enough for reduce.comp's 8 unrolled loads, and wider workgroups (up to 1024): a
    // squeeze-excite pool (H, W), a 112x112 one, strided, everything.
    {{2, 3, 40, 50}, {2, 3}},
    {{2, 12544}, {1}},
    {{2100, 3}, {0}},
    {{40000}, {}},
    // Many outputs over strided elements, one invocation per output.
    {{40, 4100}, {0}}};

// Which output element each input element belongs to, and the output shapes.
struct Plan {
  Shape kept_shape;  // keepdims: reduced dims are 1
  Shape out_shape;   // without keepdims
  std::vector<int64_t> out_of;
  int64_t n_out;
};

Plan plan(const Shape& shape, const std::vector<int64_t>& axes) {
  size_t rank = shape.size();
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) reduced[a < 0 ? a + rank : a] = true;
  Plan p;
  for (size_t d = 0; d < rank; ++d) {
    p.kept_shape.push_back(reduced[d] ? 1 : shape[d]);
    if (!reduced[d]) p.out_shape.push_back(shape[d]);
  }
  p.n_out = numel(p.kept_shape);
  for (int64_t i = 0; i < numel(shape); ++i) {
    int64_t rem = i, o = 0, stride = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t c = rem % shape[d];
      rem /= shape[d];
      if (!reduced[d]) o += c * stride;
      stride *= p.kept_shape[d];
    }
    p.out_of.push_back(o);
  }
  return p;
}

// The reduction of `v` and the scale its float rounding error is relative to.
std::pair<double, double> reference(ReduceOp op, const std::vector<double>& v) {
  double sum = 0, abs_sum = 0, sq = 0, prod = 1, mx = -INFINITY, mn = INFINITY;
  for (double x : v) {
    sum += x;
    abs_sum += std::abs(x);
    sq += x * x;
    prod *= x;
    mx = std::max(mx, x);
    mn = std::min(mn, x);
  }
  double lse_sum = 0;
  for (double x : v) lse_sum += std::exp(x - mx);
  double n = static_cast<double>(v.size());
  switch (op) {
    case ReduceOp::Sum:
      return {sum, abs_sum};
    case ReduceOp::Mean:
      return {sum / n, abs_sum / n};
    case ReduceOp::Max:
      return {mx, 0};
    case ReduceOp::Min:
      return {mn, 0};
    case ReduceOp::Prod:
      return {prod, 3 * std::abs(prod)};
    case ReduceOp::L2:
      return {std::sqrt(sq), std::sqrt(sq)};
    case ReduceOp::L1:
      return {abs_sum, abs_sum};
    case ReduceOp::SumSquare:
      return {sq, sq};
    case ReduceOp::LogSumExp:
      return {mx + std::log(lse_sum), 1 + std::abs(mx)};
  }
  return {0, 0};
}

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "Sum";
    case ReduceOp::Mean:
      return "Mean";
    case ReduceOp::Max:
      return "Max";
    case ReduceOp::Min:
      return "Min";
    case ReduceOp::Prod:
      return "Prod";
    case ReduceOp::L2:
      return "L2";
    case ReduceOp::L1:
      return "L1";
    case ReduceOp::SumSquare:
      return "SumSquare";
    case ReduceOp::LogSumExp:
      return "LogSumExp";
  }
  return "?";
}

class ReduceTest : public GpuTest {
 protected:
  // Every case in one graph, each reduced with and without keepdims.
  // `knobs`: kernel tuning (VKGRAPH_TUNE syntax), e.g. the old loop with reduce.unroll=0.
  void check_float(ReduceOp op, float lo, float hi, const char* knobs = "") {
    GraphOptions options;
    options.tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs(knobs));
    ComputeGraph g(context(), options);
    std::vector<std::vector<float>> inputs;
    for (size_t c = 0; c < kCases.size(); ++c) {
      auto x = g.add_input(kCases[c].shape, DType::Float32, "x" + std::to_string(c));
      for (bool keep : {true, false})
        g.add_output(ops::reduce(g, op, x, kCases[c].axes, keep), "y");
      inputs.push_back(random_floats(numel(kCases[c].shape), lo, hi));
    }
    for (size_t c = 0; c < kCases.size(); ++c)
      g.copy_to_input(c, inputs[c].data(), inputs[c].size() * 4);
    g.execute();
    for (size_t c = 0; c < kCases.size(); ++c) {
      Plan p = plan(kCases[c].shape, kCases[c].axes);
      std::vector<std::vector<double>> groups(p.n_out);
      for (size_t i = 0; i < inputs[c].size(); ++i) groups[p.out_of[i]].push_back(inputs[c][i]);
      for (bool keep : {true, false}) {
        HostTensor y = g.read_output(2 * c + !keep);
        std::string what = std::string(op_name(op)) + " " + shape_str(kCases[c].shape) + " axes " +
                           shape_str(kCases[c].axes) + (keep ? " keepdims" : "");
        ASSERT_EQ(y.shape, keep ? p.kept_shape : p.out_shape) << what;
        for (int64_t o = 0; o < p.n_out; ++o) {
          auto [want, scale] = reference(op, groups[o]);
          EXPECT_NEAR(y.data<float>()[o], want, 1e-5 * scale + 1e-6) << what << " at " << o;
        }
      }
    }
  }
};

TEST_F(ReduceTest, Sum) {
  check_float(ReduceOp::Sum, -2, 2);
}
TEST_F(ReduceTest, Mean) {
  check_float(ReduceOp::Mean, -2, 2);
}
TEST_F(ReduceTest, MeanAndMaxWithoutUnrolling) {
  check_float(ReduceOp::Mean, -2, 2, "reduce.unroll=0");
  check_float(ReduceOp::Max, -2, 2, "reduce.unroll=0");
}
TEST_F(ReduceTest, Max) {
  check_float(ReduceOp::Max, -2, 2);
}
TEST_F(ReduceTest, Min) {
  check_float(ReduceOp::Min, -2, 2);
}
TEST_F(ReduceTest, Prod) {
  check_float(ReduceOp::Prod, 0.5, 1.5);
}
TEST_F(ReduceTest, L1) {
  check_float(ReduceOp::L1, -2, 2);
}
TEST_F(ReduceTest, L2) {
  check_float(ReduceOp::L2, -2, 2);
}
TEST_F(ReduceTest, SumSquare) {
  check_float(ReduceOp::SumSquare, -2, 2);
}
TEST_F(ReduceTest, LogSumExp) {
  check_float(ReduceOp::LogSumExp, -50, 50);
}

// Integer reductions wrap like two's complement, so the reference does its arithmetic unsigned.
template <typename I>
void check_integer(std::mt19937& rng, DType dtype) {
  using U = std::make_unsigned_t<I>;
  const std::vector<Case> cases = {
      {{7}, {0}}, {{3, 5}, {1}}, {{2, 3, 4, 5}, {0, 2}}, {{3, 300}, {1}}};
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod}) {
    ComputeGraph g(context());
    std::vector<std::vector<I>> inputs;
    I big = sizeof(I) == 8 ? I(1) << 40 : I(1) << 20;
    std::uniform_int_distribution<I> dist(op == ReduceOp::Prod ? -3 : -big,
                                          op == ReduceOp::Prod ? 3 : big);
    for (size_t c = 0; c < cases.size(); ++c) {
      auto x = g.add_input(cases[c].shape, dtype, "x" + std::to_string(c));
      g.add_output(ops::reduce(g, op, x, cases[c].axes, false), "y");
      inputs.emplace_back(numel(cases[c].shape));
      for (auto& v : inputs.back()) v = dist(rng);
    }
    for (size_t c = 0; c < cases.size(); ++c)
      g.copy_to_input(c, inputs[c].data(), inputs[c].size() * sizeof(I));
    g.execute();
    for (size_t c = 0; c < cases.size(); ++c) {
      Plan p = plan(cases[c].shape, cases[c].axes);
      std::vector<U> sum(p.n_out, 0), prod(p.n_out, 1);
      std::vector<I> mx(p.n_out, std::numeric_limits<I>::min()),
          mn(p.n_out, std::numeric_limits<I>::max());
      for (size_t i = 0; i < inputs[c].size(); ++i) {
        int64_t o = p.out_of[i];
        I v = inputs[c][i];
        sum[o] += U(v);
        prod[o] *= U(v);
        mx[o] = std::max(mx[o], v);
        mn[o] = std::min(mn[o], v);
      }
      HostTensor y = g.read_output(c);
      ASSERT_EQ(y.dtype, dtype);
      for (int64_t o = 0; o < p.n_out; ++o) {
        I want = op == ReduceOp::Sum    ? I(sum[o])
                 : op == ReduceOp::Prod ? I(prod[o])
                 : op == ReduceOp::Max  ? mx[o]
                                        : mn[o];
        EXPECT_EQ(y.data<I>()[o], want) << op_name(op) << " " << shape_str(cases[c].shape);
      }
    }
  }
}

TEST_F(ReduceTest, Int32) {
  check_integer<int32_t>(rng, DType::Int32);
}
TEST_F(ReduceTest, Int64) {
  check_integer<int64_t>(rng, DType::Int64);
}

TEST_F(ReduceTest, EmptyReductionGivesIdentity) {
  ComputeGraph g(context());
  auto x = g.add_tensor({2, 0, 3}, DType::Float32, "x");  // no elements, so nothing to write
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::LogSumExp})
    g.add_output(ops::reduce(g, op, x, {1}, false), op_name(op));
  g.execute();
  const float want[] = {0.f, 1.f, -INFINITY, -INFINITY};
  for (size_t i = 0; i < 4; ++i) {
    HostTensor y = g.read_output(i);
    ASSERT_EQ(y.shape, (Shape{2, 3}));
    for (int64_t o = 0; o < 6; ++o) EXPECT_EQ(y.data<float>()[o], want[i]) << i;
  }
}

TEST_F(ReduceTest, ScalarOverNoAxesIsItself) {
  ComputeGraph g(context());
  auto x = g.add_input({}, DType::Float32, "x");
  g.add_output(ops::reduce(g, ReduceOp::L2, x, {}, true), "y");
  float v = -2.5f;
  g.copy_to_input(0, &v, 4);
  g.execute();
  HostTensor y = g.read_output(0);
  EXPECT_EQ(y.shape, Shape{});
  EXPECT_EQ(y.data<float>()[0], 2.5f);
}

TEST_F(ReduceTest, LogSumExpOfMinusInfinity) {
  ComputeGraph g(context());
  auto x = g.add_input({2, 3}, DType::Float32, "x");
  g.add_output(ops::reduce(g, ReduceOp::LogSumExp, x, {1}, false), "y");
  std::vector<float> v = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, 0.f, -INFINITY};
  g.copy_to_input(0, v.data(), 24);
  g.execute();
  HostTensor y = g.read_output(0);
  EXPECT_EQ(y.data<float>()[0], -INFINITY);
  EXPECT_EQ(y.data<float>()[1], 0.f);
}

TEST_F(ReduceTest, RejectsBadInput) {
  ComputeGraph g(context());
  auto x = g.add_input({2, 3, 4, 5}, DType::Float32, "x");
  auto i = g.add_input({3, 5}, DType::Int32, "i");
  auto b = g.add_input({3, 5}, DType::Bool, "b");
  auto invalid = ErrorKind::InvalidArgument;
  expect_error([&] { ops::reduce(g, ReduceOp::Max, x, {4}, true); }, invalid,
               "reduce_max: axis 4 out of range for rank 4");
  expect_error(
      [&] {
        ops::reduce(g, ReduceOp::Sum, x, {1, -3}, true);
      },
      invalid, "reduce_sum: axis -3 listed twice");
  auto scalar = g.add_input({}, DType::Float32, "scalar");
  expect_error([&] { ops::reduce(g, ReduceOp::Min, scalar, {0}, true); }, invalid,
               "reduce_min: axis 0 given for a scalar input");
  expect_error([&] { ops::reduce(g, ReduceOp::Mean, i, {1}, true); }, ErrorKind::Unsupported,
               "reduce_mean: dtype int32 not supported (accepts float32, float16)");
  expect_error([&] { ops::reduce(g, ReduceOp::Sum, b, {1}, true); }, ErrorKind::Unsupported,
               "reduce_sum: dtype bool not supported (accepts float32, float16, int32, int64)");
}

// --- argmax / argmin ---

struct ArgCase {
  Shape shape;
  int axis;
};

std::vector<int64_t> arg_reference(const std::vector<float>& x, const Shape& shape, int axis,
                                   bool last, bool is_min) {
  size_t a = axis < 0 ? axis + shape.size() : axis;
  int64_t len = shape[a], inner = 1;
  for (size_t d = a + 1; d < shape.size(); ++d) inner *= shape[d];
  int64_t outer = numel(shape) / (len * inner);
  std::vector<int64_t> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < len; ++k) {
        float v = x[(o * len + k) * inner + i], b = x[(o * len + best) * inner + i];
        bool tie = v == b || (std::isnan(v) && std::isnan(b));
        bool wins = std::isnan(v) ? !std::isnan(b) : !std::isnan(b) && (is_min ? v < b : v > b);
        if (wins || (tie && last)) best = k;
      }
      out.push_back(best);
    }
  }
  return out;
}

class ArgmaxTest : public GpuTest {
 protected:
  // Every case in one graph, with all eight combinations of keepdims, select_last, is_min.
  void check(const std::vector<ArgCase>& cases, std::vector<std::vector<float>> inputs,
             DType dtype = DType::Float32) {
    ComputeGraph g(context());
    for (size_t c = 0; c < cases.size(); ++c) {
      auto x = g.add_input(cases[c].shape, dtype, "x" + std::to_string(c));
      for (int variant = 0; variant < 8; ++variant)
        g.add_output(ops::argmax(g, x, cases[c].axis, variant & 1, variant & 2, variant & 4), "y");
    }
    for (size_t c = 0; c < cases.size(); ++c) {
      HostTensor t(dtype, cases[c].shape);
      for (size_t i = 0; i < inputs[c].size(); ++i) {
        if (dtype == DType::Float32) t.data<float>()[i] = inputs[c][i];
        if (dtype == DType::Int32) t.data<int32_t>()[i] = static_cast<int32_t>(inputs[c][i]);
        if (dtype == DType::Int64) t.data<int64_t>()[i] = static_cast<int64_t>(inputs[c][i]);
      }
      g.copy_to_input(c, t.bytes.data(), t.nbytes());
    }
    g.execute();
    for (size_t c = 0; c < cases.size(); ++c) {
      for (int variant = 0; variant < 8; ++variant) {
        bool keep = variant & 1, last = variant & 2, is_min = variant & 4;
        HostTensor y = g.read_output(8 * c + variant);
        Shape want_shape = cases[c].shape;
        size_t a = cases[c].axis < 0 ? cases[c].axis + want_shape.size() : cases[c].axis;
        if (keep)
          want_shape[a] = 1;
        else
          want_shape.erase(want_shape.begin() + a);
        std::string what = shape_str(cases[c].shape) + " axis " + std::to_string(cases[c].axis) +
                           (keep ? " keepdims" : "") + (last ? " last" : "") +
                           (is_min ? " argmin" : " argmax");
        ASSERT_EQ(y.dtype, DType::Int64) << what;
        ASSERT_EQ(y.shape, want_shape) << what;
        auto want = arg_reference(inputs[c], cases[c].shape, cases[c].axis, last, is_min);
        for (size_t o = 0; o < want.size(); ++o)
          EXPECT_EQ(y.data<int64_t>()[o], want[o]) << what << " at " << o;
      }
    }
  }
  // Small integers, so that ties are common and select_last matters.
  std::vector<std::vector<float>> tied_inputs(const std::vector<ArgCase>& cases) {
    std::uniform_int_distribution<int> dist(-4, 4);
    std::vector<std::vector<float>> v;
    for (auto& c : cases) {
      v.emplace_back(numel(c.shape));
      for (auto& x : v.back()) x = static_cast<float>(dist(rng));
    }
    return v;
  }
};

const std::vector<ArgCase> kArgCases = {
    {{1}, 0},
    {{7}, 0},
    {{3, 5}, 0},
    {{3, 5}, 1},
    {{3, 5}, -1},
    {{2, 3, 4, 5}, 0},
    {{2, 3, 4, 5}, 1},
    {{2, 3, 4, 5}, 2},
    {{2, 3, 4, 5}, -1},
    // A workgroup per output: long contiguous and strided; then many strided outputs.
    {{2, 1000}, 1},
    {{300, 3}, 0},
    {{40, 4100}, 0}};

TEST_F(ArgmaxTest, FloatWithTies) {
  check(kArgCases, tied_inputs(kArgCases));
}

TEST_F(ArgmaxTest, FloatDistinct) {
  std::vector<std::vector<float>> v;
  for (auto& c : kArgCases) v.push_back(random_floats(numel(c.shape), -3, 3));
  check(kArgCases, v);
}

TEST_F(ArgmaxTest, Integers) {
  std::vector<ArgCase> cases = {{{3, 5}, 1}, {{2, 1000}, 1}, {{300, 3}, 0}};
  check(cases, tied_inputs(cases), DType::Int32);
  check(cases, tied_inputs(cases), DType::Int64);
}

TEST_F(ArgmaxTest, NanIsTheExtreme) {
  std::vector<ArgCase> cases = {{{2, 5}, 1}, {{1, 300}, 1}};
  auto v = tied_inputs(cases);
  v[0][2] = v[0][4] = NAN;
  v[1][200] = v[1][250] = NAN;
  check(cases, v);
}

TEST_F(ArgmaxTest, RejectsBadInput) {
  ComputeGraph g(context());
  auto x = g.add_input({3, 5}, DType::Float32, "x");
  auto empty = g.add_input({3, 0}, DType::Float32, "empty");
  auto scalar = g.add_input({}, DType::Float32, "scalar");
  auto flags = g.add_input({3, 5}, DType::Bool, "flags");
  auto invalid = ErrorKind::InvalidArgument;
  expect_error([&] { ops::argmax(g, x, 2, true); }, invalid, "argmax: axis 2 out of range");
  expect_error([&] { ops::argmax(g, x, -3, true, false, true); }, invalid, "argmin: axis -3");
  expect_error([&] { ops::argmax(g, empty, 1, true); }, invalid,
               "argmax: axis 1 of [3, 0] is empty");
  expect_error([&] { ops::argmax(g, scalar, 0, true); }, invalid, "argmax: input is a scalar");
  expect_error([&] { ops::argmax(g, flags, 0, true); }, ErrorKind::Unsupported,
               "argmax: dtype bool not supported");
}

}  // namespace
}  // namespace vkgraph::testing

// ops::softmax (and LogSoftmax) against a double-precision reference, over every axis, in both
// of the shader's modes: a workgroup per row (long rows, contiguous or strided) and one
// invocation per row (short rows, or many strided rows).
#include <cmath>

#include "gpu_test.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {
namespace {

struct Case {
  Shape shape;
  int axis;
};

std::vector<double> reference(const std::vector<float>& x, const Shape& shape, int axis, bool log) {
  size_t a = axis < 0 ? axis + shape.size() : axis;
  int64_t len = shape[a], inner = 1;
  for (size_t d = a + 1; d < shape.size(); ++d) inner *= shape[d];
  int64_t outer = numel(shape) / (len * inner);
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
      double m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k) m = std::max(m, double(x[at(k)]));
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x[at(k)] - m);
      for (int64_t k = 0; k < len; ++k)
        y[at(k)] = log ? x[at(k)] - m - std::log(sum) : std::exp(x[at(k)] - m) / sum;
    }
  }
  return y;
}

class SoftmaxTest : public GpuTest {
 protected:
  // All cases in one graph, each with its own input, for both softmax and log-softmax.
  void check(const std::vector<Case>& cases, float lo = -5, float hi = 5) {
    ComputeGraph g(context());
    std::vector<std::vector<float>> inputs;
    for (size_t c = 0; c < cases.size(); ++c) {
      auto x = g.add_input(cases[c].shape, DType::Float32, "x" + std::to_string(c));
      for (bool log : {false, true})
        g.add_output(ops::softmax(g, x, cases[c].axis, log), "y" + std::to_string(2 * c + log));
      inputs.push_back(random_floats(numel(cases[c].shape), lo, hi));
    }
    for (size_t c = 0; c < cases.size(); ++c)
      g.copy_to_input(c, inputs[c].data(), inputs[c].size() * 4);
    g.execute();
    for (size_t c = 0; c < cases.size(); ++c) {
      for (bool log : {false, true}) {
        HostTensor y = g.read_output(2 * c + log);
        ASSERT_EQ(y.shape, cases[c].shape);
        auto want = reference(inputs[c], cases[c].shape, cases[c].axis, log);
        int failures = 0;
        for (size_t i = 0; i < want.size() && failures < 5; ++i) {
          double got = y.data<float>()[i];
          double tol = log ? 2e-6 + 1e-6 * std::abs(want[i]) : 1e-7 + 1e-5 * want[i];
          if (std::abs(got - want[i]) > tol) {
            ADD_FAILURE() << (log ? "log_softmax " : "softmax ") << shape_str(cases[c].shape)
                          << " axis " << cases[c].axis << " at " << i << ": " << got
                          << ", expected " << want[i];
            failures++;
          }
        }
      }
    }
  }
};

TEST_F(SoftmaxTest, EveryAxisOfSmallShapes) {
  std::vector<Case> cases = {{{1}, 0}, {{7}, 0}, {{7}, -1}, {{3, 5}, 0}, {{3, 5}, 1}, {{3, 5}, -2}};
  for (int axis = -4; axis < 4; ++axis) cases.push_back({{2, 3, 4, 5}, axis});
  check(cases);
}

TEST_F(SoftmaxTest, LongRowsShareAWorkgroup) {
  // Contiguous rows longer than the workgroup (not a multiple of it), and strided long rows.
  check({{{3, 300}, 1}, {{2, 1000}, -1}, {{2, 150, 7}, 1}, {{130, 2}, 0}});
}

TEST_F(SoftmaxTest, ManyStridedRowsOnePerInvocation) {
  check({{{2, 40, 2100}, 1}});
}

TEST_F(SoftmaxTest, LargeInputsDoNotOverflow) {
  check({{{4, 50}, 1}, {{50, 3}, 0}}, -1000, 1000);
}

TEST_F(SoftmaxTest, Replays) {
  ComputeGraph g(context());
  auto x = g.add_input({5, 33}, DType::Float32, "x");
  g.add_output(ops::softmax(g, ops::softmax(g, x, 1), 0), "y");
  for (int run = 0; run < 2; ++run) {
    auto v = random_floats(5 * 33, -3, 3);
    g.copy_to_input(0, v.data(), v.size() * 4);
    g.execute();
    auto once = reference(v, {5, 33}, 1, false);
    auto want = reference(std::vector<float>(once.begin(), once.end()), {5, 33}, 0, false);
    HostTensor y = g.read_output(0);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y.data<float>()[i], want[i], 1e-6) << i;
  }
}

void expect_error(const Shape& shape, DType dtype, int axis, ErrorKind kind,
                  const std::string& message) {
  ComputeGraph g(context());
  auto x = g.add_input(shape, dtype, "x");
  try {
    ops::softmax(g, x, axis);
    ADD_FAILURE() << "no error for " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind);
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST_F(SoftmaxTest, RejectsBadInput) {
  expect_error({3, 5}, DType::Float32, 2, ErrorKind::InvalidArgument,
               "softmax: axis 2 out of range");
  expect_error({3, 5}, DType::Float32, -3, ErrorKind::InvalidArgument, "softmax: axis -3");
  expect_error({}, DType::Float32, 0, ErrorKind::InvalidArgument, "softmax: input is a scalar");
  expect_error({3, 5}, DType::Int32, 1, ErrorKind::Unsupported,
               "softmax: dtype int32 not supported (accepts float32, float16)");
}

}  // namespace
}  // namespace vkgraph::testing

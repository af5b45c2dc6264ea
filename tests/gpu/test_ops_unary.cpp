// ops::unary against double-precision std:: references, on shapes that are not multiples of the
// workgroup size, including the tails where naive formulas lose their relative precision.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "gpu_test.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {
namespace {

using ops::UnaryOp;
using ops::UnaryParams;
using Ref = std::function<double(double)>;

const std::vector<Shape> kShapes = {{1}, {7}, {3, 5}, {2, 3, 4, 5}, {3, 129}};

struct Tolerance {
  double rtol, atol;
};
constexpr Tolerance kExact{0, 0};
constexpr Tolerance kSimple{1e-6, 1e-7};
constexpr Tolerance kTranscendental{1e-5, 1e-6};

// Runs unary(op) on each input (one graph) and returns the outputs.
std::vector<HostTensor> run_unary(UnaryOp op, UnaryParams params,
                                  const std::vector<HostTensor>& inputs) {
  ComputeGraph g(context());
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto x = g.add_input(inputs[i].shape, inputs[i].dtype, "x" + std::to_string(i));
    g.add_output(ops::unary(g, op, x, params), "y" + std::to_string(i));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    g.copy_to_input(i, inputs[i].bytes.data(), inputs[i].nbytes());
  g.execute();
  std::vector<HostTensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) out.push_back(g.read_output(i));
  return out;
}

HostTensor float_tensor(Shape shape, const std::vector<float>& v) {
  return HostTensor::from(DType::Float32, std::move(shape), v);
}

void expect_close(const HostTensor& x, const HostTensor& y, const Ref& ref, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(y.shape, x.shape) << what;
  ASSERT_EQ(y.dtype, DType::Float32) << what;
  int failures = 0;
  for (int64_t i = 0; i < x.numel() && failures < 5; ++i) {
    double in = x.data<float>()[i];
    double want = ref(in);
    double got = y.data<float>()[i];
    bool ok = std::isnan(want) ? std::isnan(got)
                               : std::abs(got - want) <= tol.atol + tol.rtol * std::abs(want);
    if (!ok) {
      ADD_FAILURE() << what << " " << shape_str(x.shape) << " at " << i << ": f(" << in
                    << ") = " << got << ", expected " << want;
      failures++;
    }
  }
}

class UnaryTest : public GpuTest {
 protected:
  // Every test shape filled from [lo, hi], plus `extra` values as one more [n] input.
  std::vector<HostTensor> inputs(float lo, float hi, const std::vector<float>& extra = {}) {
    std::vector<HostTensor> v;
    for (auto& s : kShapes) v.push_back(float_tensor(s, random_floats(numel(s), lo, hi)));
    if (!extra.empty()) v.push_back(float_tensor({static_cast<int64_t>(extra.size())}, extra));
    return v;
  }
  void check(UnaryOp op, const Ref& ref, Tolerance tol, float lo, float hi,
             const std::vector<float>& extra = {}, UnaryParams params = {}) {
    auto in = inputs(lo, hi, extra);
    auto out = run_unary(op, params, in);
    for (size_t i = 0; i < in.size(); ++i) expect_close(in[i], out[i], ref, tol, "f");
  }
};

double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}
double softplus(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}
double gelu(double x) {
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}
// 0.5 x (1 + tanh(u)) written as x sigmoid(2u), which stays exact in double for x << 0.
double gelu_tanh(double x) {
  return x * sigmoid(2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x));
}

TEST_F(UnaryTest, Relu) {
  check(UnaryOp::Relu, [](double x) { return std::max(x, 0.0); }, kExact, -2, 2, {0.f});
}
TEST_F(UnaryTest, Neg) {
  check(
      UnaryOp::Neg, [](double x) { return -x; }, kExact, -2, 2);
}
TEST_F(UnaryTest, Abs) {
  check(
      UnaryOp::Abs, [](double x) { return std::abs(x); }, kExact, -2, 2);
}
TEST_F(UnaryTest, Floor) {
  check(UnaryOp::Floor, [](double x) { return std::floor(x); }, kExact, -5, 5, {-2.f, 3.f, -0.5f});
}
TEST_F(UnaryTest, Ceil) {
  check(UnaryOp::Ceil, [](double x) { return std::ceil(x); }, kExact, -5, 5, {-2.f, 3.f, -0.5f});
}
TEST_F(UnaryTest, RoundHalfToEven) {
  // std::nearbyint rounds half to even in the default rounding mode, as ONNX Round does.
  check(UnaryOp::Round, [](double x) { return std::nearbyint(x); }, kExact, -5, 5,
        {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.49999f, 1e7f + 1.f});
}
TEST_F(UnaryTest, Sign) {
  check(UnaryOp::Sign, [](double x) { return double((x > 0) - (x < 0)); }, kExact, -2, 2, {0.f});
}
TEST_F(UnaryTest, Reciprocal) {
  check(UnaryOp::Reciprocal, [](double x) { return 1 / x; }, kSimple, 0.1f, 5, {-0.25f, -3.f});
}
TEST_F(UnaryTest, Sqrt) {
  check(UnaryOp::Sqrt, [](double x) { return std::sqrt(x); }, kSimple, 0, 100, {0.f, 1e-8f});
}
TEST_F(UnaryTest, Exp) {
  check(
      UnaryOp::Exp, [](double x) { return std::exp(x); }, kTranscendental, -20, 20);
}
TEST_F(UnaryTest, Log) {
  check(UnaryOp::Log, [](double x) { return std::log(x); }, kTranscendental, 1e-3f, 1e3f,
        {1.f, 0.999f, 1.001f});
}
TEST_F(UnaryTest, Sin) {
  check(UnaryOp::Sin, [](double x) { return std::sin(x); }, kTranscendental, -20, 20,
        {0.f, 1e-6f, 3.14159265f, 1000.f, -5000.f, 10000.f, 99999.3f, -65432.1f});
}
TEST_F(UnaryTest, Cos) {
  check(UnaryOp::Cos, [](double x) { return std::cos(x); }, kTranscendental, -20, 20,
        {0.f, 1.57079633f, 1000.f, -5000.f, 10000.f, 99999.3f, -65432.1f});
}
TEST_F(UnaryTest, Erf) {
  check(UnaryOp::Erf, [](double x) { return std::erf(x); }, {2e-6, 1e-7}, -5, 5,
        {0.f, 1e-6f, -1e-3f, 0.999f, 1.f, 3.9f, 9.9f, 12.f, -30.f});
}
TEST_F(UnaryTest, Sigmoid) {
  check(UnaryOp::Sigmoid, sigmoid, kTranscendental, -30, 30, {-100.f, 100.f, -1e4f, 0.f});
}
TEST_F(UnaryTest, Tanh) {
  check(UnaryOp::Tanh, [](double x) { return std::tanh(x); }, kTranscendental, -12, 12,
        {-100.f, 100.f, 1e-5f, -0.3f, 0.f});
}
TEST_F(UnaryTest, Gelu) {
  check(UnaryOp::Gelu, gelu, kTranscendental, -8, 8, {0.f, 50.f, -50.f});
}
TEST_F(UnaryTest, GeluTanh) {
  check(UnaryOp::GeluTanh, gelu_tanh, kTranscendental, -8, 8, {0.f, 50.f, -50.f});
}
TEST_F(UnaryTest, Softplus) {
  check(UnaryOp::Softplus, softplus, kTranscendental, -30, 30, {-200.f, 200.f, 0.f});
}
TEST_F(UnaryTest, Mish) {
  check(UnaryOp::Mish, [](double x) { return x * std::tanh(softplus(x)); }, kTranscendental, -20,
        20, {-200.f, 200.f, 0.f});
}
TEST_F(UnaryTest, LeakyRelu) {
  check(UnaryOp::LeakyRelu, [](double x) { return x >= 0 ? x : 0.1 * x; }, kSimple, -2, 2, {0.f},
        {0.1f, 0.f});
}
TEST_F(UnaryTest, Elu) {
  check(UnaryOp::Elu, [](double x) { return x > 0 ? x : 1.3 * std::expm1(x); }, kTranscendental, -5,
        5, {-1e-4f, 0.f}, {1.3f, 0.f});
}
TEST_F(UnaryTest, Selu) {
  const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  check(UnaryOp::Selu, [&](double x) { return gamma * (x > 0 ? x : alpha * std::expm1(x)); },
        kTranscendental, -5, 5, {-1e-4f, 0.f},
        {static_cast<float>(alpha), static_cast<float>(gamma)});
}
TEST_F(UnaryTest, Clip) {
  check(UnaryOp::Clip, [](double x) { return std::min(std::max(x, -0.5), 0.75); }, kExact, -2, 2,
        {-0.5f, 0.75f}, {-0.5f, 0.75f});
}
TEST_F(UnaryTest, HardSigmoid) {
  check(UnaryOp::HardSigmoid, [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }, kSimple,
        -5, 5, {-2.5f, 2.5f}, {0.2f, 0.5f});
}
TEST_F(UnaryTest, Silu) {
  check(UnaryOp::Silu, [](double x) { return x / (1 + std::exp(-x)); }, kSimple, -12, 12,
        {0.f, -90.f, 90.f});
}
TEST_F(UnaryTest, HardSwish) {
  check(UnaryOp::HardSwish, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, kSimple,
        -5, 5, {-3.f, 3.f, 0.f});
}
// GLSL's inverse trigonometric built-ins have loose precision requirements; ONNX tolerates
// 1e-3 relative.
constexpr Tolerance kInverse{1e-4, 1e-5};
TEST_F(UnaryTest, Tan) {
  check(UnaryOp::Tan, [](double x) { return std::tan(x); }, kTranscendental, -1.4f, 1.4f, {0.f});
}
TEST_F(UnaryTest, InverseTrigonometric) {
  check(UnaryOp::Asin, [](double x) { return std::asin(x); }, kInverse, -0.99f, 0.99f,
        {0.f, -1.f, 1.f});
  check(UnaryOp::Acos, [](double x) { return std::acos(x); }, kInverse, -0.99f, 0.99f,
        {0.f, -1.f, 1.f});
  check(UnaryOp::Atan, [](double x) { return std::atan(x); }, kInverse, -20, 20, {0.f});
  check(UnaryOp::Asinh, [](double x) { return std::asinh(x); }, kInverse, -20, 20, {0.f});
  check(UnaryOp::Acosh, [](double x) { return std::acosh(x); }, kInverse, 1.01f, 20, {1.f});
  check(UnaryOp::Atanh, [](double x) { return std::atanh(x); }, kInverse, -0.95f, 0.95f, {0.f});
}
TEST_F(UnaryTest, Hyperbolic) {
  check(UnaryOp::Sinh, [](double x) { return std::sinh(x); }, kTranscendental, -10, 10,
        {1e-5f, -1e-3f});
  check(UnaryOp::Cosh, [](double x) { return std::cosh(x); }, kTranscendental, -10, 10, {0.f});
}
TEST_F(UnaryTest, SoftsignThresholdedReluCelu) {
  check(
      UnaryOp::Softsign, [](double x) { return x / (1 + std::fabs(x)); }, kSimple, -10, 10);
  check(UnaryOp::ThresholdedRelu, [](double x) { return x > 0.5 ? x : 0.0; }, kExact, -2, 2,
        {0.5f, 0.75f}, {0.5f, 0.f});
  check(UnaryOp::Celu,
        [](double x) { return std::max(x, 0.0) + std::min(0.0, 2.0 * std::expm1(x / 2.0)); },
        kTranscendental, -5, 5, {0.f}, {2.f, 0.f});
}
TEST_F(UnaryTest, IdentityFloat) {
  check(
      UnaryOp::Identity, [](double x) { return x; }, kExact, -2, 2);
}

// Results far below 1, where 1 + erf(x), 1 + tanh(x), log(1 + e^x) or e^x - 1 would cancel:
// the relative error stays small, not just the absolute one.
TEST_F(UnaryTest, RelativePrecisionInTails) {
  // exp() may be off by 3 + 2|x| ulp (Vulkan's bound), which the tolerance leaves room for.
  const Tolerance rel{1e-5, 0};
  std::vector<float> neg = {-3.f, -5.f, -8.f, -10.f};
  std::vector<float> far = {-20.f, -40.f, -60.f};
  std::vector<float> tiny = {1e-6f, -3e-5f, 2e-4f, -0.01f, 0.3f};
  auto run = [&](UnaryOp op, const std::vector<float>& v, const Ref& ref, UnaryParams params = {}) {
    HostTensor x = float_tensor({static_cast<int64_t>(v.size())}, v);
    expect_close(x, run_unary(op, params, {x})[0], ref, rel, "tail");
  };
  run(UnaryOp::Gelu, neg, gelu);
  run(UnaryOp::GeluTanh, {-3.f, -5.f, -7.f}, gelu_tanh);
  run(UnaryOp::Sigmoid, far, sigmoid);
  run(UnaryOp::Softplus, far, softplus);
  run(UnaryOp::Mish, far, [](double x) { return x * std::tanh(softplus(x)); });
  run(UnaryOp::Erf, tiny, [](double x) { return std::erf(x); });
  run(UnaryOp::Tanh, tiny, [](double x) { return std::tanh(x); });
  run(UnaryOp::Elu, tiny, [](double x) { return x > 0 ? x : std::expm1(x); }, {1.f, 0.f});
}

template <typename I>
void check_integer(UnaryOp op, DType dtype, I (*ref)(I)) {
  std::vector<I> v = {
      0, 1, -1, 7, -123456, std::numeric_limits<I>::max(), std::numeric_limits<I>::min() + 1};
  if constexpr (sizeof(I) == 8) v.push_back(int64_t{1} << 40);
  for (I i = -9; i < 9; ++i) v.push_back(i * 37);
  HostTensor x = HostTensor::from(dtype, {static_cast<int64_t>(v.size())}, v);
  HostTensor y = run_unary(op, {}, {x})[0];
  ASSERT_EQ(y.dtype, dtype);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(y.data<I>()[i], ref(v[i])) << v[i];
}

template <typename I>
void check_integer_ops(DType dtype) {
  check_integer<I>(UnaryOp::Neg, dtype, [](I v) -> I { return -v; });
  check_integer<I>(UnaryOp::Abs, dtype, [](I v) -> I { return v < 0 ? -v : v; });
  check_integer<I>(UnaryOp::Sign, dtype, [](I v) -> I { return (v > 0) - (v < 0); });
  check_integer<I>(UnaryOp::Identity, dtype, [](I v) -> I { return v; });
}

TEST_F(UnaryTest, Int32) {
  check_integer_ops<int32_t>(DType::Int32);
}
TEST_F(UnaryTest, Int64) {
  check_integer_ops<int64_t>(DType::Int64);
}

TEST_F(UnaryTest, NotAndIdentityOnBool) {
  for (Shape shape : {Shape{1}, Shape{7}, Shape{3, 5}, Shape{2, 3, 4, 5}}) {
    HostTensor x(DType::Bool, shape);
    std::bernoulli_distribution coin(0.5);
    for (auto& b : x.bytes) b = coin(rng);
    HostTensor n = run_unary(UnaryOp::Not, {}, {x})[0];
    HostTensor id = run_unary(UnaryOp::Identity, {}, {x})[0];
    ASSERT_EQ(n.dtype, DType::Bool);
    ASSERT_EQ(n.shape, shape);
    for (size_t i = 0; i < x.bytes.size(); ++i) {
      EXPECT_EQ(n.bytes[i], x.bytes[i] ? 0 : 1) << i;
      EXPECT_EQ(id.bytes[i], x.bytes[i]) << i;
    }
  }
}

// A chain of unary ops reads what the previous dispatch wrote (synchronization validation
// checks the barriers) and replays correctly.
TEST_F(UnaryTest, ChainReplays) {
  ComputeGraph g(context());
  auto x = g.add_input({301}, DType::Float32, "x");
  auto y = ops::unary(g, UnaryOp::Tanh, ops::unary(g, UnaryOp::Exp, x));
  g.add_output(ops::unary(g, UnaryOp::Neg, y), "y");
  for (int run = 0; run < 2; ++run) {
    auto v = random_floats(301, -3, 1);
    g.copy_to_input(0, v.data(), v.size() * 4);
    g.execute();
    HostTensor out = g.read_output(0);
    for (size_t i = 0; i < v.size(); ++i)
      EXPECT_NEAR(out.data<float>()[i], -std::tanh(std::exp(double(v[i]))), 2e-6) << i;
  }
}

void expect_unsupported(UnaryOp op, DType dtype, const std::string& message) {
  ComputeGraph g(context());
  auto x = g.add_input({4}, dtype, "x");
  try {
    ops::unary(g, op, x);
    ADD_FAILURE() << "no error for " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST_F(UnaryTest, RejectsUnsupportedDtypes) {
  expect_unsupported(UnaryOp::Relu, DType::Int32, "relu: dtype int32");
  expect_unsupported(UnaryOp::Sqrt, DType::Int64, "sqrt: dtype int64");
  expect_unsupported(UnaryOp::Not, DType::Float32, "not: dtype float32");
  expect_unsupported(UnaryOp::Neg, DType::Bool, "neg: dtype bool");
}

}  // namespace
}  // namespace vkgraph::testing

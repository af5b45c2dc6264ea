// NaN and +-inf follow ONNX's reference semantics (NumPy's, IEEE arithmetic) in every op, fused
// into an epilogue or not, in float32 and float16 mode: a NaN input gives NaN wherever NumPy
// gives NaN, and infinities give the IEEE results. GLSL leaves max/min/clamp undefined for NaN,
// so drivers may or may not propagate it; these tests check the values, the shaders handle NaN
// explicitly (common.glsl's max_nan and friends).
#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "model_builder.h"
#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInff = std::numeric_limits<float>::infinity();

// The special values every op sees, among ordinary ones.
const std::vector<float> kSpecial = {kNaNf, kInff, -kInff, -2.5f, -1.f,   -0.3f,
                                     0.f,   0.4f,  1.f,    3.f,   -kNaNf, 0.7f};

std::string mode_name(bool fp16) {
  return fp16 ? "fp16" : "fp32";
}

// got[i] against want[i]: NaN where want is NaN, the same infinity where want is infinite, else
// within tol relative to (1 + |want|).
void expect_ieee(const HostTensor& got, const std::vector<double>& want,
                 const std::vector<float>& inputs, double tol, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.as_double(static_cast<int64_t>(i)), w = want[i];
    std::ostringstream where;
    where << what << " element " << i;
    if (i < inputs.size()) where << " (input " << inputs[i] << ")";
    if (std::isnan(w))
      EXPECT_TRUE(std::isnan(g)) << where.str() << ": got " << g << ", want NaN";
    else if (std::isinf(w))
      EXPECT_EQ(g, w) << where.str();
    else
      EXPECT_NEAR(g, w, tol * (1 + std::abs(w))) << where.str();
  }
}

bool fp16_available() {
  return context()->features().storage_buffer_16bit;
}

std::vector<bool> modes() {
  std::vector<bool> m{false};
  if (fp16_available()) m.push_back(true);
  return m;
}

double tolerance(bool fp16) {
  return fp16 ? 1e-2 : 2e-5;
}

// ---- Unary ops -------------------------------------------------------------------------------

struct UnaryCase {
  const char* op;
  std::function<double(double)> ref;
  std::function<void(ModelBuilder&, onnx::NodeProto&)> attrs = {};
};

double np_sign(double x) {
  return std::isnan(x) ? x : (x > 0) - (x < 0);
}
double clip(double x, double lo, double hi) {
  return std::isnan(x) ? x : std::min(std::max(x, lo), hi);
}
double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

std::vector<UnaryCase> unary_cases() {
  return {
      {"Relu", [](double x) { return x < 0 ? 0 : x; }},
      {"Clip", [](double x) { return clip(x, -1, 0.5); },
       [](ModelBuilder& m, onnx::NodeProto& n) {
         m.initializer("lo", Shape{}, std::vector<float>{-1.f});
         m.initializer("hi", Shape{}, std::vector<float>{0.5f});
         n.add_input("lo");
         n.add_input("hi");
       }},
      {"HardSigmoid", [](double x) { return clip(0.2 * x + 0.5, 0, 1); }},
      {"HardSwish", [](double x) { return x * clip(x / 6 + 0.5, 0, 1); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Sigmoid", sigmoid},
      {"LeakyRelu", [](double x) { return x >= 0 ? x : 0.01 * x; }},
      {"Elu", [](double x) { return x > 0 ? x : std::expm1(x); }},
      {"Selu",
       [](double x) {
         return 1.05070102214813232421875 * (x > 0 ? x : 1.67326319217681884765625 * std::expm1(x));
       }},
      {"Celu",
       [](double x) {
         // np.maximum(0, x) + np.minimum(0, expm1(x)); std::max/min would drop the NaN.
         return std::isnan(x) ? x : std::max(0.0, x) + std::min(0.0, std::expm1(x));
       }},
      {"Softplus", [](double x) { return std::log1p(std::exp(x)); }},
      {"Softsign", [](double x) { return x / (1 + std::abs(x)); }},
      {"Mish", [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }},
      {"ThresholdedRelu", [](double x) { return x > 1 ? x : 0; }},  // np.where(x > alpha, x, 0)
      {"Sign", np_sign},
      {"Abs", [](double x) { return std::abs(x); }},
      {"Neg", [](double x) { return -x; }},
      {"Exp", [](double x) { return std::exp(x); }},
      {"Log", [](double x) { return std::log(x); }},
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Reciprocal", [](double x) { return 1 / x; }},
      {"Floor", [](double x) { return std::floor(x); }},
      {"Ceil", [](double x) { return std::ceil(x); }},
      {"Round", [](double x) { return std::nearbyint(x); }},
      {"Erf", [](double x) { return std::erf(x); }},
      {"Sin", [](double x) { return std::sin(x); }},
      {"Cos", [](double x) { return std::cos(x); }},
      {"Tan", [](double x) { return std::tan(x); }},
      {"Asin", [](double x) { return std::asin(x); }},
      {"Acos", [](double x) { return std::acos(x); }},
      {"Atan", [](double x) { return std::atan(x); }},
      {"Sinh", [](double x) { return std::sinh(x); }},
      {"Cosh", [](double x) { return std::cosh(x); }},
      {"Asinh", [](double x) { return std::asinh(x); }},
      {"Acosh", [](double x) { return std::acosh(x); }},
      {"Atanh", [](double x) { return std::atanh(x); }},
  };
}

class NanSemantics : public GpuTest {};

TEST_F(NanSemantics, UnaryOps) {
  // Atanh of +-1 is +-inf: add them to the ordinary values.
  std::vector<float> xs = kSpecial;
  xs.push_back(-0.f);
  for (const UnaryCase& c : unary_cases()) {
    for (bool fp16 : modes()) {
      SCOPED_TRACE(std::string(c.op) + " " + mode_name(fp16));
      ModelBuilder m(std::string(c.op) == "Mish" ? 18 : 14);  // Mish came with opset 18
      m.input("x", kFloat, {static_cast<int64_t>(xs.size())});
      m.output("y", kFloat);
      onnx::NodeProto& n = m.node(c.op, {"x"}, {"y"});
      if (c.attrs) c.attrs(m, n);
      SessionOptions o;
      o.fp16 = fp16;
      Session s = m.session(o);
      auto out = s.run({{"x", HostTensor::from(DType::Float32, {int64_t(xs.size())}, xs)}});
      std::vector<double> want;
      for (float x : xs) want.push_back(c.ref(x));
      expect_ieee(out[0], want, xs, tolerance(fp16), c.op);
    }
  }
}

// Clip whose bounds are model inputs lowers to Max and Min; a NaN bound gives NaN (np.clip).
TEST_F(NanSemantics, ClipWithTensorBounds) {
  for (bool fp16 : modes()) {
    SCOPED_TRACE(mode_name(fp16));
    ModelBuilder m(13);
    m.input("x", kFloat, {int64_t(kSpecial.size())});
    m.input("lo", kFloat, {});
    m.input("hi", kFloat, {});
    m.output("y", kFloat);
    m.node("Clip", {"x", "lo", "hi"}, {"y"});
    SessionOptions o;
    o.fp16 = fp16;
    Session s = m.session(o);
    auto x = HostTensor::from(DType::Float32, {int64_t(kSpecial.size())}, kSpecial);
    auto out = s.run({{"x", x},
                      {"lo", HostTensor::from(DType::Float32, {}, std::vector<float>{-1.f})},
                      {"hi", HostTensor::from(DType::Float32, {}, std::vector<float>{2.f})}});
    std::vector<double> want;
    for (float v : kSpecial) want.push_back(clip(v, -1, 2));
    expect_ieee(out[0], want, kSpecial, tolerance(fp16), "Clip");
  }
}

// ---- Binary ops ------------------------------------------------------------------------------

TEST_F(NanSemantics, BinaryOps) {
  // Every pair of special and ordinary values.
  const std::vector<float> vals = {kNaNf, kInff, -kInff, -2.f, -0.5f, 0.f, 0.5f, 1.f, 3.f};
  std::vector<float> a, b;
  for (float x : vals)
    for (float y : vals) a.push_back(x), b.push_back(y);
  const int64_t n = static_cast<int64_t>(a.size());
  struct Case {
    const char* op;
    std::function<double(double, double)> ref;
    bool fmod = false;
  };
  const std::vector<Case> cases = {
      {"Max",
       [](double x, double y) { return std::isnan(x) || std::isnan(y) ? kNaN : std::max(x, y); }},
      {"Min",
       [](double x, double y) { return std::isnan(x) || std::isnan(y) ? kNaN : std::min(x, y); }},
      {"Add", [](double x, double y) { return x + y; }},
      {"Sub", [](double x, double y) { return x - y; }},
      {"Mul", [](double x, double y) { return x * y; }},
      {"Div", [](double x, double y) { return x / y; }},
      {"Pow", [](double x, double y) { return std::pow(x, y); }},
      {"Mod", [](double x, double y) { return std::fmod(x, y); }, true},
  };
  for (const Case& c : cases) {
    for (bool fp16 : modes()) {
      SCOPED_TRACE(std::string(c.op) + " " + mode_name(fp16));
      ModelBuilder m(14);
      m.input("a", kFloat, {n});
      m.input("b", kFloat, {n});
      m.output("y", kFloat);
      onnx::NodeProto& node = m.node(c.op, {"a", "b"}, {"y"});
      if (c.fmod) set_int(node, "fmod", 1);
      SessionOptions o;
      o.fp16 = fp16;
      Session s = m.session(o);
      auto out = s.run({{"a", HostTensor::from(DType::Float32, {n}, a)},
                        {"b", HostTensor::from(DType::Float32, {n}, b)}});
      std::vector<double> want;
      for (int64_t i = 0; i < n; ++i) want.push_back(c.ref(a[i], b[i]));
      // Element i is vals[i / 9] OP vals[i % 9].
      expect_ieee(out[0], want, {}, tolerance(fp16), c.op);
    }
  }
}

// ---- Reductions, pooling, softmax, arg-reductions ---------------------------------------------

// Rows of 6: one NaN, +inf, -inf, both infinities, all -inf, ordinary, NaN and inf.
const std::vector<std::vector<float>> kRows = {
    {0.5f, kNaNf, 2.f, -1.f, 0.25f, 1.f},
    {0.5f, kInff, 2.f, -1.f, 0.25f, 1.f},
    {0.5f, -kInff, 2.f, -1.f, 0.25f, 1.f},
    {kInff, -kInff, 2.f, -1.f, 0.25f, 1.f},
    {-kInff, -kInff, -kInff, -kInff, -kInff, -kInff},
    {0.5f, -0.75f, 2.f, -1.f, 0.25f, 1.f},
    {kInff, 1.f, 2.f, kNaNf, 0.25f, -kInff},
    {3.f, 2.f, 1.f, 0.f, -1.f, kNaNf},
};

std::vector<float> flat_rows() {
  std::vector<float> v;
  for (auto& r : kRows) v.insert(v.end(), r.begin(), r.end());
  return v;
}

double np_max(const std::vector<float>& r) {
  double m = -kInf;
  for (float v : r) m = std::isnan(v) || std::isnan(m) ? kNaN : std::max<double>(m, v);
  return m;
}
double np_min(const std::vector<float>& r) {
  double m = kInf;
  for (float v : r) m = std::isnan(v) || std::isnan(m) ? kNaN : std::min<double>(m, v);
  return m;
}

HostTensor run_rows(const std::function<void(ModelBuilder&)>& build, int opset, bool fp16,
                    int out_type = kFloat) {
  const int64_t rows = kRows.size(), cols = kRows[0].size();
  ModelBuilder m(opset);
  m.input("x", kFloat, {rows, cols});
  m.output("y", out_type);
  build(m);
  SessionOptions o;
  o.fp16 = fp16;
  Session s = m.session(o);
  return s.run({{"x", HostTensor::from(DType::Float32, {rows, cols}, flat_rows())}})[0];
}

TEST_F(NanSemantics, Reductions) {
  struct Case {
    const char* op;
    std::function<double(const std::vector<float>&)> ref;
  };
  auto sum = [](const std::vector<float>& r, auto f) {
    double s = 0;
    for (float v : r) s += f(double(v));
    return s;
  };
  const std::vector<Case> cases = {
      {"ReduceMax", np_max},
      {"ReduceMin", np_min},
      {"ReduceSum", [&](auto& r) { return sum(r, [](double v) { return v; }); }},
      {"ReduceMean", [&](auto& r) { return sum(r, [](double v) { return v; }) / r.size(); }},
      {"ReduceL1", [&](auto& r) { return sum(r, [](double v) { return std::abs(v); }); }},
      {"ReduceL2", [&](auto& r) { return std::sqrt(sum(r, [](double v) { return v * v; })); }},
      {"ReduceLogSumExp",
       [&](auto& r) { return std::log(sum(r, [](double v) { return std::exp(v); })); }},
      {"ReduceProd",
       [](auto& r) {
         double p = 1;
         for (float v : r) p *= v;
         return p;
       }},
  };
  for (const Case& c : cases) {
    for (bool fp16 : modes()) {
      SCOPED_TRACE(std::string(c.op) + " " + mode_name(fp16));
      HostTensor y = run_rows(
          [&](ModelBuilder& m) {
            onnx::NodeProto& n = m.node(c.op, {"x"}, {"y"});
            set_ints(n, "axes", {1});
            set_int(n, "keepdims", 0);
          },
          11, fp16);
      std::vector<double> want;
      for (auto& r : kRows) want.push_back(c.ref(r));
      expect_ieee(y, want, {}, tolerance(fp16), c.op);
    }
  }
}

// np.argmax / np.argmin: the first NaN wins, else the first extreme (infinities included).
TEST_F(NanSemantics, ArgMaxArgMin) {
  for (bool is_max : {true, false}) {
    for (bool fp16 : modes()) {
      SCOPED_TRACE(std::string(is_max ? "ArgMax " : "ArgMin ") + mode_name(fp16));
      HostTensor y = run_rows(
          [&](ModelBuilder& m) {
            onnx::NodeProto& n = m.node(is_max ? "ArgMax" : "ArgMin", {"x"}, {"y"});
            set_int(n, "axis", 1);
            set_int(n, "keepdims", 0);
          },
          13, fp16, onnx::TensorProto::INT64);
      std::vector<double> want;
      for (auto& r : kRows) {
        size_t best = 0;
        for (size_t i = 0; i < r.size(); ++i) {
          if (std::isnan(r[best])) break;
          if (std::isnan(r[i]) || (is_max ? r[i] > r[best] : r[i] < r[best])) best = i;
        }
        want.push_back(double(best));
      }
      expect_ieee(y, want, {}, 0, is_max ? "ArgMax" : "ArgMin");
    }
  }
}

// Softmax and LogSoftmax as ONNX's reference computes them: exp(x - max) over the row sum, so
// a NaN or +inf anywhere in a row makes the row NaN, and -inf entries give 0 (or -inf).
TEST_F(NanSemantics, Softmax) {
  for (bool log : {false, true}) {
    for (bool fp16 : modes()) {
      const char* op = log ? "LogSoftmax" : "Softmax";
      SCOPED_TRACE(std::string(op) + " " + mode_name(fp16));
      HostTensor y = run_rows(
          [&](ModelBuilder& m) { set_int(m.node(op, {"x"}, {"y"}), "axis", 1); }, 13, fp16);
      std::vector<double> want;
      for (auto& r : kRows) {
        const double mx = np_max(r);
        double sum = 0;
        for (float v : r) sum += std::exp(v - mx);
        for (float v : r) want.push_back(log ? (v - mx) - std::log(sum) : std::exp(v - mx) / sum);
      }
      expect_ieee(y, want, flat_rows(), tolerance(fp16), op);
    }
  }
}

// MaxPool and GlobalMaxPool: a NaN in a window gives NaN; AveragePool for comparison.
TEST_F(NanSemantics, Pooling) {
  // 1x2x4x4: channel 0 holds a NaN at (1,1) and +inf at (2,3); channel 1 -inf at (0,0) and
  // both infinities in its last window.
  std::vector<float> x(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i) * 1.3f);
  x[1 * 4 + 1] = kNaNf;
  x[2 * 4 + 3] = kInff;
  x[16 + 0] = -kInff;
  x[16 + 2 * 4 + 2] = kInff;
  x[16 + 3 * 4 + 3] = -kInff;
  auto window = [&](int c, int h0, int w0, int k) {
    std::vector<float> v;
    for (int h = h0; h < h0 + k; ++h)
      for (int w = w0; w < w0 + k; ++w) v.push_back(x[c * 16 + h * 4 + w]);
    return v;
  };
  for (const char* op : {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"}) {
    for (bool fp16 : modes()) {
      SCOPED_TRACE(std::string(op) + " " + mode_name(fp16));
      const bool global = std::string(op).starts_with("Global");
      const bool is_max = std::string(op).find("Max") != std::string::npos;
      ModelBuilder m(13);
      m.input("x", kFloat, {1, 2, 4, 4});
      m.output("y", kFloat);
      onnx::NodeProto& n = m.node(op, {"x"}, {"y"});
      if (!global) {
        set_ints(n, "kernel_shape", {2, 2});
        set_ints(n, "strides", {2, 2});
      }
      SessionOptions o;
      o.fp16 = fp16;
      Session s = m.session(o);
      auto out = s.run({{"x", HostTensor::from(DType::Float32, {1, 2, 4, 4}, x)}});
      std::vector<double> want;
      const int k = global ? 4 : 2;
      for (int c = 0; c < 2; ++c)
        for (int h = 0; h < 4; h += k)
          for (int w = 0; w < 4; w += k) {
            auto v = window(c, h, w, k);
            double mean = 0;
            for (float e : v) mean += e;
            want.push_back(is_max ? np_max(v) : mean / v.size());
          }
      expect_ieee(out[0], want, {}, tolerance(fp16), op);
    }
  }
}

// ---- Activations fused into Conv, MatMul and Gemm epilogues ----------------------------------

struct Activation {
  const char* op;
  std::function<double(double)> ref;
};

std::vector<Activation> epilogue_activations() {
  return {{"Relu", [](double x) { return x < 0 ? 0 : x; }},
          {"Clip", [](double x) { return clip(x, 0, 6); }},
          {"HardSigmoid", [](double x) { return clip(0.2 * x + 0.5, 0, 1); }},
          {"HardSwish", [](double x) { return x * clip(x / 6 + 0.5, 0, 1); }},
          {"LeakyRelu", [](double x) { return x >= 0 ? x : 0.01 * x; }},
          {"Sigmoid", sigmoid},
          {"Tanh", [](double x) { return std::tanh(x); }},
          {"", [](double x) { return x; }}};
}

// Appends `act` (Clip with constant bounds 0 and 6) reading `in` and writing `out`.
void add_activation(ModelBuilder& m, const std::string& act, const std::string& in,
                    const std::string& out) {
  if (act.empty()) {
    m.node("Identity", {in}, {out});
    return;
  }
  onnx::NodeProto& n = m.node(act, {in}, {out});
  if (act == "Clip") {
    m.initializer("clip_lo", Shape{}, std::vector<float>{0.f});
    m.initializer("clip_hi", Shape{}, std::vector<float>{6.f});
    n.add_input("clip_lo");
    n.add_input("clip_hi");
  }
}

// Runs the model fused and unfused, in float32 and float16 mode; each result must match `want`
// and the fused graph must have fewer nodes (the activation is in the epilogue).
void check_fused(const ModelBuilder& m, const std::string& input, const HostTensor& x,
                 const std::vector<double>& want, bool expect_fusion, const std::string& what) {
  for (bool fp16 : modes()) {
    size_t nodes[2] = {0, 0};
    for (bool fuse : {true, false}) {
      SCOPED_TRACE(what + " " + mode_name(fp16) + (fuse ? " fused" : " unfused"));
      SessionOptions o;
      o.fp16 = fp16;
      o.fuse = fuse;
      Session s = m.session(o);
      auto out = s.run({{input, x}});
      nodes[fuse] = s.graph()->stats().nodes;
      expect_ieee(out[0], want, {}, fp16 ? 2e-2 : 1e-4, what);
    }
    if (expect_fusion) {
      EXPECT_LT(nodes[1], nodes[0]) << what << ": the activation was not fused";
    }
  }
}

// Conv (3x3, pad 1; and depthwise) with bias, then the activation. The input holds NaN, +inf
// and -inf far enough apart that some outputs see one of them alone and one sees two.
TEST_F(NanSemantics, ConvEpilogues) {
  const int C = 4, H = 6, W = 6;
  for (bool depthwise : {false, true}) {
    const int O = depthwise ? C : 3, per_group = depthwise ? 1 : C;
    std::vector<float> x(C * H * W), w(O * per_group * 9), b(O);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i) * 0.7f);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f + 0.05f * std::cos(float(i));  // positive
    for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * float(i) - 0.1f;
    w[5] = -0.3f;  // one negative tap: +inf through it gives -inf, both give NaN
    x[0 * H * W + 1 * W + 1] = kNaNf;
    x[1 * H * W + 4 * W + 4] = kInff;
    x[2 * H * W + 4 * W + 0] = -kInff;
    x[0 * H * W + 3 * W + 5] = kInff;
    // conv in double, IEEE through and through.
    std::vector<double> conv(O * H * W);
    for (int o = 0; o < O; ++o)
      for (int h = 0; h < H; ++h)
        for (int ww = 0; ww < W; ++ww) {
          double s = b[o];
          for (int ci = 0; ci < per_group; ++ci) {
            const int c = depthwise ? o : ci;
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 3; ++kw) {
                const int ih = h + kh - 1, iw = ww + kw - 1;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += double(w[((o * per_group + ci) * 3 + kh) * 3 + kw]) * x[(c * H + ih) * W + iw];
              }
          }
          conv[(o * H + h) * W + ww] = s;
        }
    for (const Activation& act : epilogue_activations()) {
      ModelBuilder m(14);
      m.input("x", kFloat, {1, C, H, W});
      m.output("y", kFloat);
      m.initializer("w", Shape{O, per_group, 3, 3}, w);
      m.initializer("b", Shape{O}, b);
      onnx::NodeProto& n = m.node("Conv", {"x", "w", "b"}, {"c"});
      set_ints(n, "pads", {1, 1, 1, 1});
      if (depthwise) set_int(n, "group", C);
      add_activation(m, act.op, "c", "y");
      std::vector<double> want;
      for (double v : conv) want.push_back(act.ref(v));
      check_fused(m, "x", HostTensor::from(DType::Float32, {1, C, H, W}, x), want, *act.op,
                  std::string(depthwise ? "depthwise Conv+" : "Conv+") + act.op);
    }
  }
}

// MatMul (a GEMV row and a tiled matrix) and Gemm (bias) with the activation after them.
TEST_F(NanSemantics, MatMulAndGemmEpilogues) {
  const int K = 8, N = 5;
  std::vector<float> w(K * N), bias(N);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.2f + 0.1f * std::sin(float(i));
  w[3 * N + 2] = -0.5f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.05f * float(i);
  for (int M : {1, 7}) {
    std::vector<float> a(M * K);
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::cos(float(i) * 0.9f);
    a[1] = kNaNf;                                            // row 0 all NaN
    if (M > 1) a[1 * K + 3] = kInff;                         // row 1: column 2 -inf, others +inf
    if (M > 2) a[2 * K + 5] = -kInff;                        // row 2: -inf
    if (M > 3) a[3 * K + 3] = kInff, a[3 * K + 4] = -kInff;  // row 3: mixed
    for (bool gemm : {false, true}) {
      std::vector<double> mm(M * N);
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double s = gemm ? bias[j] : 0;
          for (int k = 0; k < K; ++k) s += double(a[i * K + k]) * w[k * N + j];
          mm[i * N + j] = s;
        }
      for (const Activation& act : epilogue_activations()) {
        ModelBuilder m(14);
        m.input("a", kFloat, {M, K});
        m.output("y", kFloat);
        m.initializer("w", Shape{K, N}, w);
        if (gemm) {
          m.initializer("bias", Shape{N}, bias);
          m.node("Gemm", {"a", "w", "bias"}, {"c"});
        } else {
          m.node("MatMul", {"a", "w"}, {"c"});
        }
        add_activation(m, act.op, "c", "y");
        std::vector<double> want;
        for (double v : mm) want.push_back(act.ref(v));
        check_fused(m, "a", HostTensor::from(DType::Float32, {M, K}, a), want, *act.op,
                    std::string(gemm ? "Gemm+" : "MatMul+") + act.op + " M=" + std::to_string(M));
      }
    }
  }
}

// The bundled digits classifier: an all-NaN batch gives NaN logits (not a confident "7"), and
// an all-+inf batch gives no finite logit.
TEST_F(NanSemantics, DigitsModelPropagatesNaN) {
  for (bool fp16 : modes()) {
    SCOPED_TRACE(mode_name(fp16));
    SessionOptions o;
    o.context = context();
    o.fp16 = fp16;
    Session s(VKGRAPH_SOURCE_DIR "/models/digits.onnx", o);
    Shape shape = s.inputs()[0].shape;
    for (auto& d : shape)
      if (d < 0) d = 4;
    for (float fill : {kNaNf, kInff}) {
      SCOPED_TRACE(fill);
      HostTensor x(DType::Float32, shape);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = fill;
      auto out = s.run({{s.inputs()[0].name, x}});
      ASSERT_GT(out[0].numel(), 0);
      for (int64_t i = 0; i < out[0].numel(); ++i) {
        const double v = out[0].as_double(i);
        if (std::isnan(fill))
          EXPECT_TRUE(std::isnan(v)) << "logit " << i << " = " << v;
        else
          EXPECT_FALSE(std::isfinite(v)) << "logit " << i << " = " << v;
      }
    }
  }
}

}  // namespace
}  // namespace vkgraph::testing

// QDQ unary ops as byte lookups (src/onnx/fuse_qdq.h, QdqTable): DequantizeLinear -> f [->
// Relu | Clip] -> QuantizeLinear, all per tensor, runs as one 256-entry table indexed by x's
// byte. Every byte value goes through each op, against the unfused float path
// (SessionOptions::fuse = false) and an fp64 reference; and the pattern must not fire where y
// is not a function of x's byte alone. A table right after an integer Conv / MatMul joins that
// kernel's epilogue. Also the QDQ Mul of a squeeze-excitation gate (QdqMul), which MobileNetV3
// has beside its hard-swish and hard-sigmoid tables.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <set>

#include "model_builder.h"
#include "onnx/fuse_qdq.h"
#include "quant_test_util.h"
#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

constexpr int kInt8 = onnx::TensorProto::INT8;
constexpr int kUInt8 = onnx::TensorProto::UINT8;
constexpr int kInt32 = onnx::TensorProto::INT32;

class OnnxQdqTable : public GpuTest {};

void set_float(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

struct UnaryCase {
  const char* op;
  std::vector<std::pair<std::string, float>> attrs;
  std::function<double(double)> f;
  bool exact;  // piecewise linear: the fused table equals the float kernels exactly
};

std::vector<UnaryCase> cases() {
  auto clamp01 = [](double v) { return std::min(std::max(v, 0.0), 1.0); };
  return {
      {"HardSwish", {}, [=](double v) { return v * clamp01(v / 6 + 0.5); }, true},
      {"HardSigmoid",
       {{"alpha", 1.f / 6}, {"beta", 0.5f}},
       [=](double v) { return clamp01(double(1.f / 6) * v + 0.5); },
       true},
      {"LeakyRelu",
       {{"alpha", 0.1f}},
       [](double v) { return v >= 0 ? v : double(0.1f) * v; },
       true},
      {"Sigmoid", {}, [](double v) { return 1 / (1 + std::exp(-v)); }, false},
      {"Tanh", {}, [](double v) { return std::tanh(v); }, false},
  };
}

// xq [4, 64] -> DequantizeLinear(xs, xz) -> op -> QuantizeLinear(ys, yz) -> yq.
ModelBuilder unary_net(const UnaryCase& c, int x_type, int x_zero, float x_scale, int y_type,
                       int y_zero, float y_scale) {
  ModelBuilder m(14);
  m.input("xq", x_type, {4, 64});
  m.output("yq", y_type);
  m.initializer("xs", Shape{}, std::vector<float>{x_scale});
  m.int_initializer("xz", x_type, {}, {x_zero});
  m.initializer("ys", Shape{}, std::vector<float>{y_scale});
  m.int_initializer("yz", y_type, {}, {y_zero});
  m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
  onnx::NodeProto& n = m.node(c.op, {"xd"}, {"f"});
  for (const auto& [name, value] : c.attrs) set_float(n, name, value);
  m.node("QuantizeLinear", {"f", "ys", "yz"}, {"yq"});
  return m;
}

// Every byte value once, in a shuffled order, as the widened int32 feed of an 8-bit input.
HostTensor every_byte(std::mt19937& rng, bool is_signed) {
  std::vector<int32_t> v(256);
  std::iota(v.begin(), v.end(), is_signed ? -128 : 0);
  std::shuffle(v.begin(), v.end(), rng);
  return HostTensor::from(DType::Int32, {4, 64}, v);
}

TEST_F(OnnxQdqTable, EveryByteOfEachOpMatchesTheFloatPathAndFp64) {
  for (const UnaryCase& c : cases())
    for (bool x_signed : {false, true}) {
      const int x_type = x_signed ? kInt8 : kUInt8, y_type = x_signed ? kUInt8 : kInt8;
      const int x_zero = x_signed ? -7 : 131, y_zero = x_signed ? 120 : -5;
      const float x_scale = 0.043f, y_scale = c.op == std::string("Sigmoid") ? 0.0041f : 0.029f;
      const DType yd = x_signed ? DType::UInt8 : DType::Int8;
      SCOPED_TRACE(std::string(c.op) + (x_signed ? " int8 -> uint8" : " uint8 -> int8"));
      const HostTensor x = every_byte(rng, x_signed);
      Runs r =
          run_both(unary_net(c, x_type, x_zero, x_scale, y_type, y_zero, y_scale), {{"xq", x}});
      // Fused: x narrowed to bytes, the lookup, y widened. Unfused: DQ (of the widened
      // input), f, Q and the widening.
      EXPECT_EQ(r.fused_nodes, 3u);
      EXPECT_EQ(r.plain_nodes, 4u);
      int ties = 0;
      for (int i = 0; i < 256; ++i) {
        const int code = x.data<int32_t>()[i];
        const double v = double(float(code - x_zero) * x_scale);
        const double exact = c.f(v) / y_scale;
        const int want = quantize_ref(exact, y_zero, yd);
        const int got = r.fused[0].data<int32_t>()[i], plain = r.plain[0].data<int32_t>()[i];
        if (c.exact) {
          EXPECT_EQ(got, plain) << "x " << code;
        }
        EXPECT_LE(std::abs(got - plain), 1) << "x " << code;
        // Away from a rounding tie the result is the fp64 reference's.
        if (std::abs(std::abs(exact - std::floor(exact)) - 0.5) > 1e-3)
          EXPECT_EQ(got, want) << "x " << code << " exact " << exact;
        else
          ++ties;
      }
      EXPECT_LT(ties, 8);
    }
}

// A fused Clip after the op narrows the range, as in the float path; a Relu as the op itself.
TEST_F(OnnxQdqTable, TrailingClipAndReluOp) {
  ModelBuilder m(14);
  m.input("xq", kUInt8, {4, 64});
  m.output("yq", kUInt8);
  m.output("rq", kInt8);
  m.initializer("xs", Shape{}, std::vector<float>{0.05f});
  m.int_initializer("xz", kUInt8, {}, {100});
  m.initializer("ys", Shape{}, std::vector<float>{0.01f});
  m.int_initializer("yz", kUInt8, {}, {10});
  m.initializer("lo", Shape{}, std::vector<float>{-0.05f});
  m.initializer("hi", Shape{}, std::vector<float>{1.5f});
  m.int_initializer("rz", kInt8, {}, {-100});
  m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
  m.node("HardSwish", {"xd"}, {"h"});
  m.node("Clip", {"h", "lo", "hi"}, {"c"});
  m.node("QuantizeLinear", {"c", "ys", "yz"}, {"yq"});
  m.node("DequantizeLinear", {"yq", "ys", "yz"}, {"yd"});
  m.node("Relu", {"yd"}, {"r"});
  m.node("QuantizeLinear", {"r", "xs", "rz"}, {"rq"});
  const HostTensor x = every_byte(rng, false);
  Runs r = run_both(m, {{"xq", x}});
  // Fused: narrowing, two lookups, two widenings; unfused: DQ, HardSwish, Clip, Q, DQ, Relu, Q
  // and the widenings.
  EXPECT_EQ(r.fused_nodes, 5u);
  EXPECT_EQ(r.plain_nodes, 9u);
  // The table is the same in float16 mode: nothing between the bytes computes in float16.
  if (context()->features().storage_buffer_16bit) {
    Runs h = run_both(m, {{"xq", x}}, true);
    EXPECT_EQ(h.fused[0].bytes, r.fused[0].bytes);
    EXPECT_EQ(h.fused[1].bytes, r.fused[1].bytes);
  }
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(r.fused[0].data<int32_t>()[i], r.plain[0].data<int32_t>()[i]) << i;
    EXPECT_EQ(r.fused[1].data<int32_t>()[i], r.plain[1].data<int32_t>()[i]) << i;
    const double v = double(float(x.data<int32_t>()[i] - 100) * 0.05f);
    const double h = std::min(std::max(v * std::min(std::max(v / 6 + 0.5, 0.0), 1.0), -0.05), 1.5);
    const int y = r.fused[0].data<int32_t>()[i];
    EXPECT_LE(std::abs(y - quantize_ref(h / 0.01, 10, DType::UInt8)), 1) << i;
    const double relu = std::max(0.0, double(float(y - 10) * 0.01f));
    EXPECT_LE(
        std::abs(r.fused[1].data<int32_t>()[i] - quantize_ref(relu / 0.05, -100, DType::Int8)), 1)
        << i;
  }
}

// Where y is not a function of x's byte alone, or the bytes are not read per tensor, the nodes
// stay as they are: a per-axis DequantizeLinear, and an op whose float output is read twice.
TEST_F(OnnxQdqTable, DoesNotFireWhereTheTableWouldBeWrong) {
  ModelBuilder m(14);
  m.input("xq", kUInt8, {4, 64});
  m.output("aq", kUInt8);
  m.output("bq", kUInt8);
  m.output("s", onnx::TensorProto::FLOAT);
  m.initializer("xs", Shape{4}, std::vector<float>{0.05f, 0.02f, 0.1f, 0.07f});
  m.int_initializer("xz", kUInt8, {4}, {100, 90, 80, 70});
  m.initializer("ts", Shape{}, std::vector<float>{0.03f});
  m.int_initializer("tz", kUInt8, {}, {128});
  m.initializer("ys", Shape{}, std::vector<float>{0.004f});
  m.int_initializer("yz", kUInt8, {}, {0});
  onnx::NodeProto& dq = m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
  set_int(dq, "axis", 0);
  m.node("Sigmoid", {"xd"}, {"a"});  // per-axis x: not a table
  m.node("QuantizeLinear", {"a", "ys", "yz"}, {"aq"});
  m.node("DequantizeLinear", {"xq", "ts", "tz"}, {"td"});
  m.node("Sigmoid", {"td"}, {"s"});  // read by the QuantizeLinear and as a model output
  m.node("QuantizeLinear", {"s", "ys", "yz"}, {"bq"});
  const HostTensor x = every_byte(rng, false);
  Runs r = run_both(m, {{"xq", x}});
  EXPECT_EQ(r.fused_nodes, r.plain_nodes);
  for (size_t o = 0; o < 3; ++o)
    for (int64_t i = 0; i < r.fused[o].numel(); ++i)
      ASSERT_EQ(r.fused[o].as_double(i), r.plain[o].as_double(i)) << o << " " << i;
}

// unary_on_host (fuse_qdq.cpp) is a host twin of unary.comp for the ops a QdqTable evaluates,
// kept in step by hand. Every op it knows, on values across what dequantized bytes take (0, the
// kinks, +-16 in steps of 1/256, the parameters' thresholds), against ops::unary on the device:
// the piecewise-linear ones bit for bit (a table must equal the float path), Softsign within its
// division's rounding, the others within the float kernels' tolerance (test_ops_unary.cpp's).
TEST_F(OnnxQdqTable, HostTwinMatchesTheUnaryKernelOfEveryTableOp) {
  using ops::UnaryOp;
  std::vector<float> xs;
  for (int i = -4096; i <= 4096; ++i) xs.push_back(static_cast<float>(i) / 256.f);
  for (float v : random_floats(1000, -20.f, 20.f)) xs.push_back(v);
  const HostTensor x = HostTensor::from(DType::Float32, {static_cast<int64_t>(xs.size())}, xs);
  auto params_of = [](UnaryOp op) -> ops::UnaryParams {
    switch (op) {
      case UnaryOp::LeakyRelu:
        return {0.1f, 0.f};
      case UnaryOp::ThresholdedRelu:
      case UnaryOp::Elu:
        return {1.f, 0.f};
      case UnaryOp::Clip:
        return {-1.5f, 2.25f};
      case UnaryOp::HardSigmoid:
        return {0.2f, 0.5f};
      case UnaryOp::Selu:
        return {1.67326319f, 1.05070102f};
      default:
        return {};
    }
  };
  const std::set<UnaryOp> exact = {UnaryOp::Relu, UnaryOp::LeakyRelu,   UnaryOp::ThresholdedRelu,
                                   UnaryOp::Clip, UnaryOp::HardSigmoid, UnaryOp::HardSwish,
                                   UnaryOp::Neg,  UnaryOp::Abs};
  int ops_checked = 0;
  for (int i = 0; i <= static_cast<int>(UnaryOp::Not); ++i) {
    const auto op = static_cast<UnaryOp>(i);
    const ops::UnaryParams params = params_of(op);
    if (!onnx_import::fuse::unary_on_host(op, params, 0.f)) continue;
    SCOPED_TRACE(shaders::unary::name(op));
    ++ops_checked;
    ComputeGraph g(context());
    g.add_output(ops::unary(g, op, g.add_input(x.shape, DType::Float32, "x"), params), "y");
    g.copy_to_input(0, x.bytes.data(), x.nbytes());
    g.execute();
    const HostTensor y = g.read_output(0);
    int failures = 0;
    for (int64_t j = 0; j < x.numel() && failures < 5; ++j) {
      const float v = x.data<float>()[j], got = y.data<float>()[j];
      const float want = *onnx_import::fuse::unary_on_host(op, params, v);
      const double tol = exact.count(op)           ? 0.0
                         : op == UnaryOp::Softsign ? 3e-7 * std::abs(want)
                                                   : 1e-6 + 1e-5 * std::abs(want);
      if (!(std::abs(double(got) - double(want)) <= tol)) {
        ADD_FAILURE() << "f(" << v << "): device " << got << ", host " << want;
        ++failures;
      }
    }
  }
  EXPECT_EQ(ops_checked, 18);  // the QdqTable ops and Silu
}

// DQ -> Conv | MatMul -> Q -> DQ -> f -> Q, as MobileNetV3 has it: the table joins the integer
// kernel's epilogue (a 3x3 convolution, a depthwise one, a pointwise one and a MatMul, with
// uint8 and int8 on either side). Against the portable kernels followed by separate byte_table
// dispatches (qgemm.packed = 0; the same requantization and the same table, so equal exactly),
// unsplit and after a split-K reduce, and within a few steps of the unfused float path.
TEST_F(OnnxQdqTable, TableAfterAnIntegerKernelJoinsItsEpilogue) {
  ModelBuilder m(14);
  m.input("xq", kUInt8, {1, 8, 7, 7});
  m.input("aq", kUInt8, {6, 16});
  m.output("yq", kInt8);
  m.output("bq", kInt8);
  auto scale = [&](const std::string& name, float s, int type, int zero) {
    m.initializer(name + "_s", Shape{}, std::vector<float>{s});
    m.int_initializer(name + "_z", type, {}, {zero});
  };
  scale("x", 0.02f, kUInt8, 128);
  scale("ca", 0.03f, kUInt8, 128);  // conv A's output, then its HardSwish's
  scale("ha", 0.02f, kUInt8, 20);
  scale("cb", 0.04f, kInt8, 0);  // the depthwise conv's, then its HardSigmoid's
  scale("hb", 1.f / 255, kUInt8, 0);
  scale("cc", 0.04f, kUInt8, 128);  // the pointwise conv's, then its Sigmoid's
  scale("y", 1.f / 256, kInt8, -128);
  scale("a", 0.05f, kUInt8, 120);  // the MatMul's a, its output, and its Tanh's
  scale("m", 0.05f, kUInt8, 128);
  scale("b", 1.f / 127, kInt8, 0);
  m.int_initializer("wa", kInt8, {16, 8, 3, 3}, random_ints(rng, 16 * 72, -100, 100));
  m.initializer("wa_s", Shape{16}, random_floats(16, 0.002f, 0.004f));
  m.int_initializer("wa_z", kInt8, {16}, std::vector<int>(16, 0));
  m.int_initializer("ba", kInt32, {16}, random_ints(rng, 16, -2000, 2000));
  m.initializer("ba_s", Shape{}, std::vector<float>{0.02f * 0.003f});
  m.int_initializer("wb", kInt8, {16, 1, 3, 3}, random_ints(rng, 16 * 9, -100, 100));
  scale("wb", 0.01f, kInt8, 0);
  m.int_initializer("wc", kInt8, {8, 16, 1, 1}, random_ints(rng, 8 * 16, -100, 100));
  scale("wc", 0.005f, kInt8, 0);
  m.int_initializer("wm", kInt8, {16, 12}, random_ints(rng, 16 * 12, -100, 100));
  scale("wm", 0.01f, kInt8, 0);
  // in -> DQ -> op(DQ, DQ(weights)...) -> Q(c) -> DQ -> f -> Q(h), named `out`.
  auto block = [&](const std::string& in, const std::string& in_q, const std::string& op,
                   const std::vector<std::string>& weights, const std::string& c,
                   const std::string& f, const std::string& h, const std::string& out) {
    m.node("DequantizeLinear", {in, in_q + "_s", in_q + "_z"}, {in + "_d"});
    for (const std::string& w : weights) {
      onnx::NodeProto& dq = w[0] == 'b'  // the bias has no zero point
                                ? m.node("DequantizeLinear", {w, w + "_s"}, {w + "_d"})
                                : m.node("DequantizeLinear", {w, w + "_s", w + "_z"}, {w + "_d"});
      if (w == "wa") set_int(dq, "axis", 0);
    }
    onnx::NodeProto& n =
        weights.size() == 2
            ? m.node(op, {in + "_d", weights[0] + "_d", weights[1] + "_d"}, {c + "_f"})
            : m.node(op, {in + "_d", weights[0] + "_d"}, {c + "_f"});
    if (op == "Conv" && weights[0] != "wc") set_ints(n, "pads", {1, 1, 1, 1});
    if (weights[0] == "wb") set_int(n, "group", 16);
    m.node("QuantizeLinear", {c + "_f", c + "_s", c + "_z"}, {c + "_q"});
    m.node("DequantizeLinear", {c + "_q", c + "_s", c + "_z"}, {c + "_d"});
    onnx::NodeProto& u = m.node(f, {c + "_d"}, {h + "_f"});
    if (f == "HardSigmoid") set_float(u, "alpha", 0.2f);
    m.node("QuantizeLinear", {h + "_f", h + "_s", h + "_z"}, {out});
  };
  block("xq", "x", "Conv", {"wa", "ba"}, "ca", "HardSwish", "ha", "haq");
  block("haq", "ha", "Conv", {"wb"}, "cb", "HardSigmoid", "hb", "hbq");
  block("hbq", "hb", "Conv", {"wc"}, "cc", "Sigmoid", "y", "yq");
  block("aq", "a", "MatMul", {"wm"}, "m", "Tanh", "b", "bq");
  auto bytes = [&](const Shape& s) {
    const std::vector<int> v = random_ints(rng, static_cast<size_t>(numel(s)), 0, 255);
    return HostTensor::from(DType::Int32, s, std::vector<int32_t>(v.begin(), v.end()));
  };
  const std::map<std::string, HostTensor> feeds = {{"xq", bytes({1, 8, 7, 7})},
                                                   {"aq", bytes({6, 16})}};

  // Counts the dispatches that look bytes up: in a kernel's epilogue, or as byte_table.
  const std::vector<std::string> lookups = {"+ byte table", "byte_table"};
  const LabelledRun portable_run = run_packed(m, feeds, 0, 0, lookups);
  const std::vector<HostTensor>& portable = portable_run.outputs;
  EXPECT_EQ(portable_run.counts, (std::vector<int>{0, 4}));
  for (uint32_t splits : {1u, 3u}) {
    SCOPED_TRACE("splits " + std::to_string(splits));
    const LabelledRun fused_run = run_packed(m, feeds, 1, splits, lookups);
    const std::vector<HostTensor>& got = fused_run.outputs;
    EXPECT_EQ(fused_run.counts, (std::vector<int>{4, 0}))
        << "every table should run in its kernel's epilogue";
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      ASSERT_EQ(got[i].numel(), portable[i].numel());
      for (int64_t j = 0; j < got[i].numel(); ++j)
        ASSERT_EQ(got[i].data<int32_t>()[j], portable[i].data<int32_t>()[j]) << i << " " << j;
    }
  }
  // The unfused float path: a step of a kernel's output moves its table's output by at most the
  // op's slope times the scale ratio (below 2 steps here), and steps add up along the chain.
  Runs both = run_both(m, feeds);
  ASSERT_EQ(both.fused.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < both.fused[i].numel(); ++j)
      EXPECT_LE(std::abs(both.fused[i].data<int32_t>()[j] - both.plain[i].data<int32_t>()[j]), 4)
          << i << " " << j;
  // The outputs spread over their ranges (not one saturated value).
  for (const HostTensor& t : portable) {
    const auto [lo, hi] = std::minmax_element(t.data<int32_t>(), t.data<int32_t>() + t.numel());
    EXPECT_GT(*hi - *lo, 20);
  }
}

// onnxruntime's QLinearMul on one pair of values: the integer product times the float32 ratio,
// plus the zero point, each step rounded to float32, then rounded half to even and saturated.
int qlinear_mul_ref(int a, int za, float sa, int b, int zb, float sb, float sy, int zy, DType d) {
  const float ratio = (sa * sb) / sy;
  const float v = static_cast<float>((a - za) * (b - zb)) * ratio + static_cast<float>(zy);
  return quantize_ref(v, 0, d);
}

// A squeeze-excitation block of a QDQ model: x -> GlobalAveragePool -> HardSigmoid (the gate,
// [1, C, 1, 1]) -> Mul(x, gate), every tensor between QuantizeLinear / DequantizeLinear. The
// gate's Mul is one kernel with the gate repeated over H x W, in either operand order, bit for
// bit onnxruntime's QLinearMul; a Mul of operands of one shape too.
TEST_F(OnnxQdqTable, SqueezeExcitationGateIsOneKernel) {
  for (bool gate_first : {false, true}) {
    SCOPED_TRACE(gate_first ? "Mul(gate, x)" : "Mul(x, gate)");
    ModelBuilder m(14);
    m.input("xq", kUInt8, {1, 8, 5, 5});
    m.output("yq", kUInt8);
    m.output("sq", kInt8);
    m.initializer("xs", Shape{}, std::vector<float>{0.031f});
    m.int_initializer("xz", kUInt8, {}, {117});
    m.initializer("ps", Shape{}, std::vector<float>{0.012f});
    m.int_initializer("pz", kUInt8, {}, {125});
    m.initializer("gs", Shape{}, std::vector<float>{1.f / 255});
    m.int_initializer("gz", kUInt8, {}, {0});
    m.initializer("ys", Shape{}, std::vector<float>{0.027f});
    m.int_initializer("yz", kUInt8, {}, {121});
    m.initializer("ss", Shape{}, std::vector<float>{0.05f});
    m.int_initializer("sz", kInt8, {}, {-3});
    m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
    m.node("GlobalAveragePool", {"xd"}, {"p"});
    m.node("QuantizeLinear", {"p", "ps", "pz"}, {"pq"});
    m.node("DequantizeLinear", {"pq", "ps", "pz"}, {"pd"});
    onnx::NodeProto& hs = m.node("HardSigmoid", {"pd"}, {"g"});
    set_float(hs, "alpha", 1.f / 6);
    m.node("QuantizeLinear", {"g", "gs", "gz"}, {"gq"});
    m.node("DequantizeLinear", {"gq", "gs", "gz"}, {"gd"});
    if (gate_first)
      m.node("Mul", {"gd", "xd"}, {"y"});
    else
      m.node("Mul", {"xd", "gd"}, {"y"});
    m.node("QuantizeLinear", {"y", "ys", "yz"}, {"yq"});
    m.node("Mul", {"xd", "xd"}, {"s"});  // one shape: x squared
    m.node("QuantizeLinear", {"s", "ss", "sz"}, {"sq"});
    const std::vector<int> x = random_ints(rng, 200, 0, 255);
    const HostTensor xt =
        HostTensor::from(DType::Int32, {1, 8, 5, 5}, std::vector<int32_t>(x.begin(), x.end()));
    Runs r = run_both(m, {{"xq", xt}});
    // Fused: the pool, the gate's table, the two Muls (qlinear_mul), two widenings, and the
    // (widened) model input narrowed once for its four reads (the pool, the gate's Mul, both
    // operands of x squared). Unfused: DQ, pool, Q, DQ, HardSigmoid, Q, DQ, two Muls, two Qs
    // and the two widenings.
    EXPECT_EQ(r.fused_nodes, 7u);
    EXPECT_EQ(r.plain_nodes, 13u);
    ASSERT_EQ(r.fused.size(), 2u);
    // The gate as the fused graph computes it: the pool and table are checked elsewhere, so
    // take the gate from the unfused path's own ops (one step apart at most) and the Mul from
    // the fused output: each element must be QLinearMul of x and one gate value of its channel.
    for (int c = 0; c < 8; ++c) {
      int matched = 0;
      for (int g = 0; g < 256 && matched == 0; ++g) {
        bool all = true;
        for (int i = 0; i < 25 && all; ++i) {
          const int want = qlinear_mul_ref(x[c * 25 + i], 117, 0.031f, g, 0, 1.f / 255, 0.027f, 121,
                                           DType::UInt8);
          all = r.fused[0].data<int32_t>()[c * 25 + i] == want;
        }
        matched += all;
      }
      EXPECT_EQ(matched, 1) << "channel " << c << ": no gate value gives the fused output";
    }
    for (int i = 0; i < 200; ++i) {
      EXPECT_LE(std::abs(r.fused[0].data<int32_t>()[i] - r.plain[0].data<int32_t>()[i]), 1) << i;
      EXPECT_EQ(r.fused[1].data<int32_t>()[i],
                qlinear_mul_ref(x[i], 117, 0.031f, x[i], 117, 0.031f, 0.05f, -3, DType::Int8))
          << i;
    }
  }
}

}  // namespace
}  // namespace vkgraph::testing

// quantize_dynamic's linear layers (src/onnx/fuse_dynamic_quant.h): DynamicQuantizeLinear ->
// MatMulInteger -> Cast -> Mul(Mul(x_scale, w_scale)) [-> Add(bias)] runs as one range pass per
// activation and one integer GEMM per layer. The fused result must be ONNX's, computed here in
// float32 exactly as the reference would (DynamicQuantizeLinear's rounding and saturation, the
// exact integer sums, then the Cast, Mul and Add each rounded to float32), bit for bit, and so
// equal to the unfused ops (SessionOptions::fuse = false) and to the packed GEMM's fallback.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include "model_builder.h"
#include "quant_test_util.h"
#include "shape_test_util.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt8 = onnx::TensorProto::INT8;

struct Weight {
  int64_t k, n;
  std::vector<int> w, zero;  // zero: 1 or n values
  std::vector<float> scale;  // 1 or n values
  std::vector<float> bias;   // empty: none
};

// x [rows, k] float -> ONNX DynamicQuantizeLinear then the layer, in float32 as the reference.
std::vector<float> reference(const std::vector<float>& x, const Weight& w) {
  float lo = 0.f, hi = 0.f;
  for (float v : x) lo = std::min(lo, v), hi = std::max(hi, v);
  const float scale = (hi - lo) / 255.f;
  const int zero = scale == 0.f ? 0 : quantize_ref(double((0.f - lo) / scale), 0, DType::UInt8);
  const int64_t rows = static_cast<int64_t>(x.size()) / w.k;
  std::vector<int> xq(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    xq[i] = scale == 0.f ? zero : quantize_ref(double(x[i] / scale), zero, DType::UInt8);
  std::vector<float> y(rows * w.n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < w.n; ++c) {
      int32_t acc = 0;
      const int wz = w.zero[w.zero.size() == 1 ? 0 : c];
      for (int64_t i = 0; i < w.k; ++i) acc += (xq[r * w.k + i] - zero) * (w.w[i * w.n + c] - wz);
      const float product = scale * w.scale[w.scale.size() == 1 ? 0 : c];
      float v = static_cast<float>(acc) * product;
      if (!w.bias.empty()) v = w.bias[c] + v;
      y[r * w.n + c] = v;
    }
  return y;
}

// One layer as quantize_dynamic writes it. `scale_first`: the scale product listed before the
// MatMulInteger (onnxruntime lists it after); `swap`: the commutative inputs the other way.
void layer(ModelBuilder& m, const std::string& p, const Weight& w, bool scale_first, bool swap,
           const std::string& out) {
  m.int_initializer(p + "w", kInt8, {w.k, w.n}, w.w);
  const Shape param = w.scale.size() == 1 ? Shape{} : Shape{w.n};
  m.int_initializer(p + "wz", kInt8, w.zero.size() == 1 ? Shape{} : Shape{w.n}, w.zero);
  m.initializer(p + "ws", param, w.scale);
  // A binary node, its inputs the other way round with `swap`.
  auto binary = [&](const char* op, const std::string& a, const std::string& b,
                    const std::string& y) {
    if (swap)
      m.node(op, {b, a}, {y});
    else
      m.node(op, {a, b}, {y});
  };
  if (scale_first) binary("Mul", "xs", p + "ws", p + "s");
  m.node("MatMulInteger", {"xq", p + "w", "xz", p + "wz"}, {p + "acc"});
  set_int(m.node("Cast", {p + "acc"}, {p + "f"}), "to", kFloat);
  if (!scale_first) binary("Mul", "xs", p + "ws", p + "s");
  const std::string mul = w.bias.empty() ? out : p + "m";
  binary("Mul", p + "f", p + "s", mul);
  if (!w.bias.empty()) {
    m.initializer(p + "b", Shape{w.n}, w.bias);
    binary("Add", p + "b", mul, out);
  }
}

class OnnxQuantDynamic : public GpuTest {
 protected:
  Weight weight(int64_t k, int64_t n, bool per_column, bool zero_points, bool bias) {
    Weight w{k, n, random_ints(rng, k * n, -127, 127), {0}, {}, {}};
    if (per_column) {
      w.scale = random_floats(n, 0.002f, 0.02f);
      w.zero = zero_points ? random_ints(rng, n, -5, 5) : std::vector<int>(n, 0);
    } else {
      w.scale = {0.0123f};
      if (zero_points) w.zero = {3};
    }
    if (bias) w.bias = random_floats(n, -1.f, 1.f);
    return w;
  }

  // x [2, 5, 16] -> one DynamicQuantizeLinear read by two layers: a per-tensor weight with a
  // bias, and per-column scales and zero points (the GEMM's sum-of-data correction) without.
  ModelBuilder two_layers(const Weight& a, const Weight& b, bool scale_output) {
    ModelBuilder m(13);
    m.input("x", kFloat, {2, 5, 16});
    m.output("ya", kFloat);
    m.output("yb", kFloat);
    if (scale_output) m.output("xs", kFloat);
    m.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
    layer(m, "a_", a, false, false, "ya");
    layer(m, "b_", b, true, true, "yb");
    return m;
  }

  // What else reads a LayerNormalization's output besides its DynamicQuantizeLinear
  // (ln_layers), or what keeps that from fusing (the scale a model output).
  enum class LnExtra { None, LnOutput, LnReader, ScaleOutput };

  // x [rows, 16] -> LayerNormalization (epsilon set) -> DynamicQuantizeLinear read by the two
  // layers of two_layers; outputs ya, yb, then the extra one.
  ModelBuilder ln_layers(int64_t rows, const Weight& a, const Weight& b, LnExtra extra) {
    ModelBuilder m(17);
    m.input("x", kFloat, {rows, 16});
    m.output("ya", kFloat);
    m.output("yb", kFloat);
    m.initializer("gamma", Shape{16}, random_floats(16, 0.5f, 2.f));
    m.initializer("beta", Shape{16}, random_floats(16, -1.f, 1.f));
    onnx::NodeProto& ln = m.node("LayerNormalization", {"x", "gamma", "beta"}, {"ln"});
    set_int(ln, "axis", -1);
    onnx::AttributeProto* eps = ln.add_attribute();
    eps->set_name("epsilon");
    eps->set_type(onnx::AttributeProto::FLOAT);
    eps->set_f(1e-3f);
    m.node("DynamicQuantizeLinear", {"ln"}, {"xq", "xs", "xz"});
    layer(m, "a_", a, false, false, "ya");
    layer(m, "b_", b, true, true, "yb");
    if (extra == LnExtra::LnOutput) m.output("ln", kFloat);
    if (extra == LnExtra::LnReader) {
      m.node("Relu", {"ln"}, {"lr"});
      m.output("lr", kFloat);
    }
    if (extra == LnExtra::ScaleOutput) m.output("xs", kFloat);
    return m;
  }

  std::vector<HostTensor> run(const ModelBuilder& m, const HostTensor& x,
                              std::map<std::string, uint32_t> knobs,
                              std::vector<std::string>* labels, bool fuse = true) {
    return run(m, {{"x", x}}, std::move(knobs), labels, fuse);
  }

  // The outputs, with the dispatch labels in `labels`.
  std::vector<HostTensor> run(const ModelBuilder& m, const std::map<std::string, HostTensor>& feeds,
                              std::map<std::string, uint32_t> knobs,
                              std::vector<std::string>* labels, bool fuse = true,
                              bool fp16 = false) {
    SessionOptions o;
    o.fuse = fuse;
    o.fp16 = fp16;
    auto tuning = std::make_shared<ops::Tuning>();
    for (const auto& [k, v] : knobs) tuning->knobs[k] = v;
    o.graph.tuning = tuning;
    o.graph.profile = true;
    Session s = m.session(o);
    std::vector<HostTensor> r = s.run(feeds);
    labels->clear();
    for (const NodeTime& t : s.graph()->node_times()) labels->push_back(t.label);
    return r;
  }
};

void expect_bits(const HostTensor& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.dtype, DType::Float32) << what;
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_EQ(got.data<float>()[i], want[i]) << what << " element " << i;
}

int count(const std::vector<std::string>& labels, const std::string& part) {
  return static_cast<int>(std::count_if(labels.begin(), labels.end(), [&](const std::string& l) {
    return l.find(part) != std::string::npos;
  }));
}

TEST_F(OnnxQuantDynamic, LinearLayersAreOneGemmEachBitExact) {
  const Weight a = weight(16, 12, false, false, true), b = weight(16, 8, true, true, false);
  ModelBuilder m = two_layers(a, b, false);
  HostTensor x = random_tensor(rng, DType::Float32, {2, 5, 16});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = x.data<float>()[i] * 3.f + 0.5f;
  const std::vector<float> xv(x.data<float>(), x.data<float>() + x.numel());
  const std::vector<float> want_a = reference(xv, a), want_b = reference(xv, b);
  std::vector<std::string> labels;

  // Unfused: the ops one by one.
  std::vector<HostTensor> plain = run(m, x, {}, &labels, false);
  const size_t plain_nodes = labels.size();
  expect_bits(plain[0], want_a, "unfused a");
  expect_bits(plain[1], want_b, "unfused b");

  // qdyn.prequant 1 (the default): x quantized once, each GEMM reading the bytes; 0: each
  // GEMM quantizes x as it loads it. The int8 tensor cores off (qgemm.coopmat 0): layer a's
  // symmetric weights would take them on a device that has them, and the labels name the tile.
  for (uint32_t prequant : {0u, 1u})
    for (uint32_t dot : {0u, 1u})
      for (uint32_t tile : {32u, 64u}) {
        SCOPED_TRACE("prequant " + std::to_string(prequant) + " dot " + std::to_string(dot) +
                     " tile " + std::to_string(tile));
        std::vector<HostTensor> fused = run(m, x,
                                            {{"qdyn.prequant", prequant},
                                             {"qgemm.dot", dot},
                                             {"qgemm.tile", tile},
                                             {"qgemm.coopmat", 0}},
                                            &labels);
        // One range pass (and one quantize pass) shared by both layers, one GEMM per layer.
        EXPECT_EQ(labels.size(), 3u + prequant);
        EXPECT_EQ(count(labels, "dynamic_quantize_linear range"), 1);
        EXPECT_EQ(count(labels, "dynamic_quantize_linear (packed)"), static_cast<int>(prequant));
        EXPECT_EQ(
            count(labels, "dynamic_quant_matmul (packed " + std::to_string(tile) +
                              (dot && context()->features().integer_dot_product ? " dot" : "") +
                              (prequant ? " dynamic bytes)" : " dynamic)")),
            2);
        expect_bits(fused[0], want_a, "fused a");
        expect_bits(fused[1], want_b, "fused b");
      }
  // DynamicQuantizeLinear's range, parameters and quantize passes, its zero point widened, and
  // MatMulInteger, Cast, Mul, Mul [, Add] per layer.
  EXPECT_EQ(plain_nodes, 13u);

  // The packed GEMM's fallback (qgemm.packed = 0): the ops apart inside the fused nodes.
  std::vector<HostTensor> apart = run(m, x, {{"qgemm.packed", 0}}, &labels);
  EXPECT_EQ(count(labels, "dynamic_quant_matmul (packed"), 0);
  expect_bits(apart[0], want_a, "fallback a");
  expect_bits(apart[1], want_b, "fallback b");

  // Near ties: with min -12.8 and max 12.7 the scale is fl(25.5 / 255) (about 0.1) and the zero
  // point 128; x one ulp beside fl((k + 0.5) * scale) divides to within an ulp of k + 0.5, where a
  // quotient computed as x * (1 / scale) rounds the other way for some k (-122, -112, -73, ...):
  // the GEMM's fast quotient must hand these to the exact division.
  HostTensor ties = HostTensor::from(DType::Float32, {2, 5, 16}, std::vector<float>(160, 0.f));
  const float tie_scale = (12.7f - -12.8f) / 255.f;
  for (int64_t i = 2; i < 160; ++i) {
    const float v = (float(i - 128) + 0.5f) * tie_scale;
    ties.data<float>()[i] = std::nextafter(v, i % 2 ? -INFINITY : INFINITY);
  }
  ties.data<float>()[0] = -12.8f;
  ties.data<float>()[1] = 12.7f;
  const std::vector<float> tv(ties.data<float>(), ties.data<float>() + 160);
  for (uint32_t prequant : {0u, 1u}) {
    SCOPED_TRACE("prequant " + std::to_string(prequant));
    std::vector<HostTensor> t = run(m, ties, {{"qdyn.prequant", prequant}}, &labels);
    expect_bits(t[0], reference(tv, a), "ties a");
    expect_bits(t[1], reference(tv, b), "ties b");

    // An all-zero activation: scale 0, zero point 0, every sum 0, so y is the bias.
    HostTensor zeros = HostTensor::from(DType::Float32, {2, 5, 16}, std::vector<float>(160, 0.f));
    std::vector<HostTensor> z = run(m, zeros, {{"qdyn.prequant", prequant}}, &labels);
    for (int64_t i = 0; i < z[0].numel(); ++i) ASSERT_EQ(z[0].data<float>()[i], a.bias[i % 12]);
    for (int64_t i = 0; i < z[1].numel(); ++i) ASSERT_EQ(z[1].data<float>()[i], 0.f);
  }
}

// The float matmul's epilogue on the integer GEMM: layer a's residual Add (a transformer's skip
// connection) and layer b's erf GELU as torch.onnx writes it, with K deep enough for split-K
// (forced: qgemm.splits 3; the reduce applies the same epilogue). The residual sum is exact
// (one float32 Add after the unfused ops' values); GELU is the float matmul's epilogue
// activation, within a few ulp of the unfused Gelu kernel and of erf in double.
TEST_F(OnnxQuantDynamic, EpilogueTakesResidualAndGelu) {
  const int64_t rows = 6, k = 256;
  const Weight a = weight(k, 12, true, true, true), b = weight(k, 40, false, false, true);
  ModelBuilder m(13);
  m.input("x", kFloat, {rows, k});
  m.input("r", kFloat, {rows, 12});
  m.output("ya", kFloat);
  m.output("yb", kFloat);
  m.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
  layer(m, "a_", a, false, false, "a_y");
  m.node("Add", {"r", "a_y"}, {"ya"});
  layer(m, "b_", b, false, true, "h");
  m.initializer("sqrt2", Shape{}, std::vector<float>{std::sqrt(2.f)});
  m.initializer("one", Shape{}, std::vector<float>{1.f});
  m.initializer("half", Shape{}, std::vector<float>{0.5f});
  m.node("Div", {"h", "sqrt2"}, {"h_d"});
  m.node("Erf", {"h_d"}, {"h_e"});
  m.node("Add", {"h_e", "one"}, {"h_a"});
  m.node("Mul", {"h", "h_a"}, {"h_m"});
  m.node("Mul", {"h_m", "half"}, {"yb"});

  HostTensor x = random_tensor(rng, DType::Float32, {rows, k});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = x.data<float>()[i] * 3.f + 0.5f;
  const HostTensor r = random_tensor(rng, DType::Float32, {rows, 12});
  const std::vector<float> xv(x.data<float>(), x.data<float>() + x.numel());
  std::vector<float> want_a = reference(xv, a);
  for (size_t i = 0; i < want_a.size(); ++i) want_a[i] = r.data<float>()[i] + want_a[i];
  const std::vector<float> h = reference(xv, b);

  const std::map<std::string, HostTensor> feeds{{"x", x}, {"r", r}};
  std::vector<std::string> labels;
  const std::vector<HostTensor> plain = run(m, feeds, {}, &labels, false);
  expect_bits(plain[0], want_a, "unfused a");
  auto expect_gelu = [&](const HostTensor& got, const char* what) {
    ASSERT_EQ(got.numel(), static_cast<int64_t>(h.size())) << what;
    for (size_t i = 0; i < h.size(); ++i) {
      const double v = h[i], want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      ASSERT_NEAR(got.data<float>()[i], want, 1e-6 * std::abs(want) + 1e-7)
          << what << " element " << i;
      ASSERT_NEAR(got.data<float>()[i], plain[1].data<float>()[i], 4e-7 * std::abs(want) + 1e-7)
          << what << " vs unfused, element " << i;
    }
  };
  expect_gelu(plain[1], "unfused b");

  for (uint32_t prequant : {0u, 1u})
    for (uint32_t splits : {1u, 3u}) {
      SCOPED_TRACE("prequant " + std::to_string(prequant) + " splits " + std::to_string(splits));
      const std::vector<HostTensor> fused =
          run(m, feeds, {{"qdyn.prequant", prequant}, {"qgemm.splits", splits}}, &labels);
      // Split-K needs the quantized bytes: quantizing as it loads, each slice would do it again.
      const bool split = prequant && splits > 1;
      EXPECT_EQ(labels.size(), 3u + prequant + (split ? 2 : 0));
      EXPECT_EQ(count(labels, "+ residual)"), 1);
      EXPECT_EQ(count(labels, "+ activation)"), 1);
      EXPECT_EQ(count(labels, "split-K reduce dynamic"), split ? 2 : 0);
      expect_bits(fused[0], want_a, "fused a");
      expect_gelu(fused[1], "fused b");
    }
  // The packed GEMM's fallback: the Add and the Gelu kernel after the ops apart.
  const std::vector<HostTensor> apart = run(m, feeds, {{"qgemm.packed", 0}}, &labels);
  expect_bits(apart[0], want_a, "fallback a");
  expect_gelu(apart[1], "fallback b");
}

// Float16 mode: the range pass, the quantize pass and the GEMMs read the float16 activation and
// write float16, so nothing is cast between the layers and the float16 ops around them (here a
// Mul ahead and the residual Add fused into layer a); the weight's scale and the range stay
// float32, and the epilogue computes in float32 and rounds once as it stores. So with x, the
// bias and the residual rounded to float16 as the model's float16 ops hold them, the result is
// the float32 reference rounded to float16, bit for bit, on every kernel variant, split-K and
// the int8 tensor-core kernel (layer b's symmetric weights; the device's where it has one, and
// emulated) included, and on the ops apart (qgemm.packed = 0), which compute in float32.
TEST_F(OnnxQuantDynamic, Float16ModeKeepsTheLayersInFloat16) {
  const int64_t rows = 6, k = 256;
  Weight a = weight(k, 12, true, true, true), b = weight(k, 40, false, false, true);
  ModelBuilder m(13);
  m.input("x", kFloat, {rows, k});
  m.input("r", kFloat, {rows, 12});
  m.output("ya", kFloat);
  m.output("yb", kFloat);
  m.initializer("two", Shape{}, std::vector<float>{2.f});
  m.node("Mul", {"x", "two"}, {"x2"});
  m.node("DynamicQuantizeLinear", {"x2"}, {"xq", "xs", "xz"});
  layer(m, "a_", a, false, false, "a_y");
  m.node("Add", {"r", "a_y"}, {"ya"});
  layer(m, "b_", b, false, true, "yb");

  HostTensor x = random_tensor(rng, DType::Float32, {rows, k});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = x.data<float>()[i] * 3.f + 0.5f;
  const HostTensor r = random_tensor(rng, DType::Float32, {rows, 12});
  auto half = [](float v) { return half_to_float(float_to_half(v)); };
  std::vector<float> x2(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) x2[i] = half(2.f * x.data<float>()[i]);
  for (float& v : a.bias) v = half(v);
  for (float& v : b.bias) v = half(v);
  std::vector<float> want_a = reference(x2, a), want_b = reference(x2, b);
  for (size_t i = 0; i < want_a.size(); ++i) want_a[i] = half(half(r.data<float>()[i]) + want_a[i]);
  for (float& v : want_b) v = half(v);

  const std::map<std::string, HostTensor> feeds{{"x", x}, {"r", r}};
  std::vector<std::string> labels;
  auto casts = [&] {
    return static_cast<size_t>(std::count_if(
        labels.begin(), labels.end(), [](const std::string& l) { return l.ends_with(": cast"); }));
  };
  for (uint32_t prequant : {0u, 1u})
    for (uint32_t splits : {1u, 3u})
      for (uint32_t coopmat : {0u, 1u, 2u}) {  // off, the device's int8 tensor cores, emulated
        SCOPED_TRACE("prequant " + std::to_string(prequant) + " splits " + std::to_string(splits) +
                     " coopmat " + std::to_string(coopmat));
        const std::vector<HostTensor> y =
            run(m, feeds,
                {{"qdyn.prequant", prequant}, {"qgemm.splits", splits}, {"qgemm.coopmat", coopmat}},
                &labels, true, true);
        // The model's two float32 inputs only.
        EXPECT_EQ(casts(), input_casts(true, 2));
        EXPECT_EQ(count(labels, "dynamic_quant_matmul (packed"), 2);
        EXPECT_EQ(count(labels, "coopmat emulated"), coopmat == 2 && prequant ? 1 : 0);
        EXPECT_EQ(count(labels, "split-K reduce dynamic"), prequant && splits > 1 ? 2 : 0);
        expect_bits(y[0], want_a, "fused a");
        expect_bits(y[1], want_b, "fused b");
      }
  const std::vector<HostTensor> apart = run(m, feeds, {{"qgemm.packed", 0}}, &labels, true, true);
  EXPECT_EQ(count(labels, "dynamic_quant_matmul (packed"), 0);
  expect_bits(apart[0], want_a, "fallback a");
  expect_bits(apart[1], want_b, "fallback b");
}

// Layers of one x whose results only the heads' Reshape and Transpose read (BERT's Q, K and V,
// src/onnx/fuse_dynamic_quant.h): one GEMM over the concatenated weights, per-column zero
// points, scales and biases, each layer's heads a view of the packed output. Every column is
// computed as its own layer computes it, so the heads are the reference's bit for bit, with the
// knob off (fuse.siblings = 0: one GEMM per layer) and on the dot kernels, the emulated int8
// tensor cores (all weights symmetric) and the fallback. A fourth layer whose result an Add
// reads stays its own GEMM.
TEST_F(OnnxQuantDynamic, SiblingLayersAreOneGemmBitExact) {
  constexpr int64_t kB = 2, kS = 5, kK = 16, kHeads = 2;
  for (bool symmetric : {false, true}) {
    SCOPED_TRACE(symmetric ? "symmetric weights" : "zero points");
    // q: per tensor, zero point 0; k: per column with zero points; v: per tensor, zero point 3,
    // narrower (offsets differ from the widths).
    std::vector<Weight> w = {weight(kK, 16, false, false, true),
                             weight(kK, 16, true, !symmetric, true),
                             weight(kK, 8, false, !symmetric, true)};
    const Weight extra = weight(kK, 16, true, false, true);
    ModelBuilder m(13);
    m.input("x", kFloat, {kB, kS, kK});
    m.input("r", kFloat, {kB, kS, 16});
    m.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
    const char* names[] = {"q", "k", "v"};
    for (int i = 0; i < 3; ++i) {
      const std::string n = names[i];
      layer(m, n + "_", w[i], i == 1, i == 2, n + "_p");
      m.initializer(n + "_heads", std::vector<int64_t>{kB, kS, kHeads, w[i].n / kHeads});
      m.node("Reshape", {n + "_p", n + "_heads"}, {n + "_r"});
      set_ints(m.node("Transpose", {n + "_r"}, {n + "_h"}), "perm",
               std::vector<int64_t>{0, 2, 1, 3});
      m.output(n + "_h", kFloat);
    }
    layer(m, "o_", extra, false, false, "o_p");
    m.node("Add", {"o_p", "r"}, {"o"});
    m.output("o", kFloat);

    HostTensor x = random_tensor(rng, DType::Float32, {kB, kS, kK});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = x.data<float>()[i] * 3.f + 0.5f;
    const HostTensor r = random_tensor(rng, DType::Float32, {kB, kS, 16});
    const std::vector<float> xv(x.data<float>(), x.data<float>() + x.numel());
    // The reference's [B * S, N] rows as heads [B, H, S, N / H].
    std::vector<std::vector<float>> want;
    for (const Weight& wi : w) {
      const std::vector<float> y = reference(xv, wi);
      const int64_t d = wi.n / kHeads;
      std::vector<float> h(y.size());
      for (int64_t b = 0; b < kB; ++b)
        for (int64_t hh = 0; hh < kHeads; ++hh)
          for (int64_t t = 0; t < kS; ++t)
            for (int64_t j = 0; j < d; ++j)
              h[((b * kHeads + hh) * kS + t) * d + j] = y[(b * kS + t) * wi.n + hh * d + j];
      want.push_back(h);
    }
    std::vector<float> want_o = reference(xv, extra);
    for (size_t i = 0; i < want_o.size(); ++i) want_o[i] = want_o[i] + r.data<float>()[i];

    const std::map<std::string, HostTensor> feeds{{"x", x}, {"r", r}};
    std::vector<std::string> labels;
    auto check = [&](const std::vector<HostTensor>& y, const char* what) {
      for (int i = 0; i < 3; ++i)
        expect_bits(y[i], want[i], (std::string(what) + " " + names[i]).c_str());
      expect_bits(y[3], want_o, (std::string(what) + " o").c_str());
    };
    for (uint32_t siblings : {0u, 1u})
      for (uint32_t prequant : {0u, 1u})
        for (uint32_t coopmat : {0u, 2u}) {
          if (coopmat && !symmetric) continue;
          SCOPED_TRACE("siblings " + std::to_string(siblings) + " prequant " +
                       std::to_string(prequant) + " coopmat " + std::to_string(coopmat));
          const std::vector<HostTensor> y = run(m, feeds,
                                                {{"fuse.siblings", siblings},
                                                 {"qdyn.prequant", prequant},
                                                 {"qgemm.coopmat", coopmat}},
                                                &labels);
          // The o layer with its residual, and the three heads' GEMMs or the one packed GEMM.
          EXPECT_EQ(count(labels, "dynamic_quant_matmul (packed"), siblings ? 2 : 4);
          EXPECT_EQ(count(labels, "+ residual)"), 1);
          EXPECT_EQ(count(labels, "coopmat emulated"),
                    coopmat && prequant ? (siblings ? 2 : 4) : 0);
          check(y, "fused");
        }
    const std::vector<HostTensor> apart = run(m, feeds, {{"qgemm.packed", 0}}, &labels);
    EXPECT_EQ(count(labels, "dynamic_quant_matmul (packed"), 0);
    check(apart, "fallback");
    check(run(m, feeds, {}, &labels, false), "unfused");
  }
}

// BERT's attention block on quantize_dynamic's projections: the packed GEMM's Q, K and V views
// feed one fused attention, so the block is the range pass, the quantize pass, one GEMM and the
// attention; the same values as with one GEMM per projection. Scaled after the scores' MatMul
// (legacy exporter), or prescaled as the dynamo exporter writes it: each of Q and Kᵀ times
// sqrt(scale) before the product, Q's Mul ahead of K's and V's views (onnxruntime's sorted
// order), which the attention reads ahead (Pass::view_ahead) and absorbs.
TEST_F(OnnxQuantDynamic, SiblingLayersFeedOneAttention) {
  constexpr int64_t kS = 6, kH = 2, kD = 8, kE = kH * kD;
  for (bool prescaled : {false, true}) {
    SCOPED_TRACE(prescaled ? "prescaled" : "scaled scores");
    ModelBuilder m(13);
    m.input("x", kFloat, {1, kS, kE});
    m.output("y", kFloat);
    m.initializer("heads", std::vector<int64_t>{1, kS, kH, kD});
    const float scale = 1.f / std::sqrt(float(kD));
    m.initializer("scale", Shape{}, std::vector<float>{prescaled ? std::sqrt(scale) : scale});
    m.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
    for (const char* t : {"q", "k", "v"}) {
      const std::string n = t;
      layer(m, n + "_", weight(kE, kE, false, false, true), false, false, n + "_p");
      m.node("Reshape", {n + "_p", "heads"}, {n + "_r"});
      set_ints(m.node("Transpose", {n + "_r"}, {n + "_h"}), "perm",
               n == "k" ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3});
      if (prescaled && n != "v") m.node("Mul", {n + "_h", "scale"}, {n + "_scaled"});
    }
    if (prescaled) {
      m.node("MatMul", {"q_scaled", "k_scaled"}, {"scores"});
    } else {
      m.node("MatMul", {"q_h", "k_h"}, {"raw"});
      m.node("Mul", {"raw", "scale"}, {"scores"});
    }
    set_int(m.node("Softmax", {"scores"}, {"probs"}), "axis", -1);
    m.node("MatMul", {"probs", "v_h"}, {"y"});
    HostTensor x = random_tensor(rng, DType::Float32, {1, kS, kE});
    std::vector<std::string> labels;
    const std::vector<HostTensor> one = run(m, x, {{"qdyn.prequant", 1}}, &labels);
    EXPECT_EQ(labels.size(), 4u) << ::testing::PrintToString(labels);
    EXPECT_EQ(count(labels, "dynamic_quant_matmul (packed"), 1);
    EXPECT_EQ(count(labels, "attention"), 1);
    const std::vector<HostTensor> three = run(m, x, {{"fuse.siblings", 0}}, &labels);
    EXPECT_EQ(count(labels, "dynamic_quant_matmul (packed"), 3);
    const std::vector<HostTensor> plain = run(m, x, {}, &labels, false);
    // Prescaled, the fused attention takes the product of the two scales: rounding apart.
    expect_near(one[0], three[0], prescaled ? 1e-5f : 1e-6f);
    expect_near(one[0], plain[0], 1e-5f);
  }
}

void expect_same(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want,
                 const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].dtype, want[i].dtype) << what << " output " << i;
    ASSERT_EQ(got[i].bytes, want[i].bytes) << what << " output " << i;
  }
}

// A LayerNormalization read by a DynamicQuantizeLinear that becomes DynamicQuantRange writes
// the range partials itself (LayerNormRange), so no range pass runs; qdyn.norm_range = 0 brings
// the pass back. The partials are the min and max of the LayerNormalization's output as stored,
// so every output is the same bit for bit: with the range pass, unfused, and (float32, the
// output read back) the reference from that output. In float16 mode nothing fuses (the partials
// are for float32 only) and the range pass runs over the float16 output. The output may also be a
// model output or read by another node: it is written all the same.
TEST_F(OnnxQuantDynamic, LayerNormWritesTheRangePartials) {
  const Weight a = weight(16, 12, false, false, true), b = weight(16, 8, true, true, false);
  for (bool fp16 : {false, true}) {
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    for (LnExtra extra : {LnExtra::None, LnExtra::LnOutput, LnExtra::LnReader}) {
      SCOPED_TRACE(std::string(fp16 ? "fp16" : "fp32") + " extra " +
                   std::to_string(static_cast<int>(extra)));
      const ModelBuilder m = ln_layers(10, a, b, extra);
      HostTensor x = random_tensor(rng, DType::Float32, {10, 16});
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = x.data<float>()[i] * 3.f + 0.5f;
      std::vector<std::string> labels;
      const std::vector<HostTensor> fused = run(m, {{"x", x}}, {}, &labels, true, fp16);
      // float16 y: the range pass computes the partials (fuse_dynamic_quant.h norm_range).
      EXPECT_EQ(count(labels, "dynamic_quantize_linear range"), fp16 ? 1 : 0)
          << ::testing::PrintToString(labels);
      EXPECT_EQ(count(labels, "layer_norm"), 1);
      EXPECT_EQ(count(labels, "dynamic_quant_matmul (packed"), 2);
      const std::vector<HostTensor> pass =
          run(m, {{"x", x}}, {{"qdyn.norm_range", 0}}, &labels, true, fp16);
      EXPECT_EQ(count(labels, "dynamic_quantize_linear range"), 1);
      expect_same(fused, pass, "with the range pass");
      if (fp16) continue;  // unfused, the layers compute in float32
      expect_same(fused, run(m, {{"x", x}}, {}, &labels, false), "unfused");
      if (extra != LnExtra::LnOutput) continue;
      const std::vector<float> ln(fused[2].data<float>(), fused[2].data<float>() + 160);
      expect_bits(fused[0], reference(ln, a), "a");
      expect_bits(fused[1], reference(ln, b), "b");
    }
  }
}

// Where the DynamicQuantizeLinear does not fuse (its scale a model output) the
// LayerNormalization stays itself and the range pass runs; so too past 1024 rows, where the
// partials would cost the GEMMs, which each reduce them all, more than the pass they save.
TEST_F(OnnxQuantDynamic, LayerNormKeepsTheRangePassWhereTheQuantizeDoesNotFuse) {
  const Weight a = weight(16, 12, false, false, true), b = weight(16, 8, true, true, false);
  for (const auto& [rows, extra, fuses] : {std::tuple{int64_t{10}, LnExtra::ScaleOutput, false},
                                           std::tuple{int64_t{1024}, LnExtra::None, true},
                                           std::tuple{int64_t{1025}, LnExtra::None, false}}) {
    SCOPED_TRACE(std::to_string(rows) + " rows, extra " + std::to_string(static_cast<int>(extra)));
    const ModelBuilder m = ln_layers(rows, a, b, extra);
    HostTensor x = random_tensor(rng, DType::Float32, {rows, 16});
    std::vector<std::string> labels;
    const std::vector<HostTensor> fused = run(m, x, {}, &labels);
    EXPECT_EQ(count(labels, "dynamic_quantize_linear range"), fuses ? 0 : 1);
    EXPECT_EQ(count(labels, "dynamic_quant_matmul (packed"), extra == LnExtra::ScaleOutput ? 0 : 2);
    expect_same(fused, run(m, x, {}, &labels, false), "unfused");
  }
}

// DynamicQuantizeLinear's scale is also a model output: nothing fuses, and the ops run apart.
TEST_F(OnnxQuantDynamic, PatternMustNotFireWhenTheScaleIsRead) {
  const Weight a = weight(16, 12, false, false, true), b = weight(16, 8, true, false, false);
  ModelBuilder m = two_layers(a, b, true);
  HostTensor x = random_tensor(rng, DType::Float32, {2, 5, 16});
  const std::vector<float> xv(x.data<float>(), x.data<float>() + x.numel());
  std::vector<std::string> fused_labels, plain_labels;
  std::vector<HostTensor> fused = run(m, x, {}, &fused_labels);
  std::vector<HostTensor> plain = run(m, x, {}, &plain_labels, false);
  EXPECT_EQ(fused_labels.size(), plain_labels.size());
  EXPECT_EQ(count(fused_labels, "dynamic_quant_matmul"), 0);
  expect_bits(fused[0], reference(xv, a), "a");
  expect_bits(fused[1], reference(xv, b), "b");
}

}  // namespace
}  // namespace vkgraph::testing

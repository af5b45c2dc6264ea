// What the fusion pass does to a transformer layer's non-attention nodes (src/onnx/fuse.h,
// fuse_activation.h): GELU written out as arithmetic becomes the GEMM epilogue's activation (or
// one Gelu node after anything else), the residual Add joins the GEMM's epilogue, and the
// Transpose that merges the heads after an attention folds into the attention's stores. Each
// model runs with fusion on and off (which must agree), with the node counts that say the
// pattern fired or did not, in fp32 and fp16 mode.
#include <onnx/onnx_pb.h>

#include <cmath>

#include "model_builder.h"
#include "shape_test_util.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int64_t kS = 6, kK = 8, kN = 12;

// The orders in which exporters write 0.5 * x * (1 + erf(x / sqrt(2))).
enum class ErfForm {
  kLegacy,       // Div, Erf, Add, Mul(x, ·), Mul(·, 0.5): torch.onnx legacy and onnxscript
  kHalfFirst,    // Mul(x, 0.5) first, Mul by 1/sqrt(2), then Mul(h, 1 + erf)
  kBracketHalf,  // Mul(1 + erf, 0.5), then Mul(x, ·), constants first
};

// y = gelu(x @ w + b) with GELU in `form`, written out node by node on `v`.
void erf_gelu(ModelBuilder& m, const std::string& v, const std::string& y, ErfForm form) {
  m.initializer(v + "_sqrt2", Shape{}, std::vector<float>{std::sqrt(2.f)});
  m.initializer(v + "_rsqrt2", Shape{}, std::vector<float>{1.f / std::sqrt(2.f)});
  m.initializer(v + "_one", Shape{}, std::vector<float>{1.f});
  m.initializer(v + "_half", Shape{}, std::vector<float>{0.5f});
  switch (form) {
    case ErfForm::kLegacy:
      m.node("Div", {v, v + "_sqrt2"}, {v + "_d"});
      m.node("Erf", {v + "_d"}, {v + "_e"});
      m.node("Add", {v + "_e", v + "_one"}, {v + "_a"});
      m.node("Mul", {v, v + "_a"}, {v + "_m"});
      m.node("Mul", {v + "_m", v + "_half"}, {y});
      break;
    case ErfForm::kHalfFirst:
      m.node("Mul", {v, v + "_half"}, {v + "_h"});
      m.node("Mul", {v + "_rsqrt2", v}, {v + "_d"});
      m.node("Erf", {v + "_d"}, {v + "_e"});
      m.node("Add", {v + "_one", v + "_e"}, {v + "_a"});
      m.node("Mul", {v + "_h", v + "_a"}, {y});
      break;
    case ErfForm::kBracketHalf:
      m.node("Div", {v, v + "_sqrt2"}, {v + "_d"});
      m.node("Erf", {v + "_d"}, {v + "_e"});
      m.node("Add", {v + "_e", v + "_one"}, {v + "_a"});
      m.node("Mul", {v + "_half", v + "_a"}, {v + "_m"});
      m.node("Mul", {v + "_m", v}, {y});
      break;
  }
}

// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) as GPT-2's NewGELU exports, x^3
// as Pow(x, 3) or x * x * x.
void tanh_gelu(ModelBuilder& m, const std::string& v, const std::string& y, bool pow) {
  m.initializer(v + "_half", Shape{}, std::vector<float>{0.5f});
  m.initializer(v + "_three", Shape{}, std::vector<float>{3.f});
  m.initializer(v + "_c", Shape{}, std::vector<float>{0.044715f});
  m.initializer(v + "_k", Shape{}, std::vector<float>{0.7978845608028654f});
  m.initializer(v + "_one", Shape{}, std::vector<float>{1.f});
  m.node("Mul", {v + "_half", v}, {v + "_h"});
  if (pow) {
    m.node("Pow", {v, v + "_three"}, {v + "_cube"});
  } else {
    m.node("Mul", {v, v}, {v + "_sq"});
    m.node("Mul", {v + "_sq", v}, {v + "_cube"});
  }
  m.node("Mul", {v + "_cube", v + "_c"}, {v + "_t"});
  m.node("Add", {v, v + "_t"}, {v + "_s"});
  m.node("Mul", {v + "_k", v + "_s"}, {v + "_u"});
  m.node("Tanh", {v + "_u"}, {v + "_th"});
  m.node("Add", {v + "_th", v + "_one"}, {v + "_a"});
  m.node("Mul", {v + "_h", v + "_a"}, {y});
}

class OnnxTransformerFusion : public GpuTest {
 protected:
  // x [S, K] @ w [K, N] + b, the linear layer before an activation.
  ModelBuilder linear(const std::string& out = "lin") {
    ModelBuilder m(14);
    m.input("x", kFloat, {kS, kK});
    m.output("y", kFloat);
    m.initializer("w", Shape{kK, kN}, random_floats(kK * kN, -1.5f, 1.5f));
    m.initializer("b", Shape{kN}, random_floats(kN));
    m.node("MatMul", {"x", "w"}, {"mm"});
    m.node("Add", {"b", "mm"}, {out});
    return m;
  }
  std::map<std::string, HostTensor> feeds() {
    return {{"x", random_tensor(rng, DType::Float32, {kS, kK})}};
  }
  bool half_ok() { return context()->features().storage_buffer_16bit; }
  void check(const ModelBuilder& m, bool fp16, size_t fused, size_t plain) {
    Runs r = run_both(m, feeds(), fp16);
    for (size_t i = 0; i < r.fused.size(); ++i)
      expect_near(r.fused[i], r.plain[i], fp16 ? 1e-2f : 2e-5f);
    EXPECT_EQ(r.fused_nodes, fused + input_casts(fp16, 1));
    EXPECT_EQ(r.plain_nodes, plain + input_casts(fp16, 1));
  }
};

TEST_F(OnnxTransformerFusion, ErfGeluJoinsTheMatMulEpilogue) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (ErfForm form : {ErfForm::kLegacy, ErfForm::kHalfFirst, ErfForm::kBracketHalf}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(form)) + (fp16 ? " fp16" : ""));
      ModelBuilder m = linear();
      erf_gelu(m, "lin", "y", form);
      // Fused: one GEMM. Unfused: MatMul, the bias Add, five GELU nodes.
      check(m, fp16, 1, 7);
    }
  }
}

TEST_F(OnnxTransformerFusion, TanhGeluJoinsTheMatMulEpilogue) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (bool pow : {true, false}) {
      SCOPED_TRACE(std::string(pow ? "pow" : "x*x*x") + (fp16 ? " fp16" : ""));
      ModelBuilder m = linear();
      tanh_gelu(m, "lin", "y", pow);
      Runs r = run_both(m, feeds(), fp16);
      expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 2e-5f);
      EXPECT_EQ(r.fused_nodes, 1u + input_casts(fp16, 1));
      // Pow stays float32 in fp16 mode: unfused, its input and output are cast around it.
      EXPECT_EQ(r.plain_nodes, (pow ? 10u : 11u) + input_casts(fp16, 1) + (fp16 && pow ? 2 : 0));
    }
  }
}

// GPT-2's MLP (Conv1D): Gemm on [S, K] -> Reshape to [1, S, N] -> tanh GELU: the GELU joins the
// Gemm's epilogue, the output viewed as the Reshape's shape. The Reshape's output also a model
// output, or a second reader of it: no fusion.
TEST_F(OnnxTransformerFusion, GeluAfterReshapedGemmJoinsItsEpilogue) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (int variant = 0; variant < 3; ++variant) {
      SCOPED_TRACE("variant " + std::to_string(variant) + (fp16 ? " fp16" : ""));
      ModelBuilder m(14);
      m.input("x", kFloat, {kS, kK});
      m.output("y", kFloat);
      m.initializer("w", Shape{kK, kN}, random_floats(kK * kN, -1.5f, 1.5f));
      m.initializer("b", Shape{kN}, random_floats(kN));
      m.initializer("bsn", std::vector<int64_t>{1, kS, kN});
      m.node("Gemm", {"x", "w", "b"}, {"g"});
      m.node("Reshape", {"g", "bsn"}, {"r"});
      if (variant == 1) m.output("r", kFloat);
      if (variant == 2) {
        m.output("r2", kFloat);
        m.node("Relu", {"r"}, {"r2"});
      }
      tanh_gelu(m, "r", "y", false);
      Runs r = run_both(m, feeds(), fp16);
      for (size_t i = 0; i < r.fused.size(); ++i)
        expect_near(r.fused[i], r.plain[i], fp16 ? 1e-2f : 2e-5f);
      // Fused: the Gemm; else the Gemm, one Gelu node [and the Relu].
      EXPECT_EQ(r.fused_nodes,
                static_cast<size_t>(variant == 0 ? 1 : variant + 1) + input_casts(fp16, 1));
      EXPECT_GT(r.plain_nodes, 8u);
    }
  }
}

// BERT's Q, K and V projections of one LayerNorm output (src/onnx/fuse_siblings.h, on by
// default; off with fuse.siblings=0): one GEMM over the concatenated weights and biases, the
// attention reading Q, K and V as views of its output; a fourth reader of x that is no MatMul of a
// constant stays apart, and so does a projection whose result is a model output. Against the knob
// off (three GEMMs) and unfused, fp32 and fp16.
TEST_F(OnnxTransformerFusion, SiblingProjectionsAreOneGemm) {
  constexpr int64_t s = 5, h = 2, d = 4, e = h * d;
  for (bool fp16 : {false, true})
    for (bool k_out : {false, true}) {
      if (fp16 && !half_ok()) continue;
      SCOPED_TRACE(std::string(fp16 ? "fp16" : "fp32") + (k_out ? " k a model output" : ""));
      ModelBuilder m(14);
      m.input("x", kFloat, {1, s, e});
      m.output("y", kFloat);
      m.output("r", kFloat);
      if (k_out) m.output("k_p", kFloat);
      m.initializer("heads", std::vector<int64_t>{1, s, h, d});
      m.initializer("scale", Shape{}, std::vector<float>{0.5f});
      for (const char* t : {"q", "k", "v"}) {
        const std::string n = t;
        m.initializer("w" + n, Shape{e, e}, random_floats(e * e));
        m.initializer("b" + n, Shape{e}, random_floats(e));
        m.node("MatMul", {"x", "w" + n}, {n + "_mm"});
        m.node("Add", {n + "_mm", "b" + n}, {n + "_p"});
        m.node("Reshape", {n + "_p", "heads"}, {n + "_r"});
        set_ints(m.node("Transpose", {n + "_r"}, {n + "_h"}), "perm",
                 n == "k" ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3});
      }
      m.node("Relu", {"x"}, {"r"});
      m.node("MatMul", {"q_h", "k_h"}, {"raw"});
      m.node("Mul", {"raw", "scale"}, {"scores"});
      set_int(m.node("Softmax", {"scores"}, {"probs"}), "axis", -1);
      m.node("MatMul", {"probs", "v_h"}, {"y"});
      SessionOptions on, off, plain;
      on.fp16 = off.fp16 = plain.fp16 = fp16;
      off.graph.tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs("fuse.siblings=0"));
      plain.fuse = false;
      Session merged = m.session(on), separate = m.session(off), unfused = m.session(plain);
      const std::map<std::string, HostTensor> in{
          {"x", random_tensor(rng, DType::Float32, {1, s, e})}};
      const auto a = merged.run(in), b = separate.run(in), c = unfused.run(in);
      for (size_t i = 0; i < a.size(); ++i) {
        expect_near(a[i], b[i], fp16 ? 1e-2f : 1e-5f);
        expect_near(a[i], c[i], fp16 ? 1e-2f : 1e-5f);
      }
      // Merged: the GEMM, the attention, the Relu. Separate: 3 GEMMs, the attention, the Relu.
      // K also a model output: K stays its own GEMM, Q and V merge.
      EXPECT_EQ(merged.graph()->stats().nodes, (k_out ? 4 : 3) + input_casts(fp16, 1));
      EXPECT_EQ(separate.graph()->stats().nodes, 5 + input_casts(fp16, 1));
    }
}

// A GELU after something that has no epilogue becomes one Gelu node.
TEST_F(OnnxTransformerFusion, GeluAfterAnyNodeIsOneNode) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (bool tanh : {false, true}) {
      SCOPED_TRACE(std::string(tanh ? "tanh" : "erf") + (fp16 ? " fp16" : ""));
      ModelBuilder m(14);
      m.input("x", kFloat, {kS, kK});
      m.output("y", kFloat);
      m.node("Neg", {"x"}, {"v"});
      if (tanh)
        tanh_gelu(m, "v", "y", false);
      else
        erf_gelu(m, "v", "y", ErfForm::kLegacy);
      Runs r = run_both(m, feeds(), fp16);
      expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 2e-5f);
      EXPECT_EQ(r.fused_nodes, 2u + input_casts(fp16, 1));
      EXPECT_EQ(r.plain_nodes, (tanh ? 10u : 6u) + input_casts(fp16, 1));
    }
  }
}

TEST_F(OnnxTransformerFusion, GeluChainMustNotFire) {
  {
    SCOPED_TRACE("an intermediate is a model output");
    ModelBuilder m = linear();
    erf_gelu(m, "lin", "y", ErfForm::kLegacy);
    m.output("lin_e", kFloat);
    check(m, false, 6, 7);  // only the bias joins the MatMul
  }
  {
    SCOPED_TRACE("0.4 instead of 0.5");
    ModelBuilder m = linear();
    erf_gelu(m, "lin", "y", ErfForm::kLegacy);
    for (onnx::TensorProto& t : *m.graph().mutable_initializer())
      if (t.name() == "lin_half") t.set_float_data(0, 0.4f);
    check(m, false, 6, 7);
  }
  {
    SCOPED_TRACE("Erf of x / 2");
    ModelBuilder m = linear();
    erf_gelu(m, "lin", "y", ErfForm::kLegacy);
    for (onnx::TensorProto& t : *m.graph().mutable_initializer())
      if (t.name() == "lin_sqrt2") t.set_float_data(0, 2.f);
    check(m, false, 6, 7);
  }
  {
    // The GEMM's output has another reader: the GEMM keeps its output and one Gelu follows.
    SCOPED_TRACE("x read elsewhere");
    ModelBuilder m = linear();
    erf_gelu(m, "lin", "y", ErfForm::kLegacy);
    m.output("z", kFloat);
    m.node("Relu", {"lin"}, {"z"});
    check(m, false, 3, 8);
  }
}

// SiLU as exporters write it, x * Sigmoid(x): Llama's gate projection (a MatMul) and
// EfficientNet's Conv + BatchNormalization take it as their epilogue activation.
TEST_F(OnnxTransformerFusion, SiluJoinsMatMulAndConvEpilogues) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ModelBuilder m = linear();
    m.node("Sigmoid", {"lin"}, {"sig"});
    m.node("Mul", {"sig", "lin"}, {"y"});
    check(m, fp16, 1, 4);

    ModelBuilder c(14);
    c.input("x", kFloat, {1, 4, 5, 5});
    c.output("y", kFloat);
    c.initializer("w", Shape{6, 4, 3, 3}, random_floats(216));
    for (const char* p : {"scale", "bias", "mean"}) c.initializer(p, Shape{6}, random_floats(6));
    c.initializer("var", Shape{6}, random_floats(6, 0.5f, 1.5f));
    set_ints(c.node("Conv", {"x", "w"}, {"conv"}), "pads", {1, 1, 1, 1});
    c.node("BatchNormalization", {"conv", "scale", "bias", "mean", "var"}, {"bn"});
    c.node("Sigmoid", {"bn"}, {"sig"});
    c.node("Mul", {"bn", "sig"}, {"y"});
    Runs r = run_both(c, {{"x", random_tensor(rng, DType::Float32, {1, 4, 5, 5})}}, fp16);
    expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 2e-5f);
    EXPECT_EQ(r.fused_nodes, 1u + input_casts(fp16, 1));
    EXPECT_EQ(r.plain_nodes, 4u + input_casts(fp16, 1));
  }
  // Alone (after a node without an epilogue) SiLU stays two nodes: it has no ONNX op.
  ModelBuilder m(14);
  m.input("x", kFloat, {kS, kK});
  m.output("y", kFloat);
  m.node("Neg", {"x"}, {"v"});
  m.node("Sigmoid", {"v"}, {"s"});
  m.node("Mul", {"v", "s"}, {"y"});
  check(m, false, 3, 3);
}

// RMSNorm in the ways exporters write 1 / sqrt(v): Reciprocal(Sqrt) (onnxscript's rsqrt),
// Div(1, Sqrt), Div(x, Sqrt); with Llama's Cast back to float32 before the weight, or no
// weight; x also read by a residual Add.
enum class Rsqrt { kReciprocal, kOneOver, kDivide };

ModelBuilder rms_norm_model(Rsqrt form, bool cast, bool weight, int opset) {
  ModelBuilder m(opset);
  m.input("x", kFloat, {2, kS, kN});
  m.output("y", kFloat);
  m.initializer("two", Shape{}, std::vector<float>{2.f});
  m.initializer("eps", Shape{}, std::vector<float>{1e-6f});
  m.initializer("one", Shape{}, std::vector<float>{1.f});
  m.initializer("w", Shape{kN}, std::vector<float>(kN, 0.f));
  for (onnx::TensorProto& t : *m.graph().mutable_initializer())
    if (t.name() == "w")
      for (int i = 0; i < kN; ++i) t.set_float_data(i, 0.5f + 0.1f * i);
  m.node("Pow", {"x", "two"}, {"sq"});
  if (opset >= 18) {
    m.initializer("axes", std::vector<int64_t>{-1});
    m.node("ReduceMean", {"sq", "axes"}, {"var"});
  } else {
    set_ints(m.node("ReduceMean", {"sq"}, {"var"}), "axes", {-1});
  }
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"rms"});
  const std::string normed = weight ? (cast ? "n32" : "n") : "normed";
  if (form == Rsqrt::kDivide) {
    m.node("Div", {"x", "rms"}, {cast ? "n" : normed});
  } else {
    if (form == Rsqrt::kReciprocal)
      m.node("Reciprocal", {"rms"}, {"inv"});
    else
      m.node("Div", {"one", "rms"}, {"inv"});
    m.node("Mul", {"x", "inv"}, {cast ? "n" : normed});
  }
  if (cast) set_int(m.node("Cast", {"n"}, {normed}), "to", kFloat);
  if (weight) m.node("Mul", {"w", normed}, {"normed"});
  m.node("Add", {"normed", "x"}, {"y"});  // the residual reads x too
  return m;
}

TEST_F(OnnxTransformerFusion, RmsNormIsOneNode) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (Rsqrt form : {Rsqrt::kReciprocal, Rsqrt::kOneOver, Rsqrt::kDivide})
      for (int variant = 0; variant < 3; ++variant) {
        const bool cast = variant == 1, weight = variant != 2;
        const int opset = variant == 0 ? 18 : 14;
        SCOPED_TRACE(::testing::Message() << "form " << int(form) << " cast " << cast << " weight "
                                          << weight << (fp16 ? " fp16" : ""));
        ModelBuilder m = rms_norm_model(form, cast, weight, opset);
        Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {2, kS, kN})}}, fp16);
        expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 2e-5f);
        // Fused: the norm and the residual Add. Unfused: Pow, ReduceMean, Add, Sqrt,
        // [Reciprocal | Div(1, ·)], Mul | Div, [Mul(w)], Add (the Cast to float32 is no node);
        // in fp16 mode Pow stays float32, so its output is cast too.
        const size_t plain = 6 + (form != Rsqrt::kDivide) + weight;
        EXPECT_EQ(r.fused_nodes, 2u + input_casts(fp16, 1));
        EXPECT_EQ(r.plain_nodes, plain + input_casts(fp16, 1) + (fp16 ? 1 : 0));
      }
  }
}

TEST_F(OnnxTransformerFusion, RmsNormMustNotFire) {
  {
    SCOPED_TRACE("the mean square is a model output");
    ModelBuilder m = rms_norm_model(Rsqrt::kReciprocal, false, true, 14);
    m.output("var", kFloat);
    Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {2, kS, kN})}});
    for (size_t i = 0; i < 2; ++i) expect_near(r.fused[i], r.plain[i]);
    EXPECT_EQ(r.fused_nodes, r.plain_nodes);
  }
  {
    SCOPED_TRACE("the mean over another axis");
    ModelBuilder m = rms_norm_model(Rsqrt::kReciprocal, false, true, 14);
    for (onnx::NodeProto& n : *m.graph().mutable_node())
      if (n.op_type() == "ReduceMean") n.mutable_attribute(0)->set_ints(0, 1);
    Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {2, kS, kN})}});
    expect_near(r.fused[0], r.plain[0]);
    EXPECT_EQ(r.fused_nodes, r.plain_nodes);
  }
}

// y = x @ w1 + b1 + x (a skip connection), then Relu; z = relu(y) @ w2 + y.
TEST_F(OnnxTransformerFusion, ResidualAddJoinsTheMatMulEpilogue) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ModelBuilder m(14);
    m.input("x", kFloat, {2, kS, kK});
    m.output("y", kFloat);
    m.output("z", kFloat);
    m.initializer("w1", Shape{kK, kK}, random_floats(kK * kK));
    m.initializer("b1", Shape{kK}, random_floats(kK));
    m.initializer("w2", Shape{kK, kK}, random_floats(kK * kK));
    m.node("MatMul", {"x", "w1"}, {"mm1"});
    m.node("Add", {"b1", "mm1"}, {"lin1"});
    m.node("Add", {"x", "lin1"}, {"s1"});
    m.node("Relu", {"s1"}, {"y"});
    m.node("MatMul", {"y", "w2"}, {"mm2"});
    m.node("Add", {"mm2", "y"}, {"z"});
    Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {2, kS, kK})}}, fp16);
    for (size_t i = 0; i < 2; ++i) expect_near(r.fused[i], r.plain[i], fp16 ? 1e-2f : 2e-5f);
    EXPECT_EQ(r.fused_nodes, 2u + input_casts(fp16, 1));
    EXPECT_EQ(r.plain_nodes, 6u + input_casts(fp16, 1));
  }
}

TEST_F(OnnxTransformerFusion, ResidualMustNotFire) {
  ModelBuilder m(14);
  m.input("x", kFloat, {kS, kK});
  m.input("r", kFloat, {kK});
  m.output("y", kFloat);
  m.output("z", kFloat);
  m.initializer("w", Shape{kK, kK}, random_floats(kK * kK));
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "r"}, {"y"});  // broadcasts: not of the product's shape
  m.node("MatMul", {"x", "w"}, {"mm2"});
  m.node("Neg", {"x"}, {"later"});
  m.node("Add", {"mm2", "later"}, {"z"});  // computed after the MatMul in node order
  Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {kS, kK})},
                        {"r", random_tensor(rng, DType::Float32, {kK})}});
  for (size_t i = 0; i < 2; ++i) expect_near(r.fused[i], r.plain[i]);
  EXPECT_EQ(r.fused_nodes, 5u);
  EXPECT_EQ(r.plain_nodes, 5u);
}

}  // namespace
}  // namespace vkgraph::testing

// The attention pattern of the fusion pass (src/onnx/fuse_attention.h) in the forms PyTorch's
// exporters emit, each model run with fusion on and off (which must agree) and with the node
// counts that say the pattern fired (or did not). The models are built here with the op
// sequences of:
//   - the legacy TorchScript exporter on Hugging Face-style attention (BERT: heads by Reshape +
//     Transpose, Kᵀ by a Transpose chain, Div by sqrt(d), an additive padding mask);
//   - the dynamo exporter's onnxscript decomposition of scaled_dot_product_attention
//     (Reshape/Transpose/Reshape for Kᵀ, Mul by sqrt(scale) on Q and on Kᵀ, an additive causal
//     mask, Softmax, Dropout, MatMul);
//   - masked_fill / torch.where masks (Where on a bool condition, -inf or finfo.min fill);
//   - grouped-query attention with repeat_kv (Unsqueeze, Expand, Reshape of K and V).
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>

#include "float_test_util.h"
#include "model_builder.h"
#include "shape_test_util.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A Constant node holding a bool tensor: keep[i][j] = j <= i (a causal condition).
void causal_condition(ModelBuilder& m, const std::string& name, int64_t s) {
  onnx::NodeProto& n = m.node("Constant", {}, {name});
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_dims(s);
  t->add_dims(s);
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < s; ++j) t->add_int32_data(j <= i);
}

std::vector<float> causal_additive(int64_t s) {
  std::vector<float> m(s * s);
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < s; ++j) m[i * s + j] = j <= i ? 0.f : kNegInf;
  return m;
}

constexpr int64_t kB = 2, kH = 2, kD = 64;

// BERT's self-attention as the legacy exporter writes it: x [B, S, H*D] -> heads, scores / 8
// [+ mask [B, 1, 1, S]], softmax, context -> [B, S, H*D]. `probs_out`: the probabilities are
// also a model output (the pattern must not fire); `axis`: Softmax's.
ModelBuilder legacy_bert(int64_t s, bool mask, bool probs_out = false, int64_t axis = -1) {
  ModelBuilder m(14);
  for (const char* x : {"q", "k", "v"}) m.input(x, kFloat, {kB, s, kH * kD});
  if (mask) m.input("mask", kFloat, {kB, 1, 1, s});
  m.output("y", kFloat);
  if (probs_out) m.output("probs", kFloat);
  m.initializer("heads", std::vector<int64_t>{kB, s, kH, kD});
  m.initializer("merged", std::vector<int64_t>{kB, s, kH * kD});
  m.initializer("sqrt_d", Shape{}, std::vector<float>{8.f});
  for (const char* x : {"q", "k", "v"}) m.node("Reshape", {x, "heads"}, {std::string(x) + "4"});
  set_ints(m.node("Transpose", {"q4"}, {"qh"}), "perm", {0, 2, 1, 3});
  set_ints(m.node("Transpose", {"k4"}, {"kh"}), "perm", {0, 2, 1, 3});
  set_ints(m.node("Transpose", {"v4"}, {"vh"}), "perm", {0, 2, 1, 3});
  set_ints(m.node("Transpose", {"kh"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"qh", "kt"}, {"raw"});
  m.node("Div", {"raw", "sqrt_d"}, {"scores"});
  if (mask) m.node("Add", {"scores", "mask"}, {"masked"});
  set_int(m.node("Softmax", {mask ? "masked" : "scores"}, {"probs"}), "axis", axis);
  m.node("MatMul", {"probs", "vh"}, {"ctx"});
  set_ints(m.node("Transpose", {"ctx"}, {"ctx_t"}), "perm", {0, 2, 1, 3});
  m.node("Reshape", {"ctx_t", "merged"}, {"y"});
  return m;
}

class OnnxAttention : public GpuTest {
 protected:
  HostTensor rand(Shape shape, float lo = -2, float hi = 2) {
    return random_float_tensor(rng, std::move(shape), lo, hi);
  }
  std::map<std::string, HostTensor> qkv(Shape q, Shape kv) {
    return {{"q", rand(q)}, {"k", rand(kv)}, {"v", rand(kv, -1, 1)}};
  }
  bool half_ok() { return context()->features().storage_buffer_16bit; }
};

TEST_F(OnnxAttention, LegacyExportIsOneDispatch) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (int64_t s : {1, 7, 64, 130})
      for (bool mask : {false, true}) {
        SCOPED_TRACE("s " + std::to_string(s) + (mask ? " mask" : "") + (fp16 ? " fp16" : ""));
        auto feeds = qkv({kB, s, kH * kD}, {kB, s, kH * kD});
        // A padding mask: the last key of batch 1 masked out with the exporters' finfo.min.
        HostTensor m = rand({kB, 1, 1, s}, -1, 0);
        m.data<float>()[2 * s - 1] = std::numeric_limits<float>::lowest();
        if (mask) feeds["mask"] = m;
        Runs r = run_both(legacy_bert(s, mask), feeds, fp16);
        // fp16 unfused rounds scores and probabilities to float16; fused keeps them float32.
        expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 1e-5f);
        // Fused: attention, which stores the heads merged (the output Transpose). Unfused: 4
        // Transposes, 2 MatMuls, Div, [Add], Softmax, the output Transpose. At S = 1 the
        // Transposes only move a dim of 1: views, no nodes.
        const size_t inputs = mask ? 4 : 3, transposes = s == 1 ? 0 : 1;
        EXPECT_EQ(r.fused_nodes, 1 + input_casts(fp16, inputs));
        EXPECT_EQ(r.plain_nodes, (mask ? 5u : 4u) + 5 * transposes + input_casts(fp16, inputs));
      }
  }
}

// onnxscript's aten_scaled_dot_product_attention with is_causal (the mask a constant after
// folding) or a constant float mask, as the dynamo exporter emits it: the two Muls by sqrt(scale)
// fold into the kernel's one scale; Kᵀ's Reshape/Transpose/Reshape stays a copy.
TEST_F(OnnxAttention, DynamoScaledDotProductAttention) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (int64_t s : {7, 130})
      for (bool causal : {true, false}) {
        SCOPED_TRACE("s " + std::to_string(s) + (causal ? " causal" : " constant mask") +
                     (fp16 ? " fp16" : ""));
        ModelBuilder m(18);
        for (const char* x : {"q", "k", "v"}) m.input(x, kFloat, {kB, kH, s, kD});
        m.output("y", kFloat);
        m.initializer("squeezed", std::vector<int64_t>{-1, s, kD});
        m.initializer("kt_shape", std::vector<int64_t>{kB, kH, kD, s});
        m.initializer("scale", Shape{}, std::vector<float>{0.125f});
        m.initializer("ratio", Shape{}, std::vector<float>{0.f});
        // The kernel masks a causal constant by index; any other constant it reads.
        m.initializer("causal", Shape{s, s},
                      causal ? causal_additive(s) : random_floats(s * s, -4, 0));
        m.node("Reshape", {"k", "squeezed"}, {"k3"});
        set_ints(m.node("Transpose", {"k3"}, {"k3t"}), "perm", {0, 2, 1});
        m.node("Reshape", {"k3t", "kt_shape"}, {"kt"});
        m.node("Sqrt", {"scale"}, {"root"});
        m.node("Mul", {"q", "root"}, {"qs"});
        m.node("Mul", {"kt", "root"}, {"kts"});
        m.node("MatMul", {"qs", "kts"}, {"raw"});
        m.node("Add", {"raw", "causal"}, {"masked"});
        set_int(m.node("Softmax", {"masked"}, {"probs"}), "axis", -1);
        m.node("Dropout", {"probs", "ratio"}, {"dropped"});
        m.node("MatMul", {"dropped", "v"}, {"y"});
        Runs r = run_both(m, qkv({kB, kH, s, kD}, {kB, kH, s, kD}), fp16);
        expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 1e-5f);
        // Fused: attention (Kᵀ's Reshape/Transpose/Reshape, read by a Mul, a view: fuse_view.h).
        // Unfused: Transpose, 2 Muls, 2 MatMuls, Add, Softmax (Dropout in inference is no node).
        EXPECT_EQ(r.fused_nodes, 1u + input_casts(fp16, 3));
        EXPECT_EQ(r.plain_nodes, 7u + input_casts(fp16, 3));
      }
  }
}

// torch's _safe_softmax, as the dynamo exporter writes scaled_dot_product_attention with a mask
// (Hugging Face BERT): Where(IsNaN(probs), 0, probs) after the Softmax. Fused, the kernel gives
// zeros for the rows that softmax makes NaN: every key masked to -inf, a +inf score, a NaN
// score; the other rows as before. A fill other than 0 is no such guard: nothing fuses.
TEST_F(OnnxAttention, SafeSoftmaxGuardFuses) {
  const int64_t s = 9;
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (float fill : {0.f, 1.f}) {
      SCOPED_TRACE(std::string(fp16 ? "fp16" : "fp32") + " fill " + std::to_string(fill));
      ModelBuilder m(18);
      for (const char* x : {"q", "k", "v"}) m.input(x, kFloat, {kB, kH, s, kD});
      m.input("mask", kFloat, {kB, 1, s, s});
      m.output("y", kFloat);
      m.initializer("scale", Shape{}, std::vector<float>{0.125f});
      m.initializer("fill", Shape{}, std::vector<float>{fill});
      set_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
      m.node("Sqrt", {"scale"}, {"root"});
      m.node("Mul", {"q", "root"}, {"qs"});
      m.node("Mul", {"kt", "root"}, {"kts"});
      m.node("MatMul", {"qs", "kts"}, {"raw"});
      m.node("Add", {"raw", "mask"}, {"masked"});
      set_int(m.node("Softmax", {"masked"}, {"probs"}), "axis", -1);
      m.node("IsNaN", {"probs"}, {"nan"});
      m.node("Where", {"nan", "fill", "probs"}, {"safe"});
      m.node("MatMul", {"safe", "v"}, {"y"});
      auto feeds = qkv({kB, kH, s, kD}, {kB, kH, s, kD});
      HostTensor mask = rand({kB, 1, s, s}, -4, 0);
      float* mk = mask.data<float>();
      const float inf = std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < s; ++j) mk[2 * s + j] = -inf;          // batch 0, row 2: all masked
      for (int64_t j = 0; j < s; ++j) mk[s * s + 5 * s + j] = -inf;  // batch 1, row 5
      mk[4 * s + 3] = inf;                                           // batch 0, row 4: +inf
      mk[s * s + 7 * s + 1] = std::numeric_limits<float>::quiet_NaN();  // batch 1, row 7
      mk[6 * s + 0] = -inf;  // batch 0, row 6: one key masked, the row as usual
      feeds["mask"] = mask;
      Runs r = run_both(m, feeds, fp16);
      expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 1e-5f);
      // The guarded rows: exact zeros with fill 0 (every head of each).
      const HostTensor& y = r.fused[0];
      int64_t zeros = 0;
      for (int64_t i = 0; i < y.numel(); ++i) zeros += y.data<float>()[i] == 0.f;
      if (fill == 0.f) {
        EXPECT_EQ(zeros, 4 * kH * kD);
        EXPECT_EQ(r.fused_nodes, 1u + input_casts(fp16, 4));
      } else {
        EXPECT_GT(r.fused_nodes, 3u + input_casts(fp16, 4));
      }
    }
  }
}

// Causal masks by Where: torch.where(keep, scores, finfo.min) on a constant condition (GPT-2),
// and masked_fill(pad, -inf) on a computed one.
TEST_F(OnnxAttention, WhereMasks) {
  const int64_t s = 9;
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (bool computed : {false, true}) {
      SCOPED_TRACE(std::string(computed ? "computed" : "constant") + (fp16 ? " fp16" : ""));
      ModelBuilder m(14);
      for (const char* x : {"q", "k", "v"}) m.input(x, kFloat, {kB, kH, s, kD});
      if (computed) m.input("pad", onnx::TensorProto::BOOL, {kB, 1, 1, s});
      m.output("y", kFloat);
      m.initializer("scale", Shape{}, std::vector<float>{0.125f});
      m.initializer("lowest", Shape{}, std::vector<float>{std::numeric_limits<float>::lowest()});
      m.initializer("ninf", Shape{}, std::vector<float>{kNegInf});
      if (!computed) causal_condition(m, "keep", s);
      set_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
      m.node("MatMul", {"q", "kt"}, {"raw"});
      m.node("Mul", {"raw", "scale"}, {"scores"});
      if (computed)
        m.node("Where", {"pad", "ninf", "scores"}, {"masked"});
      else
        m.node("Where", {"keep", "scores", "lowest"}, {"masked"});
      m.node("Softmax", {"masked"}, {"probs"});
      m.node("MatMul", {"probs", "v"}, {"y"});
      auto feeds = qkv({kB, kH, s, kD}, {kB, kH, s, kD});
      if (computed) {
        HostTensor pad(DType::Bool, {kB, 1, 1, s});
        for (int64_t i = 0; i < kB * s; ++i) pad.data<uint8_t>()[i] = i % s >= s - 1 - i / s;
        feeds["pad"] = pad;
      }
      Runs r = run_both(m, feeds, fp16);
      expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 1e-5f);
      // Fused: attention (and the Where that makes the computed condition additive).
      // Unfused: 2 MatMuls, Mul, Where, Softmax (and Kᵀ's Transpose).
      EXPECT_EQ(r.fused_nodes, (computed ? 2u : 1u) + input_casts(fp16, 3));
      EXPECT_EQ(r.plain_nodes, 6u + input_casts(fp16, 3));
    }
  }
}

// Llama's repeat_kv: query heads sharing KV heads, K and V repeated by Unsqueeze, Expand,
// Reshape (V after its heads' Transpose in the `v_heads_last` form, as a projection gives it;
// K as the dynamo exporter writes it in the `dynamo_k` form). The pattern reads K and V with
// their stored heads (the Expands are elided, no copy); where only
// V is such a view (`k_computed`) it is read copied out; with the probabilities also a model
// output the pattern does not fire and the MatMuls read the views copied out. With
// fuse.repeat_kv=0 the Expands run.
struct RepeatKv {
  int64_t h = 4, hkv = 2;
  bool v_heads_last = false;  // v given [1, S, Hkv, D], transposed to [1, Hkv, S, D]
  bool probs_out = false;     // not fused: the grouped views copied out for the MatMuls
  // K repeated, Reshape [H, S, D], Transpose, Reshape [1, H, D, S]; q and kᵀ each scaled by
  // sqrt(scale) (onnxscript's scaled_dot_product_attention).
  bool dynamo_k = false;
  bool k_computed = false;  // an Add after K's repeat: K is no view, V is
  // Nodes: fused by default, with fuse.repeat_kv=0, unfused (float16 casts aside).
  size_t viewed = 1, copied = 3, plain = 8;
};

ModelBuilder repeat_kv_model(const RepeatKv& f, int64_t s, int64_t d) {
  ModelBuilder m(14);
  m.input("q", kFloat, {1, f.h, s, d});
  m.input("k", kFloat, {1, f.hkv, s, d});
  m.input("v", kFloat,
          f.v_heads_last ? std::initializer_list<int64_t>{1, s, f.hkv, d}
                         : std::initializer_list<int64_t>{1, f.hkv, s, d});
  m.output("y", kFloat);
  if (f.probs_out) m.output("probs", kFloat);
  m.initializer("axis2", std::vector<int64_t>{2});
  m.initializer("expanded", std::vector<int64_t>{1, f.hkv, f.h / f.hkv, s, d});
  m.initializer("heads", std::vector<int64_t>{1, f.h, s, d});
  m.initializer("causal", Shape{1, 1, s, s}, causal_additive(s));
  if (f.v_heads_last) set_ints(m.node("Transpose", {"v"}, {"vh"}), "perm", {0, 2, 1, 3});
  for (const char* x : {"k", "v"}) {
    const std::string n = x, in = f.v_heads_last && n == "v" ? "vh" : n;
    m.node("Unsqueeze", {in, "axis2"}, {n + "5"});
    m.node("Expand", {n + "5", "expanded"}, {n + "e"});
  }
  m.node("Reshape", {"ve", "heads"}, {"vr"});
  if (f.dynamo_k) {
    m.initializer("flat", std::vector<int64_t>{f.h, s, d});
    m.initializer("kt_shape", std::vector<int64_t>{1, f.h, d, s});
    m.initializer("root_scale", Shape{}, std::vector<float>{1.f / std::sqrt(std::sqrt(float(d)))});
    m.node("Reshape", {"ke", "flat"}, {"kf"});
    set_ints(m.node("Transpose", {"kf"}, {"kft"}), "perm", {0, 2, 1});
    m.node("Reshape", {"kft", "kt_shape"}, {"kt"});
    m.node("Mul", {"q", "root_scale"}, {"qs"});
    m.node("Mul", {"kt", "root_scale"}, {"kts"});
    m.node("MatMul", {"qs", "kts"}, {"scores"});
  } else {
    m.node("Reshape", {"ke", "heads"}, {"kr"});
    std::string k = "kr";
    if (f.k_computed) {
      m.initializer("k_shift", Shape{1, 1, 1, d}, std::vector<float>(d, 0.25f));
      m.node("Add", {"kr", "k_shift"}, {"kc"});
      k = "kc";
    }
    m.initializer("scale", Shape{}, std::vector<float>{1.f / std::sqrt(float(d))});
    set_ints(m.node("Transpose", {k}, {"kt"}), "perm", {0, 1, 3, 2});
    m.node("MatMul", {"q", "kt"}, {"raw"});
    m.node("Mul", {"raw", "scale"}, {"scores"});
  }
  m.node("Add", {"scores", "causal"}, {"masked"});
  m.node("Softmax", {"masked"}, {"probs"});
  m.node("MatMul", {"probs", "vr"}, {"y"});
  return m;
}

TEST_F(OnnxAttention, GroupedQueryAttentionByRepeatKv) {
  const int64_t s = 64, d = 128;
  std::vector<RepeatKv> forms(7);
  // V's Transpose a view its Expand reads copied out by default.
  forms[1].v_heads_last = true;
  forms[1].copied = 4;
  forms[1].plain = 9;
  forms[2].hkv = 1;  // multi-query
  forms[3].h = 8;    // 4 query heads per KV head
  // Unfused either way: the MatMuls read copies of the views, or (fuse.repeat_kv=0) the Expands
  // run.
  forms[4].probs_out = true;
  forms[4].viewed = forms[4].copied = 6;
  forms[5].dynamo_k = true;
  forms[5].plain = 9;
  // K: its copy for the Add, the Add; V read copied out; the attention.
  forms[6].k_computed = true;
  forms[6].viewed = forms[6].copied = 4;
  forms[6].plain = 9;
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (size_t i = 0; i < forms.size(); ++i) {
      const RepeatKv& f = forms[i];
      SCOPED_TRACE("form " + std::to_string(i) + (fp16 ? " fp16" : " fp32"));
      auto feeds = qkv({1, f.h, s, d}, {1, f.hkv, s, d});
      if (f.v_heads_last) feeds["v"] = rand({1, s, f.hkv, d}, -1, 1);
      const ModelBuilder m = repeat_kv_model(f, s, d);
      SessionOptions on, off, plain;
      on.fp16 = off.fp16 = plain.fp16 = fp16;
      off.graph.tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs("fuse.repeat_kv=0"));
      plain.fuse = false;
      Session viewed = m.session(on), copied = m.session(off), unfused = m.session(plain);
      const auto a = viewed.run(feeds), b = copied.run(feeds), c = unfused.run(feeds);
      ASSERT_EQ(a.size(), c.size());
      for (size_t o = 0; o < a.size(); ++o) {
        expect_near(a[o], c[o], fp16 ? 1e-2f : 1e-5f);
        expect_near(b[o], c[o], fp16 ? 1e-2f : 1e-5f);
      }
      EXPECT_EQ(viewed.graph()->stats().nodes, f.viewed + input_casts(fp16, 3));
      EXPECT_EQ(copied.graph()->stats().nodes, f.copied + input_casts(fp16, 3));
      EXPECT_EQ(unfused.graph()->stats().nodes, f.plain + input_casts(fp16, 3));
    }
  }
}

// The probabilities are also a model output, or Softmax is over another axis: no fusion of
// the attention (the scores' MatMul still takes its Div as FusedMatMul's epilogue).
TEST_F(OnnxAttention, PatternMustNotFire) {
  const int64_t s = 7;
  auto feeds = qkv({kB, s, kH * kD}, {kB, s, kH * kD});
  for (bool probs_out : {true, false}) {
    SCOPED_TRACE(probs_out ? "probs output" : "softmax axis 2");
    Runs r = run_both(legacy_bert(s, false, probs_out, probs_out ? -1 : 2), feeds, false);
    ASSERT_EQ(r.fused.size(), r.plain.size());
    for (size_t i = 0; i < r.fused.size(); ++i) expect_near(r.fused[i], r.plain[i], 1e-5f);
    // Fused: MatMul with its Div, Softmax, MatMul, the output Transpose. Unfused: also the
    // 4 Transposes and the Div.
    EXPECT_EQ(r.fused_nodes, 4u);
    EXPECT_EQ(r.plain_nodes, 9u);
  }
}

// A head dim beyond the kernel's 256: the unfused ops run (the scores' MatMul with its
// transposed operand as a view, Softmax, MatMul) and the model loads as before.
TEST_F(OnnxAttention, HeadDimBeyondTheKernelStaysUnfused) {
  const int64_t s = 5, d = 320;
  ModelBuilder m(14);
  for (const char* x : {"q", "k", "v"}) m.input(x, kFloat, {1, 2, s, d});
  m.output("y", kFloat);
  set_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"q", "kt"}, {"raw"});
  m.node("Softmax", {"raw"}, {"probs"});
  m.node("MatMul", {"probs", "v"}, {"y"});
  Runs r = run_both(m, qkv({1, 2, s, d}, {1, 2, s, d}), false);
  expect_near(r.fused[0], r.plain[0], 1e-5f);
  // Fused as attention it would be 1 node; unfused the Transpose is the only node fusion saves
  // (the 320-deep scores' MatMul takes two nodes of its own either way).
  EXPECT_EQ(r.fused_nodes, 4u);
  EXPECT_EQ(r.plain_nodes, 5u);
}

}  // namespace
}  // namespace vkgraph::testing

namespace vkgraph::testing {
namespace {

// Real exports by the legacy exporter (torch 1.13; tools/export_attention_tests.py):
// nn.MultiheadAttention (q scaled by a Div before the scores' MatMul, kᵀ and v views) and a
// Hugging Face BERT layer with its additive finfo.min mask, one head of 64 each.
class OnnxAttentionExported : public GpuTest {
 protected:
  Runs run_file(const std::string& name, const std::map<std::string, HostTensor>& feeds,
                bool fp16) {
    const std::string path = std::string(VKGRAPH_SOURCE_DIR) + "/tests/models/" + name;
    SessionOptions on, off;
    on.context = off.context = context();
    on.fp16 = off.fp16 = fp16;
    off.fuse = false;
    Session fused(path, on), plain(path, off);
    Runs r{fused.run(feeds), plain.run(feeds), 0, 0};
    r.fused_nodes = fused.graph()->stats().nodes;
    r.plain_nodes = plain.graph()->stats().nodes;
    return r;
  }
};

TEST_F(OnnxAttentionExported, LegacyMultiheadAttentionAndBert) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    HostTensor x = random_tensor(rng, DType::Float32, {2, 7, 64});
    HostTensor mask(DType::Float32, {2, 7});
    for (int64_t i = 0; i < 14; ++i) mask.data<float>()[i] = i < 12 ? 1.f : 0.f;
    Runs mha = run_file("attention_mha_legacy.onnx", {{"x", x}}, fp16);
    expect_near(mha.fused[0], mha.plain[0], fp16 ? 1e-2f : 1e-5f);
    Runs bert = run_file("attention_bert_legacy.onnx", {{"x", x}, {"mask", mask}}, fp16);
    expect_near(bert.fused[0], bert.plain[0], fp16 ? 1e-2f : 1e-5f);
    // MHA fused: in-projection MatMul, attention (with the Div: attention_scaled_q; q, k, v
    // offset views of the in-projection through the 3 Slices and the head Transposes,
    // fuse_view.h), the context's Transpose (copied out at the Reshape to [S·B, E], which
    // merges dims the strides keep apart), out-projection Gemm, the batch_first Transpose.
    // BERT fused: the 3 projections as one GEMM (fuse_siblings.h), the mask's Sub and Mul,
    // attention (a single head's Transposes are views).
    EXPECT_EQ(mha.fused_nodes, 5u + input_casts(fp16, 1));
    EXPECT_EQ(mha.plain_nodes, 16u + input_casts(fp16, 1));
    EXPECT_EQ(bert.fused_nodes, 4u + input_casts(fp16, 2));
    EXPECT_EQ(bert.plain_nodes, 14u + input_casts(fp16, 2));
  }
}

}  // namespace
}  // namespace vkgraph::testing

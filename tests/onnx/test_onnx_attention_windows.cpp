// Attention whose masks and scales the exporters write after the scores' MatMul in node order
// (folded ahead, Importer::fold_ahead), and Swin's shifted-window attention (the scores viewed
// as [B, windows, H, N, N] for the shift mask, then viewed back). Each model runs with fusion on
// and off, which must agree, with node counts that say the pattern fired (or did not); the
// checked-in torchvision exports also against PyTorch's output.
#include <onnx/onnx_pb.h>

#include <cmath>

#include "float_test_util.h"
#include "model_builder.h"
#include "shape_test_util.h"
#include "vkgraph/tensor_io.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

// A Constant node of float32 values (so that its value is known only once it is visited).
void float_constant(ModelBuilder& m, const std::string& name, const Shape& shape,
                    const std::vector<float>& values) {
  onnx::NodeProto& n = m.node("Constant", {}, {name});
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

void int_constant(ModelBuilder& m, const std::string& name, const std::vector<int64_t>& values) {
  onnx::NodeProto& n = m.node("Constant", {}, {name});
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

// Swin's window attention as torchvision writes it (both exporters): q · kᵀ · scale, the
// relative-position bias [H, N, N] added (when `bias` is not empty), and for shifted windows the
// scores viewed as [B, nW, H, N, N] plus the shift mask [nW, 1, N, N] (made after the scores'
// MatMul, as the exporters place it), viewed back, Softmax, Dropout (ratio 0), · v. `mask_input`:
// the shift mask is a model input (computed: the pattern must not fire).
constexpr int64_t kBatch = 2, kWindows = 4, kHeads = 2, kTokens = 16, kHeadDim = 32;
ModelBuilder swin_attention(const std::vector<float>& bias, bool shifted, bool mask_input) {
  const int64_t bw = kBatch * kWindows;
  ModelBuilder m(17);
  for (const char* x : {"q", "k", "v"}) m.input(x, kFloat, {bw, kHeads, kTokens, kHeadDim});
  if (mask_input) m.input("shift", kFloat, {kWindows, 1, kTokens, kTokens});
  m.output("y", kFloat);
  m.initializer("scale", Shape{}, std::vector<float>{1.f / std::sqrt(float(kHeadDim))});
  if (!bias.empty()) m.initializer("bias", Shape{kHeads, kTokens, kTokens}, bias);
  m.node("Mul", {"q", "scale"}, {"qs"});
  set_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"qs", "kt"}, {"raw"});
  std::string scores = "raw";
  if (!bias.empty()) {
    m.node("Add", {scores, "bias"}, {"biased"});
    scores = "biased";
  }
  if (shifted) {
    // 0 or -100 (torchvision's fill), a pattern that differs by window.
    std::vector<float> shift(kWindows * kTokens * kTokens);
    for (size_t i = 0; i < shift.size(); ++i) shift[i] = (i * 7 + i / 37) % 3 == 0 ? -100.f : 0.f;
    int_constant(m, "windowed", {-1, kWindows, kHeads, kTokens, kTokens});
    m.node("Reshape", {scores, "windowed"}, {"by_window"});
    if (!mask_input) {
      float_constant(m, "shift4", {kWindows, 1, kTokens, kTokens}, shift);
      int_constant(m, "unsq", {0});
      m.node("Unsqueeze", {"shift4", "unsq"}, {"shift"});
    }
    m.node("Add", {"by_window", "shift"}, {"shifted"});
    int_constant(m, "back", {-1, kHeads, kTokens, kTokens});
    m.node("Reshape", {"shifted", "back"}, {"unwindowed"});
    scores = "unwindowed";
  }
  set_int(m.node("Softmax", {scores}, {"probs"}), "axis", -1);
  // torch 1.13 exports the attention dropout in training mode, with ratio 0 and a mask output.
  float_constant(m, "ratio", {}, {0.f});
  onnx::NodeProto& training = m.node("Constant", {}, {"training"});
  onnx::AttributeProto* a = training.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  a->mutable_t()->add_int32_data(1);
  m.node("Dropout", {"probs", "ratio", "training"}, {"dropped", "kept"});
  m.node("MatMul", {"dropped", "v"}, {"y"});
  return m;
}

class OnnxAttentionWindows : public GpuTest {
 protected:
  HostTensor rand(Shape shape, float lo = -2, float hi = 2) {
    return random_float_tensor(rng, std::move(shape), lo, hi);
  }
  bool half_ok() { return context()->features().storage_buffer_16bit; }
};

TEST_F(OnnxAttentionWindows, ShiftedWindowMaskIsOneDispatch) {
  const Shape qkv{kBatch * kWindows, kHeads, kTokens, kHeadDim};
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (bool bias : {true, false}) {
      SCOPED_TRACE(std::string(bias ? "bias + shift" : "shift only") + (fp16 ? " fp16" : ""));
      const std::vector<float> b =
          bias ? random_floats(kHeads * kTokens * kTokens, -2, 2) : std::vector<float>{};
      Runs r = run_both(swin_attention(b, true, false),
                        {{"q", rand(qkv)}, {"k", rand(qkv)}, {"v", rand(qkv, -1, 1)}}, fp16);
      expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 1e-5f);
      // Fused: one attention (q's Mul and kᵀ's Transpose, after it in node order, read as a
      // scale and a view; both masks one constant). Unfused: Mul, Transpose, 2 MatMuls, [bias Add,]
      // shift Add, Softmax.
      EXPECT_EQ(r.fused_nodes, 1u + input_casts(fp16, 3));
      EXPECT_EQ(r.plain_nodes, (bias ? 7u : 6u) + input_casts(fp16, 3));
    }
  }
}

TEST_F(OnnxAttentionWindows, ComputedShiftMaskStaysUnfused) {
  const Shape qkv{kBatch * kWindows, kHeads, kTokens, kHeadDim};
  Runs r = run_both(swin_attention(random_floats(kHeads * kTokens * kTokens, -2, 2), true, true),
                    {{"q", rand(qkv)},
                     {"k", rand(qkv)},
                     {"v", rand(qkv, -1, 1)},
                     {"shift", rand({kWindows, 1, kTokens, kTokens}, -3, 0)}},
                    false);
  expect_near(r.fused[0], r.plain[0], 1e-5f);
  // Mul, MatMul (kᵀ a view; the [H, N, N] bias is no GEMM bias), bias Add, shift Add,
  // Softmax, MatMul; unfused, kᵀ's Transpose too.
  EXPECT_EQ(r.fused_nodes, 6u);
  EXPECT_EQ(r.plain_nodes, 7u);
}

// c / q scales nothing: the Div stays a node, the attention starts at the MatMul.
TEST_F(OnnxAttentionWindows, DivOfAConstantByQIsNoScale) {
  const Shape qkv{1, kHeads, kTokens, kHeadDim};
  ModelBuilder m(17);
  for (const char* x : {"q", "k", "v"}) m.input(x, kFloat, {1, kHeads, kTokens, kHeadDim});
  m.output("y", kFloat);
  m.initializer("c", Shape{}, std::vector<float>{0.5f});
  m.node("Div", {"c", "q"}, {"qs"});
  set_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"qs", "kt"}, {"raw"});
  set_int(m.node("Softmax", {"raw"}, {"probs"}), "axis", -1);
  m.node("MatMul", {"probs", "v"}, {"y"});
  Runs r =
      run_both(m, {{"q", rand(qkv, 0.5f, 2)}, {"k", rand(qkv)}, {"v", rand(qkv, -1, 1)}}, false);
  expect_near(r.fused[0], r.plain[0], 1e-5f);
  EXPECT_EQ(r.fused_nodes, 2u);  // Div, attention
  EXPECT_EQ(r.plain_nodes, 5u);  // Div, Transpose, 2 MatMuls, Softmax
}

// The legacy exporter's SDPA scales q and kᵀ by Mul(·, Sqrt(scale)) each, and writes the Sqrt
// for kᵀ's Mul after q's Mul: the pattern, rooted at q's Mul, folds it ahead.
TEST_F(OnnxAttentionWindows, PrescaledWithTheSecondScaleLater) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    const Shape qkv{1, kHeads, kTokens, kHeadDim};
    ModelBuilder m(17);
    for (const char* x : {"q", "k", "v"}) m.input(x, kFloat, {1, kHeads, kTokens, kHeadDim});
    m.output("y", kFloat);
    m.initializer("scale", Shape{}, std::vector<float>{0.125f});
    set_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
    m.node("Sqrt", {"scale"}, {"root_q"});
    m.node("Mul", {"q", "root_q"}, {"qs"});
    m.node("Sqrt", {"scale"}, {"root_k"});
    m.node("Mul", {"kt", "root_k"}, {"kts"});
    m.node("MatMul", {"qs", "kts"}, {"raw"});
    set_int(m.node("Softmax", {"raw"}, {"probs"}), "axis", -1);
    m.node("MatMul", {"probs", "v"}, {"y"});
    Runs r = run_both(m, {{"q", rand(qkv)}, {"k", rand(qkv)}, {"v", rand(qkv, -1, 1)}}, fp16);
    expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 1e-5f);
    // Fused: attention (kᵀ's Transpose, read by the scale's Mul, a view). Unfused: Transpose,
    // 2 Muls, 2 MatMuls, Softmax.
    EXPECT_EQ(r.fused_nodes, 1u + input_casts(fp16, 3));
    EXPECT_EQ(r.plain_nodes, 6u + input_casts(fp16, 3));
  }
}

// The torchvision exports of tests/models (PyTorch 2.11, both exporters; test_architectures.cpp
// says how they were made): every attention fused, the node counts pinned so that a pattern
// that stops firing shows, fused and unfused against PyTorch's output.
TEST_F(OnnxAttentionWindows, TorchvisionExportsNodeCounts) {
  struct Case {
    const char* model;
    size_t attentions;    // blocks, each one FusedAttention dispatch
    size_t fused, plain;  // nodes in fp32 mode (fp16 mode: the input's cast more)
  };
  // Measured at qkv-5: the Q/K/V split read as offset views, the out-projection's residual in
  // its Gemm (fuse-4 fused: vit dynamo 38, legacy 40, swin dynamo 120, legacy 119); then
  // (session 22) Concats reading Slices and Expands in place: vit 22 -> 21 (the class token),
  // swin 98 / 97 -> 77 / 76 (cyclic shifts, patch merging).
  const Case cases[] = {{"vit_mini_dynamo", 2, 21, 60},
                        {"vit_mini_legacy", 2, 21, 68},
                        {"swin_mini_dynamo", 4, 77, 170},
                        {"swin_mini_legacy", 4, 76, 185}};
  for (const Case& c : cases)
    for (bool fp16 : {false, true}) {
      if (fp16 && !half_ok()) continue;
      SCOPED_TRACE(std::string(c.model) + (fp16 ? " fp16" : ""));
      const std::string dir = std::string(VKGRAPH_SOURCE_DIR) + "/tests/models/";
      const std::string base =
          dir + std::string(c.model).substr(0, std::string(c.model).rfind('_'));
      const HostTensor x = read_npy(base + "_input.npy");
      const HostTensor want = read_npy(base + "_output.npy");
      SessionOptions on, off;
      on.context = off.context = context();
      on.fp16 = off.fp16 = fp16;
      off.fuse = false;
      on.graph.profile = true;  // node_times() lists every dispatch's label
      Session fused(dir + c.model + ".onnx", on), plain(dir + c.model + ".onnx", off);
      const HostTensor a = fused.run({{"input", x}})[0], b = plain.run({{"input", x}})[0];
      EXPECT_LE(relative_error(a, want), fp16 ? 1e-2 : 1e-5);
      EXPECT_LE(relative_error(b, want), fp16 ? 1e-2 : 1e-5);
      EXPECT_EQ(fused.graph()->stats().nodes, c.fused + input_casts(fp16, 1));
      EXPECT_EQ(plain.graph()->stats().nodes, c.plain + input_casts(fp16, 1));
      size_t attentions = 0, softmaxes = 0;
      for (const NodeTime& t : fused.graph()->node_times()) {
        attentions += t.label.find(": attention") != std::string::npos;
        softmaxes += t.label.rfind("Softmax", 0) == 0;
      }
      EXPECT_EQ(attentions, c.attentions);
      EXPECT_EQ(softmaxes, 0u);
    }
}

}  // namespace
}  // namespace vkgraph::testing

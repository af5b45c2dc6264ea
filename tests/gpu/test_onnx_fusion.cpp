// Load-time fusions on ONNX graphs. Attention: Transposes that only MatMuls read stay views (no
// copy), chains of them compose, and a Mul or Div by a scalar after a MatMul becomes its
// epilogue scale. Residual blocks: the skip connection's Add (and the activation after it)
// join the convolution's epilogue. Each model runs with load-time fusion on and off
// (SessionOptions::fuse), which must agree, and the fused graph must have fewer nodes.
#include <onnx/onnx_pb.h>

#include "model_builder.h"
#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

void set_ints(onnx::NodeProto& node, const std::string& name, std::vector<int64_t> values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

struct Runs {
  std::vector<HostTensor> fused, plain;
  size_t fused_nodes, plain_nodes;
};

Runs run_both(const ModelBuilder& m, const std::map<std::string, HostTensor>& feeds,
              bool fp16 = false) {
  SessionOptions on, off;
  on.fp16 = off.fp16 = fp16;
  off.fuse = false;
  Session fused = m.session(on), plain = m.session(off);
  Runs r{fused.run(feeds), plain.run(feeds), 0, 0};
  r.fused_nodes = fused.graph()->stats().nodes;
  r.plain_nodes = plain.graph()->stats().nodes;
  return r;
}

// scores = (heads(q) @ heads(k)^T) * 0.5 or / 2, softmax; heads: [B, S, H*D] -> [B, H, S, D].
ModelBuilder attention(bool divide) {
  ModelBuilder m(14);
  m.input("q", kFloat, {2, 5, 6});
  m.input("k", kFloat, {2, 5, 6});
  m.output("probs", kFloat);
  m.output("q_heads_relu", kFloat);  // a non-MatMul reader: that Transpose is materialized
  m.initializer("heads_shape", std::vector<int64_t>{2, 5, 2, 3});
  m.initializer("scale", Shape{}, std::vector<float>{divide ? 2.f : 0.5f});
  m.node("Reshape", {"q", "heads_shape"}, {"q4"});
  m.node("Reshape", {"k", "heads_shape"}, {"k4"});
  set_ints(m.node("Transpose", {"q4"}, {"qh"}), "perm", {0, 2, 1, 3});
  set_ints(m.node("Transpose", {"k4"}, {"kh"}), "perm", {0, 2, 1, 3});
  set_ints(m.node("Transpose", {"kh"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"qh", "kt"}, {"raw"});
  m.node(divide ? "Div" : "Mul", {"raw", "scale"}, {"scores"});
  m.node("Softmax", {"scores"}, {"probs"});
  m.node("Relu", {"qh"}, {"q_heads_relu"});
  return m;
}

class OnnxFusion : public GpuTest {
 protected:
  std::map<std::string, HostTensor> feeds() {
    return {{"q", random_tensor(rng, DType::Float32, {2, 5, 6})},
            {"k", random_tensor(rng, DType::Float32, {2, 5, 6})}};
  }
};

TEST_F(OnnxFusion, TransposesIntoMatMulAreReadInPlace) {
  for (bool divide : {false, true}) {
    SCOPED_TRACE(divide ? "Div" : "Mul");
    Runs r = run_both(attention(divide), feeds());
    ASSERT_EQ(r.fused.size(), 2u);
    for (size_t i = 0; i < 2; ++i) expect_near(r.fused[i], r.plain[i], 1e-5f);
    // Unfused: 3 transposes, matmul, scale, softmax, relu. Fused: the q transpose (Relu reads
    // it), matmul with its scale, softmax, relu.
    EXPECT_EQ(r.fused_nodes + 3, r.plain_nodes);
  }
}

// Both MatMul operands as views (nothing else reads Q's heads), bias, scale and activation in
// one epilogue; and a Div with the constant first, which must stay a node of its own.
TEST_F(OnnxFusion, BothOperandsViewsWithBiasScaleAndActivation) {
  ModelBuilder m(14);
  m.input("q", kFloat, {2, 5, 6});
  m.input("k", kFloat, {2, 5, 6});
  m.output("y", kFloat);
  m.output("inv", kFloat);
  m.initializer("heads_shape", std::vector<int64_t>{2, 5, 2, 3});
  m.initializer("bias", Shape{5}, random_floats(5));
  m.initializer("scale", Shape{}, std::vector<float>{0.25f});
  m.initializer("two", Shape{}, std::vector<float>{2.f});
  m.node("Reshape", {"q", "heads_shape"}, {"q4"});
  m.node("Reshape", {"k", "heads_shape"}, {"k4"});
  set_ints(m.node("Transpose", {"q4"}, {"qh"}), "perm", {0, 2, 1, 3});
  set_ints(m.node("Transpose", {"k4"}, {"kt"}), "perm", {0, 2, 3, 1});
  m.node("MatMul", {"qh", "kt"}, {"raw"});
  m.node("Add", {"bias", "raw"}, {"biased"});
  m.node("Mul", {"scale", "biased"}, {"scaled"});
  m.node("Relu", {"scaled"}, {"y"});
  m.node("MatMul", {"qh", "kt"}, {"raw2"});
  m.node("Div", {"two", "raw2"}, {"inv"});
  Runs r = run_both(m, feeds());
  for (size_t i = 0; i < 2; ++i) expect_near(r.fused[i], r.plain[i], 1e-5f);
  // Fused: matmul+bias+scale+relu, matmul, div. Unfused: 2 transposes, 2 matmuls, add, mul,
  // relu, div.
  EXPECT_EQ(r.fused_nodes, 3u);
  EXPECT_EQ(r.plain_nodes, 8u);
}

TEST_F(OnnxFusion, ViewsInFloat16Mode) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  Runs r = run_both(attention(false), feeds(), true);
  for (size_t i = 0; i < 2; ++i) expect_near(r.fused[i], r.plain[i], 1e-2f);
}

// A Transpose chain read by something other than MatMul is copied once, composed.
TEST_F(OnnxFusion, TransposeChainMaterializesOnce) {
  ModelBuilder m(14);
  m.input("x", kFloat, {2, 3, 4});
  m.output("y", kFloat);
  set_ints(m.node("Transpose", {"x"}, {"t1"}), "perm", {1, 0, 2});
  set_ints(m.node("Transpose", {"t1"}, {"t2"}), "perm", {0, 2, 1});
  m.node("Relu", {"t2"}, {"y"});
  HostTensor x = random_tensor(rng, DType::Float32, {2, 3, 4});
  Runs r = run_both(m, {{"x", x}});
  // y[a][b][c] = relu(x[c][a][b]), shape [3, 4, 2].
  HostTensor want(DType::Float32, {3, 4, 2});
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 2; ++c)
        want.data<float>()[(a * 4 + b) * 2 + c] =
            std::max(0.f, x.data<float>()[(c * 3 + a) * 4 + b]);
  expect_near(r.fused[0], want, 0.f);
  expect_near(r.plain[0], want, 0.f);
  EXPECT_EQ(r.fused_nodes + 1, r.plain_nodes);
}

// x -> Conv -> Relu -> Conv -> Add(x) -> Relu, and a projection Conv -> Add(x) (MobileNetV2's
// inverted residual ends so), whose Add has the skip connection as its first input.
TEST_F(OnnxFusion, ResidualBlocksFuseTheirAdd) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ModelBuilder m(14);
    m.input("x", kFloat, {1, 8, 6, 6});
    m.output("y", kFloat);
    m.output("z", kFloat);
    for (const char* w : {"w1", "w2"}) m.initializer(w, Shape{8, 8, 3, 3}, random_floats(576));
    m.initializer("w3", Shape{8, 8, 1, 1}, random_floats(64));
    m.initializer("b1", Shape{8}, random_floats(8));
    set_ints(m.node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
    m.node("Relu", {"c1"}, {"r1"});
    set_ints(m.node("Conv", {"r1", "w2"}, {"c2"}), "pads", {1, 1, 1, 1});
    m.node("Add", {"c2", "x"}, {"s"});
    m.node("Relu", {"s"}, {"y"});
    m.node("Conv", {"y", "w3"}, {"c3"});
    m.node("Add", {"y", "c3"}, {"z"});
    Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {1, 8, 6, 6})}}, fp16);
    for (size_t i = 0; i < 2; ++i) expect_near(r.fused[i], r.plain[i], fp16 ? 1e-2f : 1e-5f);
    // conv+relu, conv+add+relu, conv+add; fp16 mode adds the input and output casts.
    const size_t casts = fp16 ? 3 : 0;
    EXPECT_EQ(r.fused_nodes, 3u + casts);
    EXPECT_EQ(r.plain_nodes, 7u + casts);
  }
}

TEST_F(OnnxFusion, BadPermutationIsAnError) {
  ModelBuilder m(14);
  m.input("x", kFloat, {2, 3});
  m.input("w", kFloat, {2, 4});
  m.output("y", kFloat);
  set_ints(m.node("Transpose", {"x"}, {"t"}), "perm", {0, 0});
  m.node("MatMul", {"t", "w"}, {"y"});
  expect_error([&] { m.session(); }, ErrorKind::InvalidArgument,
               {"Transpose", "not a permutation"});
}

}  // namespace
}  // namespace vkgraph::testing

// The fusion pass (src/onnx/fuse.h), pattern by pattern. Attention: Transposes that only MatMuls
// read stay views (no copy), chains of them compose, and a Mul or Div by a scalar after a MatMul
// becomes its epilogue scale. Residual blocks: the skip connection's Add (and the activation after
// it) join the convolution's epilogue. Each model runs with load-time fusion on and off
// (SessionOptions::fuse), which must agree, and the fused graph must have fewer nodes.
#include <onnx/onnx_pb.h>

#include <limits>

#include "model_builder.h"
#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

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

// A weight too large to fold twice (> kMaxFoldElements), transposed for a MatMul and read by
// a Gather too, as GPT-2's tied embedding is: the MatMul reads it in place as B stored [N, K]
// (no Transpose dispatch, one copy of the weight); unfused, the Transpose folds at load.
TEST_F(OnnxFusion, LargeTransposedWeightIsReadInPlace) {
  const int64_t rows = 4099, cols = 4097;  // 16,793,603 elements > 2^24
  ModelBuilder m(14);
  m.input("x", kFloat, {2, cols});
  m.input("idx", onnx::TensorProto::INT64, {3});
  m.output("y", kFloat);
  m.output("e", kFloat);
  const HostTensor w = random_tensor(rng, DType::Float32, {rows, cols});
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(kFloat);
  t.add_dims(rows);
  t.add_dims(cols);
  t.set_raw_data(w.bytes.data(), w.bytes.size());
  m.initializer(std::move(t));
  m.node("Transpose", {"w"}, {"wt"});
  m.node("MatMul", {"x", "wt"}, {"y"});
  set_int(m.node("Gather", {"w", "idx"}, {"e"}), "axis", 0);
  const HostTensor x = random_tensor(rng, DType::Float32, {2, cols});
  const HostTensor idx = HostTensor::from(DType::Int64, {3}, std::vector<int64_t>{0, 7, rows - 1});
  Runs r = run_both(m, {{"x", x}, {"idx", idx}});
  ASSERT_EQ(r.fused.size(), 2u);
  EXPECT_EQ(r.fused_nodes, 2u);  // the MatMul and the Gather
  EXPECT_EQ(r.plain_nodes, 2u);  // the Transpose folded
  const float* wp = w.data<float>();
  const float* xp = x.data<float>();
  HostTensor want(DType::Float32, {2, rows});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t n = 0; n < rows; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < cols; ++k) acc += double(xp[i * cols + k]) * wp[n * cols + k];
      want.data<float>()[i * rows + n] = static_cast<float>(acc);
    }
  expect_near(r.fused[0], want, 1e-3f);
  expect_near(r.plain[0], want, 1e-3f);
  EXPECT_EQ(r.fused[1].bytes, r.plain[1].bytes);
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
    // conv+relu, conv+add+relu, conv+add; fp16 mode adds the input's cast.
    const size_t casts = input_casts(fp16, 1);
    EXPECT_EQ(r.fused_nodes, 3u + casts);
    EXPECT_EQ(r.plain_nodes, 7u + casts);
  }
}

// Pattern conv_epilogue: BatchNormalization folds into the Conv's weights and bias, and the
// activation after it joins the epilogue (one node instead of three), in fp32 and fp16 mode.
TEST_F(OnnxFusion, ConvBatchNormActivationIsOneNode) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    for (bool conv_bias : {false, true}) {
      SCOPED_TRACE(conv_bias ? "conv bias" : "no conv bias");
      ModelBuilder m(14);
      m.input("x", kFloat, {1, 4, 5, 5});
      m.output("y", kFloat);
      m.initializer("w", Shape{6, 4, 3, 3}, random_floats(216));
      m.initializer("b", Shape{6}, random_floats(6));
      m.initializer("scale", Shape{6}, random_floats(6));
      m.initializer("shift", Shape{6}, random_floats(6));
      m.initializer("mean", Shape{6}, random_floats(6));
      m.initializer("var", Shape{6}, random_floats(6, 0.5f, 1.5f));
      if (conv_bias)
        m.node("Conv", {"x", "w", "b"}, {"c"});
      else
        m.node("Conv", {"x", "w"}, {"c"});
      m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"});
      m.node("Relu", {"n"}, {"y"});
      Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {1, 4, 5, 5})}}, fp16);
      expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 1e-5f);
      const size_t casts = input_casts(fp16, 1);
      EXPECT_EQ(r.fused_nodes, 1u + casts);
      EXPECT_EQ(r.plain_nodes, 3u + casts);
    }
  }
}

// conv_epilogue must not fire where the intermediate is seen elsewhere: the Conv's output is a
// model output, BatchNorm's parameters are computed, the Add's other input comes later in the
// node order or is a constant.
TEST_F(OnnxFusion, ConvEpilogueKeepsIntermediatesOthersRead) {
  ModelBuilder m(14);
  m.input("x", kFloat, {1, 4, 5, 5});
  m.input("var", kFloat, {4});
  m.output("c1", kFloat);
  m.output("y1", kFloat);
  m.output("y2", kFloat);
  m.output("y3", kFloat);
  m.output("y4", kFloat);
  m.initializer("w", Shape{4, 4, 1, 1}, random_floats(16));
  m.initializer("scale", Shape{4}, random_floats(4));
  m.initializer("shift", Shape{4}, random_floats(4));
  m.initializer("mean", Shape{4}, random_floats(4));
  m.initializer("cvar", Shape{4}, random_floats(4, 0.5f, 1.5f));
  m.initializer("k", Shape{1, 4, 1, 1}, random_floats(4));
  m.node("Conv", {"x", "w"}, {"c1"});  // a model output, also read by Relu
  m.node("Relu", {"c1"}, {"y1"});
  m.node("Conv", {"x", "w"}, {"c2"});  // BatchNorm with a variance known on the device only
  m.node("BatchNormalization", {"c2", "scale", "shift", "mean", "var"}, {"y2"});
  m.node("Conv", {"x", "w"}, {"c3"});  // the Add's other input is computed after the Conv
  m.node("Sigmoid", {"x"}, {"later"});
  m.node("Add", {"c3", "later"}, {"y3"});
  m.node("Conv", {"x", "w"}, {"c4"});  // an Add of a constant is no residual
  m.node("Add", {"c4", "k"}, {"y4"});
  HostTensor var = random_tensor(rng, DType::Float32, {4});
  for (int64_t i = 0; i < 4; ++i) var.data<float>()[i] = std::abs(var.data<float>()[i]) + 0.5f;
  Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {1, 4, 5, 5})}, {"var", var}});
  ASSERT_EQ(r.fused.size(), 5u);
  for (size_t i = 0; i < 5; ++i) expect_near(r.fused[i], r.plain[i], 1e-5f);
  EXPECT_EQ(r.fused_nodes, r.plain_nodes);
  EXPECT_EQ(r.plain_nodes, 9u);
}

// Pattern gemm_activation: the activation after a Gemm joins its epilogue; not where the Gemm's
// output is a model output or the activation is not one the epilogue applies (Sin).
TEST_F(OnnxFusion, GemmActivationIsOneNode) {
  ModelBuilder m(14);
  m.input("a", kFloat, {3, 5});
  m.output("y", kFloat);
  m.output("g2", kFloat);
  m.output("y2", kFloat);
  m.output("y3", kFloat);
  m.initializer("w", Shape{4, 5}, random_floats(20));
  m.initializer("c", Shape{4}, random_floats(4));
  onnx::NodeProto& gemm = m.node("Gemm", {"a", "w", "c"}, {"g"});
  onnx::AttributeProto* t = gemm.add_attribute();
  t->set_name("transB");
  t->set_type(onnx::AttributeProto::INT);
  t->set_i(1);
  onnx::AttributeProto* alpha = gemm.add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(0.5f);
  m.node("Sigmoid", {"g"}, {"y"});
  *m.node("Gemm", {"a", "w", "c"}, {"g2"}).mutable_attribute() = gemm.attribute();
  m.node("Relu", {"g2"}, {"y2"});
  *m.node("Gemm", {"a", "w", "c"}, {"g3"}).mutable_attribute() = gemm.attribute();
  m.node("Sin", {"g3"}, {"y3"});
  Runs r = run_both(m, {{"a", random_tensor(rng, DType::Float32, {3, 5})}});
  ASSERT_EQ(r.fused.size(), 4u);
  for (size_t i = 0; i < 4; ++i) expect_near(r.fused[i], r.plain[i], 1e-5f);
  EXPECT_EQ(r.fused_nodes, 5u);
  EXPECT_EQ(r.plain_nodes, 6u);
}

// Pattern matmul_epilogue on a MatMul of host constants: MatMul does not fold on the host, so it
// is lowered, and fused, like any other.
TEST_F(OnnxFusion, MatMulOfConstantsFusesItsEpilogue) {
  ModelBuilder m(14);
  m.input("x", kFloat, {3, 4});
  m.output("y", kFloat);
  m.initializer("a", Shape{3, 5}, random_floats(15));
  m.initializer("w", Shape{5, 4}, random_floats(20));
  m.initializer("bias", Shape{4}, random_floats(4));
  m.node("MatMul", {"a", "w"}, {"mm"});
  m.node("Add", {"mm", "bias"}, {"biased"});
  m.node("Relu", {"biased"}, {"r"});
  m.node("Add", {"r", "x"}, {"y"});
  Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {3, 4})}});
  expect_near(r.fused[0], r.plain[0], 1e-5f);
  EXPECT_EQ(r.fused_nodes, 2u);
  EXPECT_EQ(r.plain_nodes, 4u);
}

// Pattern matmul_epilogue must not fire where the bias is not a host constant of the output's
// last dim, or the MatMul's output has a second reader.
TEST_F(OnnxFusion, MatMulEpilogueNeedsAConstantBiasAndOneReader) {
  ModelBuilder m(14);
  m.input("a", kFloat, {3, 5});
  m.input("dyn_bias", kFloat, {4});
  m.output("y1", kFloat);
  m.output("y2", kFloat);
  m.output("y3", kFloat);
  m.output("y4", kFloat);
  m.initializer("w", Shape{5, 4}, random_floats(20));
  m.initializer("row_bias", Shape{3, 1}, random_floats(3));
  m.node("MatMul", {"a", "w"}, {"m1"});
  m.node("Add", {"m1", "dyn_bias"}, {"y1"});
  m.node("MatMul", {"a", "w"}, {"m2"});
  m.node("Add", {"m2", "row_bias"}, {"y2"});
  m.node("MatMul", {"a", "w"}, {"m3"});  // read by Relu and Tanh
  m.node("Relu", {"m3"}, {"y3"});
  m.node("Tanh", {"m3"}, {"y4"});
  Runs r = run_both(m, {{"a", random_tensor(rng, DType::Float32, {3, 5})},
                        {"dyn_bias", random_tensor(rng, DType::Float32, {4})}});
  ASSERT_EQ(r.fused.size(), 4u);
  for (size_t i = 0; i < 4; ++i) expect_near(r.fused[i], r.plain[i], 1e-5f);
  EXPECT_EQ(r.fused_nodes, r.plain_nodes);
  EXPECT_EQ(r.plain_nodes, 7u);
}

// Pattern transpose_view must not fire where the Transpose's output is a model output, even
// when only a MatMul reads it otherwise.
TEST_F(OnnxFusion, TransposeThatIsAModelOutputIsCopied) {
  ModelBuilder m(14);
  m.input("x", kFloat, {4, 3});
  m.input("w", kFloat, {4, 2});
  m.output("t", kFloat);
  m.output("y", kFloat);
  set_ints(m.node("Transpose", {"x"}, {"t"}), "perm", {1, 0});
  m.node("MatMul", {"t", "w"}, {"y"});
  Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {4, 3})},
                        {"w", random_tensor(rng, DType::Float32, {4, 2})}});
  for (size_t i = 0; i < 2; ++i) expect_near(r.fused[i], r.plain[i], 1e-5f);
  EXPECT_EQ(r.fused_nodes, 2u);
  EXPECT_EQ(r.plain_nodes, 2u);
}

// ConvNeXt's block: x (NCHW) -> Transpose to channels-last -> MatMul + bias -> Relu -> MatMul +
// bias -> Transpose back -> Mul(layer scale [C, 1, 1]) -> Add(x). Pattern matmul_channels_first
// makes the second MatMul write channels-first with the bias, the scale and the residual in
// its epilogue: 3 nodes fewer (the first Transpose is already a view the MatMul reads). Also a
// batch of 2 in rank 3 with a scalar scale before the residual's Add (the residual its first
// input) and no bias, in fp32 and fp16 mode.
TEST_F(OnnxFusion, MatMulBeforeTransposeToChannelsFirstWritesChannelsFirst) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ModelBuilder m(14);
    m.input("x", kFloat, {1, 8, 5, 6});
    m.input("z", kFloat, {2, 7, 16});
    m.input("r", kFloat, {2, 24, 7});
    m.output("y", kFloat);
    m.output("u", kFloat);
    m.initializer("w1", Shape{8, 16}, random_floats(128));
    m.initializer("b1", Shape{16}, random_floats(16));
    m.initializer("w2", Shape{16, 8}, random_floats(128));
    m.initializer("b2", Shape{8}, random_floats(8));
    m.initializer("gamma", Shape{8, 1, 1}, random_floats(8));
    m.initializer("w3", Shape{16, 24}, random_floats(384));
    m.initializer("half", Shape{}, std::vector<float>{0.5f});
    set_ints(m.node("Transpose", {"x"}, {"xl"}), "perm", {0, 2, 3, 1});
    m.node("MatMul", {"xl", "w1"}, {"h"});
    m.node("Add", {"h", "b1"}, {"hb"});
    m.node("Relu", {"hb"}, {"hr"});
    m.node("MatMul", {"hr", "w2"}, {"o"});
    m.node("Add", {"b2", "o"}, {"ob"});
    set_ints(m.node("Transpose", {"ob"}, {"oc"}), "perm", {0, 3, 1, 2});
    m.node("Mul", {"gamma", "oc"}, {"os"});
    m.node("Add", {"os", "x"}, {"y"});
    m.node("MatMul", {"z", "w3"}, {"p"});
    set_ints(m.node("Transpose", {"p"}, {"pc"}), "perm", {0, 2, 1});
    m.node("Mul", {"pc", "half"}, {"ps"});
    m.node("Add", {"r", "ps"}, {"u"});
    Runs r = run_both(m,
                      {{"x", random_tensor(rng, DType::Float32, {1, 8, 5, 6})},
                       {"z", random_tensor(rng, DType::Float32, {2, 7, 16})},
                       {"r", random_tensor(rng, DType::Float32, {2, 24, 7})}},
                      fp16);
    ASSERT_EQ(r.fused.size(), 2u);
    EXPECT_EQ(r.fused[0].shape, (Shape{1, 8, 5, 6}));
    EXPECT_EQ(r.fused[1].shape, (Shape{2, 24, 7}));
    for (size_t i = 0; i < 2; ++i) expect_near(r.fused[i], r.plain[i], fp16 ? 1e-2f : 1e-5f);
    // Fused: matmul+bias+relu reading x's view, the two channels-first matmuls. Unfused: 9 + 4.
    const size_t casts = input_casts(fp16, 3);
    EXPECT_EQ(r.fused_nodes, 3u + casts);
    EXPECT_EQ(r.plain_nodes, 13u + casts);
  }
}

// Pattern matmul_channels_first must not fire where the Transpose does not move the last dim to
// dim 1, the weight is not a host constant, or the product has a second reader; a Mul by a
// constant along another dim stays a node of its own.
TEST_F(OnnxFusion, ChannelsFirstMatMulOnlyWhereItIsOne) {
  ModelBuilder m(14);
  std::map<std::string, HostTensor> feeds;
  for (const char* x : {"x1", "x2", "x3", "x4"}) {
    m.input(x, kFloat, {1, 3, 4, 8});
    feeds[x] = random_tensor(rng, DType::Float32, {1, 3, 4, 8});
  }
  m.input("w_dyn", kFloat, {8, 5});
  feeds["w_dyn"] = random_tensor(rng, DType::Float32, {8, 5});
  for (const char* y : {"y1", "y2", "y3", "y4", "y5"}) m.output(y, kFloat);
  m.initializer("w", Shape{8, 5}, random_floats(40));
  m.initializer("per_w", Shape{4}, random_floats(4));
  m.node("MatMul", {"x1", "w"}, {"m1"});
  set_ints(m.node("Transpose", {"m1"}, {"y1"}), "perm", {0, 3, 2, 1});
  m.node("MatMul", {"x2", "w_dyn"}, {"m2"});
  set_ints(m.node("Transpose", {"m2"}, {"y2"}), "perm", {0, 3, 1, 2});
  m.node("MatMul", {"x3", "w"}, {"m3"});
  set_ints(m.node("Transpose", {"m3"}, {"y3"}), "perm", {0, 3, 1, 2});
  m.node("Relu", {"m3"}, {"y4"});
  m.node("MatMul", {"x4", "w"}, {"m4"});
  set_ints(m.node("Transpose", {"m4"}, {"t4"}), "perm", {0, 3, 1, 2});
  m.node("Mul", {"t4", "per_w"}, {"y5"});
  Runs r = run_both(m, feeds);
  ASSERT_EQ(r.fused.size(), 5u);
  for (size_t i = 0; i < 5; ++i) expect_near(r.fused[i], r.plain[i], 1e-5f);
  // Only the last MatMul and its Transpose become one node.
  EXPECT_EQ(r.plain_nodes, 10u);
  EXPECT_EQ(r.fused_nodes, 9u);
}

// The per-channel scale is folded into the weight only where it is finite: an infinite scale
// times a zero weight is NaN, where the unfused Mul scales a finite product to +-inf.
TEST_F(OnnxFusion, ChannelsFirstMatMulKeepsAnInfiniteScaleOutside) {
  ModelBuilder m(14);
  m.input("x", kFloat, {1, 3, 4, 8});
  std::map<std::string, HostTensor> feeds{{"x", random_tensor(rng, DType::Float32, {1, 3, 4, 8})}};
  m.output("y", kFloat);
  std::vector<float> w = random_floats(40);
  std::fill(w.begin(), w.begin() + 5, 0.f);  // row k = 0: a zero in every column
  m.initializer("w", Shape{8, 5}, w);
  const float inf = std::numeric_limits<float>::infinity();
  m.initializer("scale", Shape{5, 1, 1}, {1.f, inf, 0.5f, -inf, 2.f});
  m.node("MatMul", {"x", "w"}, {"mm"});
  set_ints(m.node("Transpose", {"mm"}, {"t"}), "perm", {0, 3, 1, 2});
  m.node("Mul", {"t", "scale"}, {"y"});
  Runs r = run_both(m, feeds);
  ASSERT_EQ(r.fused.size(), 1u);
  const HostTensor& got = r.fused[0];
  const HostTensor& want = r.plain[0];
  ASSERT_EQ(got.numel(), want.numel());
  int infinite = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float a = got.data<float>()[i], b = want.data<float>()[i];
    ASSERT_FALSE(std::isnan(b)) << i;
    if (std::isinf(b)) {
      ++infinite;
      EXPECT_EQ(a, b) << i;
    } else {
      EXPECT_NEAR(a, b, 1e-5f * (1.f + std::fabs(b))) << i;
    }
  }
  EXPECT_EQ(infinite, 2 * 12);  // channels 1 and 3, 12 pixels each
  EXPECT_EQ(r.plain_nodes, 3u);
  EXPECT_EQ(r.fused_nodes, 2u);  // MatMul and Transpose fused; the Mul stays
}

// Pattern channel_layer_norm: ConvNeXt's LayerNorm2d (Transpose to channels-last ->
// LayerNormalization -> Transpose back) is one node reading and writing channels-first, and
// a block's (Transpose -> LayerNormalization -> MatMul) one node writing channels-last for the
// MatMul; in fp32 and fp16 mode. Not: a Transpose of another permutation, a LayerNormalization
// over more than the channels, a channels-last tensor something else reads too.
TEST_F(OnnxFusion, LayerNormOverChannelsReadsThemInPlace) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ModelBuilder m(17);
    std::map<std::string, HostTensor> feeds;
    for (const char* x : {"x1", "x2", "x3", "x4", "x5"}) {
      m.input(x, kFloat, {2, 8, 3, 5});
      feeds[x] = random_tensor(rng, DType::Float32, {2, 8, 3, 5});
    }
    for (const char* y : {"y1", "y2", "y3", "y4", "y5", "t5"}) m.output(y, kFloat);
    m.initializer("scale", Shape{8}, random_floats(8, 0.5f, 2.f));
    m.initializer("bias", Shape{8}, random_floats(8));
    m.initializer("w", Shape{8, 4}, random_floats(32));
    m.initializer("scale_wide", Shape{5, 8}, random_floats(40, 0.5f, 2.f));
    auto layer_norm = [&](const std::string& in, const std::string& out, bool bias,
                          int64_t axis = -1) {
      onnx::NodeProto& n = bias ? m.node("LayerNormalization", {in, "scale", "bias"}, {out})
                                : m.node("LayerNormalization", {in, "scale"}, {out});
      set_int(n, "axis", axis);
      onnx::AttributeProto* eps = n.add_attribute();
      eps->set_name("epsilon");
      eps->set_type(onnx::AttributeProto::FLOAT);
      eps->set_f(1e-6f);
    };
    set_ints(m.node("Transpose", {"x1"}, {"l1"}), "perm", {0, 2, 3, 1});
    layer_norm("l1", "n1", true);
    set_ints(m.node("Transpose", {"n1"}, {"y1"}), "perm", {0, 3, 1, 2});
    set_ints(m.node("Transpose", {"x2"}, {"l2"}), "perm", {0, 2, 3, 1});
    layer_norm("l2", "n2", false);
    m.node("MatMul", {"n2", "w"}, {"y2"});
    set_ints(m.node("Transpose", {"x3"}, {"l3"}), "perm", {0, 3, 2, 1});  // [2, 5, 3, 8]
    layer_norm("l3", "y3", true);
    set_ints(m.node("Transpose", {"x4"}, {"l4"}), "perm", {0, 2, 3, 1});  // [2, 3, 5, 8]
    onnx::NodeProto& wide = m.node("LayerNormalization", {"l4", "scale_wide"}, {"y4"});
    set_int(wide, "axis", 2);
    set_ints(m.node("Transpose", {"x5"}, {"t5"}), "perm", {0, 2, 3, 1});
    layer_norm("t5", "y5", true);
    Runs r = run_both(m, feeds, fp16);
    ASSERT_EQ(r.fused.size(), 6u);
    EXPECT_EQ(r.fused[0].shape, (Shape{2, 8, 3, 5}));
    EXPECT_EQ(r.fused[1].shape, (Shape{2, 3, 5, 4}));
    for (size_t i = 0; i < 6; ++i) expect_near(r.fused[i], r.plain[i], fp16 ? 1e-2f : 1e-5f);
    // Fused: the channels-first norm, the channels-last norm and the MatMul, then the three
    // cases left as they are (Transpose and norm each). Unfused: 3 + 3 + 2 + 2 + 2.
    const size_t casts = input_casts(fp16, 5);
    EXPECT_EQ(r.fused_nodes, 9u + casts);
    EXPECT_EQ(r.plain_nodes, 12u + casts);
  }
}

// Pattern concat_of_views: Swin's cyclic shift (torch.roll on H and W as Slice, Slice, Concat
// per dim) and patch merging (four Slices of step 2 concatenated on channels): the Slices cost
// no copies of their own, each Concat copies its views into place. Not: a Concat of computed
// tensors, a Slice that is also a model output.
TEST_F(OnnxFusion, ConcatReadsSlicesInPlace) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ModelBuilder m(14);
    m.input("x", kFloat, {1, 6, 8, 4});
    m.output("rolled", kFloat);
    m.output("merged", kFloat);
    m.output("plain", kFloat);
    m.output("s_out", kFloat);
    auto ints = [&](const std::string& name, std::vector<int64_t> v) { m.initializer(name, v); };
    ints("two", {2});
    ints("end", {std::numeric_limits<int64_t>::max()});
    ints("zero", {0});
    ints("m2", {-2});
    ints("three", {3});
    ints("ax1", {1});
    ints("ax2", {2});
    ints("ax12", {1, 2});
    ints("s00", {0, 0});
    ints("s01", {0, 1});
    ints("s10", {1, 0});
    ints("s11", {1, 1});
    ints("ends", {6, 8});
    ints("steps", {2, 2});
    m.node("Relu", {"x"}, {"r"});
    // roll by -2 along H: cat(r[:, 2:], r[:, :2]); by 3 along W: cat(h[:, :, -3:], h[:, :, :-3])
    m.node("Slice", {"r", "two", "end", "ax1"}, {"a1"});
    m.node("Slice", {"r", "zero", "two", "ax1"}, {"a2"});
    set_int(m.node("Concat", {"a1", "a2"}, {"h"}), "axis", 1);
    ints("m3", {-3});
    m.node("Slice", {"h", "m3", "end", "ax2"}, {"b1"});
    m.node("Slice", {"h", "zero", "m3", "ax2"}, {"b2"});
    set_int(m.node("Concat", {"b1", "b2"}, {"rolled"}), "axis", 2);
    // patch merging: x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]
    const char* starts[] = {"s00", "s10", "s01", "s11"};
    std::vector<std::string> quarters;
    for (int q = 0; q < 4; ++q) {
      quarters.push_back("q" + std::to_string(q));
      m.node("Slice", {"r", starts[q], "ends", "ax12", "steps"}, {quarters.back()});
    }
    set_int(m.node("Concat", {quarters[0], quarters[1], quarters[2], quarters[3]}, {"merged"}),
            "axis", -1);
    m.node("Sigmoid", {"x"}, {"sg"});
    set_int(m.node("Concat", {"r", "sg"}, {"plain"}), "axis", 3);
    m.node("Slice", {"sg", "zero", "three", "ax1"}, {"s_out"});
    Runs r = run_both(m, {{"x", random_tensor(rng, DType::Float32, {1, 6, 8, 4})}}, fp16);
    ASSERT_EQ(r.fused.size(), 4u);
    EXPECT_EQ(r.fused[1].shape, (Shape{1, 3, 4, 16}));
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r.fused[i].bytes, r.plain[i].bytes) << i;
    // Unfused: relu, sigmoid, the 8 slices, the concats' 2 + 2 + 4 + 2 copies and the output
    // slice (21). Fused: the same without the 8 slices.
    const size_t casts = input_casts(fp16, 1);
    EXPECT_EQ(r.plain_nodes, 21u + casts);
    EXPECT_EQ(r.fused_nodes, 13u + casts);
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

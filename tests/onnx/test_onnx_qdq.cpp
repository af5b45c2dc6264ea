// QDQ models (the layout onnxruntime's quantize_static writes) run as integer kernels: the
// fusion pass (src/onnx/fuse_qdq.h) turns DequantizeLinear -> Conv/MatMul/Gemm [-> Relu/Clip]
// -> QuantizeLinear into one kernel with int32 sums and one requantization, and elides the
// DequantizeLinears between them. Each model runs fused and unfused (float ops behind
// dequantized tensors, SessionOptions::fuse = false); they must agree within one quantization
// step, and the MatMul's result must be ONNX's exact rounding and saturation of the integer sums.
#include <onnx/onnx_pb.h>

#include <cmath>

#include "model_builder.h"
#include "quant_test_util.h"
#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt8 = onnx::TensorProto::INT8;
constexpr int kUInt8 = onnx::TensorProto::UINT8;
constexpr int kInt32 = onnx::TensorProto::INT32;

// Quantized outputs (widened to Int32 by the frontend) agree within one step; returns how
// many are not equal.
int64_t expect_within_one_step(const HostTensor& got, const HostTensor& want) {
  EXPECT_EQ(got.dtype, DType::Int32);
  EXPECT_EQ(got.shape, want.shape);
  int64_t differ = 0;
  for (int64_t i = 0; i < got.numel() && i < want.numel(); ++i) {
    const int32_t a = got.data<int32_t>()[i], b = want.data<int32_t>()[i];
    EXPECT_LE(std::abs(a - b), 1) << "element " << i;
    differ += a != b;
  }
  return differ;
}

HostTensor ints(const Shape& s, const std::vector<int>& v) {
  return HostTensor::from(DType::Int32, s, std::vector<int32_t>(v.begin(), v.end()));
}

class OnnxQdq : public GpuTest {};

// Q(x) -> DQ -> Conv(DQ(w1 int8, per channel), DQ(b1 int32)) -> Relu -> Q(uint8) -> DQ ->
// Conv(DQ(w2 int8, per tensor, zero point 3), stride 2) -> Clip(-0.5, 0.5) -> Q(int8) -> DQ.
// bias_identity: the dequantized bias reaches the Conv through an Identity, as where PyTorch's
// exporter merged equal initializers.
ModelBuilder qdq_conv_net(std::mt19937& rng, float x_scale, std::vector<float>& w1_scale,
                          bool bias_identity = false) {
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 3, 9, 9});
  m.output("q2", kInt8);
  m.output("y", kFloat);
  m.initializer("x_scale", Shape{}, std::vector<float>{x_scale});
  m.int_initializer("x_zero", kUInt8, {}, {128});
  m.int_initializer("w1", kInt8, {4, 3, 3, 3}, random_ints(rng, 4 * 27, -127, 127));
  m.initializer("w1_scale", Shape{4}, w1_scale);
  m.int_initializer("w1_zero", kInt8, {4}, {0, 0, 0, 0});
  std::vector<float> b1_scale;
  for (float s : w1_scale) b1_scale.push_back(x_scale * s);
  m.int_initializer("b1", kInt32, {4}, random_ints(rng, 4, -3000, 3000));
  m.initializer("b1_scale", Shape{4}, b1_scale);
  m.initializer("s1", Shape{}, std::vector<float>{0.04f});
  m.int_initializer("z1", kUInt8, {}, {0});
  m.int_initializer("w2", kInt8, {2, 4, 3, 3}, random_ints(rng, 2 * 36, -127, 127));
  m.initializer("w2_scale", Shape{}, std::vector<float>{0.004f});
  m.int_initializer("w2_zero", kInt8, {}, {3});
  m.initializer("lo", Shape{}, std::vector<float>{-0.5f});
  m.initializer("hi", Shape{}, std::vector<float>{0.5f});
  m.initializer("s2", Shape{}, std::vector<float>{0.005f});
  m.int_initializer("z2", kInt8, {}, {-5});
  m.node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"xq"});
  m.node("DequantizeLinear", {"xq", "x_scale", "x_zero"}, {"xd"});
  set_int(m.node("DequantizeLinear", {"w1", "w1_scale", "w1_zero"}, {"w1d"}), "axis", 0);
  set_int(m.node("DequantizeLinear", {"b1", "b1_scale"}, {"b1d"}), "axis", 0);
  if (bias_identity) m.node("Identity", {"b1d"}, {"b1i"});
  set_ints(m.node("Conv", {"xd", "w1d", bias_identity ? "b1i" : "b1d"}, {"c1"}), "pads",
           {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  m.node("QuantizeLinear", {"r1", "s1", "z1"}, {"q1"});
  m.node("DequantizeLinear", {"q1", "s1", "z1"}, {"d1"});
  m.node("DequantizeLinear", {"w2", "w2_scale", "w2_zero"}, {"w2d"});
  set_ints(m.node("Conv", {"d1", "w2d"}, {"c2"}), "strides", {2, 2});
  m.node("Clip", {"c2", "lo", "hi"}, {"k2"});
  m.node("QuantizeLinear", {"k2", "s2", "z2"}, {"q2"});
  m.node("DequantizeLinear", {"q2", "s2", "z2"}, {"y"});
  return m;
}

TEST_F(OnnxQdq, ConvNetRunsAsIntegerKernels) {
  const float x_scale = 0.02f;
  std::vector<float> w1_scale = random_floats(4, 0.002f, 0.01f);
  ModelBuilder m = qdq_conv_net(rng, x_scale, w1_scale);
  HostTensor x = random_tensor(rng, DType::Float32, {1, 3, 9, 9});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 2.f;
  HostTensor fp32_q2;
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    Runs r = run_both(m, {{"x", x}}, fp16);
    ASSERT_EQ(r.fused.size(), 2u);
    // Fused: Q(x), the two integer convolutions, DQ(y), the widening of the int8 output q2.
    // Unfused also dequantizes x, both weights and the bias, and the first Q/DQ pair between.
    EXPECT_EQ(r.fused_nodes, 5u);
    EXPECT_GE(r.plain_nodes, r.fused_nodes + 5);
    if (!fp16) {
      const int64_t differ = expect_within_one_step(r.fused[0], r.plain[0]);
      EXPECT_LE(differ, r.fused[0].numel() / 10);
    } else {
      // The unfused path holds the dequantized activations in float16 (about 3 decimal
      // digits): a few steps of s2 apart from the exact integer sums.
      for (int64_t i = 0; i < r.fused[0].numel(); ++i)
        EXPECT_LE(std::abs(r.fused[0].data<int32_t>()[i] - r.plain[0].data<int32_t>()[i]), 6) << i;
    }
    int saturated = 0;
    for (int64_t i = 0; i < r.fused[0].numel(); ++i) {
      const int32_t q = r.fused[0].data<int32_t>()[i];
      // Clip(-0.5, 0.5) before Q is the range [Q(-0.5), Q(0.5)] = [-5 - 100, -5 + 100].
      EXPECT_GE(q, -105);
      EXPECT_LE(q, 95);
      saturated += q == -105 || q == 95;
      EXPECT_EQ(r.fused[1].data<float>()[i], float(q + 5) * 0.005f);
    }
    EXPECT_GT(saturated, 0) << "the test should reach the Clip's bound";
    // The integer path does not depend on the float mode.
    if (fp16) {
      ASSERT_EQ(fp32_q2.numel(), r.fused[0].numel());
      for (int64_t i = 0; i < fp32_q2.numel(); ++i)
        ASSERT_EQ(r.fused[0].data<int32_t>()[i], fp32_q2.data<int32_t>()[i]) << i;
    } else {
      fp32_q2 = r.fused[0];
    }
  }
}

// xq (uint8 input) -> DQ -> MatMul(DQ(w int8 [K, N], per column)) -> Q(uint8) = q1 -> DQ ->
// Gemm(DQ(w2 int8 [N2, N], per row), float bias, transB) -> Relu -> Q(int8) = q2.
struct MatMulNet {
  static constexpr int64_t kRows = 10, kK = 16, kN = 8, kN2 = 6;
  std::vector<int> xq, w, w2;
  std::vector<float> w_scale, w2_scale, bias;
  float x_scale = 0.05f, s1 = 0.1f, s2 = 0.08f;
  int x_zero = 100, z1 = 120, z2 = -20;

  ModelBuilder build(std::mt19937& rng) {
    xq = random_ints(rng, kRows * kK, 0, 255);
    w = random_ints(rng, kK * kN, -127, 127);
    w2 = random_ints(rng, kN2 * kN, -127, 127);
    for (int64_t j = 0; j < kN; ++j) w_scale.push_back(0.002f + 0.001f * j);
    for (int64_t j = 0; j < kN2; ++j) w2_scale.push_back(0.003f + 0.0005f * j);
    for (int64_t j = 0; j < kN2; ++j) bias.push_back(0.3f * (j % 3) - 0.3f);
    ModelBuilder m(13);
    m.input("xq", kUInt8, {kRows, kK});
    m.output("q1", kUInt8);
    m.output("q2", kInt8);
    m.initializer("x_scale", Shape{}, std::vector<float>{x_scale});
    m.int_initializer("x_zero", kUInt8, {}, {x_zero});
    m.int_initializer("w", kInt8, {kK, kN}, w);
    m.initializer("w_scale", Shape{kN}, w_scale);
    m.initializer("s1", Shape{}, std::vector<float>{s1});
    m.int_initializer("z1", kUInt8, {}, {z1});
    m.int_initializer("w2", kInt8, {kN2, kN}, w2);
    m.initializer("w2_scale", Shape{kN2}, w2_scale);
    m.initializer("bias", Shape{kN2}, bias);
    m.initializer("s2", Shape{}, std::vector<float>{s2});
    m.int_initializer("z2", kInt8, {}, {z2});
    m.node("DequantizeLinear", {"xq", "x_scale", "x_zero"}, {"xd"});
    m.node("DequantizeLinear", {"w", "w_scale"}, {"wd"});  // axis 1: the columns
    m.node("MatMul", {"xd", "wd"}, {"mm"});
    m.node("QuantizeLinear", {"mm", "s1", "z1"}, {"q1"});
    m.node("DequantizeLinear", {"q1", "s1", "z1"}, {"d1"});
    set_int(m.node("DequantizeLinear", {"w2", "w2_scale"}, {"w2d"}), "axis", 0);
    set_int(m.node("Gemm", {"d1", "w2d", "bias"}, {"g"}), "transB", 1);
    m.node("Relu", {"g"}, {"r"});
    m.node("QuantizeLinear", {"r", "s2", "z2"}, {"q2"});
    return m;
  }
};

// A bias through an Identity still makes the Conv one integer kernel, with the same result, and
// neither the bias's DequantizeLinear nor the Identity runs. Where the Identity's output is also
// a model output, both run for it, and the Conv still fuses.
TEST_F(OnnxQdq, BiasThroughAnIdentityStillFuses) {
  std::vector<float> w1_scale = random_floats(4, 0.002f, 0.01f);
  std::mt19937 same = rng, same_again = rng;
  ModelBuilder plain = qdq_conv_net(rng, 0.02f, w1_scale);
  ModelBuilder with_identity = qdq_conv_net(same, 0.02f, w1_scale, true);
  ModelBuilder bias_read = qdq_conv_net(same_again, 0.02f, w1_scale, true);
  bias_read.output("b1i", kFloat);
  const HostTensor x = random_tensor(rng, DType::Float32, {1, 3, 9, 9});
  Runs a = run_both(plain, {{"x", x}}), b = run_both(with_identity, {{"x", x}});
  EXPECT_EQ(b.fused_nodes, a.fused_nodes);
  EXPECT_GE(b.plain_nodes, b.fused_nodes + 4);
  for (size_t o = 0; o < 2; ++o) EXPECT_EQ(b.fused[o].bytes, a.fused[o].bytes) << o;
  Runs c = run_both(bias_read, {{"x", x}});
  EXPECT_EQ(c.fused_nodes, a.fused_nodes + 1);  // the bias dequantized for the model output
  for (size_t o = 0; o < 2; ++o) EXPECT_EQ(c.fused[o].bytes, a.fused[o].bytes) << o;
  EXPECT_EQ(c.fused[2].bytes, c.plain[2].bytes);
}

TEST_F(OnnxQdq, MatMulAndGemmRoundAndSaturateAsOnnx) {
  MatMulNet net;
  ModelBuilder m = net.build(rng);
  const int64_t R = MatMulNet::kRows, K = MatMulNet::kK, N = MatMulNet::kN;
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    Runs r = run_both(m, {{"xq", ints({R, K}, net.xq)}}, fp16);
    ASSERT_EQ(r.fused.size(), 2u);
    // Fused: the narrowing of the uint8 model input (the frontend holds it in int32), the
    // MatMul and the Gemm kernels, and the widening of each 8-bit output.
    EXPECT_EQ(r.fused_nodes, 5u);
    EXPECT_GE(r.plain_nodes, r.fused_nodes + 4);
    expect_within_one_step(r.fused[0], r.plain[0]);
    expect_within_one_step(r.fused[1], r.plain[1]);
    // q1 from the exact integer sums: ONNX's round half to even and saturation, except within
    // float32 error of a tie (the kernel requantizes in float32, the reference in double).
    int low = 0, high = 0;
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += int64_t(net.xq[i * K + k] - net.x_zero) * net.w[k * N + j];
        const double v = double(acc) * net.x_scale * net.w_scale[j] / net.s1;
        const int want = quantize_ref(v, net.z1, DType::UInt8);
        const int got = r.fused[0].data<int32_t>()[i * N + j];
        const bool near_tie = std::abs(std::abs(v - std::floor(v)) - 0.5) < 1e-4;
        if (near_tie)
          EXPECT_LE(std::abs(got - want), 1);
        else
          EXPECT_EQ(got, want) << i << "," << j << " v=" << v;
        low += got == 0;
        high += got == 255;
      }
    EXPECT_GT(low + high, 0) << "the test should saturate some outputs";
    // Relu before Q: nothing below Q(0) = the zero point.
    for (int64_t i = 0; i < r.fused[1].numel(); ++i)
      EXPECT_GE(r.fused[1].data<int32_t>()[i], net.z2);
  }
}

// A residual block as onnxruntime quantizes it: the block input's DequantizeLinear feeds the
// convolution and the Add, so both become integer kernels and the block input stays 8-bit.
TEST_F(OnnxQdq, ResidualAddRunsAsOneKernel) {
  ModelBuilder m(13);
  m.input("xq", kUInt8, {1, 4, 6, 6});
  m.output("q", kUInt8);
  m.initializer("x_scale", Shape{}, std::vector<float>{0.03f});
  m.int_initializer("x_zero", kUInt8, {}, {90});
  m.int_initializer("w", kInt8, {4, 4, 3, 3}, random_ints(rng, 144, -127, 127));
  m.initializer("w_scale", Shape{4}, std::vector<float>{0.004f, 0.005f, 0.006f, 0.007f});
  m.initializer("s1", Shape{}, std::vector<float>{0.05f});
  m.int_initializer("z1", kUInt8, {}, {128});
  m.initializer("s2", Shape{}, std::vector<float>{0.06f});
  m.int_initializer("z2", kUInt8, {}, {0});
  m.node("DequantizeLinear", {"xq", "x_scale", "x_zero"}, {"xd"});
  set_int(m.node("DequantizeLinear", {"w", "w_scale"}, {"wd"}), "axis", 0);
  set_ints(m.node("Conv", {"xd", "wd"}, {"c"}), "pads", {1, 1, 1, 1});
  m.node("QuantizeLinear", {"c", "s1", "z1"}, {"cq"});
  m.node("DequantizeLinear", {"cq", "s1", "z1"}, {"cd"});
  m.node("Add", {"cd", "xd"}, {"sum"});
  m.node("Relu", {"sum"}, {"r"});
  m.node("QuantizeLinear", {"r", "s2", "z2"}, {"q"});
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    Runs r = run_both(m, {{"xq", ints({1, 4, 6, 6}, random_ints(rng, 144, 0, 255))}}, fp16);
    ASSERT_EQ(r.fused.size(), 1u);
    // The convolution with the Add and its Relu in its epilogue, the widening of the output,
    // and the narrowing of the uint8 model input, once for its two reads.
    EXPECT_EQ(r.fused_nodes, 3u);
    EXPECT_GE(r.plain_nodes, r.fused_nodes + 4);
    expect_within_one_step(r.fused[0], r.plain[0]);
    int zeros = 0;
    for (int64_t i = 0; i < r.fused[0].numel(); ++i) zeros += r.fused[0].data<int32_t>()[i] == 0;
    EXPECT_GT(zeros, 0) << "the Relu should clamp some sums";
  }
}

// ResNet's block ends: Conv's Q -> DQ -> Add(., DQ(r)) [-> Relu] -> Q runs in the Conv's
// epilogue. Stage 1: the residual is the block input (computed before the Conv); stage 2: a
// downsample Conv comes after the block's last Conv, so the last Conv keeps its own Q and the
// downsample Conv fuses the Add with the last Conv's output as its residual.
ModelBuilder qdq_residual_blocks(std::mt19937& rng) {
  ModelBuilder m(13);
  m.input("xq", kUInt8, {1, 8, 7, 7});
  m.output("y1", kUInt8);
  m.output("y2", kInt8);
  m.initializer("xs", Shape{}, std::vector<float>{0.04f});
  m.int_initializer("xz", kUInt8, {}, {100});
  // DQ(in) * DQ(w per channel) -> Conv -> Q(out_s, out_z) = name_q -> DQ = name_d.
  auto conv = [&](const std::string& in, const std::string& name, int64_t cin, int64_t cout,
                  int64_t k, int64_t stride, float out_s, int out_z) {
    m.int_initializer(name + "_w", kInt8, {cout, cin, k, k},
                      random_ints(rng, static_cast<int>(cout * cin * k * k), -127, 127));
    std::uniform_real_distribution<float> scale(0.002f, 0.01f);
    std::vector<float> ws(static_cast<size_t>(cout));
    for (float& v : ws) v = scale(rng);
    m.initializer(name + "_ws", Shape{cout}, ws);
    m.initializer(name + "_s", Shape{}, std::vector<float>{out_s});
    m.int_initializer(name + "_z", kUInt8, {}, {out_z});
    set_int(m.node("DequantizeLinear", {name + "_w", name + "_ws"}, {name + "_wd"}), "axis", 0);
    auto& c = m.node("Conv", {in, name + "_wd"}, {name + "_c"});
    set_ints(c, "pads", std::vector<int64_t>(4, k / 2));
    set_ints(c, "strides", {stride, stride});
    m.node("QuantizeLinear", {name + "_c", name + "_s", name + "_z"}, {name + "_q"});
    m.node("DequantizeLinear", {name + "_q", name + "_s", name + "_z"}, {name + "_d"});
  };
  m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
  conv("xd", "a", 8, 8, 3, 1, 0.05f, 0);
  conv("a_d", "b", 8, 8, 1, 1, 0.06f, 128);
  m.node("Add", {"b_d", "xd"}, {"sum1"});
  m.node("Relu", {"sum1"}, {"r1"});
  m.initializer("s1", Shape{}, std::vector<float>{0.07f});
  m.int_initializer("z1", kUInt8, {}, {0});
  m.node("QuantizeLinear", {"r1", "s1", "z1"}, {"y1"});
  m.node("DequantizeLinear", {"y1", "s1", "z1"}, {"y1d"});
  conv("y1d", "c", 8, 16, 3, 2, 0.05f, 120);
  conv("y1d", "down", 8, 16, 1, 2, 0.08f, 130);
  m.node("Add", {"c_d", "down_d"}, {"sum2"});
  m.initializer("s2", Shape{}, std::vector<float>{0.09f});
  m.int_initializer("z2", kInt8, {}, {-3});
  m.node("QuantizeLinear", {"sum2", "s2", "z2"}, {"y2"});
  return m;
}

TEST_F(OnnxQdq, ResidualAddRunsInTheConvEpilogue) {
  ModelBuilder m = qdq_residual_blocks(rng);
  const std::map<std::string, HostTensor> feeds = {
      {"xq", ints({1, 8, 7, 7}, random_ints(rng, 8 * 49, 0, 255))}};
  // Unfused (float ops behind dequantized tensors): within one step.
  Runs both = run_both(m, feeds, false);
  ASSERT_EQ(both.fused.size(), 2u);
  for (size_t i = 0; i < 2; ++i) expect_within_one_step(both.fused[i], both.plain[i]);
  // The epilogue (unsplit and after a split-K reduce) against the portable kernel followed by
  // the separate integer Add (qgemm.packed = 0): the same float operations, so equal exactly.
  // Counts the dispatches that run an Add: in a Conv's epilogue, or as the separate kernel.
  const std::vector<std::string> adds = {"+ residual add", "qlinear_add"};
  const LabelledRun portable_run = run_packed(m, feeds, 0, 0, adds);
  const std::vector<HostTensor>& portable = portable_run.outputs;
  EXPECT_EQ(portable_run.counts, (std::vector<int>{0, 2}));
  for (uint32_t splits : {1u, 3u}) {
    SCOPED_TRACE("splits " + std::to_string(splits));
    const LabelledRun fused_run = run_packed(m, feeds, 1, splits, adds);
    const std::vector<HostTensor>& fused = fused_run.outputs;
    EXPECT_EQ(fused_run.counts, (std::vector<int>{2, 0}))
        << "both Adds should run in a Conv's epilogue";
    for (size_t i = 0; i < 2; ++i) {
      ASSERT_EQ(fused[i].numel(), portable[i].numel());
      for (int64_t j = 0; j < fused[i].numel(); ++j)
        ASSERT_EQ(fused[i].data<int32_t>()[j], portable[i].data<int32_t>()[j]) << i << " " << j;
    }
  }
  int zeros = 0, low = 0;
  for (int64_t j = 0; j < portable[0].numel(); ++j) zeros += portable[0].data<int32_t>()[j] == 0;
  for (int64_t j = 0; j < portable[1].numel(); ++j) low += portable[1].data<int32_t>()[j] < -3;
  EXPECT_GT(zeros, 0) << "the Relu should clamp some sums";
  EXPECT_GT(low, 0) << "the int8 Add output should go below its zero point";
}

// Where the pattern must not fire, the model still runs, as float ops behind dequantized
// tensors: the convolution's output is also a model output, and a Q scale that is computed.
TEST_F(OnnxQdq, PatternMustNotFire) {
  ModelBuilder m(13);
  m.input("xq", kUInt8, {1, 2, 5, 5});
  m.input("s_in", kFloat, {});
  m.output("c", kFloat);
  m.output("q", kUInt8);
  m.output("q_dyn", kUInt8);
  m.initializer("x_scale", Shape{}, std::vector<float>{0.05f});
  m.int_initializer("w", kInt8, {3, 2, 3, 3}, random_ints(rng, 54, -100, 100));
  m.initializer("w_scale", Shape{}, std::vector<float>{0.01f});
  m.initializer("s", Shape{}, std::vector<float>{0.02f});
  m.node("DequantizeLinear", {"xq", "x_scale"}, {"xd"});
  m.node("DequantizeLinear", {"w", "w_scale"}, {"wd"});
  m.node("Conv", {"xd", "wd"}, {"c"});
  m.node("QuantizeLinear", {"c", "s"}, {"q"});
  m.node("Conv", {"xd", "wd"}, {"c2"});
  m.node("QuantizeLinear", {"c2", "s_in"}, {"q_dyn"});
  std::vector<int> x = random_ints(rng, 50, 0, 255);
  std::map<std::string, HostTensor> feeds = {
      {"xq", ints({1, 2, 5, 5}, x)},
      {"s_in", HostTensor::from(DType::Float32, {}, std::vector<float>{0.02f})}};
  Runs r = run_both(m, feeds, false);
  ASSERT_EQ(r.fused.size(), 3u);
  EXPECT_EQ(r.fused_nodes, r.plain_nodes);
  expect_near(r.fused[0], r.plain[0], 1e-5f);
  for (size_t i = 1; i < 3; ++i) expect_within_one_step(r.fused[i], r.plain[i]);
}

}  // namespace
}  // namespace vkgraph::testing

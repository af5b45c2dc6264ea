// QDQ pooling (src/onnx/fuse_qdq.h): DequantizeLinear -> MaxPool -> QuantizeLinear with one scale
// and zero point on both sides runs as MaxPool of the bytes (exact: quantization is monotone), and
// DequantizeLinear -> GlobalAveragePool -> QuantizeLinear as one integer-sum kernel requantized
// as ONNX QuantizeLinear rounds (half to even, saturated). Checked against integer / fp64
// references and against the unfused float path (SessionOptions::fuse = false).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>

#include "model_builder.h"
#include "quant_test_util.h"
#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt8 = onnx::TensorProto::INT8;
constexpr int kUInt8 = onnx::TensorProto::UINT8;

class OnnxQdqPool : public GpuTest {};

// xq (uint8 [1, 4, 7, 7]) -> DQ -> MaxPool(3x3, stride 2, pads 1) -> Q (same parameters) -> mq
// -> DQ -> GlobalAveragePool -> Q (int8, scale gs, zero point -3) -> gq.
ModelBuilder pool_net(float x_scale, int x_zero, float gap_scale, float out_scale) {
  ModelBuilder m(13);
  m.input("xq", kUInt8, {1, 4, 7, 7});
  m.output("mq", kUInt8);
  m.output("gq", kInt8);
  m.initializer("xs", Shape{}, std::vector<float>{x_scale});
  m.int_initializer("xz", kUInt8, {}, {x_zero});
  m.initializer("ms", Shape{}, std::vector<float>{out_scale});
  m.initializer("gs", Shape{}, std::vector<float>{gap_scale});
  m.int_initializer("gz", kInt8, {}, {-3});
  m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
  onnx::NodeProto& pool = m.node("MaxPool", {"xd"}, {"p"});
  set_ints(pool, "kernel_shape", {3, 3});
  set_ints(pool, "strides", {2, 2});
  set_ints(pool, "pads", {1, 1, 1, 1});
  m.node("QuantizeLinear", {"p", "ms", "xz"}, {"mq"});
  m.node("DequantizeLinear", {"mq", "ms", "xz"}, {"md"});
  m.node("GlobalAveragePool", {"md"}, {"g"});
  m.node("QuantizeLinear", {"g", "gs", "gz"}, {"gq"});
  return m;
}

std::vector<int> max_pool_ref(const std::vector<int>& x) {
  std::vector<int> y(4 * 4 * 4);
  for (int c = 0; c < 4; ++c)
    for (int oh = 0; oh < 4; ++oh)
      for (int ow = 0; ow < 4; ++ow) {
        int r = -1;
        for (int kh = 0; kh < 3; ++kh)
          for (int kw = 0; kw < 3; ++kw) {
            const int ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
            if (ih >= 0 && ih < 7 && iw >= 0 && iw < 7) r = std::max(r, x[(c * 7 + ih) * 7 + iw]);
          }
        y[(c * 4 + oh) * 4 + ow] = r;
      }
  return y;
}

TEST_F(OnnxQdqPool, MaxPoolAndGlobalAveragePoolRunOnBytes) {
  const float x_scale = 0.05f, gap_scale = 0.004f;
  const int x_zero = 128;
  ModelBuilder m = pool_net(x_scale, x_zero, gap_scale, x_scale);
  const std::vector<int> x = random_ints(rng, 4 * 49, 0, 255);
  HostTensor xt =
      HostTensor::from(DType::Int32, {1, 4, 7, 7}, std::vector<int32_t>(x.begin(), x.end()));
  Runs r = run_both(m, {{"xq", xt}});
  ASSERT_EQ(r.fused.size(), 2u);
  // Fused: the (widened) input narrowed to bytes, the byte MaxPool, the integer
  // GlobalAveragePool and the two outputs widened. Unfused: DQ, MaxPool, Q, DQ,
  // GlobalAveragePool, Q and the two widenings.
  EXPECT_EQ(r.fused_nodes, 5u);
  EXPECT_EQ(r.plain_nodes, 8u);

  // MaxPool: the bytes' maximum, exactly, fused and unfused.
  const std::vector<int> mq = max_pool_ref(x);
  for (size_t i = 0; i < mq.size(); ++i) {
    ASSERT_EQ(r.fused[0].data<int32_t>()[i], mq[i]) << i;
    ASSERT_EQ(r.plain[0].data<int32_t>()[i], mq[i]) << i;
  }
  // GlobalAveragePool: ONNX's value is round_half_even(sum (q - z) * s / 16 / gs) - 3 saturated;
  // the fused kernel sums exactly and applies one float32 multiplier (onnxruntime's), so it may
  // differ only within float error of a .5 tie. The unfused path sums dequantized floats: within
  // one step.
  for (int c = 0; c < 4; ++c) {
    int64_t sum = 0;
    for (int i = 0; i < 16; ++i) sum += mq[c * 16 + i] - x_zero;
    const double exact = double(sum) * x_scale / 16.0 / gap_scale;
    const int want = quantize_ref(exact, -3, DType::Int8);
    const int got = r.fused[1].data<int32_t>()[c], plain = r.plain[1].data<int32_t>()[c];
    const double tie = std::abs(exact - std::floor(exact) - 0.5);
    if (tie > 1e-4) {
      EXPECT_EQ(got, want) << "channel " << c << " exact " << exact;
    }
    EXPECT_LE(std::abs(got - want), 1);
    EXPECT_LE(std::abs(got - plain), 1);
  }
}

// The same pooling on int8 values that reach saturation, then DQ -> Flatten -> Q (one scale and
// zero point: a view of the bytes); and a MaxPool whose QuantizeLinear has another scale: that
// one must stay float (DQ -> MaxPool -> Q).
TEST_F(OnnxQdqPool, PatternsFireOnlyWhereExact) {
  ModelBuilder m(13);
  m.input("xq", kInt8, {2, 3, 5, 5});
  m.output("gq", kUInt8);
  m.output("mq", kInt8);
  m.output("fq", kUInt8);
  m.initializer("xs", Shape{}, std::vector<float>{0.1f});
  m.int_initializer("xz", kInt8, {}, {-20});
  m.initializer("gs", Shape{}, std::vector<float>{0.02f});
  m.int_initializer("gz", kUInt8, {}, {100});
  m.initializer("ms", Shape{}, std::vector<float>{0.2f});
  m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
  m.node("GlobalAveragePool", {"xd"}, {"g"});
  m.node("QuantizeLinear", {"g", "gs", "gz"}, {"gq"});
  m.node("DequantizeLinear", {"gq", "gs", "gz"}, {"gd"});
  m.node("Flatten", {"gd"}, {"f"});
  m.node("QuantizeLinear", {"f", "gs", "gz"}, {"fq"});
  onnx::NodeProto& pool = m.node("MaxPool", {"xd"}, {"p"});
  set_ints(pool, "kernel_shape", {2, 2});
  m.node("QuantizeLinear", {"p", "ms", "xz"}, {"mq"});
  // Mostly large values, so the average saturates uint8 in some channels.
  std::vector<int> x = random_ints(rng, 150, -128, 127);
  for (int i = 0; i < 25; ++i) x[i] = 127 - i % 3;
  HostTensor xt =
      HostTensor::from(DType::Int32, {2, 3, 5, 5}, std::vector<int32_t>(x.begin(), x.end()));
  SessionOptions o;
  o.graph.profile = true;
  Session s = m.session(o);
  std::vector<HostTensor> got = s.run({{"xq", xt}});
  int gap_kernels = 0, dequantized = 0;
  for (const NodeTime& t : s.graph()->node_times()) {
    gap_kernels += t.label.find("qlinear_global_avg_pool") != std::string::npos;
    dequantized += t.label.find("dequantize_linear") != std::string::npos;
  }
  EXPECT_EQ(gap_kernels, 1);
  EXPECT_EQ(dequantized, 1) << "the MaxPool with another output scale reads the dequantized x";
  ASSERT_EQ(got[2].shape, (Shape{2, 3}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(got[2].data<int32_t>()[i], got[0].data<int32_t>()[i]);
  Runs r = run_both(m, {{"xq", xt}});
  int saturated = 0;
  for (int row = 0; row < 6; ++row) {
    int64_t sum = 0;
    for (int i = 0; i < 25; ++i) sum += x[row * 25 + i] + 20;
    const double exact = double(sum) * 0.1 / 25.0 / 0.02;
    const int want = quantize_ref(exact, 100, DType::UInt8);
    const int fused = got[0].data<int32_t>()[row];
    if (std::abs(exact - std::floor(exact) - 0.5) > 1e-4) {
      EXPECT_EQ(fused, want) << row;
    }
    EXPECT_LE(std::abs(fused - r.plain[0].data<int32_t>()[row]), 1) << row;
    saturated += fused == 255;
  }
  EXPECT_GT(saturated, 0) << "the test should saturate some averages";
  for (size_t o : {1u, 2u})
    for (int64_t i = 0; i < got[o].numel(); ++i)
      EXPECT_EQ(got[o].data<int32_t>()[i], r.plain[o].data<int32_t>()[i]) << o << " " << i;
}

// Exact .5 ties of the average: x_scale 0.1, y_scale 0.05 (0.1f / 0.05f is 2 exactly), 196
// pixels; a channel sum S = 98 k + 49 averages to k + 0.5, which ONNX (and onnxruntime's
// QLinearGlobalAveragePool) rounds to the even neighbour. Found by comparing with onnxruntime on
// tools/qdq_resnet_block.py's model (--seed 3 --size 56): the kernel rounded S * x_scale / 196
// and then / y_scale, and S = 147 gave 1.4999999, so 1. Other sums: equal to onnxruntime's
// float32 formula round(S * (x_scale / (y_scale * 196))).
TEST_F(OnnxQdqPool, GlobalAveragePoolRoundsTiesAsOnnxruntime) {
  constexpr int kC = 12, kHw = 196;
  ModelBuilder m(13);
  m.input("xq", kUInt8, {1, kC, 14, 14});
  m.output("gq", kUInt8);
  m.initializer("xs", Shape{}, std::vector<float>{0.1f});
  m.int_initializer("xz", kUInt8, {}, {0});
  m.initializer("gs", Shape{}, std::vector<float>{0.05f});
  m.int_initializer("gz", kUInt8, {}, {0});
  m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
  m.node("GlobalAveragePool", {"xd"}, {"g"});
  m.node("QuantizeLinear", {"g", "gs", "gz"}, {"gq"});
  // Channels 0-5: sums at ties (k = 1..6); the rest random bytes.
  std::vector<int> x = random_ints(rng, kC * kHw, 0, 20);
  for (int c = 0; c < 6; ++c) {
    const int s = 98 * (c + 1) + 49;
    for (int i = 0; i < kHw; ++i) x[c * kHw + i] = s / kHw + (i < s % kHw ? 1 : 0);
  }
  HostTensor xt =
      HostTensor::from(DType::Int32, {1, kC, 14, 14}, std::vector<int32_t>(x.begin(), x.end()));
  Runs r = run_both(m, {{"xq", xt}});
  const float multiplier = 0.1f / (0.05f * float(kHw));
  for (int c = 0; c < kC; ++c) {
    int sum = 0;
    for (int i = 0; i < kHw; ++i) sum += x[c * kHw + i];
    const float ort = float(sum) * multiplier;
    const int want = quantize_ref(double(ort), 0, DType::UInt8);
    if (c < 6) {
      ASSERT_EQ(sum * 2 % kHw, kHw / 2) << "channel " << c << " is not a tie";
      EXPECT_EQ(want, quantize_ref(sum * 2.0 / kHw, 0, DType::UInt8)) << "channel " << c;
    }
    EXPECT_EQ(r.fused[0].data<int32_t>()[c], want) << "channel " << c << " sum " << sum;
  }
}

}  // namespace
}  // namespace vkgraph::testing

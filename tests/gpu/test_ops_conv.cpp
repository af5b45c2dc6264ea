// conv1d / conv2d / conv3d / conv_transpose2d / conv_transpose3d against double-precision CPU
// references, covering each kernel (implicit GEMM in both tile shapes and 2-D/3-D variants,
// pointwise, depthwise, transposed gather) and each fused activation.
#include <array>
#include <cmath>
#include <numbers>
#include <optional>
#include <type_traits>

#include "gpu_test.h"
#include "ops/matmul_config.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {
namespace {

using ops::UnaryOp;
using ops::UnaryParams;

double activate(double v, std::optional<UnaryOp> act, UnaryParams p) {
  switch (act.value_or(UnaryOp::Identity)) {
    case UnaryOp::Relu:
      return std::max(v, 0.0);
    case UnaryOp::LeakyRelu:
      return v < 0 ? v * p.alpha : v;
    case UnaryOp::Clip:
      return std::min(std::max(v, double(p.alpha)), double(p.beta));
    case UnaryOp::Sigmoid:
      return 1.0 / (1.0 + std::exp(-v));
    case UnaryOp::Tanh:
      return std::tanh(v);
    case UnaryOp::HardSigmoid:
      return std::clamp(p.alpha * v + p.beta, 0.0, 1.0);
    case UnaryOp::HardSwish:
      return v * std::clamp(v / 6.0 + 0.5, 0.0, 1.0);
    case UnaryOp::Silu:
      return v / (1.0 + std::exp(-v));
    case UnaryOp::Gelu:
      return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    case UnaryOp::GeluTanh:
      return 0.5 * v *
             (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
    default:
      return v;
  }
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    if (std::abs(got[i] - want[i]) > tol * (1.0 + std::abs(want[i]))) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
      ++reported;
    }
  }
}

// Values in `dtype` (float32 or float16), as the graph's tensors hold them.
HostTensor tensor_of(DType dtype, const Shape& shape, const std::vector<float>& v) {
  if (dtype == DType::Float32) return HostTensor::from(dtype, shape, v);
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_half(v[i]);
  return HostTensor::from(dtype, shape, h);
}

// `v` rounded to what `dtype` holds, so that references see the values the kernels read.
std::vector<float> rounded(DType dtype, std::vector<float> v) {
  if (dtype == DType::Float16)
    for (float& x : v) x = half_to_float(float_to_half(x));
  return v;
}

std::vector<float> run_graph(ComputeGraph& g, const std::vector<std::vector<float>>& inputs,
                             DType dtype = DType::Float32) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    HostTensor t = tensor_of(dtype, {static_cast<int64_t>(inputs[i].size())}, inputs[i]);
    g.copy_to_input(i, t.bytes.data(), t.nbytes());
  }
  g.execute();
  HostTensor out = g.read_output(0);
  if (dtype == DType::Float32) return {out.data<float>(), out.data<float>() + out.numel()};
  std::vector<float> y(out.numel());
  for (size_t i = 0; i < y.size(); ++i) y[i] = half_to_float(out.data<uint16_t>()[i]);
  return y;
}

struct ConvCase {
  Shape x, w;                // [N, Cin, (D,) H, W], [Cout, Cin / groups, (kD,) kH, kW]
  ops::Conv3dParams params;  // 2-D cases: depth entries trivial
  bool bias = true;
  std::optional<UnaryOp> act;
  UnaryParams act_params;
  bool weight_is_input = false;
  float x_range = 1.f;
  size_t nodes = 1;  // dispatches the graph should hold: 2 when split-K kicks in
  // A residual added before the activation: of the output's shape (fused), or [1, Cout, 1, 1]
  // broadcast over the output (added by a separate node).
  enum class Residual { None, Full, PerChannel } residual = Residual::None;
  std::string label;  // when set, the first dispatch's label must contain it
};

// With unit dims inserted after N and C up to three spatial dims.
Shape lift_shape(const Shape& s) {
  Shape r(s.begin(), s.begin() + 2);
  r.insert(r.end(), 5 - s.size(), 1);
  r.insert(r.end(), s.begin() + 2, s.end());
  return r;
}

// Direct convolution in double over the lifted shapes; returns y and sets its (lifted) shape.
std::vector<double> conv_ref(const ConvCase& c, const std::vector<float>& x,
                             const std::vector<float>& w, const std::vector<float>& b,
                             const std::vector<float>& r, Shape& ys) {
  const auto& p = c.params;
  const Shape xs = lift_shape(c.x), ws = lift_shape(c.w);
  int64_t N = xs[0], C = xs[1], D = xs[2], H = xs[3], W = xs[4];
  int64_t M = ws[0], Cg = ws[1], KD = ws[2], KH = ws[3], KW = ws[4];
  int64_t OD = (D + p.pads[0] + p.pads[3] - p.dilations[0] * (KD - 1) - 1) / p.strides[0] + 1;
  int64_t OH = (H + p.pads[1] + p.pads[4] - p.dilations[1] * (KH - 1) - 1) / p.strides[1] + 1;
  int64_t OW = (W + p.pads[2] + p.pads[5] - p.dilations[2] * (KW - 1) - 1) / p.strides[2] + 1;
  ys = {N, M, OD, OH, OW};
  int64_t Mg = M / p.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = c.bias ? b[m] : 0.0;
            for (int64_t cg = 0; cg < Cg; ++cg)
              for (int64_t kd = 0; kd < KD; ++kd)
                for (int64_t kh = 0; kh < KH; ++kh)
                  for (int64_t kw = 0; kw < KW; ++kw) {
                    int64_t id = od * p.strides[0] - p.pads[0] + kd * p.dilations[0];
                    int64_t ih = oh * p.strides[1] - p.pads[1] + kh * p.dilations[1];
                    int64_t iw = ow * p.strides[2] - p.pads[2] + kw * p.dilations[2];
                    if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                    int64_t ci = m / Mg * Cg + cg;
                    acc += double(x[(((n * C + ci) * D + id) * H + ih) * W + iw]) *
                           w[(((m * Cg + cg) * KD + kd) * KH + kh) * KW + kw];
                  }
            if (c.residual == ConvCase::Residual::Full) acc += r[y.size()];
            if (c.residual == ConvCase::Residual::PerChannel) acc += r[m];
            y.push_back(activate(acc, c.act, c.act_params));
          }
  return y;
}

// The 2-D parameters that `p`, lifted from them, came from.
ops::Conv2dParams unlift(const ops::Conv3dParams& p) {
  return {{p.strides[1], p.strides[2]},
          {p.pads[1], p.pads[2], p.pads[4], p.pads[5]},
          {p.dilations[1], p.dilations[2]},
          p.groups};
}

class OpsConv : public GpuTest {
 protected:
  // The kernel tuning check() builds with (the device's defaults unless a fixture sets it).
  ops::Tuning tuning_;
  // The tensors' dtype: float16 cases compare with a reference on the float16-rounded inputs.
  DType dtype_ = DType::Float32;

  // matvec_cases() on conv_matvec.comp and on the implicit GEMM.
  void check_matvec();

  // 4-D cases run conv2d, 5-D ones conv3d.
  void check(const ConvCase& c) {
    if (dtype_ == DType::Float16 && !context()->features().storage_buffer_16bit)
      GTEST_SKIP() << "no 16-bit storage";
    auto xv = rounded(dtype_, random_floats(numel(c.x), -c.x_range, c.x_range));
    auto wv = rounded(dtype_, random_floats(numel(c.w)));
    auto bv = rounded(dtype_, random_floats(c.w[0]));
    GraphOptions options;
    options.tuning = std::make_shared<ops::Tuning>(tuning_);
    options.profile = !c.label.empty();
    ComputeGraph g(context(), options);
    TensorRef x = g.add_input(c.x, dtype_, "x");
    TensorRef w = c.weight_is_input ? g.add_input(c.w, dtype_, "w")
                                    : g.add_constant(tensor_of(dtype_, c.w, wv));
    std::optional<TensorRef> b;
    if (c.bias) b = g.add_constant(tensor_of(dtype_, {c.w[0]}, bv));
    Shape ys;
    std::vector<float> rv;
    ConvCase plain = c;  // for the output shape, which sizes the residual
    plain.residual = ConvCase::Residual::None;
    auto want = conv_ref(plain, xv, wv, bv, rv, ys);
    if (c.x.size() == 4) ys.erase(ys.begin() + 2);
    std::optional<TensorRef> r;
    std::vector<std::vector<float>> inputs{xv};
    if (c.weight_is_input) inputs.push_back(wv);
    if (c.residual != ConvCase::Residual::None) {
      Shape rs = ys;
      if (c.residual == ConvCase::Residual::PerChannel) {
        std::fill(rs.begin(), rs.end(), 1);
        rs[1] = ys[1];
      }
      rv = rounded(dtype_, random_floats(numel(rs)));
      r = g.add_input(rs, dtype_, "r");
      inputs.push_back(rv);
      want = conv_ref(c, xv, wv, bv, rv, ys);
      if (c.x.size() == 4) ys.erase(ys.begin() + 2);
    }
    TensorRef y = c.x.size() == 5
                      ? ops::conv3d(g, x, w, c.params, {b, c.act, c.act_params, r})
                      : ops::conv2d(g, x, w, unlift(c.params), {b, c.act, c.act_params, r});
    g.add_output(y, "y");
    ASSERT_EQ(g.info(y).shape, ys);
    // float16: the output's rounding (2^-11 relative) dominates.
    expect_close(run_graph(g, inputs, dtype_), want, dtype_ == DType::Float16 ? 2e-3 : 1e-4);
    EXPECT_EQ(g.stats().nodes, c.nodes);
    if (!c.label.empty()) {
      ASSERT_FALSE(g.node_times().empty());
      EXPECT_NE(g.node_times()[0].label.find(c.label), std::string::npos)
          << g.node_times()[0].label;
    }
  }
};

ops::Conv3dParams conv_params(std::array<int64_t, 2> strides, std::array<int64_t, 4> pads,
                              std::array<int64_t, 2> dilations = {1, 1}, int64_t groups = 1) {
  return {{1, strides[0], strides[1]},
          {0, pads[0], pads[1], 0, pads[2], pads[3]},
          {1, dilations[0], dilations[1]},
          groups};
}

TEST_F(OpsConv, Pad1Stride1Batch2) {
  check({{2, 4, 7, 9}, {6, 4, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})});
}

TEST_F(OpsConv, Stride2) {
  check({{1, 3, 9, 8}, {5, 3, 3, 3}, conv_params({2, 2}, {1, 1, 1, 1})});
}

TEST_F(OpsConv, Dilation2) {
  check({{1, 3, 10, 9}, {4, 3, 3, 3}, conv_params({1, 1}, {2, 2, 2, 2}, {2, 2})});
}

TEST_F(OpsConv, Groups2) {
  check({{2, 6, 6, 7}, {8, 3, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1}, {1, 1}, 2)});
}

TEST_F(OpsConv, DepthwiseStride2Relu6) {
  ConvCase c{{2, 8, 9, 9}, {8, 1, 3, 3}, conv_params({2, 2}, {1, 1, 1, 1}, {1, 1}, 8)};
  c.act = UnaryOp::Clip;
  c.act_params = {0.f, 6.f};
  c.x_range = 3.f;  // reaches the upper clip
  check(c);
}

TEST_F(OpsConv, DepthwiseChannelMultiplierDilated) {
  check({{1, 4, 7, 6}, {8, 1, 3, 3}, conv_params({1, 1}, {2, 1, 2, 1}, {2, 1}, 4)});
}

TEST_F(OpsConv, PointwiseRelu) {
  ConvCase c{{2, 16, 5, 7}, {24, 16, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0})};
  c.act = UnaryOp::Relu;
  check(c);
}

TEST_F(OpsConv, PointwiseGroups2Relu) {
  ConvCase c{{1, 8, 4, 5}, {6, 4, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0}, {1, 1}, 2)};
  c.act = UnaryOp::Relu;
  check(c);
}

TEST_F(OpsConv, OneByOneStride2) {
  check({{1, 6, 7, 7}, {5, 6, 1, 1}, conv_params({2, 2}, {0, 0, 0, 0})});
}

TEST_F(OpsConv, AsymmetricPads) {
  check({{1, 3, 6, 7}, {4, 3, 3, 3}, conv_params({1, 2}, {0, 1, 2, 0})});
}

TEST_F(OpsConv, NonSquareKernels) {
  check({{1, 2, 8, 9}, {3, 2, 3, 5}, conv_params({1, 1}, {1, 2, 1, 2})});
  check({{2, 2, 5, 9}, {3, 2, 1, 7}, conv_params({1, 1}, {0, 3, 0, 3})});
}

TEST_F(OpsConv, CoutNotMultipleOfTile) {
  check({{1, 5, 6, 6}, {37, 5, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})});
}

TEST_F(OpsConv, LargeTileNoBias) {
  // 2 x 72 tiles of 64x64: enough workgroups for the large-tile variant.
  ConvCase c{{2, 8, 48, 48}, {72, 8, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  c.bias = false;
  check(c);
}

TEST_F(OpsConv, LargeTilePointwiseHardSwish) {
  ConvCase c{{2, 32, 48, 48}, {80, 32, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0})};
  c.act = UnaryOp::HardSwish;
  check(c);
}

TEST_F(OpsConv, WeightFromGraphInput) {
  ConvCase c{{2, 4, 6, 5}, {6, 4, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  c.weight_is_input = true;
  check(c);
}

// Every activation, on the depthwise kernel: the epilogue is shared code, and this kernel is
// the cheapest to compile on lavapipe.
// Split-K with thresholds lowered so that layers small enough for lavapipe split (the default
// policy only splits K >= 256). Each case leaves a short last slice.
class OpsConvSplitK : public OpsConv {
 protected:
  void SetUp() override {
    OpsConv::SetUp();
    ops::SplitKPolicy policy;
    policy.min_k = 128;
    policy.min_slice = 32;
    tuning_.split_k = policy;
  }
};

TEST_F(OpsConvSplitK, DeepChannelsFewPixelsRelu) {
  // M = 64, N = 16, K = 576: 2 tiles, cut into 18 slices of 32.
  ConvCase c{{1, 64, 4, 4}, {64, 64, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  c.act = UnaryOp::Relu;
  c.nodes = 2;
  check(c);
}

TEST_F(OpsConvSplitK, GroupsBatchStride2Gelu) {
  // Per group M = 18, N = 2 * 3 * 3, K = 180: slices of 48, the last 36 deep.
  ConvCase c{{2, 40, 5, 5}, {36, 20, 3, 3}, conv_params({2, 2}, {1, 1, 1, 1}, {1, 1}, 2)};
  c.act = UnaryOp::Gelu;
  c.nodes = 2;
  check(c);
}

TEST_F(OpsConvSplitK, PointwiseNoBiasLeakyRelu) {
  ConvCase c{{1, 200, 3, 3}, {40, 200, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0})};
  c.bias = false;
  c.act = UnaryOp::LeakyRelu;
  c.act_params = {0.1f, 0.f};
  c.nodes = 2;
  check(c);
}

TEST_F(OpsConvSplitK, ShallowKStaysUnsplit) {
  ConvCase c{{1, 8, 6, 6}, {16, 8, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  check(c);
}

// Residual blocks: the skip connection joins the epilogue before the activation, in the GEMM,
// pointwise, depthwise, 3-D and split-K-reduce kernels; a residual that broadcasts takes a
// separate add and activation.
TEST_F(OpsConv, ResidualRelu) {
  ConvCase c{{2, 8, 6, 6}, {16, 8, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  c.act = UnaryOp::Relu;
  c.residual = ConvCase::Residual::Full;
  check(c);
}

TEST_F(OpsConv, ResidualPointwiseAndDepthwise) {
  ConvCase pw{{1, 24, 5, 5}, {40, 24, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0})};
  pw.residual = ConvCase::Residual::Full;
  check(pw);
  ConvCase dw{{1, 8, 7, 7}, {8, 1, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1}, {1, 1}, 8)};
  dw.act = UnaryOp::Clip;
  dw.act_params = {0.f, 6.f};
  dw.residual = ConvCase::Residual::Full;
  check(dw);
}

TEST_F(OpsConv, Residual3d) {
  ConvCase c{{1, 3, 4, 5, 5}, {6, 3, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1}};
  c.act = UnaryOp::Relu;
  c.residual = ConvCase::Residual::Full;
  check(c);
}

TEST_F(OpsConvSplitK, ResidualInTheReducePass) {
  ConvCase c{{1, 64, 4, 4}, {64, 64, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  c.act = UnaryOp::Relu;
  c.residual = ConvCase::Residual::Full;
  c.nodes = 2;
  check(c);
}

TEST_F(OpsConv, BroadcastResidualTakesSeparateNodes) {
  ConvCase c{{1, 8, 6, 6}, {16, 8, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  c.act = UnaryOp::Relu;
  c.residual = ConvCase::Residual::PerChannel;
  c.nodes = 3;  // conv, add, relu
  check(c);
}

TEST_F(OpsConv, EachFusedActivation) {
  const std::pair<UnaryOp, UnaryParams> acts[] = {{UnaryOp::Identity, {}},
                                                  {UnaryOp::Relu, {}},
                                                  {UnaryOp::LeakyRelu, {0.1f, 0.f}},
                                                  {UnaryOp::Clip, {-0.3f, 0.4f}},
                                                  {UnaryOp::Sigmoid, {}},
                                                  {UnaryOp::Tanh, {}},
                                                  {UnaryOp::HardSigmoid, {0.2f, 0.5f}},
                                                  {UnaryOp::HardSwish, {}},
                                                  {UnaryOp::Gelu, {}},
                                                  {UnaryOp::GeluTanh, {}},
                                                  {UnaryOp::Silu, {}}};
  for (const auto& [act, params] : acts) {
    SCOPED_TRACE(static_cast<int>(act));
    EXPECT_TRUE(ops::conv_can_fuse(act));
    ConvCase c{{1, 4, 5, 6}, {4, 1, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1}, {1, 1}, 4)};
    c.act = act;
    c.act_params = params;
    c.x_range = 2.f;  // reaches the saturated ends of the curves
    check(c);
  }
  EXPECT_FALSE(ops::conv_can_fuse(UnaryOp::Exp));
}

// Squeeze-excite FC layers, 1x1 convolutions of one-pixel images: conv_matvec.comp (knob
// conv.matvec, default on) against the implicit GEMM (conv.matvec=0). EfficientNet's shapes
// (C -> C / 24 with SiLU, back with Sigmoid; 1152 -> 48 takes every lane and a short last round
// of loads), MobileNetV3's HardSigmoid, and K below one lane per element, batch 2 with K not a
// multiple of 4, no bias, a residual, 3-D. Shared by the float32 and float16 fixtures.
std::vector<ConvCase> matvec_cases() {
  const auto pw = conv_params({1, 1}, {0, 0, 0, 0});
  ConvCase squeeze{{1, 240, 1, 1}, {10, 240, 1, 1}, pw};
  squeeze.act = UnaryOp::Silu;
  ConvCase excite{{1, 10, 1, 1}, {240, 10, 1, 1}, pw};
  excite.act = UnaryOp::Sigmoid;
  ConvCase deep{{1, 1152, 1, 1}, {48, 1152, 1, 1}, pw};
  deep.act = UnaryOp::Silu;
  ConvCase hard{{1, 240, 1, 1}, {960, 240, 1, 1}, pw};
  hard.act = UnaryOp::HardSigmoid;
  hard.act_params = {1.f / 6, 0.5f};
  ConvCase shallow{{2, 3, 1, 1}, {5, 3, 1, 1}, pw};
  shallow.bias = false;
  ConvCase batch{{2, 37, 1, 1}, {50, 37, 1, 1}, pw};
  batch.act = UnaryOp::Relu;
  batch.residual = ConvCase::Residual::Full;
  ConvCase cube{{2, 20, 1, 1, 1}, {7, 20, 1, 1, 1}, {{1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, 1}};
  cube.act = UnaryOp::Tanh;
  return {squeeze, excite, deep, hard, shallow, batch, cube};
}

void OpsConv::check_matvec() {
  for (bool matvec : {true, false}) {
    SCOPED_TRACE(matvec ? "conv.matvec=1" : "conv.matvec=0");
    tuning_ = ops::Tuning::from_knobs(matvec ? "conv.matvec=1" : "conv.matvec=0");
    ops::SplitKPolicy unsplit;  // the implicit GEMM in one node
    unsplit.min_k = int64_t{1} << 40;
    tuning_.split_k = unsplit;
    for (ConvCase c : matvec_cases()) {
      SCOPED_TRACE(shape_str(c.w));
      if (matvec) c.label = "(matvec)";
      check(c);
    }
  }
}

TEST_F(OpsConv, MatvecOnePixelPointwise) {
  check_matvec();
}

TEST_F(OpsConv, Conv1d) {
  // x [2, 4, 11], weight [6, 2, 3], groups 2, stride 2, dilation 2, pads {1, 2}.
  auto xv = random_floats(2 * 4 * 11), wv = random_floats(6 * 2 * 3), bv = random_floats(6);
  ComputeGraph g(context());
  TensorRef x = g.add_input({2, 4, 11}, DType::Float32, "x");
  TensorRef w = g.add_constant(HostTensor::from(DType::Float32, {6, 2, 3}, wv));
  TensorRef b = g.add_constant(HostTensor::from(DType::Float32, {6}, bv));
  ops::Conv1dParams p{2, {1, 2}, 2, 2};
  TensorRef y = ops::conv1d(g, x, w, p, {.bias = b});
  g.add_output(y, "y");
  // Same problem as a conv2d with H = 1.
  ConvCase c{{2, 4, 1, 11}, {6, 2, 1, 3}, conv_params({1, 2}, {0, 1, 0, 2}, {1, 2}, 2)};
  Shape ys;
  auto want = conv_ref(c, xv, wv, bv, {}, ys);
  ASSERT_EQ(g.info(y).shape, (Shape{2, 6, ys[4]}));
  expect_close(run_graph(g, {xv}), want, 1e-4);
}

// Float16 tensors through every implicit-GEMM kind, on the float32-arithmetic kernel and, where
// the device has float16 cooperative matrices (the H200), on the tensor-core one
// (conv_coopmat.comp); tile edges in M, N and K, batch, strides, dilation, groups, residual,
// 3-D and split-K, once with conv.coopmat=0 (the float32-arithmetic kernel) and once with 1.
class OpsConvFloat16 : public OpsConv {
 protected:
  void SetUp() override {
    OpsConv::SetUp();
    dtype_ = DType::Float16;
  }
  void check_all() {
    const ops::Tuning tuning = tuning_;
    ops::SplitKPolicy unsplit;  // one node each, whatever the device's grid
    unsplit.min_k = int64_t{1} << 40;
    tuning_.split_k = unsplit;
    check({{2, 24, 11, 13}, {40, 24, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})});
    check({{1, 16, 15, 14}, {64, 16, 3, 3}, conv_params({2, 2}, {1, 1, 1, 1})});
    check({{1, 32, 12, 12}, {48, 32, 3, 3}, conv_params({1, 1}, {2, 2, 2, 2}, {2, 2})});
    ConvCase no_bias{{1, 20, 9, 9}, {70, 20, 5, 5}, conv_params({1, 1}, {2, 2, 2, 2})};
    no_bias.bias = false;
    check(no_bias);
    ConvCase pointwise{{2, 48, 7, 9}, {80, 48, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0})};
    pointwise.act = UnaryOp::Relu;
    check(pointwise);
    check({{1, 64, 8, 8}, {64, 32, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1}, {1, 1}, 2)});
    ConvCase residual{{1, 32, 10, 10}, {32, 32, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
    residual.act = UnaryOp::Relu;
    residual.residual = ConvCase::Residual::Full;
    check(residual);
    check({{1, 16, 5, 6, 7}, {24, 16, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1, 1, 1, 1}}});
    // M = 64, N = 16, K = 576 with split-K's thresholds lowered: 18 slices of 32.
    ops::SplitKPolicy policy;
    policy.min_k = 128;
    policy.min_slice = 32;
    tuning_.split_k = policy;
    ConvCase split{{1, 64, 4, 4}, {64, 64, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
    split.act = UnaryOp::Relu;
    split.residual = ConvCase::Residual::Full;
    split.nodes = 2;
    check(split);
    tuning_ = tuning;
  }
};

TEST_F(OpsConvFloat16, MatvecOnePixelPointwise) {
  check_matvec();
}

TEST_F(OpsConvFloat16, EveryGemmKind) {
  tuning_ = ops::Tuning::from_knobs("conv.coopmat=0,conv.pw_matmul_pixels=0");
  check_all();
}

TEST_F(OpsConvFloat16, EveryGemmKindOnTensorCores) {
  tuning_ = ops::Tuning::from_knobs("conv.coopmat=1,conv.tc_min_tiles=0,conv.pw_matmul_pixels=0");
  check_all();
}

// Float16 pointwise convolutions of few pixels through matmul (conv.pw_matmul_pixels): with
// and without bias, a fused activation and residual, batch 2, 3-D; more pixels than the knob
// allows stay a convolution.
TEST_F(OpsConvFloat16, PointwiseOfFewPixelsAsMatmul) {
  tuning_ = ops::Tuning::from_knobs("conv.pw_matmul_pixels=64");
  ops::SplitKPolicy unsplit;  // one node each, whatever the device's grid
  unsplit.min_k = int64_t{1} << 40;
  tuning_.split_k = unsplit;
  const ops::Conv3dParams pointwise_params = conv_params({1, 1}, {0, 0, 0, 0});
  ConvCase batch2{{2, 48, 7, 9}, {80, 48, 1, 1}, pointwise_params};
  batch2.act = UnaryOp::Relu;
  batch2.label = "matmul";
  check(batch2);
  ConvCase residual{{1, 40, 6, 6}, {24, 40, 1, 1}, pointwise_params};
  residual.bias = false;
  residual.act = UnaryOp::HardSwish;
  residual.residual = ConvCase::Residual::Full;
  residual.label = "matmul";
  check(residual);
  ConvCase three_d{{1, 16, 2, 3, 5}, {24, 16, 1, 1, 1}, {{1, 1, 1}, {0, 0, 0, 0, 0, 0}}};
  three_d.label = "matmul";
  check(three_d);
  ConvCase many_pixels{{1, 16, 9, 9}, {24, 16, 1, 1}, pointwise_params};
  many_pixels.label = "conv2d";
  check(many_pixels);
}

// The tensor-core kernel alone (conv_coopmat.comp; skipped without float16 cooperative matrices,
// e.g. on lavapipe), in each tile: its 16-byte, 8-byte and per-element im2col loads (aligned
// pointwise rows, 3x3 windows whose rows are aligned only for some taps, rows of 14 and 7
// pixels, batch crossing images), weights with K not a multiple of 8, channels not multiples
// of 16, strides, pads, dilation, groups, 3-D, every kind of epilogue, and split-K.
class OpsConvTensorCores : public OpsConvFloat16 {
 protected:
  void SetUp() override {
    OpsConvFloat16::SetUp();
    const vk::DeviceFeatures& f = context()->features();
    if (!f.coopmat_f16_16x16x16 || f.subgroup_size != 32)
      GTEST_SKIP() << "no float16 16x16x16 cooperative matrices with subgroups of 32";
  }
  // Every case once per tensor-core tile (conv.tc_tile) and store (conv.tc_vec_store), unsplit.
  void check_tiles(const std::vector<ConvCase>& cases) {
    for (const char* knobs :
         {"conv.tc_tile=64,conv.tc_vec_store=0", "conv.tc_tile=128,conv.tc_vec_store=0",
          "conv.tc_tile=64,conv.tc_vec_store=1", "conv.tc_tile=128,conv.tc_vec_store=1"}) {
      SCOPED_TRACE(knobs);
      // Every size on tensor cores, also the few-tile ones the default gives conv.comp.
      tuning_ = ops::Tuning::from_knobs(
          std::string("conv.coopmat=1,conv.tc_min_tiles=0,conv.pw_matmul_pixels=0,") + knobs);
      ops::SplitKPolicy unsplit;
      unsplit.min_k = int64_t{1} << 40;
      tuning_.split_k = unsplit;
      for (const ConvCase& c : cases) check(c);
    }
  }
};

TEST_F(OpsConvTensorCores, Pointwise) {
  ConvCase aligned{{1, 64, 56, 56}, {160, 64, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0})};
  aligned.act = UnaryOp::Relu;
  ConvCase rows14{{1, 40, 14, 14}, {72, 40, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0})};
  rows14.residual = ConvCase::Residual::Full;
  ConvCase odd{{2, 36, 7, 7}, {48, 36, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0})};
  odd.act = UnaryOp::Silu;
  odd.bias = false;
  check_tiles({aligned, rows14, odd});
}

TEST_F(OpsConvTensorCores, Windows) {
  ConvCase aligned{{1, 16, 56, 56}, {32, 16, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  aligned.act = UnaryOp::Relu;
  aligned.residual = ConvCase::Residual::Full;
  ConvCase rows14{{1, 24, 14, 14}, {40, 24, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  rows14.act = UnaryOp::Silu;
  ConvCase strided{{1, 32, 28, 28}, {64, 32, 3, 3}, conv_params({2, 2}, {1, 1, 1, 1})};
  strided.act = UnaryOp::Clip;
  strided.act_params = {0.f, 6.f};
  ConvCase stem{{1, 3, 32, 32}, {64, 3, 7, 7}, conv_params({2, 2}, {3, 3, 3, 3})};
  stem.bias = false;
  ConvCase dilated{{2, 64, 7, 7}, {64, 64, 3, 3}, conv_params({1, 1}, {2, 2, 2, 2}, {2, 2})};
  dilated.act = UnaryOp::HardSwish;
  ConvCase grouped{{1, 64, 14, 14}, {64, 16, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1}, {1, 1}, 4)};
  grouped.act = UnaryOp::Relu;
  ConvCase one_by_one_strided{{1, 32, 14, 14}, {48, 32, 1, 1}, conv_params({2, 2}, {0, 0, 0, 0})};
  ConvCase asymmetric{{1, 20, 9, 11}, {70, 20, 5, 3}, conv_params({1, 1}, {2, 1, 1, 0})};
  asymmetric.residual = ConvCase::Residual::Full;
  check_tiles({aligned, rows14, strided, stem, dilated, grouped, one_by_one_strided, asymmetric});
}

TEST_F(OpsConvTensorCores, Conv3d) {
  ConvCase c{{1, 16, 5, 6, 8}, {24, 16, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1, 1, 1, 1}}};
  c.act = UnaryOp::Relu;
  check_tiles({c});
}

// Split-K partial passes, then the reduce pass's epilogue: deep K over few tiles, K a multiple
// of 8 and not (147: the per-element weight loads inside a slice).
TEST_F(OpsConvTensorCores, SplitK) {
  ops::SplitKPolicy policy;
  policy.min_k = 128;
  policy.min_slice = 32;
  ConvCase deep{{1, 256, 7, 7}, {128, 256, 3, 3}, conv_params({1, 1}, {1, 1, 1, 1})};
  deep.act = UnaryOp::Relu;
  deep.residual = ConvCase::Residual::Full;
  deep.nodes = 2;
  ConvCase pointwise{{1, 512, 7, 7}, {96, 512, 1, 1}, conv_params({1, 1}, {0, 0, 0, 0})};
  pointwise.nodes = 2;
  ConvCase stem{{1, 3, 8, 8}, {32, 3, 7, 7}, conv_params({1, 1}, {3, 3, 3, 3})};
  stem.act = UnaryOp::Silu;
  stem.nodes = 2;
  for (const char* knobs :
       {"conv.tc_tile=64,conv.tc_vec_store=0", "conv.tc_tile=128,conv.tc_vec_store=1"}) {
    SCOPED_TRACE(knobs);
    // Every size on tensor cores, also the few-tile ones the default gives conv.comp.
    tuning_ = ops::Tuning::from_knobs(
        std::string("conv.coopmat=1,conv.tc_min_tiles=0,conv.pw_matmul_pixels=0,") + knobs);
    tuning_.split_k = policy;
    for (const ConvCase& c : {deep, pointwise, stem}) check(c);
  }
}

// 3-D: the CONV3D kernels, and conv3d with a trivial depth window on the 2-D ones.
TEST_F(OpsConv, Conv3dPad1Batch2) {
  check({{2, 3, 5, 6, 7}, {4, 3, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1, 1, 1, 1}}});
}

TEST_F(OpsConv, Conv3dStridesDilationAsymmetricPads) {
  check({{1, 3, 7, 8, 9}, {5, 3, 2, 3, 2}, {{2, 1, 2}, {1, 0, 1, 0, 2, 1}, {2, 1, 1}}});
}

TEST_F(OpsConv, Conv3dGroupsNoBiasCoutNotMultipleOfTile) {
  ConvCase c{{1, 4, 5, 4, 5}, {34, 2, 3, 1, 2}, {{1, 2, 1}, {1, 0, 1, 1, 0, 0}, {1, 1, 1}, 2}};
  c.bias = false;
  check(c);
}

TEST_F(OpsConv, Conv3dDepthwiseMultiplierRelu) {
  ConvCase c{{2, 3, 4, 6, 5}, {6, 1, 3, 3, 2}, {{1, 2, 1}, {1, 1, 0, 1, 1, 1}, {1, 1, 2}, 3}};
  c.act = UnaryOp::Relu;
  check(c);
}

TEST_F(OpsConv, Conv3dPointwiseAndOneByOneStride2) {
  check({{2, 6, 3, 4, 5}, {7, 6, 1, 1, 1}, {}});
  check({{1, 6, 5, 5, 5}, {7, 6, 1, 1, 1}, {{2, 2, 2}}});
}

TEST_F(OpsConv, Conv3dDepthOneRunsAs2d) {
  check({{2, 4, 1, 7, 6}, {5, 4, 1, 3, 3}, {{3, 1, 2}, {0, 1, 1, 0, 1, 0}}});
  check({{1, 4, 1, 5, 6}, {4, 1, 1, 3, 3}, {{1, 1, 1}, {0, 1, 1, 0, 1, 1}, {1, 1, 1}, 4}});
}

TEST_F(OpsConvSplitK, Conv3dDeepChannels) {
  // M = 16, N = 8, K = 32 * 27 = 864: split into slices of 64.
  ConvCase c{{1, 32, 2, 2, 2}, {16, 32, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1, 1, 1, 1}}};
  c.act = UnaryOp::Sigmoid;
  c.nodes = 2;
  check(c);
}

// Scatter form, independent of the gather the shader uses; 5-D shapes (2-D cases have D = 1).
std::vector<double> conv_transpose_ref(const Shape& xs, const std::vector<float>& x,
                                       const Shape& ws, const std::vector<float>& w,
                                       const std::vector<float>& b,
                                       const ops::ConvTranspose3dParams& p, Shape& ys) {
  const int64_t N = xs[0], C = xs[1], Mg = ws[1], M = Mg * p.groups, Cg = C / p.groups;
  std::array<int64_t, 3> in{xs[2], xs[3], xs[4]}, k{ws[2], ws[3], ws[4]}, out{};
  for (int i = 0; i < 3; ++i)
    out[i] = (in[i] - 1) * p.strides[i] - p.pads[i] - p.pads[3 + i] + p.dilations[i] * (k[i] - 1) +
             p.output_padding[i] + 1;
  ys = {N, M, out[0], out[1], out[2]};
  const int64_t in_vol = in[0] * in[1] * in[2], out_vol = out[0] * out[1] * out[2];
  const int64_t taps = k[0] * k[1] * k[2];
  std::vector<double> y(N * M * out_vol);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < out_vol; ++i) y[(n * M + m) * out_vol + i] = b[m];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t at = 0; at < in_vol; ++at)
        for (int64_t mg = 0; mg < Mg; ++mg)
          for (int64_t tap = 0; tap < taps; ++tap) {
            const int64_t id = at / (in[1] * in[2]), ih = at / in[2] % in[1], iw = at % in[2];
            const int64_t kd = tap / (k[1] * k[2]), kh = tap / k[2] % k[1], kw = tap % k[2];
            const int64_t od = id * p.strides[0] - p.pads[0] + kd * p.dilations[0];
            const int64_t oh = ih * p.strides[1] - p.pads[1] + kh * p.dilations[1];
            const int64_t ow = iw * p.strides[2] - p.pads[2] + kw * p.dilations[2];
            if (od < 0 || od >= out[0] || oh < 0 || oh >= out[1] || ow < 0 || ow >= out[2])
              continue;
            const int64_t m = ci / Cg * Mg + mg;
            y[(n * M + m) * out_vol + (od * out[1] + oh) * out[2] + ow] +=
                double(x[(n * C + ci) * in_vol + at]) * w[(ci * Mg + mg) * taps + tap];
          }
  return y;
}

// A 2-D case as the 3-D one it is: unit depth.
ops::ConvTranspose3dParams lifted(const ops::ConvTranspose2dParams& p) {
  ops::ConvTranspose3dParams q;
  q.strides = {1, p.strides[0], p.strides[1]};
  q.pads = {0, p.pads[0], p.pads[1], 0, p.pads[2], p.pads[3]};
  q.dilations = {1, p.dilations[0], p.dilations[1]};
  q.output_padding = {0, p.output_padding[0], p.output_padding[1]};
  q.groups = p.groups;
  return q;
}

Shape with_unit_depth(const Shape& s) {
  return {s[0], s[1], 1, s[2], s[3]};
}

class OpsConvTranspose : public GpuTest {
 protected:
  // `xs`, `ws` and `expect_shape` are 4-D for conv_transpose2d, 5-D for conv_transpose3d.
  template <typename Params>
  void check(const Shape& xs, const Shape& ws, const Params& p, const Shape& expect_shape) {
    auto xv = random_floats(numel(xs)), wv = random_floats(numel(ws));
    auto bv = random_floats(ws[1] * p.groups);
    ComputeGraph g(context());
    TensorRef x = g.add_input(xs, DType::Float32, "x");
    TensorRef w = g.add_constant(HostTensor::from(DType::Float32, ws, wv));
    TensorRef b = g.add_constant(HostTensor::from(DType::Float32, {ws[1] * p.groups}, bv));
    Shape ys;
    std::vector<double> want;
    TensorRef y;
    if constexpr (std::is_same_v<Params, ops::ConvTranspose2dParams>) {
      y = ops::conv_transpose2d(g, x, w, b, p);
      want =
          conv_transpose_ref(with_unit_depth(xs), xv, with_unit_depth(ws), wv, bv, lifted(p), ys);
      ys.erase(ys.begin() + 2);
    } else {
      y = ops::conv_transpose3d(g, x, w, b, p);
      want = conv_transpose_ref(xs, xv, ws, wv, bv, p, ys);
    }
    g.add_output(y, "y");
    ASSERT_EQ(ys, expect_shape);
    ASSERT_EQ(g.info(y).shape, ys);
    expect_close(run_graph(g, {xv}), want, 1e-4);
  }
};

TEST_F(OpsConvTranspose, Stride2OutputPadding) {
  ops::ConvTranspose2dParams p;
  p.strides = {2, 2};
  p.pads = {1, 1, 1, 1};
  p.output_padding = {1, 1};
  check({1, 4, 5, 6}, {4, 3, 3, 3}, p, {1, 3, 10, 12});
}

TEST_F(OpsConvTranspose, GroupsDilationAsymmetric) {
  ops::ConvTranspose2dParams p;
  p.strides = {2, 1};
  p.pads = {0, 1, 2, 0};
  p.dilations = {2, 1};
  p.output_padding = {1, 0};
  p.groups = 2;
  check({2, 4, 4, 5}, {4, 2, 3, 2}, p, {2, 4, 10, 5});
}

// Every window attribute differs per axis, so that a swapped depth/height/width shows.
TEST_F(OpsConvTranspose, ThreeD) {
  ops::ConvTranspose3dParams p;
  p.strides = {2, 1, 3};
  p.pads = {1, 0, 2, 0, 1, 1};
  p.dilations = {1, 2, 1};
  p.output_padding = {1, 0, 2};
  p.groups = 2;
  // D: 2*2 - 1 + 2 + 1 + 1 = 7; H: 3 - 1 + 4 + 1 = 7; W: 9 - 3 + 1 + 2 + 1 = 10.
  check({2, 4, 3, 4, 4}, {4, 3, 3, 3, 2}, p, {2, 6, 7, 7, 10});
}

class OpsConvErrors : public OpErrorTest {};

TEST_F(OpsConvErrors, Conv2d) {
  auto x = input({1, 4, 8, 8});
  expect_error(ErrorKind::InvalidArgument, "conv2d", "input channels", [&] {
    ops::conv2d(g, x, input({6, 3, 3, 3}));
  });
  expect_error(ErrorKind::InvalidArgument, "conv2d", "groups 3 must divide", [&] {
    ops::conv2d(g, x, input({6, 2, 3, 3}), {{1, 1}, {}, {1, 1}, 3});
  });
  expect_error(ErrorKind::InvalidArgument, "conv2d", "weight must be [Cout, Cin/groups, kH, kW]",
               [&] {
                 ops::conv2d(g, x, input({6, 4, 3}));
               });
  expect_error(ErrorKind::InvalidArgument, "conv2d", "input must be [N, C, H, W]", [&] {
    ops::conv2d(g, input({4, 8, 8}), input({6, 4, 3, 3}));
  });
  expect_error(ErrorKind::InvalidArgument, "conv2d", "bias must be [6]", [&] {
    ops::conv2d(g, x, input({6, 4, 3, 3}), {}, {.bias = input({5})});
  });
  expect_error(ErrorKind::InvalidArgument, "conv2d", "exceeds padded height", [&] {
    ops::conv2d(g, x, input({6, 4, 9, 3}));
  });
  expect_error(ErrorKind::InvalidArgument, "conv2d", "strides", [&] {
    ops::conv2d(g, x, input({6, 4, 3, 3}), {{0, 1}});
  });
  expect_error(ErrorKind::Unsupported, "conv2d", "cannot be fused", [&] {
    ops::conv2d(g, x, input({6, 4, 3, 3}), {}, {.activation = UnaryOp::Exp});
  });
  expect_error(ErrorKind::InvalidArgument, "conv2d", "has an empty dim", [&] {
    ops::conv2d(g, x, input({6, 4, 0, 3}));
  });
  auto xi = g.add_input({1, 4, 8, 8}, DType::Int32, "xi");
  expect_error(ErrorKind::Unsupported, "conv2d", "dtype int32 not supported", [&] {
    ops::conv2d(g, xi, input({6, 4, 3, 3}));
  });
  // Model-given windows too large for the shaders' ints, or for int64 itself.
  const int64_t big = int64_t{1} << 32;
  expect_error(ErrorKind::Unsupported, "conv2d", "does not fit in 32 bits", [&] {
    ops::conv2d(g, x, input({6, 4, 3, 3}), {{2 * big, 1}, {big, 0, big, 0}});
  });
  expect_error(ErrorKind::InvalidArgument, "conv2d", "overflows int64", [&] {
    ops::conv2d(g, x, input({6, 4, 3, 3}), {{1, 1}, {}, {int64_t{1} << 62, 1}});
  });
}

TEST_F(OpsConvErrors, Conv3d) {
  auto x = input({1, 4, 3, 6, 6});
  expect_error(ErrorKind::InvalidArgument, "conv3d", "input must be [N, C, D, H, W]", [&] {
    ops::conv3d(g, input({1, 4, 6, 6}), input({6, 4, 3, 3, 3}));
  });
  expect_error(ErrorKind::InvalidArgument, "conv3d",
               "weight must be [Cout, Cin/groups, kD, kH, kW]", [&] {
                 ops::conv3d(g, x, input({6, 4, 3, 3}));
               });
  expect_error(ErrorKind::InvalidArgument, "conv3d", "exceeds padded depth", [&] {
    ops::conv3d(g, x, input({6, 4, 4, 3, 3}));
  });
  expect_error(ErrorKind::InvalidArgument, "conv3d", "dilations [1, 0, 1]", [&] {
    ops::conv3d(g, x, input({6, 4, 3, 3, 3}), {{1, 1, 1}, {}, {1, 0, 1}});
  });
  expect_error(ErrorKind::InvalidArgument, "conv3d", "input channels", [&] {
    ops::conv3d(g, x, input({6, 2, 3, 3, 3}));
  });
}

TEST_F(OpsConvErrors, Conv1dAndTranspose) {
  expect_error(ErrorKind::InvalidArgument, "conv1d", "input must be [N, C, L]", [&] {
    ops::conv1d(g, input({1, 4, 8, 8}), input({6, 4, 3}));
  });
  expect_error(ErrorKind::InvalidArgument, "conv1d", "input channels", [&] {
    ops::conv1d(g, input({1, 4, 8}), input({6, 3, 3}));
  });
  expect_error(ErrorKind::InvalidArgument, "conv_transpose2d", "input channels", [&] {
    ops::conv_transpose2d(g, input({1, 4, 5, 5}), input({3, 2, 3, 3}));
  });
  ops::ConvTranspose2dParams p;
  p.output_padding = {-1, 0};
  expect_error(ErrorKind::InvalidArgument, "conv_transpose2d", "output_padding", [&] {
    ops::conv_transpose2d(g, input({1, 4, 5, 5}), input({4, 2, 3, 3}), std::nullopt, p);
  });
  expect_error(ErrorKind::InvalidArgument, "conv_transpose3d", "input must be [N, C, D, H, W]",
               [&] {
                 ops::conv_transpose3d(g, input({1, 4, 5, 5}), input({4, 2, 3, 3}));
               });
  ops::ConvTranspose3dParams q;
  q.pads = {3, 0, 0, 3, 0, 0};
  expect_error(
      ErrorKind::InvalidArgument, "conv_transpose3d", "pads leave an empty output [-3, 3, 3]", [&] {
        ops::conv_transpose3d(g, input({1, 4, 2, 1, 1}), input({4, 2, 2, 3, 3}), std::nullopt, q);
      });
}

}  // namespace
}  // namespace vkgraph::testing

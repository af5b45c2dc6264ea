// Float16 tensors (16-bit storage, float32 arithmetic): every op with float16 kernels runs on
// float16 inputs and on the same values in float32, and the results must agree to float16
// rounding. Session's float16 mode (SessionOptions::fp16) runs whole models that way.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "model_builder.h"
#include "shape_test_util.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/tensor_io.h"

namespace vkgraph::testing {
namespace {

HostTensor to_half(const HostTensor& t) {
  HostTensor h(DType::Float16, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i) h.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  return h;
}

HostTensor to_float(const HostTensor& t) {
  if (t.dtype != DType::Float16) return t;
  HostTensor f(DType::Float32, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = half_to_float(t.data<uint16_t>()[i]);
  return f;
}

struct HalfCase {
  std::string name;
  std::vector<Shape> inputs;  // float inputs, random in [-1, 1]
  BuildFn build;              // must build the same ops whatever the inputs' dtype
  // Float results: |f16 - f32| <= tol * (1 + |f32|). Exact: the float16 result equals the
  // float32 one rounded to float16, bit for bit (data movement).
  float tol = 4e-3f;
  bool exact = false;
};

class Fp16Ops : public GpuTest, public ::testing::WithParamInterface<HalfCase> {};

TEST_P(Fp16Ops, MatchesFloat32) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  const HalfCase& c = GetParam();
  std::vector<HostTensor> f32, f16;
  for (const Shape& s : c.inputs) {
    // Values a float16 holds exactly, so both runs start from the same numbers.
    HostTensor h = to_half(random_tensor(rng, DType::Float32, s));
    f16.push_back(h);
    f32.push_back(to_float(h));
  }
  std::vector<HostTensor> want = run_ops(f32, c.build), got = run_ops(f16, c.build);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    SCOPED_TRACE("output " + std::to_string(o));
    if (want[o].dtype != DType::Float32) {  // argmax indices
      expect_same(got[o], want[o]);
      continue;
    }
    ASSERT_EQ(got[o].dtype, DType::Float16);
    if (c.exact)
      expect_same(got[o], to_half(want[o]));
    else
      expect_near(to_float(got[o]), want[o], c.tol);
  }
}

ops::Conv2dParams conv_params(int64_t pad, int64_t groups = 1, int64_t stride = 1) {
  ops::Conv2dParams p;
  p.pads = {pad, pad, pad, pad};
  p.strides = {stride, stride};
  p.groups = groups;
  return p;
}

std::vector<HalfCase> half_cases() {
  using namespace ops;
  auto one = [](auto f) -> BuildFn {
    return [f](ComputeGraph& g, const std::vector<TensorRef>& in) {
      return std::vector<TensorRef>{f(g, in)};
    };
  };
  std::vector<HalfCase> cases = {
      {"add_vec4", {{4, 64}, {4, 64}}, one([](ComputeGraph& g, auto& in) {
         return binary(g, BinaryOp::Add, in[0], in[1]);
       })},
      {"mul_broadcast", {{3, 1, 5}, {4, 5}}, one([](ComputeGraph& g, auto& in) {
         return binary(g, BinaryOp::Mul, in[0], in[1]);
       })},
      {"max_odd", {{7, 3}, {7, 3}}, one([](ComputeGraph& g, auto& in) {
         return binary(g, BinaryOp::Max, in[0], in[1]);
       })},
      {"gelu", {{5, 37}}, one([](ComputeGraph& g, auto& in) {
         return unary(g, UnaryOp::Gelu, in[0]);
       })},
      {"sigmoid_tanh_exp",
       {{130}},
       [](ComputeGraph& g, const std::vector<TensorRef>& in) {
         return std::vector<TensorRef>{unary(g, UnaryOp::Sigmoid, in[0]),
                                       unary(g, UnaryOp::Tanh, in[0]),
                                       unary(g, UnaryOp::Exp, in[0])};
       }},
      {"conv3x3_bias_relu",
       {{1, 8, 10, 10}, {16, 8, 3, 3}, {16}},
       one([](ComputeGraph& g, auto& in) {
         return conv2d(g, in[0], in[1], conv_params(1),
                       {.bias = in[2], .activation = UnaryOp::Relu});
       })},
      {"conv_strided_64_tile",
       {{2, 16, 20, 20}, {64, 16, 3, 3}},
       one([](ComputeGraph& g, auto& in) {
         return conv2d(g, in[0], in[1], conv_params(1, 1, 2));
       })},
      {"conv_pointwise", {{1, 24, 6, 6}, {40, 24, 1, 1}, {40}}, one([](ComputeGraph& g, auto& in) {
         return conv2d(g, in[0], in[1], conv_params(0), {in[2], UnaryOp::Clip, {0.f, 0.5f}});
       })},
      {"conv_depthwise", {{1, 8, 9, 9}, {8, 1, 3, 3}, {8}}, one([](ComputeGraph& g, auto& in) {
         return conv2d(g, in[0], in[1], conv_params(1, 8), {.bias = in[2]});
       })},
      // K = 256 * 9 with a 4x4 output: split-K partial and reduce passes, partials in float32.
      {"conv_split_k",
       {{1, 256, 4, 4}, {8, 256, 3, 3}, {8}},
       one([](ComputeGraph& g, auto& in) {
         return conv2d(g, in[0], in[1], conv_params(1), {.bias = in[2]});
       }),
       1e-2f},
      {"conv3d", {{1, 3, 4, 5, 5}, {4, 3, 2, 3, 3}}, one([](ComputeGraph& g, auto& in) {
         return conv3d(g, in[0], in[1], Conv3dParams{});
       })},
      {"conv_transpose", {{1, 4, 5, 5}, {4, 3, 3, 3}}, one([](ComputeGraph& g, auto& in) {
         ConvTranspose2dParams p;
         p.strides = {2, 2};
         return conv_transpose2d(g, in[0], in[1], std::nullopt, p);
       })},
      {"pools",
       {{1, 5, 9, 9}},
       [](ComputeGraph& g, const std::vector<TensorRef>& in) {
         Pool2dParams p;
         p.kernel = {3, 3};
         p.strides = {2, 2};
         p.pads = {1, 1, 1, 1};
         return std::vector<TensorRef>{max_pool2d(g, in[0], p), avg_pool2d(g, in[0], p),
                                       global_avg_pool(g, in[0]), global_max_pool(g, in[0])};
       }},
      {"gemv", {{1, 96}, {48, 96}, {48}}, one([](ComputeGraph& g, auto& in) {
         return linear(g, in[0], in[1], {in[2], UnaryOp::Relu});
       })},
      {"gemv_deep",
       {{1, 1200}, {40, 1200}},
       one([](ComputeGraph& g, auto& in) { return linear(g, in[0], in[1]); }),
       1e-2f},
      {"matmul_tiled_batched", {{2, 33, 40}, {40, 50}}, one([](ComputeGraph& g, auto& in) {
         return matmul(g, in[0], in[1]);
       })},
      // Few output tiles and a deep K: split-K partials in float32.
      {"matmul_split_k",
       {{16, 4096}, {4096, 16}},
       one([](ComputeGraph& g, auto& in) { return matmul(g, in[0], in[1]); }),
       1e-2f},
      {"gemm_bias", {{20, 30}, {30, 24}, {24}}, one([](ComputeGraph& g, auto& in) {
         return gemm(g, in[0], in[1], {.c = in[2], .alpha = 0.5f, .beta = 2.f});
       })},
      // Shapes that fill whole tensor-core tiles: where the device has cooperative matrices,
      // the fp16 side runs their epilogue (alpha, a 2-D C, beta, activation; a [N] bias).
      {"gemm_tile_shaped_epilogue",
       {{64, 64}, {64, 128}, {64, 128}},
       one([](ComputeGraph& g, auto& in) {
         return gemm(g, in[0], in[1],
                     {.c = in[2], .alpha = 0.5f, .beta = 2.f, .activation = UnaryOp::Relu});
       })},
      {"matmul_tile_shaped_bias_gelu",
       {{128, 64}, {64, 128}, {128}},
       one([](ComputeGraph& g, auto& in) {
         return matmul(g, in[0], in[1], {in[2], UnaryOp::Gelu});
       })},
      {"softmax_rows_and_columns",
       {{4, 300}},
       [](ComputeGraph& g, const std::vector<TensorRef>& in) {
         return std::vector<TensorRef>{softmax(g, in[0], 1), softmax(g, in[0], 0, true)};
       }},
      {"layer_norm",
       {{6, 64}, {64}, {64}},
       one([](ComputeGraph& g, auto& in) { return layer_norm(g, in[0], in[1], in[2]); }),
       1e-2f},
      {"batch_norm", {{2, 3, 4, 4}, {3}, {3}, {3}, {3}}, one([](ComputeGraph& g, auto& in) {
         // The variance must be positive: exp of a random input.
         return batch_norm_inference(g, in[0], in[1], in[2], in[3], unary(g, UnaryOp::Exp, in[4]));
       })},
      {"reduce_and_argmax",
       {{3, 5, 7}},
       [](ComputeGraph& g, const std::vector<TensorRef>& in) {
         return std::vector<TensorRef>{reduce(g, ReduceOp::Mean, in[0], {1}, true),
                                       reduce(g, ReduceOp::Max, in[0], {0, 2}, false),
                                       reduce(g, ReduceOp::L2, in[0], {2}, false),
                                       argmax(g, in[0], 2, false, false)};
       }},
      {"resize_linear", {{1, 2, 4, 5}}, one([](ComputeGraph& g, auto& in) {
         ResizeOptions o;
         o.mode = ResizeMode::Linear;
         return resize(g, in[0], {1, 2, 7, 9}, o);
       })},
      // Data movement moves 16-bit elements: exact.
      {"data_movement",
       {{2, 3, 4}, {2, 3, 4}},
       [](ComputeGraph& g, const std::vector<TensorRef>& in) {
         TensorRef idx =
             g.add_constant(HostTensor::from(DType::Int64, {3}, std::vector<int64_t>{2, 0, 2}));
         TensorRef cond =
             g.add_constant(HostTensor::from(DType::Bool, {4}, std::vector<uint8_t>{1, 0, 0, 1}));
         TensorRef nchw = reshape(g, in[0], {1, 2, 3, 4});
         return std::vector<TensorRef>{transpose(g, in[0], {2, 0, 1}),
                                       concat(g, {in[0], in[1]}, 1),
                                       slice(g, in[0], {1}, {4}, {2}, {2}),
                                       gather(g, in[0], idx, 1),
                                       pad(g, in[0], {0, 1, 0, 0, 2, 1}, PadMode::Constant, 0.5),
                                       pad(g, in[0], {0, 0, 2, 0, 0, 1}, PadMode::Reflect),
                                       where(g, cond, in[0], in[1]),
                                       resize(g, nchw, {1, 2, 6, 7})};
       },
       0.f,
       true},
  };
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, Fp16Ops, ::testing::ValuesIn(half_cases()),
                         [](const auto& info) { return info.param.name; });

TEST_F(GpuTest, Fp16OpsRefuseMixedDtypes) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  ComputeGraph g(context());
  TensorRef x = g.add_input({1, 2, 4, 4}, DType::Float16, "x");
  TensorRef w = g.add_input({3, 2, 3, 3}, DType::Float32, "w");
  expect_error([&] { ops::conv2d(g, x, w, {}); }, ErrorKind::Unsupported,
               {"conv2d", "float32", "float16"});
  TensorRef s = g.add_input({4}, DType::Float32, "s");
  expect_error([&] { ops::layer_norm(g, x, s); }, ErrorKind::Unsupported, {"layer_norm"});
  expect_error([&] { ops::cumsum(g, x, 0); }, ErrorKind::Unsupported, {"cumsum", "float16"});
}

// --- Session float16 mode ---

std::string model_path(const char* file) {
  return std::string(VKGRAPH_SOURCE_DIR) + "/models/" + file;
}

TEST_F(GpuTest, Fp16SessionMatchesPyTorchOnDigits) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  HostTensor input = read_npy(model_path("digits_holdout_input.npy"));
  HostTensor want = read_npy(model_path("digits_holdout_logits.npy"));
  HostTensor labels = read_npy(model_path("digits_holdout_labels.npy"));
  SessionOptions f32_options, f16_options;
  f32_options.context = f16_options.context = context();
  f16_options.fp16 = true;
  Session f32(model_path("digits.onnx"), f32_options), f16(model_path("digits.onnx"), f16_options);
  f32.run({{"input", input}});
  HostTensor got16 = f16.run({{"input", input}})[0];
  ASSERT_EQ(got16.dtype, DType::Float32);  // outputs stay as the model declares them
  ASSERT_EQ(got16.shape, want.shape);
  const int64_t classes = want.shape[1];
  auto argmax_row = [&](const HostTensor& t, int64_t r) {
    const float* row = t.data<float>() + r * classes;
    return std::max_element(row, row + classes) - row;
  };
  double worst = 0, scale = 0;
  int agree = 0, correct = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    worst = std::max(worst, std::fabs(double(got16.data<float>()[i]) - want.data<float>()[i]));
    scale = std::max(scale, std::fabs(double(want.data<float>()[i])));
  }
  for (int64_t r = 0; r < want.shape[0]; ++r) {
    agree += argmax_row(got16, r) == argmax_row(want, r);
    correct += argmax_row(got16, r) == labels.as_int(r);
  }
  // Logits reach ~20; float16 keeps about 3 decimal digits.
  EXPECT_LT(worst, 2e-3 * scale + 1e-2)
      << "max |fp16 - PyTorch| " << worst << " at scale " << scale;
  EXPECT_GE(agree, 99);
  EXPECT_GE(correct, 95);
  // Weights and activations are held in float16: half the bytes.
  GraphStats s32 = f32.graph()->stats(), s16 = f16.graph()->stats();
  EXPECT_LE(s16.constant_bytes, s32.constant_bytes * 51 / 100 + 64);
  EXPECT_LT(s16.activation_bytes, s32.activation_bytes);
}

// Ops without float16 kernels (CumSum, TopK) sit between float16 ones: the session casts to
// float32 and back around them, and float32 model inputs and outputs stay float32.
TEST_F(GpuTest, Fp16SessionCastsAroundFloat32Ops) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  ModelBuilder m(14);
  m.input("x", onnx::TensorProto::FLOAT, {2, 6});
  m.output("y", onnx::TensorProto::FLOAT);
  m.output("top", onnx::TensorProto::FLOAT);
  m.initializer("w", Shape{6, 6}, random_floats(36));
  m.initializer("axis", std::vector<int64_t>{1}, true);
  m.initializer("k", std::vector<int64_t>{2});
  m.node("MatMul", {"x", "w"}, {"h"});
  m.node("CumSum", {"h", "axis"}, {"c"});
  m.node("Relu", {"c"}, {"y"});
  m.node("TopK", {"h", "k"}, {"top", "top_idx"});
  HostTensor x = HostTensor::from(DType::Float32, {2, 6}, random_floats(12));
  SessionOptions o16;
  o16.fp16 = true;
  Session s32 = m.session(), s16 = m.session(o16);
  auto want = s32.run({{"x", x}});
  auto got = s16.run({{"x", x}});
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(got[i].dtype, DType::Float32);
    expect_near(got[i], want[i], 1e-2f);
  }
  // The weight is held in float16.
  EXPECT_LT(s16.graph()->stats().constant_bytes, s32.graph()->stats().constant_bytes);
}

// Attention masks as exporters write them: (1 - mask) * float32's lowest, added to the scores.
// In float16 the constant saturates to -65504 instead of becoming -inf, so unmasked entries
// stay finite (0 * -inf would be NaN) and a fully masked row is uniform, as in float32.
TEST_F(GpuTest, Fp16SessionSaturatesConstantsBeyondFloat16) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  ModelBuilder m(14);
  m.input("scores", onnx::TensorProto::FLOAT, {3, 8});
  m.input("mask", onnx::TensorProto::FLOAT, {3, 8});
  m.output("y", onnx::TensorProto::FLOAT);
  m.initializer("one", Shape{}, std::vector<float>{1.f});
  m.initializer("lowest", Shape{}, std::vector<float>{std::numeric_limits<float>::lowest()});
  m.node("Sub", {"one", "mask"}, {"masked"});
  m.node("Mul", {"masked", "lowest"}, {"bias"});
  m.node("Add", {"scores", "bias"}, {"s"});
  m.node("Softmax", {"s"}, {"y"});
  HostTensor scores = HostTensor::from(DType::Float32, {3, 8}, random_floats(24));
  std::vector<float> mask(24, 1.f);
  for (int i : {2, 5, 7, 9}) mask[i] = 0.f;       // some masked in rows 0 and 1
  std::fill(mask.begin() + 16, mask.end(), 0.f);  // row 2 fully masked
  std::map<std::string, HostTensor> feeds{{"scores", scores},
                                          {"mask", HostTensor::from(DType::Float32, {3, 8}, mask)}};
  SessionOptions o16;
  o16.fp16 = true;
  HostTensor want = m.session().run(feeds)[0], got = m.session(o16).run(feeds)[0];
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_TRUE(std::isfinite(got.data<float>()[i])) << "element " << i;
  expect_near(got, want, 1e-2f);
  EXPECT_NEAR(got.data<float>()[16], 1.f / 8, 1e-3);
}

// LayerNormalization's optional Mean and InvStdDev outputs are float32 (ONNX's stash_type), so
// BERT's epsilon of 1e-12 survives float16 mode: a constant row has InvStdDev 1e6, not inf.
TEST_F(GpuTest, Fp16SessionLayerNormStatisticsStayFloat32) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  ModelBuilder m(17);
  m.input("x", onnx::TensorProto::FLOAT, {2, 16});
  for (const char* name : {"y", "mean", "inv_std"}) m.output(name, onnx::TensorProto::FLOAT);
  m.initializer("scale", Shape{16}, random_floats(16));
  onnx::NodeProto& ln = m.node("LayerNormalization", {"x", "scale"}, {"y", "mean", "inv_std"});
  onnx::AttributeProto* eps = ln.add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(1e-12f);
  std::vector<float> x = random_floats(32);
  std::fill(x.begin() + 16, x.end(), 0.25f);  // row 1 is constant: variance 0
  SessionOptions o16;
  o16.fp16 = true;
  auto got = m.session(o16).run({{"x", HostTensor::from(DType::Float32, {2, 16}, x)}});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_NEAR(got[1].data<float>()[1], 0.25f, 1e-6f);
  EXPECT_NEAR(got[2].data<float>()[1], 1e6f, 1e3f);
  EXPECT_TRUE(std::isfinite(got[2].data<float>()[0]));
}

// A float32 output computed in float16 leaves the device as float16 and is widened as it is
// read: Session::run returns float32 (and outputs() says so) with the values a device cast
// would give; run_bound's graph keeps the cast, so its bound float32 memory holds the same.
TEST_F(GpuTest, Fp16SessionWidensFloat32OutputsOnTheHost) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  // Rows of 1000: 600,000 outputs, enough for the widening to split over the host threads.
  ModelBuilder m(17);
  m.input("x", onnx::TensorProto::FLOAT, {600, 64});
  m.output("y", onnx::TensorProto::FLOAT);
  m.initializer("w", Shape{64, 1000}, random_floats(64 * 1000));
  m.node("MatMul", {"x", "w"}, {"y"});
  SessionOptions o16;
  o16.fp16 = true;
  Session s = m.session(o16);
  HostTensor x = HostTensor::from(DType::Float32, {600, 64}, random_floats(600 * 64));
  HostTensor got = s.run({{"x", x}})[0];
  ASSERT_EQ(got.dtype, DType::Float32);
  EXPECT_EQ(got.shape, (Shape{600, 1000}));
  EXPECT_EQ(s.outputs()[0].dtype, DType::Float32);
  ComputeGraph& g = *s.graph();
  EXPECT_EQ(g.info(g.output(0)).dtype, DType::Float16);  // no cast node before the output
  HostTensor half = g.read_output(0);  // the same output as stored, and read as float32
  ASSERT_EQ(half.dtype, DType::Float16);
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got.data<float>()[i]),
              std::bit_cast<uint32_t>(half_to_float(half.data<uint16_t>()[i])))
        << "element " << i;
  expect_near(got, m.session().run({{"x", x}})[0], 1e-2f);
  // Only float16 -> float32 widens; the byte count must be the float32 one.
  EXPECT_THROW(g.read_output(0, DType::Int32), Error);
  std::vector<float> small(10);
  EXPECT_THROW(g.copy_from_output(0, small.data(), small.size() * sizeof(float), DType::Float32),
               Error);

  // run_bound: External outputs are cast on the device, bound memory is float32.
  const std::map<std::string, HostBinding> in = {
      {"x", HostBinding{x.bytes.data(), x.bytes.size(), DType::Float32, x.shape}}};
  std::vector<ValueInfo> outs = s.prepare_bound(in);
  ASSERT_EQ(outs[0].dtype, DType::Float32);
  std::vector<float> bound(600 * 1000, std::numeric_limits<float>::quiet_NaN());
  s.run_bound(in, {{"y", HostBinding{bound.data(), bound.size() * sizeof(float), DType::Float32,
                                     Shape{600, 1000}}}});
  for (size_t i = 0; i < bound.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(bound[i]), std::bit_cast<uint32_t>(got.data<float>()[i]))
        << "element " << i;
}

}  // namespace
}  // namespace vkgraph::testing

// Quantization ops against C++ references on random data: QuantizeLinear's rounding (ties to
// even) and saturation, per-axis and blocked parameters, DequantizeLinear, DynamicQuantizeLinear,
// the integer matmul and convolution (per-row/per-channel zero points, int8 and uint8), the
// QLinear requantization, and MatMulNBits' GEMV and tiled kernels against a dequantize-then-
// matmul reference. Outputs are read into poisoned host memory.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>

#include "gpu_test.h"
#include "quant_runner.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {
namespace {

class QuantTest : public GpuTest {};

TEST_F(QuantTest, QuantizeRoundsHalfToEvenAndSaturates) {
  const std::vector<float> x = {0.5f,  1.5f,   2.5f,   -0.5f,   -1.5f,    -2.5f,     3.49f, 1e9f,
                                -1e9f, 127.5f, 126.5f, -128.5f, INFINITY, -INFINITY, NAN,   0.f};
  for (DType d : {DType::UInt8, DType::Int8}) {
    const int zero = d == DType::UInt8 ? 10 : -3;
    Runner r;
    TensorRef y = ops::quantize_linear(r.g, r.input(f32({16}, x)), r.input(f32({}, {1.f})),
                                       r.input(i32({}, {zero})), d);
    HostTensor got = r.run(y);
    std::vector<double> q(x.begin(), x.end());
    expect_quantized(got, q, std::vector<int>(x.size(), zero), d, dtype_name(d));
    // Spot checks that pin the rule itself, not only agreement with the reference.
    EXPECT_EQ(got.as_int(0), zero + 0);  // 0.5 -> 0
    EXPECT_EQ(got.as_int(2), zero + 2);  // 2.5 -> 2
    EXPECT_EQ(got.as_int(4), zero - 2);  // -1.5 -> -2
    EXPECT_EQ(got.as_int(7), qmax(d));
    EXPECT_EQ(got.as_int(8), qmin(d));
    EXPECT_EQ(got.as_int(14), zero);  // NaN
  }
}

// Ties under scales that are not powers of two: the float32 quotient x / scale (as ONNX's
// reference computes it) is exactly k + 0.5, so any division error would round it the wrong
// way. Exact agreement, no near-tie allowance.
TEST_F(QuantTest, QuantizeTiesWithInexactScales) {
  for (float scale : {3.f, 0.1f, 0.3f, 7.f}) {
    std::vector<float> x;
    for (int k = -20; k <= 20; ++k) x.push_back((float(k) + 0.5f) * scale);
    std::vector<float> noise = random_floats(200, -30.f, 30.f);
    x.insert(x.end(), noise.begin(), noise.end());
    Runner r;
    TensorRef y = ops::quantize_linear(r.g, r.input(f32({int64_t(x.size())}, x)),
                                       r.input(f32({}, {scale})), std::nullopt, DType::Int8);
    HostTensor got = r.run(y);
    for (size_t i = 0; i < x.size(); ++i) {
      const float q = x[i] / scale;
      ASSERT_EQ(got.as_int(int64_t(i)), quantize_ref(q, 0, DType::Int8))
          << "x " << x[i] << " / " << scale << " = " << q;
    }
  }
}

TEST_F(QuantTest, QuantizePerAxisAndBlockedRandom) {
  const Shape shape = {2, 3, 5, 4};
  std::vector<float> x = random_floats(numel(shape), -40.f, 40.f);
  for (DType d : {DType::UInt8, DType::Int8}) {
    // Per axis 1 (channels).
    std::vector<float> scale = {0.25f, 0.3f, 0.17f};
    std::vector<int> zeros = random_ints(rng, 3, qmin(d) + 20, qmax(d) - 20);
    {
      Runner r;
      TensorRef zp = r.input(bytes(d, {3}, zeros));
      TensorRef y = ops::quantize_linear(r.g, r.input(f32(shape, x)), r.input(f32({3}, scale)), zp,
                                         d, {1, 0});
      std::vector<double> q;
      std::vector<int> z;
      for (int64_t i = 0; i < numel(shape); ++i) {
        int c = static_cast<int>(i / 20 % 3);
        q.push_back(double(x[i]) / scale[c]);
        z.push_back(zeros[c]);
      }
      expect_quantized(r.run(y), q, z, d, std::string("per axis ") + dtype_name(d));
    }
    // Blocked along axis 2 (length 5) in blocks of 2: the scale is [2, 3, 3, 4].
    {
      const Shape sshape = {2, 3, 3, 4};
      std::vector<float> bscale = random_floats(numel(sshape), 0.05f, 0.5f);
      std::vector<int> bzero = random_ints(rng, numel(sshape), qmin(d), qmax(d));
      Runner r;
      TensorRef y = ops::quantize_linear(r.g, r.input(f32(shape, x)), r.input(f32(sshape, bscale)),
                                         r.input(bytes(d, sshape, bzero)), d, {-2, 2});
      std::vector<double> q;
      std::vector<int> z;
      for (int64_t i = 0; i < numel(shape); ++i) {
        int64_t w = i % 4, h = i / 4 % 5, c = i / 20 % 3, n = i / 60;
        int64_t j = ((n * 3 + c) * 3 + h / 2) * 4 + w;
        q.push_back(double(x[i]) / bscale[j]);
        z.push_back(bzero[j]);
      }
      expect_quantized(r.run(y), q, z, d, std::string("blocked ") + dtype_name(d));
    }
  }
}

TEST_F(QuantTest, DequantizePerTensorPerAxisAndWidened) {
  const Shape shape = {4, 3, 7};
  for (DType d : {DType::UInt8, DType::Int8}) {
    std::vector<int> x = random_ints(rng, numel(shape), qmin(d), qmax(d));
    std::vector<int> zeros = random_ints(rng, 3, qmin(d), qmax(d));
    std::vector<float> scale = {0.5f, 0.031f, 2.75f};
    for (bool widened : {false, true}) {
      Runner r;
      std::vector<int32_t> xi(x.begin(), x.end());
      TensorRef xt = widened ? r.input(i32(shape, xi)) : r.input(bytes(d, shape, x));
      TensorRef y = ops::dequantize_linear(r.g, xt, r.input(f32({3}, scale)),
                                           r.input(bytes(d, {3}, zeros)), {1, 0});
      HostTensor got = r.run(y);
      for (int64_t i = 0; i < numel(shape); ++i) {
        int c = static_cast<int>(i / 7 % 3);
        ASSERT_EQ(got.data<float>()[i], float(x[i] - zeros[c]) * scale[c]) << i;
      }
    }
    // Per tensor, no zero point.
    Runner r;
    TensorRef y = ops::dequantize_linear(r.g, r.input(bytes(d, shape, x)), r.input(f32({}, {0.1f})),
                                         std::nullopt);
    HostTensor got = r.run(y);
    for (int64_t i = 0; i < numel(shape); ++i) ASSERT_EQ(got.data<float>()[i], float(x[i]) * 0.1f);
  }
}

TEST_F(QuantTest, ConvertWrapsAndWidens) {
  Runner r;
  TensorRef x = r.input(i32({6}, {-129, -128, -1, 0, 255, 300}));
  TensorRef u = ops::convert_quantized(r.g, x, DType::UInt8);
  TensorRef s = ops::cast(r.g, u, DType::Int8);
  auto out = r.run({ops::cast(r.g, u, DType::Int32), ops::convert_quantized(r.g, s, DType::Int32)});
  const std::vector<int> want_u = {127, 128, 255, 0, 255, 44}, want_s = {127, -128, -1, 0, -1, 44};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(out[0].data<int32_t>()[i], want_u[i]) << i;
    EXPECT_EQ(out[1].data<int32_t>()[i], want_s[i]) << i;
  }
}

TEST_F(QuantTest, DynamicQuantizeMatchesReference) {
  // The last size takes more chunks than the range pass has workgroups (1024 of 4096 elements),
  // with the extremes in the last ones.
  constexpr size_t kBeyondOnePass = 1024 * 4096 + 3001;
  for (auto [n, lo, hi] :
       {std::tuple{size_t{20000}, -3.f, 5.f}, std::tuple{size_t{37}, 0.5f, 4.f},
        std::tuple{size_t{1000}, -7.f, -1.f}, std::tuple{kBeyondOnePass, -1.f, 1.f}}) {
    std::vector<float> x = random_floats(n, lo, hi);
    if (n == kBeyondOnePass) x[n - 2] = -9.f, x[n - 1500] = 6.f;
    Runner r;
    ops::DynamicQuantized q = ops::dynamic_quantize_linear(r.g, r.input(f32({int64_t(n)}, x)));
    auto out = r.run({q.y, q.scale, q.zero_point});
    float mn = 0.f, mx = 0.f;
    for (float v : x) mn = std::min(mn, v), mx = std::max(mx, v);
    const float scale = (mx - mn) / 255.f;
    EXPECT_EQ(out[1].data<float>()[0], scale);
    const int zero = quantize_ref(double(-mn / scale), 0, DType::UInt8);
    EXPECT_EQ(out[2].dtype, DType::UInt8);
    EXPECT_EQ(out[2].as_int(0), zero);
    std::vector<double> quot;
    for (float v : x) quot.push_back(double(v) / scale);
    expect_quantized(out[0], quot, std::vector<int>(n, zero), DType::UInt8, "y");
  }
  // NaN elements do not count in the range (ONNX leaves them undefined; LayerNormRange's
  // partials take the same rule, OpsNorm.LayerNormWithRangeIsLayerNormsRange).
  {
    std::vector<float> x = random_floats(5000, -2.f, 3.f);
    x[0] = x[777] = x[4999] = NAN;
    Runner r;
    ops::DynamicQuantized q = ops::dynamic_quantize_linear(r.g, r.input(f32({5000}, x)));
    auto out = r.run({q.y, q.scale, q.zero_point});
    float mn = 0.f, mx = 0.f;
    for (float v : x)
      if (!std::isnan(v)) mn = std::min(mn, v), mx = std::max(mx, v);
    const float scale = (mx - mn) / 255.f;
    EXPECT_EQ(out[1].data<float>()[0], scale);
    EXPECT_EQ(out[2].as_int(0), quantize_ref(double(-mn / scale), 0, DType::UInt8));
  }
  // All zeros: scale 0, zero point 0, y 0.
  Runner r;
  ops::DynamicQuantized q = ops::dynamic_quantize_linear(r.g, r.input(f32({5}, {0, 0, 0, 0, 0})));
  auto out = r.run({q.y, q.scale, q.zero_point});
  EXPECT_EQ(out[1].data<float>()[0], 0.f);
  EXPECT_EQ(out[2].as_int(0), 0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[0].as_int(i), 0);
}

// Integer matmul reference over a [batch][M, K] x [batch][K, N] problem (no broadcasting),
// zero points per row of a / per column of b (size 1: per tensor).
TEST_F(QuantTest, MatMulIntegerRandom) {
  struct Case {
    DType da, db;
    int64_t batch, m, k, n;
    bool b_batched, per_row;
  };
  for (const Case& c : {Case{DType::UInt8, DType::Int8, 3, 37, 50, 70, false, true},
                        Case{DType::Int8, DType::UInt8, 2, 17, 33, 65, true, false},
                        Case{DType::Int8, DType::Int8, 1, 1, 200, 9, false, true},
                        Case{DType::UInt8, DType::UInt8, 2, 64, 16, 64, true, true}}) {
    auto a = random_ints(rng, c.batch * c.m * c.k, qmin(c.da), qmax(c.da));
    auto b = random_ints(rng, (c.b_batched ? c.batch : 1) * c.k * c.n, qmin(c.db), qmax(c.db));
    auto za = random_ints(rng, c.per_row ? c.m : 1, qmin(c.da), qmax(c.da));
    auto zb = random_ints(rng, c.per_row ? c.n : 1, qmin(c.db), qmax(c.db));
    Runner r;
    Shape sb = c.b_batched ? Shape{c.batch, c.k, c.n} : Shape{c.k, c.n};
    TensorRef y = ops::matmul_integer(
        r.g, r.input(bytes(c.da, {c.batch, c.m, c.k}, a)), r.input(bytes(c.db, sb, b)),
        r.input(bytes(c.da, {int64_t(za.size())}, za)),
        r.input(i32({int64_t(zb.size())}, std::vector<int32_t>(zb.begin(), zb.end()))));
    HostTensor got = r.run(y);
    ASSERT_EQ(got.shape, (Shape{c.batch, c.m, c.n}));
    auto want = matmul_ref(a, b, c.batch, c.m, c.k, c.n, za, zb, c.b_batched);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got.data<int32_t>()[i], want[i]) << i;
  }
}

TEST_F(QuantTest, QLinearMatMulRequantizesPerColumn) {
  const int64_t m = 19, k = 41, n = 23;
  for (DType out : {DType::UInt8, DType::Int8}) {
    auto a = random_ints(rng, m * k, 0, 255);
    auto b = random_ints(rng, k * n, -128, 127);
    std::vector<float> sb = random_floats(n, 0.002f, 0.01f);
    const float sa = 0.02f, sy = 0.05f;
    const int za = 131, zy = out == DType::UInt8 ? 120 : -5;
    auto zb = random_ints(rng, n, -10, 10);
    Runner r;
    ops::QuantizedOperand qa{r.input(bytes(DType::UInt8, {m, k}, a)), r.input(f32({}, {sa})),
                             r.input(bytes(DType::UInt8, {}, {za}))};
    ops::QuantizedOperand qb{r.input(bytes(DType::Int8, {k, n}, b)), r.input(f32({n}, sb)),
                             r.input(bytes(DType::Int8, {n}, zb))};
    ops::QuantizedOperand qy{TensorRef{}, r.input(f32({}, {sy})), r.input(bytes(out, {}, {zy}))};
    HostTensor got = r.run(ops::qlinear_matmul(r.g, qa, qb, qy, out));
    auto acc = matmul_ref(a, b, 1, m, k, n, {za}, zb, false);
    std::vector<double> q;
    for (int64_t i = 0; i < m * n; ++i) q.push_back(double(acc[i]) * sa * sb[i % n] / sy);
    expect_quantized(got, q, std::vector<int>(m * n, zy), out, dtype_name(out));
  }
}

TEST_F(QuantTest, ConvIntegerAndQLinearConvRandom) {
  for (const ConvCase& p : {ConvCase{2, 6, 9, 8, 4, 3, 2, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}},
                            ConvCase{1, 3, 12, 11, 70, 3, 3, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                            ConvCase{1, 1, 1, 30, 5, 1, 4, 1, {1, 3}, {1, 1}, {0, 2, 0, 1}}}) {
    auto x = random_ints(rng, p.n * p.c * p.h * p.w, 0, 255);
    auto w = random_ints(rng, p.m * (p.c / p.groups) * p.kh * p.kw, -128, 127);
    const int zx = 117;
    auto zw = random_ints(rng, p.m, -4, 4);
    ops::IntConvParams cp{p.stride, p.pads, p.dil, p.groups};
    Shape out;
    auto acc = conv_ref(p, x, w, zx, zw, out);
    {
      Runner r;
      TensorRef y = ops::conv_integer(
          r.g, r.input(bytes(DType::UInt8, {p.n, p.c, p.h, p.w}, x)),
          r.input(bytes(DType::Int8, {p.m, p.c / p.groups, p.kh, p.kw}, w)),
          r.input(bytes(DType::UInt8, {}, {zx})), r.input(bytes(DType::Int8, {p.m}, zw)), cp);
      HostTensor got = r.run(y);
      ASSERT_EQ(got.shape, out);
      for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(got.data<int32_t>()[i], acc[i]) << i;
    }
    {
      std::vector<float> sw = random_floats(p.m, 0.001f, 0.01f);
      auto bias = random_ints(rng, p.m, -3000, 3000);
      const float sx = 0.03f, sy = 0.07f;
      Runner r;
      ops::QuantizedOperand qx{r.input(bytes(DType::UInt8, {p.n, p.c, p.h, p.w}, x)),
                               r.input(f32({}, {sx})), r.input(bytes(DType::UInt8, {}, {zx}))};
      ops::QuantizedOperand qw{r.input(bytes(DType::Int8, {p.m, p.c / p.groups, p.kh, p.kw}, w)),
                               r.input(f32({p.m}, sw)), r.input(bytes(DType::Int8, {p.m}, zw))};
      ops::QuantizedOperand qy{TensorRef{}, r.input(f32({}, {sy})),
                               r.input(bytes(DType::Int8, {}, {3}))};
      TensorRef bt = r.input(i32({p.m}, std::vector<int32_t>(bias.begin(), bias.end())));
      HostTensor got = r.run(ops::qlinear_conv(r.g, qx, qw, qy, bt, cp, DType::Int8));
      std::vector<double> q;
      const int64_t plane = out[2] * out[3];
      for (size_t i = 0; i < acc.size(); ++i) {
        int64_t oc = int64_t(i) / plane % p.m;
        q.push_back(double(acc[i] + bias[oc]) * sx * sw[oc] / sy);
      }
      expect_quantized(got, q, std::vector<int>(acc.size(), 3), DType::Int8, "qlinear_conv");
    }
  }
}

TEST_F(QuantTest, ConvInteger1D) {
  ConvCase p{2, 4, 1, 19, 3, 1, 3, 1, {1, 2}, {1, 2}, {0, 1, 0, 2}};
  auto x = random_ints(rng, p.n * p.c * p.w, -128, 127);
  auto w = random_ints(rng, p.m * p.c * p.kw, -128, 127);
  Shape out;
  auto acc = conv_ref(p, x, w, -7, {2}, out);
  Runner r;
  ops::IntConvParams cp;
  cp.strides = {2, 1};
  cp.dilations = {2, 1};
  cp.pads = {1, 2, 0, 0};
  TensorRef y = ops::conv_integer(r.g, r.input(bytes(DType::Int8, {p.n, p.c, p.w}, x)),
                                  r.input(bytes(DType::Int8, {p.m, p.c, p.kw}, w)),
                                  r.input(bytes(DType::Int8, {}, {-7})),
                                  r.input(bytes(DType::Int8, {}, {2})), cp);
  HostTensor got = r.run(y);
  ASSERT_EQ(got.shape, (Shape{p.n, p.m, out[3]}));
  for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(got.data<int32_t>()[i], acc[i]) << i;
}

// The QDQ Add kernel (ops::qlinear_add) on every pair of 8-bit values, exactly against
// onnxruntime's QLinearAdd arithmetic in float32 (what quantized models are checked against):
// scale ratios to the output scale, a folded constant zy - fma(ra, za, rb zb), and
// fma(a, ra, fma(b, rb, constant)) rounded half to even; and within one step of the exact
// real-valued DequantizeLinear-Add-QuantizeLinear. Mixed signedness, a Relu-narrowed range and
// decimal scales (inexact in float32) whose real sums often lie on a tie, where the two
// arithmetics part.
TEST_F(QuantTest, QLinearAddIsOnnxruntimeArithmetic) {
  struct Case {
    DType a, b, y;
    float sa, sb, sy;
    int za, zb, zy;
    std::optional<std::array<int32_t, 2>> range;
  };
  const std::vector<Case> cases = {
      {DType::UInt8, DType::UInt8, DType::UInt8, 0.031f, 0.047f, 0.058f, 101, 37, 131, {}},
      {DType::UInt8, DType::Int8, DType::UInt8, 0.02f, 0.03f, 0.04f, 0, -3, 0, {{0, 255}}},
      {DType::Int8, DType::UInt8, DType::Int8, 0.1f, 0.3f, 0.2f, 5, 200, -9, {}},
      {DType::Int8, DType::Int8, DType::UInt8, 0.009f, 0.012f, 0.006f, -1, 2, 97, {{97, 255}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.a)) + " + " + dtype_name(c.b) + " -> " + dtype_name(c.y));
    std::vector<int> av, bv;  // every pair of raw values
    for (int a = qmin(c.a); a <= qmax(c.a); ++a)
      for (int b = qmin(c.b); b <= qmax(c.b); ++b) {
        av.push_back(a);
        bv.push_back(b);
      }
    const int64_t n = static_cast<int64_t>(av.size());
    Runner r;
    auto operand = [&](DType d, const std::vector<int>& v, float s, int z) {
      return ops::QuantizedOperand{r.input(bytes(d, {n}, v)), r.input(f32({}, {s})),
                                   r.input(bytes(d, {}, {z}))};
    };
    const ops::QuantizedOperand y_params{TensorRef{}, r.input(f32({}, {c.sy})),
                                         r.input(bytes(c.y, {}, {c.zy}))};
    HostTensor got = r.run(ops::qlinear_add(r.g, operand(c.a, av, c.sa, c.za),
                                            operand(c.b, bv, c.sb, c.zb), y_params, c.y, c.range));
    const int lo = c.range ? (*c.range)[0] : qmin(c.y), hi = c.range ? (*c.range)[1] : qmax(c.y);
    const float ra = c.sa / c.sy, rb = c.sb / c.sy;
    const float zb_part = rb * float(c.zb);
    const float folded = float(c.zy) - std::fma(ra, float(c.za), zb_part);
    int bad = 0, near_ties = 0, far = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float v = std::fma(float(av[i]), ra, std::fma(float(bv[i]), rb, folded));
      const int want = std::clamp(static_cast<int>(std::nearbyint(v)), lo, hi);
      const double exact =
          ((av[i] - c.za) * double(c.sa) + (bv[i] - c.zb) * double(c.sb)) / double(c.sy) + c.zy;
      near_ties += std::abs(std::abs(exact - std::floor(exact)) - 0.5) < 1e-4;
      const int got_i = static_cast<int>(got.as_int(i));
      if (got_i != want && bad++ < 5)
        ADD_FAILURE() << "a " << av[i] << " b " << bv[i] << ": got " << got_i << ", want " << want;
      far += std::abs(got_i - std::clamp(static_cast<int>(std::nearbyint(exact)), lo, hi)) > 1;
    }
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(far, 0) << "more than one step from the exact sum";
    EXPECT_GT(near_ties, 0) << "the case should put some sums near a rounding tie";
  }
}

TEST_F(QuantTest, QuantErrorsNameTheProblem) {
  ComputeGraph g(context());
  TensorRef x = g.add_input({2, 3}, DType::Float32, "x");
  TensorRef s = g.add_input({4}, DType::Float32, "s");
  expect_error(
      [&] {
        ops::quantize_linear(g, x, s, std::nullopt, DType::UInt8, {1, 0});
      },
      ErrorKind::InvalidArgument, {"quantize_linear", "per-axis scale", "length 3"});
  expect_error([&] { ops::quantize_linear(g, x, s, std::nullopt, DType::Int32); },
               ErrorKind::Unsupported, {"int8 or uint8"});
  TensorRef a = g.add_input({2, 3}, DType::UInt8, "a");
  TensorRef b = g.add_input({4, 3}, DType::UInt8, "b");
  expect_error([&] { ops::matmul_integer(g, a, b); }, ErrorKind::InvalidArgument,
               {"matmul_integer", "inner dims"});
  expect_error([&] { ops::matmul_integer(g, x, b); }, ErrorKind::Unsupported,
               {"matmul_integer", "float32", "int8 or uint8"});
}

}  // namespace
}  // namespace vkgraph::testing

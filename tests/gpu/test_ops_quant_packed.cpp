// The packed integer GEMM (src/ops/quant_packed.*) behind ConvInteger / QLinearConv and
// MatMulInteger / QLinearMatMul with constant weights, against exact integer references:
// every tile, the split-K pass and its reduce, with and without the dot-product instructions
// (forced by tuning knobs; the dispatch labels say which variant ran), zero points of either
// sign and zero (which turns the data sums off), int8 and uint8 on both sides, K not a
// multiple of 4, groups, 1x1 convolutions and the depthwise kernel.
#include "quant_runner.h"
#include "vkgraph/ops.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {
namespace {

class QuantPackedTest : public GpuTest {
 protected:
  // The kernel configurations to force: each tile unsplit, the small tile split in 3, each
  // with the dot-product instructions off and (where the device has them) on.
  struct Config {
    uint32_t tile, splits, dot;
  };
  std::vector<Config> configs() {
    std::vector<Config> r;
    std::vector<uint32_t> dots = {0};
    if (context()->features().integer_dot_product) dots.push_back(1);
    for (uint32_t dot : dots)
      for (Config c : {Config{64, 1, 0}, Config{32, 1, 0}, Config{32, 3, 0}}) {
        c.dot = dot;
        r.push_back(c);
      }
    return r;
  }
  static GraphOptions options(const Config& c) {
    GraphOptions go;
    auto tuning = std::make_shared<ops::Tuning>();
    tuning->knobs["qgemm.tile"] = c.tile;
    tuning->knobs["qgemm.splits"] = c.splits;
    tuning->knobs["qgemm.dot"] = c.dot;
    // The tensor-core kernels (the default where the device has them) have a test of their own
    // (CoopmatVariantsMatchIntegerReference); these configurations name the packed kernels.
    tuning->knobs["qgemm.coopmat"] = 0;
    go.tuning = tuning;
    go.profile = true;
    return go;
  }
  // Whether one of the graph's dispatches is labelled with `what`.
  static bool ran(Runner& r, const std::string& what) {
    for (const NodeTime& t : r.g.node_times())
      if (t.label.find(what) != std::string::npos) return true;
    return false;
  }
  // The label fragment the packed GEMM's dispatch must carry under `c` for depth k.
  static std::string expected_label(const Config& c, int64_t k) {
    const int64_t k4 = (k + 3) / 4 * 4;
    // Forced splits that leave more than one slice of 32 after rounding.
    const int64_t depth = ((k4 + c.splits - 1) / c.splits + 31) / 32 * 32;
    const bool split = c.splits > 1 && (k4 + depth - 1) / depth > 1;
    std::string s = "(packed " + std::to_string(split ? 32 : c.tile) + (c.dot ? " dot" : "");
    if (split) s += " split";
    return s;
  }
  std::mt19937 rng{1234};
};

struct PackedConvCase {
  ConvCase shape;
  DType x_type, w_type;
  bool zero_w_zero;  // all weight zero points 0: no data sums
};

TEST_F(QuantPackedTest, ConvMatchesIntegerReference) {
  const std::vector<PackedConvCase> cases = {
      {{2, 6, 9, 8, 4, 3, 2, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}}, DType::UInt8, DType::Int8, false},
      {{1, 16, 7, 6, 40, 3, 3, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}}, DType::Int8, DType::Int8, true},
      {{2, 20, 5, 7, 24, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}}, DType::UInt8, DType::UInt8, false},
      {{1, 64, 5, 5, 10, 3, 3, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}}, DType::UInt8, DType::Int8, false},
      {{1, 1, 1, 30, 5, 1, 4, 1, {1, 3}, {1, 1}, {0, 2, 0, 1}}, DType::Int8, DType::UInt8, false}};
  // Lavapipe compiles every variant slowly, so each configuration runs the 1x1 case (the only
  // pointwise one) and one other in turn: a deep one (K > 64) where it splits.
  const std::vector<Config> all = configs();
  for (size_t ci = 0; ci < all.size(); ++ci) {
    const Config& cfg = all[ci];
    const size_t other = cfg.splits > 1 ? (ci % 2 ? 1 : 3) : (ci % 2 ? 0 : 4);
    for (size_t index : {size_t{2}, other}) {
      const PackedConvCase& pc = cases[index];
      const ConvCase& p = pc.shape;
      const int64_t k = p.c / p.groups * p.kh * p.kw;
      SCOPED_TRACE("tile " + std::to_string(cfg.tile) + " splits " + std::to_string(cfg.splits) +
                   " dot " + std::to_string(cfg.dot) + " k " + std::to_string(k));
      auto x = random_ints(rng, p.n * p.c * p.h * p.w, qmin(pc.x_type), qmax(pc.x_type));
      auto w = random_ints(rng, p.m * k, qmin(pc.w_type), qmax(pc.w_type));
      const int zx = pc.x_type == DType::UInt8 ? 119 : -9;
      auto zw = pc.zero_w_zero ? std::vector<int>(p.m, 0)
                               : random_ints(rng, p.m, qmin(pc.w_type), qmin(pc.w_type) + 9);
      ops::IntConvParams cp{p.stride, p.pads, p.dil, p.groups};
      Shape out;
      auto acc = conv_ref(p, x, w, zx, zw, out);
      const Shape xs = {p.n, p.c, p.h, p.w}, ws = {p.m, p.c / p.groups, p.kh, p.kw};
      {
        Runner r(options(cfg));
        TensorRef y = ops::conv_integer(
            r.g, r.input(bytes(pc.x_type, xs, x)), r.constant(bytes(pc.w_type, ws, w)),
            r.input(bytes(pc.x_type, {}, {zx})), r.constant(bytes(pc.w_type, {p.m}, zw)), cp);
        HostTensor got = r.run(y);
        ASSERT_EQ(got.shape, out);
        EXPECT_TRUE(ran(r, expected_label(cfg, k)));
        for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(got.data<int32_t>()[i], acc[i]) << i;
      }
      std::vector<float> sw = random_floats(p.m, 0.0005f, 0.004f);
      auto bias = random_ints(rng, p.m, -3000, 3000);
      const float sx = 0.03f, sy = 0.11f;
      {
        const DType out_type = pc.x_type;  // both output types over the cases
        const int zy = out_type == DType::UInt8 ? 100 : 3;
        Runner r(options(cfg));
        ops::QuantizedOperand qx{r.input(bytes(pc.x_type, xs, x)), r.input(f32({}, {sx})),
                                 r.input(bytes(pc.x_type, {}, {zx}))};
        ops::QuantizedOperand qw{r.constant(bytes(pc.w_type, ws, w)), r.input(f32({p.m}, sw)),
                                 r.constant(bytes(pc.w_type, {p.m}, zw))};
        ops::QuantizedOperand qy{TensorRef{}, r.input(f32({}, {sy})),
                                 r.input(bytes(out_type, {}, {zy}))};
        TensorRef bt = r.input(i32({p.m}, std::vector<int32_t>(bias.begin(), bias.end())));
        HostTensor got = r.run(ops::qlinear_conv(r.g, qx, qw, qy, bt, cp, out_type));
        EXPECT_TRUE(ran(r, expected_label(cfg, k)));
        std::vector<double> q;
        const int64_t plane = out[2] * out[3];
        for (size_t i = 0; i < acc.size(); ++i) {
          int64_t oc = int64_t(i) / plane % p.m;
          q.push_back(double(acc[i] + bias[oc]) * sx * sw[oc] / sy);
        }
        expect_quantized(got, q, std::vector<int>(acc.size(), zy), out_type, "qlinear_conv");
      }
    }
  }
}

// Depthwise convolutions (one input channel per group, channel multiplier 1 and 2) take their
// own kernel, which reads the weights as stored, constant or not.
TEST_F(QuantPackedTest, DepthwiseConvMatchesIntegerReference) {
  for (const ConvCase& p : {ConvCase{1, 8, 9, 9, 8, 3, 3, 8, {2, 2}, {1, 1}, {1, 1, 1, 1}},
                            ConvCase{2, 3, 6, 7, 6, 3, 2, 3, {1, 1}, {2, 1}, {2, 0, 1, 1}}}) {
    auto x = random_ints(rng, p.n * p.c * p.h * p.w, 0, 255);
    auto w = random_ints(rng, p.m * p.kh * p.kw, -128, 127);
    auto zw = random_ints(rng, p.m, -5, 5);
    const int zx = 128;
    ops::IntConvParams cp{p.stride, p.pads, p.dil, p.groups};
    Shape out;
    auto acc = conv_ref(p, x, w, zx, zw, out);
    GraphOptions go;
    go.profile = true;
    Runner r(go);
    TensorRef y = ops::conv_integer(r.g, r.input(bytes(DType::UInt8, {p.n, p.c, p.h, p.w}, x)),
                                    r.input(bytes(DType::Int8, {p.m, 1, p.kh, p.kw}, w)),
                                    r.input(bytes(DType::UInt8, {}, {zx})),
                                    r.input(bytes(DType::Int8, {p.m}, zw)), cp);
    HostTensor got = r.run(y);
    ASSERT_EQ(got.shape, out);
    EXPECT_TRUE(ran(r, "(depthwise)"));
    for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(got.data<int32_t>()[i], acc[i]) << i;

    std::vector<float> sw = random_floats(p.m, 0.001f, 0.01f);
    auto bias = random_ints(rng, p.m, -2000, 2000);
    Runner rq(go);
    ops::QuantizedOperand qx{rq.input(bytes(DType::UInt8, {p.n, p.c, p.h, p.w}, x)),
                             rq.input(f32({}, {0.02f})), rq.input(bytes(DType::UInt8, {}, {zx}))};
    ops::QuantizedOperand qw{rq.constant(bytes(DType::Int8, {p.m, 1, p.kh, p.kw}, w)),
                             rq.input(f32({p.m}, sw)), rq.constant(bytes(DType::Int8, {p.m}, zw))};
    ops::QuantizedOperand qy{TensorRef{}, rq.input(f32({}, {0.05f})),
                             rq.input(bytes(DType::UInt8, {}, {90}))};
    TensorRef bt = rq.input(i32({p.m}, std::vector<int32_t>(bias.begin(), bias.end())));
    HostTensor gq = rq.run(ops::qlinear_conv(rq.g, qx, qw, qy, bt, cp, DType::UInt8));
    std::vector<double> q;
    const int64_t plane = out[2] * out[3];
    for (size_t i = 0; i < acc.size(); ++i) {
      int64_t oc = int64_t(i) / plane % p.m;
      q.push_back(double(acc[i] + bias[oc]) * 0.02f * sw[oc] / 0.05f);
    }
    expect_quantized(gq, q, std::vector<int>(acc.size(), 90), DType::UInt8, "depthwise");
  }
}

TEST_F(QuantPackedTest, MatMulMatchesIntegerReference) {
  struct Case {
    DType da, db;
    int64_t batch, m, k, n;
    bool per_row, zero_b_zero;
  };
  const std::vector<Case> cases = {{DType::UInt8, DType::Int8, 2, 37, 72, 70, true, false},
                                   {DType::Int8, DType::UInt8, 1, 5, 256, 9, false, false},
                                   {DType::UInt8, DType::Int8, 1, 64, 16, 64, false, true},
                                   {DType::Int8, DType::Int8, 3, 7, 132, 33, true, true}};
  // Two cases per configuration in turn (see ConvMatchesIntegerReference); case 1 (K = 256)
  // with every split configuration.
  const std::vector<Config> all = configs();
  for (size_t ci = 0; ci < all.size(); ++ci) {
    const Config& cfg = all[ci];
    for (size_t index : {cfg.splits > 1 ? size_t{1}
                         : ci % 2       ? size_t{1}
                                        : size_t{2},
                         ci % 2 ? size_t{0} : size_t{3}}) {
      const Case& c = cases[index];
      SCOPED_TRACE("tile " + std::to_string(cfg.tile) + " splits " + std::to_string(cfg.splits) +
                   " dot " + std::to_string(cfg.dot) + " k " + std::to_string(c.k));
      auto a = random_ints(rng, c.batch * c.m * c.k, qmin(c.da), qmax(c.da));
      auto b = random_ints(rng, c.k * c.n, qmin(c.db), qmax(c.db));
      auto za = random_ints(rng, c.per_row ? c.m : 1, qmin(c.da), qmax(c.da));
      auto zb =
          c.zero_b_zero ? std::vector<int>(c.n, 0) : random_ints(rng, c.n, qmin(c.db), qmax(c.db));
      auto acc = matmul_ref(a, b, c.batch, c.m, c.k, c.n, za, zb, false);
      {
        Runner r(options(cfg));
        TensorRef y = ops::matmul_integer(r.g, r.input(bytes(c.da, {c.batch, c.m, c.k}, a)),
                                          r.constant(bytes(c.db, {c.k, c.n}, b)),
                                          r.input(bytes(c.da, {int64_t(za.size())}, za)),
                                          r.constant(bytes(c.db, {c.n}, zb)));
        HostTensor got = r.run(y);
        ASSERT_EQ(got.shape, (Shape{c.batch, c.m, c.n}));
        EXPECT_TRUE(ran(r, expected_label(cfg, c.k)));
        for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(got.data<int32_t>()[i], acc[i]) << i;
      }
      if (c.per_row) continue;  // QLinearMatMul's a zero point is per tensor here
      std::vector<float> sb = random_floats(c.n, 0.001f, 0.006f);
      const float sa = 0.02f, sy = 0.09f;
      Runner r(options(cfg));
      ops::QuantizedOperand qa{r.input(bytes(c.da, {c.batch, c.m, c.k}, a)), r.input(f32({}, {sa})),
                               r.input(bytes(c.da, {}, za))};
      ops::QuantizedOperand qb{r.constant(bytes(c.db, {c.k, c.n}, b)), r.input(f32({c.n}, sb)),
                               r.constant(bytes(c.db, {c.n}, zb))};
      ops::QuantizedOperand qy{TensorRef{}, r.input(f32({}, {sy})),
                               r.input(bytes(DType::Int8, {}, {-4}))};
      HostTensor got = r.run(ops::qlinear_matmul(r.g, qa, qb, qy, DType::Int8));
      EXPECT_TRUE(ran(r, expected_label(cfg, c.k)));
      std::vector<double> q;
      for (size_t i = 0; i < acc.size(); ++i) q.push_back(double(acc[i]) * sa * sb[i % c.n] / sy);
      expect_quantized(got, q, std::vector<int>(acc.size(), -4), DType::Int8, "qlinear_matmul");
    }
  }
}

// Where the packed kernel does not apply (weights computed on the device, K not a multiple of
// 4, knob qgemm.packed = 0) the portable kernel still gives the exact sums.
TEST_F(QuantPackedTest, FallsBackWhereItDoesNotApply) {
  const int64_t m = 9, k = 50, n = 11;
  auto a = random_ints(rng, m * k, 0, 255);
  auto b = random_ints(rng, k * n, -128, 127);
  auto acc = matmul_ref(a, b, 1, m, k, n, {7}, {-3}, false);
  for (int mode = 0; mode < 3; ++mode) {
    GraphOptions go;
    go.profile = true;
    auto tuning = std::make_shared<ops::Tuning>();
    if (mode == 2) tuning->knobs["qgemm.packed"] = 0;
    go.tuning = tuning;
    const int64_t kk = mode == 1 ? 48 : k;  // mode 1: a device weight, K a multiple of 4
    std::vector<int> a2, b2;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < kk; ++j) a2.push_back(a[i * k + j]);
    b2.assign(b.begin(), b.begin() + kk * n);
    auto want = mode == 1 ? matmul_ref(a2, b2, 1, m, kk, n, {7}, {-3}, false) : acc;
    Runner r(go);
    TensorRef bt = mode == 1 ? r.input(bytes(DType::Int8, {kk, n}, b2))
                             : r.constant(bytes(DType::Int8, {kk, n}, b2));
    TensorRef y = ops::matmul_integer(r.g, r.input(bytes(DType::UInt8, {m, kk}, a2)), bt,
                                      r.input(bytes(DType::UInt8, {}, {7})),
                                      r.constant(bytes(DType::Int8, {}, {-3})));
    HostTensor got = r.run(y);
    EXPECT_FALSE(ran(r, "(packed")) << mode;
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got.data<int32_t>()[i], want[i]) << i;
  }
}

// The int8 tensor-core variants (knob qgemm.coopmat): symmetric weights (int8 with zero point 0,
// uint8 with 128, packed as w - 128), uint8 and int8 data (flipped to d - 128 as staged), every
// tile and the split partials, against exact integer sums and the requantized outputs. Mode 2
// runs their emulation (staging, thread layout and epilogue; plain sums) on any device; mode 1
// the tensor cores, only where the device lists an int8 shape (the H200; skipped on lavapipe).
TEST_F(QuantPackedTest, CoopmatVariantsMatchIntegerReference) {
  for (uint32_t mode : {2u, 1u}) {
    if (mode == 1 &&
        (context()->features().coopmat_s8_n == 0 || context()->features().subgroup_size != 32))
      continue;
    const std::string label = mode == 2 ? " coopmat emulated" : " coopmat";
    for (Config cfg : {Config{64, 1, 0}, Config{32, 1, 0}, Config{32, 3, 0}}) {
      GraphOptions go = options(cfg);
      std::const_pointer_cast<ops::Tuning>(go.tuning)->knobs["qgemm.coopmat"] = mode;
      // A 3x3 convolution (uint8 x, int8 w) and a 1x1 one (int8 x, uint8 w with zero point 128).
      for (int ci = 0; ci < 2; ++ci) {
        const ConvCase p = ci == 0
                               ? ConvCase{1, 24, 9, 8, 40, 3, 3, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}}
                               : ConvCase{2, 36, 5, 7, 70, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}};
        const DType xt = ci == 0 ? DType::UInt8 : DType::Int8;
        const DType wt = ci == 0 ? DType::Int8 : DType::UInt8;
        const int64_t k = p.c * p.kh * p.kw;
        SCOPED_TRACE("mode " + std::to_string(mode) + " tile " + std::to_string(cfg.tile) +
                     " splits " + std::to_string(cfg.splits) + " conv " + std::to_string(ci));
        auto x = random_ints(rng, p.n * p.c * p.h * p.w, qmin(xt), qmax(xt));
        auto w = random_ints(rng, p.m * k, qmin(wt), qmax(wt));
        const int zx = xt == DType::UInt8 ? 119 : -9;
        std::vector<int> zw(p.m, wt == DType::UInt8 ? 128 : 0);
        ops::IntConvParams cp{p.stride, p.pads, p.dil, p.groups};
        Shape out;
        auto acc = conv_ref(p, x, w, zx, zw, out);
        const Shape xs = {p.n, p.c, p.h, p.w}, ws = {p.m, p.c, p.kh, p.kw};
        Runner r(go);
        TensorRef y =
            ops::conv_integer(r.g, r.input(bytes(xt, xs, x)), r.constant(bytes(wt, ws, w)),
                              r.input(bytes(xt, {}, {zx})), r.constant(bytes(wt, {p.m}, zw)), cp);
        HostTensor got = r.run(y);
        ASSERT_EQ(got.shape, out);
        EXPECT_TRUE(ran(r, label));
        for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(got.data<int32_t>()[i], acc[i]) << i;

        std::vector<float> sw = random_floats(p.m, 0.0005f, 0.004f);
        auto bias = random_ints(rng, p.m, -3000, 3000);
        const float sx = 0.03f, sy = 0.11f;
        const int zy = xt == DType::UInt8 ? 100 : 3;
        Runner rq(go);
        ops::QuantizedOperand qx{rq.input(bytes(xt, xs, x)), rq.input(f32({}, {sx})),
                                 rq.input(bytes(xt, {}, {zx}))};
        ops::QuantizedOperand qw{rq.constant(bytes(wt, ws, w)), rq.input(f32({p.m}, sw)),
                                 rq.constant(bytes(wt, {p.m}, zw))};
        ops::QuantizedOperand qy{TensorRef{}, rq.input(f32({}, {sy})),
                                 rq.input(bytes(xt, {}, {zy}))};
        TensorRef bt = rq.input(i32({p.m}, std::vector<int32_t>(bias.begin(), bias.end())));
        HostTensor gq = rq.run(ops::qlinear_conv(rq.g, qx, qw, qy, bt, cp, xt));
        EXPECT_TRUE(ran(rq, label));
        std::vector<double> q;
        const int64_t plane = out[2] * out[3];
        for (size_t i = 0; i < acc.size(); ++i) {
          int64_t oc = int64_t(i) / plane % p.m;
          q.push_back(double(acc[i] + bias[oc]) * sx * sw[oc] / sy);
        }
        expect_quantized(gq, q, std::vector<int>(acc.size(), zy), xt, "qlinear_conv coopmat");
      }
      // A matmul with per-row data zero points, M and N not multiples of the tile.
      const int64_t m = 37, kk = 136, n = 70;
      auto a = random_ints(rng, m * kk, 0, 255);
      auto b = random_ints(rng, kk * n, -128, 127);
      auto za = random_ints(rng, m, 0, 255);
      auto want = matmul_ref(a, b, 1, m, kk, n, za, std::vector<int>(n, 0), false);
      Runner r(go);
      TensorRef y = ops::matmul_integer(
          r.g, r.input(bytes(DType::UInt8, {m, kk}, a)), r.constant(bytes(DType::Int8, {kk, n}, b)),
          r.input(bytes(DType::UInt8, {m}, za)),
          r.constant(bytes(DType::Int8, {n}, std::vector<int>(n, 0))));
      HostTensor got = r.run(y);
      EXPECT_TRUE(ran(r, label));
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got.data<int32_t>()[i], want[i]) << i;
    }
  }
}

}  // namespace
}  // namespace vkgraph::testing

// matmul, linear and gemm against a double-precision CPU reference: both kernels (tiled and
// GEMV, with either reduction), transposed and broadcast operands, 1-D promotion, bias and the
// fused activations, other tile configurations, and the shape errors.
#include <cmath>
#include <functional>
#include <string>

#include "gpu_test.h"
#include "ops/matmul_config.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {
namespace {

using ops::UnaryOp;
using ops::UnaryParams;

struct HostMat {
  Shape shape;
  std::vector<float> v;
};

// Expected values and, per element, the sum of the magnitudes that went into it: float
// rounding error grows with that sum, not with the (possibly cancelled) result.
struct Reference {
  Shape shape;
  std::vector<double> value, scale;
};

// Row-major offset in `shape` of the element that `index` (a coordinate of the broadcast
// result `out`) reads.
int64_t broadcast_offset(const Shape& shape, const Shape& out, const std::vector<int64_t>& index) {
  int64_t offset = 0, stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t d = shape.size() - 1 - i, o = out.size() - 1 - i;
    if (shape[d] != 1) offset += index[o] * stride;
    stride *= shape[d];
  }
  return offset;
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
  return index;
}

Reference reference_matmul(const HostMat& a, const HostMat& b) {
  Shape sa = a.shape, sb = b.shape;
  bool a_vector = sa.size() == 1, b_vector = sb.size() == 1;
  if (a_vector) sa.insert(sa.begin(), 1);
  if (b_vector) sb.push_back(1);
  int64_t m_dim = sa.end()[-2], k_dim = sa.back(), n_dim = sb.back();
  Shape batch = ops::broadcast_shapes(Shape(sa.begin(), sa.end() - 2),
                                      Shape(sb.begin(), sb.end() - 2), "reference");
  Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  Reference r;
  r.shape = batch;
  if (!a_vector) r.shape.push_back(m_dim);
  if (!b_vector) r.shape.push_back(n_dim);
  for (int64_t z = 0; z < numel(batch); ++z) {
    std::vector<int64_t> index = unravel(z, batch);
    const float* pa = a.v.data() + broadcast_offset(batch_a, batch, index) * m_dim * k_dim;
    const float* pb = b.v.data() + broadcast_offset(batch_b, batch, index) * k_dim * n_dim;
    for (int64_t m = 0; m < m_dim; ++m)
      for (int64_t n = 0; n < n_dim; ++n) {
        double sum = 0, scale = 0;
        for (int64_t k = 0; k < k_dim; ++k) {
          double term = double(pa[m * k_dim + k]) * pb[k * n_dim + n];
          sum += term;
          scale += std::abs(term);
        }
        r.value.push_back(sum);
        r.scale.push_back(scale);
      }
  }
  return r;
}

HostMat transpose(const HostMat& x) {
  int64_t rows = x.shape[0], cols = x.shape[1];
  HostMat t{{cols, rows}, std::vector<float>(x.v.size())};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t.v[j * rows + i] = x.v[i * cols + j];
  return t;
}

// r = alpha * r + beta * bias (bias broadcast to r's shape).
void apply_bias(Reference& r, double alpha, const HostMat* bias, double beta) {
  for (size_t i = 0; i < r.value.size(); ++i) {
    r.value[i] *= alpha;
    r.scale[i] *= std::abs(alpha);
    if (!bias) continue;
    double c = beta * bias->v[broadcast_offset(bias->shape, r.shape, unravel(i, r.shape))];
    r.value[i] += c;
    r.scale[i] += std::abs(c);
  }
}

double activate(UnaryOp op, UnaryParams p, double x) {
  switch (op) {
    case UnaryOp::Relu:
      return std::max(x, 0.0);
    case UnaryOp::LeakyRelu:
      return x >= 0 ? x : p.alpha * x;
    case UnaryOp::Sigmoid:
      return 1 / (1 + std::exp(-x));
    case UnaryOp::Tanh:
      return std::tanh(x);
    case UnaryOp::Gelu:
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case UnaryOp::GeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case UnaryOp::Clip:
      return std::min(std::max(x, double(p.alpha)), double(p.beta));
    case UnaryOp::HardSigmoid:
      return std::clamp(p.alpha * x + p.beta, 0.0, 1.0);
    case UnaryOp::HardSwish:
      return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
    case UnaryOp::Identity:
      return x;
    default:
      ADD_FAILURE() << "no reference for UnaryOp " << int(op);
      return x;
  }
}

void apply_activation(Reference& r, UnaryOp op, UnaryParams p) {
  for (double& x : r.value) x = activate(op, p, x);
}

void expect_close(const std::vector<float>& got, const Shape& got_shape, const Reference& want) {
  ASSERT_EQ(got_shape, want.shape);
  ASSERT_EQ(got.size(), want.value.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double tolerance = 1e-4 * (want.scale[i] + std::abs(want.value[i]));
    if (std::abs(got[i] - want.value[i]) <= tolerance) continue;
    ADD_FAILURE() << "element " << i << " of " << shape_str(want.shape) << ": got " << got[i]
                  << ", want " << want.value[i] << " (tolerance " << tolerance << ")";
    if (++reported == 5) return;
  }
}

using Build = std::function<TensorRef(ComputeGraph&, const std::vector<TensorRef>&)>;

// Makes each of `inputs` a graph input, builds the op, runs it and compares with `want`.
void run_and_check(const std::vector<HostMat>& inputs, const Build& build, const Reference& want) {
  ComputeGraph g(context());
  std::vector<TensorRef> refs;
  for (size_t i = 0; i < inputs.size(); ++i)
    refs.push_back(g.add_input(inputs[i].shape, DType::Float32, "in" + std::to_string(i)));
  TensorRef out = build(g, refs);
  Shape out_shape = g.info(out).shape;
  g.add_output(out, "out");
  for (size_t i = 0; i < inputs.size(); ++i)
    g.copy_to_input(i, inputs[i].v.data(), inputs[i].v.size() * sizeof(float));
  g.execute();
  std::vector<float> got(static_cast<size_t>(numel(out_shape)));
  g.copy_from_output(0, got.data(), got.size() * sizeof(float));
  expect_close(got, out_shape, want);
}

class MatmulTest : public GpuTest {
 protected:
  void TearDown() override {
    ops::override_matmul_config(std::nullopt);
    ops::override_split_k_policy(std::nullopt);
    GpuTest::TearDown();
  }
  HostMat random(Shape shape, float lo = -1.f, float hi = 1.f) {
    return {shape, random_floats(static_cast<size_t>(numel(shape)), lo, hi)};
  }

  void check_matmul(const Shape& sa, const Shape& sb, std::optional<Shape> bias_shape = {}) {
    HostMat a = random(sa), b = random(sb);
    std::vector<HostMat> inputs = {a, b};
    Reference want = reference_matmul(a, b);
    if (bias_shape) {
      inputs.push_back(random(*bias_shape));
      apply_bias(want, 1, &inputs.back(), 1);
    }
    run_and_check(
        inputs,
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          return ops::matmul(g, in[0], in[1], bias_shape ? std::optional(in[2]) : std::nullopt);
        },
        want);
  }

  void check_linear(const Shape& sx, int64_t n, bool with_bias) {
    HostMat x = random(sx), w = random({n, sx.back()}), bias = random({n});
    Reference want = reference_matmul(x, transpose(w));
    apply_bias(want, 1, with_bias ? &bias : nullptr, 1);
    std::vector<HostMat> inputs = {x, w};
    if (with_bias) inputs.push_back(bias);
    run_and_check(
        inputs,
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          return ops::linear(g, in[0], in[1], with_bias ? std::optional(in[2]) : std::nullopt);
        },
        want);
  }

  // A is [M, K] (stored [K, M] when trans_a), B is [K, N] (stored [N, K] when trans_b).
  void check_gemm(int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b,
                  std::optional<Shape> c_shape, float alpha, float beta) {
    HostMat a = random({m, k}), b = random({k, n});
    HostMat c = c_shape ? random(*c_shape) : HostMat{};
    Reference want = reference_matmul(a, b);
    apply_bias(want, alpha, c_shape ? &c : nullptr, beta);
    std::vector<HostMat> inputs = {trans_a ? transpose(a) : a, trans_b ? transpose(b) : b};
    if (c_shape) inputs.push_back(c);
    run_and_check(
        inputs,
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          return ops::gemm(g, in[0], in[1], c_shape ? std::optional(in[2]) : std::nullopt, alpha,
                           beta, trans_a, trans_b);
        },
        want);
  }

  void check_activation(int64_t m, UnaryOp op, UnaryParams params) {
    const int64_t k = 16, n = 19;
    HostMat a = random({m, k}), b = random({k, n}), bias = random({n});
    Reference want = reference_matmul(a, b);
    apply_bias(want, 1, &bias, 1);
    apply_activation(want, op, params);
    run_and_check(
        {a, b, bias},
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          return ops::matmul(g, in[0], in[1], in[2], op, params);
        },
        want);
  }
};

// --- 2-D shapes through both kernels -------------------------------------------------------

struct Mkn {
  int64_t m, k, n;
};
void PrintTo(const Mkn& s, std::ostream* os) {
  *os << s.m << "x" << s.k << "x" << s.n;
}

class MatmulShapes : public MatmulTest, public ::testing::WithParamInterface<Mkn> {};

TEST_P(MatmulShapes, MatchesReference) {
  Mkn s = GetParam();
  check_matmul({s.m, s.k}, {s.k, s.n});
}

INSTANTIATE_TEST_SUITE_P(Ops, MatmulShapes,
                         ::testing::Values(Mkn{1, 1, 1}, Mkn{3, 5, 7}, Mkn{64, 64, 64},
                                           Mkn{65, 33, 17}, Mkn{1, 300, 129},  // GEMV
                                           Mkn{4, 9, 33},     // GEMV, all rows of a workgroup
                                           Mkn{5, 8, 3},      // smallest tiled M
                                           Mkn{70, 40, 130},  // several tiles in both dims
                                           Mkn{130, 70, 1}),  // N == 1, run as M == 1
                         [](const auto& info) {
                           return std::to_string(info.param.m) + "x" +
                                  std::to_string(info.param.k) + "x" + std::to_string(info.param.n);
                         });

// --- batches and 1-D promotion -------------------------------------------------------------

TEST_F(MatmulTest, BatchAgainstMatrix) {
  check_matmul({2, 3, 5, 7}, {7, 9});
}
TEST_F(MatmulTest, BatchBroadcastBothSides) {
  check_matmul({2, 1, 5, 7}, {3, 7, 9});
}
TEST_F(MatmulTest, FourBatchDims) {
  check_matmul({2, 1, 3, 1, 5, 7}, {4, 1, 2, 7, 9}, Shape{4, 1, 2, 1, 9});
}
TEST_F(MatmulTest, BatchedGemv) {
  check_matmul({4, 1, 11}, {4, 11, 6});
}
TEST_F(MatmulTest, BatchedRowsFoldIntoGemv) {
  check_matmul({3, 1, 40}, {40, 21});
}
TEST_F(MatmulTest, BatchedSingleColumn) {
  check_matmul({2, 9, 13}, {2, 13, 1});
}
TEST_F(MatmulTest, VectorTimesMatrix) {
  check_matmul({13}, {13, 10});
}
TEST_F(MatmulTest, MatrixTimesVector) {
  check_matmul({70, 13}, {13});
}
TEST_F(MatmulTest, VectorTimesVector) {
  check_matmul({37}, {37});
}
TEST_F(MatmulTest, VectorTimesBatch) {
  check_matmul({13}, {2, 13, 10});
}
TEST_F(MatmulTest, BatchTimesVector) {
  check_matmul({2, 6, 13}, {13});
}

TEST_F(MatmulTest, BiasPerColumn) {
  check_matmul({2, 3, 5, 7}, {7, 9}, Shape{9});
}
TEST_F(MatmulTest, BiasPerRowAndColumnAcrossBatch) {
  check_matmul({2, 5, 7}, {7, 9}, Shape{5, 9});
}
TEST_F(MatmulTest, BiasPerBatchAndRow) {
  check_matmul({3, 6, 7}, {7, 9}, Shape{3, 6, 1});
}
TEST_F(MatmulTest, BiasOnVectorResult) {
  check_matmul({70, 13}, {13}, Shape{70});
}

// --- linear --------------------------------------------------------------------------------

TEST_F(MatmulTest, LinearWithBias) {
  check_linear({6, 20}, 33, true);
}
TEST_F(MatmulTest, LinearWithoutBias) {
  check_linear({6, 20}, 33, false);
}
TEST_F(MatmulTest, LinearBatchOfSequences) {
  check_linear({2, 3, 20}, 17, true);
}
TEST_F(MatmulTest, LinearSingleRowUsesGemv) {
  check_linear({1, 300}, 70, true);
  // Deep enough for the unrolled K walk: four-wide B reads (K % 4 == 0) and single ones.
  check_linear({1, 1200}, 40, true);
  check_linear({2, 1201}, 33, true);
}
TEST_F(MatmulTest, LinearVectorInput) {
  check_linear({45}, 12, true);
}

TEST_F(MatmulTest, LinearConstantWeight) {
  HostMat x = random({3, 24}), w = random({10, 24});
  Reference want = reference_matmul(x, transpose(w));
  run_and_check(
      {x},
      [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
        TensorRef weight = g.add_constant(HostTensor::from(DType::Float32, w.shape, w.v), "w");
        return ops::linear(g, in[0], weight);
      },
      want);
}

// --- gemm ----------------------------------------------------------------------------------

TEST_F(MatmulTest, GemmTransposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "trans_a=" << ta << " trans_b=" << tb);
      check_gemm(37, 19, 23, ta, tb, Shape{37, 23}, 0.5f, -1.5f);
      check_gemm(2, 19, 23, ta, tb, Shape{23}, 1.25f, 0.75f);  // GEMV
    }
}

TEST_F(MatmulTest, GemmBiasShapes) {
  for (const Shape& c : {Shape{23}, Shape{37, 1}, Shape{1}, Shape{}, Shape{1, 23}}) {
    SCOPED_TRACE(shape_str(c));
    check_gemm(37, 11, 23, false, true, c, 2.f, 0.5f);
  }
}

TEST_F(MatmulTest, GemmWithoutC) {
  check_gemm(20, 11, 30, true, false, std::nullopt, -0.5f, 1.f);
}

// --- fused activations ---------------------------------------------------------------------

TEST_F(MatmulTest, FusedActivations) {
  const std::vector<std::pair<UnaryOp, UnaryParams>> cases = {
      {UnaryOp::Relu, {}},
      {UnaryOp::LeakyRelu, {0.1f, 0.f}},
      {UnaryOp::Sigmoid, {}},
      {UnaryOp::Tanh, {}},
      {UnaryOp::Gelu, {}},
      {UnaryOp::GeluTanh, {}},
      {UnaryOp::Clip, {-0.5f, 0.7f}},
      {UnaryOp::HardSigmoid, {0.2f, 0.5f}},
      {UnaryOp::HardSwish, {}},
      {UnaryOp::Identity, {}},
  };
  for (auto [op, params] : cases)
    for (int64_t m : {1, 7}) {  // GEMV and tiled epilogues
      SCOPED_TRACE(::testing::Message() << "UnaryOp " << int(op) << " M=" << m);
      check_activation(m, op, params);
    }
}

TEST_F(MatmulTest, GeluKeepsPrecisionForLargeNegativeInputs) {
  // Pre-activations around -6, where GELU is ~1e-8 and 1 + erf(x) would cancel completely.
  HostMat a{{1, 1}, {-6.f}}, b = random({1, 5}, 0.9f, 1.1f);
  Reference want = reference_matmul(a, b);
  apply_activation(want, UnaryOp::Gelu, {});
  for (double& s : want.scale) s = 0;  // relative to the tiny result itself
  run_and_check(
      {a, b},
      [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
        return ops::matmul(g, in[0], in[1], std::nullopt, UnaryOp::Gelu);
      },
      want);
}

TEST_F(MatmulTest, GemmWithActivation) {
  HostMat a = random({9, 12}), b = random({12, 30}), c = random({30});
  Reference want = reference_matmul(a, b);
  apply_bias(want, 2.0, &c, 0.5);
  apply_activation(want, UnaryOp::Clip, {-0.25f, 0.5f});
  run_and_check(
      {transpose(a), b, c},
      [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
        return ops::gemm(g, in[0], in[1], in[2], 2.f, 0.5f, true, false, UnaryOp::Clip,
                         {-0.25f, 0.5f});
      },
      want);
}

TEST_F(MatmulTest, CanFuse) {
  EXPECT_TRUE(ops::matmul_can_fuse(UnaryOp::Relu));
  EXPECT_TRUE(ops::matmul_can_fuse(UnaryOp::Gelu));
  EXPECT_FALSE(ops::matmul_can_fuse(UnaryOp::Exp));
  EXPECT_FALSE(ops::matmul_can_fuse(UnaryOp::Softplus));
}

// --- other tile configurations -------------------------------------------------------------

// Every layout through the current configuration: the tiled kernel with A and B walked along
// either dim, and GEMV with B contiguous along K (linear) or along N (matmul).
class MatmulConfigs : public MatmulTest {
 protected:
  void check_all_layouts() {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "trans_a=" << ta << " trans_b=" << tb);
        check_gemm(37, 21, 45, ta, tb, Shape{45}, 1.f, 1.f);
        check_gemm(3, 21, 45, ta, tb, Shape{3, 1}, 1.f, 1.f);
      }
    check_linear({1, 77}, 29, true);
    check_linear({3, 50}, 9, false);
    check_matmul({2, 77}, {77, 29});
    check_matmul({2, 19, 23}, {23, 41});
  }
};

TEST_F(MatmulConfigs, SmallOddTiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.tile = {8, 4, 3, 2, 5};
  c.large.reset();
  c.gemv_rows = 2;
  c.gemv_contig = 8;
  c.gemv_other = 4;
  ops::override_matmul_config(c);
  check_all_layouts();
}

// The device's 8x8-per-thread vec4 tile on every shape, with several tiles, partial ones and a
// K that leaves a partial slice; then a small vec4 tile with blocked lanes and odd K steps.
TEST_F(MatmulConfigs, LargeVec4Tiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  ASSERT_TRUE(c.large.has_value());
  EXPECT_TRUE(c.large->vec4());
  c.large_min_tiles = 0;
  ops::override_matmul_config(c);
  check_all_layouts();
  check_gemm(150, 70, 260, false, false, Shape{260}, 1.f, 1.f);
  check_gemm(150, 70, 260, true, true, Shape{150, 1}, 0.5f, 2.f);
}

TEST_F(MatmulConfigs, SmallVec4TilesBlockedLanes) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.tile = {8, 4, 4, 8, 3};
  c.large.reset();
  ops::override_matmul_config(c);
  check_all_layouts();
  check_gemm(40, 31, 70, false, true, Shape{70}, 1.f, 1.f);
}

// Workgroups walking bands of 3 tile rows: row counts that leave a short last band, with a
// batch and under split-K (both in gl_WorkGroupID.z).
TEST_F(MatmulConfigs, BandedWorkgroupOrder) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.tile = {8, 4, 2, 2, 4};
  c.large.reset();
  c.group_m = 3;
  ops::override_matmul_config(c);
  check_all_layouts();
  check_gemm(60, 45, 20, false, true, Shape{20}, 1.f, 1.f);
  check_matmul({2, 37, 23}, {23, 41});
  ops::SplitKPolicy policy;
  policy.min_k = 16;
  policy.min_slice = 16;
  ops::override_split_k_policy(policy);
  check_gemm(60, 45, 100, true, false, Shape{60, 1}, 0.5f, 2.f);
}

// The device's small tile, chosen for GEMMs with few default tiles, alone and under split-K.
TEST_F(MatmulConfigs, SmallTileForFewTiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  ASSERT_TRUE(c.small.has_value());
  c.large.reset();
  c.small_max_tiles = 1000;
  ops::override_matmul_config(c);
  check_all_layouts();
  check_gemm(70, 45, 100, false, true, Shape{100}, 1.f, 1.f);
  ops::SplitKPolicy policy;
  policy.min_k = 16;
  policy.min_slice = 16;
  ops::override_split_k_policy(policy);
  check_gemm(70, 45, 100, true, false, Shape{70, 1}, 0.5f, 2.f);
}

TEST_F(MatmulConfigs, GemvSharedMemoryReduction) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.gemv_subgroup = false;
  ops::override_matmul_config(c);
  check_all_layouts();
}

TEST_F(MatmulConfigs, GemvSubgroupReduction) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  if (!context()->features().subgroup_arithmetic) GTEST_SKIP() << "no subgroup arithmetic";
  c.gemv_subgroup = true;
  ops::override_matmul_config(c);
  check_all_layouts();
}

TEST_F(MatmulConfigs, RejectsConfigBeyondDeviceLimits) {
  ops::MatmulConfig c;
  c.tile.threads_x = context()->limits().maxComputeWorkGroupInvocations;
  c.tile.threads_y = 2;
  ops::override_matmul_config(c);
  ComputeGraph g(context());
  auto a = g.add_input({4, 4}, DType::Float32, "a");
  try {
    ops::matmul(g, a, a);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("matmul config"), std::string::npos) << e.what();
  }
}

// --- split-K -------------------------------------------------------------------------------

// The default policy on the shapes it is meant for (batch-1 ResNet-18 3x3 convs with 32x32
// tiles of 64 threads, transformer projections with 64x64 tiles of 256 threads) and on a large
// GEMM: slices of >= 64 until ~65536 threads run.
TEST(SplitKHeuristic, DefaultPolicy) {
  ops::override_split_k_policy(std::nullopt);
  ops::SplitK conv4 = ops::choose_split_k(16 * 2, 64, 4608);
  EXPECT_EQ(conv4.splits, 32u);  // capped by max_splits
  EXPECT_EQ(conv4.k_chunk, 144);
  ops::SplitK conv3 = ops::choose_split_k(8 * 7, 64, 2304);
  EXPECT_EQ(conv3.splits, 18u);
  EXPECT_EQ(conv3.k_chunk, 128);
  ops::SplitK conv1 = ops::choose_split_k(2 * 98, 64, 576);
  EXPECT_EQ(conv1.splits, 5u);  // the last slice shorter
  EXPECT_EQ(conv1.k_chunk, 128);
  ops::SplitK attn = ops::choose_split_k(8 * 2, 256, 512);
  EXPECT_EQ(attn.splits, 8u);
  EXPECT_EQ(attn.k_chunk, 64);
  EXPECT_EQ(ops::choose_split_k(64 * 64, 256, 4096).splits, 1u);  // enough tiles already
  EXPECT_EQ(ops::choose_split_k(4, 256, 128).splits, 1u);         // K too shallow
}

// Split-K forced onto small shapes: K >= 16 is cut into slices of 16 (the last shorter).
class MatmulSplitK : public MatmulConfigs {
 protected:
  void SetUp() override {
    MatmulConfigs::SetUp();
    ops::SplitKPolicy policy;
    policy.min_k = 16;
    policy.min_slice = 8;
    ops::override_split_k_policy(policy);
  }
};

TEST_F(MatmulSplitK, AllLayouts) {
  check_all_layouts();
}

TEST_F(MatmulSplitK, SmallOddTiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.tile = {8, 4, 3, 2, 5};
  c.large.reset();
  ops::override_matmul_config(c);
  check_gemm(37, 100, 45, true, false, Shape{37, 45}, 0.5f, 2.f);
}

TEST_F(MatmulSplitK, LargeVec4Tiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.large_min_tiles = 0;
  ops::override_matmul_config(c);
  check_gemm(130, 100, 140, false, true, Shape{130, 140}, 0.5f, 2.f);
}

TEST_F(MatmulSplitK, BatchesBiasAndActivation) {
  HostMat a = random({3, 20, 100}), b = random({3, 100, 30}), bias = random({20, 1});
  Reference want = reference_matmul(a, b);
  apply_bias(want, 1, &bias, 1);
  apply_activation(want, UnaryOp::GeluTanh, {});
  run_and_check(
      {a, b, bias},
      [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
        return ops::matmul(g, in[0], in[1], in[2], UnaryOp::GeluTanh);
      },
      want);
}

TEST_F(MatmulSplitK, AddsPartialAndReducePasses) {
  ComputeGraph g(context());
  TensorRef a = g.add_input({37, 100}, DType::Float32, "a");
  TensorRef b = g.add_input({100, 45}, DType::Float32, "b");
  g.add_output(ops::matmul(g, a, b), "c");
  g.prepare();
  EXPECT_EQ(g.stats().nodes, 2u);
}

// --- errors --------------------------------------------------------------------------------

void expect_error(const std::function<void(ComputeGraph&)>& build, ErrorKind kind,
                  const std::vector<std::string>& words) {
  ComputeGraph g(context());
  try {
    build(g);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (auto& w : words)
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what() << " lacks " << w;
  }
}

TensorRef f32(ComputeGraph& g, Shape shape) {
  static int count = 0;
  return g.add_input(std::move(shape), DType::Float32, "t" + std::to_string(count++));
}

TEST_F(MatmulTest, ErrorsNameTheOpAndTheProblem) {
  using K = ErrorKind;
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, f32(g, {3, 4}), f32(g, {5, 6}));
      },
      K::InvalidArgument, {"matmul", "K=4", "K=5"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, f32(g, {}), f32(g, {5, 6}));
      },
      K::InvalidArgument, {"matmul", "input A", "rank 0"});
  expect_error([](ComputeGraph& g) { ops::matmul(g, f32(g, {5}), f32(g, {})); }, K::InvalidArgument,
               {"matmul", "input B", "rank 0"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, f32(g, {2, 3, 4}), f32(g, {3, 4, 5}));
      },
      K::InvalidArgument, {"matmul", "broadcast"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, f32(g, {3, 4}), f32(g, {4, 5}), f32(g, {3, 4}));
      },
      K::InvalidArgument, {"matmul", "bias [3, 4]", "[3, 5]"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, f32(g, {3, 4}), f32(g, {4, 5}), f32(g, {2, 3, 5}));
      },
      K::InvalidArgument, {"matmul", "bias"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, g.add_input({3, 4}, DType::Int32, "i"), f32(g, {4, 5}));
      },
      K::Unsupported, {"matmul", "int32"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, f32(g, {3, 4}), f32(g, {4, 5}), std::nullopt, UnaryOp::Exp);
      },
      K::Unsupported, {"matmul", "activation", "fused"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, f32(g, {1, 1, 1, 1, 1, 3, 4}), f32(g, {4, 5}));
      },
      K::Unsupported, {"matmul", "rank 7"});
  expect_error(
      [](ComputeGraph& g) {
        ops::linear(g, f32(g, {3, 4}), f32(g, {5, 6}));
      },
      K::InvalidArgument, {"linear", "K=4", "K=6"});
  expect_error(
      [](ComputeGraph& g) {
        ops::linear(g, f32(g, {3, 4}), f32(g, {4}));
      },
      K::InvalidArgument, {"linear", "weight", "2-D"});
  expect_error(
      [](ComputeGraph& g) {
        ops::gemm(g, f32(g, {2, 3, 4}), f32(g, {4, 5}));
      },
      K::InvalidArgument, {"gemm", "input A", "2-D"});
  expect_error(
      [](ComputeGraph& g) {
        ops::gemm(g, f32(g, {4, 3}), f32(g, {4, 5}), std::nullopt, 1.f, 1.f, false, false);
      },
      K::InvalidArgument, {"gemm", "K=3", "K=4"});
  expect_error(
      [](ComputeGraph& g) {
        ops::gemm(g, f32(g, {3, 4}), f32(g, {4, 5}), f32(g, {4}));
      },
      K::InvalidArgument, {"gemm", "C [4]", "[3, 5]"});
}

// --- float16 ---------------------------------------------------------------------------------

// fp16 operands, bias and result with fp32 accumulation: the portable tiled kernel (16-bit
// storage) on lavapipe, the cooperative-matrix kernel where the device has one and the shape
// fits. The reference multiplies the fp16-rounded inputs in double; the result is rounded once
// to fp16, so errors stay within a couple of fp16 ulps of the largest magnitude.
class MatmulFloat16 : public MatmulTest {
 protected:
  void SetUp() override {
    MatmulTest::SetUp();
    if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  }

  static std::vector<uint16_t> to_half(const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_half(v[i]);
    return h;
  }

  // C[m, n] = act(sum_k A[m, k] B[k, n] + bias[n]); B stored [N, K] for linear.
  void check(int64_t m, int64_t k, int64_t n, bool linear, bool bias) {
    SCOPED_TRACE(::testing::Message()
                 << m << "x" << k << "x" << n << " linear=" << linear << " bias=" << bias);
    std::vector<uint16_t> a = to_half(random_floats(m * k)), b = to_half(random_floats(k * n)),
                          c = to_half(random_floats(n));
    ComputeGraph g(context());
    auto ta = g.add_input({m, k}, DType::Float16, "a");
    auto tb = g.add_input(linear ? Shape{n, k} : Shape{k, n}, DType::Float16, "b");
    auto tc = g.add_input({n}, DType::Float16, "bias");
    std::optional<TensorRef> tbias = bias ? std::optional(tc) : std::nullopt;
    auto y = linear ? ops::linear(g, ta, tb, tbias, UnaryOp::Relu) : ops::matmul(g, ta, tb, tbias);
    EXPECT_EQ(g.info(y).dtype, DType::Float16);
    g.add_output(y, "y");
    g.copy_to_input(0, a.data(), a.size() * 2);
    g.copy_to_input(1, b.data(), b.size() * 2);
    g.copy_to_input(2, c.data(), c.size() * 2);
    g.execute();
    std::vector<uint16_t> got(m * n, 0xFFFF);
    g.copy_from_output(0, got.data(), got.size() * 2);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = bias ? half_to_float(c[j]) : 0.0;
        for (int64_t q = 0; q < k; ++q)
          want += double(half_to_float(a[i * k + q])) *
                  half_to_float(b[linear ? j * k + q : q * n + j]);
        if (linear) want = std::max(want, 0.0);
        float v = half_to_float(got[i * n + j]);
        ASSERT_NEAR(v, want, 2e-3 * std::sqrt(double(k)) + 1e-3 * std::abs(want))
            << "at " << i << "," << j;
      }
  }
};

TEST_F(MatmulFloat16, MatchesReference) {
  check(37, 45, 21, false, false);
  check(64, 32, 128, false, false);
  check(3, 50, 9, true, true);
  check(70, 33, 80, true, true);
  check(128, 64, 256, false, false);  // whole 128x128x32 tiles: tensor cores where available
}

// Where the device has cooperative matrices: the 128 x 128 and the 64 x 64 tile, each storing
// fragments directly and through the bias epilogue.
TEST_F(MatmulFloat16, CoopmatTilesWithAndWithoutEpilogue) {
  for (uint64_t small_below : {uint64_t{0}, uint64_t{1} << 20}) {
    SCOPED_TRACE("coopmat_small_below " + std::to_string(small_below));
    ops::MatmulConfig cfg = ops::choose_matmul_config(*context());
    cfg.coopmat_small_below = small_below;
    ops::override_matmul_config(cfg);
    check(128, 64, 256, false, false);
    check(128, 64, 256, false, true);
    check(256, 96, 128, false, true);
  }
}

TEST_F(MatmulFloat16, PortableKernelWhereCoopmatWouldFit) {
  ops::MatmulConfig cfg = ops::choose_matmul_config(*context());
  cfg.use_coopmat = false;
  ops::override_matmul_config(cfg);
  check(128, 64, 256, false, false);
}

TEST_F(MatmulFloat16, LargeVec4Tiles) {
  ops::MatmulConfig cfg = ops::choose_matmul_config(*context());
  cfg.large_min_tiles = 0;
  ops::override_matmul_config(cfg);
  check(130, 20, 140, false, true);
  check(128, 16, 128, true, false);
}

TEST_F(MatmulFloat16, RejectsMixedDtypes) {
  ComputeGraph g(context());
  auto a = g.add_input({4, 4}, DType::Float16, "a");
  auto b = g.add_input({4, 4}, DType::Float32, "b");
  try {
    ops::matmul(g, a, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkgraph::testing

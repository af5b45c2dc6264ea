// matmul, linear and gemm against a double-precision CPU reference (matmul_test_util.h): both
// kernels (tiled and GEMV, with either reduction), transposed and broadcast operands, 1-D
// promotion, bias and the fused activations, and the shape errors. Other tile configurations,
// split-K and float16: test_ops_matmul_configs.cpp.
#include "matmul_test_util.h"

namespace vkgraph::testing {
namespace {

using namespace matmul_reference;

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
// nn.MultiheadAttention's in-projection reads its [1, S, K] input transposed to [S, 1, K]: a
// batch of S single rows whose M stride (S * K) is not the batch stride (K). Against a 2-D B
// that is one GEMM of M = S; against a batched B it stays S GEMVs. The permutation moves only a
// size-1 dim, so the stored bytes are those of the [S, 1, K] reference operand.
TEST_F(MatmulTest, TransposedSingleRowsFoldIntoOneGemm) {
  for (const Shape& sb : {Shape{40, 21}, Shape{37, 40, 21}}) {
    SCOPED_TRACE(shape_str(sb));
    HostMat a = random({1, 37, 40}), b = random(sb);
    Reference want = reference_matmul({{37, 1, 40}, a.v}, b);
    run_and_check(
        graph_options(), {a, b},
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          return ops::matmul_permuted(g, {in[0], {1, 0, 2}}, {in[1], {}}, {}, 1.f);
        },
        want);
  }
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

// A skip connection added in the epilogue, before the activation: the tiled kernel, the GEMV
// (one row), batches, and a single column (which the host turns into one row).
TEST_F(MatmulTest, ResidualInTheEpilogue) {
  check_residual({37, 20}, {20, 45}, true, UnaryOp::Relu);
  check_residual({37, 20}, {20, 45}, false, std::nullopt);
  check_residual({1, 64}, {64, 33}, true, std::nullopt);
  check_residual({2, 5, 8}, {8, 6}, true, UnaryOp::Gelu);
  check_residual({9, 16}, {16, 1}, false, std::nullopt);
}

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
      graph_options(), {x},
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
      {UnaryOp::Silu, {}},
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
      graph_options(), {a, b},
      [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
        return ops::matmul(g, in[0], in[1], {.activation = UnaryOp::Gelu});
      },
      want);
}

TEST_F(MatmulTest, GemmWithActivation) {
  HostMat a = random({9, 12}), b = random({12, 30}), c = random({30});
  Reference want = reference_matmul(a, b);
  apply_bias(want, 2.0, &c, 0.5);
  apply_activation(want, UnaryOp::Clip, {-0.25f, 0.5f});
  run_and_check(
      graph_options(), {transpose(a), b, c},
      [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
        return ops::gemm(g, in[0], in[1],
                         {.c = in[2],
                          .alpha = 2.f,
                          .beta = 0.5f,
                          .trans_a = true,
                          .activation = UnaryOp::Clip,
                          .activation_params = {-0.25f, 0.5f}});
      },
      want);
}

TEST_F(MatmulTest, CanFuse) {
  EXPECT_TRUE(ops::matmul_can_fuse(UnaryOp::Relu));
  EXPECT_TRUE(ops::matmul_can_fuse(UnaryOp::Gelu));
  EXPECT_FALSE(ops::matmul_can_fuse(UnaryOp::Exp));
  EXPECT_FALSE(ops::matmul_can_fuse(UnaryOp::Softplus));
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
        ops::matmul(g, f32(g, {3, 4}), f32(g, {4, 5}), {.bias = f32(g, {3, 4})});
      },
      K::InvalidArgument, {"matmul", "bias [3, 4]", "[3, 5]"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, f32(g, {3, 4}), f32(g, {4, 5}), {.bias = f32(g, {2, 3, 5})});
      },
      K::InvalidArgument, {"matmul", "bias"});
  expect_error(
      [&](ComputeGraph& g) {
        ops::MatmulEpilogue e;
        e.residual = f32(g, {5});
        ops::matmul(g, f32(g, {3, 4}), f32(g, {4, 5}), e);
      },
      K::InvalidArgument, {"matmul", "residual [5]", "[3, 5]"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, g.add_input({3, 4}, DType::Int32, "i"), f32(g, {4, 5}));
      },
      K::Unsupported, {"matmul", "int32"});
  expect_error(
      [](ComputeGraph& g) {
        ops::matmul(g, f32(g, {3, 4}), f32(g, {4, 5}), {.activation = UnaryOp::Exp});
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
        ops::gemm(g, f32(g, {4, 3}), f32(g, {4, 5}), {});
      },
      K::InvalidArgument, {"gemm", "K=3", "K=4"});
  expect_error(
      [](ComputeGraph& g) {
        ops::gemm(g, f32(g, {3, 4}), f32(g, {4, 5}), {.c = f32(g, {4})});
      },
      K::InvalidArgument, {"gemm", "C [4]", "[3, 5]"});
}

}  // namespace
}  // namespace vkgraph::testing

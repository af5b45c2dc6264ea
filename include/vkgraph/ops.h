#pragma once
// Operators: each adds one or more nodes to a ComputeGraph and returns the output tensor.
// Shape rules are checked here, at build time, with errors that name the op and the shapes.
#include <optional>
#include <vector>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

enum class BinaryOp { Add, Sub, Mul, Div, Max, Min, Pow, Mod, FMod };
enum class CompareOp { Equal, Less, LessOrEqual, Greater, GreaterOrEqual };

enum class UnaryOp {
  Relu, Sigmoid, Tanh, Gelu, GeluTanh, Exp, Log, Neg, Sqrt, Abs, Reciprocal, Floor, Ceil, Round,
  Sign, Sin, Cos, Erf, Softplus, Mish, LeakyRelu, Elu, Selu, Clip, HardSigmoid, HardSwish,
  Identity, Not,
};

enum class ReduceOp { Sum, Mean, Max, Min, Prod, L2, LogSumExp, SumSquare, L1 };

struct UnaryParams {
  float alpha = 0.f;  // LeakyRelu/Elu/Selu/HardSigmoid slope; Clip min
  float beta = 0.f;   // Selu gamma, HardSigmoid offset; Clip max
};

// NumPy-style broadcast of two shapes; throws naming `op` when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

TensorRef binary(ComputeGraph& g, BinaryOp op, TensorRef a, TensorRef b);
TensorRef unary(ComputeGraph& g, UnaryOp op, TensorRef x, UnaryParams params = {});
// a: [..., M, K], b: [..., K, N], batch dims broadcast; bias broadcast to [..., M, N].
TensorRef matmul(ComputeGraph& g, TensorRef a, TensorRef b,
                 std::optional<TensorRef> bias = std::nullopt);
// x: [M, K] (or [..., K]); weight: [N, K] (PyTorch layout); bias: [N].
TensorRef linear(ComputeGraph& g, TensorRef x, TensorRef weight,
                 std::optional<TensorRef> bias = std::nullopt);
TensorRef softmax(ComputeGraph& g, TensorRef x, int axis = -1, bool log = false);
TensorRef reduce(ComputeGraph& g, ReduceOp op, TensorRef x, std::vector<int64_t> axes,
                 bool keepdims);

}  // namespace vkgraph::ops

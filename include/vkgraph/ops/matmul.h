#pragma once
// Matrix products: matmul, linear and gemm, with an optional bias and activation applied in
// their epilogue, so a frontend can fuse MatMul/Gemm + Add + activation into one dispatch.
// Float32 or float16 operands of one dtype (float16 accumulates in float32).
#include <optional>
#include <vector>

#include "vkgraph/ops/elementwise.h"

namespace vkgraph::ops {

// Activations the epilogue fuses (the `epilogue` list in src/ops/unary.cmake): Relu,
// LeakyRelu, Sigmoid, Tanh, Gelu (exact erf), GeluTanh, Clip, HardSigmoid, HardSwish, Silu and
// Identity; others throw Unsupported.
bool matmul_can_fuse(UnaryOp activation);

// What matmul and linear apply to the product, in one pass: + bias (broadcast to the result),
// + residual (of the result's shape: a skip connection), then the activation with
// `activation_params` as in unary().
struct MatmulEpilogue {
  std::optional<TensorRef> bias;
  std::optional<UnaryOp> activation;
  UnaryParams activation_params;
  std::optional<TensorRef> residual;  // last, so {bias, activation, params} still reads so
};

// numpy.matmul: a: [..., M, K], b: [..., K, N], batch dims broadcast; a 1-D operand is promoted
// to a matrix and the added dim removed from the result.
TensorRef matmul(ComputeGraph& g, TensorRef a, TensorRef b, const MatmulEpilogue& epilogue = {});
// A stored tensor read with its dims permuted, without a copy: dim i of the view is dim perm[i]
// of `tensor` (perm empty: as stored).
struct PermutedView {
  TensorRef tensor;
  std::vector<int64_t> perm;
};
// matmul of permuted views (a transposed operand costs no copy, the kernels read it through
// strides), with the result scaled: alpha * (a b + bias) + residual, then the activation.
TensorRef matmul_permuted(ComputeGraph& g, const PermutedView& a, const PermutedView& b,
                          const MatmulEpilogue& epilogue = {}, float alpha = 1.f);
// x: [M, K] (or [..., K]); weight: [N, K] (PyTorch layout, read in place); bias: [N].
TensorRef linear(ComputeGraph& g, TensorRef x, TensorRef weight,
                 const MatmulEpilogue& epilogue = {});

// ONNX Gemm: alpha * op(a) @ op(b) + beta * c, op(x) = trans ? x^T : x; a, b 2-D; c optional,
// unidirectionally broadcast to [M, N]; then the activation, as in MatmulEpilogue.
struct GemmOptions {
  std::optional<TensorRef> c;
  float alpha = 1.f, beta = 1.f;
  bool trans_a = false, trans_b = false;
  std::optional<UnaryOp> activation;
  UnaryParams activation_params;
  // Added after alpha * op(a) @ op(b) + beta * c, before the activation; [M, N].
  std::optional<TensorRef> residual;
};
TensorRef gemm(ComputeGraph& g, TensorRef a, TensorRef b, const GemmOptions& options = {});
}  // namespace vkgraph::ops

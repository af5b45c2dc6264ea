#pragma once
// Activations that exporters write out as arithmetic, recognised by the fusion pass (fuse.h) so
// that they become one epilogue activation or one unary dispatch instead of five to eight
// elementwise dispatches:
//
//   GELU (erf):  0.5 * x * (1 + Erf(x / sqrt(2)))                         => Gelu
//   GELU (tanh): 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  => GeluTanh
//   SiLU:        x * Sigmoid(x)                                           => Silu (epilogues only)
//
// in the forms PyTorch's legacy and dynamo exporters emit: the scale of Erf's argument as a Div
// by sqrt(2) or a Mul by 1/sqrt(2), the products of x, 0.5 and the bracket associated either way
// ((x * 0.5) * b, (x * b) * 0.5, x * (b * 0.5)), operands of Add and Mul in either order, x^3 as
// Pow(x, 3) or x * x * x. Every intermediate must have one reader and not be a model output.
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

struct DecomposedActivation {
  ops::UnaryOp op;
  std::vector<const onnx::NodeProto*> nodes;  // the chain's nodes; the last computes act(x)
};

// The decomposed activation of `x` (a float32 value of rank `rank`) that the nodes after it
// compute, if any. Other nodes may read `x` too; callers that absorb x's producer check that
// the chain's nodes are all its readers.
std::optional<DecomposedActivation> decomposed_activation(const Pass& pass, const std::string& x,
                                                          size_t rank);

// Whether the chain's nodes are every reader of `x`.
bool reads_all_of(const DecomposedActivation& chain, const Pass& pass, const std::string& x);

// Rooted at the first node of a decomposed GELU of a computed tensor: one unary node (Gelu,
// approximate="tanh" for GeluTanh) replaces the chain.
std::optional<Fusion> activation_chain(const onnx::NodeProto& root, Pass& pass);

}  // namespace vkgraph::onnx_import::fuse

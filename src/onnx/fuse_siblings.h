#pragma once
// Sibling projections merged, a part of the fusion pass (fuse.h): MatMuls that read one computed
// tensor x with float32 constant weights [K, N_i] (each [-> Add(float32 constant bias [N_i])]),
// BERT's Q, K and V or Llama's q, k, v, become one GEMM over the weights concatenated along N
// (`SiblingMatMul`, lowered to ops::matmul with the biases concatenated into its epilogue);
// each member's result is elided as a view of the packed output at its column offset, which
// the attention and the rope read in place (other readers get it copied out once).
//
// Off by default (VKGRAPH_TUNE=fuse.siblings=1 turns it on) until the H200 says whether one
// wider GEMM plus the copies some readers need beats the separate GEMMs.
#include <onnx/onnx_pb.h>

#include <optional>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Rooted at the first of the MatMuls in node order.
std::optional<Fusion> sibling_matmuls(const onnx::NodeProto& mm, Pass& pass);

// SiblingMatMul's inputs: x, the `members` weights, then (attribute "biased" 1) their biases.
// Its output is the packed result [..., sum N_i].

}  // namespace vkgraph::onnx_import::fuse

#pragma once
// Sibling projections merged, a part of the fusion pass (fuse.h): MatMuls that read one computed
// tensor x with float32 constant weights [K, N_i] (each [-> Add(float32 constant bias [N_i])]),
// each result read only by data movement (the heads' Reshape), BERT's Q, K and V or Llama's
// q, k, v, become one GEMM over the weights concatenated along N
// (`SiblingMatMul`, lowered to ops::matmul with the biases concatenated into its epilogue);
// each member's result is elided as a view of the packed output at its column offset, which
// the attention and the rope read in place.
//
// On by default since the H200 A/B of docs/bench/2026-12-02-session8.md (call B): fp16 bert
// 1.891 -> 1.439 ms (131 -> 107 nodes); gpt2 and vit_b_16 unchanged (one packed projection
// already). VKGRAPH_TUNE=fuse.siblings=0 turns it off.
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Rooted at the first of the MatMuls in node order.
std::optional<Fusion> sibling_matmuls(const onnx::NodeProto& mm, Pass& pass);

// Whether every reader of `value` is data movement that can read a view of a packed output
// (the heads' Reshape and Transpose before an attention or a rope): a member read by anything
// else would cost a copy of its view and lose the epilogue (activation, residual) its own GEMM
// would have taken, as Llama's gate and up projections do.
bool read_in_place(const Importer& im, const std::string& value);

// Elides each member's result (`members`: its value and width N_i, in packing order) as the
// view of `packed_name`, the packed output of shape `packed`, at its column offset.
void elide_members(Pass& p, const std::string& packed_name, Shape packed,
                   const std::vector<std::pair<std::string, int64_t>>& members);

// SiblingMatMul's inputs: x, the `members` weights, then (attribute "biased" 1) their biases.
// Its output is the packed result [..., sum N_i].

}  // namespace vkgraph::onnx_import::fuse

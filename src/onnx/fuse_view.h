#pragma once
// Data movement read in place, a part of the fusion pass (fuse.h). Transpose, Reshape, Squeeze,
// Unsqueeze, Gather of one constant index, Slice with constant bounds and positive steps and
// Expand to a constant shape (stride 0 where it repeats) all give an element offset and strides
// over their input: the pass elides such a node and its readers see a Pass::View of the
// computed tensor underneath the chain, read through those strides (FusedAttention: every
// view; FusedMatMul: permutations). A reader that takes no strides gets the view copied out
// once, by the importer (Importer::tensor), so eliding never costs more than one copy per view
// read elsewhere.
//
// nn.MultiheadAttention's Q/K/V split is the case this serves: `Reshape [S, B, 3, E] ->
// Unsqueeze -> Transpose -> Squeeze -> Gather(0, i)` then per head `Reshape [S, B*H, d] ->
// Transpose -> Reshape [B, H, S, d]` (torch 1.13: three Slices of the last dim) are views of the
// packed in-projection (offset i*E, row stride 3E, head stride d), which the attention reads.
//
// Llama's repeat_kv (Unsqueeze -> Expand -> Reshape merging the KV heads with their repeat)
// gives no strides: it is a grouped view (Pass::View::group), which the attention reads with
// the KV heads as stored (grouped-query attention) and any other reader copied out.
// VKGRAPH_TUNE=fuse.repeat_kv=0 keeps the Expands (on the H200, docs/bench/2026-12-02-session8.md
// call E, the views took llama fp16 from 1.709 to 1.612 ms, 156 to 132 nodes).
//
// What is elided: a node whose input is itself a view, whenever its result is such a view (a
// Reshape that would merge dims the strides keep apart is not: it is lowered, reading its input
// copied out); a Transpose, Gather or Slice of a computed tensor only where every reader reads
// views (`reads_views`): MatMul, a data-movement node, Shape, a Mul/Div by a scalar constant
// whose only reader is a MatMul (the attention's scale), a Concat, or the first nodes of a rotary
// embedding (fuse_rope.h). A Reshape, Squeeze or Unsqueeze of a
// computed tensor is a free view of its bytes already (lower_tensor.cpp) and is left to that.
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Whether `op` (of the default domain) is one of the data-movement ops above.
bool is_view_op(const std::string& op);

// Concat of inputs some of which are elided views => ViewConcat, which copies each view into
// its place (ops::concat_views; inputs the views' sources, fuse::set_view's attributes "x<i>"):
// the Slices of a cyclic shift (Swin's torch.roll as the exporters write it) and the strided
// Slices of a patch merging cost no copies of their own. Knob fuse.concat_views=0 keeps them.
std::optional<Fusion> concat_of_views(const onnx::NodeProto& concat, Pass& pass);

// Rooted at any of the data-movement ops above: elided (a Fusion without a node) or nullopt.
std::optional<Fusion> view_node(const onnx::NodeProto& node, Pass& pass);
// The view `node` gives once elided, if the pass elides it when the importer reaches it.
std::optional<Pass::View> elided_view(const onnx::NodeProto& node, Pass& pass);

// The view `node` (one of the ops above) gives of `in`, where its parameters are known and it
// is expressible.
std::optional<Pass::View> view_of(Pass& pass, const onnx::NodeProto& node, const Pass::View& in);

// The view algebra. `in` is an elided view or a computed tensor (`whole`); results keep
// `perm` only for a permutation of the source.
Pass::View whole(const std::string& value, const Shape& shape);
Pass::View transposed(const Pass::View& in, const std::vector<int64_t>& perm);
// nullopt where the new dims cannot be strides over the old (a merge of dims not contiguous
// with each other).
std::optional<Pass::View> reshaped(const Pass::View& in, const Shape& shape);
// `keep`: the index was a one-element 1-D tensor, the dim stays (of size 1).
Pass::View gathered(const Pass::View& in, size_t axis, int64_t index, bool keep);

}  // namespace vkgraph::onnx_import::fuse

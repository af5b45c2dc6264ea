#pragma once
// Rotary position embedding as exporters write Llama's apply_rotary_pos_emb (rotate_half), a
// part of the fusion pass (fuse.h), lowered to one ops::rope dispatch instead of eight:
//
//   Mul(x, cos) ----------------------------------------------.
//   Slice(x, [0, d/2)) ------------------------.               Add => FusedRope(x, cos, sin)
//   Slice(x, [d/2, d)) -> Neg -> Concat(neg, lo; last axis) -> Mul(·, sin)
//
// in any operand order, both exporters (dynamo, legacy). Rooted at whichever of x's three
// readers comes first in node order; every intermediate must have one reader and be no model
// output. x is read through the pass's view (Llama's heads Transpose [B, S, H, d] -> [B, H, S, d]
// is elided for it: fuse_view.h's reads_views), cos and sin (host constants when the positions
// are, or computed) must broadcast to x's shape without growing it.
//
// FusedRope's inputs: x (the view's source), cos, sin; attributes "shape_x", "strides_x",
// "offset_x" when x is read through a view (as FusedAttention's, set_view in fuse.h).
// VKGRAPH_TUNE=fuse.rope=0 turns the pattern off (the eight nodes run as before).
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Rooted at a Mul or a Slice that reads x.
std::optional<Fusion> rope(const onnx::NodeProto& root, Pass& pass);
// Whether `reader`, a reader of `x` (of `shape`, not computed yet: an elided Transpose's view),
// is one of the three that a rope of x starts with, so that the fused node reads x in place.
bool reads_for_rope(Pass& pass, const onnx::NodeProto& reader, const std::string& x,
                    const Shape& shape);

enum RopeInput : int { kRopeX, kRopeCos, kRopeSin, kRopeInputs };

}  // namespace vkgraph::onnx_import::fuse

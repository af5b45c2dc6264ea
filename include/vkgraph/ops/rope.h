#pragma once
// Rotary position embedding (RoPE) in the rotate-half form of Llama / GPT-NeoX, one dispatch
// (src/ops/rope.comp) for what exporters write as seven nodes:
//   y = x * cos + cat(-x[..., d/2:], x[..., :d/2]) * sin
// Float32 or float16 (16-bit storage, float32 arithmetic).
#include "vkgraph/ops.h"
#include "vkgraph/ops/attention.h"

namespace vkgraph::ops {

// x: a strided view (rank 1..6, its last dim d even), e.g. the heads' Transpose of a projection
// read in place; cos, sin: of x's dtype, broadcastable to x's shape without growing it. Returns
// x's shape, contiguous.
TensorRef rope(ComputeGraph& g, const StridedView& x, TensorRef cos, TensorRef sin);

}  // namespace vkgraph::ops

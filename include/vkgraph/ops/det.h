#pragma once
// Determinants (src/ops/det), as ONNX Det.
#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

// x: [..., M, M] Float32 -> [...]. Partial pivoting in float32; a singular matrix gives 0 and
// NaN propagates. One invocation per matrix, O(M^3): meant for the small matrices models use.
TensorRef det(ComputeGraph& g, TensorRef x);

}  // namespace vkgraph::ops

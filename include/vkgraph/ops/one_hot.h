#pragma once
// One-hot encodings (src/ops/one_hot): ONNX OneHot and Hardmax.
#include <cstdint>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

// indices: Int32 or Int64 (negative ones count from the end of the depth); values: [off, on],
// any dtype, which the output takes. Output: indices' shape with a dim of `depth` inserted at
// `axis` (counted in the output's rank). An index outside [-depth, depth) gives all off values,
// as ONNX defines.
TensorRef one_hot(ComputeGraph& g, TensorRef indices, int64_t depth, TensorRef values,
                  int64_t axis = -1);
// 1 at the first maximum along `axis`, 0 elsewhere (NaN counts as the maximum, as in argmax).
// x: Float32 or Float16.
TensorRef hardmax(ComputeGraph& g, TensorRef x, int64_t axis = -1);

}  // namespace vkgraph::ops

#pragma once
// MaxPool with ONNX's Indices output (src/ops/pool), for models that pair it with MaxUnpool.
#include "vkgraph/ops.h"

namespace vkgraph::ops {

struct MaxPoolWithIndices {
  TensorRef values;
  TensorRef indices;  // Int64: flat index into the whole input (storage order 0); -1 if empty
};

// x: [N, C, D1, ...] with 1 to 3 spatial dims; `params` as max_pool3d's, the leading entries
// trivial for fewer dims. Ties give the first maximum; NaN propagates.
MaxPoolWithIndices max_pool_with_indices(ComputeGraph& g, TensorRef x, const Pool3dParams& params);

}  // namespace vkgraph::ops

#pragma once
// Indexing by coordinate tuples (src/ops/nd_index): ONNX GatherND and ScatterND. Data of any
// dtype; indices Int32 or Int64 with negative coordinates counting from the end. Out-of-range
// coordinates throw when `indices` is a constant; computed ones gather zero or are skipped.
#include <cstdint>

#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {

// indices: [..., k] with 1 <= k <= rank(data) - batch_dims; the first batch_dims dims of data
// and indices match. Output: indices.shape[:-1] + data.shape[batch_dims + k:].
TensorRef gather_nd(ComputeGraph& g, TensorRef data, TensorRef indices, int64_t batch_dims = 0);
// A copy of data with the slices that indices [..., k] address replaced by (or, with a
// reduction, combined with) updates: indices.shape[:-1] + data.shape[k:]. Reductions take
// f32, i32, i64 and apply duplicates in order; with None duplicates are undefined in ONNX and
// one of them wins.
TensorRef scatter_nd(ComputeGraph& g, TensorRef data, TensorRef indices, TensorRef updates,
                     ScatterReduction reduction = ScatterReduction::None);

}  // namespace vkgraph::ops

#pragma once
// Reductions along axes: softmax, Reduce*, ArgMax/ArgMin, cumulative sum and top-k. ReduceOp
// is generated from src/ops/reduce.cmake.
#include <cstdint>
#include <vector>

#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/shaders/reduce.h"

namespace vkgraph::ops {

using ReduceOp = shaders::reduce::Op;

struct TopKResult {
  TensorRef values;
  TensorRef indices;  // Int64
};

TensorRef softmax(ComputeGraph& g, TensorRef x, int axis = -1, bool log = false);
// ONNX Reduce*: over `axes` (empty: all axes; ONNX's noop_with_empty_axes is the caller's),
// keeping them as size 1 with keepdims. Float32; Sum, Max, Min and Prod also Int32 and Int64.
// An empty reduction gives the op's identity (Sum 0, Prod 1, Max and LogSumExp -inf).
TensorRef reduce(ComputeGraph& g, ReduceOp op, TensorRef x, std::vector<int64_t> axes,
                 bool keepdims);
// ONNX ArgMax (ArgMin with is_min) along `axis`; Int64 indices. Ties go to the first index, or
// the last with select_last_index; NaN counts as the extreme, as in numpy and PyTorch.
TensorRef argmax(ComputeGraph& g, TensorRef x, int64_t axis, bool keepdims,
                 bool select_last_index = false, bool is_min = false);

// f32, i32, i64.
TensorRef cumsum(ComputeGraph& g, TensorRef x, int64_t axis, bool exclusive = false,
                 bool reverse = false);
// f32, i32, i64; 0 <= k <= axis length. Output is always sorted (which ONNX sorted=0 also
// allows); ties keep the lower index first; NaN ranks above every number.
TopKResult topk(ComputeGraph& g, TensorRef x, int64_t k, int64_t axis = -1, bool largest = true);

}  // namespace vkgraph::ops

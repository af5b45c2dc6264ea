#pragma once
// Pointwise ops outside unary()'s activation set (src/ops/pointwise). x: Float32 or Float16.
#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

// Bool: x is +inf (detect_positive) or -inf (detect_negative). NaN is not infinite.
TensorRef is_inf(ComputeGraph& g, TensorRef x, bool detect_negative = true,
                 bool detect_positive = true);
// Bool: x is NaN.
TensorRef is_nan(ComputeGraph& g, TensorRef x);
// ONNX Shrink: x + bias where x < -lambd, x - bias where x > lambd, else 0 (NaN too, as ONNX
// defines it).
TensorRef shrink(ComputeGraph& g, TensorRef x, float lambd = 0.5f, float bias = 0.f);
// x at bfloat16 precision, still in x's dtype: the low 16 bits of each float32 truncated (as
// ONNX 1.12's Cast to BFLOAT16), NaN kept NaN. bfloat16 tensors are held in float32.
TensorRef to_bfloat16(ComputeGraph& g, TensorRef x);

}  // namespace vkgraph::ops

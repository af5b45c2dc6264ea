#pragma once
// ONNX ReverseSequence (src/ops/reverse_sequence): any dtype.
#include <cstdint>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

// x: rank >= 2 with its batch and time axes being 0 and 1 (either order); sequence_lens:
// [batch] Int32 or Int64. Reverses the first sequence_lens[b] steps of each batch entry.
// Constant lengths outside [0, steps] throw; computed ones are clamped.
TensorRef reverse_sequence(ComputeGraph& g, TensorRef x, TensorRef sequence_lens,
                           int64_t batch_axis = 1, int64_t time_axis = 0);

}  // namespace vkgraph::ops

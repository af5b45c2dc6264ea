#pragma once
// Local response normalization across channels (src/ops/lrn), as ONNX LRN (AlexNet, GoogLeNet).
#include <cstdint>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

struct LrnParams {
  int64_t size = 5;  // channels in the window: (size - 1) / 2 before, the rest after
  float alpha = 1e-4f;
  float beta = 0.75f;
  float bias = 1.f;
};

// x: [N, C, ...] Float32 or Float16.
TensorRef lrn(ComputeGraph& g, TensorRef x, const LrnParams& params = {});

}  // namespace vkgraph::ops

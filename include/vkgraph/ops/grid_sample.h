#pragma once
// Sampling an image at given coordinates (src/ops/grid_sample), as ONNX GridSample and
// PyTorch's grid_sample (spatial transformers, optical-flow warps).
#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

enum class GridSampleMode { Bilinear, Nearest, Bicubic };
enum class GridSamplePadding { Zeros, Border, Reflection };

struct GridSampleOptions {
  GridSampleMode mode = GridSampleMode::Bilinear;
  GridSamplePadding padding = GridSamplePadding::Zeros;
  bool align_corners = false;  // -1 and 1 are the corner pixels' centres (else their edges)
};

// x: [N, C, H, W]; grid: [N, Ho, Wo, 2] of (x, y) in [-1, 1], one dtype (f32 or f16) ->
// [N, C, Ho, Wo]. Nearest rounds half to even; bicubic uses A = -0.75; a NaN coordinate reads
// zero whatever the padding.
TensorRef grid_sample(ComputeGraph& g, TensorRef x, TensorRef grid,
                      const GridSampleOptions& options = {});

}  // namespace vkgraph::ops

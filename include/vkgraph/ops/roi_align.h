#pragma once
// Region-of-interest pooling for detection heads (src/ops/roi_align), as ONNX RoiAlign.
#include <cstdint>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

struct RoiAlignOptions {
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;  // samples per bin and axis; 0: ceil(roi size / output size)
  float spatial_scale = 1.f;   // image coordinates to feature-map coordinates
  bool max = false;            // else average
  bool half_pixel = true;      // opset 16's default; false: output_half_pixel (opset 10)
};

// x: [N, C, H, W] Float32; rois: [R, 4] (x1, y1, x2, y2) Float32; batch_indices: [R] Int32 or
// Int64 -> [R, C, output_height, output_width]. Constant batch indices out of range throw;
// computed ones give zeros.
TensorRef roi_align(ComputeGraph& g, TensorRef x, TensorRef rois, TensorRef batch_indices,
                    const RoiAlignOptions& options = {});

}  // namespace vkgraph::ops

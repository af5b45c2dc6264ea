#pragma once
// Data movement with ONNX semantics (src/ops/shape_ops, pad, gather, resize): shape, indexing
// and selection ops. Unless noted they take f32, f16, i32, i64 and Bool (one byte per element;
// needs 8-bit storage on the device), count negative axes from the end, and handle rank up to
// 6. Errors name the op and the offending shape, axis or dtype.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

enum class ScatterReduction { None, Add, Mul, Max, Min };
enum class PadMode { Constant, Reflect, Edge, Wrap };
enum class ResizeMode { Nearest, Linear, Cubic };
enum class ResizeCoordinates {
  HalfPixel,
  Asymmetric,
  AlignCorners,
  PytorchHalfPixel,
  TfHalfPixelForNn,
  TfCropAndResize  // ResizeOptions::roi picks the region; outside it, extrapolation_value
};
enum class ResizeNearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

struct ResizeOptions {
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoordinates coordinates = ResizeCoordinates::HalfPixel;
  ResizeNearest nearest = ResizeNearest::RoundPreferFloor;
  // The model's scales when it gives scales rather than sizes (ONNX maps coordinates with the
  // given scale, not out/in); 0 means output size / input size.
  float scale_h = 0.f, scale_w = 0.f;
  float cubic_coeff_a = -0.75f;  // Cubic: Keys' A (-0.75 as PyTorch, -0.5 as TensorFlow)
  // Cubic: taps outside the image get weight 0, the rest renormalised.
  bool exclude_outside = false;
  // TfCropAndResize: the region of H and W resized, normalised (0 and 1 are the image's first
  // and last pixel centres, and it may reach beyond them): {start_h, start_w, end_h, end_w},
  // and the value of outputs that map outside the image.
  std::array<float, 4> roi{0.f, 0.f, 1.f, 1.f};
  double extrapolation_value = 0.0;
};

// A stored tensor read as `shape` through an element offset and a (non-negative) element
// stride per dim, without a copy: element (i0, i1, ...) of the view is element
// offset + i0 * strides[0] + i1 * strides[1] + ... of `tensor` (flat, row-major). Q, K and V
// split from one packed projection ([S, B, 3E]: Q at offset 0, K at E, V at 2E) are such views.
struct StridedView {
  TensorRef tensor;
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};
// ONNX Reshape: 0 copies the input's dim (unless allowzero), one -1 is inferred. A view, no copy.
TensorRef reshape(ComputeGraph& g, TensorRef x, const Shape& shape, bool allowzero = false);
// perm empty: reverse the dims.
TensorRef transpose(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& perm = {});
// transpose's `perm` for a tensor of `shape` (empty: the dims reversed); throws InvalidArgument
// naming `op` unless it is a permutation of the dims.
std::vector<int64_t> resolve_perm(const Shape& shape, std::vector<int64_t> perm,
                                  const std::string& op);
TensorRef concat(ComputeGraph& g, const std::vector<TensorRef>& inputs, int64_t axis);
// concat of views: each part's elements read through its strides straight into their place in
// the result, one copy per part and none of the views themselves (a Slice, Transpose or
// strided Gather the fusion pass elided; Swin's cyclic shifts and patch merging).
TensorRef concat_views(ComputeGraph& g, const std::vector<StridedView>& parts, int64_t axis);
// One output per entry of `sizes`, which must sum to the axis length.
std::vector<TensorRef> split(ComputeGraph& g, TensorRef x, int64_t axis,
                             const std::vector<int64_t>& sizes);
// axes empty: 0, 1, ...; steps empty: all 1. Starts and ends clamp to the dim, as in ONNX.
TensorRef slice(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, const std::vector<int64_t>& axes = {},
                const std::vector<int64_t>& steps = {});
// indices: Int32 or Int64, negative ones count from the end. Out-of-range indices throw when
// `indices` is a constant; computed ones read zero (gather, gather_elements) or are skipped
// (scatter_elements).
TensorRef gather(ComputeGraph& g, TensorRef data, TensorRef indices, int64_t axis = 0);
TensorRef gather_elements(ComputeGraph& g, TensorRef data, TensorRef indices, int64_t axis = 0);
// Reductions other than None take f32, i32, i64. Duplicate indices apply in order (the last
// wins with None), deterministically.
TensorRef scatter_elements(ComputeGraph& g, TensorRef data, TensorRef indices, TensorRef updates,
                           int64_t axis = 0, ScatterReduction reduction = ScatterReduction::None);
// Elements of x read as `shape` through an element offset and an element stride per dim
// (non-negative; element (i0, i1, ...) is x's flat element offset + i0 * strides[0] + ...), into
// a new contiguous tensor: what the fusion pass's views (Gather, Slice, Reshape of a transposed
// tensor) are when a reader needs them stored. No copy when that reads all of x in order.
TensorRef as_strided(ComputeGraph& g, TensorRef x, const Shape& shape,
                     const std::vector<int64_t>& strides, int64_t offset = 0);
// Bidirectional broadcast of x against `shape`.
TensorRef expand(ComputeGraph& g, TensorRef x, const Shape& shape);
TensorRef tile(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& repeats);
// pads: all begins, then all ends, for `axes` (empty: every axis); negative pads crop. `value`
// (Constant mode) is converted to x's dtype.
TensorRef pad(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& pads,
              PadMode mode = PadMode::Constant, double value = 0.0,
              const std::vector<int64_t>& axes = {});
// x: NCHW; out_shape: [N, C, H', W'] (only H and W change). Nearest: any dtype; Linear and
// Cubic: f32, f16.
TensorRef resize(ComputeGraph& g, TensorRef x, const Shape& out_shape,
                 const ResizeOptions& options = {});

}  // namespace vkgraph::ops

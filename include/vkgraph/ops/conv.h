#pragma once
// Convolution, pooling and normalization (src/ops/conv, pool, norm). Tensors are NCHW (NCDHW
// for 3-D), float32 or float16. Pads are ONNX-ordered: all begins, then all ends
// ({top, left, bottom, right} in 2-D).
#include <array>
#include <cstdint>
#include <optional>

#include "vkgraph/ops/elementwise.h"

namespace vkgraph::ops {

struct Conv2dParams {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  std::array<int64_t, 2> dilations{1, 1};
  int64_t groups = 1;
};

// Activations the convolutions fuse after the bias (the `epilogue` list in
// src/ops/unary.cmake): Identity, Relu, LeakyRelu, Clip (ReLU6 is {0, 6}), Sigmoid, Tanh,
// HardSigmoid, HardSwish, Gelu (exact erf), GeluTanh, Silu.
bool conv_can_fuse(UnaryOp activation);

// What conv1d/2d/3d apply to each output element in the same pass: + bias [Cout], + residual
// (a ResNet block's skip connection; one that only broadcasts to the output costs an add),
// then the activation, with `activation_params` as in unary().
struct ConvEpilogue {
  std::optional<TensorRef> bias;
  std::optional<UnaryOp> activation;
  UnaryParams activation_params;
  std::optional<TensorRef> residual;
};

// x: [N, Cin, H, W]; weight: [Cout, Cin/groups, kH, kW] (constant or computed).
// Output [N, Cout, Hout, Wout], Hout = (H + top + bottom - dilation*(kH-1) - 1) / stride + 1.
TensorRef conv2d(ComputeGraph& g, TensorRef x, TensorRef weight, const Conv2dParams& params = {},
                 const ConvEpilogue& epilogue = {});

struct Conv1dParams {
  int64_t stride = 1;
  std::array<int64_t, 2> pads{0, 0};  // begin, end
  int64_t dilation = 1;
  int64_t groups = 1;
};

// x: [N, Cin, L]; weight: [Cout, Cin/groups, k].
TensorRef conv1d(ComputeGraph& g, TensorRef x, TensorRef weight, const Conv1dParams& params = {},
                 const ConvEpilogue& epilogue = {});

struct Conv3dParams {
  std::array<int64_t, 3> strides{1, 1, 1};
  std::array<int64_t, 6> pads{0, 0, 0, 0, 0, 0};  // front, top, left, back, bottom, right
  std::array<int64_t, 3> dilations{1, 1, 1};
  int64_t groups = 1;
};

// x: [N, Cin, D, H, W]; weight: [Cout, Cin/groups, kD, kH, kW]. conv1d and conv2d are this
// with unit leading spatial dims; a 3-D input whose depth window is trivial (D = kD = 1, no
// depth pads) runs the 2-D kernels.
TensorRef conv3d(ComputeGraph& g, TensorRef x, TensorRef weight, const Conv3dParams& params = {},
                 const ConvEpilogue& epilogue = {});

struct ConvTranspose2dParams {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 2> output_padding{0, 0};
  int64_t groups = 1;
};

// x: [N, Cin, H, W]; weight: [Cin, Cout/groups, kH, kW]; bias: [Cout]. Output size
// Hout = (H - 1) * stride - top - bottom + dilation * (kH - 1) + output_padding + 1.
TensorRef conv_transpose2d(ComputeGraph& g, TensorRef x, TensorRef weight,
                           std::optional<TensorRef> bias = std::nullopt,
                           const ConvTranspose2dParams& params = {});

struct ConvTranspose3dParams {
  std::array<int64_t, 3> strides{1, 1, 1};
  std::array<int64_t, 6> pads{0, 0, 0, 0, 0, 0};  // front, top, left, back, bottom, right
  std::array<int64_t, 3> dilations{1, 1, 1};
  std::array<int64_t, 3> output_padding{0, 0, 0};
  int64_t groups = 1;
};

// x: [N, Cin, D, H, W]; weight: [Cin, Cout/groups, kD, kH, kW]; bias: [Cout]. Each output size
// as conv_transpose2d's; conv_transpose2d is this with unit depth.
TensorRef conv_transpose3d(ComputeGraph& g, TensorRef x, TensorRef weight,
                           std::optional<TensorRef> bias = std::nullopt,
                           const ConvTranspose3dParams& params = {});

struct Pool2dParams {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  std::array<int64_t, 2> dilations{1, 1};
  bool ceil_mode = false;
  bool count_include_pad = false;  // avg_pool2d only: divide by the taps inside the pads too
};

// x: [N, C, H, W], ONNX MaxPool / AveragePool: with ceil_mode the output size rounds up, but a
// window that would start in the bottom/right padding is dropped. Max ignores padding; a
// window with no input element gives -inf (max) or 0 (avg). max_pool2d / max_pool3d also take
// Int8 / UInt8 x (QDQ MaxPool): the bytes' maximum, the type's minimum for no element.
TensorRef max_pool2d(ComputeGraph& g, TensorRef x, const Pool2dParams& params);
TensorRef avg_pool2d(ComputeGraph& g, TensorRef x, const Pool2dParams& params);
struct Pool3dParams {
  std::array<int64_t, 3> kernel{1, 1, 1};
  std::array<int64_t, 3> strides{1, 1, 1};
  std::array<int64_t, 6> pads{0, 0, 0, 0, 0, 0};  // front, top, left, back, bottom, right
  std::array<int64_t, 3> dilations{1, 1, 1};
  bool ceil_mode = false;
  bool count_include_pad = false;
};

// x: [N, C, D, H, W]; as max_pool2d / avg_pool2d with a depth dim (those run this kernel).
TensorRef max_pool3d(ComputeGraph& g, TensorRef x, const Pool3dParams& params);
TensorRef avg_pool3d(ComputeGraph& g, TensorRef x, const Pool3dParams& params);
// x: [N, C, D1, ...] (at least one spatial dim) -> [N, C, 1, ...].
TensorRef global_avg_pool(ComputeGraph& g, TensorRef x);
TensorRef global_max_pool(ComputeGraph& g, TensorRef x);

// Inference BatchNormalization: x [N, C, ...]; scale, bias, mean, var: [C].
TensorRef batch_norm_inference(ComputeGraph& g, TensorRef x, TensorRef scale, TensorRef bias,
                               TensorRef mean, TensorRef var, float epsilon = 1e-5f);
// Normalizes over dims [axis, rank). scale and bias broadcast to those dims (their non-1 dims
// must be one contiguous run, e.g. [D] or [S, D] for a [S, D] row).
TensorRef layer_norm(ComputeGraph& g, TensorRef x, TensorRef scale,
                     std::optional<TensorRef> bias = std::nullopt, int64_t axis = -1,
                     float epsilon = 1e-5f);
// LayerNormalization over the channels (dim 1) of a channels-first x [N, C, D1, ...], as a
// Transpose to channels-last followed by layer_norm over the last dim: y is [N, D1, ..., C]
// with `channels_last`, else x's shape (torchvision's LayerNorm2d, ConvNeXt's downsampling).
// scale and bias: [C]. One dispatch, no transposed copy.
TensorRef channel_layer_norm(ComputeGraph& g, TensorRef x, TensorRef scale,
                             std::optional<TensorRef> bias, float epsilon, bool channels_last);
// layer_norm, and from the same kernel DynamicQuantizeLinear's range partials of y: a Float32
// [rows, 2] tensor (rows: the product of x's dims before `axis`, at least 1) of each row's
// (min, max) of y, 0 included. As dynamic_quant_range's partials, they stand for its pass over
// y (dynamic_quantize_packed, dynamic_quant_matmul). Float32 x only (Unsupported otherwise).
struct NormWithRange {
  TensorRef y, range;
};
NormWithRange layer_norm_with_range(ComputeGraph& g, TensorRef x, TensorRef scale,
                                    std::optional<TensorRef> bias = std::nullopt, int64_t axis = -1,
                                    float epsilon = 1e-5f);
// RMSNorm (Llama, T5): x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale, no mean
// subtracted; scale broadcast as layer_norm's.
TensorRef rms_norm(ComputeGraph& g, TensorRef x, TensorRef scale, int64_t axis = -1,
                   float epsilon = 1e-6f);
// x: [N, C, D1, ...] (at least one spatial dim); scale, bias: [C].
TensorRef instance_norm(ComputeGraph& g, TensorRef x, TensorRef scale, TensorRef bias,
                        float epsilon = 1e-5f);
// x: [N, C, ...]; statistics per (sample, group of C/groups channels); scale, bias: [C].
TensorRef group_norm(ComputeGraph& g, TensorRef x, TensorRef scale, TensorRef bias, int64_t groups,
                     float epsilon = 1e-5f);

}  // namespace vkgraph::ops

#pragma once
// RMSNorm as exporters write it (Llama's LlamaRMSNorm, T5's LayerNorm), found by the fusion pass
// (fuse.h) and lowered to one ops::rms_norm dispatch instead of six or seven elementwise and
// reduction dispatches:
//
//   Pow(x, 2) | Mul(x, x) -> ReduceMean(last axis, keepdims) -> Add(epsilon)
//     -> Sqrt -> { Reciprocal | Div(1, ·) } -> Mul(x, ·)   or   -> Sqrt -> Div(x, ·)
//     [-> Cast(to float)] [-> Mul(weight)]                 => FusedRmsNorm(x, weight)
//
// Every intermediate must have one reader and not be a model output; x may have other readers
// (the residual). Attributes of FusedRmsNorm: "epsilon" (float), "axis" (int, -1).
#include <onnx/onnx_pb.h>

#include <optional>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Rooted at the Pow (or Mul) squaring x.
std::optional<Fusion> rms_norm(const onnx::NodeProto& square, Pass& pass);

// Transpose(x, [0, 2, ..., 1]) -> LayerNormalization(last axis, [C] scale and bias) [->
// Transpose back to channels-first] => ChannelLayerNorm(x, scale[, bias]): ops::channel_layer_norm
// reads the channels of x in place (attribute "channels_last": whether y stays channels-last,
// the second Transpose absent), one dispatch instead of two or three (ConvNeXt's LayerNorms;
// knob fuse.channel_norm=0 keeps the nodes). Rooted at the first Transpose.
std::optional<Fusion> channel_layer_norm(const onnx::NodeProto& transpose, Pass& pass);

}  // namespace vkgraph::onnx_import::fuse

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

}  // namespace vkgraph::onnx_import::fuse

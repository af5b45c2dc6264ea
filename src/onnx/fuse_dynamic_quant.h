#pragma once
// The dynamic-quantization patterns of the fusion pass (fuse.h): the linear layers onnxruntime's
// quantize_dynamic writes (QOperator format, a MatMul with a constant weight),
//
//   x -> DynamicQuantizeLinear -> x_q, x_scale, x_zero
//   MatMulInteger(x_q, w_q, x_zero[, w_zero]) -> Cast(to float) ─┐
//   Mul(x_scale, w_scale) ────────────────────────────────────────┴─> Mul [-> Add(bias)] -> y
//
// run as two dispatches instead of about nine: one DynamicQuantizeLinear often feeds several
// layers (a transformer's Q, K and V projections read one). Where every reader of its three
// outputs is such a layer, it becomes a DynamicQuantRange node (ops::dynamic_quant_range: the
// (min, max) partials of x) and each layer one DynamicQuantMatMul (ops::dynamic_quant_matmul: an
// integer GEMM that quantizes x as it loads and computes the Cast, Mul and Add in its epilogue,
// the unfused float32 operations in the unfused order). The scale products Mul(x_scale,
// w_scale) are absorbed by their layer, or elided where the model lists them before it.
// Otherwise nothing fuses and the ops run one by one.
#include <onnx/onnx_pb.h>

#include <optional>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Rooted at DynamicQuantizeLinear: replaced by DynamicQuantRange when all its readers are layers.
std::optional<Fusion> dynamic_quant_range(const onnx::NodeProto& dql, Pass& pass);
// Rooted at MatMulInteger: the layer, once its DynamicQuantizeLinear became DynamicQuantRange.
std::optional<Fusion> dynamic_quant_matmul(const onnx::NodeProto& mmi, Pass& pass);
// Rooted at Mul: a layer's scale product listed before its MatMulInteger, elided.
std::optional<Fusion> dynamic_quant_scale(const onnx::NodeProto& mul, Pass& pass);

// DynamicQuantMatMul's inputs: x (the float activation), DynamicQuantRange's output, the
// weight, its zero point (or empty), its scale, the bias (or empty).
enum DynamicQuantInput : int { kDqX, kDqRange, kDqW, kDqWZero, kDqWScale, kDqBias, kDqInputs };

// The name of DynamicQuantRange's output for a DynamicQuantizeLinear `dql`.
std::string dynamic_range_name(const onnx::NodeProto& dql);

}  // namespace vkgraph::onnx_import::fuse

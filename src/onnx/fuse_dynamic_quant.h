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
// (min, max) partials of x, and x quantized once where ops::dynamic_quantize_packed applies)
// and each layer one DynamicQuantMatMul (ops::dynamic_quant_matmul: an integer GEMM that
// computes the Cast, Mul and Add in its epilogue, the unfused float32 operations in the unfused
// order). The scale products Mul(x_scale, w_scale) are absorbed by their layer, or elided where
// the model lists them before it. As FusedMatMul, a layer also absorbs a residual Add and then
// an activation that follow it (a transformer's skip connections and GELU; attribute
// "activation"). Otherwise nothing fuses and the ops run one by one.
//
// Where x is a LayerNormalization's only output (BERT's layers begin so) and the
// DynamicQuantizeLinear reading it will become DynamicQuantRange, the LayerNormalization becomes
// LayerNormRange (ops::layer_norm_with_range): x, and from the same kernel one range partial per
// row, which DynamicQuantRange takes as its second input instead of running its range pass
// (knob qdyn.norm_range, 1; rows up to ops::dynamic_quant_range's most partials, 1024; not in
// float16 mode, since the partials are for float32 x only). The partials are the min and max of
// x as stored, so the results are the same bit for bit.
#include <onnx/onnx_pb.h>

#include <optional>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Rooted at DynamicQuantizeLinear: replaced by DynamicQuantRange when all its readers are layers.
std::optional<Fusion> dynamic_quant_range(const onnx::NodeProto& dql, Pass& pass);
// Rooted at LayerNormalization: LayerNormRange, where a DynamicQuantizeLinear that becomes
// DynamicQuantRange reads its output. Its inputs and attributes are the LayerNormalization's,
// its outputs y and the range partials (named dynamic_range_name of that node).
std::optional<Fusion> norm_range(const onnx::NodeProto& ln, Pass& pass);
// Rooted at MatMulInteger: the layer, once its DynamicQuantizeLinear became DynamicQuantRange.
std::optional<Fusion> dynamic_quant_matmul(const onnx::NodeProto& mmi, Pass& pass);
// Rooted at MatMulInteger: the layers of one DynamicQuantizeLinear whose results are only
// viewed (a transformer's Q, K and V projections, read by the heads' Reshape), as one
// DynamicQuantSiblingMatMul: one integer GEMM over the weights concatenated along N (their
// zero points, scales and biases per column), each layer's result a view of the packed output
// at its column offset, as fuse_siblings.h does for float weights (knob fuse.siblings too).
std::optional<Fusion> dynamic_quant_siblings(const onnx::NodeProto& mmi, Pass& pass);
// Rooted at Mul: a layer's scale product listed before its MatMulInteger, elided.
std::optional<Fusion> dynamic_quant_scale(const onnx::NodeProto& mul, Pass& pass);

// DynamicQuantMatMul's inputs: x (the float activation), DynamicQuantRange's first output, the
// weight, its zero point (or empty), its scale, the bias (or empty), DynamicQuantRange's second
// output (x quantized once: ops::dynamic_quantize_packed; an empty placeholder where that does
// not apply).
enum DynamicQuantInput : int {
  kDqX,
  kDqRange,
  kDqW,
  kDqWZero,
  kDqWScale,
  kDqBias,
  kDqPacked,
  kDqResidual,  // a float tensor of y's shape added after the bias (or empty)
  kDqInputs
};

// DynamicQuantSiblingMatMul's inputs: x, DynamicQuantRange's two outputs (as kDqRange and
// kDqPacked), then per member (attribute "members") its weight, zero point (or empty), scale
// and bias (all members biased or none); its output is the packed result [..., sum N_i].
enum DynamicQuantSiblingInput : int {
  kDqsX,
  kDqsRange,
  kDqsPacked,
  kDqsMembers,  // the first member's weight
  kDqsPerMember = 4
};

// The names of DynamicQuantRange's outputs for a DynamicQuantizeLinear `dql`: the range
// partials and the packed quantized x. A DynamicQuantRange reads its input 1, where present,
// as x's range partials (LayerNormRange's second output, of the same name).
std::string dynamic_range_name(const onnx::NodeProto& dql);
std::string dynamic_packed_name(const onnx::NodeProto& dql);

}  // namespace vkgraph::onnx_import::fuse

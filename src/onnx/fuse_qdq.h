#pragma once
// The QDQ patterns of the fusion pass (fuse.h): the layout onnxruntime's quantize_static writes
// (QDQ format) runs as integer kernels instead of float ops behind dequantized tensors.
//
//   DequantizeLinear(x_q) ─┐
//   DequantizeLinear(w_q) ─┼─> Conv | MatMul | Gemm [-> Relu | Clip] -> QuantizeLinear -> y_q
//   [DequantizeLinear(b)] ─┘
//
// becomes one QdqConv / QdqMatMul / QdqGemm node: int8 x int8 sums in int32 and one
// requantization in the epilogue (ops::qlinear_conv / qlinear_matmul), the Relu or Clip as the
// output's integer range, the bias as int32. x and y are per tensor; w per tensor or per output
// channel, a constant (narrowed to 8 bits once, at load) or, for MatMul, an 8-bit device tensor.
//
// A Conv's residual Add (Conv's QuantizeLinear -> DequantizeLinear -> Add(., DequantizeLinear(r))
// [-> Relu | Clip] -> QuantizeLinear, where r is computed before the Conv) joins the QdqConv:
// its epilogue requantizes, then adds r as the QdqAdd kernel does (ops::ResidualAdd).
//
// The same for a residual connection, Add(DequantizeLinear(a), DequantizeLinear(b)) [-> Relu |
// Clip] -> QuantizeLinear, all per tensor: one QdqAdd node (ops::qlinear_add), which computes
// exactly what the three ops compute apart, without the float tensors between. Likewise a Mul
// (a squeeze-excitation gate times its features): one QdqMul node (ops::qlinear_mul,
// onnxruntime's QLinearMul arithmetic), the gate repeated over the features' trailing dims.
//
// A unary op between per-tensor quantizations, DequantizeLinear -> f [-> Relu | Clip] ->
// QuantizeLinear (a QDQ model's HardSwish, HardSigmoid, Sigmoid, ...), becomes one QdqTable
// node: y depends on x's byte alone, so the lowering evaluates the chain once per byte value
// (unary_on_host) and the model runs a 256-entry lookup (ops::byte_table) on the bytes. Where
// that chain is the sole reader of a QdqConv / QdqMatMul / QdqGemm's output (and no residual Add
// joined it), it joins that node instead: the kernel's epilogue looks its bytes up
// (ops::ByteTable), one dispatch fewer and no byte tensor between.
//
// A DequantizeLinear whose every reader becomes such a node is elided (rooted at it, which
// comes first in node order), so activations stay 8-bit in memory from one integer kernel to
// the next; one with any other reader is computed as before, and the integer kernels still
// read its 8-bit input.
#include <onnx/onnx_pb.h>

#include <optional>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Rooted at Conv, MatMul, Gemm, Add, the pools, Flatten or a unary op.
std::optional<Fusion> qdq_linear(const onnx::NodeProto& root, Pass& pass);
// f(v) for a QdqTable: float32 arithmetic where unary.comp's is exact (the piecewise-linear
// ops), else double rounded once; nullopt for an op it does not evaluate (the pattern then
// does not fire).
std::optional<float> unary_on_host(ops::UnaryOp op, const ops::UnaryParams& params, float v);
// Rooted at DequantizeLinear: elides it when all its readers match qdq_linear (a bias's also
// when they read it through Identity nodes, which it elides with it).
std::optional<Fusion> qdq_dequantize(const onnx::NodeProto& dq, Pass& pass);
// Rooted at Identity: one that qdq_dequantize elided with its bias, skipped.
std::optional<Fusion> qdq_forwarded_bias(const onnx::NodeProto& identity, Pass& pass);

// The fused node's inputs (absent ones: empty names). kQdqBias is a float32 constant, or the
// int32 constant of a dequantized bias whose scale is kQdqBiasScale. Attributes: the root's
// (Conv's window, Gemm's transB) and, for a fused Relu / Clip, "act_lo" and "act_hi" (floats,
// the bounds in the float domain) and "y_dtype" (the ONNX type of y). QdqAdd reads a at kQdqX..
// kQdqXZero, b at kQdqW..kQdqWZero and y's scale and zero point at kQdqYScale, kQdqYZero.
enum QdqInput : int {
  kQdqX,
  kQdqXScale,
  kQdqXZero,
  kQdqW,
  kQdqWScale,
  kQdqWZero,
  kQdqYScale,
  kQdqYZero,
  kQdqBias,
  kQdqBiasScale,
  // A QdqConv with a fused residual Add (ResNet's block end: the Conv's QuantizeLinear -> DQ ->
  // Add(., DQ(r)) [-> Relu | Clip] -> QuantizeLinear, whose output the node then has): r, its
  // scale and zero point, the scale and zero point of the DQ reading the Conv's output, and
  // the Add's QuantizeLinear's. Attributes "sum_act_lo", "sum_act_hi" (a Relu / Clip after the
  // Add), "sum_dtype" (the ONNX type of the Add's quantized output) and "sum_conv_second" (1 where
  // the Conv's output is the Add's second input).
  kQdqRes,
  kQdqResScale,
  kQdqResZero,
  kQdqConvOutScale,
  kQdqConvOutZero,
  kQdqSumScale,
  kQdqSumZero,
  // A QdqConv / QdqMatMul / QdqGemm with a fused QDQ unary op (the node's QuantizeLinear -> DQ ->
  // f [-> Relu | Clip] -> QuantizeLinear, whose output the node then has): the DQ's scale and
  // zero point, then the last QuantizeLinear's. Attributes "table_op" (the model's op type),
  // "table_activation", "table_activation_params", "table_act_lo", "table_act_hi" and
  // "table_dtype", as a QdqTable's "model_op", "activation", ... The residual inputs are empty.
  kQdqTableXScale,
  kQdqTableXZero,
  kQdqTableYScale,
  kQdqTableYZero,
  kQdqInputs
};

}  // namespace vkgraph::onnx_import::fuse

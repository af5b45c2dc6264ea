#pragma once
// The weight-only pattern of the fusion pass (fuse.h): an LLM linear layer exported with a
// blocked low-bit weight (opset 21's DequantizeLinear with block_size),
//
//   DequantizeLinear(w_q [K, N] int4 | uint4 | int8 | uint8 constant, scale [K / B, N],
//                    [zero point], axis 0, block_size B) -> MatMul(x, .)
//
// runs as one WeightOnlyMatMul node, lowered to ops::matmul_nbits (the decode GEMV or the
// tiled GEMM, the weights unpacked in registers) on the weights re-laid at load in MatMulNBits'
// layout, instead of dequantizing the whole weight to float on every run and a float MatMul.
// B is a power of two >= 16 (the kernels' blocks are whole 32-bit words), x is float.
//
// The DequantizeLinear is elided (rooted at it, first in node order) when every reader is such
// a MatMul (reading it as B) and it is no model output; otherwise it is computed as before and
// the MatMuls read its float output.
#include <onnx/onnx_pb.h>

#include <optional>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Rooted at DequantizeLinear: elides it when all its readers will be WeightOnlyMatMuls.
std::optional<Fusion> weight_only_dequantize(const onnx::NodeProto& dq, Pass& pass);
// Rooted at MatMul: reads an elided weight-only DequantizeLinear's output as B.
std::optional<Fusion> weight_only_matmul(const onnx::NodeProto& root, Pass& pass);

// The fused node's inputs: x, then the DequantizeLinear's w_q, scale and zero point (absent:
// an empty name). Attribute: block_size.
inline constexpr int kWeightOnlyX = 0, kWeightOnlyW = 1, kWeightOnlyScale = 2, kWeightOnlyZero = 3;

}  // namespace vkgraph::onnx_import::fuse

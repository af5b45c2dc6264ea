#pragma once
// Quantization ops (src/ops/quant): linear (de)quantization, integer matmul and convolution
// with int32 accumulation, and weight-only low-bit matmul (MatMulNBits).
//
// Quantized tensors are Int8 or UInt8: one byte per element in 8-bit storage buffers
// (storageBuffer8BitAccess), widened to int32 inside the kernels, so no shaderInt8 is needed.
// Scales are Float32 tensors. Zero points may be Int8, UInt8 or Int32 tensors (Int32 holds the
// 8-bit value; the ONNX frontend widens int8/uint8 values to it); an absent zero point is 0.
// Rounding is to nearest, ties to even, and results saturate to the quantized type's range, as
// ONNX QuantizeLinear specifies.
#include <array>
#include <optional>

#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/ops/elementwise.h"

namespace vkgraph::ops {

// Which elements share a scale and zero point. PerTensor: scale and zero point are scalars
// (or one-element tensors). PerAxis: 1-D of the length of x's dim `axis`. Blocked (ONNX opset
// 21): scale has x's shape except dim `axis`, which is ceil(dim / block_size).
struct QuantAxis {
  int64_t axis = 1;
  int64_t block_size = 0;  // 0: per tensor or per axis, chosen from the scale's shape
};

// y = saturate(round_half_even(x / scale) + zero_point); x: Float32 or Float16; `out`: Int8
// or UInt8. NaN quantizes to the zero point. `range` saturates to a narrower [lo, hi] within
// out's: [-8, 7] or [0, 15] for ONNX's int4 / uint4, held in 8-bit storage.
TensorRef quantize_linear(ComputeGraph& g, TensorRef x, TensorRef scale,
                          std::optional<TensorRef> zero_point, DType out, QuantAxis axis = {},
                          std::optional<std::array<int32_t, 2>> range = std::nullopt);
// y = (x - zero_point) * scale, Float32; x: Int8, UInt8 or Int32.
TensorRef dequantize_linear(ComputeGraph& g, TensorRef x, TensorRef scale,
                            std::optional<TensorRef> zero_point, QuantAxis axis = {});

struct DynamicQuantized {
  TensorRef y;           // UInt8, x's shape
  TensorRef scale;       // Float32 scalar
  TensorRef zero_point;  // UInt8 scalar
};
// ONNX DynamicQuantizeLinear: the range [min(0, min x), max(0, max x)] maps onto [0, 255];
// scale = range / 255, zero_point = saturate(round(-min / scale)), y = quantize_linear(x).
// An all-zero x gives scale 0, zero point 0 and y 0. x: Float32.
DynamicQuantized dynamic_quantize_linear(ComputeGraph& g, TensorRef x);
// DynamicQuantizeLinear's first pass: per-workgroup (min, max) partials of x (Float32, or
// Float16 in float16 mode), a Float32 [partials, 2] tensor; the second pass reduces them
// (dynamic_quantize_linear, or each workgroup of dynamic_quant_matmul itself). Matmuls reading one
// activation share one range.
TensorRef dynamic_quant_range(ComputeGraph& g, TensorRef x);
// dynamic_quantize_linear(x) with the range dynamic_quant_range(x) computed already.
DynamicQuantized dynamic_quantize_linear(ComputeGraph& g, TensorRef x, TensorRef range);
// x quantized once with the parameters of `range` (dynamic_quant_range(x)) for the
// dynamic_quant_matmul layers reading it: Int32 [numel / 4], four uint8 values to a word (low
// byte first), DynamicQuantizeLinear's values. Nothing where it does not apply: numel(x) % 4 !=
// 0, or tuning knob qdyn.prequant = 0 (the GEMMs then quantize x as they load it) or
// qgemm.packed = 0.
std::optional<TensorRef> dynamic_quantize_packed(ComputeGraph& g, TensorRef x, TensorRef range);

// onnxruntime quantize_dynamic's linear layer, DynamicQuantizeLinear(x) -> MatMulInteger(x_q,
// w, x_zero, w_zero) -> Cast(float) -> Mul(., x_scale * w_scale) [-> Add(bias)], as one integer
// GEMM after the range pass: x ([..., K]) is quantized as it loads and the epilogue computes the
// float32 Cast, Mul and Add, so the result is the unfused ops' bit for bit. w: Int8 or UInt8 [K,
// N]; w_zero (8-bit or Int32) and w_scale (Float32) per tensor or per column; bias [N]; `range`
// from dynamic_quant_range(x). Returns [..., N] of x's dtype. x may be Float16 (float16 mode):
// bias, residual and y are then Float16 too, and the epilogue still computes in float32, rounding
// once as it stores. Where the packed GEMM does not apply (w not a constant, K % 4 != 0,
// qgemm.packed=0) the ops run apart, in float32. The epilogue: bias [N]; then a residual (y's
// shape) added; then an activation, as the float matmul's epilogue (ops::matmul_can_fuse) computes
// it. `x_packed`: dynamic_quantize_packed(x, range), which the GEMM then reads instead of x.
struct DynamicQuantEpilogue {
  std::optional<TensorRef> bias;
  std::optional<TensorRef> x_packed;
  std::optional<TensorRef> residual;
  std::optional<UnaryOp> activation;
  UnaryParams activation_params;
};
TensorRef dynamic_quant_matmul(ComputeGraph& g, TensorRef x, TensorRef range, TensorRef w,
                               std::optional<TensorRef> w_zero, TensorRef w_scale,
                               const DynamicQuantEpilogue& epilogue = {});

// Between Int8/UInt8 and Int32 (also Int8 <-> UInt8): widening is exact, narrowing keeps the
// low 8 bits (two's complement), as ONNX Cast does. ops::cast forwards here.
TensorRef convert_quantized(ComputeGraph& g, TensorRef x, DType to);

// numpy.matmul of (a - a_zero_point) and (b - b_zero_point), Int32 (accumulation wraps in 32
// bits). a: [..., M, K], b: [..., K, N], Int8 or UInt8, batch dims broadcast. a_zero_point: a
// scalar or one per row of a (M values); b_zero_point: a scalar or one per column (N values).
TensorRef matmul_integer(ComputeGraph& g, TensorRef a, TensorRef b,
                         std::optional<TensorRef> a_zero_point = std::nullopt,
                         std::optional<TensorRef> b_zero_point = std::nullopt);

// A quantized operand: values with their scale and zero point (per tensor unless said).
struct QuantizedOperand {
  TensorRef values;
  TensorRef scale;
  std::optional<TensorRef> zero_point;
};
// What a fused requantizing epilogue adds (QDQ models, src/onnx/fuse_qdq.cpp): an Int32 bias
// (one value per output channel, in units of a_scale * b_scale) added to the sums, and a
// narrower output range than the type's. A Relu or Clip before QuantizeLinear is such a range:
// quantization is monotone, so Q(clip(v, lo, hi)) = clamp(Q(v), Q(lo), Q(hi)) exactly.
// A QDQ unary op after a requantizing kernel (DequantizeLinear -> HardSwish -> QuantizeLinear
// after a convolution's QuantizeLinear): byte_table's lookup of the requantized bytes, applied in
// the kernel's epilogue where it can be, else by a byte_table after it (the same values). The
// result is of type `out`.
struct ByteTable {
  std::array<uint8_t, 256> bytes{};
  DType out = DType::UInt8;
};

struct RequantEpilogue {
  std::optional<TensorRef> bias;
  std::optional<std::array<int32_t, 2>> range;  // [lo, hi] within out's range
  std::optional<ByteTable> table;
};

// ONNX QLinearMatMul: matmul_integer, then requantized once in the epilogue:
// y = saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zero_point), `out` Int8 or
// UInt8. a's scale and zero point may be per row, b's per column.
TensorRef qlinear_matmul(ComputeGraph& g, const QuantizedOperand& a, const QuantizedOperand& b,
                         const QuantizedOperand& y_params, DType out,
                         const RequantEpilogue& epilogue = {});

// A QDQ residual Add as one kernel: y = saturate(round_half_even(((a - a_zero) * a_scale +
// (b - b_zero) * b_scale) / y_scale) + y_zero), in float32 as onnxruntime's QLinearAdd
// computes it (scale ratios to y_scale and a folded constant, src/ops/quant.glsl), so a QDQ
// model's Adds match its CPU result exactly; `range` narrows the output range
// (RequantEpilogue::range). a is the Add's first input. a and b: Int8 or UInt8 of one shape;
// every scale and zero point per tensor.
TensorRef qlinear_add(ComputeGraph& g, const QuantizedOperand& a, const QuantizedOperand& b,
                      const QuantizedOperand& y_params, DType out,
                      std::optional<std::array<int32_t, 2>> range = std::nullopt);

// A QDQ Mul as one kernel: y = saturate(round_half_even(float32((a - a_zero) * (b - b_zero)) *
// (a_scale * b_scale / y_scale) + y_zero)), each step rounded in float32 as onnxruntime's
// QLinearMul computes it (src/ops/quant.glsl). a and b: Int8 or UInt8; b of a's shape, or of
// a's shape with trailing dims 1 (repeated over them: a squeeze-excitation gate); every scale
// and zero point per tensor; `range` as qlinear_add's.
TensorRef qlinear_mul(ComputeGraph& g, const QuantizedOperand& a, const QuantizedOperand& b,
                      const QuantizedOperand& y_params, DType out,
                      std::optional<std::array<int32_t, 2>> range = std::nullopt);
// Whether qlinear_mul takes b of shape `b` with a of shape `a` (same rank).
bool qlinear_mul_broadcasts(const Shape& a, const Shape& b);

// y[i] = table[byte of x[i]], of `out` (Int8 / UInt8): a table of 256 bytes indexed by x's stored
// byte (an Int8 value v at index v & 0xff), each the byte y stores. x: Int8 or UInt8.
TensorRef byte_table(ComputeGraph& g, TensorRef x, const std::array<uint8_t, 256>& table,
                     DType out);

// A QDQ GlobalAveragePool, DequantizeLinear -> GlobalAveragePool -> QuantizeLinear, on 8-bit
// x [N, C, D1, ...] -> [N, C, 1, ...] of `out` (Int8 / UInt8): the exact integer sum S of
// (x - x_zero) over each (n, c), then y = saturate(round_half_even(S * m) + y_zero) with
// m = x_scale / (y_scale * count), in float32 as onnxruntime's QLinearGlobalAveragePool.
// Scales and zero points per tensor; count * 255 must stay below 2^24.
TensorRef qlinear_global_avg_pool(ComputeGraph& g, const QuantizedOperand& x,
                                  const QuantizedOperand& y_params, DType out);

// 1-D or 2-D convolution of integer tensors (x [N, C, L] or [N, C, H, W]; weight [M, C/groups,
// k...]); attributes as ONNX Conv, pads all begins then all ends. Padding reads as x's zero point.
struct IntConvParams {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  std::array<int64_t, 2> dilations{1, 1};
  int64_t groups = 1;
};
// ONNX ConvInteger: Int32 sums of (x - x_zero_point) * (w - w_zero_point); x_zero_point a
// scalar, w_zero_point a scalar or one per output channel.
TensorRef conv_integer(ComputeGraph& g, TensorRef x, TensorRef weight,
                       std::optional<TensorRef> x_zero_point, std::optional<TensorRef> w_zero_point,
                       const IntConvParams& params);
// A QDQ residual Add after a quantized convolution (a ResNet block's end):
// qlinear_add({conv's quantized output, conv_scale, conv_zero}, residual, y_params, out, range),
// where conv_scale and conv_zero are those of the DequantizeLinear that reads the conv's output.
struct ResidualAdd {
  TensorRef conv_scale;
  std::optional<TensorRef> conv_zero;
  QuantizedOperand residual;  // the other operand, of the conv output's shape
  QuantizedOperand y_params;
  DType out = DType::UInt8;
  std::optional<std::array<int32_t, 2>> range;
  bool conv_second = false;  // the conv's output is the Add's second input
};
// ONNX QLinearConv: conv_integer plus an Int32 bias [M] (in units of x_scale * w_scale), then
// requantized as qlinear_matmul; w's scale and zero point may be per output channel. With
// `residual`, returns that Add's result instead: computed in the convolution's epilogue where
// the packed kernel runs and every residual parameter is a constant, else as a qlinear_add
// after it (the same values either way). With `table` (not with `residual`), returns the
// table's lookup of the requantized bytes (ByteTable).
TensorRef qlinear_conv(ComputeGraph& g, const QuantizedOperand& x, const QuantizedOperand& w,
                       const QuantizedOperand& y_params, std::optional<TensorRef> bias,
                       const IntConvParams& params, DType out,
                       std::optional<std::array<int32_t, 2>> range = std::nullopt,
                       const std::optional<ResidualAdd>& residual = std::nullopt,
                       const std::optional<ByteTable>& table = std::nullopt);

// com.microsoft MatMulNBits: y = a @ dequant(b)^T (+ bias). a: [..., K] Float32 or Float16;
// b: UInt8 [N, n_blocks, blob] (or any shape of that size), codes of `bits` bits packed low
// first along K in blocks of block_size (a power of two >= 16; n_blocks = ceil(K / block_size),
// blob = block_size * bits / 8); scales: [N, n_blocks] of a's dtype. Weight k of row n is
// (code - zero) * scale[n, block], where block = k / block_size (or g_idx[k], Int32 [K]) and
// zero is 2^(bits-1), or from zero_points: UInt8 packed like b ([N, ceil(n_blocks * bits / 8)])
// or unpacked of a's dtype ([N, n_blocks]). bias: [N] of a's dtype. bits: 2, 4 or 8. Codes are
// unpacked in registers; sums are float32. M = 1 runs a GEMV that reads b once.
struct NBitsParams {
  int64_t k = 0, n = 0, bits = 4, block_size = 32;
  // MatMulNBits' accuracy_level: the least precision a may be computed in. 4 (int8) lets the
  // decode GEMV (M = 1) quantize a to int8 per block and sum on integer dot products where the
  // device has them accelerated (4-bit codes, blocks of 32..256); other levels compute in the
  // graph's float type.
  int64_t accuracy_level = 0;
};
TensorRef matmul_nbits(ComputeGraph& g, TensorRef a, TensorRef b, TensorRef scales,
                       const NBitsParams& params,
                       std::optional<TensorRef> zero_points = std::nullopt,
                       std::optional<TensorRef> g_idx = std::nullopt,
                       std::optional<TensorRef> bias = std::nullopt);

}  // namespace vkgraph::ops

#version 450
// GlobalAveragePool (GLOBAL_AVG) / GlobalMaxPool (GLOBAL_MAX): one workgroup per (n, c) row of
// `cols` spatial elements, reduced in shared memory.
// QUANT8 (GLOBAL_AVG): a QDQ GlobalAveragePool on Int8 / UInt8 bytes, DequantizeLinear ->
// GlobalAveragePool -> QuantizeLinear: the sum of (x - x_zero) is an integer below 2^24 (the
// host checks cols), so the float reduction is exact; then y = saturate(round_half_even(sum *
// m) + y_zero) with one multiplier m = x_scale / (y_scale * cols), in float32 as onnxruntime's
// QLinearGlobalAveragePool (which it runs this pattern as) computes it. Rounding mean =
// sum * x_scale / cols and then mean / y_scale moved exact .5 ties (x_scale 0.1, y_scale 0.05,
// 196 pixels, sum 147: 1.5 came out 1.4999999) one step off ONNX's and onnxruntime's value.
#if QUANT8
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "common.glsl"
#include "row_reduce.glsl"

#if QUANT8
#include "quant.glsl"
layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint8_t y[]; };
layout(std430, binding = 2) readonly buffer XS { float x_scale[]; };
layout(std430, binding = 3) readonly buffer XZ { int x_zero[]; };
layout(std430, binding = 4) readonly buffer YS { float y_scale[]; };
layout(std430, binding = 5) readonly buffer YZ { int y_zero[]; };
#else
layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };
#endif
layout(push_constant) uniform Params {
  int rows;
  int cols;
#if QUANT8
  int is_signed, qmin, qmax;
#endif
} p;

void main() {
  int row = row_index();
  if (row >= p.rows) return;  // uniform across the workgroup
  int base = row * p.cols;
#if GLOBAL_MAX
  float v = uintBitsToFloat(0xff800000u);
  for (int i = int(gl_LocalInvocationID.x); i < p.cols; i += int(gl_WorkGroupSize.x))
    v = max_nan(v, T(x[base + i]));
  float r = workgroup_reduce(v, true);
#elif QUANT8
  float v = 0.0;
  for (int i = int(gl_LocalInvocationID.x); i < p.cols; i += int(gl_WorkGroupSize.x))
    v += float(widen_byte(x[base + i], p.is_signed) - x_zero[0]);
  precise float sum = workgroup_reduce(v, false);
  precise float denominator = y_scale[0] * float(p.cols);
  precise float scaled = sum * div_exact(x_scale[0], denominator);
  int q = quantize_value(scaled, y_zero[0], p.qmin, p.qmax);
  if (gl_LocalInvocationID.x == 0) y[row] = narrow_byte(q);
#else
  float v = 0.0;
  for (int i = int(gl_LocalInvocationID.x); i < p.cols; i += int(gl_WorkGroupSize.x))
    v += T(x[base + i]);
  float r = workgroup_reduce(v, false) / float(p.cols);
#endif
#if !QUANT8
  if (gl_LocalInvocationID.x == 0) y[row] = ELEM(r);
#endif
}

#version 450
// Elementwise quantization, one invocation per element:
//   QUANTIZE    y = saturate(round_half_even(x / scale) + zero_point), x of DTYPE_*
//   DEQUANTIZE  y = (x - zero_point) * scale, float32; x bytes (X_I32: int32, the ONNX
//               frontend's widened int8/uint8 values)
//   WIDEN       int32 <- bytes;  NARROW  bytes <- int32 (low 8 bits)
// Scale and zero point are read per tensor (mode 0), per index along an axis (mode 1) or per
// block along that axis (mode 2: the scale has x's shape with that dim divided into blocks).
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "quant.glsl"

#if QUANTIZE
layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) readonly buffer Scale { float scale[]; };
layout(std430, binding = 2) readonly buffer Zero { int zero[]; };
layout(std430, binding = 3) writeonly buffer Y { uint8_t y[]; };
#elif DEQUANTIZE
#if X_I32
layout(std430, binding = 0) readonly buffer X { int x[]; };
#else
layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
#endif
layout(std430, binding = 1) readonly buffer Scale { float scale[]; };
layout(std430, binding = 2) readonly buffer Zero { int zero[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
#elif WIDEN
layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { int y[]; };
#elif NARROW
layout(std430, binding = 0) readonly buffer X { int x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint8_t y[]; };
#endif

layout(push_constant) uniform Params {
  int n;
  int is_signed;  // WIDEN, DEQUANTIZE: x is Int8
  int qmin, qmax;  // QUANTIZE
  int mode;        // 0 per tensor, 1 per axis, 2 blocked
  int axis_len;    // x's dim along the axis
  int inner;       // elements per step along the axis
  int block;       // mode 2: block size along the axis
  int blocks;      // mode 2: the scale's dim along the axis
} p;

int param_index(int i) {
  if (p.mode == 0) return 0;
  int c = (i / p.inner) % p.axis_len;
  if (p.mode == 1) return c;
  int outer = i / (p.inner * p.axis_len);
  return (outer * p.blocks + c / p.block) * p.inner + i % p.inner;
}

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
#if QUANTIZE
  int j = param_index(i);
  y[i] = narrow_byte(quantize_value(div_exact(float(x[i]), scale[j]), zero[j], p.qmin, p.qmax));
#elif DEQUANTIZE
  int j = param_index(i);
#if X_I32
  int v = x[i];
#else
  int v = widen_byte(x[i], p.is_signed);
#endif
  y[i] = float(v - zero[j]) * scale[j];
#elif WIDEN
  y[i] = widen_byte(x[i], p.is_signed);
#elif NARROW
  y[i] = narrow_byte(x[i]);
#endif
}

#version 450
// y[i] = table[x[i]]: an 8-bit tensor through a 256-entry table indexed by the stored byte
// (quant.cpp's byte_table). A QDQ unary op, DequantizeLinear -> f -> QuantizeLinear, has one
// result per input byte, so the loader evaluates it once per byte value and the model runs
// this lookup instead of three float passes.
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) readonly buffer Table { uint8_t table[]; };
layout(std430, binding = 2) writeonly buffer Y { uint8_t y[]; };

layout(push_constant) uniform Params {
  int n;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  y[i] = table[uint(x[i])];
}

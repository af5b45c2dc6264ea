#version 450
// QDQ residual Add as one integer kernel, one invocation per element:
//   y = saturate(round_half_even(((a - za) * sa + (b - zb) * sb) / sy) + zy)
// within [qmin, qmax] (the type's range, narrowed by a fused Relu / Clip). The same float32
// operations, in the same order, as DequantizeLinear, Add and QuantizeLinear run apart
// (`precise`: no contraction into an fma the separate kernels would not do).
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "quant.glsl"

layout(std430, binding = 0) readonly buffer A { uint8_t a[]; };
layout(std430, binding = 1) readonly buffer B { uint8_t b[]; };
layout(std430, binding = 2) readonly buffer SA { float sa[]; };
layout(std430, binding = 3) readonly buffer ZA { int za[]; };
layout(std430, binding = 4) readonly buffer SB { float sb[]; };
layout(std430, binding = 5) readonly buffer ZB { int zb[]; };
layout(std430, binding = 6) readonly buffer SY { float sy[]; };
layout(std430, binding = 7) readonly buffer ZY { int zy[]; };
layout(std430, binding = 8) writeonly buffer Y { uint8_t y[]; };

layout(push_constant) uniform Params {
  int n;
  int a_signed, b_signed;
  int qmin, qmax;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  precise float va = float(widen_byte(a[i], p.a_signed) - za[0]) * sa[0];
  precise float vb = float(widen_byte(b[i], p.b_signed) - zb[0]) * sb[0];
  precise float v = va + vb;
  y[i] = narrow_byte(quantize_value(div_exact(v, sy[0]), zy[0], p.qmin, p.qmax));
}

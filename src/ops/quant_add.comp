#version 450
// QDQ residual Add (MUL: Mul) as one integer kernel, one invocation per element: quant.glsl's
// qlinear_add_value (qlinear_mul_value), onnxruntime's QLinearAdd (QLinearMul) arithmetic on
// the two 8-bit operands, saturated to [qmin, qmax] (the type's range, narrowed by a fused
// Relu / Clip). b may repeat each of its values over b_inner consecutive elements of a (a
// squeeze-excitation gate [N, C, 1, 1] times x [N, C, H, W]); 1 where the shapes are one.
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
  int b_inner;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  const int va = widen_byte(a[i], p.a_signed), vb = widen_byte(b[i / p.b_inner], p.b_signed);
#if MUL
  y[i] = narrow_byte(qlinear_mul_value(va, vb, sa[0], za[0], sb[0], zb[0], sy[0], zy[0], p.qmin,
                                       p.qmax));
#else
  y[i] = narrow_byte(qlinear_add_value(va, vb, sa[0], za[0], sb[0], zb[0], sy[0], zy[0], p.qmin,
                                       p.qmax));
#endif
}

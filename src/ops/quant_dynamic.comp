#version 450
// DynamicQuantizeLinear's parameters in two passes:
//   MINMAX  each workgroup reduces a strided share of x to (min, max) partials
//   PARAMS  one workgroup reduces the partials, widens the range to include 0 and writes
//           scale = (max - min) / 255 and zero_point = saturate(round_half_even(-min / scale))
//           as int32 (for the quantize pass) and as uint8 (the op's output).
// The quantize pass is quant.comp's QUANTIZE with those per-tensor parameters.
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "quant.glsl"

#define LOCAL 256
#if MINMAX
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Partial { vec2 partial[]; };
#else
layout(std430, binding = 0) readonly buffer Partial { vec2 partial[]; };
layout(std430, binding = 1) writeonly buffer Scale { float scale_out[]; };
layout(std430, binding = 2) writeonly buffer Zero { int zero_out[]; };
layout(std430, binding = 3) writeonly buffer ZeroBytes { uint8_t zero_bytes[]; };
#endif
layout(push_constant) uniform Params {
  int n;  // MINMAX: elements of x; PARAMS: partials
} p;

shared vec2 range[LOCAL];

void main() {
  uint t = gl_LocalInvocationID.x;
  vec2 r = vec2(0.0);  // the range always includes 0
#if MINMAX
  for (uint i = gl_WorkGroupID.x * LOCAL + t; i < uint(p.n); i += gl_NumWorkGroups.x * LOCAL) {
    float v = x[i];
    r = vec2(min(r.x, v), max(r.y, v));
  }
#else
  for (uint i = t; i < uint(p.n); i += LOCAL) r = vec2(min(r.x, partial[i].x), max(r.y, partial[i].y));
#endif
  range[t] = r;
  barrier();
  for (uint s = LOCAL / 2; s > 0; s >>= 1) {
    if (t < s) range[t] = vec2(min(range[t].x, range[t + s].x), max(range[t].y, range[t + s].y));
    barrier();
  }
  if (t != 0) return;
#if MINMAX
  partial[gl_WorkGroupID.x] = range[0];
#else
  float scale;
  int zero;
  dynamic_params(range[0], scale, zero);
  scale_out[0] = scale;
  zero_out[0] = zero;
  zero_bytes[0] = narrow_byte(zero);
#endif
}

#version 450
// DynamicQuantizeLinear's parameters in two passes:
//   MINMAX  each workgroup reduces a strided share of x to (min, max) partials
//   PARAMS  one workgroup reduces the partials, widens the range to include 0 and writes
//           scale = (max - min) / 255 and zero_point = saturate(round_half_even(-min / scale))
//           as int32 (for the quantize pass) and as uint8 (the op's output).
// The quantize pass is quant.comp's QUANTIZE with those per-tensor parameters, or
//   PACK    every workgroup reduces the partials as PARAMS does, then quantizes a strided
//           share of x (numel % 4 == 0) as quant.comp does, four values to a word, low byte
//           first: the packed GEMM's data words (quant_packed.comp DYNAMIC_BYTES), so each
//           value is quantized once rather than once per column tile of every GEMM reading it.
// x is float32 or (DTYPE_F16, float16 mode) float16; partials and parameters stay float32.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "quant.glsl"

#define LOCAL 256
#if MINMAX
layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Partial { vec2 range_partial[]; };
#elif PACK
layout(std430, binding = 0) readonly buffer Partial { vec2 range_partial[]; };
layout(std430, binding = 1) readonly buffer X { ELEM4 x4[]; };
layout(std430, binding = 2) writeonly buffer Packed { uint packed_out[]; };
#else
layout(std430, binding = 0) readonly buffer Partial { vec2 range_partial[]; };
layout(std430, binding = 1) writeonly buffer Scale { float scale_out[]; };
layout(std430, binding = 2) writeonly buffer Zero { int zero_out[]; };
layout(std430, binding = 3) writeonly buffer ZeroBytes { uint8_t zero_bytes[]; };
#endif
layout(push_constant) uniform Params {
  int n;  // MINMAX: elements of x; PARAMS, PACK: partials
  int words;  // PACK: elements of x / 4
} p;

#define RANGE_LOCAL LOCAL
shared vec2 range_tree[LOCAL];
#if MINMAX
#define RANGE_NO_PARTIALS 1
#endif
#include "quant_range.glsl"

// Elements (MINMAX) or words (PACK) per invocation and chunk: a chunk's loads are issued
// together, so a thread waits one memory latency per chunk rather than one per element. Set by
// quant.cpp, which sizes the grid by it.
layout(constant_id = 3) const uint UNROLL = 1;

void main() {
  uint t = gl_LocalInvocationID.x;
#if MINMAX
  vec2 r = vec2(0.0);  // the range always includes 0, so out-of-range slots read 0
  const uint chunk = LOCAL * UNROLL;
  for (uint base = gl_WorkGroupID.x * chunk + t; base < uint(p.n);
       base += gl_NumWorkGroups.x * chunk) {
    float v[UNROLL];
    [[unroll]] for (uint j = 0; j < UNROLL; ++j)
      v[j] = base + j * LOCAL < uint(p.n) ? float(x[base + j * LOCAL]) : 0.0;
    [[unroll]] for (uint j = 0; j < UNROLL; ++j)
      r = range_with(r, v[j]);
  }
  r = tree_reduce_range(t, r);
  if (t == 0) range_partial[gl_WorkGroupID.x] = r;
#else
  float scale;
  int zero;
  dynamic_params(reduce_range_partials(t, p.n), scale, zero);
#if PACK
  const uint chunk = LOCAL * UNROLL;
  for (uint base = gl_WorkGroupID.x * chunk + t; base < uint(p.words);
       base += gl_NumWorkGroups.x * chunk) {
    vec4 v[UNROLL];
    [[unroll]] for (uint j = 0; j < UNROLL; ++j)
      v[j] = base + j * LOCAL < uint(p.words) ? vec4(x4[base + j * LOCAL]) : vec4(0.0);
    [[unroll]] for (uint j = 0; j < UNROLL; ++j) {
      if (base + j * LOCAL >= uint(p.words)) break;
      uint word = 0u;
      for (int c = 0; c < 4; ++c)
        word |= uint(quantize_value(div_exact(v[j][c], scale), zero, 0, 255)) << (8 * c);
      packed_out[base + j * LOCAL] = word;
    }
  }
#else
  if (t != 0) return;
  scale_out[0] = scale;
  zero_out[0] = zero;
  zero_bytes[0] = narrow_byte(zero);
#endif
#endif
}

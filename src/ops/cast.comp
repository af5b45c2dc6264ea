#version 450
// dst = DST(src) between f32, i32, i64 and Bool (one byte per element), and between f32 and
// f16 (16-bit storage; the conversion rounds to nearest even). Floats convert to integers by
// truncation toward zero; anything converts to Bool as (x != 0), so NaN is true.
#if defined(FROM_BOOL) || defined(TO_BOOL)
#extension GL_EXT_shader_8bit_storage : require
#endif
#if defined(FROM_F16) || defined(TO_F16)
#extension GL_EXT_shader_16bit_storage : require
#endif
#if defined(FROM_I64) || defined(TO_I64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#include "common.glsl"

#if defined(FROM_F32)
#define SRC float
#define SRC_VAL float
#elif defined(FROM_F16)
#define SRC float16_t
#define SRC_VAL float
#elif defined(FROM_I32)
#define SRC int
#define SRC_VAL int
#elif defined(FROM_I64)
#define SRC int64_t
#define SRC_VAL int64_t
#else
#define SRC uint8_t
#define SRC_VAL uint  // 8-bit arithmetic would need shaderInt8
#endif

#if defined(TO_F32)
#define DST float
#elif defined(TO_F16)
#define DST float16_t
#elif defined(TO_I32)
#define DST int
#elif defined(TO_I64)
#define DST int64_t
#else
#define DST uint8_t
#endif

layout(std430, binding = 0) readonly buffer Src { SRC src[]; };
layout(std430, binding = 1) writeonly buffer Dst { DST dst[]; };
layout(push_constant) uniform Params { int n; } p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  SRC_VAL v = SRC_VAL(src[i]);
#if defined(TO_BOOL)
  dst[i] = uint8_t(v != SRC_VAL(0) ? 1u : 0u);
#else
  dst[i] = DST(v);
#endif
}

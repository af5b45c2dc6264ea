#version 450
// Pointwise ops without a place in unary.comp's activation set: IsInf and IsNaN (Bool
// results), Shrink and the rounding of a value to bfloat16 precision. One invocation per element; x is f32 or f16 storage (DTYPE_*).
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
#if defined(OP_ISINF) || defined(OP_ISNAN)
#extension GL_EXT_shader_8bit_storage : require
layout(std430, binding = 1) writeonly buffer Y { uint8_t y[]; };
#else
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };
#endif
layout(push_constant) uniform Params {
  int n;
  int detect_negative;  // IsInf
  int detect_positive;
  float lambd;  // Shrink
  float bias;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  T v = T(x[i]);
#if defined(OP_ISINF)
  bool hit = isinf(v) && ((v > 0.0 && p.detect_positive != 0) || (v < 0.0 && p.detect_negative != 0));
  y[i] = uint8_t(hit ? 1u : 0u);
#elif defined(OP_ISNAN)
  y[i] = uint8_t(isnan(v) ? 1u : 0u);
#elif defined(OP_TO_BFLOAT16)
  // Truncates the low 16 bits of the float32 (onnx_io::float_to_bfloat16); NaN stays NaN.
  uint bits = floatBitsToUint(float(v));
  bits = isnan(v) ? (bits | 0x00400000u) & 0xffff0000u : bits & 0xffff0000u;
  y[i] = ELEM(uintBitsToFloat(bits));
#else
  // NaN fails both tests and gives 0, as ONNX defines Shrink (and onnxruntime computes it).
  T r = v < -p.lambd ? v + p.bias : (v > p.lambd ? v - p.bias : T(0));
  y[i] = ELEM(r);
#endif
}

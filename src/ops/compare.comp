#version 450
// c = a OP b with NumPy broadcasting; c is Bool (one byte per element). Comparisons read T, or
// bytes for Bool inputs; the logical ops read Bool only. NOT binds its input as both a and b.
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

#if defined(DTYPE_BOOL) || defined(LOGICAL)
#define IN uint8_t
#define VAL uint
#else
#define IN T
#define VAL T
#endif
layout(std430, binding = 0) readonly buffer A { IN a[]; };
layout(std430, binding = 1) readonly buffer B { IN b[]; };
layout(std430, binding = 2) writeonly buffer C { uint8_t c[]; };
layout(push_constant) uniform Params {
  int n;
  int rank;
  int shape[MAX_RANK];
  int stride_a[MAX_RANK];
  int stride_b[MAX_RANK];
} p;

bool apply(VAL x, VAL y) {
#if OP_EQUAL
  return x == y;
#elif OP_LESS
  return x < y;
#elif OP_LESS_EQUAL
  return x <= y;
#elif OP_GREATER
  return x > y;
#elif OP_GREATER_EQUAL
  return x >= y;
#elif OP_AND
  return x != 0u && y != 0u;
#elif OP_OR
  return x != 0u || y != 0u;
#elif OP_XOR
  return (x != 0u) != (y != 0u);
#elif OP_NOT
  return x == 0u;
#endif
}

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int ia = 0, ib = 0, rem = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    int idx = rem % p.shape[d];
    rem /= p.shape[d];
    ia += idx * p.stride_a[d];
    ib += idx * p.stride_b[d];
  }
  c[i] = uint8_t(apply(VAL(a[ia]), VAL(b[ib])) ? 1u : 0u);
}

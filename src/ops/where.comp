#version 450
// out = cond ? a : b, all three broadcast to the output shape (NumPy rules).
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "shape_ops.glsl"

layout(std430, binding = 0) readonly buffer Cond { uint8_t cond[]; };
layout(std430, binding = 1) readonly buffer A { ELEM a[]; };
layout(std430, binding = 2) readonly buffer B { ELEM b[]; };
layout(std430, binding = 3) writeonly buffer Out { ELEM dst[]; };
layout(push_constant) uniform Params {
  int n;
  int rank;
  int shape[MAX_RANK];
  int stride_cond[MAX_RANK];
  int stride_a[MAX_RANK];
  int stride_b[MAX_RANK];
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int ic = 0, ia = 0, ib = 0, rem = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    int c = rem % p.shape[d];
    rem /= p.shape[d];
    ic += c * p.stride_cond[d];
    ia += c * p.stride_a[d];
    ib += c * p.stride_b[d];
  }
  dst[i] = TO_ELEM(uint(cond[ic]) != 0u ? TO_VALUE(a[ia]) : TO_VALUE(b[ib]));
}

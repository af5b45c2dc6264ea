#version 450
// GatherElements: out has the indices' shape; out[c] = data[c with c[axis] = indices[c]].
#include "common.glsl"
#include "shape_ops.glsl"

layout(std430, binding = 0) readonly buffer Data { ELEM data[]; };
layout(std430, binding = 2) writeonly buffer Out { ELEM dst[]; };
layout(push_constant) uniform Params {
  int n;
  int rank;
  int axis;
  int axis_dim;
  int index_shape[MAX_RANK];
  int data_stride[MAX_RANK];
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int k = load_index(i, p.axis_dim);
  if (k < 0) {
    dst[i] = TO_ELEM(VALUE(0));
    return;
  }
  int s = 0, rem = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    int c = rem % p.index_shape[d];
    rem /= p.index_shape[d];
    s += (d == p.axis ? k : c) * p.data_stride[d];
  }
  dst[i] = data[s];
}

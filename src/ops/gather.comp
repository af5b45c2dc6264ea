#version 450
// Gather along one axis: data viewed as [outer, axis_dim, inner], indices flattened to
// [num_indices]; out[o, j, r] = data[o, indices[j], r].
#include "common.glsl"
#include "shape_ops.glsl"

layout(std430, binding = 0) readonly buffer Data { ELEM data[]; };
layout(std430, binding = 2) writeonly buffer Out { ELEM dst[]; };
layout(push_constant) uniform Params {
  int n;
  int axis_dim;
  int inner;
  int num_indices;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int r = i % p.inner;
  int j = (i / p.inner) % p.num_indices;
  int o = i / (p.inner * p.num_indices);
  int k = load_index(j, p.axis_dim);
  if (k < 0) {
    dst[i] = TO_ELEM(VALUE(0));
    return;
  }
  dst[i] = data[(o * p.axis_dim + k) * p.inner + r];
}

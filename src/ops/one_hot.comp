#version 450
// OneHot: the output viewed as [outer, depth, inner], the indices as [outer, inner];
// out[o, j, r] = indices[o, r] == j ? values[1] : values[0].
#include "common.glsl"
#include "shape_ops.glsl"

layout(std430, binding = 1) readonly buffer Values { ELEM values[]; };  // off, on
layout(std430, binding = 2) writeonly buffer Out { ELEM dst[]; };
layout(push_constant) uniform Params {
  int n;
  int depth;
  int inner;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int r = i % p.inner;
  int j = (i / p.inner) % p.depth;
  int o = i / (p.inner * p.depth);
  int k = load_index(o * p.inner + r, p.depth);  // -1 when out of range: all off
  dst[i] = values[k == j ? 1 : 0];
}

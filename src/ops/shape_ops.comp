#version 450
// Strided copy: dst[dst_offset + sum(i_d * dst_stride_d)] = src[src_offset + sum(i_d * src_stride_d)]
// for every coordinate i of `shape`. Transpose, slice (negative strides too), expand (zero
// strides), and the non-contiguous parts of concat and split are all this one shader.
#include "common.glsl"
#include "shape_ops.glsl"

layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) writeonly buffer Dst { ELEM dst[]; };
layout(push_constant) uniform Params {
  int n;
  int rank;
  int src_offset;
  int dst_offset;
  int shape[MAX_RANK];
  int src_stride[MAX_RANK];
  int dst_stride[MAX_RANK];
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int s = p.src_offset, d = p.dst_offset, rem = i;
  for (int k = p.rank - 1; k >= 0; --k) {
    int c = rem % p.shape[k];
    rem /= p.shape[k];
    s += c * p.src_stride[k];
    d += c * p.dst_stride[k];
  }
  dst[d] = src[s];
}

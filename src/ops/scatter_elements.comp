#version 450
// ScatterElements into `dst`, which already holds a copy of data. One invocation owns one
// fiber of the indices along `axis` and applies its updates in index order: fibers write
// disjoint elements, so no atomics are needed, results are deterministic, and with duplicate
// indices the last update wins (reduction none) as in ONNX's reference.
#include "common.glsl"
#include "shape_ops.glsl"

#ifdef REDUCE_NONE
#define STORED ELEM
#else
#define STORED T
#endif
layout(std430, binding = 1) readonly buffer Updates { STORED updates[]; };
layout(std430, binding = 2) buffer Out { STORED dst[]; };
layout(push_constant) uniform Params {
  int n;  // fibers: numel(indices) / index_shape[axis]
  int rank;
  int axis;
  int axis_dim;
  int index_shape[MAX_RANK];
  int data_stride[MAX_RANK];
} p;

#ifndef REDUCE_NONE
T combine(T old, T update) {
#if defined(REDUCE_ADD)
  return old + update;
#elif defined(REDUCE_MUL)
  return old * update;
#elif defined(REDUCE_MAX) && defined(DTYPE_FLOAT)
  return max_nan(old, update);
#elif defined(REDUCE_MIN) && defined(DTYPE_FLOAT)
  return min_nan(old, update);
#elif defined(REDUCE_MAX)
  return max(old, update);
#elif defined(REDUCE_MIN)
  return min(old, update);
#endif
}
#endif

void main() {
  int f = int(linear_index());
  if (f >= p.n) return;
  // Coordinates of the fiber (axis coordinate 0) in indices and in data.
  int u = 0, s = 0, stride = 1, axis_stride = 1, rem = f;
  for (int d = p.rank - 1; d >= 0; --d) {
    if (d == p.axis) {
      axis_stride = stride;
    } else {
      int c = rem % p.index_shape[d];
      rem /= p.index_shape[d];
      u += c * stride;
      s += c * p.data_stride[d];
    }
    stride *= p.index_shape[d];
  }
  for (int j = 0; j < p.index_shape[p.axis]; ++j) {
    int at = u + j * axis_stride;
    int k = load_index(at, p.axis_dim);
    if (k < 0) continue;
    int o = s + k * p.data_stride[p.axis];
#ifdef REDUCE_NONE
    dst[o] = updates[at];
#else
    dst[o] = combine(dst[o], updates[at]);
#endif
  }
}

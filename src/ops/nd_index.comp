#version 450
// GatherND and ScatterND. Indices are [tuples, k]: each tuple of k coordinates addresses a
// slice of `slice` contiguous elements of data (GatherND's batch dims add an offset per batch).
//   GATHER:         one invocation per output element: out[t, s] = data[offset(t) + s].
//   SCATTER_NONE:   one per update element: out[offset(t) + s] = updates[t, s].
//   SCATTER_REDUCE: one per slice position s, applying every tuple's update in order: slice
//                   positions write disjoint elements, so the result is deterministic without
//                   atomics, and duplicate tuples combine as ONNX's reference does.
#include "common.glsl"
#include "shape_ops.glsl"

#if defined(GATHER)
layout(std430, binding = 0) readonly buffer Data { ELEM data[]; };
layout(std430, binding = 2) writeonly buffer Out { ELEM dst[]; };
#elif defined(SCATTER_NONE)
layout(std430, binding = 1) readonly buffer Updates { ELEM updates[]; };
layout(std430, binding = 2) buffer Out { ELEM dst[]; };
#else
layout(std430, binding = 1) readonly buffer Updates { T updates[]; };
layout(std430, binding = 2) buffer Out { T dst[]; };
#endif
layout(push_constant) uniform Params {
  int n;             // invocations
  int k;             // coordinates per tuple
  int slice;         // elements per addressed slice
  int tuples;        // ScatterND: tuples in indices
  int per_batch;     // GatherND: tuples per batch
  int batch_stride;  // GatherND: data elements per batch
  int dims[MAX_RANK];     // sizes of the k indexed data dims
  int strides[MAX_RANK];  // their strides, in elements
} p;

// Data offset of tuple t's slice; -1 when a coordinate is out of range (ONNX leaves that
// undefined: gathers read zero, scatters skip it, and no other memory is touched).
int tuple_offset(int t) {
  int offset = 0;
  for (int j = 0; j < p.k; ++j) {
    int c = load_index(t * p.k + j, p.dims[j]);
    if (c < 0) return -1;
    offset += c * p.strides[j];
  }
  return offset;
}

#ifdef SCATTER_REDUCE
T combine(T old, T update) {
#if defined(REDUCE_ADD)
  return old + update;
#elif defined(REDUCE_MUL)
  return old * update;
#elif defined(REDUCE_MAX)
  return max(old, update);
#else
  return min(old, update);
#endif
}
#endif

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
#if defined(GATHER)
  int t = i / p.slice, s = i % p.slice;
  int o = tuple_offset(t);
  // Selected as VALUE: a select of 8-bit values would need shaderInt8.
  dst[i] = TO_ELEM(o < 0 ? VALUE(0) : TO_VALUE(data[(t / p.per_batch) * p.batch_stride + o + s]));
#elif defined(SCATTER_NONE)
  int t = i / p.slice, s = i % p.slice;
  int o = tuple_offset(t);
  if (o >= 0) dst[o + s] = updates[i];
#else
  for (int t = 0; t < p.tuples; ++t) {
    int o = tuple_offset(t);
    if (o >= 0) dst[o + i] = combine(dst[o + i], updates[t * p.slice + i]);
  }
#endif
}

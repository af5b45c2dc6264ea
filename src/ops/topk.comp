#version 450
// TopK along one axis: x viewed as [outer, axis_len, inner]. One invocation per element counts
// the elements of its line that rank before it; if that rank is below k, the element goes to
// output slot `rank`. Ranks follow a total order (value, then lower index first, as ONNX asks;
// NaN above every number, as in PyTorch), so each slot is written exactly once and the output
// is always sorted. The work is O(axis_len^2) per line, fine for the class/vocabulary-sized
// axes models sort, slow for axes of hundreds of thousands.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Values { T values[]; };
// int64 indices as (low, high) words, so f32/i32 inputs need no shaderInt64.
layout(std430, binding = 2) writeonly buffer Indices { uvec2 indices[]; };
layout(push_constant) uniform Params {
  int n;
  int axis_len;
  int inner;
  int k;
  int largest;
} p;

bool greater(T a, T b) {
#ifdef DTYPE_F32
  if (isnan(a)) return !isnan(b);
  if (isnan(b)) return false;
#endif
  return a > b;
}

bool same(T a, T b) {
#ifdef DTYPE_F32
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
#endif
  return a == b;
}

// Whether element (a, ia) comes before (b, ib) in the output.
bool before(T a, int ia, T b, int ib) {
  bool better = p.largest != 0 ? greater(a, b) : greater(b, a);
  return better || (same(a, b) && ia < ib);
}

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int r = i % p.inner;
  int j = (i / p.inner) % p.axis_len;
  int o = i / (p.inner * p.axis_len);
  int base = o * p.axis_len * p.inner + r;
  T v = x[i];
  int rank = 0;
  for (int m = 0; m < p.axis_len && rank < p.k; ++m)
    if (m != j && before(x[base + m * p.inner], m, v, j)) rank++;
  if (rank >= p.k) return;
  int at = (o * p.k + rank) * p.inner + r;
  values[at] = v;
  indices[at] = uvec2(uint(j), 0u);
}

#version 450
// Pad (constant, reflect, edge, wrap) and Tile (wrap with no leading padding). Each output
// coordinate maps to input coordinate c = o - pad_begin, folded back into range by the mode.
#include "common.glsl"
#include "shape_ops.glsl"

layout(constant_id = 3) const int MODE = 0;  // 0 constant, 1 reflect, 2 edge, 3 wrap
layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) writeonly buffer Dst { ELEM dst[]; };
layout(push_constant) uniform Params {
  int n;
  int rank;
  uint value_lo;  // constant mode: the fill value's bits
  uint value_hi;
  int out_shape[MAX_RANK];
  int in_shape[MAX_RANK];
  int pad_begin[MAX_RANK];
} p;

// a mod b in [0, b) for b > 0. GLSL leaves % undefined for negative operands (NVIDIA's
// result differs from lavapipe's), so a negative a is mirrored first.
int floor_mod(int a, int b) { return a >= 0 ? a % b : b - 1 - (-a - 1) % b; }

// Folds c into [0, dim); -1 means "outside, use the constant".
int source_coord(int c, int dim) {
  if (c >= 0 && c < dim) return c;
  if (MODE == 0) return -1;
  if (MODE == 2) return clamp(c, 0, dim - 1);
  if (MODE == 3) return floor_mod(c, dim);
  // Reflect without repeating the edge is periodic with period 2 * (dim - 1), like numpy.pad.
  if (dim == 1) return 0;
  int period = 2 * (dim - 1);
  int m = floor_mod(c, period);
  return m < dim ? m : period - m;
}

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int s = 0, stride = 1, rem = i;
  for (int k = p.rank - 1; k >= 0; --k) {
    int c = source_coord(rem % p.out_shape[k] - p.pad_begin[k], p.in_shape[k]);
    rem /= p.out_shape[k];
    if (c < 0) {
      dst[i] = TO_ELEM(value_from_words(p.value_lo, p.value_hi));
      return;
    }
    s += c * stride;
    stride *= p.in_shape[k];
  }
  dst[i] = src[s];
}

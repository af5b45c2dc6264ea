#version 450
// Rotary position embedding, rotate-half form: for each pair (j, j + h) of the last dim
// (h = d / 2) one invocation computes
//   y[j]     = x[j] * cos[j]         - x[j + h] * sin[j]
//   y[j + h] = x[j + h] * cos[j + h] + x[j] * sin[j + h]
// reading x through an offset and strides (a view: no copy of a transposed projection) and cos
// and sin through broadcast strides; y is contiguous. Each product is `precise`, rounded on its
// own as the unfused Mul, Mul, Add (or Sub) are, so float32 results match them exactly.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) readonly buffer C { ELEM cs[]; };
layout(std430, binding = 2) readonly buffer S { ELEM sn[]; };
layout(std430, binding = 3) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  int n;  // pairs: numel / 2
  int rank;
  int half_d;
  int x_offset;
  int shape[MAX_RANK];
  int x_stride[MAX_RANK];
  int c_stride[MAX_RANK];
  int s_stride[MAX_RANK];
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  const int last = p.rank - 1;
  const int j = i % p.half_d;
  int rem = i / p.half_d;
  int xo = p.x_offset + j * p.x_stride[last], co = j * p.c_stride[last], so = j * p.s_stride[last];
  for (int k = last - 1; k >= 0; --k) {
    const int c = rem % p.shape[k];
    rem /= p.shape[k];
    xo += c * p.x_stride[k];
    co += c * p.c_stride[k];
    so += c * p.s_stride[k];
  }
  const int h = p.half_d;
  const T x1 = T(x[xo]), x2 = T(x[xo + h * p.x_stride[last]]);
  precise T a1 = x1 * T(cs[co]);
  precise T b1 = x2 * T(sn[so]);
  precise T a2 = x2 * T(cs[co + h * p.c_stride[last]]);
  precise T b2 = x1 * T(sn[so + h * p.s_stride[last]]);
  const int o = (i / h) * 2 * h + j;
  y[o] = ELEM(a1 - b1);
  y[o + h] = ELEM(a2 + b2);
}

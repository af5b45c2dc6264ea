#version 450
// ReverseSequence: x viewed as [d0, d1, inner] with the batch and time axes being dims 0 and 1
// in either order; the first seq_len[b] time steps of each batch entry are reversed, the rest
// copied.
#include "common.glsl"
#include "shape_ops.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 2) writeonly buffer Out { ELEM dst[]; };
layout(push_constant) uniform Params {
  int n;
  int d0;
  int d1;
  int inner;
  int time_first;  // 1: dims are [time, batch]
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int r = i % p.inner;
  int a1 = (i / p.inner) % p.d1;
  int a0 = i / (p.inner * p.d1);
  int b = p.time_first != 0 ? a1 : a0;
  int t = p.time_first != 0 ? a0 : a1;
  int steps = p.time_first != 0 ? p.d0 : p.d1;
  // Lengths are clamped to [0, steps] (constants out of range are refused at build time).
  int len;
  if (WIDE_INDICES) {
    int lo = index_words[2 * b], hi = index_words[2 * b + 1];
    len = hi < 0 ? 0 : (hi > 0 || lo < 0 ? steps : lo);
  } else {
    len = index_words[b];
  }
  len = clamp(len, 0, steps);
  int src = t < len ? len - 1 - t : t;
  int j = p.time_first != 0 ? (src * p.d1 + a1) * p.inner + r : (a0 * p.d1 + src) * p.inner + r;
  dst[i] = x[j];
}

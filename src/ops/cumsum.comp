#version 450
// CumSum along one axis: x viewed as [outer, axis_len, inner]; one invocation scans one line.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Params {
  int n;  // lines: outer * inner
  int axis_len;
  int inner;
  int exclusive;
  int reverse;
} p;

void main() {
  int line = int(linear_index());
  if (line >= p.n) return;
  int base = (line / p.inner) * p.axis_len * p.inner + line % p.inner;
  T sum = T(0);
  for (int j = 0; j < p.axis_len; ++j) {
    int at = base + (p.reverse != 0 ? p.axis_len - 1 - j : j) * p.inner;
    T v = x[at];
    if (p.exclusive != 0) {
      y[at] = sum;
      sum += v;
    } else {
      sum += v;
      y[at] = sum;
    }
  }
}

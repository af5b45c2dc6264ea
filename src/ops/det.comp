#version 450
// Determinant of each [m, m] matrix of `work` (a copy of the input, eliminated in place):
// Gaussian elimination with partial pivoting, one invocation per matrix. NaN and infinity
// propagate through the arithmetic; a singular matrix gives 0.
#include "common.glsl"

layout(std430, binding = 0) buffer Work { float work[]; };
layout(std430, binding = 1) writeonly buffer Out { ELEM dst[]; };
layout(push_constant) uniform Params {
  int n;  // matrices
  int m;
} p;

void main() {
  int b = int(linear_index());
  if (b >= p.n) return;
  int base = b * p.m * p.m;
  float det = 1.0;
  for (int c = 0; c < p.m; ++c) {
    int pivot = c;
    float best = abs(work[base + c * p.m + c]);
    for (int r = c + 1; r < p.m; ++r) {
      float v = abs(work[base + r * p.m + c]);
      if (v > best) {
        best = v;
        pivot = r;
      }
    }
    if (pivot != c) {
      for (int k = c; k < p.m; ++k) {
        float t = work[base + c * p.m + k];
        work[base + c * p.m + k] = work[base + pivot * p.m + k];
        work[base + pivot * p.m + k] = t;
      }
      det = -det;
    }
    float d = work[base + c * p.m + c];
    det *= d;
    if (d == 0.0) break;  // singular (NaN pivots fall through and propagate)
    for (int r = c + 1; r < p.m; ++r) {
      float f = work[base + r * p.m + c] / d;
      for (int k = c + 1; k < p.m; ++k) work[base + r * p.m + k] -= f * work[base + c * p.m + k];
    }
  }
  dst[b] = ELEM(det);
}

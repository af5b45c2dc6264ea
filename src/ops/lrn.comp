#version 450
// LRN across channels: x viewed as [N, C, inner]; each element is divided by
// (bias + alpha / size * sum of squares over its channel window) ^ beta.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  int n;
  int channels;
  int inner;
  int before;  // window: channels c - before .. c + after
  int after;
  float alpha_over_size;
  float beta;
  float bias;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int r = i % p.inner;
  int c = (i / p.inner) % p.channels;
  int base = i - c * p.inner;
  float sum = 0.0;
  for (int j = max(0, c - p.before); j <= min(p.channels - 1, c + p.after); ++j) {
    float v = float(x[base + j * p.inner]);
    sum += v * v;
  }
  y[i] = ELEM(float(x[i]) / pow(p.bias + p.alpha_over_size * sum, p.beta));
}

#version 450
// Inference BatchNormalization: y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps) + bias[c],
// one invocation per element of x viewed as [outer, channels, inner].
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Scale { float scale[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) readonly buffer Mean { float mean[]; };
layout(std430, binding = 4) readonly buffer Var { float var[]; };
layout(std430, binding = 5) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  int total, channels, inner;
  float epsilon;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.total) return;
  int c = i / p.inner % p.channels;
  float k = scale[c] / sqrt(var[c] + p.epsilon);
  y[i] = fma(x[i] - mean[c], k, bias[c]);
}

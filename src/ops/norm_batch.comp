#version 450
// Inference BatchNormalization: y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps) + bias[c],
// one invocation per element of x viewed as [outer, channels, inner].
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) readonly buffer Scale { ELEM scale[]; };
layout(std430, binding = 2) readonly buffer Bias { ELEM bias[]; };
layout(std430, binding = 3) readonly buffer Mean { ELEM mean[]; };
layout(std430, binding = 4) readonly buffer Var { ELEM var[]; };
layout(std430, binding = 5) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  int total, channels, inner;
  float epsilon;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.total) return;
  int c = i / p.inner % p.channels;
  float k = T(scale[c]) / sqrt(T(var[c]) + p.epsilon);
  y[i] = ELEM(fma(T(x[i]) - T(mean[c]), k, T(bias[c])));
}

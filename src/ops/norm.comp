#version 450
// Layer, instance, group and RMS normalization: one workgroup per row of `cols` contiguous
// elements, normalized by the row's mean and variance (two passes over the row: the variance
// sums squared deviations, which stays accurate when the mean is large), then scaled and
// shifted. RMS takes the mean as 0: one pass for the mean square. The affine index of element `col` of row `row` is
//   ((row % groups) * cols + col) / div % mod
// with separate div/mod for scale and bias: layer norm uses groups = 1 (index from col alone);
// group/instance norm use div = spatial size, so the index is the channel.
#include "common.glsl"
#include "row_reduce.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) readonly buffer Scale { ELEM scale[]; };
layout(std430, binding = 2) readonly buffer Bias { ELEM bias[]; };  // aliases scale without bias
layout(std430, binding = 3) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  int rows, cols, groups;
  int scale_div, scale_mod, bias_div, bias_mod;
  float epsilon;
} p;

layout(constant_id = 3) const bool HAS_BIAS = false;
// RMSNorm: no mean subtracted, the rows scaled by their root mean square.
layout(constant_id = 4) const bool RMS = false;

void main() {
  int row = row_index();
  if (row >= p.rows) return;  // uniform across the workgroup
  int base = row * p.cols;
  int first = int(gl_LocalInvocationID.x), step = int(gl_WorkGroupSize.x);
  float mean = 0.0;
  if (!RMS) {
    float s = 0.0;
    for (int i = first; i < p.cols; i += step) s += T(x[base + i]);
    mean = workgroup_reduce(s, false) / float(p.cols);
  }
  float sq = 0.0;
  for (int i = first; i < p.cols; i += step) {
    float d = T(x[base + i]) - mean;
    sq = fma(d, d, sq);
  }
  float inv_std = 1.0 / sqrt(workgroup_reduce(sq, false) / float(p.cols) + p.epsilon);
  int affine_base = (row % p.groups) * p.cols;
  for (int i = first; i < p.cols; i += step) {
    int a = affine_base + i;
    float v = (T(x[base + i]) - mean) * inv_std * T(scale[a / p.scale_div % p.scale_mod]);
    y[base + i] = ELEM(HAS_BIAS ? v + T(bias[a / p.bias_div % p.bias_mod]) : v);
  }
}

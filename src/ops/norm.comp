#version 450
// Layer, instance, group and RMS normalization: one workgroup per row of `cols` elements
// (contiguous, or a channels-first tensor's channels at one position: Params.x_inner, y_inner), normalized by the row's mean and variance (two passes over the row: the variance
// sums squared deviations, which stays accurate when the mean is large), then scaled and
// shifted. RMS takes the mean as 0: one pass for the mean square. The affine index of element `col` of row `row` is
//   ((row % groups) * cols + col) / div % mod
// with separate div/mod for scale and bias: layer norm uses groups = 1 (index from col alone);
// group/instance norm use div = spatial size, so the index is the channel.
// RANGE (ops::layer_norm_with_range, float32 only) also writes DynamicQuantizeLinear's range
// partial of each row in the format of quant_dynamic.comp's MINMAX pass: the (min, max) of the
// row's values, the range including 0.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "row_reduce.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) readonly buffer Scale { ELEM scale[]; };
layout(std430, binding = 2) readonly buffer Bias { ELEM bias[]; };  // aliases scale without bias
layout(std430, binding = 3) writeonly buffer Y { ELEM y[]; };
#if RANGE
layout(std430, binding = 4) writeonly buffer Partial { vec2 range_partial[]; };
#endif
layout(push_constant) uniform Params {
  int rows, cols, groups;
  int scale_div, scale_mod, bias_div, bias_mod;
  float epsilon;
  // 0: x's (y's) rows are contiguous. S > 0: x (y) is [N, cols, S] and row n * S + s is its
  // cols elements at (n, ., s), S apart: a channels-first tensor normalized over its channels.
  int x_inner, y_inner;
} p;

layout(constant_id = 3) const bool HAS_BIAS = false;
// RMSNorm: no mean subtracted, the rows scaled by their root mean square.
layout(constant_id = 4) const bool RMS = false;
// x or y channels-first (Params.x_inner, y_inner may be nonzero); false keeps the index
// arithmetic of contiguous rows out of the other norms' code.
layout(constant_id = 5) const bool CHANNELS = false;

// Rows of at most CACHED elements per invocation (4096 at 256 invocations) stay in registers: one read of x, not
// three (mean, deviations, output), which at transformer widths (768..4096) is what a row's
// time is made of. Longer rows stream x three times.
const int CACHED = 16;

// The element index of (row, col) in a tensor of the layout `inner` says (see Params).
int element(int row, int col, int inner) {
  if (!CHANNELS || inner == 0) return row * p.cols + col;
  const int n = row / inner;
  return n * p.cols * inner + (row - n * inner) + col * inner;
}

// scale / bias index of element `col` of row `row` (see above); layer norm's plain [cols]
// parameters (div 1, mod cols, groups 1) skip the integer divisions.
int affine(int row, int col, int div, int mod) {
  if (p.groups == 1 && div == 1 && mod == p.cols) return col;
  return ((row % p.groups) * p.cols + col) / div % mod;
}

float normalized(float v, float mean, float inv_std, int row, int col) {
  v = (v - mean) * inv_std * T(scale[affine(row, col, p.scale_div, p.scale_mod)]);
  return HAS_BIAS ? v + T(bias[affine(row, col, p.bias_div, p.bias_mod)]) : v;
}

// Stores element `i` of y, widening `range` to the value as stored.
void store(int i, float v, inout vec2 range) {
  y[i] = ELEM(v);
#if RANGE
  range = range_with(range, v);  // float32 only: v is the value as stored
#endif
}

// The row's range from every invocation's `range`; all invocations call it.
void store_range(int row, vec2 range) {
#if RANGE
  const float lo = -workgroup_reduce(-range.x, true), hi = workgroup_reduce(range.y, true);
  if (gl_LocalInvocationID.x == 0) range_partial[row] = vec2(lo, hi);
#endif
}

void main() {
  int row = row_index();
  if (row >= p.rows) return;  // uniform across the workgroup
  int first = int(gl_LocalInvocationID.x), step = int(gl_WorkGroupSize.x);
  float mean = 0.0;
  vec2 range = vec2(0.0);  // the range always includes 0
  if (p.cols <= CACHED * step) {  // uniform
    float v[CACHED];
    float s = 0.0;
    [[unroll]] for (int j = 0; j < CACHED; ++j) {
      const int i = first + j * step;
      v[j] = i < p.cols ? T(x[element(row, i, p.x_inner)]) : 0.0;
      s += v[j];
    }
    if (!RMS) mean = workgroup_reduce(s, false) / float(p.cols);
    float sq = 0.0;
    [[unroll]] for (int j = 0; j < CACHED; ++j) {
      const float d = first + j * step < p.cols ? v[j] - mean : 0.0;
      sq = fma(d, d, sq);
    }
    const float inv_std = 1.0 / sqrt(workgroup_reduce(sq, false) / float(p.cols) + p.epsilon);
    [[unroll]] for (int j = 0; j < CACHED; ++j) {
      const int i = first + j * step;
      if (i < p.cols)
        store(element(row, i, p.y_inner), normalized(v[j], mean, inv_std, row, i), range);
    }
    store_range(row, range);
    return;
  }
  if (!RMS) {
    float s = 0.0;
    for (int i = first; i < p.cols; i += step) s += T(x[element(row, i, p.x_inner)]);
    mean = workgroup_reduce(s, false) / float(p.cols);
  }
  float sq = 0.0;
  for (int i = first; i < p.cols; i += step) {
    float d = T(x[element(row, i, p.x_inner)]) - mean;
    sq = fma(d, d, sq);
  }
  float inv_std = 1.0 / sqrt(workgroup_reduce(sq, false) / float(p.cols) + p.epsilon);
  for (int i = first; i < p.cols; i += step)
    store(element(row, i, p.y_inner),
          normalized(T(x[element(row, i, p.x_inner)]), mean, inv_std, row, i), range);
  store_range(row, range);
}

#version 450
// LayerNorm and RMSNorm of contiguous rows that one subgroup holds in registers (norm.cpp's
// subgroup_rows): a subgroup per row, ROWS rows per workgroup, no shared memory or barrier on
// the way.
// norm.comp gives a row a workgroup and reduces it twice through shared memory (three
// barriers each); at a transformer's widths (768..1024 columns, a few hundred rows) those
// reductions, not the row's bytes, were the kernel's time. Here lane l holds the groups of four
// consecutive columns 4 (j * subgroup size + l), j < GROUPS (one 8- or 16-byte load each where
// cols % 4 == 0, VEC), and both sums are subgroupAdd. Two passes over the registers as in
// norm.comp: the variance sums squared deviations from the mean, accurate for large means.
// RANGE also writes each row's (min, max) of y (ops::layer_norm_with_range), as norm.comp does.
// Subgroups are the device's subgroupSize (Vulkan's rule for SPIR-V before 1.6 without varying
// subgroup sizes), which the host used for ROWS and GROUPS. Vulkan still lets a driver run
// subgroups that are not full (fewer lanes than that size); a workgroup that finds its subgroups
// are not all full normalizes its rows one by one with all its invocations instead, summing
// through shared memory (rows_by_workgroup; BY_WORKGROUP forces it, for tests).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "row_reduce.glsl"  // workgroup_reduce, for rows_by_workgroup

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 0) readonly buffer X4 { ELEM4 x4[]; };
layout(std430, binding = 1) readonly buffer Scale { ELEM scale[]; };
layout(std430, binding = 1) readonly buffer Scale4 { ELEM4 scale4[]; };
layout(std430, binding = 2) readonly buffer Bias { ELEM bias[]; };  // aliases scale without bias
layout(std430, binding = 2) readonly buffer Bias4 { ELEM4 bias4[]; };
layout(std430, binding = 3) writeonly buffer Y { ELEM y[]; };
layout(std430, binding = 3) writeonly buffer Y4 { ELEM4 y4[]; };
#if RANGE
// ops::layer_norm_with_range (float32): each row's (min, max) of y as stored, 0 included, in the
// format of quant_dynamic.comp's MINMAX pass, as norm.comp writes it.
layout(std430, binding = 4) writeonly buffer Partial { vec2 range_partial[]; };
#endif
layout(push_constant) uniform Params {
  int rows, cols;
  float epsilon;
} p;

layout(constant_id = 3) const bool HAS_BIAS = false;
layout(constant_id = 4) const bool RMS = false;  // no mean: rows scaled by their root mean square
layout(constant_id = 5) const int ROWS = 2;      // rows per workgroup: its subgroups
layout(constant_id = 6) const int GROUPS = 8;    // cols <= 4 GROUPS subgroupSize
layout(constant_id = 7) const bool VEC = false;  // cols % 4 == 0: groups move as one ELEM4
layout(constant_id = 8) const bool BY_WORKGROUP = false;  // knob norm.subgroup = 2 (tests)

// 1 for the columns c..c+3 that lie in the row, 0 past it.
vec4 in_row(int c) { return vec4(lessThan(ivec4(c) + ivec4(0, 1, 2, 3), ivec4(p.cols))); }

// Group (row start `at`, first column c) of x; zeros past the row.
vec4 load_x(int at, int c) {
  if (VEC) return c < p.cols ? vec4(x4[(at + c) / 4]) : vec4(0.0);
  vec4 v;
  [[unroll]] for (int e = 0; e < 4; ++e) v[e] = c + e < p.cols ? float(x[at + c + e]) : 0.0;
  return v;
}

// Group c of the scale (of_bias false) or the bias; zeros past the row.
vec4 load_affine(const bool of_bias, int c) {
  if (VEC) return c < p.cols ? vec4(of_bias ? bias4[c / 4] : scale4[c / 4]) : vec4(0.0);
  vec4 v;
  [[unroll]] for (int e = 0; e < 4; ++e)
    v[e] = c + e < p.cols ? float(of_bias ? bias[c + e] : scale[c + e]) : 0.0;
  return v;
}

// Stores the group's columns in the row, widening `range` to them (float32: v as stored).
void store_y(int at, int c, vec4 v, inout vec2 range) {
  if (VEC) {
    if (c < p.cols) y4[(at + c) / 4] = ELEM4(v);
  } else {
    [[unroll]] for (int e = 0; e < 4; ++e)
      if (c + e < p.cols) y[at + c + e] = ELEM(v[e]);
  }
#if RANGE
  [[unroll]] for (int e = 0; e < 4; ++e)
    if (c + e < p.cols) range = range_with(range, v[e]);
#endif
}

vec4 normalized(vec4 v, float mean, float inv_std, int c) {
  vec4 r = (v - mean) * inv_std * load_affine(false, c);
  return HAS_BIAS ? r + load_affine(true, c) : r;
}

// Rows first_row.. first_row + ROWS - 1 one by one, every invocation striding over the row's
// groups of four: x read three times (sums, deviations, output) instead of held in registers.
void rows_by_workgroup(int first_row) {
  const int t = int(gl_LocalInvocationIndex), step = 4 * int(gl_WorkGroupSize.x);
  for (int row = first_row; row < min(first_row + ROWS, p.rows); ++row) {  // uniform
    const int at = row * p.cols;
    float s = 0.0;
    for (int c = 4 * t; c < p.cols; c += step) {
      const vec4 v = load_x(at, c);
      s += (v.x + v.y) + (v.z + v.w);
    }
    const float mean = RMS ? 0.0 : workgroup_reduce(s, false) / float(p.cols);
    float sq = 0.0;
    for (int c = 4 * t; c < p.cols; c += step) {
      const vec4 d = (load_x(at, c) - mean) * in_row(c);
      sq += dot(d, d);
    }
    const float inv_std = 1.0 / sqrt(workgroup_reduce(sq, false) / float(p.cols) + p.epsilon);
    vec2 range = vec2(0.0);  // the range always includes 0
    for (int c = 4 * t; c < p.cols; c += step)
      store_y(at, c, normalized(load_x(at, c), mean, inv_std, c), range);
#if RANGE
    range = vec2(-workgroup_reduce(-range.x, true), workgroup_reduce(range.y, true));
    if (t == 0) range_partial[row] = range;
#endif
  }
}

void main() {
  const int group = int(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x);
  // Full subgroups: as many as the host counted, each of gl_SubgroupSize invocations (uniform).
  if (BY_WORKGROUP || gl_NumSubgroups * gl_SubgroupSize != gl_WorkGroupSize.x) {
    rows_by_workgroup(group * ROWS);
    return;
  }
  const int row = group * ROWS + int(gl_SubgroupID);
  if (row >= p.rows) return;  // uniform across the subgroup
  const int lane = int(gl_SubgroupInvocationID), width = int(gl_SubgroupSize);
  const int at = row * p.cols;
  vec4 v[GROUPS];
  float s = 0.0;
  [[unroll]] for (int j = 0; j < GROUPS; ++j) {
    v[j] = load_x(at, 4 * (j * width + lane));
    s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
  }
  const float mean = RMS ? 0.0 : subgroupAdd(s) / float(p.cols);
  float sq = 0.0;
  [[unroll]] for (int j = 0; j < GROUPS; ++j) {
    const vec4 d = (v[j] - mean) * in_row(4 * (j * width + lane));
    sq += dot(d, d);
  }
  const float inv_std = 1.0 / sqrt(subgroupAdd(sq) / float(p.cols) + p.epsilon);
  vec2 range = vec2(0.0);  // the range always includes 0
  [[unroll]] for (int j = 0; j < GROUPS; ++j) {
    const int c = 4 * (j * width + lane);
    if (c >= p.cols) break;  // every later group is past the row too
    store_y(at, c, normalized(v[j], mean, inv_std, c), range);
  }
#if RANGE
  range = vec2(subgroupMin(range.x), subgroupMax(range.y));  // no NaN: range_with skips them
  if (subgroupElect()) range_partial[row] = range;
#endif
}

#version 450
// GlobalAveragePool (GLOBAL_AVG) / GlobalMaxPool (GLOBAL_MAX): one workgroup per (n, c) row of
// `cols` spatial elements, reduced in shared memory.
#include "common.glsl"
#include "row_reduce.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  int rows;
  int cols;
} p;

void main() {
  int row = row_index();
  if (row >= p.rows) return;  // uniform across the workgroup
  int base = row * p.cols;
#if GLOBAL_MAX
  float v = uintBitsToFloat(0xff800000u);
  for (int i = int(gl_LocalInvocationID.x); i < p.cols; i += int(gl_WorkGroupSize.x))
    v = max_nan(v, T(x[base + i]));
  float r = workgroup_reduce(v, true);
#else
  float v = 0.0;
  for (int i = int(gl_LocalInvocationID.x); i < p.cols; i += int(gl_WorkGroupSize.x))
    v += T(x[base + i]);
  float r = workgroup_reduce(v, false) / float(p.cols);
#endif
  if (gl_LocalInvocationID.x == 0) y[row] = ELEM(r);
}

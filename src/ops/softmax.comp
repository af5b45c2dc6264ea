#version 450
// Softmax (or LogSoftmax with LOG=1) of rows laid out as [outer, len, inner]: row r starts at
// (r / inner) * len * inner + r % inner and its elements are `inner` apart. Either one
// workgroup per row with shared-memory reductions, or (ROW_PER_THREAD) one invocation per row,
// which suits short rows and strided rows whose neighbours in `inner` are read together.
#include "common.glsl"
#include "row_reduce.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  uint rows;
  uint len;
  uint inner;
} p;
layout(constant_id = 3) const bool ROW_PER_THREAD = false;

void main() {
  uint row, first, step;
  if (ROW_PER_THREAD) {
    row = linear_index();
    first = 0;
    step = 1;
  } else {
    row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    first = gl_LocalInvocationID.x;
    step = gl_WorkGroupSize.x;
  }
  if (row >= p.rows) return;  // uniform across a workgroup in the shared-memory mode
  uint base = (row / p.inner) * p.len * p.inner + row % p.inner;

  float m = uintBitsToFloat(0xff800000u);  // -inf
  for (uint k = first; k < p.len; k += step) m = max_nan(m, T(x[base + k * p.inner]));
  if (!ROW_PER_THREAD) m = workgroup_reduce(m, true);

  float sum = 0.0;
  for (uint k = first; k < p.len; k += step) sum += exp(T(x[base + k * p.inner]) - m);
  if (!ROW_PER_THREAD) sum = workgroup_reduce(sum, false);

#if LOG
  // (x - m) - log(sum), not x - (m + log(sum)): the latter rounds m + log(sum) at the scale of m.
  float log_sum = log(sum);
  for (uint k = first; k < p.len; k += step) {
    uint i = base + k * p.inner;
    y[i] = ELEM((T(x[i]) - m) - log_sum);
  }
#else
  for (uint k = first; k < p.len; k += step) {
    uint i = base + k * p.inner;
    y[i] = ELEM(exp(T(x[i]) - m) / sum);
  }
#endif
}

#version 450
// Index of the maximum (IS_MIN: minimum) along one axis of x laid out as [outer, len, inner],
// written as int64 through two 32-bit words so that no shaderInt64 is needed for f32 and i32
// inputs. Ties go to the first index, or with SELECT_LAST to the last; NaN beats every number,
// as in numpy and PyTorch. Either one workgroup per output with a shared-memory tree, or
// (OUTPUT_PER_THREAD) one invocation per output.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Y { uvec2 y[]; };
layout(push_constant) uniform Params {
  uint n_out;
  uint len;
  uint inner;
} p;
layout(constant_id = 3) const bool OUTPUT_PER_THREAD = false;
layout(constant_id = 4) const bool IS_MIN = false;
layout(constant_id = 5) const bool SELECT_LAST = false;

const uint NONE = 0xffffffffu;
shared T partial_value[gl_WorkGroupSize.x];
shared uint partial_index[gl_WorkGroupSize.x];

// Whether (vb, ib) should replace (va, ia) as the best so far. A total order, so any
// combination order (the tree's included) gives the same winner.
bool better(T va, uint ia, T vb, uint ib) {
  if (ib == NONE) return false;
  if (ia == NONE) return true;
  bool tie = SELECT_LAST ? ib > ia : ib < ia;
#ifdef DTYPE_FLOAT
  if (isnan(va) || isnan(vb)) return isnan(va) == isnan(vb) ? tie : isnan(vb);
#endif
  if (va == vb) return tie;
  return IS_MIN ? vb < va : vb > va;
}

void main() {
  uint o, first, step;
  if (OUTPUT_PER_THREAD) {
    o = linear_index();
    first = 0;
    step = 1;
  } else {
    o = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    first = gl_LocalInvocationID.x;
    step = gl_WorkGroupSize.x;
  }
  if (o >= p.n_out) return;  // uniform across a workgroup in the shared-memory mode
  uint base = (o / p.inner) * p.len * p.inner + o % p.inner;

  T best = T(0);
  uint best_index = NONE;
  for (uint k = first; k < p.len; k += step) {
    T v = T(x[base + k * p.inner]);
    if (better(best, best_index, v, k)) {
      best = v;
      best_index = k;
    }
  }
  if (!OUTPUT_PER_THREAD) {
    uint t = gl_LocalInvocationID.x;
    partial_value[t] = best;
    partial_index[t] = best_index;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
      if (t < s && better(partial_value[t], partial_index[t], partial_value[t + s],
                          partial_index[t + s])) {
        partial_value[t] = partial_value[t + s];
        partial_index[t] = partial_index[t + s];
      }
      barrier();
    }
    best_index = partial_index[0];
    if (t != 0) return;
  }
  y[o] = uvec2(best_index, 0u);
}

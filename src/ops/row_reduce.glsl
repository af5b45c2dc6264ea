// For kernels that give one workgroup per row (normalization, global pooling): the row index
// over a 2D grid of workgroups, and a workgroup-wide reduction through shared memory. The
// workgroup size (specialization constant 0) must be a power of two.

shared float reduce_scratch[gl_WorkGroupSize.x];

int row_index() { return int(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x); }

// Every invocation of the workgroup must call this, with the same `take_max`.
float workgroup_reduce(float v, bool take_max) {
  uint t = gl_LocalInvocationID.x;
  reduce_scratch[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      float o = reduce_scratch[t + s];
      reduce_scratch[t] = take_max ? max_nan(reduce_scratch[t], o) : reduce_scratch[t] + o;
    }
    barrier();
  }
  float r = reduce_scratch[0];
  barrier();  // everyone has read the result before a next call overwrites it
  return r;
}

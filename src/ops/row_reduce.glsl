// For kernels that give one workgroup per row (normalization, global pooling, softmax): the
// row index over a 2D grid of workgroups, and a workgroup-wide reduction through shared memory.

shared float reduce_scratch[gl_WorkGroupSize.x];

int row_index() { return int(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x); }

float reduce_combine(float a, float b, bool take_max) { return take_max ? max_nan(a, b) : a + b; }

// Every invocation of the workgroup must call this, with the same `take_max`. Three barriers
// whatever the size (a halving tree takes log2 of it): the first min(size, 32) invocations
// fold the others' values in, then every invocation folds those partials, in the same order.
float workgroup_reduce(float v, bool take_max) {
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  const uint lanes = min(n, 32u);
  reduce_scratch[t] = v;
  barrier();
  if (t < lanes) {
    // Reads only slots >= lanes, which nobody writes here.
    for (uint i = t + lanes; i < n; i += lanes) v = reduce_combine(v, reduce_scratch[i], take_max);
    reduce_scratch[t] = v;
  }
  barrier();
  float r = reduce_scratch[0];
  for (uint i = 1; i < lanes; ++i) r = reduce_combine(r, reduce_scratch[i], take_max);
  barrier();  // everyone has read the result before a next call overwrites it
  return r;
}
